"""The embedded chain of one engine for output lengths with small finite support.

Same batch model as :mod:`fluidq.dtmc.build` (Li, Dai, Peng, "Throughput-Optimal Scheduling
Algorithms for LLM Inference and AI Agents", arXiv:2504.07347, §3): Poisson arrivals,
``Poisson(lambda t(b))`` arrivals during a batch of ``b`` tokens, one decode token per decoding
request and batch, a request that finishes prefill decodes from the next batch on.

State
-----
``(n_p, decode, j)``: requests waiting for or in prefill, the *decode vector*
``c = (c_1, ..., c_V)`` (``c_r`` requests decoding with ``r`` output tokens still to produce;
``V`` is the largest output length, ``decode`` is the index of ``c`` in a table of all vectors
with ``sum(c) <= max_decode``), and the head prompt's progress ``j`` (fixed prompts under a
chunking scheduler), as in the memoryless chain.

Why this is exact
-----------------
* Output lengths are i.i.d. and independent of everything the scheduler looks at, so a request's
  output length can be drawn when it enters decode: ``K`` requests finishing prefill add a
  ``Multinomial(K, pmf)`` vector over the support.
* When every decoding request receives its token in a batch, ``c`` shifts down by one position
  and the ``c_1`` requests complete -- no order is needed.  Under FCFS with fewer decode slots
  than decoding requests only the oldest would advance, and the counts alone would not say which;
  the builder therefore admits only batches that serve all decoding requests or none:

  - decode-priority schedulers (Sarathi, vLLM-chunked, FasterTransformer) never hold more than
    ``b`` decoding requests (a batch adds at most its ``b - n_d`` prefill tokens' worth of new
    decoders), so every state with ``n_d <= b`` qualifies and states above ``b`` are unreachable
    (not built);
  - prefill-priority whole-batch vLLM decodes all ``n_d`` requests when ``max_decode <= b``
    (more decoders than the cap are dropped as mass lost at the boundary, reported);
  - a prefill-priority mixed scheduler (Orca) gives decode what a partial prefill leaves; a state
    where that serves some but not all decoders raises :class:`~fluidq.errors.ParameterError`.

Geometric outputs are accepted too (the decode "vector" is then the count ``n_d``, completions
are ``Binomial(D, 1/m_d)`` and partial decode is exact, as in :func:`fluidq.dtmc.build_dtmc`):
:func:`~fluidq.dtmc.build_dtmc` sends them here only with ``Empirical`` prompts.

Prompt lengths: ``Fixed`` (any scheduler) or ``Geometric`` (chunking schedulers), as in
:func:`fluidq.dtmc.build_dtmc`, or ``Empirical`` with ``max(values) <= max_prompt`` (any
scheduler): then ``j`` is the head prompt's *known* remaining tokens, 0 while nobody has looked at
it.  FCFS reads prompt lengths only in queue order, so a waiting prompt's length can be drawn when
prefill first reaches it -- a chunk that ends inside a prompt leaves it head with known remaining
tokens; a whole prompt that does not fit stops prefill (head-of-line) and stays head with its
length known.  Output lengths: ``Fixed(n)`` or ``Empirical`` with
``max(values) <= max_output``.
"""
from __future__ import annotations

import time
from itertools import combinations_with_replacement
from math import comb, factorial

import numpy as np
import scipy.sparse as sp

from .._validate import integer
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Empirical, Fixed, Geometric, Workload
from .kernels import binom_pmf, check_tolerances, effective_cap, geometric_prefill, poisson_pmf
from .rules import check_fixed_prompt, decode_tokens, fits, fixed_prefill, prefill_budget
from .sizing import MAX_STATES_LIMIT
from .state import StateSpace

__all__ = ["build_finite_dtmc", "is_finite_support"]


def is_finite_support(length) -> bool:
    """True for the output lengths this builder handles (``Fixed`` or ``Empirical``)."""
    return isinstance(length, (Fixed, Empirical))


