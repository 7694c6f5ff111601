"""The LLM Rybko-Stolyar network of two engines with prefill/decode batches: a continuous-time chain.

The network is the one of :func:`fluidq.network.examples.llm_rybko_stolyar` (Li, Dai, Peng,
arXiv:2504.07347 §5.4) at a size a chain can hold: type A enters at engine 1 (hop ``A.1``) and then
visits engine 2 (``A.2``); type B mirrors it (``B.1`` on engine 2, then ``B.2`` on engine 1).  Each engine
therefore serves an *entering* hop and an *exiting* hop, and the engines are coupled: a request that
finishes its entering hop on one engine joins the other engine's queue at once.  This is the
instability mechanism of Rybko and Stolyar (1992): with priority to the exiting hop (``"exit"``) each
engine starves the other's entering traffic in turn.

Model (as :func:`fluidq.dtmc.jsq_llm_engines`, whose conventions it shares)
--------------------------------------------------------------------------
* Types A and B arrive as Poisson processes of rate ``lambda`` each.
* Each engine runs Sarathi-Serve batches with token budget ``b = b_max`` in its station's priority
  order -- the rule of ``fluidq.simulate_network``: decoding requests first (the priority hop's first,
  one token each, up to ``b``), then the waiting prompts, the priority hop's first and FCFS within a
  hop, chunked (a prompt's head resumes where it stopped; each hop holds at most one started prompt).
  A prompt that finishes prefill decodes from the next batch on.
* Prompts are fixed per hop: ``P_in`` tokens for the entering hops, ``P_out`` for the exiting ones
  (``1 <= P <= b_max``).  Outputs are geometric with means ``m_in`` and ``m_out``: every decode token
  ends the hop with probability ``1/m`` (so ``D`` decode tokens of a hop end ``Binomial(D, 1/m)`` of
  its requests).
* A batch of ``b`` tokens lasts ``t(b)``, replaced by an Erlang-``k`` duration of the same mean; its
  composition is fixed when it starts.  When a batch ends, the requests that finished their entering
  hop join the other engine's exiting queue (an idle engine starts a batch with them at once), then the
  engine starts its next batch or idles.

State of one engine: idle, or busy with ``(w_in, w_out, j_in, j_out, d_in, d_out, m_in, m_out,
phase)``: waiting prompts and the head prompt's prefilled tokens per hop, decoding requests per hop,
the prompts per hop the running batch prefills (fixed at its start) and the Erlang phase.  The local
states are those reachable from idle; the network state is the pair, restricted to the pairs reachable
from the empty network.  The chain is solved for ``k`` and ``2k`` phases and the means extrapolated to
deterministic batches by ``x = 2 x(2k) - x(k)`` (see :mod:`fluidq.dtmc.llm_network`).

Truncation: at most ``max_waiting`` waiting prompts and ``max_decode`` decoding requests per engine
(both hops together).  An arrival (external or from the other engine) beyond the waiting cap is dropped;
decoders beyond the decode cap are dropped when their prefill ends.  The probability flow of these
transitions per uniformised step is ``lost_mass``; ``lost_rate_per_s`` the requests dropped per second.

Limits: the two engines are identical and the network symmetric (one ``lambda``); no ``k_max``, no KV
cache; small budgets and caps (the chain grows as the square of an engine's states).
"""
from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from .._validate import integer, real
from ..engine import Engine
from ..errors import ParameterError
from ..policies import Sarathi
from ..results import Result, plain
from ._pmf import binom_pmf
from .rules import budgets, fixed_prefill_counts
from .solve import stationary

__all__ = ["MAX_STATES", "LLMRybkoStolyarResult", "llm_rybko_stolyar_chain"]

#: largest chain (pairs of reachable engine states, before pruning to the pairs reachable) that is built
MAX_STATES = 4_000_000

_IDLE = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
_SARATHI = Sarathi()  # the batch rule both engines follow, hop by hop in the station's priority order


