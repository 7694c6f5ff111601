"""One test of backlog growth from seeded simulations, shared by every simulation verdict.

A finite simulation is weak evidence of stability: a backlog that grows slowly looks flat over a short
run.  :func:`growth_test` therefore reads "stable" only through a stated test with power.  Its input
is one least-squares growth slope of the backlog per seeded replication and the growth it must
detect, ``band`` (e.g. 1 % of the arrival rate, per second); it forms the Student-t interval of the
mean slope over the replications at ``confidence`` and decides:

* **unstable** -- the whole interval is above ``band``: the backlog grows;
* **stable** -- the interval lies below zero (the backlog drains), or it holds zero, ends below ``band``
  and is narrow enough (half-width at most ``band / 2``) that a growth of ``band`` would have put its
  lower end above zero: the test has the power to tell growth of ``band`` from zero and saw none.
  Growth below ``band`` is not excluded, and the reason says so;
* identical runs (deterministic arrivals and lengths) give one path and no interval: unstable above
  ``band``, stable within ``band / 2`` of zero, unknown between;
* **unknown** -- otherwise: either the interval is too wide ("the test cannot tell growth of X from
  zero at this horizon", with the horizon that would do, from the ``T^{-3/2}`` scaling of a
  least-squares slope of a stationary series), or the backlog grows significantly (lower end above zero)
  but growth of ``band`` or more is not confirmed (lower end below it; the reason says where the point
  estimate lies against ``band``): growth below the band is growth, never read as flat.

:func:`powered_horizon` gives the horizon for a second round from a first one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..results import MEANINGFUL_DIGITS, Status, fmt_value, plain

__all__ = ["GrowthTest", "growth_test", "powered_horizon"]


@dataclass(frozen=True)
class GrowthTest:
    """Outcome of :func:`growth_test`.

    Attributes
    ----------
    status : Status
        unstable / stable / unknown (see the module docstring).
    mean : float
        Mean growth slope over the replications (``unit`` per second).
    ci : tuple of float
        Its Student-t interval at ``confidence``.
    half_width : float
        Half the interval's width (``inf`` with one replication).
    band : float
        The growth the test must detect (``unit`` per second).
    confidence : float
    replications : int
    horizon_s : float
    needed_horizon_s : float or None
        When the test lacked power: the horizon at which, by the ``T^{-3/2}`` scaling of the slope's
        spread, the half-width would reach ``band / 2``.
    reason : str
        The test and its outcome in words.
    """

    status: Status
    mean: float
    ci: tuple
    half_width: float
    band: float
    confidence: float
    replications: int
    horizon_s: float
    needed_horizon_s: float | None
    reason: str
    unit: str = "requests"

    @property
    def finding(self) -> str:
        """:attr:`reason` without its opening statement of the mean slope and its interval, for a caller
        that states them itself (one sentence should not give the same numbers twice)."""
        head = f"{self.unit} in system grow at "
        if self.reason.startswith(head) and ": " in self.reason:
            return self.reason.split(": ", 1)[1]
        return self.reason

    @property
    def powered(self) -> bool:
        """Whether the interval is narrow enough to tell growth of ``band`` from zero."""
        return bool(self.half_width <= 0.5 * self.band)

    def to_dict(self) -> dict:
        return plain({"status": self.status, "mean": self.mean, "ci": list(self.ci), "half_width": self.half_width,
                      "band": self.band, "confidence": self.confidence, "replications": self.replications,
                      "horizon_s": self.horizon_s, "needed_horizon_s": self.needed_horizon_s,
                      "powered": self.powered, "unit": self.unit, "reason": self.reason})


def interval(slopes, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the Student-t interval of the mean of ``slopes`` (infinite for one value)."""
    from scipy import stats

    x = np.asarray(slopes, dtype=float)
    m = float(np.mean(x))
    if x.size < 2:
        return m, -math.inf, math.inf
    h = float(stats.t.ppf(0.5 + confidence / 2, x.size - 1) * np.std(x, ddof=1) / math.sqrt(x.size))
    return m, m - h, m + h


def decide(lo: float, hi: float, band: float) -> Status:
    """The rule of :func:`growth_test` for an interval ``[lo, hi]`` and the growth ``band`` to detect."""
    if lo > band:
        return Status.UNSTABLE
    if hi < 0:
        return Status.STABLE  # the backlog drains
    if lo <= 0 and hi < band and 0.5 * (hi - lo) <= 0.5 * band:
        return Status.STABLE
    return Status.UNKNOWN


def _n(x) -> str:
    """A measured rate for people: :data:`~fluidq.results.MEANINGFUL_DIGITS` significant digits."""
    return fmt_value(x, digits=MEANINGFUL_DIGITS)


def _about(seconds: float) -> str:
    """An estimated horizon, to two significant digits (``5970.3`` -> ``"6,000"``): it is a scaling estimate."""
    if not (math.isfinite(seconds) and seconds > 0):
        return fmt_value(seconds)
    r = float(f"{seconds:.2g}")
    return f"{r:,.0f}" if r >= 10 else f"{r:g}"


def powered_horizon(horizon_s: float, half_width: float, band: float) -> float | None:
    """The horizon at which the half-width ``half_width`` seen at ``horizon_s`` would shrink to ``band / 2``.

    The least-squares slope of a stationary series over a window ``T`` has a spread proportional to
    ``T^{-3/2}``, so the horizon grows by ``(2 half_width / band)^{2/3}``.  ``None`` when the half-width
    is not finite or ``band`` is not positive.
    """
    if not (math.isfinite(half_width) and band > 0):
        return None
    if half_width <= 0.5 * band:
        return float(horizon_s)
    return float(horizon_s * (2.0 * half_width / band) ** (2.0 / 3.0))


