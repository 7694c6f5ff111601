"""An iteration-level simulation of a disaggregated prefill/decode tandem (the check of its fluid verdict).

Requests arrive by the workload's arrival process with its lengths (seeded).  Each is routed to the
prefill engine with the fewest queued prompt tokens (a busy engine counts one budget more; ties go to the
engine whose link frees first); an idle prefill engine runs one iteration of whole
prompts first come first served up to ``b_max`` tokens (a longer prompt in chunks of ``b_max``), taking
``t_p(b, 0)``.  A prefilled request's KV then crosses its prefill engine's link: its bytes occupy the link
first come first served for ``m_p x bytes per token / (links x bandwidth)``, and arrive ``latency`` after
the last byte left (the latency delays a transfer, it does not hold the link: the next prompt's bytes follow
on the wire, as the fluid transfer stage assumes); it then joins the decode engine with the fewest requests
(resident or waiting).  A decode engine admits waiting requests up to ``k_max`` and
``b_max`` residents, and each iteration decodes one token of every resident in ``t_d(b, total context)``;
a request leaves after ``o - 1`` decode tokens (the first came with the prefill).

Each pool has its own memory, its engines' ``kv_capacity_tokens`` (token rules: a request holds its
prompt plus generated tokens; ``None`` is unlimited):

* a prefill engine holds a prompt's KV from its first chunk until the link has sent its last byte; a chunk is
  scheduled only if it fits beside the KV already held (else the engine waits for a transfer to free
  memory), so a slow link backs up into prefill memory;
* a decode engine admits the head of its queue only if its context plus one token of headroom per
  resident fits; when the residents' next tokens do not fit it preempts the most recently admitted
  (vLLM's rule), which goes back to the head of the queue keeping its tokens and, admitted again,
  recomputes its context (prompt plus generated tokens, in chunks of the token budget the decoding
  residents leave) before it decodes again.

A request that can never fit (``p > `` the prefill cache, or ``p + o > `` the decode cache) is refused
at arrival and counted in ``rejected`` (vLLM refuses a request longer than its ``max_model_len``).

:func:`simulate_disaggregated` returns the completions, the requests in the system at half the horizon
and at its end, and the verdict of a backlog test: unstable when the requests in the system at the end
exceed 5 % of those that arrived (a stable tandem holds O(1) of them), stable otherwise.
:func:`replicate_disaggregated` runs seeded replications and gives the backlog's growth rate as a
share of the arrival rate with a 95 % confidence interval (the fluid model predicts
``max(0, 1 - capacity / rate)``).
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .._validate import integer, real
from ..batchtime.comm import Link
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Workload
from ..results import Result, Status, plain

__all__ = ["PDSimResult", "PDReplications", "simulate_disaggregated", "replicate_disaggregated"]

_MAX_POOL = 4096
_MAX_EVENTS = 5 * 10**7
#: the growth share below which replications call a tandem stable (:attr:`PDReplications.decision`)
GROWTH_RESOLUTION = 0.05


@dataclass(frozen=True)
class PDSimResult(Result):
    """One run of :func:`simulate_disaggregated`: its counts, throughput and backlog verdict.

    ``inputs`` holds what the run was, JSON-ready: the tandem (``prefill`` and ``decode`` engines as their
    ``to_dict()``, ``n_prefill``, ``n_decode``, ``link``, ``links``, ``kv_bytes_per_token``), the
    ``workload`` (its ``to_dict()``), ``horizon_s`` and ``seed``; the tandem's scheduling is fixed (first
    come first served, see the module notes), so there is no policy to name.  :meth:`to_dict` is the run's
    numbers without it (as before).
    """

    arrived: int
    completed: int
    in_system_end: int
    horizon_s: float
    throughput_per_s: float
    verdict: str
    in_system_half: int = 0
    rejected: int = 0
    preemptions: int = 0
    prefill_memory_waits: int = 0
    inputs: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def status(self):
        """:attr:`verdict` (the backlog test of the run) as a :class:`~fluidq.results.Status`."""
        return Status(self.verdict)

    @property
    def growth_share(self) -> float:
        """The backlog's growth over the second half of the horizon, as a share of the arrivals then."""
        lam = self.arrived / self.horizon_s
        return (self.in_system_end - self.in_system_half) / (self.horizon_s / 2) / lam if lam > 0 else 0.0

    def to_dict(self) -> dict:
        return {**{k: v for k, v in self.__dict__.items() if k != "inputs"}, "growth_share": self.growth_share}


def _engines(prefill, decode):
    for name, e in (("prefill", prefill), ("decode", decode)):
        if not isinstance(e, Engine):
            raise ParameterError(name, e, "a fluidq.Engine")