@dataclass(frozen=True)
class LLMRybkoStolyarResult(Result):
    """Stationary means of the LLM Rybko-Stolyar chain for ``k`` and ``2k`` phases and their extrapolation.

    ``mean_requests[k]`` is the pair (engine 1, engine 2) of time-average resident requests with
    Erlang-``k`` batches, ``mean_hops[k]`` the same per hop (``A.1``, ``A.2``, ``B.1``, ``B.2``);
    ``mean_tokens[k]`` the expected remaining tokens per hop (what ``simulate_network`` records as
    ``buffer_tokens``); ``extrapolated``, ``extrapolated_hops`` and ``extrapolated_tokens`` the values
    extrapolated to deterministic batches;
    ``n_states``, ``lost_mass``, ``lost_rate_per_s``, ``residual`` (``||pi P - pi||_1``) and ``method`` are
    keyed by the number of phases.
    """

    phases: tuple
    mean_requests: dict
    mean_hops: dict
    mean_tokens: dict
    extrapolated: tuple
    extrapolated_hops: dict
    extrapolated_tokens: dict
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
        from .llm_network import JSQLLMResult  # the same per-phase fields; the hops added here

        return plain({**JSQLLMResult.to_dict(self),
                      "mean_hops": {str(k): dict(v) for k, v in self.mean_hops.items()},
                      "mean_tokens": {str(k): dict(v) for k, v in self.mean_tokens.items()},
                      "extrapolated_hops": dict(self.extrapolated_hops),
                      "extrapolated_tokens": dict(self.extrapolated_tokens)})


