"""Small probability kernels used by the chain builders (internal).

Every kernel returns a *finite* probability vector that sums to one exactly: the far tail
(below ``tol``) is folded into the last kept value, so a transition row stays stochastic and the
folded mass is bounded by ``tol`` per kernel.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .._validate import real
from ..errors import ParameterError

__all__ = ["MIN_KERNEL_TOL", "MIN_TOLERANCE", "binom_pmf", "check_tolerances", "geometric_prefill", "poisson_pmf"]

#: Smallest boundary mass a chain is asked to resolve (``tolerance``): the kernels fold tails of 1e-12
#: and the stationary solve stops at a residual of about 1e-10, so a smaller mass is round-off, and
#: chasing it grows the caps without end (``dtmc --tolerance 1e-320`` did).
MIN_TOLERANCE = 1e-12
#: Kernel tails (``kernel_tol``) within ``[1e-15, 1e-3]``: below 1e-15 a tail is below double rounding of
#: the kept mass (scipy's inverse survival function turns NaN near 1e-300); above 1e-3 the folding
#: distorts the chain.
MIN_KERNEL_TOL, MAX_KERNEL_TOL = 1e-15, 1e-3


def check_tolerances(tolerance, kernel_tol) -> tuple[float, float]:
    """``(tolerance, kernel_tol)`` of a chain builder, refused outside what the chain can resolve."""
    tolerance = real("tolerance", tolerance, minimum=MIN_TOLERANCE,
                     why="the kernels fold tails of 1e-12 and the solver's residual is about 1e-10: a smaller "
                         "boundary mass is round-off, and larger and larger caps would be built chasing it")
    if kernel_tol == 0 and not isinstance(kernel_tol, bool):  # exact kernels: every term up to the caps
        return tolerance, 0.0
    kernel_tol = real("kernel_tol", kernel_tol, minimum=MIN_KERNEL_TOL, maximum=MAX_KERNEL_TOL,
                      why="a tail below 1e-15 is below the rounding of the kept mass; above 1e-3 folding it "
                          "distorts the chain (0 keeps every term up to the caps)")
    return tolerance, kernel_tol


def _poisson_upper(mu: float, tol: float) -> float:
    """A count ``n`` with ``P(A > n) <= tol`` for ``A ~ Poisson(mu)``: scipy's ``isf`` where it is finite,
    else the Chernoff bound ``mu + x`` with ``x^2 = 2 L (mu + x/3)``, ``L = log(1/tol)`` (scipy returns
    NaN for ``mu`` beyond about 1e14)."""
    from scipy import stats  # imported on use: ~0.5 CPU-s that `fluidq check` mostly does not need
    if tol <= 0:  # exact: no tail is folded (callers cap the vector at their box)
        return math.inf
    hi = float(stats.poisson.isf(tol, mu))
    if math.isfinite(hi):
        return hi
    L = math.log(1.0 / tol)
    return mu + L / 3.0 + math.sqrt(L * L / 9.0 + 2.0 * mu * L)


def poisson_pmf(mu: float, tol: float = 1e-12, cap: int | None = None) -> np.ndarray:
    """``P(A = 0..n)`` for ``A ~ Poisson(mu)``, the tail beyond ``n`` folded into ``n``.

    ``cap``: keep at most ``0..cap``, the last value being ``P(A >= cap)`` (a chain whose box ends below
    ``cap`` arrivals sends all of those to its boundary anyway; a huge ``mu`` stays a short vector).
    """
    from scipy import stats  # imported on use: ~0.5 CPU-s that `fluidq check` mostly does not need
    if mu <= 0:
        return np.ones(1)
    hi = _poisson_upper(mu, tol) + 1
    if cap is None and not math.isfinite(hi):
        raise ParameterError("kernel_tol", tol, "a tail tolerance > 0 for an arrival kernel without a cap")
    if cap is not None and hi > cap:
        k = np.arange(int(cap) + 1)
        p = stats.poisson.pmf(k, mu)
        p[-1] = stats.poisson.sf(cap - 1, mu)
        p = np.where(np.isfinite(p), p, 0.0)
        s = p.sum()
        return p / s if s > 0 else np.r_[np.zeros(int(cap)), 1.0]
    k = np.arange(int(hi) + 1)
    p = stats.poisson.pmf(k, mu)
    p[-1] += max(0.0, 1.0 - p.sum())
    return p / p.sum()


def binom_pmf(n: int, p: float, tol: float = 1e-12) -> tuple[int, np.ndarray]:
    """``(lo, probs)`` with ``probs[i] = P(X = lo + i)``, ``X ~ Binomial(n, p)``, tails folded in."""
    from scipy import stats  # imported on use: ~0.5 CPU-s that `fluidq check` mostly does not need
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
    from scipy import stats  # imported on use: ~0.5 CPU-s that `fluidq check` mostly does not need
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
    from scipy import stats  # imported on use: ~0.5 CPU-s that `fluidq check` mostly does not need
    if budget <= 0:
        return min(n_p, 0)
    cstar = int(stats.binom.isf(tol, budget, p)) + 2
    return min(n_p, cstar, budget + 1)