def _output_support(out, max_output: int):
    if isinstance(out, Fixed):
        vals, probs = np.array([int(out.n)]), np.array([1.0])
    elif isinstance(out, Empirical):
        vals, probs = np.asarray(out.values, dtype=np.int64), np.asarray(out.weights, dtype=float)
        keep = probs > 0
        vals, probs = vals[keep], probs[keep]
    else:
        raise ParameterError("output_tokens", out, "a Fixed or Empirical output length (finite support) for the "
                             "finite-support chain", "geometric outputs: fluidq.build_dtmc")
    V = int(vals.max())
    if V > max_output:
        raise ParameterError("output_tokens", f"<support up to {V} tokens>",
                             f"at most max_output={max_output} output tokens: the decode state is a vector of "
                             f"counts per remaining length, C(max_decode + V, V) states",
                             "use a Geometric fit with fluidq.build_dtmc, or fluidq.simulate")
    return vals, probs / probs.sum(), V


def _prompts(workload, pol, b, max_prompt):
    """``(vp, pp, prompt_support)``: a fixed length, a geometric ``1/m_p``, or a finite support."""
    pr = workload.prompt_tokens
    if isinstance(pr, Fixed):
        vp = int(pr.n)
        check_fixed_prompt(pol, vp, b)
        return vp, None, None
    if isinstance(pr, Geometric):
        if not pol.chunked:
            raise ParameterError("prompt_tokens", pr, f"a Fixed or Empirical prompt length for {pol.name} (whole "
                                 "prompts, head-of-line): a geometric prompt's length is unbounded and would be "
                                 "needed in the state", "use a chunking scheduler, or fluidq.simulate")
        return None, pr.p, None
    if isinstance(pr, Empirical):
        v = np.asarray(pr.values, dtype=np.int64)
        w = np.asarray(pr.weights, dtype=float)
        v, w = v[w > 0], w[w > 0]
        if int(v.max()) > max_prompt:
            raise ParameterError("prompt_tokens", f"<support up to {int(v.max())} tokens>",
                                 f"at most max_prompt={max_prompt} prompt tokens (the head prompt's remaining "
                                 "tokens are a state coordinate)", "use Fixed prompts or fluidq.simulate")
        if not pol.chunked and int(v.max()) > b:
            raise ParameterError("prompt_tokens", f"<support up to {int(v.max())} tokens>",
                                 f"at most the budget b={b} for {pol.name}, which does not chunk prompts",
                                 "such a prompt is never scheduled; raise b_max or chunk")
        return None, None, (v, w / w.sum())
    raise ParameterError("prompt_tokens", pr, "a Fixed, Empirical or (chunking schedulers) Geometric prompt length "
                         "for the finite-support chain", "other prompt lengths: fluidq.simulate")


def _head_outcomes(n, B, h, pv, pw, chunked, memo):
    """FCFS prefill of ``n`` prompts with budget ``B`` when the head has ``h`` known remaining tokens.

    ``h = 0``: the head has not been looked at (its length is still a fresh draw from
    ``(pv, pw)``; i.i.d. lengths make drawing it now exact).  Returns ``{(K, T, h_next): prob}``
    with ``h_next`` the known remaining tokens of the new head (0 when fresh or the queue is empty).
    Chunked: tokens go to prompts in order until the budget or the queue is spent.  Whole prompts:
    prompts are taken while they fit; the first that does not fit stops prefill and stays head
    with its length now known.
    """
    if n == 0 or B <= 0:
        return {(0, 0, h if n > 0 else 0): 1.0}
    n = min(n, B + 1)  # at most B prompts complete; beyond that only "queue not empty" matters
    key = (n, B, h)
    if key in memo:
        return memo[key]
    out = {}
    heads = [(h, 1.0)] if h > 0 else list(zip(pv.tolist(), pw.tolist()))
    for r, p in heads:
        if not fits(r, B):  # chunked: the budget goes into it; whole prompts: head-of-line, it stays head
            kth = (0, B, r - B) if chunked else (0, 0, r)
            out[kth] = out.get(kth, 0.0) + p
            continue
        sub = _head_outcomes(n - 1, B - r, 0, pv, pw, chunked, memo) if n > 1 else {(0, 0, 0): 1.0}
        for (k, t, hn), q in sub.items():
            kk = (k + 1, t + r, hn)
            out[kk] = out.get(kk, 0.0) + p * q
    memo[key] = out
    return out


