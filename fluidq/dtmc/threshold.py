"""The stability threshold ``lambda*`` of a scheduler for a workload's lengths.

``stability_threshold(engine, workload, policy, method="auto")``: the arrival rate (requests per
second) below which the engine is stable under ``policy``; the workload's own rate is ignored.

Methods
-------
``closed_form``
    Work-conserving schedulers (mixed batches and chunked prefill: Orca, Sarathi-Serve, vLLM v1):
    Theorem 2 of Li, Dai, Peng (arXiv:2504.07347), ``lambda* = b_max / (t(b_max) (m_p + m_d))``: they
    fill their batches to ``b_max`` under a backlog (``sup_b b/t(b)`` can be larger when ``b/t(b)`` peaks
    below ``b_max``; only a scheduler that sizes its batches could use it).
``renewal``
    The two non-work-conserving schedulers, from their behaviour with a large backlog (prompt
    length ``v_p <= b_max``, ``k = floor(b_max / v_p)`` whole prompts per prefill batch; random
    prompt lengths: up to 128 lengths on ``1..b_max``, refused above stated sizes).  Prompts that can exceed ``b_max`` are never scheduled by
    these schedulers (unless ``chunk_long_prompts``): the threshold is then 0.

    * **FasterTransformer** (decode first, no mixed batches): with a long queue every cycle is one
      prefill batch of ``k`` prompts followed by decode-only batches until the last of the ``k``
      finishes (random prompt lengths on ``1..b_max``: ``k`` varies with the head prompt that did
      not fit last time, a finite Markov chain, and the formula becomes a Markov-renewal ratio);
      renewal-reward gives
      ``lambda* = k / (t(k v_p) + sum_{j>=1} E[t(N_j) 1{N_j>0}])`` with
      ``N_j ~ Binomial(k, P(v_d >= j))`` requests still decoding at decode step ``j`` (for fixed
      ``v_d``: ``k / (t(k v_p) + v_d t(k))``).
    * **vanilla vLLM** (prefill first, no mixed batches): with many requests decoding, each
      decode batch is full (``b_max`` tokens) but runs only when no prompt waits; the waiting
      prompts form a Markov chain at batch boundaries (decode batch when empty, else a prefill
      batch of ``min(q, k)`` prompts, arrivals ``Poisson(lambda t)``).  Its stationary law gives
      the decode rate ``D(lambda) = b_max pi_0 / E_pi[t]``; the decode backlog drains iff
      ``lambda m_d < D(lambda)``, and ``lambda*`` is the root (bisection; ``D`` decreases in
      ``lambda``).  With random prompt lengths (:mod:`fluidq.dtmc.vllm_queue`) FCFS stops a prefill batch at the
      first prompt that does not fit, which stays head with its length known: the chain's state
      is ``(waiting prompts, head length)``.
``dtmc``
    Bisection on ``lambda`` with the truncated engine chain (:func:`fluidq.build_dtmc`): a rate is
    called stable when the stationary mass lost at the truncation boundary is below the
    tolerance.  Geometric lengths use the count chain; small finite supports (``Fixed``,
    ``Empirical``) the exact finite-support chain (:mod:`fluidq.dtmc.finite`: Sarathi,
    vLLM-chunked, FasterTransformer, and vanilla vLLM with ``max_decode`` lowered to ``b_max``;
    Orca with ``Fixed`` prompts through the ordered chain of :mod:`fluidq.dtmc.ordered`).  A heavy but stable chain near ``lambda*`` leaks through
    any finite cap and reads as unstable, so the estimate is biased low: ``lower_per_s`` is a rate
    judged stable, ``upper_per_s`` Theorem 2's bound; prefer ``renewal`` where it applies.
``simulation``
    :func:`fluidq.find_threshold` (the iteration-level simulator), with its confidence bracket.
``auto``
    ``closed_form`` for work-conserving schedulers, else ``renewal``, else ``dtmc``, else
    ``simulation``.
"""
from __future__ import annotations

import math

import numpy as np

from .._validate import integer, real
from ..capacity import max_throughput, tokens_per_request
from ..engine import Engine
from ..errors import FluidqError, ParameterError
from ..policies import QueueView, resolve_policy
from ..policies.schedulers import Scheduler
from ..results import ThresholdResult, plain
from ..workload import Empirical, Fixed, Geometric, LogNormal, PoissonLength, Workload
from .rules import fits, whole_prompts

__all__ = ["ThresholdResult", "ThresholdUnavailable", "renewal_threshold", "stability_threshold"]

METHODS = ("auto", "closed_form", "renewal", "dtmc", "simulation")


class ThresholdUnavailable(FluidqError, ValueError):
    """The requested method cannot compute the threshold for this engine, workload and policy."""


# ----------------------------------------------------------------------------------------- helpers

def _survival(dist, jmax: int) -> np.ndarray | None:
    """``S[j-1] = P(v >= j)`` for ``j = 1..jmax``, or ``None`` when the law is unknown."""
    j = np.arange(1, jmax + 1, dtype=float)
    if isinstance(dist, Fixed):
        return (j <= dist.n).astype(float)
    if isinstance(dist, Geometric):
        return (1.0 - dist.p) ** (j - 1)
    if isinstance(dist, PoissonLength):
        from scipy import stats  # imported on use (~0.6 CPU-s): only these two laws need it

        return stats.poisson.sf(j - 2, dist.mean_tokens - 1.0)
    if isinstance(dist, LogNormal):
        from scipy import stats

        return stats.lognorm.sf(j - 1, s=dist.sigma, scale=math.exp(dist.mu))
    if isinstance(dist, Empirical) or dist.support() is not None:
        v, p = dist.support()
        v = np.asarray(v, float)
        p = np.asarray(p, float)
        order = np.argsort(v)
        v, p = v[order], p[order]
        tail = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])  # P(v >= v_i)
        idx = np.searchsorted(v, j, side="left")
        return tail[idx]
    return None


