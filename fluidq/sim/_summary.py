"""Streaming statistics of a summary run (``simulate(..., record="summary")``): what it keeps instead of arrays.

* :class:`Sketch` -- a latency metric: exact count, sum (mean up to rounding) and maximum, and the
  percentiles from log-spaced bins of relative width about 1 % (``(1 + a) / (1 - a)``, ``a = REL_ERROR``):
  each percentile is within :data:`REL_ERROR` (0.5 %) of numpy's linearly interpolated percentile of the same
  values, relative to it (values >= 0; zeros are counted exactly);
* :class:`BacklogStream` -- the backlog step function folded as its rows come: the exact time integral of
  the requests in system (up to rounding), the last row, and its values on a thinned grid of points
  ``i * 2**m`` seconds (``m`` grows so that at most ``2 * GRID_POINTS`` points cover ``[0, end]``; values at
  a coarser grid are a subset of a finer one's, so every kept value is exact), on which the token
  backlog's slope over ``[end / 2, end]`` is fitted.
"""
from __future__ import annotations

import math

import numpy as np

from ..results import line_slope
from .result import METRIC_NAMES, latency_columns

__all__ = ["GRID_POINTS", "REL_ERROR", "BacklogStream", "RequestStream", "Sketch"]

#: a percentile of a summary run is within this relative error of the exact one (bins of relative width ~1 %)
REL_ERROR = 0.005
#: the thinned backlog grid keeps between this many and twice this many points over [0, end]
GRID_POINTS = 1024


