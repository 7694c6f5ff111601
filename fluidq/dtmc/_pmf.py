"""Poisson and binomial probability mass functions in numpy, for the renewal thresholds.

``scipy.stats`` takes about 0.6 CPU-s to import, which was most of ``fluidq check``'s start-up; the
FasterTransformer and vLLM thresholds need only these two mass functions on integer supports that
are at most a few thousand long.  Both are evaluated in log space from one table of ``log k!``
(``math.lgamma``), so they agree with ``scipy.stats`` to about 1e-13 relative where the mass is not
negligible (``tests/dtmc/test_pmf.py`` holds them to it).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["poisson_pmf", "binom_pmf"]

_LOG_FACT = np.zeros(1)


def _log_factorial(n_max: int) -> np.ndarray:
    """``log k!`` for ``k = 0..n_max`` (cached and grown on demand)."""
    global _LOG_FACT
    if _LOG_FACT.size <= n_max:
        _LOG_FACT = np.array([math.lgamma(k + 1.0) for k in range(max(n_max + 1, 2 * _LOG_FACT.size))])
    return _LOG_FACT


def poisson_pmf(k, mu: float) -> np.ndarray:
    """``P(N = k)`` for ``N ~ Poisson(mu)``, ``k`` a non-negative integer array, ``mu >= 0``."""
    k = np.asarray(k, dtype=np.int64)
    mu = float(mu)
    if mu == 0.0:
        return (k == 0).astype(float)
    lf = _log_factorial(int(k.max()) if k.size else 0)
    return np.exp(k * math.log(mu) - mu - lf[k])


def binom_pmf(n, k: int, p) -> np.ndarray:
    """``P(X = n)`` for ``X ~ Binomial(k, p)``; ``n`` integers in ``0..k``, ``p`` in ``[0, 1]``, broadcast."""
    n = np.asarray(n, dtype=np.int64)
    p = np.asarray(p, dtype=float)
    k = int(k)
    lf = _log_factorial(k)
    n_b, p_b = np.broadcast_arrays(n, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.where(n_b > 0, n_b * np.log(p_b), 0.0)
        log_q = np.where(n_b < k, (k - n_b) * np.log1p(-p_b), 0.0)
        return np.exp(lf[k] - lf[n_b] - lf[k - n_b] + log_p + log_q)