def _decode_vectors(M: int, V: int) -> np.ndarray:
    """All ``c`` in ``N^V`` with ``sum(c) <= M``, the zero vector first."""
    rows = np.zeros((1, 0), dtype=np.int64)
    for _ in range(V):
        s = rows.sum(axis=1)
        reps = M - s + 1
        base = np.repeat(rows, reps, axis=0)
        col = np.concatenate([np.arange(r) for r in reps])
        rows = np.column_stack([base, col])
    order = np.lexsort(rows.T[::-1])
    rows = rows[order]
    rows = rows[np.argsort(rows.sum(axis=1), kind="stable")]
    return rows


def _entrants(K: int, vals: np.ndarray, probs: np.ndarray, V: int):
    """``(E, w)``: the decode vectors of ``K`` new decoders (``Multinomial(K, probs)`` over ``vals``)."""
    s = vals.size
    E, w = [], []
    for combo in combinations_with_replacement(range(s), K):
        cnt = np.bincount(np.asarray(combo, dtype=np.int64), minlength=s)
        coef = factorial(K)
        for c in cnt:
            coef //= factorial(int(c))
        e = np.zeros(V, dtype=np.int64)
        e[vals - 1] += cnt
        E.append(e)
        w.append(coef * float(np.prod(probs ** cnt)))
    if K == 0:
        E, w = [np.zeros(V, dtype=np.int64)], [1.0]
    return np.array(E), np.array(w)



def decode_state_space(Np: int, n_inner: int, J: int, inner: str, nd_of: np.ndarray):
    """States ``(n_p, inner, j)`` (no head progress without prompts) plus a derived ``n_d`` coordinate.

    ``inner`` indexes the decoders' description (a count vector, or an ordered tuple) and
    ``nd_of[inner]`` is the number decoding.  Returns ``(space, NP, inner_index, JJ, ND)``.
    """
    valid = np.ones((Np + 1, n_inner, J), dtype=bool)
    valid[0, :, 1:] = False
    space = StateSpace.from_mask(("n_p", inner, "j"), valid.shape, valid)
    NP, II, JJ = space["n_p"], space[inner], space["j"]
    ND = nd_of[II]
    coords = dict(space.coords)
    coords["n_d"] = ND.copy()
    coords["n_d"].setflags(write=False)
    return StateSpace(space.names, coords, space.shape, space._lookup), NP, II, JJ, ND


def batch_arrivals(engine: Engine, lam: float, b: int, kernel_tol: float, cap: int | None = None):
    """``(tb_of, arrivals)``: ``tb_of[tokens]`` batch times and a cached ``arrivals(tokens) -> (A, P(A))``
    giving the Poisson arrivals during a batch of that many tokens (non-zero entries only).

    ``cap``: arrivals are counted up to ``cap``, the last value being ``P(A >= cap)`` (pass the prefill
    cap + 1: any more arrivals leave the box anyway), so a rate of 1e9 req/s keeps a short kernel
    instead of a vector of ``rate x t(b)`` entries."""
    tb_of = np.r_[0.0, np.asarray(engine.batch_time(np.arange(1, b + 1)), dtype=float)]
    cache: dict = {}

    def arrivals(btok):
        if btok not in cache:
            a = poisson_pmf(lam * tb_of[btok], kernel_tol, cap=cap)
            A = np.flatnonzero(a > 0)
            cache[btok] = (A, a[A])
        return cache[btok]

    return tb_of, arrivals