class _Engine:
    """One engine's local chain: reachable states, arrivals per hop, phase and batch-end transitions.

    Hop index 0 is the entering hop, 1 the exiting hop; ``hi`` is the hop with priority.
    """

    def __init__(self, b, P, q, W, D, k, hi, batch_time):
        self.b, self.P, self.q, self.W, self.D, self.k, self.hi = b, P, q, W, D, k, hi
        self.lo = 1 - hi
        self._t = {}
        self._bt = batch_time
        self.nmax = min(b, D)  # most requests one batch can end (one decode token each)
        states, index = [], {}

        def add(s):
            if s not in index:
                index[s] = len(states)
                states.append(s)
                todo.append(s)

        todo = deque()
        add(_IDLE)
        self._ends = {}
        while todo:
            s = todo.popleft()
            for h in (0, 1):
                for n in (1,) if h == 0 else range(1, self.nmax + 1):
                    add(self._join(s, h, n)[0])
            if s[0]:
                if s[9] < k - 1:
                    add(s[:9] + (s[9] + 1,))
                else:
                    outs = self._end(s)
                    self._ends[s] = outs
                    for dst, _p, _c, _lost in outs:
                        add(dst)
        self.states, self.index = states, index
        L = len(states)
        a = np.array(states, dtype=np.int64)
        busy = a[:, 0] == 1
        self.n_hop = np.where(busy[:, None], a[:, [1, 2]] + a[:, [5, 6]], 0)  # residents per hop
        self.n = self.n_hop.sum(axis=1)
        # expected remaining tokens per hop (geometric outputs are memoryless: a decoding or waiting
        # request has ``m`` output tokens to go on average; a waiting prompt ``P`` less the head's progress)
        mean_out = 1.0 / np.asarray(q, float)
        self.tok_hop = np.where(busy[:, None], a[:, [1, 2]] * (np.asarray(P) + mean_out) - a[:, [3, 4]]
                                + a[:, [5, 6]] * mean_out, 0.0)
        # joins: join[h][n - 1][i] = destination of n requests of hop h joining state i; lost[h][n-1][i]
        self.join = {h: np.empty((self.nmax if h else 1, L), np.int64) for h in (0, 1)}
        self.join_lost = {h: np.zeros((self.nmax if h else 1, L)) for h in (0, 1)}
        for i, s in enumerate(states):
            for h in (0, 1):
                for n in range(1, self.join[h].shape[0] + 1):
                    dst, lost = self._join(s, h, n)
                    self.join[h][n - 1, i] = index[dst]
                    self.join_lost[h][n - 1, i] = lost
        # service: phase steps (carry no completions) and batch ends (src, dst, rate, completions of the
        # entering hop handed to the other engine, requests dropped at the decode cap)
        src, dst, rate, out, lost = [], [], [], [], []
        for i, s in enumerate(states):
            if not s[0]:
                continue
            r = k / self._duration(s)
            if s[9] < k - 1:
                src.append(i), dst.append(index[s[:9] + (s[9] + 1,)]), rate.append(r), out.append(0), lost.append(0)
                continue
            for d2, p, c, lo in self._ends[s]:
                src.append(i), dst.append(index[d2]), rate.append(r * p), out.append(c), lost.append(lo)
        self.src, self.dst = np.array(src, np.int64), np.array(dst, np.int64)
        self.rate, self.out, self.lost = np.array(rate), np.array(out, np.int64), np.array(lost, float)

    # -- the batch rule on counts -------------------------------------------------------------------
    def _served(self, d):
        """Decode tokens per hop: the priority hop's decoders first, up to the budget (Sarathi's rule per hop)."""
        s = [0, 0]
        s[self.hi], left, _ = budgets(_SARATHI, self.b, 0, d[self.hi])
        s[self.lo] = budgets(_SARATHI, left, 0, d[self.lo])[0]
        return s

    def _start(self, w, j, d):
        """The state at the start of a batch from waiting ``w``, head progress ``j``, decoders ``d``."""
        if w[0] == w[1] == d[0] == d[1] == 0:
            return _IDLE
        j = [j[h] if w[h] > 0 else 0 for h in (0, 1)]
        sv = self._served(d)
        rem = self.b - sv[0] - sv[1]
        m = [0, 0]
        for h in (self.hi, self.lo):  # prefill: the priority hop's prompts first, chunked FCFS within a hop
            _K, T, _jn, m[h] = fixed_prefill_counts(_SARATHI, self.P[h], self.P[h], w[h], j[h], rem)
            rem -= T
        return (1, w[0], w[1], j[0], j[1], d[0], d[1], m[0], m[1], 0)

    def _join(self, s, h, n):
        """``n`` requests of hop ``h`` join state ``s``: (new state, requests dropped at the waiting cap)."""
        busy, w0, w1, j0, j1, d0, d1, m0, m1, ph = s
        room = self.W - (w0 + w1 if busy else 0)
        take = min(n, room)
        if not busy:
            w = [take if h == 0 else 0, take if h == 1 else 0]
            return (self._start(w, [0, 0], [0, 0]) if take else _IDLE), n - take
        w = [w0 + (take if h == 0 else 0), w1 + (take if h == 1 else 0)]
        return (1, w[0], w[1], j0, j1, d0, d1, m0, m1, ph), n - take

    def _tokens(self, s):
        """The batch's tokens, and per hop the prompts completed and the head's new progress."""
        _busy, w0, w1, j0, j1, d0, d1, m0, m1, _ph = s
        sv = self._served((d0, d1))
        rem = self.b - sv[0] - sv[1]
        tok = sv[0] + sv[1]
        done, j = [0, 0], [j0, j1]
        m = (m0, m1)
        for h in (self.hi, self.lo):
            if not m[h]:
                continue
            done[h], use, j[h], _U = fixed_prefill_counts(_SARATHI, self.P[h], self.P[h], m[h], j[h], rem)
            tok += use
            rem -= use
        return tok, sv, done, j

    def _duration(self, s):
        tok = self._tokens(s)[0]
        if tok not in self._t:
            self._t[tok] = float(self._bt(float(tok)))
        return self._t[tok]

    def _end(self, s):
        """Outcomes of the batch in ``s``: (next state, probability, entering-hop completions, dropped)."""
        _busy, w0, w1, _j0, _j1, d0, d1, _m0, _m1, _ph = s
        _tok, sv, done, j = self._tokens(s)
        pe = binom_pmf(np.arange(sv[0] + 1), sv[0], self.q[0])
        px = binom_pmf(np.arange(sv[1] + 1), sv[1], self.q[1])
        outs = []
        w = [w0 - done[0], w1 - done[1]]
        for ce in range(sv[0] + 1):
            for cx in range(sv[1] + 1):
                p = float(pe[ce] * px[cx])
                if p <= 0.0:
                    continue
                d = [d0 - ce + done[0], d1 - cx + done[1]]
                drop = max(0, d[0] + d[1] - self.D)
                if drop:  # truncation: the new decoders beyond the cap are dropped (exiting hop's first)
                    cut1 = min(drop, done[1])
                    d[1] -= cut1
                    d[0] -= drop - cut1
                outs.append((self._start(w, j, d), p, ce, drop))
        return outs