class Sketch:
    """Count, sum, maximum and log-binned counts of non-negative values (see the module docstring)."""

    def __init__(self, rel_error: float = REL_ERROR):
        a = float(rel_error)
        self.gamma = (1.0 + a) / (1.0 - a)
        self.lng = math.log(self.gamma)
        self.n = 0
        self.total = 0.0
        self.max = -math.inf
        self.zeros = 0
        self.lo = 0
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, x: np.ndarray) -> None:
        """Count the finite values of ``x`` (NaN are left out, as :attr:`SimResult.metrics` leaves them)."""
        x = np.asarray(x, dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            return
        if np.any(x < 0):
            raise ValueError("internal: a negative latency in a summary run")
        self.n += int(x.size)
        self.total += float(np.sum(x))
        self.max = max(self.max, float(x.max()))
        pos = x[x > 0]
        self.zeros += int(x.size - pos.size)
        if pos.size == 0:
            return
        idx = np.ceil(np.log(pos) / self.lng).astype(np.int64)  # bin i holds (gamma^(i-1), gamma^i]
        lo, hi = int(idx.min()), int(idx.max())
        if self.counts.size == 0:
            self.lo, self.counts = lo, np.zeros(hi - lo + 1, dtype=np.int64)
        elif lo < self.lo or hi >= self.lo + self.counts.size:
            nlo, nhi = min(lo, self.lo), max(hi, self.lo + self.counts.size - 1)
            c = np.zeros(nhi - nlo + 1, dtype=np.int64)
            c[self.lo - nlo:self.lo - nlo + self.counts.size] = self.counts
            self.lo, self.counts = nlo, c
        self.counts += np.bincount(idx - self.lo, minlength=self.counts.size)

    def _order_stats(self, ranks: np.ndarray) -> np.ndarray:
        """Estimates of the order statistics of 0-based ``ranks``, each within ``a`` of the true one."""
        out = np.zeros(ranks.size)
        cum = np.cumsum(self.counts)
        pos = ranks >= self.zeros
        b = np.searchsorted(cum, ranks[pos] - self.zeros, side="right")
        out[pos] = 2.0 * self.gamma ** (self.lo + b) / (self.gamma + 1.0)
        return out

    def percentiles(self, qs) -> list:
        """numpy's linear-interpolation percentiles ``qs`` (0..100), each within :data:`REL_ERROR` relative."""
        if self.n == 0:
            return [math.nan] * len(qs)
        h = (self.n - 1) * np.asarray(qs, dtype=float) / 100.0
        k = np.floor(h).astype(np.int64)
        f = h - k
        e0 = self._order_stats(k)
        e1 = self._order_stats(np.minimum(k + 1, self.n - 1))
        return [float(v) for v in e0 + f * (e1 - e0)]

    def stats(self) -> dict:
        """``{n, mean, p50, p90, p99, max}`` as :attr:`SimResult.metrics` has them."""
        if self.n == 0:
            return {"n": 0, "mean": math.nan, "p50": math.nan, "p90": math.nan, "p99": math.nan, "max": math.nan}
        p50, p90, p99 = self.percentiles([50, 90, 99])
        return {"n": self.n, "mean": self.total / self.n, "p50": p50, "p90": p90, "p99": p99, "max": self.max}


class RequestStream:
    """The per-request part of a summary: counts and one :class:`Sketch` per metric of :data:`METRIC_NAMES`,
    over the requests arriving at or after ``warmup_s`` (as :attr:`SimResult.metrics`)."""

    def __init__(self, warmup_s: float = 0.0, rel_error: float = REL_ERROR):
        self.warmup_s = float(warmup_s)
        self.n_requests = 0
        self.n_finished = 0
        self.sketch = {k: Sketch(rel_error) for k in METRIC_NAMES}

    def add(self, cols: dict) -> None:
        """Fold in requests that will not change any more: columns ``arrival_s``, ``prompt_tokens``,
        ``output_tokens``, ``first_scheduled_s``, ``prefill_done_s``, ``first_token_s``, ``finish_s``."""
        a = cols["arrival_s"]
        self.n_requests += int(a.size)
        self.n_finished += int(np.isfinite(cols["finish_s"]).sum())
        keep = a >= self.warmup_s
        lat = latency_columns(cols)
        for k in METRIC_NAMES:
            self.sketch[k].add(lat[k][keep])

    def metrics(self) -> dict:
        return {k: self.sketch[k].stats() for k in METRIC_NAMES}


class BacklogStream:
    """The backlog rows (time, requests, tokens) folded as they come (see the module docstring)."""

    def __init__(self, warmup_s: float = 0.0, points: int = GRID_POINTS):
        self.s = float(warmup_s)
        self.points = int(points)
        self.m = -1074  # grid spacing 2**m seconds, raised before any point is taken
        self.vals: list = []  # (requests, tokens) at the grid points 0, 2**m, 2 * 2**m, ...
        self.last = None  # the last row (t, requests, tokens)
        self.area = 0.0  # integral of requests over [warmup, last row's time]

    def _coarsen(self, upto: float) -> None:
        while upto / 2.0 ** self.m > 2 * self.points:
            self.m += 1
            self.vals = self.vals[::2]

    def _take(self, t, y_n, y_w, upto: float, inclusive: bool) -> None:
        """Grid values from the rows ``t`` (with the step values ``y_n``, ``y_w``) at the grid points below
        ``upto`` (or at it, ``inclusive``): a point is final once a row lies beyond it."""
        d = 2.0 ** self.m
        i0 = len(self.vals)
        i1 = math.floor(upto / d) if inclusive else math.ceil(upto / d) - 1
        if i1 < i0:
            return
        g = np.arange(i0, i1 + 1, dtype=float) * d
        j = np.clip(np.searchsorted(t, g, side="right") - 1, 0, len(t) - 1)
        self.vals.extend(zip(y_n[j].tolist(), y_w[j].tolist()))

    def add(self, bt, bn, bw) -> None:
        """Fold in backlog rows (times non-decreasing, after every row given before)."""
        if len(bt) == 0:
            return
        bt = np.asarray(bt, dtype=float)
        bn = np.asarray(bn, dtype=np.int64)
        bw = np.asarray(bw, dtype=np.int64)
        if self.last is not None:
            t0, n0, w0 = self.last
            bt, bn, bw = np.concatenate([[t0], bt]), np.concatenate([[n0], bn]), np.concatenate([[w0], bw])
        c = np.maximum(bt, self.s)
        self.area += float(np.sum(bn[:-1] * np.diff(c)))
        self._coarsen(float(bt[-1]))
        self._take(bt, bn, bw, float(bt[-1]), inclusive=False)
        self.last = (float(bt[-1]), int(bn[-1]), int(bw[-1]))

    def finish(self, end_s: float) -> dict:
        """The summary's backlog figures at the end of the run (``end_s`` >= every row's time)."""
        t0, n0, w0 = self.last
        self._coarsen(end_s)
        self._take(np.array([t0]), np.array([n0]), np.array([w0]), end_s, inclusive=True)
        s = self.s
        mean = math.nan if end_s <= s else (self.area + n0 * (end_s - max(t0, s))) / (end_s - s)
        d = 2.0 ** self.m
        i0 = math.ceil(0.5 * end_s / d)
        g = np.arange(i0, len(self.vals), dtype=float) * d
        y = np.array([w for _, w in self.vals[i0:]], dtype=float)
        slope = line_slope(g, y)
        return {"final_requests_in_system": n0, "final_token_backlog": w0, "mean_requests_in_system": mean,
                "token_backlog_slope_per_s": slope, "grid_s": d}
