"""Orca (prefill first, mixed, chunked) with finite-support outputs: the ordered decode chain.

Same batch model as :mod:`fluidq.dtmc.build` and :mod:`fluidq.dtmc.finite` (Li, Dai, Peng,
"Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents", arXiv:2504.07347,
§3).  Under Orca a batch first spends the budget ``b`` on FCFS prefill chunks and gives decode
only the ``b - T`` tokens prefill leaves; with FCFS those go to the *oldest* decoding requests.
With finite-support outputs a request's remaining tokens matter, and which requests advance
depends on their order, so counts per remaining length (the state of
:mod:`fluidq.dtmc.finite`) are not enough.

State
-----
``(n_p, j, seq)``: requests waiting for or in prefill, the head prompt's progress ``j`` (chunked
fixed prompts), and ``seq``, the tuple of the decoding requests' remaining output tokens, oldest
first (requests leave prefill in arrival order, so decoders are in arrival order too).  A batch
with ``D = min(n_d, b - T)`` decode slots decrements the first ``D`` entries and removes those
that reach zero; the ``K`` requests that finish prefill append i.i.d. output lengths (all
``K``-tuples of the support).

Encoding: only the sequences *reachable* from the empty one are states.  They are enumerated
once, breadth first, under the few batch operations ``(decode slots, prompts finishing)`` the
prefill rule can produce, and numbered; a state is ``(n_p, sequence number, j)``.  FCFS keeps the
order of service equal to the order of arrival, so with ``Fixed(v_d)`` outputs the remaining
tokens never decrease along ``seq`` (``C(max_decode + v_d, v_d)`` sequences, against
``v_d ** max_decode`` tuples), and small supports stay far below the full product.  The count is
known before the matrix is built, and a chain above ``max_states`` is refused with the number.
With ``max_decode=None`` the largest cap up to the budget ``b`` that fits ``max_states`` is used.

Prompts must be ``Fixed`` (at most the budget or chunked).  Truncation: arrivals beyond
``max_prefill`` and decoders beyond ``max_decode`` (entrants dropped, longest first, as in
:mod:`fluidq.dtmc.finite`) are mass lost at the boundary, reported by :meth:`EngineChain.solve`.

The adaptive chain (``Fixed`` outputs, ``max_decode=None``)
----------------------------------------------------------
All the reachable sequences are far too many on a large engine: on the paper's (``b_max = 512``, 100-token
prompts, ``Fixed(8)`` outputs) the decoders of the last eight batches make the sequence, and the box that
fits 200,000 states has ``max_decode = 2`` (boundary mass 0.59).  With ``Fixed(v_d)`` outputs the sequence is
the count of decoders per remaining tokens ``1..v_d`` (FCFS keeps it sorted), and only the states that hold
the stationary mass are kept, grown from the empty state by finite state projection:

1. build the chain on the current set (states sorted by ``n_p``, the empty state first, so the level solver of
   :mod:`fluidq.dtmc.solve` applies).  A move to a state outside the set goes instead to the kept move of the
   same batch with the most arrivals below it (the excess arrivals are dropped), or to the empty state when
   the batch has none; its probability is the mass lost at the boundary;
2. solve it (to :data:`ADAPTIVE_ROUND_TOL`); stop when the boundary mass ``sum pi * lost`` is at most
   ``tolerance``;
3. else add the outside states with the largest stationary inflow ``sum_x pi(x) P(x, y)`` (at least
   :data:`ADAPTIVE_FIRST_ADD`, at most as many as the set has: the set at most doubles), within
   ``max_states``, and go back to 1.

Each round is assembled by array operations over the states; the decoders' step (decode the oldest ``D``,
append ``K`` entrants) is computed once per distinct (counts, ``D``, ``K``).  The rows of the states whose moves
all stay in the set are exactly the rows of the chain over all sequences (``tests/dtmc/test_orca_ordered.py``).
Measured on the shared 2-vCPU VM (2026-12-06), paper engine, 100-token prompts, ``max_prefill=60``: ``Fixed(4)``
at 0.5 of capacity reaches boundary 3.6e-4 with 50,816 states (2 s) and 4.2e-6 with 813,056 (39 s build);
``Fixed(2)`` at 0.65, 8.5e-5 with 93,543 states (6 s); ``Fixed(8)`` at 0.5 only 1.1e-2 with 810,752 states
(the mass spreads over the decoders of eight batches: the boundary falls about as ``states^-0.55``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import product

import numpy as np
import scipy.sparse as sp

from .._validate import integer
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Fixed, Workload
from .finite import _output_support, batch_arrivals, decode_state_space
from .kernels import check_tolerances
from .state import StateSpace
from .rules import check_fixed_prompt, decode_tokens, fixed_prefill, prefill_budget

__all__ = ["ORDERED_AUTO_STATES", "build_ordered_dtmc", "n_ordered_states", "reachable_sequences"]

#: states of the ordered chain when ``build_dtmc`` chooses ``max_decode`` itself (a Python loop per state:
#: about 20 s at 500,000 states, a few seconds here)
ORDERED_AUTO_STATES = 200_000
#: most ordered entrant tuples (support size ** prompts finishing in one batch) per batch operation
MAX_ENTRANT_TUPLES = 4096


def n_ordered_states(max_prefill: int, head_states: int, n_sequences: int) -> int:
    """``(max_prefill * head_states + 1) * n_sequences``: prefill states times decode sequences."""
    return (max_prefill * head_states + 1) * n_sequences


def _truncate(kept: tuple, tup: tuple, Md: int) -> tuple[tuple, bool]:
    """``kept + tup`` with the entrants beyond ``Md`` decoders dropped, longest first."""
    x = len(kept) + len(tup) - Md
    if x <= 0:
        return kept + tup, False
    drop = set(sorted(range(len(tup)), key=lambda i: (-tup[i], i))[:x])
    return kept + tuple(v for i, v in enumerate(tup) if i not in drop), True


def _advance(seq: tuple, D: int) -> tuple[tuple, int]:
    """Decode the oldest ``D`` of ``seq``: ``(remaining sequence, completions)``."""
    head = [r - 1 for r in seq[:D]]
    kept = tuple(r for r in head if r > 0) + seq[D:]
    return kept, D - sum(1 for r in head if r > 0)


def reachable_sequences(ops, entrants, Md: int, limit: int):
    """Decode sequences reachable from ``()``; ``None`` when there are more than ``limit``.

    ``ops``: the ``(decode slots, prompts finishing)`` pairs a batch can have; ``entrants(K)`` the
    ordered output tuples of ``K`` new decoders.  Returns ``(sequences, index)``.
    """
    seqs, index = [()], {(): 0}
    i = 0
    while i < len(seqs):
        seq = seqs[i]
        i += 1
        for dcap, K in ops:
            kept, _ = _advance(seq, min(len(seq), dcap))
            for tup in entrants(K)[0]:
                full, _ = _truncate(kept, tup, Md)
                if full not in index:
                    index[full] = len(seqs)
                    seqs.append(full)
                    if len(seqs) > limit:
                        return None
    return seqs, index


def build_ordered_dtmc(engine: Engine, workload: Workload, policy="orca", *, max_prefill: int = 10,
                       max_decode: int | None = 4, max_output: int = 8, tolerance: float = 1e-6,
                       kernel_tol: float = 1e-12, max_states: int = 200_000, adaptive: bool | None = None,
                       announce=None):
    """Build the embedded chain of Orca with the decoders' remaining tokens in FCFS order.

    Parameters
    ----------
    engine : Engine
    workload : Workload
        Poisson arrivals, ``Fixed`` prompts, ``Fixed`` or ``Empirical`` outputs.
    policy : str or Scheduler
        A prefill-priority scheduler (Orca); decode-priority ones do not need the order (use
        :func:`fluidq.build_dtmc`).
    max_prefill, max_decode : int
        Truncation caps: requests in prefill, decoding requests (the length of ``seq``);
        ``max_decode=None`` builds the adaptive chain for ``Fixed`` outputs (module notes), and for
        ``Empirical`` ones picks the largest cap ``<= b`` whose chain fits ``max_states``.
    max_output : int
        Largest output length accepted (the alphabet of ``seq``).
    tolerance : float
        Boundary mass above which the solved result is "inaccurate".
    max_states : int
        Refuse larger chains (the error states the count); the adaptive chain stops growing there.
    adaptive : bool, optional
        Force (``True``, ``Fixed`` outputs only) or forbid (``False``) the adaptive chain; by default it is
        used for ``Fixed`` outputs without ``max_decode``.
    announce : callable, optional
        ``announce((max_prefill, largest n_d), ChainSize)`` before an adaptive round of
        :data:`fluidq.dtmc.sizing.ANNOUNCE_STATES` states or more.

    Returns
    -------
    EngineChain
        Coordinates ``n_p``, ``n_d``, ``j`` and ``seq``: an index into ``inputs["sequences"]`` (the remaining
        tokens, oldest first), or for the adaptive chain into ``inputs["decode_counts"]`` (decoders per remaining
        tokens ``1..v_d``; ``inputs["adaptive"]`` lists its rounds and their boundary masses).

    Examples
    --------
    >>> import fluidq
    >>> from fluidq.dtmc.ordered import build_ordered_dtmc
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=4), b_max=8)
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=2.0), prompt_tokens=2,
    ...                     output_tokens=fluidq.Empirical(values=(1, 3)))
    >>> r = build_ordered_dtmc(e, w, max_prefill=6, max_decode=5).solve()
    >>> r.status.value
    'stable'
    """
    from .build import EngineChain, check_chain_inputs, saturation, scheduler_rules

    t0 = time.perf_counter()
    check_chain_inputs(engine, workload)
    Np = integer("max_prefill", max_prefill, minimum=1)
    max_output = integer("max_output", max_output, minimum=1)
    tolerance, kernel_tol = check_tolerances(tolerance, kernel_tol)
    max_states = integer("max_states", max_states, minimum=1)
    pol, b = scheduler_rules(policy, engine)
    if pol.priority != "prefill" or not pol.mixed:
        raise ParameterError("policy", pol.name, "a prefill-priority mixed scheduler (Orca) for the ordered chain",
                             "other schedulers decode all decoders or none: use fluidq.build_dtmc")
    pr = workload.prompt_tokens
    if not isinstance(pr, Fixed):
        raise ParameterError("prompt_tokens", pr, "a Fixed prompt length for the ordered Orca chain")
    vp = check_fixed_prompt(pol, int(pr.n), b)
    out = workload.output_tokens
    if isinstance(out, Fixed) and adaptive is not False and max_decode is None:
        max_output = max(max_output, int(out.n))  # the adaptive chain does not enumerate an alphabet
    vals, probs, V = _output_support(out, max_output)
    J = vp if (pol.chunked and vp > 1) else 1
    lam = workload.arrival_rate_per_s
    if adaptive is None:
        adaptive = max_decode is None and vals.size == 1
    if adaptive:
        if vals.size != 1:
            raise ParameterError("output_tokens", workload.output_tokens, "Fixed outputs for the adaptive ordered "
                                 "chain (its decode state is the count of decoders per remaining tokens)",
                                 "pass max_decode for the chain over all reachable sequences")
        return _build_adaptive(engine, workload, pol, b, vp, J, int(vals[0]), lam, Np, tolerance, kernel_tol,
                               max_states, announce, t0)

    # the batch each (n_p, j) forms: the count rules of fluidq.dtmc.rules (decoders only take what prefill leaves)
    pn = np.r_[0, np.repeat(np.arange(1, Np + 1), J)]
    pj = np.r_[0, np.tile(np.arange(J), Np)]
    _d0, pB = prefill_budget(pol, b, pn, np.zeros_like(pn))
    pK, pT, pJ = fixed_prefill(pol, vp, J, pn, pj, pB)
    pre = {(int(n), int(j)): (int(k), int(t), int(jn)) for n, j, k, t, jn in zip(pn, pj, pK, pT, pJ)}
    ops = sorted({(b - T, K) for K, T, _ in pre.values()})
    kmax = max(K for _, K in ops)
    if vals.size ** kmax > MAX_ENTRANT_TUPLES:
        raise ParameterError("output_tokens", f"<{vals.size} output lengths>",
                             f"at most {MAX_ENTRANT_TUPLES:,} ordered output tuples per batch for the ordered chain",
                             f"up to {kmax} prompts finish prefill in one batch, giving {vals.size}^{kmax} ordered "
                             "tuples of output lengths; shrink the output support, or use Geometric outputs with "
                             "fluidq.build_dtmc")
    ent_cache = {}

    def entrants(K):
        if K not in ent_cache:
            tuples, w = [], []
            for idx in product(range(vals.size), repeat=K):
                tuples.append(tuple(int(vals[i]) for i in idx))
                w.append(float(np.prod([probs[i] for i in idx])) if K else 1.0)
            ent_cache[K] = (tuples, np.array(w))
        return ent_cache[K]

    per_seq = Np * J + 1
    limit = max(1, max_states // per_seq)
    if max_decode is None:
        found = None
        for Md in range(min(b, max_states), 0, -1):
            found = reachable_sequences(ops, entrants, Md, limit)
            if found is not None:
                break
        if found is None:
            raise ParameterError("max_prefill", Np, f"an ordered chain of at most max_states={max_states:,}",
                                 f"even max_decode=1 gives more than {max_states:,} states with {per_seq:,} "
                                 "prefill states; lower max_prefill")
    else:
        Md = integer("max_decode", max_decode, minimum=1)
        found = reachable_sequences(ops, entrants, Md, limit)
        if found is None:
            raise ParameterError("max_prefill/max_decode/output_tokens", (Np, Md, V),
                                 f"an ordered state space of at most max_states={max_states:,}",
                                 f"these give more than {limit:,} reachable decode sequences times {per_seq:,} "
                                 f"prefill states ({Np} x {J} + 1), over {max_states:,} states; lower max_decode "
                                 "or max_prefill, shrink the output support, or pass max_decode=None")
    seqs, seq_index = found
    nd_of = np.array([len(s) for s in seqs], dtype=np.int64)
    rem_of = np.array([sum(s) for s in seqs], dtype=float)
    space, NP, SI, JJ, ND = decode_state_space(Np, len(seqs), J, "seq", nd_of)
    lookup = space._lookup
    S = space.size

    tb_of, arrivals = batch_arrivals(engine, lam, b, kernel_tol, cap=Np + 1)  # >= Np + 1 arrivals: all lost
    seq_cache = {}

    def seq_step(si, D, K):
        """Destinations (sequence numbers), weights, truncated mass and completions of one batch."""
        key = (si, D, K)
        if key not in seq_cache:
            kept, done = _advance(seqs[si], D)
            tuples, tw = entrants(K)
            dests, dlost = [], 0.0
            for tup, w in zip(tuples, tw):
                full, cut = _truncate(kept, tup, Md)
                dlost += w if cut else 0.0
                dests.append(seq_index[full])
            seq_cache[key] = (np.array(dests, dtype=np.int64), tw, dlost, done)
        return seq_cache[key]

    rows, cols, data = [], [], []
    lost = np.zeros(S)
    sojourn = np.zeros(S)
    sojourn2 = np.zeros(S)
    batch_tokens = np.zeros(S)
    completions = np.zeros(S)
    for s in range(S):
        n, j, si = int(NP[s]), int(JJ[s]), int(SI[s])
        nd = int(ND[s])
        K, T, jn = pre[(n, j)]
        Ds = int(decode_tokens(None, nd, T, b))
        dests, tw, dlost, done = seq_step(si, Ds, K)
        completions[s] = done
        btok = T + Ds
        if btok == 0:  # idle: exactly one arrival starts the next batch
            A, pa = np.array([1]), np.array([1.0])
            sojourn[s] = 1.0 / lam
        else:
            A, pa = arrivals(btok)
            sojourn[s] = tb_of[btok]
            sojourn2[s] = tb_of[btok] ** 2
        batch_tokens[s] = btok
        raw_p = n - K + A
        out_p = raw_p > Np
        cp = np.minimum(raw_p, Np)
        jcol = np.where(cp > 0, jn, 0)
        dest = lookup[cp[:, None], dests[None, :], jcol[:, None]]
        rows.append(np.full(dest.size, s, dtype=np.int64))
        cols.append(dest.ravel())
        data.append((pa[:, None] * tw[None, :]).ravel())
        lost[s] = float(pa[out_p].sum()) + float(pa[~out_p].sum()) * dlost
    rows, cols, data = np.concatenate(rows), np.concatenate(cols), np.concatenate(data)
    if np.any(cols < 0):  # pragma: no cover - a builder bug, never an answer
        raise RuntimeError("internal error: transition to a non-state")
    P = sp.csr_matrix((data, (rows, cols)), shape=(S, S))
    P.sum_duplicates()
    rs = np.asarray(P.sum(axis=1)).ravel()
    P = (sp.diags(1.0 / rs) @ P).tocsr()
    mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
    unproc = NP * (mp + md) - JJ + rem_of[SI]
    return EngineChain(P=P, space=space, sojourn_s=sojourn, sojourn2_s2=sojourn2, batch_tokens=batch_tokens,
                       completions=completions, residents=(NP + ND).astype(float),
                       unprocessed_tokens=unproc.astype(float), lost=lost, arrival_rate_per_s=lam, policy=pol.name,
                       caps={"max_prefill": Np, "max_decode": Md, "head_progress": J, "max_output": V},
                       build_s=time.perf_counter() - t0,
                       inputs={"engine": engine.to_dict(), "workload": workload.to_dict(), "policy": pol.describe(),
                               "b": b, "tolerance": tolerance, "kernel_tol": kernel_tol, "prune_tol": 0.0,
                               "pruned_row_mass": 0.0, "m_p": mp, "m_d": md, "sequences": tuple(seqs),
                               "output_support": (tuple(int(v) for v in vals), tuple(float(p) for p in probs)),
                               **saturation(engine, workload, pol, b)})


# --- the adaptive chain: Fixed outputs, the states that hold the mass --------------------------------------

#: the adaptive chain adds at most this many states, or as many as it has, per round
ADAPTIVE_FIRST_ADD = 2_000
#: residual target of the solves between rounds (the last chain is solved again by ``.solve()``)
ADAPTIVE_ROUND_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class KeyedSpace(StateSpace):
    """A :class:`StateSpace` of ``(n_p, seq, j)`` states looked up through sorted integer keys
    ``(seq * (max_prefill + 1) + n_p) * J + j`` (the box of all such vectors is far too large for a table)."""

    _keys: np.ndarray = field(default=None, repr=False)
    _at: np.ndarray = field(default=None, repr=False)
    _radix: tuple = (1, 1)

    def index(self, *values) -> np.ndarray:
        n, s, j = (np.asarray(v, dtype=np.int64) for v in values)
        key = (s * self._radix[0] + n) * self._radix[1] + j
        pos = np.minimum(np.searchsorted(self._keys, key), self._keys.size - 1)
        return np.where(self._keys[pos] == key, self._at[pos], -1)

    def find(self, **values) -> int:
        v = [int(values.get(n, 0)) for n in self.names]
        i = int(self.index(*v))
        if i < 0:
            raise KeyError(f"{values} is not a state")
        return i


def _advance_counts(c: tuple, D: int) -> tuple[list, int]:
    """Decode the oldest ``D`` decoders of the counts ``c[r - 1]`` per remaining tokens ``r`` (FCFS: the
    fewest remaining tokens are the oldest): ``(counts, completions)``."""
    out = [0] * len(c)
    left, done = D, 0
    for r, n in enumerate(c):
        t = n if n < left else left
        left -= t
        if r == 0:
            done = t
        else:
            out[r - 1] += t
        out[r] += n - t
    return out, done


def _build_adaptive(engine, workload, pol, b, vp, J, vd, lam, Np, tolerance, kernel_tol, max_states, announce, t0):
    """The ordered Orca chain with ``Fixed(vd)`` outputs on the states that hold its mass (module notes)."""
    from .build import EngineChain, saturation
    from .sizing import ANNOUNCE_STATES, ChainSize
    from .solve import stationary

    radix = (Np + 1, J)
    tb_of, arrivals = batch_arrivals(engine, lam, b, kernel_tol, cap=Np + 1)
    empty = (0,) * vd
    seqs, sidx, nd_l, rem_l = [empty], {empty: 0}, [0], [0]
    step_cache: dict = {}
    keys = np.zeros(1, dtype=np.int64)
    notes = []
    while True:
        S = keys.size
        SI, rest = np.divmod(keys, radix[0] * J)
        NP, JJ = np.divmod(rest, J)
        order = np.lexsort((keys, NP))  # by level n_p (the level solver), the empty state first
        keys, SI, NP, JJ = keys[order], SI[order], NP[order], JJ[order]
        ND = np.asarray(nd_l, dtype=np.int64)[SI]
        D0, B = prefill_budget(pol, b, NP, ND)
        K, T, jn = fixed_prefill(pol, vp, J, NP, JJ, B)
        D = decode_tokens(D0, ND, T, b)
        btok = T + D
        # the decoders after the batch: one deterministic step per distinct (sequence, decode slots, entrants)
        trip = (SI * (b + 1) + D) * (b + 1) + K
        ut, inv = np.unique(trip, return_inverse=True)
        nsi = np.empty(ut.size, dtype=np.int64)
        ndone = np.empty(ut.size)
        for i, t in enumerate(ut.tolist()):
            r = step_cache.get(t)
            if r is None:
                rest_, k = divmod(t, b + 1)
                si, d = divmod(rest_, b + 1)
                out, done = _advance_counts(seqs[si], d)
                out[-1] += k
                out = tuple(out)
                s2 = sidx.get(out)
                if s2 is None:
                    s2 = len(seqs)
                    sidx[out] = s2
                    seqs.append(out)
                    nd_l.append(sum(out))
                    rem_l.append(sum((r_ + 1) * c for r_, c in enumerate(out)))
                r = step_cache[t] = (s2, done)
            nsi[i], ndone[i] = r
        SI2, completions = nsi[inv], ndone[inv]
        base = (SI2 * radix[0] + (NP - K)) * J + jn  # + A * J: A arrivals during the batch
        sorted_at = np.argsort(keys)
        sk = keys[sorted_at]
        rows, cols, vals, miss_rows, miss_keys, miss_p = [], [], [], [], [], []
        lost = np.zeros(S)
        ub, binv = np.unique(btok, return_inverse=True)
        members = np.split(np.argsort(binv, kind="stable"), np.cumsum(np.bincount(binv))[:-1])
        for bt, m in zip(ub.tolist(), members):
            A, pa = (np.array([1]), np.array([1.0])) if bt == 0 else arrivals(bt)
            dk = base[m][:, None] + (A * J)[None, :]
            inside = (NP[m] - K[m])[:, None] + A[None, :] <= Np
            pos = np.minimum(np.searchsorted(sk, dk), S - 1)
            hit = (sk[pos] == dk) & inside
            c = sorted_at[pos]
            # a move to a state outside the set goes to the kept move with the most arrivals below it (fewer
            # arrivals: the excess is dropped), else to the empty state; its probability is the mass lost
            below = np.maximum.accumulate(np.where(hit, np.arange(A.size)[None, :], -1), axis=1)
            tgt = np.where(hit, c, np.where(below >= 0, np.take_along_axis(c, np.maximum(below, 0), axis=1), 0))
            p = np.broadcast_to(pa, dk.shape)
            rows.append(np.repeat(m, A.size))
            cols.append(tgt.ravel())
            vals.append(p.ravel())
            lost[m] = (p * ~hit).sum(axis=1)
            cand = ~hit & inside
            miss_rows.append(np.broadcast_to(m[:, None], dk.shape)[cand])
            miss_keys.append(dk[cand])
            miss_p.append(p[cand])
        rows, cols, vals = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        P = sp.csr_matrix((vals, (rows, cols)), shape=(S, S))
        P.sum_duplicates()
        done_round = S >= max_states
        if not done_round:
            levels = np.searchsorted(NP, np.arange(int(NP[-1]) + 2))
            sol = stationary(P, "auto", tol=ADAPTIVE_ROUND_TOL, ref=0, levels=levels)
            if sol.method == "failed":
                notes.append(f"round with {S:,} states: no solver converged")
                break
            pi = sol.pi
            boundary = float(pi @ lost)
            notes.append(f"{S:,} states: boundary mass {boundary:.2e}")
            if boundary <= tolerance:
                break
            mk = np.concatenate(miss_keys)
            if mk.size == 0:  # everything lost goes beyond max_prefill
                notes.append(f"the mass lost goes beyond max_prefill={Np}: raise it")
                break
            uk, ui = np.unique(mk, return_inverse=True)
            inflow = np.bincount(ui, pi[np.concatenate(miss_rows)] * np.concatenate(miss_p))
            n_add = int(min(uk.size, max(ADAPTIVE_FIRST_ADD, S), max_states - S))
            new = uk[np.argsort(-inflow, kind="stable")[:n_add]]
            if announce is not None and S + n_add >= ANNOUNCE_STATES:
                announce((Np, int(ND.max())), ChainSize.of(S + n_add, P.nnz / S + 1.0))
            keys = np.union1d(keys, new)
            continue
        notes.append(f"stopped at max_states={max_states:,} (the solved result gives its boundary mass)")
        break
    coords = {"n_p": NP, "seq": SI, "j": JJ, "n_d": ND}
    for a in coords.values():
        a.setflags(write=False)
    space = KeyedSpace(("n_p", "seq", "j"), coords, (Np + 1, len(seqs), J), np.zeros(0, dtype=np.int64),
                       _keys=sk, _at=sorted_at, _radix=radix)
    sojourn = np.where(btok == 0, 1.0 / lam, tb_of[btok])
    sojourn2 = np.where(btok == 0, 0.0, tb_of[btok] ** 2)
    mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
    rem = np.asarray(rem_l, dtype=float)[SI]
    counts = tuple(seqs)
    return EngineChain(P=P, space=space, sojourn_s=sojourn, sojourn2_s2=sojourn2, batch_tokens=btok.astype(float),
                       completions=completions, residents=(NP + ND).astype(float),
                       unprocessed_tokens=(NP * (mp + md) - JJ + rem).astype(float), lost=lost,
                       arrival_rate_per_s=lam, policy=pol.name,
                       caps={"max_prefill": Np, "max_decode": int(ND.max()), "head_progress": J, "max_output": vd},
                       build_s=time.perf_counter() - t0,
                       inputs={"engine": engine.to_dict(), "workload": workload.to_dict(), "policy": pol.describe(),
                               "b": b, "tolerance": tolerance, "kernel_tol": kernel_tol, "prune_tol": 0.0,
                               "pruned_row_mass": 0.0, "m_p": mp, "m_d": md, "decode_counts": counts,
                               "adaptive": tuple(notes), "output_support": ((vd,), (1.0,)),
                               **saturation(engine, workload, pol, b)})