def simulate_disaggregated(prefill: Engine, decode: Engine, workload: Workload, *, n_prefill: int, n_decode: int,
                           link: Link, kv_bytes_per_token: float, horizon_s: float, links: int = 1,
                           seed: int = 0) -> PDSimResult:
    """Simulate the tandem for ``horizon_s`` seconds of arrivals (see the module docstring)."""
    _engines(prefill, decode)
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    if not isinstance(link, Link):
        raise ParameterError("link", link, "a fluidq.batchtime.comm.Link (bandwidth_gbps, latency_us)")
    n_p = integer("n_prefill", n_prefill, minimum=1, maximum=_MAX_POOL)
    n_d = integer("n_decode", n_decode, minimum=1, maximum=_MAX_POOL)
    T = real("horizon_s", horizon_s, positive=True, maximum=1e7)
    kvb = real("kv_bytes_per_token", kv_bytes_per_token, positive=True)
    k = integer("links", links, minimum=1, maximum=_MAX_POOL)
    rng = np.random.default_rng(integer("seed", seed, minimum=0))
    arr = np.asarray(workload.arrival.times(rng, horizon_s=T), dtype=float)
    n = arr.size
    if 4 * n * (1 + float(workload.mean_output_tokens) / max(1.0, decode.b_max)) > _MAX_EVENTS:
        raise ParameterError("horizon_s", horizon_s, f"a horizon of at most about {_MAX_EVENTS // 4:,} requests' "
                             "events", "the simulation runs one Python event per iteration")
    p = np.maximum(1, np.round(workload.prompt_tokens.sample(rng, n))).astype(int)
    o = np.maximum(1, np.round(workload.output_tokens.sample(rng, n))).astype(int)
    d_cap = min(decode.b_max, decode.k_max or decode.b_max)
    bw = k * link.bandwidth_gbps * 1e9
    latency = link.latency_us * 1e-6
    cp = math.inf if prefill.kv_capacity_tokens is None else prefill.kv_capacity_tokens
    cd = math.inf if decode.kv_capacity_tokens is None else decode.kv_capacity_tokens

    ev = []  # (time, seq, kind, a, b)
    seq = 0

    def push(t, kind, a=0, b=None):
        nonlocal seq
        heapq.heappush(ev, (t, seq, kind, a, b))
        seq += 1

    for i, t in enumerate(arr):
        push(float(t), "arrive", i)
    push(T / 2, "half")
    pq = [deque() for _ in range(n_p)]  # [request, prompt tokens left]
    p_tokens = [0] * n_p
    p_busy = [False] * n_p
    p_kv = [0] * n_p  # KV held: prompts being prefilled or waiting for / crossing the link
    link_free = [0.0] * n_p
    dq = [deque() for _ in range(n_d)]  # [request, decode tokens left, context, recompute tokens left]
    residents = [[] for _ in range(n_d)]
    d_kv = [0] * n_d
    d_busy = [False] * n_d
    done = rejected = preemptions = waits = arrived = 0
    half = 0

    def start_prefill(j, now):
        b, batch = 0, []
        while pq[j] and b < prefill.b_max:
            item = pq[j][0]
            c = min(item[1], prefill.b_max - b, cp - p_kv[j] - b)
            if c <= 0:
                break
            b += c
            batch.append((item, c))
            if c == item[1]:
                pq[j].popleft()
            else:
                break
        if b == 0:  # memory full of KV waiting for the link: a transfer wakes the engine
            nonlocal waits
            waits += 1
            p_busy[j] = False
            return
        for item, c in batch:
            item[1] -= c
        p_tokens[j] -= b
        p_kv[j] += b
        p_busy[j] = True
        finished = [item[0] for item, _ in batch if item[1] == 0]
        push(now + float(prefill.batch_time(float(b), 0.0)), "prefill_done", j, finished)

    def start_decode(j, now):
        nonlocal preemptions
        res = residents[j]
        while dq[j] and len(res) < d_cap and d_kv[j] + dq[j][0][2] + len(res) + 1 <= cd:
            r = dq[j].popleft()
            res.append(r)
            d_kv[j] += r[2]
        while res and d_kv[j] + sum(1 for r in res if r[3] == 0) > cd:  # next tokens do not fit
            r = res.pop()
            d_kv[j] -= r[2]
            r[3] = r[2]  # recompute prompt + generated tokens when admitted again
            dq[j].appendleft(r)
            preemptions += 1
        if not res:
            d_busy[j] = False
            return
        decoding = sum(1 for r in res if r[3] == 0)
        budget = max(0, decode.b_max - decoding)
        chunks = []
        for r in res:
            if r[3] > 0 and budget > 0:
                c = min(r[3], budget)
                budget -= c
                chunks.append((r, c))
        b = decoding + sum(c for _, c in chunks)
        ctx = float(sum(r[2] for r in res if r[3] == 0))
        d_busy[j] = True
        push(now + float(decode.batch_time(float(max(b, 1)), ctx)), "decode_done", j, chunks)

    def to_decode(i, now):
        nonlocal done
        if o[i] <= 1:
            done += 1
            return
        j = min(range(n_d), key=lambda x: len(dq[x]) + len(residents[x]))
        dq[j].append([i, int(o[i]) - 1, int(p[i]) + 1, 0])
        if not d_busy[j]:
            start_decode(j, now)

    while ev:
        now, _, kind, a, b = heapq.heappop(ev)
        if now > T:
            break
        if kind == "arrive":
            arrived += 1
            if p[a] > cp or (o[a] > 1 and p[a] + o[a] > cd):
                rejected += 1
                continue
            j = min(range(n_p), key=lambda x: (p_tokens[x] + p_busy[x] * prefill.b_max, link_free[x]))
            pq[j].append([a, int(p[a])])
            p_tokens[j] += int(p[a])
            if not p_busy[j]:
                start_prefill(j, now)
        elif kind == "half":
            half = arrived - done - rejected
        elif kind == "prefill_done":
            for i in b:
                start = max(now, link_free[a])
                link_free[a] = start + p[i] * kvb / bw  # the bytes hold the link; the latency only delays them
                push(link_free[a], "sent", i, a)
                push(link_free[a] + latency, "transferred", i, a)
            p_busy[a] = False
            if pq[a]:
                start_prefill(a, now)
        elif kind == "sent":  # the last byte left: the prefill engine's copy of the KV is free
            p_kv[b] -= int(p[a])
            if pq[b] and not p_busy[b]:
                start_prefill(b, now)
        elif kind == "transferred":
            to_decode(a, now)
        elif kind == "decode_done":
            for r, c in b:
                r[3] -= c
            keep = []
            for r in residents[a]:
                if r[3] > 0 or any(r is x for x, _ in b):  # recomputing (or just finished): no token yet
                    keep.append(r)
                    continue
                r[1] -= 1
                r[2] += 1
                d_kv[a] += 1
                if r[1] > 0:
                    keep.append(r)
                else:
                    d_kv[a] -= r[2]
                    done += 1
            residents[a] = keep
            start_decode(a, now)
    in_sys = n - done - rejected
    verdict = "unstable" if in_sys > 0.05 * max(n - rejected, 1) else "stable"
    return PDSimResult(arrived=int(n), completed=int(done), in_system_end=int(in_sys), horizon_s=T,
                       throughput_per_s=done / T, verdict=verdict, in_system_half=int(half),
                       rejected=int(rejected), preemptions=int(preemptions), prefill_memory_waits=int(waits),
                       inputs=plain({"prefill": prefill.to_dict(), "decode": decode.to_dict(), "n_prefill": n_p,
                                     "n_decode": n_d, "link": {"bandwidth_gbps": link.bandwidth_gbps,
                                                               "latency_us": link.latency_us, "name": link.name},
                                     "links": k, "kv_bytes_per_token": kvb, "workload": workload.to_dict(),
                                     "horizon_s": T, "seed": int(seed)}))


