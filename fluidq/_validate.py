"""Small validators used at every public boundary (internal)."""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .errors import ParameterError, ParameterTypeError


def real(name: str, value, *, positive: bool = False, nonnegative: bool = False,
         allow_none: bool = False, maximum: float | None = None, minimum: float | None = None,
         why: str | None = None) -> float | None:
    """Return ``value`` as a finite float, or raise naming ``name``.

    ``minimum``/``maximum`` bound the value (inclusive) where the computation cannot represent more:
    ``why`` says so in the message (e.g. "a horizon of more than 1e12 s cannot be simulated").
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterTypeError(f"{name}={value!r}: expected a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ParameterError(name, value, "a finite number")
    if positive and not v > 0:
        raise ParameterError(name, value, "a number > 0")
    if nonnegative and not v >= 0:
        raise ParameterError(name, value, "a number >= 0")
    if minimum is not None and v < minimum:
        raise ParameterError(name, value, f"a number >= {minimum:g}", why)
    if maximum is not None and v > maximum:
        raise ParameterError(name, value, f"a number <= {maximum:g}", why)
    return v


def integer(name: str, value, *, minimum: int | None = None, allow_none: bool = False,
            maximum: int | None = None, why: str | None = None) -> int | None:
    """Return ``value`` as an int (integral floats accepted), or raise naming ``name``.

    ``maximum`` bounds it (inclusive) where a larger value cannot be built; ``why`` says so.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool):
        raise ParameterTypeError(f"{name}={value!r}: expected an integer, got bool")
    if isinstance(value, Integral):
        v = int(value)
    elif isinstance(value, Real) and math.isfinite(float(value)) and float(value).is_integer():
        v = int(value)
    else:
        if isinstance(value, Real):
            raise ParameterError(name, value, "an integer")
        raise ParameterTypeError(f"{name}={value!r}: expected an integer, got {type(value).__name__}")
    if minimum is not None and v < minimum:
        raise ParameterError(name, value, f"an integer >= {minimum}")
    if maximum is not None and v > maximum:
        raise ParameterError(name, value, f"an integer <= {maximum:,}", why)
    return v


def array(name: str, values, *, positive: bool = False, nonnegative: bool = False,
          ndim: int = 1, min_len: int = 1) -> np.ndarray:
    """Return a finite float array, or raise naming ``name``."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterError(name, values, "an array of numbers") from exc
    if arr.ndim != ndim:
        raise ParameterError(name, f"<array of shape {arr.shape}>", f"a {ndim}-d array")
    if arr.size < min_len:
        raise ParameterError(name, f"<array of length {arr.size}>", f"at least {min_len} value(s)")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
        raise ParameterError(name, f"<array with {arr.ravel()[bad]} at index {bad}>", "finite values")
    if positive and np.any(arr <= 0):
        bad = int(np.flatnonzero(arr.ravel() <= 0)[0])
        raise ParameterError(name, f"<array with {arr.ravel()[bad]} at index {bad}>", "values > 0")
    if nonnegative and np.any(arr < 0):
        bad = int(np.flatnonzero(arr.ravel() < 0)[0])
        raise ParameterError(name, f"<array with {arr.ravel()[bad]} at index {bad}>", "values >= 0")
    return arr
