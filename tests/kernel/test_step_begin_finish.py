"""``EngineRun``'s two halves: ``begin()`` (form the batch, return its end) and ``finish()`` (advance it at
its end, return the finished), called apart by a clock, give ``step``'s runs; a *fed* run (requests
offered one by one, as a network's stations are) gives the run with arrivals up front."""
import math

import numpy as np
import pytest

from fluidq.engine import VLLM
from fluidq.errors import ParameterError
from fluidq.kernel import step
from fluidq.policies import resolve_policy
from fluidq.policies.base import RequestState


def _requests(seed, n=300):
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(0.02, n)).tolist()
    P = rng.integers(1, 300, n).tolist()
    D = rng.integers(1, 60, n).tolist()
    return arr, P, D


TAU = [0.01 + 1e-5 * b for b in range(513)]

CASES = [
    {},
    {"kv_cap": 4000},
    {"kv_cap": 4000, "memory": VLLM},
    {"kv_cap": 3000, "preemption": "swap", "swap_s_per_token": 1e-6},
    {"emit_at_prefill": True},
    {"kv_cap": 4000, "memory": VLLM, "emit_at_prefill": True},
]


def _args(policy="sarathi", **kw):
    return dict(policy=resolve_policy(policy), b_max=512, k_max=32, tau_b=TAU, ks=0.0, horizon=5.0, record=True,
                check=True, **kw)


@pytest.mark.parametrize("kw", CASES + [{"async_scheduling": True}, {"kv_cap": 4000, "async_scheduling": True}])
def test_begin_charges_the_table_and_finish_returns_what_finished_at_that_end(kw):
    """Checked against the run's own records and the batch-time table, not against ``step``: ``begin()``
    returns the end of the batch in flight, its start plus the table's time for its tokens (plus the swap
    time of a pass with swaps), and moves the clock there; ``finish()`` serves exactly the batch's tokens
    (the token of a completed prefill besides, with ``emit_at_prefill``: the first, or the next one
    after a recomputation) and returns each finished
    request once, complete, with its recorded finish at that end (async scheduling: the end before, as the
    engine reads a batch's outputs one batch late)."""
    arr, P, D = _requests(5)
    run = step.EngineRun(arr, P, D, **_args(**kw))
    swaps = kw.get("preemption") == "swap"
    lag = bool(kw.get("async_scheduling"))
    returned: dict = {}
    prev_end = None
    n_batches = 0
    while True:
        start = run.t
        end = run.begin()
        if end is None:
            if run.over:
                break
            continue
        assert end == run.t
        batch = run.cur
        if batch is not None and not swaps:
            assert end == start + TAU[batch.tokens]
        elif batch is not None:
            assert end >= start + TAU[batch.tokens]
        left = sum(r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded for r in run.by_id.values())
        # with emit_at_prefill a prefill chunk completing its prompt gives a token: the first, or the next one
        # after a recomputation (vLLM)
        emitted = sum(1 for rid, m in batch.prefill if run.by_id[rid].prefilled + m >= run.by_id[rid].prompt_tokens
                      and run.by_id[rid].decoded < run.by_id[rid].output_tokens) \
            if batch is not None and kw.get("emit_at_prefill") else 0
        fin = run.finish()
        if fin is None:  # a pass that only swapped in
            assert batch is None and run.cur is None and swaps
            continue
        n_batches += 1
        still = sum(r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded for r in run.by_id.values())
        gone = sum(r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded for r in fin)
        if not lag:  # (a preemption's tokens put back, or a prefix reused, are counted in begin(), before left)
            arrived = sum(P[i] + D[i] for i in range(len(arr)) if start < arr[i] <= end and i in run.by_id)
            assert left + arrived - still - gone == batch.tokens + emitted
        for r in fin:
            assert r.rid not in returned and r.rid not in run.by_id
            assert r.decoded == r.output_tokens and r.prefilled == r.prompt_tokens
            returned[r.rid] = prev_end if lag else end
        prev_end = end
    res = run.result()
    assert n_batches == res["iterations"] > 100
    finished = {rid for rid, f in enumerate(res["finish_s"]) if f == f}
    assert set(returned) <= finished
    if not lag:
        assert set(returned) == finished
    assert len(returned) > 100
    for rid, e in returned.items():
        assert res["finish_s"][rid] == e