def _solve(e: _Engine, lam: float, tol: float):
    L = len(e.states)
    S = L * L
    I1 = np.repeat(np.arange(L), L)  # joint index = i1 * L + i2
    I2 = np.tile(np.arange(L), L)
    rows, cols, vals, lostv = [], [], [], []
    # external arrivals of the entering hop: A at engine 1, B at engine 2
    j1, j2 = e.join[0][0], e.join[0][0]
    rows += [np.arange(S), np.arange(S)]
    cols += [j1[I1] * L + I2, I1 * L + j2[I2]]
    vals += [np.full(S, lam), np.full(S, lam)]
    lostv += [e.join_lost[0][0][I1], e.join_lost[0][0][I2]]
    T = e.src.size
    other = np.tile(np.arange(L), T)
    rep = np.repeat(np.arange(T), L)
    c = e.out[rep]
    # the other engine after the completions of the entering hop join its exiting hop (c = 0: unchanged)
    cc = np.maximum(c - 1, 0)
    moved = np.where(c > 0, e.join[1][cc, other], other)
    moved_lost = np.where(c > 0, e.join_lost[1][cc, other], 0.0)
    # engine 1's batch end: (s, i2) -> (dst, i2 + handed over); engine 2's: (i1, s) -> (i1 + handed, dst)
    rows += [e.src[rep] * L + other, other * L + e.src[rep]]
    cols += [e.dst[rep] * L + moved, moved * L + e.dst[rep]]
    vals += [e.rate[rep], e.rate[rep]]
    lostv += [e.lost[rep] + moved_lost, e.lost[rep] + moved_lost]
    r, cl, v, lo = (np.concatenate(x) for x in (rows, cols, vals, lostv))
    out = np.bincount(r, weights=v, minlength=S)
    lost_rate = np.bincount(r, weights=v * lo, minlength=S)
    lost_flow = np.bincount(r, weights=np.where(lo > 0, v, 0.0), minlength=S)
    Lam = float(out.max()) * 1.0001
    Pm = (sp.csr_matrix((v / Lam, (r, cl)), shape=(S, S)) + sp.diags(1.0 - out / Lam)).tocsr()
    Pm.sum_duplicates()
    keep = np.sort(breadth_first_order(Pm, 0, directed=True, return_predecessors=False))
    Pr = Pm[keep][:, keep].tocsr()
    sol = stationary(Pr, "auto", tol=tol, ref=0)
    if sol.method == "failed":
        raise RuntimeError(f"no stationary solver converged on the {keep.size}-state chain: {sol.note}")
    pi = sol.pi
    k1, k2 = I1[keep], I2[keep]
    means = (float(pi @ e.n[k1]), float(pi @ e.n[k2]))
    # hops: engine 1 holds A.1 (entering) and B.2 (exiting); engine 2 holds B.1 and A.2
    hops = {"A.1": float(pi @ e.n_hop[k1, 0]), "A.2": float(pi @ e.n_hop[k2, 1]),
            "B.1": float(pi @ e.n_hop[k2, 0]), "B.2": float(pi @ e.n_hop[k1, 1])}
    tokens = {"A.1": float(pi @ e.tok_hop[k1, 0]), "A.2": float(pi @ e.tok_hop[k2, 1]),
              "B.1": float(pi @ e.tok_hop[k2, 0]), "B.2": float(pi @ e.tok_hop[k1, 1])}
    return {"means": means, "hops": hops, "tokens": tokens, "n_states": int(keep.size),
            "lost_mass": float(pi @ (lost_flow[keep] / Lam)), "lost_rate_per_s": float(pi @ lost_rate[keep]),
            "residual": float(sol.residual), "method": sol.method}


def _lengths(name, value, b):
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise ParameterError(name, value, "a pair (prompt tokens, mean output tokens)")
    P = integer(f"{name}[0]", value[0], minimum=1)
    if P > b:
        raise ParameterError(f"{name}[0]", value[0], f"at most engine.b_max={b} in this chain",
                             "longer prompts span several batches alone; use fluidq.simulate_network")
    return P, real(f"{name}[1]", value[1], minimum=1.0)


