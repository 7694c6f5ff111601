"""SLO attainment: the fraction of requests meeting a latency objective, and the tightest one met.

A request meets a per-token SLO ``s`` when its latency per token (time to last token / output
tokens) is at most ``s``, and a TTLT SLO when its time to last token is.  A request that did not
finish within the run is *censored*: its latency is only known to exceed what it has waited so far.
Without that bound (``lower_bounds=None``) it counts as missing every SLO (its latency is taken as
infinite), so the attainment is over all arrivals considered.  With it, a censored request misses
``s`` when its bound already exceeds ``s`` and is left out (undecided) when it does not: a run that
stops at a horizon then no longer charges the requests that arrived just before it as misses, which
made a 99 % SLO unreachable even at low load.

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


def _split(latencies, lower_bounds):
    """``(finished latencies, bounds of the censored ones)``; without bounds every unfinished one is at inf."""
    x = _latencies(latencies)
    if lower_bounds is None:
        return x, np.empty(0)
    lb = np.asarray(lower_bounds, dtype=float).ravel()
    if lb.shape != x.shape:
        raise ParameterError("lower_bounds", f"<{lb.size} values>", f"one bound per latency ({x.size})")
    cens = np.isinf(x)
    if np.any(np.isnan(lb[cens]) | (lb[cens] < 0)):
        raise ParameterError("lower_bounds", "<a NaN or negative bound>", "bounds >= 0 for the unfinished requests")
    return x[~cens], lb[cens]


def slo_attainment(latencies, slo_s: float, lower_bounds=None) -> float:
    """Fraction of the requests meeting ``slo_s`` (NaN/inf entries are unfinished requests).

    Without ``lower_bounds`` an unfinished request misses it; with them (what each unfinished request
    is known to exceed) it misses when its bound is above ``slo_s`` and is left out otherwise.
    NaN when no request is decided.
    """
    slo_s = real("slo_s", slo_s, positive=True)
    fin, lb = _split(latencies, lower_bounds)
    met = int(np.sum(fin <= slo_s))
    decided = fin.size + int(np.sum(lb > slo_s))
    return met / decided if decided else math.nan


def tightest_slo(latencies, fraction: float, lower_bounds=None) -> float:
    """Smallest SLO met by at least ``fraction`` of the (decided) requests; inf when none is.

    ``fraction`` in (0, 1].  Censoring as in :func:`slo_attainment`: at a candidate ``s`` the unfinished
    requests whose bound exceeds ``s`` count as misses, the others are left out.  NaN for an empty set.
    """
    fraction = real("fraction", fraction, positive=True)
    if fraction > 1:
        raise ParameterError("fraction", fraction, "a fraction in (0, 1]")
    fin, lb = _split(latencies, lower_bounds)  # without bounds the unfinished are at inf inside fin
    if fin.size + lb.size == 0:
        return math.nan
    if fin.size == 0:
        return math.inf
    fin, lb = np.sort(fin), np.sort(lb)
    met = np.searchsorted(fin, fin, side="right")  # finished requests within fin[i], ties included
    missed_cens = lb.size - np.searchsorted(lb, fin, side="right")  # censored ones already beyond fin[i]
    ok = met >= fraction * (fin.size + missed_cens) - 1e-9
    return float(fin[int(np.argmax(ok))]) if ok.any() else math.inf
