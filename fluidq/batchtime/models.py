"""Batch-time models: how long one engine iteration of ``b`` tokens takes, in seconds.

All models are frozen, keyword-only dataclasses validated on construction and
vectorised over ``b``:

* :class:`Staircase` ``t(b) = c + a*ceil(b/b0)``  (Li, Dai, Peng, v3, Eq. 4, Assumption 1)
* :class:`PiecewiseLinear` ``t(b) = c + a*max(0, b - b0)``  (same paper, v1/v2)
* :class:`Affine` ``t(b) = c + a*b``
* :class:`Tabulated` measured points with monotone (PCHIP) interpolation; it refuses to
  extrapolate beyond the measured range unless told how.
* :class:`ContextAware` ``t(b, kv) = base(b) + kv_s_per_token*kv`` where ``kv`` is the number of
  cached KV tokens that decode attention reads in the batch (measured profiles show that it
  matters: see Vidur, LLMServingSim data in ``validation/``).

Every model answers :meth:`BatchTime.best_rate`: ``sup_{1<=b<=b_max} b/t(b)`` and the batch
size where it is reached, computed from the candidate points where the sup can sit (exactly,
not on a sampled grid).

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347 (v3: Eq. 4 and Theorem 2).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import ClassVar

import numpy as np

from .._validate import (
    BUDGET_WHY,
    MAX_BATCH_SECONDS,
    MAX_BUDGET_TOKENS,
    MAX_KV_TOKENS,
    MIN_BATCH_SECONDS,
    SECONDS_WHY,
    array,
    integer,
    real,
)
from ..errors import DataError, ExtrapolationError, ParameterError

__all__ = [
    "Affine",
    "BatchTime",
    "ContextAware",
    "PiecewiseLinear",
    "Staircase",
    "Tabulated",
    "batch_time_from_dict",
]


def _tokens(b):
    arr = np.asarray(b, dtype=float)
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr < 0)):
        raise ParameterError("tokens", b, "finite token counts >= 0")
    return arr


def _seconds(name, value, *, zero_ok: bool):
    """A batch-time constant in seconds: 0 (when ``zero_ok``) or within [MIN_BATCH_SECONDS, MAX_BATCH_SECONDS]."""
    v = real(name, value, nonnegative=zero_ok, positive=not zero_ok, maximum=MAX_BATCH_SECONDS, why=SECONDS_WHY)
    if v != 0 and v < MIN_BATCH_SECONDS:
        raise ParameterError(name, value, f"{'0 or ' if zero_ok else ''}a time >= {MIN_BATCH_SECONDS:g} s",
                             SECONDS_WHY)
    return v


def _block(name, value, minimum):
    return integer(name, value, minimum=minimum, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)


def _out(arr, like):
    return float(arr) if np.ndim(like) == 0 else arr


@dataclass(frozen=True, kw_only=True)
class BatchTime:
    """Base class: a map from batch tokens ``b`` (and optionally cached KV tokens) to seconds."""

    kind: ClassVar[str] = "base"

    def __call__(self, tokens, kv_tokens=None):
        """Batch time in seconds for ``tokens`` tokens (scalar or array)."""
        b = _tokens(tokens)
        return _out(self._eval(b), tokens)

    def _eval(self, b: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _candidates(self, b_max: int) -> np.ndarray:
        """Batch sizes among which ``b/t(b)`` attains its max on ``[1, b_max]``."""
        return np.arange(1, b_max + 1, dtype=float)

    def best_rate(self, b_max: int) -> tuple[float, int]:
        """Return ``(tokens_per_s, batch_tokens)`` maximising ``b/t(b)`` over integers ``1..b_max``.

        Ties are broken towards the smaller batch.
        """
        b_max = integer("b_max", b_max, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
        cand = self._candidates(b_max)
        cand = cand[(cand >= 1) & (cand <= b_max)]
        secs = np.asarray(self._eval(cand), dtype=float)
        bad = ~np.isfinite(secs) | (secs <= 0)
        if np.any(bad):  # e.g. a table extrapolated linearly along a falling slope
            i = int(np.flatnonzero(bad)[0])
            raise ParameterError("batch_time", self, "a model with a finite batch time > 0 s for every batch of "
                                 "1..b_max tokens", f"t({int(cand[i])}) = {secs[i]!r} s")
        rates = cand / secs
        i = int(np.argmax(rates))
        return float(rates[i]), int(cand[i])

    @classmethod
    def fit(cls, tokens, seconds, **kwargs):
        """Fit this form to measured ``(tokens, seconds)`` by least squares.

        Returns a :class:`~fluidq.batchtime.fit.FitResult` (the model is ``result.model``);
        keywords as :func:`~fluidq.batchtime.fit.fit_batch_time` (``b0_grid``, ``folds``, ``loss``).
        """
        from .fit import fit_model

        return fit_model(cls, tokens, seconds, **kwargs)

    @property
    def params(self) -> dict:
        d = asdict(self)
        return d

    def to_dict(self) -> dict:
        return {"kind": self.kind, **self.params}

    def describe(self) -> str:
        """A one-line formula with the parameters (times shown in ms)."""
        return repr(self)


@dataclass(frozen=True, kw_only=True)
class Staircase(BatchTime):
    """``t(b) = c + a*ceil(b/b0)`` seconds (paper v3, Eq. 4).

    Parameters
    ----------
    c : float
        Fixed cost per iteration, seconds (paper fit: 0.01128).
    a : float
        Cost of one block of ``b0`` tokens, seconds (paper fit: 0.03547).
    b0 : int
        Block size in tokens (paper fit: 128).

    Examples
    --------
    >>> t = Staircase(c=0.01128, a=0.03547, b0=128)
    >>> round(t(512) * 1e3, 2)
    153.16
    """

    kind: ClassVar[str] = "staircase"
    c: float
    a: float
    b0: int

    def __post_init__(self):
        # t(b) >= a >= 1e-12 s, so a tiny fixed cost is harmless; only its size is bounded
        object.__setattr__(self, "c", real("c", self.c, nonnegative=True, maximum=MAX_BATCH_SECONDS, why=SECONDS_WHY))
        object.__setattr__(self, "a", _seconds("a", self.a, zero_ok=False))
        object.__setattr__(self, "b0", _block("b0", self.b0, 1))

    def _eval(self, b):
        return self.c + self.a * np.ceil(b / self.b0)

    def _candidates(self, b_max):
        # b/t(b) rises within each step; the sup sits at a step's right end or at b_max.
        ends = np.arange(self.b0, b_max + 1, self.b0, dtype=float)
        return np.append(ends, float(b_max))

    def describe(self):
        return f"t(b) = {self.c*1e3:.4g} ms + {self.a*1e3:.4g} ms * ceil(b/{self.b0})"


@dataclass(frozen=True, kw_only=True)
class PiecewiseLinear(BatchTime):
    """``t(b) = c + a*max(0, b - b0)`` seconds (paper v1/v2).

    ``b/t(b)`` is increasing on ``[0, b0]``; beyond ``b0`` it increases iff ``c > a*b0``,
    so the sup over ``b <= b_max`` is at ``b_max`` or at ``b0`` -- not always at ``b_max``.
    """

    kind: ClassVar[str] = "piecewise_linear"
    c: float
    a: float
    b0: int

    def __post_init__(self):
        object.__setattr__(self, "c", _seconds("c", self.c, zero_ok=False))
        # t(b) >= c >= 1e-12 s, so a tiny slope is harmless; only its size is bounded
        object.__setattr__(self, "a", real("a", self.a, positive=True, maximum=MAX_BATCH_SECONDS, why=SECONDS_WHY))
        object.__setattr__(self, "b0", _block("b0", self.b0, 0))

    def _eval(self, b):
        return self.c + self.a * np.maximum(0.0, b - self.b0)

    def _candidates(self, b_max):
        return np.array([min(self.b0, b_max), b_max], dtype=float)

    def describe(self):
        # fixed cost in ms; the per-token slope in the unit that keeps it in [1, 1000) (ms, us, ns)
        a = self.a
        per = (f"{a*1e3:.4g} ms" if abs(a) >= 1e-3 else f"{a*1e6:.4g} us" if abs(a) >= 1e-6 else f"{a*1e9:.4g} ns")
        return f"t(b) = {self.c*1e3:.4g} ms + {per} * max(0, b - {self.b0})"


@dataclass(frozen=True, kw_only=True)
class Affine(BatchTime):
    """``t(b) = c + a*b`` seconds; ``b/t(b)`` increases, so the sup is at ``b_max``."""

    kind: ClassVar[str] = "affine"
    c: float
    a: float

    def __post_init__(self):
        object.__setattr__(self, "c", real("c", self.c, nonnegative=True, maximum=MAX_BATCH_SECONDS, why=SECONDS_WHY))
        object.__setattr__(self, "a", real("a", self.a, nonnegative=True, maximum=MAX_BATCH_SECONDS, why=SECONDS_WHY))
        if self.c == 0 and self.a == 0:
            raise ParameterError("a", self.a, "c > 0 or a > 0", "a batch cannot take zero time")
        if self.c + self.a < MIN_BATCH_SECONDS:  # t(1) = c + a is the shortest batch
            raise ParameterError("a", self.a, f"c + a >= {MIN_BATCH_SECONDS:g} s (with c={self.c!r})", SECONDS_WHY)

    def _eval(self, b):
        return self.c + self.a * b

    def _candidates(self, b_max):
        return np.array([b_max], dtype=float)

    def describe(self):
        # fixed cost in ms; the per-token cost in the unit that keeps it in [1, 1000) (ms, us, ns)
        a = self.a
        per = (f"{a*1e3:.4g} ms" if abs(a) >= 1e-3 else f"{a*1e6:.4g} us" if abs(a) >= 1e-6 else f"{a*1e9:.4g} ns")
        return f"t(b) = {self.c*1e3:.4g} ms + {per} * b"


@dataclass(frozen=True, kw_only=True)
class Tabulated(BatchTime):
    """Measured ``(tokens, seconds)`` points with monotone cubic (PCHIP) interpolation.

    Parameters
    ----------
    tokens, seconds : sequences
        Strictly increasing token counts (no duplicates) and their batch times (> 0).
    extrapolate : {"raise", "linear"}
        Beyond the measured range: raise :class:`~fluidq.errors.ExtrapolationError` (default),
        or continue linearly with the slope of the last two points. Below the smallest
        measured size the first time is used only if ``extrapolate="linear"``.
    """

    kind: ClassVar[str] = "tabulated"
    tokens: tuple
    seconds: tuple
    extrapolate: str = "raise"
    _interp: object = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        x = array("tokens", self.tokens, nonnegative=True, min_len=2)
        y = array("seconds", self.seconds, positive=True, min_len=2)
        for name, arr, lo, hi, why in (("tokens", x, 0, MAX_BUDGET_TOKENS, BUDGET_WHY),
                                       ("seconds", y, MIN_BATCH_SECONDS, MAX_BATCH_SECONDS, SECONDS_WHY)):
            out = (arr < lo) | (arr > hi)
            if np.any(out):
                i = int(np.flatnonzero(out)[0])
                raise ParameterError(name, f"<array with {arr[i]!r} at index {i}>", f"values in [{lo:g}, {hi:g}]", why)
        if x.shape != y.shape:
            raise DataError(f"tokens and seconds have different lengths ({x.size} vs {y.size})")
        d = np.diff(x)
        if np.any(d == 0):
            i = int(np.flatnonzero(d == 0)[0])
            raise DataError(f"tokens: duplicate size {x[i]:g} (rows {i} and {i+1}); average repeated measurements first")
        if np.any(d < 0):
            i = int(np.flatnonzero(d < 0)[0])
            raise DataError(f"tokens: not increasing at row {i+1} ({x[i]:g} then {x[i+1]:g}); sort the table")
        if np.any(d < 1e-6):  # slopes of 1e6 s per 1e-300 token overflow the interpolation
            i = int(np.flatnonzero(d < 1e-6)[0])
            raise ParameterError("tokens", f"<array with {x[i]:g} and {x[i + 1]:g} at rows {i} and {i + 1}>",
                                 "token counts at least 1e-6 apart", "batch sizes are whole numbers of tokens; "
                                 "closer sizes make the interpolation's slopes overflow")
        if self.extrapolate not in ("raise", "linear"):
            raise ParameterError("extrapolate", self.extrapolate, "'raise' or 'linear'")
        from scipy.interpolate import PchipInterpolator

        object.__setattr__(self, "tokens", tuple(float(v) for v in x))
        object.__setattr__(self, "seconds", tuple(float(v) for v in y))
        object.__setattr__(self, "_interp", PchipInterpolator(x, y, extrapolate=False))

    @property
    def params(self):
        return {"tokens": list(self.tokens), "seconds": list(self.seconds), "extrapolate": self.extrapolate}

    def _eval(self, b):
        x0, x1 = self.tokens[0], self.tokens[-1]
        b = np.asarray(b, dtype=float)
        out = np.asarray(self._interp(np.clip(b, x0, x1)), dtype=float)
        outside = (b < x0) | (b > x1)
        if np.any(outside):
            if self.extrapolate == "raise":
                bad = b[outside].ravel()[0]
                raise ExtrapolationError(
                    f"tokens={bad:g} is outside the measured range [{x0:g}, {x1:g}]; "
                    "measure it, lower b_max, or pass extrapolate='linear'")
            slope = (self.seconds[-1] - self.seconds[-2]) / (self.tokens[-1] - self.tokens[-2])
            out = np.where(b > x1, self.seconds[-1] + slope * (b - x1), out)
            out = np.where(b < x0, self.seconds[0], out)
        return out

    def _candidates(self, b_max):
        x0 = self.tokens[0]
        lo = 1 if self.extrapolate == "linear" else max(1, math.ceil(x0))
        if b_max > self.tokens[-1] and self.extrapolate == "raise":
            raise ExtrapolationError(
                f"b_max={b_max} is beyond the measured range (largest {self.tokens[-1]:g} tokens)")
        return np.arange(lo, b_max + 1, dtype=float)

    def describe(self):
        return f"tabulated over {len(self.tokens)} points, {self.tokens[0]:g}..{self.tokens[-1]:g} tokens"


@dataclass(frozen=True, kw_only=True)
class ContextAware(BatchTime):
    """``t(b, kv) = base(b) + kv_s_per_token * kv`` seconds.

    ``base`` is any batch-time model in batch tokens (linear layers); ``kv`` is the number of
    cached KV tokens read by decode attention in the batch (the sum of the contexts of the
    decoding requests). Called with ``kv_tokens=None`` it is ``base(b)``.
    """

    kind: ClassVar[str] = "context_aware"
    base: BatchTime
    kv_s_per_token: float

    def __post_init__(self):
        if not isinstance(self.base, BatchTime) or isinstance(self.base, ContextAware):
            raise ParameterError("base", self.base, "a batch-time model in tokens (not context-aware)")
        object.__setattr__(self, "kv_s_per_token", real("kv_s_per_token", self.kv_s_per_token, nonnegative=True,
                                                         maximum=MAX_BATCH_SECONDS, why=SECONDS_WHY))

    def __call__(self, tokens, kv_tokens=None):
        b = _tokens(tokens)
        out = self.base._eval(b)
        if kv_tokens is not None:
            kv = np.asarray(kv_tokens, dtype=float)
            if kv.size and (not np.all(np.isfinite(kv)) or np.any(kv < 0)):
                raise ParameterError("kv_tokens", kv_tokens, "finite token counts >= 0")
            out = out + self.kv_s_per_token * kv
        return _out(out, tokens if np.ndim(tokens) else kv_tokens if kv_tokens is not None else tokens)

    def _eval(self, b):
        return self.base._eval(b)

    def _candidates(self, b_max):
        return self.base._candidates(b_max)

    @classmethod
    def fit(cls, tokens, kv_tokens, seconds, **kwargs):
        """Fit ``base(b) + kv_s_per_token*kv`` to measured ``(tokens, kv_tokens, seconds)``.

        ``base="auto"`` (default) picks the staircase, piecewise-linear or affine base by
        held-out error; returns a :class:`~fluidq.batchtime.fit.FitResult`.
        """
        from .fit import fit_model

        return fit_model(cls, tokens, seconds, kv_tokens=kv_tokens, **kwargs)

    @property
    def params(self):
        return {"base": self.base.to_dict(), "kv_s_per_token": self.kv_s_per_token}

    def at_context(self, kv_tokens: float) -> BatchTime:
        """The batch-time model in ``b`` alone with a fixed ``kv_tokens`` read per batch."""
        kv = real("kv_tokens", kv_tokens, nonnegative=True, maximum=float(MAX_KV_TOKENS) * MAX_BUDGET_TOKENS,
                  why="no batch reads more KV tokens than b_max requests can hold")
        return _Shifted(base=self.base, shift_s=self.kv_s_per_token * kv)

    def describe(self):
        # per KV token in the unit that keeps the number in [1, 1000) (ms, us, ns): never "1.7e+05 ns"
        k = self.kv_s_per_token
        per = (f"{k*1e3:.4g} ms" if abs(k) >= 1e-3 else f"{k*1e6:.4g} us" if abs(k) >= 1e-6 else f"{k*1e9:.4g} ns")
        return f"{self.base.describe()} + {per} * kv"


@dataclass(frozen=True, kw_only=True)
class _Shifted(BatchTime):
    kind: ClassVar[str] = "shifted"
    base: BatchTime
    shift_s: float

    def _eval(self, b):
        return self.base._eval(b) + self.shift_s

    # a constant shift keeps each model's candidate set valid (b/t rises within a staircase
    # step; affine stays increasing; piecewise-linear still peaks at b0 or b_max)
    def _candidates(self, b_max):
        return self.base._candidates(b_max)


_KINDS = {cls.kind: cls for cls in (Staircase, PiecewiseLinear, Affine, Tabulated)}


def batch_time_from_dict(d: dict) -> BatchTime:
    """Inverse of :meth:`BatchTime.to_dict`; a malformed description is a DataError naming the key."""
    import dataclasses

    from ..errors import DataError, ParameterError, UnknownNameError

    if not isinstance(d, dict):
        raise ParameterError("batch_time", d, "a table/dict with 'kind' and the model's parameters")
    d = dict(d)
    kind = d.pop("kind", None)
    if kind == "composition":
        raise DataError("batch_time: kind 'composition' (an operator-profile iteration model) is built from its "
                        "profiles, e.g. fluidq.batchtime.operators.lss_iteration_model; it cannot be read from a dict")
    if kind == "context_aware":
        extra = sorted(set(d) - {"base", "kv_s_per_token"})
        if extra:
            raise DataError(f"batch_time: unknown key {extra[0]!r} for kind 'context_aware' (keys: base, kv_s_per_token)")
        for key in ("base", "kv_s_per_token"):
            if key not in d:
                raise DataError(f"batch_time: kind 'context_aware' needs key {key!r} (keys: base, kv_s_per_token)")
        return ContextAware(base=batch_time_from_dict(d["base"]), kv_s_per_token=d["kv_s_per_token"])
    if kind not in _KINDS:
        raise UnknownNameError("batch-time kind", kind, list(_KINDS) + ["context_aware"])
    cls = _KINDS[kind]
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    required = {f.name for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    extra = sorted(set(d) - fields)
    if extra:
        raise DataError(f"batch_time: unknown key {extra[0]!r} for kind {kind!r} (keys: {', '.join(sorted(fields))})")
    missing = sorted(required - set(d))
    if missing:
        raise DataError(f"batch_time: kind {kind!r} needs key {missing[0]!r} (keys: {', '.join(sorted(fields))})")
    return cls(**d)