def build_finite_dtmc(engine: Engine, workload: Workload, policy="sarathi", *, max_prefill: int = 40,
                      max_decode: int | None = None, max_output: int = 12, max_prompt: int = 32,
                      tolerance: float = 1e-6,
                      kernel_tol: float = 1e-12, max_states: int = 200_000):
    """Build the exact truncated chain for finite-support output lengths (see the module notes).

    Parameters
    ----------
    engine : Engine
        Batch-time model and budget ``b_max`` (``k_max`` must be ``None``).
    workload : Workload
        Poisson arrivals; ``Fixed``/``Empirical``/``Geometric`` output lengths; ``Fixed``, ``Empirical`` or
        (chunking) ``Geometric``
        prompt lengths.
    policy : str or Scheduler
        A built-in FCFS scheduler.
    max_prefill : int
        Truncation cap on requests in prefill (arrivals beyond it are counted as lost mass).
    max_decode : int or None
        Cap on decoding requests; ``None`` means the budget ``b`` (400 for geometric outputs).  Must be ``<= b`` for a
        prefill-priority scheduler (else FCFS would serve only the oldest ``b`` decoders); for a
        decode-priority scheduler a larger value is allowed but states above ``b`` are unreachable
        and not built.
    max_output : int
        Largest output length accepted (the decode vector has one count per remaining length).
    max_prompt : int
        Largest ``Empirical`` prompt length accepted (the head's remaining tokens are a coordinate).
    tolerance, kernel_tol : float
        As in :func:`fluidq.dtmc.build_dtmc`.
    max_states : int
        Refuse to build a larger chain.

    Returns
    -------
    EngineChain
        ``.solve()`` gives a :class:`~fluidq.dtmc.StationaryResult`; ``inputs["decode_vectors"]``
        holds the decode vector of every ``decode`` index.

    References
    ----------
    Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
    arXiv:2504.07347 (§3 batch model, the DTMC in the proof of Theorem 2).

    Examples
    --------
    >>> import fluidq
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=4), b_max=8)
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=3.0), prompt_tokens=fluidq.Fixed(n=2),
    ...                     output_tokens=fluidq.Empirical(values=(1, 3)))
    >>> r = fluidq.build_dtmc(e, w, "sarathi", max_prefill=30).solve()
    >>> abs(r.throughput_requests_per_s - 3.0) < 1e-3
    True
    """
    from .build import EngineChain, check_chain_inputs, saturation, scheduler_rules

    t0 = time.perf_counter()
    check_chain_inputs(engine, workload)
    Np = integer("max_prefill", max_prefill, minimum=1)
    max_output = integer("max_output", max_output, minimum=1)
    max_prompt = integer("max_prompt", max_prompt, minimum=1)
    tolerance, kernel_tol = check_tolerances(tolerance, kernel_tol)
    max_states = integer("max_states", max_states, minimum=1, maximum=MAX_STATES_LIMIT,
                         why="states are indexed with 32-bit integers")
    lam = workload.arrival_rate_per_s
    pol, b = scheduler_rules(policy, engine)
    geo = isinstance(workload.output_tokens, Geometric)  # memoryless outputs: the decode vector is n_d
    if geo:
        q_out = workload.output_tokens.p
        vals, probs, V = np.array([1]), np.array([1.0]), 1
    else:
        vals, probs, V = _output_support(workload.output_tokens, max_output)
    vp, pp, psup = _prompts(workload, pol, b, max_prompt)
    if max_decode is None:
        Md = 400 if geo else b
    elif geo:
        Md = integer("max_decode", max_decode, minimum=1)
    else:
        Md = integer("max_decode", max_decode, minimum=1)
        if pol.priority == "prefill" and Md > b:
            raise ParameterError("max_decode", Md, f"at most the token budget b={b} for the prefill-priority "
                                 f"{pol.name} with finite-support outputs",
                                 "with more decoding requests than b, FCFS advances only the oldest b per batch "
                                 "and the chain would need their order; pass max_decode <= b (the excess is "
                                 "reported as mass lost at the boundary)")
        Md = min(Md, b)  # decode priority: n_d <= b is invariant, states above b are unreachable
    if psup is not None:
        J = int(psup[0].max()) + 1  # head's known remaining prompt tokens, 0 = not yet looked at
    else:
        J = vp if (vp is not None and pol.chunked and vp > 1) else 1
    n_dec = comb(Md + V, V)
    n_states = (Np * J + 1) * n_dec
    if n_states > max_states:
        raise ParameterError("max_prefill/max_decode/output_tokens", (Np, Md, V),
                             f"a state space of at most max_states={max_states:,}",
                             f"these give {n_states:,} states ({Np} x {J} prefill states + 1, times "
                             f"C({Md}+{V}, {V}) = {n_dec:,} decode vectors); lower the caps, shrink the output "
                             "support, or use a Geometric fit with fluidq.build_dtmc")

    C = _decode_vectors(Md, V)
    nd_of = C.sum(axis=1)
    vec_index = {tuple(row): i for i, row in enumerate(C)}
    shifted = np.array([vec_index[tuple(np.r_[row[1:], 0])] for row in C], dtype=np.int64)
    done_of = C[:, 0]
    space, NP, DI, JJ, ND = decode_state_space(Np, n_dec, J, "decode", nd_of)
    lookup = space._lookup
    S = space.size

    ent_cache, dec_cache, head_memo = {}, {}, {}

    def entrants(K):
        if K not in ent_cache:
            ent_cache[K] = _entrants(K, vals, probs, V)
        return ent_cache[K]

    def decode_dest(base, K):
        key = (base, K)
        if key not in dec_cache:
            E, w = entrants(K)
            tot = C[base] + E
            over = tot.sum(axis=1) - Md
            lost_w = float(w[over > 0].sum())
            for i in np.flatnonzero(over > 0):  # drop the excess newest decoders, longest first
                x = int(over[i])
                for r in range(V - 1, -1, -1):
                    take = min(x, int(E[i, r]))
                    tot[i, r] -= take
                    x -= take
                    if x == 0:
                        break
            dest = np.array([vec_index[tuple(t)] for t in tot], dtype=np.int64)
            dec_cache[key] = (dest, w, lost_w)
        return dec_cache[key]

    tb_of, arrivals = batch_arrivals(engine, lam, b, kernel_tol, cap=Np + 1)  # >= Np + 1 arrivals: all lost

    def prefill_outcomes(n, B, j):
        """``[(K, T, j_next, w)]`` for FCFS prefill of ``n`` prompts with budget ``B``."""
        if n == 0 or B <= 0:
            return [(0, 0, j, 1.0)]
        if psup is not None:
            res = _head_outcomes(n, B, j, psup[0], psup[1], pol.chunked, head_memo)
            return [(k, t, (hn if k < n else 0), w) for (k, t, hn), w in res.items()]
        if vp is not None:
            K, T, jn = fixed_prefill(pol, vp, J, n, j, B)
            return [(K, T, jn, 1.0)]
        kk, tt, ww = geometric_prefill(effective_cap(n, B, pp), B, pp)
        return list(zip(kk.tolist(), tt.tolist(), [0] * kk.size, ww.tolist()))

    rows, cols, vals_l = [], [], []
    lost = np.zeros(S)
    sojourn = np.zeros(S)
    sojourn2 = np.zeros(S)
    batch_tokens = np.zeros(S)
    completions = np.zeros(S)
    D0s, Bs = prefill_budget(pol, b, NP, ND)  # the batch rule, every state at once
    D0s, Bs = (None if D0s is None else D0s.tolist()), Bs.tolist()
    for s in range(S):
        n, d, j, nd = int(NP[s]), int(DI[s]), int(JJ[s]), int(ND[s])
        D, B = (None if D0s is None else D0s[s]), Bs[s]
        for K, T, jn, w in prefill_outcomes(n, B, j):
            Ds = decode_tokens(D, nd, T, b)
            if 0 < Ds < nd and not geo:
                raise ParameterError("policy", pol.name,
                                     "a scheduler whose batches decode all decoding requests or none, for "
                                     "finite-support outputs",
                                     f"in state n_p={n}, n_d={nd} FCFS would decode only the oldest {Ds} of {nd} "
                                     "requests, and the count vector does not record their order; use a "
                                     "decode-priority scheduler (sarathi, fastertransformer), Geometric "
                                     "outputs with fluidq.build_dtmc, fluidq.dtmc.build_ordered_dtmc "
                                     "(ordered state, tiny caps), or fluidq.simulate")
            if geo:  # Binomial(Ds, 1/m_d) completions; order among decoders is irrelevant
                lo_c, cpr = binom_pmf(Ds, q_out, kernel_tol)
                bases = [(nd - lo_c - i, float(pc)) for i, pc in enumerate(cpr)]
            else:
                bases = [(int(shifted[d]) if Ds > 0 else d, 1.0)]
            btok = Ds + T
            if btok == 0 and (n > 0 or nd > 0):  # pragma: no cover - a builder bug, never an answer
                raise RuntimeError(f"internal error: an empty batch in the non-empty state n_p={n}, n_d={nd}")
            if btok == 0:  # idle: exactly one arrival starts the next batch
                A, pa = np.array([1]), np.array([1.0])
                soj, soj2 = 1.0 / lam, 0.0
            else:
                A, pa = arrivals(btok)
                tb = float(tb_of[btok])
                soj, soj2 = tb, tb * tb
            sojourn[s] += w * soj
            sojourn2[s] += w * soj2
            batch_tokens[s] += w * btok
            completions[s] += w * ((Ds * q_out if geo else done_of[d]) if Ds > 0 else 0)
            if len(bases) == 1:
                ddest, dw, dlost = decode_dest(bases[0][0], K)
            else:
                parts = [decode_dest(bi, K) for bi, _ in bases]
                ddest = np.concatenate([pt[0] for pt in parts])
                dw = np.concatenate([pb * pt[1] for (_, pb), pt in zip(bases, parts)])
                dlost = float(sum(pb * pt[2] for (_, pb), pt in zip(bases, parts)))
            raw_p = n - K + A
            out_p = raw_p > Np
            cp = np.minimum(raw_p, Np)
            jcol = np.where(cp > 0, jn, 0)
            dest = lookup[cp[:, None], ddest[None, :], jcol[:, None]]
            pr = w * pa[:, None] * dw[None, :]
            lost[s] += w * (float(pa[out_p].sum()) + float(pa[~out_p].sum()) * dlost)
            rows.append(np.full(dest.size, s, dtype=np.int64))
            cols.append(dest.ravel())
            vals_l.append(pr.ravel())
    rows = np.concatenate(rows)
    cols = np.concatenate(cols)
    data = np.concatenate(vals_l)
    if np.any(cols < 0):  # pragma: no cover - a builder bug, never an answer
        raise RuntimeError("internal error: transition to a non-state")
    P = sp.csr_matrix((data, (rows, cols)), shape=(S, S))
    P.sum_duplicates()
    rs = np.asarray(P.sum(axis=1)).ravel()
    P = (sp.diags(1.0 / rs) @ P).tocsr()
    mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
    remaining = C[:, 0] * md if geo else C @ np.arange(1, V + 1)
    if psup is not None:  # a head with known remaining tokens h replaces its expected m_p
        unproc = NP * (mp + md) + np.where(JJ > 0, JJ - mp, 0.0) + remaining[DI]
    else:
        unproc = NP * (mp + md) - JJ + remaining[DI]
    return EngineChain(P=P, space=space, sojourn_s=sojourn, sojourn2_s2=sojourn2, batch_tokens=batch_tokens,
                       completions=completions, residents=(NP + ND).astype(float),
                       unprocessed_tokens=unproc.astype(float), lost=lost, arrival_rate_per_s=lam, policy=pol.name,
                       caps={"max_prefill": Np, "max_decode": Md, "head_progress": J, "max_output": V},
                       build_s=time.perf_counter() - t0,
                       inputs={"engine": engine.to_dict(), "workload": workload.to_dict(), "policy": pol.describe(),
                               "b": b, "tolerance": tolerance, "kernel_tol": kernel_tol, "prune_tol": 0.0,
                               "pruned_row_mass": 0.0, "m_p": mp, "m_d": md, "decode_vectors": C,
                               "output_support": (tuple(int(v) for v in vals), tuple(float(p) for p in probs)),
                               **saturation(engine, workload, pol, b)})
