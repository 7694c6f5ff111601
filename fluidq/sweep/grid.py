"""Sweep grids: the Cartesian product of named axes, or an explicit list of points."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Iterator, Mapping, Sequence

from ..errors import ParameterError, ParameterTypeError

__all__ = ["Grid", "MAX_AXIS_VALUES", "MAX_POINTS", "as_grid", "axis_size", "expand_axis"]

_SCALARS = (str, int, float, bool, type(None))


def _scalar(name: str, v):
    """A JSON scalar (the store is JSON), numpy scalars converted."""
    if hasattr(v, "item") and not isinstance(v, _SCALARS):
        v = v.item()
    if not isinstance(v, _SCALARS):
        raise ParameterTypeError(f"{name}={v!r}: expected a str, int, float, bool or None "
                                 f"(grid values are stored as JSON), got {type(v).__name__}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ParameterError(name, v, "a finite number")
    return v


def _finite(name: str, v) -> float:
    """A range end or step: a finite real number (nan/inf would reach the JSON store)."""
    if isinstance(v, bool) or not isinstance(v, Real):
        raise ParameterTypeError(f"{name}={v!r}: expected a number")
    if not math.isfinite(float(v)):
        raise ParameterError(name, v, "a finite number")
    return float(v)


def _tidy(x: float) -> float:
    """Round away the last-bit noise of a computed range value (0.5499999999999999 -> 0.55)."""
    return float(f"{x:.12g}")


#: the most points a grid (and so a sweep) may have: its table is held in memory and stored as JSON
MAX_POINTS = 10_000_000
#: the most values one axis may have (every value is also written into the store's header line)
MAX_AXIS_VALUES = 1_000_000
_SIZE_WHY = ("a sweep holds its table in memory and stores about a kilobyte a point; split a larger sweep "
             "into several")


def _count(x: float) -> str:
    """A point count for a message: ``1,000,000,000,000`` or ``1e+300`` (or ``more than 1e308``)."""
    if not math.isfinite(x):
        return "more than 1e308"
    return f"{int(x):,}" if x < 1e16 else f"{x:.3g}"


def _too_many(name: str, key: str, value, count: float):
    return ParameterError(f"{name}.{key}", value, f"an axis of at most {MAX_AXIS_VALUES:,} values",
                          f"{key} = {value!r} would make an axis of {_count(count)} values; {_SIZE_WHY}")


def _range_spec(name: str, spec) -> tuple:
    """``(kind, a, b, num_or_step, count)`` of a range spec, every number checked, nothing built yet."""
    keys = set(spec)
    if keys == {"start", "stop", "num"}:
        num = spec["num"]
        if isinstance(num, bool) or not isinstance(num, Real):
            raise ParameterTypeError(f"{name}.num={num!r}: expected an integer >= 1")
        if isinstance(num, float) and math.isfinite(num) and num.is_integer() and num > MAX_AXIS_VALUES:
            raise _too_many(name, "num", num, num)
        if not isinstance(num, int) and not (isinstance(num, float) and math.isfinite(num) and num.is_integer()):
            raise ParameterError(f"{name}.num", num, "an integer >= 1")
        num = int(num)
        if num < 1:
            raise ParameterError(f"{name}.num", num, "an integer >= 1")
        if num > MAX_AXIS_VALUES:
            raise _too_many(name, "num", num, num)
        a, b = (_finite(f"{name}.{k}", spec[k]) for k in ("start", "stop"))
        return "num", a, b, num, num
    if keys == {"start", "stop", "step"}:
        a, b, s = spec["start"], spec["stop"], spec["step"]
        for k, v in (("start", a), ("stop", b), ("step", s)):
            if isinstance(v, bool) or not isinstance(v, Real):
                raise ParameterTypeError(f"{name}.{k}={v!r}: expected a number")
            _finite(f"{name}.{k}", v)
        if not s > 0:
            raise ParameterError(f"{name}.step", s, "a step > 0")
        if all(isinstance(v, int) for v in (a, b, s)):
            count = max(0, -(-(b - a) // s))  # len(range(a, b, s)), without its C-size limit
        else:
            q = (float(b) - float(a)) / float(s)
            if not math.isfinite(q) and not math.isfinite(float(b) - float(a)):
                q = float(b) / float(s) - float(a) / float(s)  # b - a overflows, not the count
            count = max(0.0, math.ceil(q - 1e-12)) if math.isfinite(q) else q
        if count > MAX_AXIS_VALUES:
            raise _too_many(name, "step", s, count)
        return "step", a, b, s, int(count)
    raise ParameterError(name, dict(spec), "a list of values, {start, stop, num} or {start, stop, step}")


def axis_size(name: str, spec) -> int:
    """The number of values :func:`expand_axis` would give, checked without building them."""
    if isinstance(spec, Mapping):
        return _range_spec(name, spec)[-1]
    if isinstance(spec, (str, bytes)) or not isinstance(spec, (Sequence, range)) and not hasattr(spec, "tolist"):
        raise ParameterTypeError(f"{name}={spec!r}: expected a list of values for a grid axis")
    n = len(spec)
    if n > MAX_AXIS_VALUES:
        raise ParameterError(name, f"<{n:,} values>", f"an axis of at most {MAX_AXIS_VALUES:,} values", _SIZE_WHY)
    return n


def expand_axis(name: str, spec) -> tuple:
    """Values of one axis: a list, or a range ``{start, stop, num}`` (inclusive linspace) or
    ``{start, stop, step}`` (half-open, like ``range`` / ``numpy.arange``).

    A range of more than :data:`MAX_AXIS_VALUES` values is refused (with the size it would have) before
    any value is built.
    """
    if isinstance(spec, Mapping):
        kind, a, b, k, count = _range_spec(name, spec)
        if kind == "num":
            if k == 1:
                return (a,)
            values = tuple(_tidy(a + (b - a) * i / (k - 1)) for i in range(k))
            if all(math.isfinite(v) for v in values):
                return values
            # ends near the float limits: (b - a) * i overflows; the weighted mean of the ends does not
            return tuple(_tidy(a * (1 - i / (k - 1)) + b * (i / (k - 1))) for i in range(k))
        if all(isinstance(v, int) for v in (a, b, k)):
            return tuple(range(a, b, k))
        values = tuple(_tidy(a + i * k) for i in range(count))
        if all(math.isfinite(v) for v in values):
            return values
        return tuple(_tidy((a / k + i) * k) for i in range(count))  # ends near the float limits: i * step overflows
    if isinstance(spec, (str, bytes)) or not isinstance(spec, (Sequence, range)) and not hasattr(spec, "tolist"):
        raise ParameterTypeError(f"{name}={spec!r}: expected a list of values for a grid axis")
    values = tuple(_scalar(name, v) for v in (spec.tolist() if hasattr(spec, "tolist") else spec))
    if not values:
        raise ParameterError(name, list(values), "at least one value")
    return values


@dataclass(frozen=True, kw_only=True)
class Grid:
    """The points of a sweep.

    Either ``axes`` (the Cartesian product, last axis varying fastest) or ``points`` (an explicit
    list of dicts), plus ``fixed`` values added to every point.  Values must be JSON scalars
    (str, int, float, bool, None): the result store is JSON.

    Parameters
    ----------
    axes : mapping of str to sequence, optional
        Axis name -> values; a value list may also be a range ``{"start", "stop", "num"}``.
    points : sequence of dict, optional
        Explicit points (instead of ``axes``).
    fixed : mapping, optional
        Constants merged into every point (an axis of the same name is an error).

    Examples
    --------
    >>> from fluidq.sweep import Grid
    >>> g = Grid(axes={"load": [0.5, 0.9], "policy": ["sarathi", "vllm"]}, fixed={"b_max": 512})
    >>> len(g), g[1]
    (4, {'b_max': 512, 'load': 0.5, 'policy': 'vllm'})
    """

    axes: Mapping[str, Sequence] | None = None
    points: Sequence[Mapping] | None = None
    fixed: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if (self.axes is None) == (self.points is None):
            raise ParameterError("axes", self.axes, "exactly one of axes= or points=")
        if not isinstance(self.fixed, Mapping):
            raise ParameterTypeError(f"fixed={self.fixed!r}: expected a mapping of name -> value")
        fixed = {str(k): _scalar(f"fixed.{k}", v) for k, v in self.fixed.items()}
        object.__setattr__(self, "fixed", fixed)
        if self.axes is not None:
            if not isinstance(self.axes, Mapping) or not self.axes:
                raise ParameterError("axes", self.axes, "a non-empty mapping of axis name -> values")
            axes, sizes = {}, {}
            for k, v in self.axes.items():
                if not isinstance(k, str) or not k:
                    raise ParameterError("axes", k, "axis names that are non-empty strings")
                if k in fixed:
                    raise ParameterError(f"fixed.{k}", fixed[k], f"no fixed value for {k!r}: it is also an axis")
                sizes[k] = axis_size(f"axes.{k}", v)
            total = math.prod(sizes.values())
            if total > MAX_POINTS:  # before any axis is built
                shape = " x ".join(f"{n:,} {k}" for k, n in sizes.items())
                raise ParameterError("axes", f"<{shape}>", f"a grid of at most {MAX_POINTS:,} points",
                                     f"these axes make {_count(total)} points; {_SIZE_WHY}")
            for k, v in self.axes.items():
                axes[k] = expand_axis(f"axes.{k}", v)
            object.__setattr__(self, "axes", axes)
        else:
            if isinstance(self.points, (str, bytes, Mapping)) or not isinstance(self.points, Sequence):
                raise ParameterTypeError(f"points={self.points!r}: expected a list of dicts")
            if not self.points:
                raise ParameterError("points", list(self.points), "at least one point")
            if len(self.points) > MAX_POINTS:
                raise ParameterError("points", f"<{len(self.points):,} points>", f"at most {MAX_POINTS:,} points",
                                     _SIZE_WHY)
            pts = []
            for i, p in enumerate(self.points):
                if not isinstance(p, Mapping):
                    raise ParameterTypeError(f"points[{i}]={p!r}: expected a dict")
                clash = set(p) & set(fixed)
                if clash:
                    raise ParameterError(f"points[{i}]", dict(p), f"no key also in fixed ({sorted(clash)})")
                pts.append({str(k): _scalar(f"points[{i}].{k}", v) for k, v in p.items()})
            object.__setattr__(self, "points", tuple(pts))

    @property
    def shape(self) -> tuple:
        """Number of values per axis (``(n_points,)`` for an explicit list)."""
        if self.axes is None:
            return (len(self.points),)
        return tuple(len(v) for v in self.axes.values())

    def __len__(self) -> int:
        return math.prod(self.shape)

    def __getitem__(self, i: int) -> dict:
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, int) or not -n <= i < n:
            raise IndexError(f"grid point {i!r} out of range for {n} points")
        i %= n
        if self.axes is None:
            return {**self.fixed, **self.points[i]}
        return {**self.fixed, **dict(zip(self.axes, self._coords(i)))}

    def _coords(self, i: int) -> list:
        vals = []
        for values in reversed(list(self.axes.values())):
            i, r = divmod(i, len(values))
            vals.append(values[r])
        return vals[::-1]

    def __iter__(self) -> Iterator[dict]:
        return (self[i] for i in range(len(self)))

    def seed_key(self, i: int, common: Sequence[str] | None) -> int:
        """Spawn key of point ``i``: its index, or with ``common`` axes the index of its values on those
        axes only (points that agree on them share a random stream: common random numbers)."""
        if common is None:
            return i
        if self.axes is None:
            raise ParameterError("common_seeds", list(common), "None for a grid of explicit points")
        key, coords = 0, dict(zip(self.axes, self._index_coords(i)))
        for name in common:
            key = key * len(self.axes[name]) + coords[name]
        return key

    def _index_coords(self, i: int) -> list:
        out = []
        for values in reversed(list(self.axes.values())):
            i, r = divmod(i, len(values))
            out.append(r)
        return out[::-1]

    def to_dict(self) -> dict:
        if self.axes is None:
            return {"points": [dict(p) for p in self.points], "fixed": dict(self.fixed)}
        return {"axes": {k: list(v) for k, v in self.axes.items()}, "fixed": dict(self.fixed)}


def as_grid(grid) -> Grid:
    """A :class:`Grid` from a Grid, a mapping of axes, or a list of point dicts."""
    if isinstance(grid, Grid):
        return grid
    if isinstance(grid, Mapping):
        return Grid(axes=grid)
    if isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        return Grid(points=grid)
    raise ParameterTypeError(f"grid={grid!r}: expected a fluidq.sweep.Grid, a dict of axes or a list of points")
