"""A small random point function for examples, docs and tests of sweeps.

:func:`mm1_wait` simulates the waiting times of an M/M/1 queue by the Lindley recursion
``W_{n+1} = max(0, W_n + S_n - A_{n+1})``; its mean tends to ``rho / (mu - lambda)``, so a seeded
sweep over replications can be checked against theory with a confidence interval.  Its cost grows
with ``customers``, which makes it handy to exercise chunking and resumption.
"""
from __future__ import annotations

import numpy as np

from .._validate import integer, real
from ..errors import ParameterError

__all__ = ["mm1_wait"]


def mm1_wait(point: dict, rng: np.random.Generator) -> dict:
    """Mean waiting time of ``customers`` (default 2000) M/M/1 customers, after a warm-up tenth.

    Point keys: ``rate_per_s`` (lambda), ``service_rate_per_s`` (mu, default 1), ``customers``;
    any other key (``seed``...) is a label.  Returns ``mean_wait_s`` and ``theory_wait_s``.
    """
    lam = real("rate_per_s", point.get("rate_per_s", 0.5), positive=True)
    mu = real("service_rate_per_s", point.get("service_rate_per_s", 1.0), positive=True)
    n = integer("customers", point.get("customers", 2000), minimum=10)
    if lam >= mu:
        raise ParameterError("rate_per_s", lam, f"an arrival rate below the service rate {mu} (a stable queue)")
    gaps = rng.exponential(1.0 / lam, n).tolist()
    services = rng.exponential(1.0 / mu, n).tolist()
    w, total, warm = 0.0, 0.0, n // 10
    for k in range(1, n):
        w = max(0.0, w + services[k - 1] - gaps[k])
        if k >= warm:
            total += w
    return {"mean_wait_s": total / (n - warm), "theory_wait_s": lam / mu / (mu - lam)}