def _max_length(dist) -> int:
    sup = dist.support()
    if sup is not None:
        return int(np.max(sup[0]))
    return int(min(2_000_000, max(1000, 60 * dist.mean)))


def _kind(pol: Scheduler) -> str:
    if pol.mixed and pol.chunked:
        return "work_conserving"
    if not pol.mixed and not pol.chunked and pol.priority == "decode":
        return "fastertransformer"
    if not pol.mixed and not pol.chunked and pol.priority == "prefill":
        return "vllm"
    return "other"


def _budget(pol, engine):
    b, k = pol.budgets(QueueView(requests=(), now_s=0.0, b_max=engine.b_max, k_max=engine.k_max))
    return int(b), k


def _fixed_prompt(workload, pol, b):
    pr = workload.prompt_tokens
    if not isinstance(pr, Fixed):
        raise ThresholdUnavailable(
            f"renewal threshold of {pol.name} needs a fixed prompt length (got {type(pr).__name__}); with random "
            "prompt lengths the head-of-line prompt that does not fit carries its length into the next batch: "
            "simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)")
    vp = int(pr.n)
    if vp > b:
        raise ThresholdUnavailable(
            f"prompt of {vp} tokens exceeds the budget b={b}: {pol.name} "
            + ("chunks it (`--chunk-long-prompts`; chunk_long_prompts=True in Python), a case the renewal formula "
               "does not cover; simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)"
               if pol.chunk_long_prompts else "never schedules it (threshold 0: the prompt waits forever)"))
    return vp


def _decode_cycle_s(t, out, kmax):
    """``dec[k] = sum_j E[t(N_j) 1{N_j > 0}]``, ``N_j ~ Binomial(k, P(v_d >= j))``, for ``k = 0..kmax``."""
    from ._pmf import binom_pmf  # numpy: scipy.stats costs ~0.6 CPU-s to import
    S = _survival(out, _max_length(out))
    if S is None:
        raise ThresholdUnavailable(f"output length {out!r} has no known survival function")
    S = S[1.0 - (1.0 - S) ** kmax > 1e-15]
    dec = np.zeros(kmax + 1)
    for k in range(1, kmax + 1):
        n = np.arange(1, k + 1)
        tn = np.asarray(t(n.astype(float)), float)
        pm = binom_pmf(n[None, :], k, S[:, None])
        dec[k] = float((pm @ tn).sum())
    return dec


def _decode_cycle_at(t, out, k):
    """``_decode_cycle_s(t, out, k)[k]`` alone: each ``E[t(N_j)]`` over the window of ``N_j ~ Binomial(k, s_j)``
    holding all but about 1e-16 of its mass (the full table is ``O(k^2)`` per length: FasterTransformer with a
    budget of 2**24 tokens hung, and one of 51,200 took a minute)."""
    from ._pmf import binom_pmf  # numpy: scipy.stats costs ~0.6 CPU-s to import
    if k <= 64:
        return float(_decode_cycle_s(t, out, k)[k])
    S = _survival(out, _max_length(out))
    if S is None:
        raise ThresholdUnavailable(f"output length {out!r} has no known survival function")
    S = S[1.0 - (1.0 - S) ** k > 1e-15]
    total = 0.0
    for sj in S:
        m, sd = k * sj, math.sqrt(k * sj * (1.0 - sj))  # the window mean +- (9 sd + 10): tails below 1e-16
        lo = max(1, math.floor(m - 9.0 * sd - 10.0))
        hi = min(k, math.ceil(m + 9.0 * sd + 10.0))
        if hi < lo:
            continue
        n = np.arange(lo, hi + 1)
        total += float(binom_pmf(n, k, sj) @ np.asarray(t(n.astype(float)), float))
    return total


def _ft_threshold(engine, workload, pol, b):
    t = engine.batch_time
    out = workload.output_tokens
    pr = workload.prompt_tokens
    if not isinstance(pr, Fixed):
        return _ft_threshold_random_prompts(engine, workload, pol, b)
    vp = _fixed_prompt(workload, pol, b)
    k = whole_prompts(b, vp)  # prompts per prefill batch with a long queue (head-of-line)
    decode_s = _decode_cycle_at(t, out, k)
    prefill_s = float(t(float(k * vp)))
    cycle = prefill_s + decode_s
    lam = k / cycle
    if isinstance(out, Fixed):
        expr = (f"k / (t(k v_p) + v_d t(k)) with k = floor({b}/{vp}) = {k}: "
                f"{k} / ({prefill_s:.6g} s + {out.n} x {float(t(float(k))):.6g} s)")
    else:
        expr = f"k / (t(k v_p) + sum_j E[t(N_j)]) with k = {k}, N_j ~ Binomial(k, P(v_d >= j))"
    return lam, lam, lam, expr, {"k": k, "cycle_s": cycle, "prefill_s": prefill_s, "decode_s": decode_s}


