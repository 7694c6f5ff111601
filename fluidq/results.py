"""Shared pieces of result objects: statuses, dict conversion and number formatting (internal).

Two rules hold for every face of fluidq: JSON has no ``NaN``/``Infinity`` (``plain`` turns a
non-finite float into ``null``), and a human table or message never prints ``nan`` or ``inf``
(``fmt_value`` prints an undefined value as an en dash ``–``; the text next to it says why).
"""
from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np


class Status(str, enum.Enum):
    """Stability verdicts. ``str``-valued: ``Status.STABLE == "stable"``."""

    STABLE = "stable"
    UNSTABLE = "unstable"
    CRITICAL = "critical"
    UNKNOWN = "unknown"
    INACCURATE = "inaccurate"

    def __str__(self) -> str:
        return self.value


def plain(obj):
    """Convert a result (dataclasses, enums, numpy) to JSON-ready builtins."""
    if isinstance(obj, enum.Enum):
        return obj.value
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_dict"):
            return plain(obj.to_dict())
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.name.startswith("_")}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return plain(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # JSON has no NaN or Infinity: an undefined (or unbounded) value is null
    return obj


#: what a human table or message shows for a value that is undefined (None, NaN, an infinity)
UNDEFINED = "\u2013"


def is_defined(x) -> bool:
    """Whether ``x`` is a finite number (``None``, NaN, ±inf and non-numbers are not)."""
    if x is None or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError, OverflowError):
        return False


#: significant digits of a measured or computed number in the human output (tables and text alike)
MEANINGFUL_DIGITS = 4


def fmt_value(x, spec: str = ".4g", *, undefined: str = UNDEFINED, digits: int | None = None) -> str:
    """``x`` formatted with ``spec`` for a human table or message, or ``undefined`` (an en dash) when it
    is not a finite number; never ``nan`` or ``inf``.

    With ``digits``, ``spec`` is ignored and ``x`` is rounded to that many significant digits (the
    meaningful ones: a capacity from constants known to 4 digits is not known to 7), written in fixed
    point with thousands separators, never hiding a digit of the integer part, and in ``e`` notation only
    below 1e-4 or from 1e15 up.  JSON keeps full precision; this is for people.

    The caller says why a value is undefined in a note next to the table (no request finished in the
    window, the run is too short to fit a slope, ...).

    >>> fmt_value(3.14159, ".2f"), fmt_value(float("nan")), fmt_value(float("inf"), ",.0f"), fmt_value(None)
    ('3.14', '–', '–', '–')
    >>> fmt_value(3342.909, digits=4), fmt_value(3.342909, digits=4), fmt_value(0.0167145, digits=4)
    ('3,343', '3.343', '0.01671')
    >>> fmt_value(123456.7, digits=4), fmt_value(9.99996, digits=4), fmt_value(0, digits=4), fmt_value(2e-7, digits=4)
    ('123,457', '10.00', '0', '2e-07')
    """
    if not is_defined(x):
        return undefined
    if digits is not None:
        x = float(x)
        r = float(f"{x:.{digits}g}")
        if r == 0:
            return "0"
        if not 1e-4 <= abs(r) < 1e15:
            return f"{x:.{digits}g}"
        decimals = max(0, digits - 1 - math.floor(math.log10(abs(r))))
        return f"{x:,.{decimals}f}"
    try:
        return format(x, spec)
    except (TypeError, ValueError):  # an integer spec for a float, a numpy scalar...
        return format(float(x), spec)


_DECIMAL = None


def round_numbers(text: str, digits: int = MEANINGFUL_DIGITS) -> str:
    """``text`` (a result's reason or description) with every decimal number rounded to ``digits``
    significant digits by :func:`fmt_value`, for people; integers, identifiers (``arXiv:2504.07347``,
    ``x1.5``, versions such as ``0.1.0``) are left alone.  A result's ``to_dict()`` keeps the full values.

    >>> round_numbers("3342.909 tokens/s (3.342909 tokens/ms), lambda* = 0.0167145, ('E1', 0.8999999999999999)")
    "3,343 tokens/s (3.343 tokens/ms), lambda* = 0.01671, ('E1', 0.9000)"
    >>> round_numbers("arXiv:2504.07347, b_max=512, 1884 states, fluidq 0.1.0, 1,678.04 and -0.5")
    'arXiv:2504.07347, b_max=512, 1884 states, fluidq 0.1.0, 1,678 and -0.5'
    """
    import re

    global _DECIMAL
    if _DECIMAL is None:
        _DECIMAL = re.compile(r"(?<![\w.:,])(-?\d{1,3}(?:,\d{3})+\.\d+|-?\d+\.\d+)(?![\w.]|,\d)")

    def one(m):
        s = m.group(1)
        x = float(s.replace(",", ""))
        if len(s.replace(",", "").replace("-", "").replace(".", "").lstrip("0")) <= digits:
            return s  # already no more digits than meaningful
        return fmt_value(x, digits=digits)

    return _DECIMAL.sub(one, str(text))