class _Labeled(RequestState):
    __slots__ = ("label",)


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("policy", ["sarathi", "vllm", "orca"])
def test_a_fed_run_is_the_run_with_arrivals_up_front(kw, policy):
    """Offering each request at its arrival time (before a batch starting at or after it; before the end
    of a batch it arrives during) gives run_generic's batches, preemptions and finish times; the tokens
    left per label add up to the engine's work after every batch."""
    arr, P, D = _requests(11)
    args = _args(policy, **kw)
    args["record"] = False
    ref = step.run_generic(arr, P, D, **args)
    labels = {"a": 0, "b": 0}
    run = step.EngineRun((), (), (), fed=True, labels=labels, **args)
    finish, first = {}, {}
    i, n = 0, len(arr)

    def offer_until(t):
        nonlocal i
        while i < n and arr[i] <= t:
            r = _Labeled(rid=i, arrival_s=arr[i], prompt_tokens=P[i], output_tokens=D[i])
            r.label = "ab"[i % 2]
            if run.refuses(P[i], D[i]):
                i += 1
                continue
            labels[r.label] += P[i] + D[i]
            run.offer(r)
            i += 1

    now = 0.0
    while now < args["horizon"]:
        offer_until(now)
        end = run.begin(now)
        if end is None:
            if i >= n:
                break
            now = min(args["horizon"], arr[i])  # idle: the next arrival
            continue
        offer_until(end)
        fin = run.finish()
        for r in fin or ():
            finish[r.rid] = end
            first[r.rid] = r.first_scheduled_s
        assert labels["a"] + labels["b"] == run.work
        now = end
    assert run.n_iter == ref["iterations"] and run.busy == ref["busy_s"]
    assert finish == {k: f for k, f in enumerate(ref["finish_s"]) if f == f}
    assert first == {k: ref["first_scheduled_s"][k] for k in finish}
    if run.mem is not None:
        assert (run.mem.preemptions, run.mem.rejected) == (ref["preemptions"], ref["rejected"])
    # the records of the requests gone are dropped; those left are the ones still in the engine
    assert set(run.fs) == set(run.fin) == set(run.by_id) and all(f != f for f in run.fin.values())


def test_a_fed_run_reports_blocked_prompts_and_violations_to_its_caller():
    """``on_blocked`` gets the ids a batch reports never schedulable; with ``check``, ``on_violation`` hears of a
    bad batch's messages first, then the PolicyError is raised (2026-12-07: before, the run went on with the batch)."""
    from fluidq.policies.base import Batch

    class Bad:
        name = "bad"
        chunked = False

        def select(self, view):  # a prefill past the prompt, and the request reported never schedulable
            rids = [r.rid for r in view.requests]
            return Batch(prefill=tuple((rid, 10) for rid in rids), decode=(), blocked=tuple(rids[:1]))

    def fed(**kw):
        run = step.EngineRun((), (), (), policy=Bad(), b_max=16, k_max=None, tau_b=TAU, ks=0.0, horizon=5.0,
                             record=False, check=True, fed=True, **kw)
        run.offer(RequestState(rid=7, arrival_s=0.0, prompt_tokens=4, output_tokens=2))
        return run

    seen, bad = [], []
    run = fed(on_blocked=seen.extend, on_violation=lambda t, msgs: bad.append((t, msgs)))
    with pytest.raises(step.PolicyError, match="6b"):
        run.begin(0.0)
    assert len(bad) == 1 and bad[0][0] == 0.0 and "(6b)" in bad[0][1][0]
    with pytest.raises(step.PolicyError, match="6b"):
        fed().begin(0.0)


def test_a_fed_run_refuses_arrivals_up_front():
    with pytest.raises(ParameterError, match="fed"):
        step.EngineRun([0.0], [1], [1], **_args(), fed=True)
    with pytest.raises(ParameterError, match="fed"):
        step.EngineRun((), (), (), **_args(), fed=True, window=True)


def test_begin_returns_none_past_the_horizon():
    run = step.EngineRun((), (), (), **_args(), fed=True)
    run.offer(RequestState(rid=1, arrival_s=0.0, prompt_tokens=4, output_tokens=2))
    assert run.begin(5.0) is None and run.cur is None
    assert math.isclose(run.begin(0.0), TAU[4])
