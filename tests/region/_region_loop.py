"""A minimal, test-only stepping loop: one batch per step, deterministic arrivals.

Independent of :mod:`fluidq.sim` on purpose (it checks the region claims with the fewest moving
parts): requests of ``(prompt, output)`` tokens arrive every ``period_s`` seconds; the engine
runs the policy's batch for ``t(tokens)`` seconds; arrivals during a batch join after it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fluidq.policies import QueueView, RequestState, batch_violations


@dataclass
class Trace:
    times: np.ndarray          # batch end times, s
    in_system: np.ndarray      # requests present after each batch
    backlog_tokens: np.ndarray  # prefill + decode tokens left after each batch
    completed: int
    shapes: dict               # (prefill, decode) -> count


def run(engine, policy, *, prompt, output, period_s, horizon_s, check=False) -> Trace:
    t = 0.0
    next_arrival = 0.0
    rid = 0
    res: list[RequestState] = []
    times, counts, backlog = [], [], []
    shapes: dict = {}
    completed = 0
    while t < horizon_s:
        while next_arrival <= t + 1e-12:
            res.append(RequestState(rid=rid, arrival_s=next_arrival, prompt_tokens=prompt, output_tokens=output))
            rid += 1
            next_arrival += period_s
        if not res:
            t = next_arrival
            continue
        view = QueueView(requests=tuple(res), now_s=t, b_max=engine.b_max, k_max=engine.k_max)
        batch = policy.select(view)
        if check:
            assert batch_violations(batch, view) == []
        if batch.empty:
            t = next_arrival
            continue
        t += float(engine.batch_time(batch.tokens))
        key = (batch.prefill_tokens, batch.decode_tokens)
        shapes[key] = shapes.get(key, 0) + 1
        by_id = {r.rid: r for r in res}
        for i, n in batch.prefill:
            by_id[i].prefilled += n
        for i in batch.decode:
            by_id[i].decoded += 1
        before = len(res)
        res = [r for r in res if r.decoded < r.output_tokens]
        completed += before - len(res)
        times.append(t)
        counts.append(len(res))
        backlog.append(sum(r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded for r in res))
    return Trace(np.array(times), np.array(counts), np.array(backlog), completed, shapes)
