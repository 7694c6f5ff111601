"""SLO attainment: the fraction of requests meeting a latency objective, and the tightest one met.

A request meets a per-token SLO ``s`` when its latency per token (time to last token / output
tokens) is at most ``s``, and a TTLT SLO when its time to last token is.  A request that did not
finish within the run is *censored*: its latency is only known to exceed what it has waited so far.
Without that bound (``lower_bounds=None``) it counts as missing every SLO (its latency is taken as
infinite), so the attainment is over all arrivals considered.  With it, a censored request misses
``s`` when its bound already exceeds ``s``; when it does not, the run cannot tell whether it meets ``s``
(undecided).  The attainment is then only known within bounds, :func:`slo_attainment_bounds`: the
undecided counted as misses, then as meeting, over every request considered; :func:`slo_attainment`
gives a number only when no request is undecided (NaN otherwise).  (Until 2026-12-07 the undecided were
left out of the fraction: an overloaded run whose unfinished requests all had small bounds read 1, PARS
at load 0.9 with 0.598 of its arrivals finished.)

``tightest_slo(latencies, q)`` is the smallest ``s`` such that a fraction ``q`` of the requests
meet ``s``: the ``q``-quantile of the latencies with unfinished requests at infinity (the "lower"
order statistic, so the fraction meeting it is at least ``q``); with unfinished requests it is an
upper bound on the true one (they may yet meet a tighter SLO), and :func:`tightest_slo_lower` the lower
bound their waits allow.  The UNIBOOST paper's "tighter SLO" comparison (arXiv:2606.18431) reads this at
``q`` = 0.9 and 0.99.
"""
from __future__ import annotations

import math

import numpy as np

from .._validate import real
from ..errors import ParameterError

__all__ = ["slo_attainment", "slo_attainment_bounds", "tightest_slo", "tightest_slo_lower"]


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


def slo_attainment_bounds(latencies, slo_s: float, lower_bounds=None) -> tuple:
    """``(low, high)``: the fraction of the requests meeting ``slo_s`` (NaN/inf entries are unfinished requests)
    with every undecided request counted as a miss, then as meeting it.

    Without ``lower_bounds`` an unfinished request misses (``low == high``); with them (what each unfinished
    request is known to exceed) it misses when its bound is above ``slo_s`` and is undecided otherwise.
    ``(nan, nan)`` for no request.
    """
    slo_s = real("slo_s", slo_s, positive=True)
    fin, lb = _split(latencies, lower_bounds)
    n = fin.size + lb.size
    if not n:
        return math.nan, math.nan
    met = int(np.sum(fin <= slo_s))
    undecided = int(np.sum(lb <= slo_s))
    return met / n, (met + undecided) / n


def slo_attainment(latencies, slo_s: float, lower_bounds=None) -> float:
    """Fraction of the requests meeting ``slo_s`` (NaN/inf entries are unfinished requests).

    Without ``lower_bounds`` an unfinished request misses it; with them (what each unfinished request
    is known to exceed) it misses when its bound is above ``slo_s`` and is undecided otherwise: the
    fraction is then known only within :func:`slo_attainment_bounds`, and this is NaN.  NaN for no request.
    """
    low, high = slo_attainment_bounds(latencies, slo_s, lower_bounds)
    return low if low == high else math.nan


def _fraction(fraction) -> float:
    fraction = real("fraction", fraction, positive=True)
    if fraction > 1:
        raise ParameterError("fraction", fraction, "a fraction in (0, 1]")
    return fraction


def tightest_slo(latencies, fraction: float, lower_bounds=None) -> float:
    """Smallest SLO met by at least ``fraction`` of all the requests, an unfinished one counted as a miss; inf
    when no SLO is (fewer than ``fraction`` finished).

    ``fraction`` in (0, 1].  An unfinished request may yet meet a tighter SLO, so with unfinished requests this
    is an upper bound on the true value (:func:`tightest_slo_lower` the lower one); ``lower_bounds`` (accepted
    for the symmetry with :func:`slo_attainment`) do not change it.  NaN for an empty set.
    """
    fraction = _fraction(fraction)
    if lower_bounds is not None:
        _split(latencies, lower_bounds)  # checked as slo_attainment checks them
    x = _latencies(latencies)  # the unfinished at inf
    if x.size == 0:
        return math.nan
    fin = np.sort(x)
    met = np.searchsorted(fin, fin, side="right")  # requests within fin[i], ties included
    ok = np.isfinite(fin) & (met >= fraction * x.size - 1e-9)
    return float(fin[int(np.argmax(ok))]) if ok.any() else math.inf


def tightest_slo_lower(latencies, fraction: float, lower_bounds=None) -> float:
    """The least the tightest SLO met by ``fraction`` of the requests can be, given that an unfinished request's
    latency exceeds its bound (``lower_bounds``; without them an unfinished request never meets an SLO, and
    this is :func:`tightest_slo`): the smallest ``s`` such that the finished requests within ``s`` and the
    unfinished ones whose bound is below ``s`` are ``fraction`` of all.  NaN for an empty set."""
    fraction = _fraction(fraction)
    if lower_bounds is None:
        return tightest_slo(latencies, fraction)
    fin, lb = _split(latencies, lower_bounds)
    n = fin.size + lb.size
    if n == 0:
        return math.nan
    # f(s) = finished within s + unfinished with bound < s; its infimum over f(s) >= fraction is a finished latency
    # (attained) or a bound (approached from above), the first candidate c with f just above c enough
    cand = np.sort(np.r_[fin, lb])
    above = np.searchsorted(np.sort(fin), cand, side="right") + np.searchsorted(np.sort(lb), cand, side="right")
    ok = above >= fraction * n - 1e-9
    return float(cand[int(np.argmax(ok))]) if ok.any() else math.inf