@dataclass(frozen=True)
class PDReplications:
    """Seeded replications of :func:`simulate_disaggregated`: the backlog's growth share with its 95 % interval."""

    runs: tuple
    growth_share: float
    growth_share_ci: tuple
    throughput_per_s: float
    throughput_ci: tuple

    @property
    def verdict(self) -> str:
        """``unstable`` when the interval of the growth share lies above 1 %, ``stable`` when it reaches below
        1 % (a stable tandem's backlog does not grow; 1 % of the arrivals is the resolution of the test)."""
        return "unstable" if self.growth_share_ci[0] > 0.01 else "stable"

    @property
    def decision(self) -> str:
        """Three-way: ``unstable`` when the interval of the growth share lies above 1 %, ``stable`` when it
        lies below :data:`GROWTH_RESOLUTION` (5 % of the arrivals: the fluid growth at load 1.053), else
        ``inconclusive`` (too few or too short runs to tell; :attr:`verdict` calls that stable)."""
        lo, hi = self.growth_share_ci
        if lo > 0.01:
            return "unstable"
        return "stable" if hi < GROWTH_RESOLUTION else "inconclusive"

    def to_dict(self) -> dict:
        return {"replications": len(self.runs), "growth_share": self.growth_share,
                "growth_share_ci": list(self.growth_share_ci), "throughput_per_s": self.throughput_per_s,
                "throughput_ci": list(self.throughput_ci), "verdict": self.verdict, "decision": self.decision,
                "runs": [r.to_dict() for r in self.runs]}


def _ci(x):
    from scipy import stats

    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    h = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, (m - h, m + h)


def replicate_disaggregated(prefill: Engine, decode: Engine, workload: Workload, *, n_prefill: int, n_decode: int,
                            link: Link, kv_bytes_per_token: float, horizon_s: float, links: int = 1,
                            replications: int = 4, seed: int = 0) -> PDReplications:
    """``replications`` runs of :func:`simulate_disaggregated` with seeds ``seed, seed + 1, ...``."""
    r = integer("replications", replications, minimum=2, maximum=1000)
    integer("seed", seed, minimum=0)
    runs = tuple(simulate_disaggregated(prefill, decode, workload, n_prefill=n_prefill, n_decode=n_decode, link=link,
                                        kv_bytes_per_token=kv_bytes_per_token, horizon_s=horizon_s, links=links,
                                        seed=seed + s) for s in range(r))
    g, gci = _ci([x.growth_share for x in runs])
    th, tci = _ci([x.throughput_per_s for x in runs])
    return PDReplications(runs=runs, growth_share=g, growth_share_ci=gci, throughput_per_s=th, throughput_ci=tci)