def growth_test(slopes, *, band: float, horizon_s: float, confidence: float = 0.95, unit: str = "requests",
                band_words: str = "") -> GrowthTest:
    """Test whether a backlog grows, from one growth slope per seeded replication.

    Parameters
    ----------
    slopes : array_like
        One least-squares slope of the backlog (``unit`` per second) per replication.
    band : float
        The growth the test must detect, ``unit`` per second (> 0), e.g. 1 % of the arrival rate.
    horizon_s : float
        Length of each run (for the reason and the horizon a powered test would need).
    confidence : float
        Level of the Student-t interval.
    unit : str
        What the backlog counts (``"requests"``, ``"tokens"``).
    band_words : str
        How ``band`` was chosen, for the reason (e.g. ``"1% of the arrival rate"``).

    Returns
    -------
    GrowthTest

    Examples
    --------
    >>> growth_test([0.02, 0.03, 0.025, 0.028], band=0.01, horizon_s=100.0).status
    <Status.UNSTABLE: 'unstable'>
    >>> growth_test([-0.3, 0.2, 0.1, -0.1], band=0.01, horizon_s=100.0).status
    <Status.UNKNOWN: 'unknown'>
    """
    x = np.asarray(slopes, dtype=float)
    n = int(x.size)
    what = f"{_n(band)} {unit}/s" + (f" ({band_words})" if band_words else "")
    if n == 0 or not np.all(np.isfinite(x)):
        return GrowthTest(status=Status.UNKNOWN, mean=math.nan, ci=(math.nan, math.nan), half_width=math.inf,
                          band=float(band), confidence=confidence, replications=n, horizon_s=float(horizon_s),
                          needed_horizon_s=None, unit=unit,
                          reason=(f"{n - int(np.isfinite(x).sum())} of {n} runs of {horizon_s:.4g} s gave no growth "
                                  f"slope (too few samples): the test cannot tell growth of {what} from zero"))
    m, lo, hi = interval(x, confidence)
    half = 0.5 * (hi - lo)
    head = (f"{unit} in system grow at {_n(m)}/s, {confidence:.0%} CI [{_n(lo)}, {_n(hi)}] over {n} runs of "
            f"{horizon_s:.4g} s")
    if n > 1 and np.all(x == x[0]):
        # identical runs (deterministic arrivals and lengths): one path, no interval; its slope over a
        # finite window of a periodic backlog is not exactly zero, so flat means within half the band
        status = (Status.UNSTABLE if m > band else Status.STABLE if abs(m) <= 0.5 * band else Status.UNKNOWN)
        words = {Status.UNSTABLE: f"above the growth to detect, {what}: the backlog grows",
                 Status.STABLE: f"within half the growth to detect, {what}: flat on this horizon",
                 Status.UNKNOWN: f"between half and all of the growth to detect, {what}: neither flat nor growing"}
        return GrowthTest(status=status, mean=m, ci=(m, m), half_width=0.0, band=float(band),
                          confidence=confidence, replications=n, horizon_s=float(horizon_s), needed_horizon_s=None,
                          unit=unit, reason=(f"{unit} in system grow at {_n(m)}/s in {n} identical runs of "
                                             f"{horizon_s:.4g} s (one deterministic path, no interval): "
                                             f"{words[status]}"))
    status = decide(lo, hi, band)
    need = None
    if status == Status.UNSTABLE:
        reason = f"{head}: above the growth to detect, {what}: the backlog grows"
    elif status == Status.STABLE and hi < 0:
        reason = f"{head}: the backlog drains"
    elif status == Status.STABLE:
        reason = (f"{head}: the interval holds zero and is narrow enough to tell growth of {what} from zero, "
                  f"so no growth of {_n(band)}/s or more; slower growth is not excluded at this horizon")
    elif lo > 0:
        # growth is confirmed (the whole interval above zero), but not growth of the band or more: say where the
        # point estimate lies against the band, never "less than the band" when it is above it
        if m > band:
            where = (f"the point estimate {_n(m)}/s is {m / band:.2g} x the growth to detect, {what}, but the "
                     f"interval's lower end {_n(lo)}/s is below it, so growth of that size is not confirmed")
        else:
            where = (f"the point estimate {_n(m)}/s is below the growth to detect, {what} (the interval reaches "
                     f"{_n(hi)}/s)")
        reason = (f"{head}: the backlog grows (the whole interval is above zero); {where}; the verdict is unknown, "
                  "not stable: growth, even below the band, is not flat (or it is a slow transient)")
    else:
        need = powered_horizon(horizon_s, half, band)
        more = (f"; runs of about {_about(need)} s would be needed to tell" if need is not None else "")
        reason = (f"{head}: the test cannot tell growth of {what} from zero at this horizon (half-width "
                  f"{_n(half)}/s, needs <= {_n(0.5 * band)}/s){more}")
    return GrowthTest(status=status, mean=m, ci=(lo, hi), half_width=half, band=float(band), confidence=confidence,
                      replications=n, horizon_s=float(horizon_s), needed_horizon_s=need, reason=reason, unit=unit)


def least_iterations(prompt_tokens, output_tokens, b_max: int) -> int:
    """The fewest iterations a request takes: ``ceil(p / b_max) + d`` (its prompt in full batches, then one
    output token per iteration; constraint (6a)-(6c)), with the smallest lengths the two
    :class:`~fluidq.workload.lengths.Length` s can draw (1 and 0 where a length has no finite support).  Until
    a stay this long has passed, the number in system rises whatever the stability: the single-engine and the
    network verdicts both refuse to read growth before it."""
    def smallest(length, default):
        sup = length.support()
        return int(np.min(sup[0])) if sup is not None and len(sup[0]) else default

    return math.ceil(smallest(prompt_tokens, 1) / b_max) + smallest(output_tokens, 0)