def llm_rybko_stolyar_chain(engine, *, rate_per_s, entering=(1, 2.0), exiting=(2, 2.0), priority="exit",
                            phases=1, max_waiting=6, max_decode=6, tol=1e-11) -> LLMRybkoStolyarResult:
    """The LLM Rybko-Stolyar network on two copies of ``engine``, solved for ``phases`` and ``2 phases``.

    Parameters
    ----------
    engine : Engine
        Both engines (Sarathi-Serve with budget ``engine.b_max``; no ``k_max``, no KV cache).
    rate_per_s : float
        Poisson arrival rate of each type (A and B), ``> 0``.
    entering, exiting : (int, float)
        ``(prompt tokens, mean output tokens)`` of the entering hops (``A.1``, ``B.1``) and the exiting
        hops (``A.2``, ``B.2``); prompts fixed, ``1 <= P <= b_max``; outputs geometric, mean ``>= 1``.
    priority : {"exit", "reversed"}
        ``"exit"``: each engine serves its exiting hop first (the classical unstable order);
        ``"reversed"``: its entering hop first.
    phases : int
        ``k >= 1``: the chain is solved with Erlang-``k`` and Erlang-``2k`` batch durations.
    max_waiting, max_decode : int
        Caps per engine on waiting prompts and on decoding requests, both hops together (``>= 1``).
    tol : float
        Solver tolerance.

    Returns
    -------
    LLMRybkoStolyarResult

    Raises
    ------
    ParameterError
        For an input outside its domain, or a chain above :data:`MAX_STATES` states (the size is in the
        message).
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if engine.k_max is not None and engine.k_max != math.inf:
        raise ParameterError("engine", engine, "an engine without k_max (the chain has no batch-size limit)")
    if getattr(engine, "kv_capacity_tokens", None) is not None:
        raise ParameterError("engine", engine, "an engine without kv_capacity_tokens (no KV cache in the chain)")
    lam = real("rate_per_s", rate_per_s, positive=True)
    b = int(engine.b_max)
    Pin, min_ = _lengths("entering", entering, b)
    Pout, mout = _lengths("exiting", exiting, b)
    if priority not in ("exit", "reversed"):
        raise ParameterError("priority", priority, "'exit' or 'reversed'")
    k = integer("phases", phases, minimum=1)
    W = integer("max_waiting", max_waiting, minimum=1)
    D = integer("max_decode", max_decode, minimum=1)
    tol = real("tol", tol, positive=True)
    hi = 1 if priority == "exit" else 0
    inputs = {"rate_per_s": lam, "entering": [Pin, min_], "exiting": [Pout, mout], "priority": priority,
              "b_max": b, "max_waiting": W, "max_decode": D,
              "load": lam * (Pin + min_ + Pout + mout) / (b / float(engine.batch_time(float(b))))}
    out = {}
    t0 = time.perf_counter()
    for kk in (k, 2 * k):
        e = _Engine(b, (Pin, Pout), (1.0 / min_, 1.0 / mout), W, D, kk, hi, engine.batch_time)
        size = len(e.states) ** 2
        if size > MAX_STATES:
            raise ParameterError("max_waiting", max_waiting,
                                 f"caps, prompt lengths and phases giving at most {MAX_STATES:,} state pairs",
                                 f"this build would have {size:,} pairs with {kk} phases; lower the caps, "
                                 "phases, prompt lengths or b_max")
        out[kk] = _solve(e, lam, tol)
    inputs["wall_s"] = time.perf_counter() - t0
    x1, x2 = out[k], out[2 * k]
    ext = tuple(2 * b2 - b1 for b1, b2 in zip(x1["means"], x2["means"]))
    ext_h = {h: 2 * x2["hops"][h] - x1["hops"][h] for h in x1["hops"]}
    ext_t = {h: 2 * x2["tokens"][h] - x1["tokens"][h] for h in x1["tokens"]}
    return LLMRybkoStolyarResult((k, 2 * k), {kk: o["means"] for kk, o in out.items()},
                                 {kk: o["hops"] for kk, o in out.items()},
                                 {kk: o["tokens"] for kk, o in out.items()}, ext, ext_h, ext_t,
                                 {kk: o["n_states"] for kk, o in out.items()},
                                 {kk: o["lost_mass"] for kk, o in out.items()},
                                 {kk: o["lost_rate_per_s"] for kk, o in out.items()},
                                 {kk: o["residual"] for kk, o in out.items()},
                                 {kk: o["method"] for kk, o in out.items()}, inputs)
