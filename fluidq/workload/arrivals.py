"""Arrival processes (times in seconds, rates per second).

* :class:`Poisson` exponential inter-arrival times (the paper's assumption)
* :class:`Periodic` one arrival every ``1/rate`` seconds (deterministic)
* :class:`Gamma` renewal process with gamma inter-arrivals of coefficient of variation ``cv``
  (``cv > 1`` is bursty, ``cv = 1`` is Poisson)
* :class:`TraceArrivals` replay of recorded times; ``with_rate`` rescales time

``times(rng, horizon_s=None, n=None)`` returns sorted arrival times starting after 0 (the
trace keeps its own offsets, shifted so that the first arrival is at 0).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .._validate import (
    ARRIVALS_WHY,
    CV_WHY,
    MAX_ARRIVALS,
    MAX_CV,
    MAX_RATE_PER_S,
    MIN_CV,
    MIN_RATE_PER_S,
    RATE_WHY,
    array,
    check_rng,
    integer,
    real,
)
from ..errors import DataError, ParameterError

__all__ = ["Arrival", "Poisson", "Periodic", "Gamma", "TraceArrivals"]


def _check_limits(horizon_s, n, rate_per_s: float | None = None):
    """``(horizon_s, n)`` checked (one of them given); with ``rate_per_s`` and no ``n``, a horizon with more than
    :data:`MAX_ARRIVALS` expected arrivals is refused too."""
    if horizon_s is None and n is None:
        raise ParameterError("horizon_s", None, "a horizon in seconds or a number of arrivals n")
    h = real("horizon_s", horizon_s, positive=True, allow_none=True)
    k = integer("n", n, minimum=1, allow_none=True, maximum=MAX_ARRIVALS, why=ARRIVALS_WHY)
    if k is None and rate_per_s is not None and h * rate_per_s > MAX_ARRIVALS:
        raise ParameterError("horizon_s", horizon_s, f"a horizon with at most {MAX_ARRIVALS:.0e} expected "
                             f"arrivals (at {rate_per_s:g} req/s it has {h * rate_per_s:.3g})", ARRIVALS_WHY)
    return h, k


def _rate(value) -> float:
    """An arrival rate in [MIN_RATE_PER_S, MAX_RATE_PER_S] requests per second."""
    v = real("rate_per_s", value, positive=True, maximum=MAX_RATE_PER_S, why=RATE_WHY)
    if v < MIN_RATE_PER_S:
        raise ParameterError("rate_per_s", value, f"a rate >= {MIN_RATE_PER_S:g} requests per second", RATE_WHY)
    return v


@dataclass(frozen=True, kw_only=True)
class Arrival:
    """Base class of arrival processes."""

    rate_per_s: float

    def __post_init__(self):
        object.__setattr__(self, "rate_per_s", _rate(self.rate_per_s))

    def with_rate(self, rate_per_s: float) -> "Arrival":
        """The same process at ``rate_per_s`` requests per second (checked: a NaN, a rate <= 0 or an
        infinite one is a ParameterError naming ``rate_per_s``)."""
        return replace(self, rate_per_s=_rate(rate_per_s))

    def _gaps(self, rng, k):  # pragma: no cover - abstract
        raise NotImplementedError

    def times(self, rng: np.random.Generator, horizon_s: float | None = None, n: int | None = None) -> np.ndarray:
        """Arrival times in seconds, up to ``horizon_s`` and/or the first ``n``.

        ``rng``: a numpy Generator (or a seed >= 0, a SeedSequence or None, given to ``default_rng``)."""
        rng = _generator(rng)
        h, k = _check_limits(horizon_s, n, self.rate_per_s)
        if k is None:
            chunk = int(h * self.rate_per_s * 1.1) + 16
            parts, t0 = [], 0.0
            while True:
                t = t0 + np.cumsum(self._gaps(rng, chunk))
                parts.append(t)
                if t[-1] > h:
                    break
                t0 = t[-1]
            t = np.concatenate(parts)
            return t[t <= h]
        t = np.cumsum(self._gaps(rng, k))
        return t[t <= h] if h is not None else t

    def to_dict(self):
        return {"kind": type(self).__name__, "rate_per_s": self.rate_per_s}


@dataclass(frozen=True, kw_only=True)
class Poisson(Arrival):
    """Poisson arrivals at ``rate_per_s``."""

    def _gaps(self, rng, k):
        return rng.exponential(1.0 / self.rate_per_s, size=k)


@dataclass(frozen=True, kw_only=True)
class Periodic(Arrival):
    """Deterministic arrivals: one every ``1/rate_per_s`` seconds (the first at ``1/rate``)."""

    def _gaps(self, rng, k):
        return np.full(k, 1.0 / self.rate_per_s)


@dataclass(frozen=True, kw_only=True)
class Gamma(Arrival):
    """Gamma renewal arrivals with inter-arrival coefficient of variation ``cv``."""

    cv: float = 2.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "cv", real("cv", self.cv, positive=True, minimum=MIN_CV, maximum=MAX_CV,
                                            why=CV_WHY))

    def _gaps(self, rng, k):
        shape = 1.0 / (self.cv ** 2)
        return rng.gamma(shape, 1.0 / (self.rate_per_s * shape), size=k)

    def to_dict(self):
        return {**super().to_dict(), "cv": self.cv}


@dataclass(frozen=True, kw_only=True)
class TraceArrivals(Arrival):
    """Replay of recorded arrival times (seconds, first arrival moved to 0).

    ``rate_per_s`` defaults (``None``) to the trace's own mean rate; giving another rate rescales the time
    axis (same burst pattern, faster or slower).  A NaN rate is refused like any other bad rate (it used to
    mean "not given", so ``with_rate(nan)`` silently kept the trace's own rate).
    """

    times_s: tuple = ()
    rate_per_s: float | None = None
    native_rate_per_s: float = field(default=float("nan"), init=False)

    def __post_init__(self):
        t = array("times_s", self.times_s, min_len=2)
        if np.any(np.diff(t) < 0):
            raise DataError("times_s: arrival times are not sorted")
        t = t - t[0]
        if t[-1] <= 0:
            raise DataError("times_s: every arrival is at the same instant; no rate can be defined")
        native = (t.size - 1) / t[-1]
        object.__setattr__(self, "times_s", tuple(t))
        object.__setattr__(self, "native_rate_per_s", native)
        if self.rate_per_s is None:  # not given: the trace's own rate
            object.__setattr__(self, "rate_per_s", native)
        super().__post_init__()

    def times(self, rng=None, horizon_s=None, n=None):
        t = np.asarray(self.times_s) * (self.native_rate_per_s / self.rate_per_s)
        if n is not None:
            t = t[: integer("n", n, minimum=1)]
        if horizon_s is not None:
            t = t[t <= real("horizon_s", horizon_s, positive=True)]
        return t

    def to_dict(self):
        return {"kind": "TraceArrivals", "n": len(self.times_s), "rate_per_s": self.rate_per_s,
                "native_rate_per_s": self.native_rate_per_s}


def _generator(rng) -> np.random.Generator:
    """``rng`` as a Generator: a Generator as is, else ``default_rng`` of a seed >= 0, a SeedSequence or None;
    anything else (a float, a negative seed, a string) a ParameterError naming ``rng``."""
    rng = check_rng(rng)
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
