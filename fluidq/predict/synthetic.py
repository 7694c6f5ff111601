"""Scores of a chosen quality, for traces without prompt text (e.g. the Azure traces).

``scores_with_tau(lengths, tau, rng)`` returns noisy scores whose Kendall's tau against
``lengths`` is ``tau`` in expectation: the lengths' normal scores plus independent Gaussian noise
of standard deviation ``sigma``, for which ``tau = (2/pi) arcsin(1/sqrt(1 + sigma^2))``
(Greiner's relation for a bivariate normal; ties in the lengths lower it a little).
"""
from __future__ import annotations

import math

import numpy as np

from .._validate import array, real
from ..errors import ParameterError

__all__ = ["scores_with_tau", "noise_for_tau", "NoisyOracle", "sigma_for_tau"]


def noise_for_tau(tau: float) -> float:
    """Noise standard deviation giving Kendall's tau ``tau`` in (0, 1]."""
    tau = real("tau", tau)
    if not 0 < tau <= 1:
        raise ParameterError("tau", tau, "a Kendall tau in (0, 1]")
    if tau == 1:
        return 0.0
    rho = math.sin(math.pi * tau / 2)
    return math.sqrt(1 / rho ** 2 - 1)


def scores_with_tau(lengths, tau: float, rng=None) -> np.ndarray:
    """Predictor-like scores (higher = longer) with expected tau_b ``tau`` against ``lengths``."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    L = array("lengths", lengths, min_len=1)
    sigma = noise_for_tau(tau)
    z = ndtri((rankdata(L) - 0.5) / L.size)
    return z + sigma * np.random.default_rng(rng).standard_normal(L.size)


class NoisyOracle:
    """A stand-in predictor for simulations: ``score = log(output_tokens) + sigma * Z``.

    ``Z`` is standard normal, drawn once per request id from ``SeedSequence([seed, rid])`` (so a
    request keeps its score, and runs are reproducible).  Use it as ``PARS(predictor=...)`` when the
    workload has no prompt text; :func:`sigma_for_tau` picks ``sigma`` for a target Kendall tau on
    a given length distribution.
    """

    def __init__(self, sigma: float, seed: int = 0):
        self.sigma = real("sigma", sigma, nonnegative=True)
        self.seed = int(seed)
        self._z: dict = {}

    def __call__(self, r) -> float:
        z = self._z.get(r.rid)
        if z is None:
            z = self._z[r.rid] = float(np.random.default_rng([self.seed, int(r.rid)]).standard_normal())
        return math.log(max(r.output_tokens, 1)) + self.sigma * z

    def __repr__(self) -> str:
        return f"NoisyOracle(sigma={self.sigma:g}, seed={self.seed})"


def sigma_for_tau(lengths, tau: float, *, rng=7919, n_max: int = 3000) -> float:
    """The noise ``sigma`` for which ``log(L) + sigma Z`` has Kendall tau ``tau`` against ``L``.

    Returns 0 when the lengths are all equal (there is no order to get wrong)."""
    from scipy.optimize import brentq

    from .evaluate import kendall_tau

    L = array("lengths", lengths, positive=True, min_len=2)
    tau = real("tau", tau)
    if not 0 < tau < 1:
        raise ParameterError("tau", tau, "a Kendall tau in (0, 1)")
    g = np.random.default_rng(rng)
    if L.size > n_max:
        L = g.choice(L, n_max, replace=False)
    z = g.standard_normal(L.size)
    x = np.log(L)
    top = kendall_tau(x, L)
    if not top == top or tau >= top:   # constant lengths (nothing to rank) or tau unreachable
        return 0.0
    return float(brentq(lambda s: kendall_tau(x + s * z, L) - tau, 1e-9, 100.0 * (x.std() + 1.0), xtol=1e-4))