def _ft_threshold_random_prompts(engine, workload, pol, b, max_batch=256):
    """FasterTransformer with i.i.d. prompt lengths on ``1..b`` (Markov-renewal over the head prompt).

    With a long queue each cycle's prefill batch starts with the prompt that did not fit last
    time (its length ``h`` is known) and takes fresh prompts while they fit; the first that does
    not fit is the next head.  From a remaining budget ``r`` the number of extra prompts taken,
    the budget left over and the next head's length obey simple recursions in ``r``; the head
    lengths form a finite Markov chain, and renewal-reward over it gives
    ``lambda* = E_pi[K] / E_pi[t(T) + dec(K)]``.
    """
    t = engine.batch_time
    pr = workload.prompt_tokens
    S = _survival(pr, b + 1)
    if S is None:
        raise ThresholdUnavailable(f"prompt length {pr!r} has no known distribution function")
    p = np.clip(S[:-1] - S[1:], 0.0, None)  # p[l-1] = P(v_p = l), l = 1..b
    if not p.sum() > 0:
        raise ThresholdUnavailable(f"no prompt fits the budget: every prompt of {pr!r} is longer than {b} tokens, "
                                   "so a scheduler that does not split prompts never serves one (split long prompts, "
                                   "e.g. `--chunk-long-prompts`, chunk_long_prompts=True in Python, or raise b_max)")
    p /= p.sum()
    lens = np.flatnonzero(p > 0) + 1
    pl = p[lens - 1]
    most = whole_prompts(b, int(lens.min()))  # the most prompts one prefill batch holds
    kmax = min(most, max_batch)
    if most > max_batch:
        raise ThresholdUnavailable(f"prompts as short as {lens.min()} tokens allow batches of more than {max_batch} "
                                   "prompts; the renewal computation is limited to that")
    # recursions over the remaining budget r = 0..b
    G = np.zeros((b + 1, kmax + 1))   # extra prompts taken
    R = np.zeros((b + 1, b + 1))      # budget left at the end
    H = np.zeros((b + 1, lens.size))  # next head (index into lens)
    for r in range(b + 1):
        fit = fits(lens, r)  # head-of-line: the first prompt that does not fit stops the batch
        stop = ~fit
        G[r, 0] += pl[stop].sum()
        R[r, r] += pl[stop].sum()
        H[r, stop] += pl[stop]
        for li in np.flatnonzero(fit):
            rr = r - lens[li]
            G[r, 1:] += pl[li] * G[rr, :-1]
            R[r] += pl[li] * R[rr]
            H[r] += pl[li] * H[rr]
    dec = _decode_cycle_s(t, workload.output_tokens, kmax)
    tT = np.asarray(t(np.maximum(b - np.arange(b + 1), 1).astype(float)), float)  # t(b - rem)
    r0 = b - lens                        # budget left after the head
    EK = 1.0 + G[r0] @ np.arange(kmax + 1)
    Ecyc = R[r0] @ tT + G[r0] @ np.append(dec[1:], dec[-1])  # dec(1 + extra), extra <= kmax - 1
    P = H[r0]
    n = lens.size
    A = P.T - np.eye(n)
    A[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    pi = np.clip(np.linalg.lstsq(A, rhs, rcond=None)[0], 0.0, None)
    pi /= pi.sum()
    lam = float(pi @ EK) / float(pi @ Ecyc)
    expr = ("E_pi[K] / E_pi[t(T) + dec(K)] over the head-prompt chain (K prompts per prefill batch, T their "
            "tokens, dec(K) the decode phase)")
    return lam, lam, lam, expr, {"mean_batch_prompts": float(pi @ EK), "cycle_s": float(pi @ Ecyc)}


#: the most prompts one prefill batch of vanilla vLLM may hold for its renewal threshold (fixed prompts):
#: the prefill-queue chain, truncated at 4096 waiting prompts, must hold several batches' arrivals
MAX_VLLM_PROMPTS_PER_BATCH = 1024


def _vllm_decode_rate(lam, engine, b, vp, k, tol=1e-13):
    """Decode tokens/s of vanilla vLLM with a saturated decode pool; ``(D, lost_mass, Q)``.

    The prefill-queue chain is truncated at ``Q`` waiting prompts, doubled until the stationary
    mass cut at ``Q`` is below ``tol``.
    """
    t = engine.batch_time
    tb = float(t(float(b)))
    tp = np.asarray(t((np.arange(1, k + 1) * vp).astype(float)), float)
    Q = 32
    while True:
        D, lost = _vllm_chain(lam, tb, tp, b, vp, Q)
        if lost < tol or Q >= 4096:
            return D, lost, Q
        Q *= 2


def _vllm_chain(lam, tb, tp, b, vp, Q):
    from ._pmf import poisson_pmf  # numpy: scipy.stats costs ~0.6 CPU-s to import
    takes = whole_prompts(b, vp, np.arange(Q + 1)).tolist()  # prompts a prefill batch takes from q waiting
    P = np.zeros((Q + 1, Q + 1))
    tau = np.empty(Q + 1)
    lost = np.zeros(Q + 1)
    a_b = poisson_pmf(np.arange(Q + 1), lam * tb)
    P[0, :] = a_b
    lost[0] = max(0.0, 1.0 - a_b.sum())
    P[0, Q] += lost[0]
    tau[0] = tb
    # only m = min(q, k) <= Q prompts are ever taken (a budget of 2**24 tokens computed k = 167,772 of them)
    pmfs = [poisson_pmf(np.arange(Q + 1), lam * tp[m - 1]) for m in range(1, takes[Q] + 1)]
    for q in range(1, Q + 1):
        m = takes[q]
        base = q - m
        pr = pmfs[m - 1][:Q + 1 - base]
        P[q, base:] = pr
        rest = max(0.0, 1.0 - pr.sum())
        P[q, Q] += rest
        lost[q] = rest
        tau[q] = tp[m - 1]
    A = P.T - np.eye(Q + 1)
    A[-1, :] = 1.0  # dense and tiny: the ones-row recipe is harmless here
    rhs = np.zeros(Q + 1)
    rhs[-1] = 1.0
    pi = np.linalg.solve(A, rhs)
    pi = np.clip(pi, 0.0, None)
    pi /= pi.sum()
    return b * pi[0] / float(pi @ tau), float(pi @ lost)


def _prompt_law(pr, b, max_lengths):
    S = _survival(pr, b + 1)
    if S is None:
        raise ThresholdUnavailable(f"prompt length {pr!r} has no known distribution function")
    p = np.clip(S[:-1] - S[1:], 0.0, None)  # p[l-1] = P(v_p = l), l = 1..b
    if not p.sum() > 0:
        raise ThresholdUnavailable(f"no prompt fits the budget: every prompt of {pr!r} is longer than {b} tokens, "
                                   "so a scheduler that does not split prompts never serves one (split long prompts, "
                                   "e.g. `--chunk-long-prompts`, chunk_long_prompts=True in Python, or raise b_max)")
    p /= p.sum()
    lens = np.flatnonzero(p > 1e-15) + 1
    if lens.size > max_lengths:
        raise ThresholdUnavailable(f"the prompt length takes {lens.size} values up to b={b}; the vLLM queue chain "
                                   f"(head prompt's length in the state) is limited to {max_lengths}: use prompts "
                                   "of few distinct lengths (a small Empirical support, or a fixed --prompt) or "
                                   "simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)")
    pl = p[lens - 1]
    return lens, pl / pl.sum()


def _vllm_threshold_random_prompts(engine, workload, pol, b, rtol=1e-7, max_lengths=128, max_states=20_000,
                                   tol=1e-10, max_outcomes=50_000):
    """Vanilla vLLM with i.i.d. prompt lengths on ``1..b`` (:mod:`fluidq.dtmc.vllm_queue`).

    Same argument as for fixed prompts: with a saturated decode pool every decode batch is full
    and runs only when no prompt waits; the waiting prompts evolve on their own.  With random
    lengths FCFS whole-prompt batching stops at the first prompt that does not fit, which stays
    head with its length known: the queue chain's state is ``(q, head length or fresh)``.
    ``lambda*`` is the root of ``lambda m_d = b pi_0 / E_pi[t]``.  Refused (with the size) above
    ``max_lengths`` distinct lengths, ``max_states`` queue-chain states or ``max_outcomes``
    prefill-batch outcomes (prompts taken, batch-time class, next head) per queue level.
    """
    from .vllm_queue import QueueChain, _time_classes, batch_outcomes, prefill_capacity

    t = engine.batch_time
    lens, pl = _prompt_law(workload.prompt_tokens, b, max_lengths)
    L = lens.size
    if 1 + 8 * (L + 1) > max_states:
        raise ThresholdUnavailable(f"{L} prompt lengths need at least {1 + 8 * (L + 1):,} queue-chain states "
                                   f"(8 waiting prompts x {L + 1} head states), above max_states={max_states:,}; "
                                   "simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)")
    tc, tvals = _time_classes(t, b)
    kmax = whole_prompts(b, int(lens.min()))
    work = kmax * (b + 1) * L * L
    if work > 20_000 * max_outcomes:  # the tabulation's own work, before it starts
        raise ThresholdUnavailable(f"tabulating the prefill batches takes {kmax:,} prompts x {b + 1:,} tokens x {L}^2 "
                                   f"lengths = {work:,} operations, above {20_000 * max_outcomes:,} "
                                   "(20,000 x max_outcomes); simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)")
    outcomes, kmax = batch_outcomes(b, lens, pl, tc, tvals.size)
    n_out = sum(o[-1][0].size for o in outcomes)  # transitions per queue level with a long queue
    if n_out > max_outcomes:
        raise ThresholdUnavailable(f"{n_out:,} prefill-batch outcomes per queue level (up to {kmax} prompts of "
                                   f"{L} lengths per batch, {tvals.size} batch-time classes), above "
                                   f"max_outcomes={max_outcomes:,}: the vLLM queue chain would be slow to build; "
                                   "simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)")
    md = workload.mean_output_tokens
    prefill_cap = prefill_capacity(tvals, outcomes, kmax, L)
    lo, hi = 0.0, min(prefill_cap, max_throughput(engine.with_(b_max=b)).tokens_per_s / md)
    Qmax = max(8, (max_states - 1) // (L + 1))
    lost_max = 0.0
    Q = min(16, Qmax)
    chains = {}

    def chain(Q):
        if Q not in chains:
            chains[Q] = QueueChain(b, lens, pl, tvals, tc, outcomes, kmax, Q)
        return chains[Q]

    for _ in range(200):
        mid = 0.5 * (lo + hi)
        while True:
            D, lost = chain(Q).decode_rate(mid)
            if lost < tol or Q >= Qmax:
                break
            Q = min(2 * Q, Qmax)
        lost_max = max(lost_max, lost)
        if mid * md < D:
            if lost >= 1e-6:  # the decision rests on a chain truncated too tightly
                raise ThresholdUnavailable(
                    f"the vLLM queue chain at {mid:.4g} req/s needs more than {chain(Q).n:,} states "
                    f"(mass {lost:.2g} lost at {Qmax} waiting prompts), above max_states={max_states:,}; "
                    "simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)")
            lo = mid
        else:
            hi = mid
        if hi - lo <= rtol * hi:
            break
    lam = 0.5 * (lo + hi)
    expr = ("root of lambda m_d = b_max pi_0(lambda) / E_pi[t] (decode rate with a saturated decode pool; "
            "pi = chain of (waiting prompts, head prompt's length))")
    return lam, lo, hi, expr, {"prefill_capacity_per_s": prefill_cap, "queue_chain_lost_mass": lost_max,
                               "queue_cap": Q, "queue_chain_states": chain(Q).n, "prompt_lengths": lens.tolist(),
                               "batch_outcomes_per_level": n_out, "mean_output_tokens": md}


def _vllm_threshold(engine, workload, pol, b, rtol=1e-9, **limits):
    if not isinstance(workload.prompt_tokens, Fixed):
        return _vllm_threshold_random_prompts(engine, workload, pol, b, **limits)
    vp = _fixed_prompt(workload, pol, b)
    k = whole_prompts(b, vp)  # prompts per prefill batch with a long queue (head-of-line)
    if k > MAX_VLLM_PROMPTS_PER_BATCH:  # the prefill-queue chain would need far more than its 4096 states
        raise ThresholdUnavailable(f"a budget of b={b:,} tokens holds {k:,} prompts of {vp} tokens per prefill "
                                   f"batch; vanilla vLLM's renewal threshold is computed for at most "
                                   f"{MAX_VLLM_PROMPTS_PER_BATCH:,} (its prefill-queue chain is truncated at 4096 "
                                   "waiting prompts)")
    md = workload.mean_output_tokens
    t = engine.batch_time
    prefill_cap = k / float(t(float(k * vp)))
    lo, hi = 0.0, min(prefill_cap, max_throughput(engine.with_(b_max=b)).tokens_per_s / md)
    curve = []
    lost_max = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        D, lost, _Q = _vllm_decode_rate(mid, engine, b, vp, k)
        lost_max = max(lost_max, lost)
        curve.append((mid, D))
        if mid * md < D:
            lo = mid
        else:
            hi = mid
        if hi - lo <= rtol * hi:
            break
    lam = 0.5 * (lo + hi)
    expr = ("root of lambda m_d = b_max pi_0(lambda) / E_pi[t] (decode rate with a saturated decode pool; "
            "pi = prefill-queue chain)")
    return lam, lo, hi, expr, {"k": k, "prefill_capacity_per_s": prefill_cap, "queue_chain_lost_mass": lost_max,
                               "curve": curve, "mean_output_tokens": md}


def renewal_threshold(engine: Engine, workload: Workload, policy, *, max_lengths: int = 128,
                      max_states: int = 20_000, max_outcomes: int = 50_000):
    """``(rate, lower, upper, expression, details)`` by renewal-reward (see the module docstring).

    ``max_lengths``, ``max_states`` and ``max_outcomes`` bound vanilla vLLM's queue chain with
    random prompt lengths (distinct prompt lengths; states ``1 + Q x lengths``; prefill-batch
    outcomes per queue level): larger cases raise
    :class:`ThresholdUnavailable` instead of building a large chain.
    """
    pol = resolve_policy(policy)
    if not isinstance(pol, Scheduler):
        raise ThresholdUnavailable("renewal threshold needs a fluidq Scheduler")
    _no_emit(engine, "renewal threshold")
    b, k = _budget(pol, engine)
    if k != math.inf:
        raise ThresholdUnavailable("renewal threshold with a batch-size limit k_max is not implemented")
    kind = _kind(pol)
    if kind in ("fastertransformer", "vllm") and not pol.chunk_long_prompts:
        S = _survival(workload.prompt_tokens, b + 1)
        blocked = float(S[b]) if S is not None else 0.0  # P(v_p >= b + 1)
        if blocked > 1e-12:  # below this it is floating-point noise of the survival function
            return 0.0, 0.0, 0.0, "0", {
                "blocked_fraction": blocked,
                "blocked_reason": (("every prompt is" if blocked >= 1 - 1e-12 else
                                    f"a fraction {blocked:.3g} of the prompts is")
                                   + f" longer than the budget b={b}; {pol.name} never schedules a prompt that "
                                   "long (`--no-chunk-long-prompts`; chunk_long_prompts=False in Python), so those "
                                   "prompts accumulate at any arrival rate")}
    if kind == "fastertransformer":
        return _ft_threshold(engine, workload, pol, b)
    if kind == "vllm":
        return _vllm_threshold(engine, workload, pol, b, max_lengths=max_lengths, max_states=max_states,
                               max_outcomes=max_outcomes)
    raise ThresholdUnavailable(f"no renewal formula for {pol.describe()}")


def _uses_finite_builder(workload) -> bool:
    """Whether :func:`fluidq.build_dtmc` sends these lengths to the finite-support builder."""
    from .finite import is_finite_support

    out = workload.output_tokens
    return bool(isinstance(workload.prompt_tokens, Empirical) and (is_finite_support(out) or isinstance(out, Geometric))
                or is_finite_support(out) and not (isinstance(out, Fixed) and out.n == 1))


def _no_emit(engine, what: str) -> None:
    """ThresholdUnavailable for an engine whose prefill emits the first output token: the renewal cycles
    and the engine chains count ``d`` decode iterations per request, such an engine runs ``d - 1``."""
    if getattr(engine, "prefill_emits_token", False):
        raise ThresholdUnavailable(f"{what} counts d decode iterations per request of d output tokens; this engine's "
                                   "prefill emits the first token (prefill_emits_token=True: d - 1 decode "
                                   "iterations), which it does not model")


def _dtmc_caps(engine, workload, pol, max_prefill, max_decode, max_states=500_000):
    """``(max_prefill, max_decode)`` the engine chain accepts for these lengths, or ThresholdUnavailable.

    Memoryless lengths: the count chain of :mod:`fluidq.dtmc.build`.  Small finite supports
    (``Fixed``/``Empirical``): :mod:`fluidq.dtmc.finite`, whose prefill-priority whole-batch vLLM
    needs ``max_decode <= b`` (FCFS order among more decoders than ``b`` is not in the state), and
    which refuses Orca (a partial prefill serves only the oldest decoders) and large state spaces.
    """
    from math import comb

    _no_emit(engine, "the engine chain")
    from .build import _lengths, scheduler_rules
    from .finite import _output_support, _prompts

    try:
        pol, b = scheduler_rules(pol, engine)
        if not _uses_finite_builder(workload):
            _lengths(workload, pol, b)
            return max_prefill, max_decode
        geo = isinstance(workload.output_tokens, Geometric)
        V = 1 if geo else _output_support(workload.output_tokens, 12)[2]
        vp, _pp, psup = _prompts(workload, pol, b, 32)
    except FluidqError as exc:
        raise ThresholdUnavailable(f"the engine chain does not cover these lengths: {exc}") from exc
    if pol.priority == "prefill" and pol.mixed and not geo:
        if vp is None:
            raise ThresholdUnavailable(f"{pol.name} (prefill first, mixed batches) with finite-support outputs and "
                                       "random prompts: a partial prefill leaves decode slots for only the oldest "
                                       "decoders, and the ordered chain (fluidq.dtmc.ordered) needs Fixed prompts")
        return max_prefill, None  # the ordered chain (build_dtmc dispatches it) picks its decode cap
    if not geo:
        max_decode = min(max_decode, b)  # decode priority: n_d <= b is invariant; vLLM: the order limit
    J = int(psup[0].max()) + 1 if psup is not None else (vp if (vp is not None and pol.chunked and vp > 1) else 1)
    n_states = (max_prefill * J + 1) * (comb(max_decode + V, V) if not geo else max_decode + 1)
    if n_states > max_states:
        raise ThresholdUnavailable(f"the finite-support chain with caps max_prefill={max_prefill}, "
                                   f"max_decode={max_decode} (output support up to {V} tokens) has {n_states:,} "
                                   f"states, above {max_states:,}; lower the caps or simulate instead (`fluidq simulate --replications N`; method='simulation' in Python)")
    return max_prefill, max_decode


def _dtmc_threshold(engine, workload, pol, lo, hi, *, rtol=0.02, max_prefill=40, max_decode=400, tolerance=1e-6):
    from .build import build_dtmc

    max_prefill, max_decode = _dtmc_caps(engine, workload, pol, max_prefill, max_decode)
    steps = []
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        ch = build_dtmc(engine, workload.with_rate(mid), pol, max_prefill=max_prefill, max_decode=max_decode,
                        tolerance=tolerance)
        r = ch.solve()
        ok = r.status.value == "stable"
        steps.append((mid, r.status.value, r.lost_mass))
        if ok:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi), lo, hi, steps


def _dtmc_work_conserving(engine, workload, pol, name, wc_rate, wc_tok, details, *, max_prefill, max_decode,
                          tolerance=1e-6, max_solves=3):
    """``method="dtmc"`` for a work-conserving scheduler: Theorem 2's threshold, confirmed by the chain.

    A bisection on the truncated chain would only find where *its caps* stop holding the stationary
    mass (far below ``lambda*`` for small caps), at the price of a solve per step.  The threshold of a
    work-conserving scheduler is Theorem 2's ``b_max / (t(b_max) (m_p + m_d))``; the chain confirms
    stability at the highest rate whose fluid estimate fits well inside the caps (at most
    ``max_solves`` solves, halving the rate when the caps leak): that rate is ``lower_per_s``.
    """
    from .build import build_dtmc
    from .sizing import fluid_means

    max_prefill, max_decode = _dtmc_caps(engine, workload, pol, max_prefill, max_decode)
    b, _k = _budget(pol, engine)
    rate = None
    for frac in (0.9, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01):
        npf, nd, _rho = fluid_means(engine, workload.with_rate(frac * wc_rate), b)
        if all(n + 3.0 * math.sqrt(n + 1.0) + 2.0 <= cap for n, cap in ((npf, max_prefill),
                                                                         (nd, b if max_decode is None else max_decode))):
            rate = frac * wc_rate
            break
    if rate is None:
        rate = 0.01 * wc_rate
    steps, lower = [], 0.0
    for _ in range(max_solves):
        try:
            ch = build_dtmc(engine, workload.with_rate(rate), pol, max_prefill=max_prefill, max_decode=max_decode,
                            tolerance=tolerance)
        except FluidqError as exc:
            raise ThresholdUnavailable(f"the engine chain cannot be built for these lengths: {exc}") from exc
        max_decode = ch.caps["max_decode"]
        r = ch.solve()
        steps.append((rate, r.status.value, r.lost_mass))
        if r.status.value == "stable":
            lower = rate
            break
        rate *= 0.5
    details["chain"] = ("ordered" if "seq" in ch.space.names else
                        "finite_support" if _uses_finite_builder(workload) else "memoryless")
    details["caps"] = {"max_prefill": max_prefill, "max_decode": max_decode}
    details["bisection"] = steps
    details["confirmed_stable_per_s"] = lower
    confirm = (f"the truncated chain (caps max_prefill={max_prefill}, max_decode={max_decode}) is stable at "
               f"{lower:.6g} req/s" if lower > 0 else
               f"the truncated chain (caps max_prefill={max_prefill}, max_decode={max_decode}) loses more than "
               f"{tolerance:g} of its mass at every rate tried ({', '.join(f'{s[0]:.4g}' for s in steps)} req/s): "
               "raise the caps to confirm")
    return ThresholdResult(wc_rate, lower, wc_rate, "dtmc", name, wc_rate,
                           f"{name} is work-conserving: by Theorem 2 of arXiv:2504.07347 it is stable iff lambda "
                           f"(m_p + m_d) < b_max/t(b_max) = {wc_tok:.6g} tokens/s; {confirm} (a bisection on "
                           "the chain would find only where its caps leak)",
                           "b_max / (t(b_max) (m_p + m_d))", details)


def _simulation_threshold(engine, workload, pol, rng, **kw):
    try:
        from ..sim import find_threshold
        from ..sim.core import MAX_RUNS
    except ImportError as exc:
        raise ThresholdUnavailable("the simulator (fluidq.sim) is not available") from exc
    if "n_replications" in kw:  # before any seed is spawned for them
        integer("n_replications", kw["n_replications"], minimum=1, maximum=MAX_RUNS,
                why="every run of a replication set is kept for its verdict")
    res = find_threshold(engine, workload, pol, rng=rng, **kw)
    lam = getattr(res, "arrival_rate_per_s", None)
    lo = getattr(res, "low_rate_per_s", getattr(res, "lower_per_s", None))
    hi = getattr(res, "high_rate_per_s", getattr(res, "upper_per_s", None))
    if lam is None:
        raise ThresholdUnavailable(f"fluidq.find_threshold returned {res!r} without arrival_rate_per_s")
    lo = lam if lo is None else lo
    hi = lam if hi is None else hi
    if not (math.isfinite(lam) and math.isfinite(hi)):
        raise ThresholdUnavailable(f"the simulation did not bracket the threshold: {getattr(res, 'reason', res)}")
    return float(lam), float(lo), float(hi), res


#: Narrowest relative bracket ``rtol`` of ``method="dtmc"`` (about 14 chain solves from ``[0, lambda*]``).
MIN_RTOL = 1e-4


def stability_threshold(engine: Engine, workload: Workload, policy="sarathi", method: str = "auto", *,
                        rng=None, rtol: float = 0.02, max_prefill: int = 40, max_decode: int = 400,
                        **sim_kw) -> ThresholdResult:
    """The arrival rate ``lambda*`` (requests/s) below which ``policy`` keeps ``engine`` stable.

    Parameters
    ----------
    engine : Engine
    workload : Workload
        Its length distributions are used; its arrival rate is ignored.
    policy : str or Scheduler
    method : {"auto", "closed_form", "renewal", "dtmc", "simulation"}
        See the module docstring.
    rng : numpy Generator or seed, optional
        For ``method="simulation"``.  Its bracket (the highest rate judged bounded, the lowest judged
        growing) starts at the proven capacity, above which no scheduler is stable (Theorem 2(a), or the
        ``k_max`` region's rate; ``details["upper_bound_per_s"]``): that end is not simulated, and no rate
        above it is (``unstable_from_per_s`` of :func:`fluidq.find_threshold`).
    rtol : float
        Relative bracket width for ``method="dtmc"``, within ``[1e-4, 0.5]`` (one chain solve per halving).
    max_prefill, max_decode : int
        Truncation caps for ``method="dtmc"``.

    Returns
    -------
    ThresholdResult

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347 (Theorem 2; §4 on FasterTransformer and vanilla vLLM being
    "not maximally stable" -- the renewal thresholds here are fluidq's derivation).

    Examples
    --------
    >>> import fluidq
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    >>> round(fluidq.stability_threshold(e, w, "sarathi").arrival_rate_per_s, 3)
    16.715
    >>> r = fluidq.stability_threshold(e, w, "fastertransformer")
    >>> r.method, round(r.arrival_rate_per_s, 4)
    ('renewal', 1.0356)
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    if method not in METHODS:
        raise ParameterError("method", method, " or ".join(repr(m) for m in METHODS))
    rtol = real("rtol", rtol, minimum=MIN_RTOL, maximum=0.5,
                why="method='dtmc' halves the bracket once per chain solve (seconds each): a bracket narrower "
                    "than 1e-4 of the rate takes more solves than the truncated chain's accuracy is worth, one "
                    "wider than half of it brackets nothing")
    pol = resolve_policy(policy)
    name = getattr(pol, "name", repr(pol))
    from ..engine.budgets import max_requests_per_batch, without_idle_k_max

    # a k_max that can never bind (at or above the most requests a batch holds) changes no threshold
    engine = without_idle_k_max(engine, pol)
    if isinstance(pol, Scheduler) and pol.k_max is not None and pol.k_max >= max_requests_per_batch(engine, pol):
        pol = pol.with_(k_max=None)
    mt = tokens_per_request(engine, workload)  # m_p + m_d, or m_p + m_d - 1 with prefill_emits_token
    b = engine.b_max
    if isinstance(pol, Scheduler):
        b, _k = _budget(pol, engine)
    cap = max_throughput(engine.with_(b_max=b), workload)
    wc_tok = cap.work_conserving_tokens_per_s if cap.work_conserving_tokens_per_s is not None else cap.tokens_per_s
    wc_rate = wc_tok / mt
    details = {"mean_tokens": mt, "capacity_tokens_per_s": cap.tokens_per_s, "work_conserving_tokens_per_s": wc_tok}
    kind = _kind(pol) if isinstance(pol, Scheduler) else "custom"
    if kind == "work_conserving" and method in ("auto", "closed_form", "renewal"):
        # an engine whose batch time reads the batch composition: t(b) is not its iteration time, so the
        # threshold is vLLM's flow balance (the basis check_stability and `fluidq check --profile-dir` read)
        from ..engine.budgets import effective_engine
        from .flow_basis import estimate_band, flow_balance_capacity

        fb = flow_balance_capacity(effective_engine(engine, pol), workload)
        if fb is not None:
            lam = fb.requests_per_s
            lo_f, hi_f = estimate_band(fb)
            details.update({"load_basis": "flow_balance", "flow_balance_binding": fb.binding})
            return ThresholdResult(lam, lo_f * lam, hi_f * lam, "flow_balance", name, lam,
                                   f"{name} is work-conserving on an engine whose batch time reads the batch "
                                   f"composition: t(b) (one prefill chunk, no decode cost) is not its iteration time, "
                                   f"so the threshold is vLLM's flow balance, {lam:.6g} req/s ({fb.reason}); a fluid "
                                   f"estimate, bracketed by {lo_f:g}-{hi_f:g} times it",
                                   "flow balance of N decodes and their prompts' chunks per iteration", details)
    if method == "auto":
        if kind == "work_conserving" and engine.k_max is None and pol.k_max is None:
            method = "closed_form"
        else:
            try:
                lam, lo, hi, expr, det = renewal_threshold(engine, workload, pol)
                details.update(det)
                return ThresholdResult(lam, lo, hi, "renewal", name, wc_rate,
                                       det.get("blocked_reason") or _reason("renewal", name, lam, wc_rate), expr, details)
            except ThresholdUnavailable as exc:
                details["renewal_unavailable"] = str(exc)
            method = "dtmc"
            try:
                _dtmc_caps(engine, workload, pol, max_prefill, max_decode)
            except ThresholdUnavailable as exc:
                details["dtmc_unavailable"] = str(exc)
                method = "simulation"
    if method == "closed_form":
        if kind != "work_conserving":
            raise ThresholdUnavailable(f"{name} is not a mixed, chunked (work-conserving) scheduler: Theorem 2's "
                                       "closed form does not apply; use method='renewal' or 'dtmc'")
        return ThresholdResult(wc_rate, wc_rate, wc_rate, "closed_form", name, wc_rate,
                               f"{name} is work-conserving: by Theorem 2 of arXiv:2504.07347 it is stable iff "
                               f"lambda (m_p + m_d) < b_max/t(b_max) = {wc_tok:.6g} tokens/s",
                               "b_max / (t(b_max) (m_p + m_d))", details)
    if method == "renewal":
        if kind == "work_conserving":
            return stability_threshold(engine, workload, pol, "closed_form")
        lam, lo, hi, expr, det = renewal_threshold(engine, workload, pol)
        details.update(det)
        return ThresholdResult(lam, lo, hi, "renewal", name, wc_rate,
                               det.get("blocked_reason") or _reason("renewal", name, lam, wc_rate), expr, details)
    if method == "dtmc" and kind == "work_conserving" and engine.k_max is None and pol.k_max is None:
        return _dtmc_work_conserving(engine, workload, pol, name, wc_rate, wc_tok, details,
                                     max_prefill=max_prefill, max_decode=max_decode)
    if method == "dtmc":
        lam, lo, hi, steps = _dtmc_threshold(engine, workload, pol, 0.0, wc_rate, rtol=rtol,
                                             max_prefill=max_prefill, max_decode=max_decode)
        max_prefill, max_decode = _dtmc_caps(engine, workload, pol, max_prefill, max_decode)
        details["chain"] = "finite_support" if _uses_finite_builder(workload) else "memoryless"
        details["caps"] = {"max_prefill": max_prefill, "max_decode": max_decode}
        details["bisection"] = steps
        details["bisection_bracket_per_s"] = (lo, hi)
        # a rate whose truncated chain keeps its boundary mass below the tolerance is stable (lower
        # end); near the threshold the stationary law is heavy and leaks through any finite cap, so
        # the bisection's upper end is not a bound: Theorem 2's rate is the upper bound reported
        return ThresholdResult(hi, lo, max(hi, wc_rate), "dtmc", name, wc_rate,
                               _reason("dtmc", name, hi, wc_rate) + " (bisection on the truncated chain's boundary "
                               f"mass, caps max_prefill={max_prefill}, max_decode={max_decode}; truncation biases the "
                               "estimate low: the lower end is a stable rate, the upper end is Theorem 2's bound)",
                               None, details)
    # no scheduler is stable above the proven capacity (Theorem 2(a): sup b/t(b); with k_max the region's rate,
    # beyond which fluidq.check_stability says "unstable" for every policy; with a KV cache the bound without
    # it): the search's bracket starts there (taken as growing, not simulated), so that this threshold and
    # check_stability agree and no run is spent above it
    bound_tok = cap.bound_tokens_per_s if cap.bound_tokens_per_s is not None else cap.tokens_per_s
    bound = bound_tok / mt
    if math.isfinite(bound) and bound > 0:
        given = sim_kw.get("unstable_from_per_s")
        if given is not None:
            given = real("unstable_from_per_s", given, positive=True)
        sim_kw = {**sim_kw, "unstable_from_per_s": bound if given is None else min(bound, given)}
    lam, lo, hi, res = _simulation_threshold(engine, workload, pol, rng, **sim_kw)
    details["simulation"] = plain(res) if hasattr(res, "to_dict") else repr(res)
    reason = _reason("simulation", name, lam, wc_rate)
    if math.isfinite(bound) and bound > 0:
        details["upper_bound_per_s"] = bound
        if hi >= bound:
            reason += (f"; the upper end is the capacity {bound:.6g} req/s ({cap.method}), above which no scheduler "
                       "is stable (where the search started, not simulated)")
    return ThresholdResult(lam, lo, hi, "simulation", name, wc_rate, reason, None, details)


def _reason(method, name, lam, wc):
    return (f"{name}: threshold {lam:.6g} req/s by {method} = {lam / wc:.1%} of the work-conserving bound "
            f"{wc:.6g} req/s (Theorem 2)")


_RENEWAL_CACHE: dict = {}
#: limits of the vLLM random-prompt queue chain inside :func:`fluidq.check_stability` (which runs for every
#: policy and load of a report): up to 64 distinct prompt lengths, 4,000 states, 20,000 batch outcomes per
#: queue level -- a fraction of a second per bisection step; larger cases say why and stay "unknown"
CHECK_MAX_LENGTHS, CHECK_MAX_STATES, CHECK_MAX_OUTCOMES = 64, 4_000, 20_000


def _length_key(length):
    """A hashable description: the support for finite ones, else the dataclass fields."""
    from dataclasses import astuple, is_dataclass

    try:
        sup = length.support()
        if sup is not None:
            v, p = sup
            return (type(length).__name__, tuple(np.asarray(v).tolist()), tuple(np.asarray(p, float).tolist()))
        if is_dataclass(length):
            return (type(length).__name__, repr(astuple(length)))
    except Exception:  # noqa: BLE001 - an unusual length object: keyed by identity
        pass
    return (type(length).__name__, id(length))


def cached_renewal_threshold(engine, workload, pol):
    """``(threshold_per_s, None)``, ``(0.0, why)`` (prompts that never fit) or ``(None, why)``; cached.

    Used by :func:`fluidq.check_stability`: fast (closed form for FasterTransformer, a small
    sparse chain per bisection step for vanilla vLLM -- with random prompt lengths at most
    :data:`CHECK_MAX_LENGTHS` distinct lengths, :data:`CHECK_MAX_STATES` queue-chain states and
    :data:`CHECK_MAX_OUTCOMES` batch outcomes per queue level, else ``(None, why)``) and memoised per engine,
    lengths and policy.
    """
    try:
        # lengths keyed by their description: ``Empirical`` (eq=False under the dataclass ``Length``)
        # compares equal to any other ``Empirical`` through the base class's field-less __eq__
        key = (engine, _length_key(workload.prompt_tokens), _length_key(workload.output_tokens), pol)
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _RENEWAL_CACHE:
        return _RENEWAL_CACHE[key]
    try:
        # small limits: check_stability runs for every policy and load of `fluidq report`
        lam, _lo, _hi, _expr, det = renewal_threshold(engine, workload, pol, max_lengths=CHECK_MAX_LENGTHS,
                                                    max_states=CHECK_MAX_STATES, max_outcomes=CHECK_MAX_OUTCOMES)
        if lam == 0 and "blocked_reason" in det:
            out = (0.0, det["blocked_reason"])
        elif lam > 0 and math.isfinite(lam):
            out = (float(lam), None)
        else:
            out = (None, "the renewal formula gave no rate")
    except ThresholdUnavailable as exc:
        out = (None, str(exc))
    if key is not None:
        _RENEWAL_CACHE[key] = out
    return out
