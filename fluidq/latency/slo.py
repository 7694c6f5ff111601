"""SLO attainment: the fraction of requests meeting a latency objective, and the tightest one met.

A request meets a per-token SLO ``s`` when its latency per token (time to last token / output
tokens) is at most ``s``, and a TTLT SLO when its time to last token is.  A request that did not
finish within the run counts as missing every SLO (its latency is taken as infinite), so the
attainment is over *all* arrivals considered, not only the finished ones.

``tightest_slo(latencies, q)`` is the smallest ``s`` such that a fraction ``q`` of the requests
meet ``s``: the ``q``-quantile of the latencies with unfinished requests at infinity (the "lower"
order statistic, so the fraction meeting it is at least ``q``).  The UNIBOOST paper's "tighter
SLO" comparison (arXiv:2606.18431) reads this at ``q`` = 0.9 and 0.99.
"""
from __future__ import annotations

import math

import numpy as np

from .._validate import real
from ..errors import ParameterError

__all__ = ["slo_attainment", "tightest_slo"]


def _latencies(latencies) -> np.ndarray:
    x = np.asarray(latencies, dtype=float).ravel()
    if np.any(x < 0):
        raise ParameterError("latencies", latencies, "latencies >= 0 (NaN or inf for an unfinished request)")
    return np.where(np.isnan(x), np.inf, x)


def slo_attainment(latencies, slo_s: float) -> float:
    """Fraction of ``latencies`` at most ``slo_s`` (NaN/inf entries -- unfinished requests -- miss it).

    NaN for an empty set.
    """
    slo_s = real("slo_s", slo_s, positive=True)
    x = _latencies(latencies)
    if x.size == 0:
        return math.nan
    return float(np.mean(x <= slo_s))


def tightest_slo(latencies, fraction: float) -> float:
    """Smallest SLO met by at least ``fraction`` of the requests (inf when too few finished).

    ``fraction`` in (0, 1].  NaN for an empty set.
    """
    fraction = real("fraction", fraction, positive=True)
    if fraction > 1:
        raise ParameterError("fraction", fraction, "a fraction in (0, 1]")
    x = np.sort(_latencies(latencies))
    if x.size == 0:
        return math.nan
    k = math.ceil(fraction * x.size - 1e-9)  # requests that must meet it
    return float(x[max(k, 1) - 1])
