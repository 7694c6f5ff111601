"""Join-the-shortest-queue over two LLM engines with prefill/decode batches: a continuous-time chain.

:func:`fluidq.dtmc.networks.parallel_engines` serves each request as one memoryless hop (one token per
request per batch).  This module keeps the engines' real batch rule and pays for it with a larger
state; the two engines are not synchronised, so the network is a continuous-time chain, uniformised
into a DTMC (``P = I + Q / Lambda``) and solved by :func:`fluidq.dtmc.solve.stationary`, as in
:mod:`fluidq.dtmc.networks`.

Model
-----
* Requests arrive as a Poisson process of rate ``lambda`` and are routed on arrival to the engine with
  fewer resident requests (waiting, in prefill or decoding); a tie goes to engine 1 -- the rule of
  ``fluidq.simulate_network``'s ``Router(policy="jsq", count="requests")``, whose strict comparison keeps
  the first engine listed on a tie.
* Both engines are the same :class:`fluidq.Engine` and run Sarathi-Serve batches with token budget
  ``b = b_max``: every decoding request contributes one decode token (up to ``b``), and the rest of the
  budget prefills the waiting prompts in FCFS order, chunked across prompts (the head prompt resumes
  where it stopped).  A prompt that finishes prefill in a batch decodes from the next batch on.
* Prompts are fixed at ``P`` tokens with ``1 <= P <= b_max`` (at most a few prompts are touched per batch,
  which keeps the batch composition a small number); other prompt lengths are refused.  Outputs are
  geometric with mean ``m_d``: every decode token ends its request with probability ``1/m_d``, so a batch
  with ``D`` decode tokens completes ``Binomial(D, 1/m_d)`` requests (as in :mod:`fluidq.dtmc.build`).
* A batch of ``b`` tokens lasts ``t(b)`` (the engine's batch time).  The deterministic duration is
  replaced by an Erlang-``k`` duration (``k`` phases of rate ``k / t(b)``: same mean, variance
  ``t(b)^2 / k``).  The composition of a batch is fixed when it starts; requests arriving during it join
  the waiting count but not the running batch.  When a batch ends the engine starts the next one at
  once if it holds any request, and idles otherwise (an arrival to an idle engine starts a batch).

State of one engine: idle, or busy with ``(w, j, d, m, phase)``: ``w`` waiting prompts (including the one
in prefill, and the arrivals of the running batch), ``j`` prompt tokens the head prompt already has
(fixed at the batch start), ``d`` decoding requests, ``m`` the number of waiting prompts the running
batch prefills (``min(w at the start, prompts the budget reaches)``: it fixes the batch's prefill tokens),
and the Erlang phase.  The network state is the pair of engine states; only the states reachable from
the empty network are kept.

Erlang bias and extrapolation: the chain is solved for ``k`` and ``2k`` phases, and the means are
extrapolated to deterministic batches (``1/k -> 0``) by Richardson's rule for an error linear in ``1/k``,
``x_ext = 2 x(2k) - x(k)``.  For an M/G/1 queue the mean is exactly linear in the second moment of the
service, ``(1 + 1/k) t^2`` for Erlang-``k``, so the rule is exact there; here it removes the leading term.

Truncation: at most ``max_waiting`` waiting prompts and ``max_decode`` decoding requests per engine.  An
arrival routed to an engine whose waiting count is at its cap is dropped; a batch end that would push the
decoders above the cap drops the excess.  The stationary probability flow of these transitions per
uniformised step is reported as ``lost_mass`` (as :mod:`fluidq.dtmc.networks` does), with the rate of
lost requests per second.

Limits: two identical engines, FCFS Sarathi batches without ``k_max`` or a KV cache, fixed prompts no
longer than ``b_max``, geometric outputs; the state grows as ``(caps x P x phases)^2``, so only small
engines (small ``b_max`` and ``P``) and moderate loads are solvable.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from .._validate import integer, real
from ..engine import Engine
from ..errors import ParameterError
from ..results import Result, plain
from .rules import fixed_prefill, prefill_budget
from .solve import stationary

__all__ = ["MAX_STATES", "JSQLLMResult", "jsq_llm_engines"]

#: largest two-engine chain (product of the engine state counts, before pruning) that is built
MAX_STATES = 4_000_000


@dataclass(frozen=True)
class JSQLLMResult(Result):
    """Stationary means of the two-engine JSQ chain for ``k`` and ``2k`` phases and their extrapolation.

    ``mean_requests[k]`` is the pair (engine 1, engine 2) of time-average resident requests with
    Erlang-``k`` batches; ``extrapolated`` the pair extrapolated to deterministic batches;
    ``n_states``, ``lost_mass`` (per uniformised step), ``lost_rate_per_s`` (requests dropped at the caps
    per second), ``residual`` (``||pi P - pi||_1``) and ``method`` are keyed by the number of phases.
    """

    phases: tuple
    mean_requests: dict
    extrapolated: tuple
    n_states: dict
    lost_mass: dict
    lost_rate_per_s: dict
    residual: dict
    method: dict
    inputs: dict

    @property
    def extrapolated_total(self) -> float:
        return float(sum(self.extrapolated))

    def to_dict(self) -> dict:
        return plain({"phases": list(self.phases),
                      "mean_requests": {str(k): list(v) for k, v in self.mean_requests.items()},
                      "extrapolated": list(self.extrapolated), "extrapolated_total": self.extrapolated_total,
                      "n_states": {str(k): v for k, v in self.n_states.items()},
                      "lost_mass": {str(k): v for k, v in self.lost_mass.items()},
                      "lost_rate_per_s": {str(k): v for k, v in self.lost_rate_per_s.items()},
                      "residual": {str(k): v for k, v in self.residual.items()},
                      "method": {str(k): v for k, v in self.method.items()}, "inputs": self.inputs})


class _Engine:
    """One engine's local chain: its states, the arrival map and the phase / batch-end transitions."""

    def __init__(self, engine: Engine, P: int, md: float, W: int, D: int, k: int):
        from ..policies import resolve_policy

        self.pol = resolve_policy("sarathi")
        b = int(engine.b_max)
        self.b, self.P, self.q, self.W, self.D, self.k = b, P, 1.0 / md, W, D, k
        states = [(0, 0, 0, 0, 0, 0)]  # idle
        for w in range(W + 1):
            for j in range(P if w > 0 else 1):
                for d in range(D + 1):
                    if w == 0 and d == 0:
                        continue
                    for m in range(min(w, self._reach(j, d)) + 1):
                        for ph in range(k):
                            states.append((1, w, j, d, m, ph))
        self.states = states
        self.index = {s: i for i, s in enumerate(states)}
        a = np.array(states, dtype=np.int64)
        self.w, self.d = a[:, 1], a[:, 3]
        self.n = np.where(a[:, 0] == 1, self.w + self.d, 0)
        L = len(states)
        # arrival: local destination, or -1 when the waiting count is at its cap (dropped)
        arr = np.empty(L, dtype=np.int64)
        arr[0] = self._start(1, 0, 0)
        for i, (_busy, w, j, d, m, ph) in enumerate(states[1:], start=1):
            arr[i] = self.index[(1, w + 1, j, d, m, ph)] if w < W else -1
        self.arrive = arr
        # service: (src, dst, rate, lost requests per transition)
        src, dst, rate, lost = [], [], [], []
        t_of = {}
        for i, (busy, w, j, d, m, ph) in enumerate(states):
            if not busy:
                continue
            D0, B = (int(np.ravel(x)[0]) for x in prefill_budget(self.pol, b, np.array([w]), np.array([d])))
            if m > 0:
                K, T, jn = (int(np.ravel(x)[0]) for x in fixed_prefill(self.pol, P, P, np.array([m]), np.array([j]),
                                                             np.array([B])))
            else:
                K, T, jn = 0, 0, j
            bt = D0 + T
            if bt not in t_of:
                t_of[bt] = float(engine.batch_time(float(bt)))
            r = k / t_of[bt]
            if ph < k - 1:
                src.append(i), dst.append(self.index[(1, w, j, d, m, ph + 1)]), rate.append(r), lost.append(0)
                continue
            for C, pc in self._binom(D0):
                d2 = d - C + K
                drop = max(0, d2 - D)
                src.append(i), dst.append(self._start(w - K, jn, min(d2, D))), rate.append(r * pc), lost.append(drop)
        self.src, self.dst = np.array(src, np.int64), np.array(dst, np.int64)
        self.rate, self.lost = np.array(rate, float), np.array(lost, float)

    def _reach(self, j: int, d: int) -> int:
        """Prompts a batch with head progress ``j`` and ``d`` decoders can prefill, with enough waiting."""
        B = self.b - min(d, self.b)
        return 0 if B <= 0 else -(-(B + j) // self.P)

    def _start(self, w: int, j: int, d: int) -> int:
        """The local state at the start of a batch from ``(w, j, d)`` (idle when empty)."""
        if w == 0 and d == 0:
            return 0
        return self.index[(1, w, j if w > 0 else 0, d, min(w, self._reach(j, d)), 0)]

    def _binom(self, n: int):
        if n == 0:
            return [(0, 1.0)]
        from scipy.stats import binom

        c = np.arange(n + 1)
        p = binom.pmf(c, n, self.q)
        return [(int(ci), float(pi)) for ci, pi in zip(c, p) if pi > 0]


def _local_size(b: int, P: int, W: int, D: int, k: int) -> int:
    n = 1
    for w in range(W + 1):
        for j in range(P if w > 0 else 1):
            for d in range(D + 1):
                if w == 0 and d == 0:
                    continue
                B = b - min(d, b)
                reach = 0 if B <= 0 else -(-(B + j) // P)
                n += (min(w, reach) + 1) * k
    return n


def _solve(e: _Engine, lam: float, tol: float):
    L = len(e.states)
    S = L * L
    I1 = np.repeat(np.arange(L), L)  # joint index = i1 * L + i2
    I2 = np.tile(np.arange(L), L)
    n1, n2 = e.n[I1], e.n[I2]
    to1 = n1 <= n2  # JSQ on resident requests, ties to engine 1
    rows, cols, vals, lostv = [], [], [], []
    src = np.arange(S)
    a1, a2 = e.arrive[I1], e.arrive[I2]
    dest = np.where(to1, np.where(a1 >= 0, a1 * L + I2, src), np.where(a2 >= 0, I1 * L + a2, src))
    dropped = np.where(to1, a1 < 0, a2 < 0)
    rows.append(src), cols.append(dest), vals.append(np.full(S, lam)), lostv.append(dropped.astype(float))
    T = e.src.size
    other = np.tile(np.arange(L), T)
    rep = np.repeat(np.arange(T), L)
    # engine 1's service: (s, i2) -> (dst, i2); engine 2's: (i1, s) -> (i1, dst)
    rows.append(e.src[rep] * L + other), cols.append(e.dst[rep] * L + other)
    vals.append(e.rate[rep]), lostv.append(e.lost[rep])
    rows.append(other * L + e.src[rep]), cols.append(other * L + e.dst[rep])
    vals.append(e.rate[rep]), lostv.append(e.lost[rep])
    r, c, v, lo = (np.concatenate(x) for x in (rows, cols, vals, lostv))
    out = np.bincount(r, weights=v, minlength=S)
    lost_rate = np.bincount(r, weights=v * lo, minlength=S)  # requests dropped per second, per state
    lost_flow = np.bincount(r, weights=np.where(lo > 0, v, 0.0), minlength=S)
    Lam = float(out.max()) * 1.0001
    Q = sp.csr_matrix((v / Lam, (r, c)), shape=(S, S))
    Pm = Q + sp.diags(1.0 - out / Lam)
    Pm = Pm.tocsr()
    Pm.sum_duplicates()
    keep = np.sort(breadth_first_order(Pm, 0, directed=True, return_predecessors=False))
    Pr = Pm[keep][:, keep].tocsr()
    sol = stationary(Pr, "auto", tol=tol, ref=0)
    if sol.method == "failed":
        raise RuntimeError(f"no stationary solver converged on the {keep.size}-state JSQ chain: {sol.note}")
    pi = sol.pi
    means = (float(pi @ n1[keep]), float(pi @ n2[keep]))
    return {"means": means, "n_states": int(keep.size), "lost_mass": float(pi @ (lost_flow[keep] / Lam)),
            "lost_rate_per_s": float(pi @ lost_rate[keep]), "residual": float(sol.residual), "method": sol.method}


def jsq_llm_engines(engine, *, arrival_rate_per_s, prompt_tokens, mean_output_tokens, phases=2,
                    max_waiting=12, max_decode=12, tol=1e-11) -> JSQLLMResult:
    """Two copies of ``engine`` behind a JSQ router, Sarathi batches, solved for ``phases`` and ``2 phases``.

    Parameters
    ----------
    engine : Engine
        Both engines (Sarathi-Serve with budget ``engine.b_max``; no ``k_max``, no KV cache).
    arrival_rate_per_s : float
        Poisson arrival rate ``lambda`` (requests/s) into the router, ``> 0``.
    prompt_tokens : int
        Fixed prompt length ``P``, ``1 <= P <= engine.b_max``.
    mean_output_tokens : float
        Mean ``m_d >= 1`` of the geometric output length.
    phases : int
        ``k >= 1``: the chain is solved with Erlang-``k`` and Erlang-``2k`` batch durations.
    max_waiting, max_decode : int
        Caps per engine on waiting prompts and decoding requests (``>= 1``).
    tol : float
        Solver tolerance.

    Returns
    -------
    JSQLLMResult

    Raises
    ------
    ParameterError
        For an input outside its domain, or a chain above :data:`MAX_STATES` states (the estimate is in
        the message).
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if engine.k_max is not None and engine.k_max != math.inf:
        raise ParameterError("engine", engine, "an engine without k_max (the chain has no batch-size limit)")
    if getattr(engine, "kv_capacity_tokens", None) is not None:
        raise ParameterError("engine", engine, "an engine without kv_capacity_tokens (no KV cache in the chain)")
    lam = real("arrival_rate_per_s", arrival_rate_per_s, positive=True)
    P = integer("prompt_tokens", prompt_tokens, minimum=1)
    b = int(engine.b_max)
    if P > b:
        raise ParameterError("prompt_tokens", prompt_tokens, f"at most engine.b_max={b} in this chain",
                             "longer prompts span several batches alone; use fluidq.simulate_network")
    md = real("mean_output_tokens", mean_output_tokens, minimum=1.0)
    k = integer("phases", phases, minimum=1)
    W = integer("max_waiting", max_waiting, minimum=1)
    D = integer("max_decode", max_decode, minimum=1)
    tol = real("tol", tol, positive=True)
    est = _local_size(b, P, W, D, 2 * k) ** 2
    if est > MAX_STATES:
        raise ParameterError("max_waiting", max_waiting,
                             f"caps, prompt length and phases giving at most {MAX_STATES:,} states",
                             f"this build would have about {est:,} states with {2 * k} phases; lower the caps, "
                             "phases, prompt_tokens or b_max")
    inputs = {"arrival_rate_per_s": lam, "prompt_tokens": P, "mean_output_tokens": md, "b_max": b,
              "max_waiting": W, "max_decode": D, "load": lam * (P + md) / (2 * b / float(engine.batch_time(float(b))))}
    out = {}
    t0 = time.perf_counter()
    for kk in (k, 2 * k):
        out[kk] = _solve(_Engine(engine, P, md, W, D, kk), lam, tol)
    inputs["wall_s"] = time.perf_counter() - t0
    x1, x2 = out[k]["means"], out[2 * k]["means"]
    ext = tuple(2 * b2 - b1 for b1, b2 in zip(x1, x2))
    return JSQLLMResult((k, 2 * k), {kk: o["means"] for kk, o in out.items()}, ext,
                        {kk: o["n_states"] for kk, o in out.items()}, {kk: o["lost_mass"] for kk, o in out.items()},
                        {kk: o["lost_rate_per_s"] for kk, o in out.items()},
                        {kk: o["residual"] for kk, o in out.items()}, {kk: o["method"] for kk, o in out.items()},
                        inputs)
