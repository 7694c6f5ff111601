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

__all__ = ["scores_with_tau", "noise_for_tau"]


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
