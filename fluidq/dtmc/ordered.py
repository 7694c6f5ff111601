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
``K``-tuples of the support).  There are ``(max_prefill * v_p + 1) * sum_{n <= max_decode} V^n``
states (``V`` the largest output length): only tiny caps are accepted, and a larger state count
is refused with the number in the error.

Prompts must be ``Fixed`` (at most the budget or chunked).  Truncation: arrivals beyond
``max_prefill`` and decoders beyond ``max_decode`` (entrants dropped, longest first, as in
:mod:`fluidq.dtmc.finite`) are mass lost at the boundary, reported by :meth:`EngineChain.solve`.
"""
from __future__ import annotations

import time
from itertools import product

import numpy as np
import scipy.sparse as sp

from .._validate import integer
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Fixed, Workload
from .finite import _output_support, batch_arrivals, decode_state_space
from .kernels import check_tolerances

__all__ = ["build_ordered_dtmc", "n_ordered_states"]


def n_ordered_states(max_prefill: int, head_states: int, max_decode: int, V: int) -> int:
    """``(max_prefill * head_states + 1) * sum_{n=0..max_decode} V**n``."""
    return (max_prefill * head_states + 1) * sum(V ** n for n in range(max_decode + 1))


def build_ordered_dtmc(engine: Engine, workload: Workload, policy="orca", *, max_prefill: int = 10,
                       max_decode: int = 4, max_output: int = 8, tolerance: float = 1e-6,
                       kernel_tol: float = 1e-12, max_states: int = 200_000):
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
        Truncation caps: requests in prefill, decoding requests (the length of ``seq``).
    max_output : int
        Largest output length accepted (the alphabet of ``seq``).
    tolerance : float
        Boundary mass above which the solved result is "inaccurate".
    max_states : int
        Refuse larger chains (the error states the count).

    Returns
    -------
    EngineChain
        Coordinates ``n_p``, ``n_d``, ``j`` and ``seq`` (index into ``inputs["sequences"]``).

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
    Md = integer("max_decode", max_decode, minimum=1)
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
    vp = int(pr.n)
    if vp > b and not pol.chunked:
        raise ParameterError("prompt_tokens", vp, f"at most the budget b={b} for {pol.name}, which does not chunk")
    vals, probs, V = _output_support(workload.output_tokens, max_output)
    J = vp if (pol.chunked and vp > 1) else 1
    n_states = n_ordered_states(Np, J, Md, V)
    if n_states > max_states:
        raise ParameterError("max_prefill/max_decode/output_tokens", (Np, Md, V),
                             f"an ordered state space of at most max_states={max_states:,}",
                             f"these give {n_states:,} states ({Np} x {J} prefill states + 1, times "
                             f"sum_(n<={Md}) {V}^n decode sequences); lower max_decode or shrink the output support")
    lam = workload.arrival_rate_per_s

    seqs = [()]
    for n in range(1, Md + 1):
        seqs.extend(product(range(1, V + 1), repeat=n))
    seq_index = {s: i for i, s in enumerate(seqs)}
    nd_of = np.array([len(s) for s in seqs], dtype=np.int64)
    rem_of = np.array([sum(s) for s in seqs], dtype=float)
    space, NP, SI, JJ, ND = decode_state_space(Np, len(seqs), J, "seq", nd_of)
    lookup = space._lookup
    S = space.size

    ent_cache = {}

    def entrants(K):
        if K not in ent_cache:
            tuples, w = [], []
            for idx in product(range(vals.size), repeat=K):
                tuples.append(tuple(int(vals[i]) for i in idx))
                w.append(float(np.prod([probs[i] for i in idx])) if K else 1.0)
            ent_cache[K] = (tuples, np.array(w))
        return ent_cache[K]

    tb_of, arrivals = batch_arrivals(engine, lam, b, kernel_tol, cap=Np + 1)  # >= Np + 1 arrivals: all lost

    def prefill(n, j):
        if n == 0:
            return 0, 0, j
        if pol.chunked:
            T = min(b, n * vp - j)
            first = vp - j
            if T >= first:
                K, jn = 1 + (T - first) // vp, (T - first) % vp
            else:
                K, jn = 0, j + T
            if K >= n or J == 1:
                jn = 0
            return K, T, jn
        K = min(n, b // vp)
        return K, K * vp, 0

    rows, cols, data = [], [], []
    lost = np.zeros(S)
    sojourn = np.zeros(S)
    sojourn2 = np.zeros(S)
    batch_tokens = np.zeros(S)
    completions = np.zeros(S)
    for s in range(S):
        n, j, seq = int(NP[s]), int(JJ[s]), seqs[int(SI[s])]
        nd = len(seq)
        K, T, jn = prefill(n, j)
        Ds = min(nd, b - T)
        head = [r - 1 for r in seq[:Ds]]
        kept = tuple(r for r in head if r > 0) + seq[Ds:]
        completions[s] = Ds - sum(1 for r in head if r > 0)
        btok = T + Ds
        if btok == 0:  # idle: exactly one arrival starts the next batch
            A, pa = np.array([1]), np.array([1.0])
            sojourn[s] = 1.0 / lam
        else:
            A, pa = arrivals(btok)
            sojourn[s] = tb_of[btok]
            sojourn2[s] = tb_of[btok] ** 2
        batch_tokens[s] = btok
        tuples, tw = entrants(K)
        dests, dlost = [], 0.0
        for tup, w in zip(tuples, tw):
            x = len(kept) + len(tup) - Md
            if x > 0:  # drop x of the entrants, longest first (the rule of fluidq.dtmc.finite)
                drop = sorted(range(len(tup)), key=lambda i: -tup[i])[:x]
                tup = tuple(v for i, v in enumerate(tup) if i not in drop)
                dlost += w
            full = kept + tup
            dests.append(seq_index[full])
        dests = np.array(dests, dtype=np.int64)
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
