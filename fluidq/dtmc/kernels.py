"""Small probability kernels used by the chain builders (internal).

Every kernel returns a *finite* probability vector that sums to one exactly: the far tail
(below ``tol``) is folded into the last kept value, so a transition row stays stochastic and the
folded mass is bounded by ``tol`` per kernel.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import stats

__all__ = ["binom_pmf", "geometric_prefill", "poisson_pmf"]


def poisson_pmf(mu: float, tol: float = 1e-12, cap: int | None = None) -> np.ndarray:
    """``P(A = 0..n)`` for ``A ~ Poisson(mu)``, the tail beyond ``n`` folded into ``n``.

    ``cap``: keep at most ``0..cap``, the last value being ``P(A >= cap)`` (a chain whose box ends below
    ``cap`` arrivals sends all of those to its boundary anyway; a huge ``mu`` stays a short vector).
    """
    if mu <= 0:
        return np.ones(1)
    hi = float(stats.poisson.isf(tol, mu)) + 1
    if cap is not None and hi > cap:
        k = np.arange(int(cap) + 1)
        p = stats.poisson.pmf(k, mu)
        p[-1] = stats.poisson.sf(cap - 1, mu)
        s = p.sum()
        return p / s if s > 0 else np.r_[np.zeros(int(cap)), 1.0]
    k = np.arange(int(hi) + 1)
    p = stats.poisson.pmf(k, mu)
    p[-1] += max(0.0, 1.0 - p.sum())
    return p / p.sum()


def binom_pmf(n: int, p: float, tol: float = 1e-12) -> tuple[int, np.ndarray]:
    """``(lo, probs)`` with ``probs[i] = P(X = lo + i)``, ``X ~ Binomial(n, p)``, tails folded in."""
    if n <= 0 or p <= 0:
        return 0, np.ones(1)
    if p >= 1:
        return n, np.ones(1)
    lo = max(0, int(stats.binom.ppf(tol, n, p)) - 1)
    hi = min(n, int(stats.binom.isf(tol, n, p)) + 1)
    k = np.arange(lo, hi + 1)
    pr = stats.binom.pmf(k, n, p)
    below = stats.binom.cdf(lo - 1, n, p) if lo > 0 else 0.0
    pr[0] += below
    pr[-1] += max(0.0, 1.0 - pr.sum())
    return lo, pr / pr.sum()


@lru_cache(maxsize=65536)
def geometric_prefill(cap: int, budget: int, p: float, tol: float = 1e-13):
    """Chunked FCFS prefill of geometric prompts with a token budget.

    Each prefill token completes the prompt it belongs to with probability ``p = 1/m_p``
    (memoryless prompts), tokens go to prompts in order, and prefill stops when ``cap`` prompts
    have completed (the queue is empty) or the budget is spent.

    Returns ``(K, T, w)`` arrays: ``K`` prompts complete and ``T`` prefill tokens are used with
    probability ``w``.  ``K < cap`` uses the whole budget (``K ~ Binomial(budget, p)``); ``K = cap``
    ends at the ``cap``-th success (negative binomial position ``T <= budget``).
    """
    if cap <= 0 or budget <= 0:
        return np.zeros(1, np.int64), np.zeros(1, np.int64), np.ones(1)
    ks = np.arange(0, min(cap - 1, budget) + 1)
    wk = stats.binom.pmf(ks, budget, p)
    K = [ks]
    T = [np.full(ks.size, budget)]
    W = [wk]
    if cap <= budget:
        t = np.arange(cap, budget + 1)
        wt = stats.nbinom.pmf(t - cap, cap, p)
        K.append(np.full(t.size, cap))
        T.append(t)
        W.append(wt)
    K = np.concatenate(K).astype(np.int64)
    T = np.concatenate(T).astype(np.int64)
    W = np.concatenate(W)
    keep = W > tol
    if not keep.any():
        keep[np.argmax(W)] = True
    K, T, W = K[keep], T[keep], W[keep]
    W = W / W.sum()
    for arr in (K, T, W):
        arr.setflags(write=False)
    return K, T, W


def effective_cap(n_p: int, budget: int, p: float, tol: float = 1e-13) -> int:
    """``min(n_p, c*)`` where ``c*`` is beyond any plausible number of completions in ``budget``.

    ``P(Binomial(budget, p) >= c*) < tol``, so the cap above ``c*`` changes nothing observable;
    caching on the effective cap keeps the number of distinct kernels small.
    """
    if budget <= 0:
        return min(n_p, 0)
    cstar = int(stats.binom.isf(tol, budget, p)) + 2
    return min(n_p, cstar, budget + 1)
