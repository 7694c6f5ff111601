"""Shared pieces of result objects: statuses, the one threshold result, dict conversion and number
formatting (internal).

:class:`ThresholdResult` is what every stability threshold returns (closed form, renewal-reward, DTMC
bisection, simulation bisection): one class, its ``status`` a :class:`Status`.

Two rules hold for every face of fluidq: JSON has no ``NaN``/``Infinity`` (``plain`` turns a
non-finite float into ``null``), and a human table or message never prints ``nan`` or ``inf``
(``fmt_value`` prints an undefined value as an en dash ``–``; the text next to it says why).
"""
from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field

import numpy as np


class Status(str, enum.Enum):
    """Stability verdicts and threshold-search outcomes. ``str``-valued: ``Status.STABLE == "stable"``.

    A verdict is ``stable``, ``unstable``, ``critical``, ``unknown`` or ``inaccurate``; a threshold
    (:class:`ThresholdResult`) is ``resolved`` (bracket as narrow as asked), ``inconclusive`` (a verdict
    inside the bracket could not be reached; the bracket is still valid) or ``unbracketed`` (no bracket
    found in the search range).

    Compare it, or read its text with ``str()`` or ``.value``.
    """

    STABLE = "stable"
    UNSTABLE = "unstable"
    CRITICAL = "critical"
    UNKNOWN = "unknown"
    INACCURATE = "inaccurate"
    RESOLVED = "resolved"
    INCONCLUSIVE = "inconclusive"
    UNBRACKETED = "unbracketed"

    def __str__(self) -> str:
        return self.value


class Result:
    """The base of fluidq's verdict and threshold results (the result protocol of the core layer).

    A result is a frozen dataclass with

    * ``status``: a :class:`Status` (the verdict, or the outcome of a threshold search);
    * ``inputs``: a dict of what it was computed from (JSON-ready through :func:`plain`);
    * ``to_dict()``: JSON-ready builtins (no ``NaN``/``Infinity``);
    * ``to_frame()``: a one-row ``pandas.DataFrame`` of the scalar entries of ``to_dict()`` (results with
      tables of their own, such as a simulation's requests, override it);
    * ``plot(ax=None, path=None)`` where a figure means something (imports :mod:`fluidq.plotting` inside
      the method, the one upward import the layers allow).

    It adds no fields (subclasses stay plain frozen dataclasses); ``tests/core/test_result_protocol.py``
    lists which results of the analyses follow it.
    """

    __slots__ = ()

    def to_dict(self) -> dict:  # pragma: no cover - every subclass writes its own
        return plain({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")})

    def to_frame(self):
        """A one-row ``pandas.DataFrame`` of the scalar entries of :meth:`to_dict` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(f"{type(self).__name__}.to_frame() needs pandas: pip install pandas") from exc
        row = {k: v for k, v in self.to_dict().items() if v is None or isinstance(v, (str, bool, int, float))}
        return pd.DataFrame([row])


@dataclass(frozen=True)
class ThresholdResult(Result):
    """``lambda*``, the arrival rate where a policy stops being stable, with its method and bracket.

    Every threshold of fluidq returns this class: :func:`fluidq.stability_threshold` (closed form,
    renewal-reward, DTMC or simulation) and :func:`fluidq.find_threshold` (simulation bisection).

    Attributes
    ----------
    arrival_rate_per_s : float
        The point estimate (requests per second); the engine is stable below it.
    lower_per_s, upper_per_s : float
        A bracket that contains the threshold (numerical: bisection tolerance and truncation;
        simulation: the highest rate judged bounded, 0 when none was, and the lowest judged growing,
        inf when none was).  :func:`fluidq.stability_threshold` with ``method="simulation"`` starts the
        search's bracket at the proven capacity (Theorem 2(a)'s ``sup_b b/t(b)``, the ``k_max`` region's
        rate, or with a KV cache the bound without it, in requests per second), above which no scheduler is
        stable, so that it agrees with :func:`fluidq.check_stability`: that end is taken as growing without
        being simulated, ``upper_per_s`` is at most the capacity (kept in ``details["upper_bound_per_s"]``),
        and the reason says when the upper end is the capacity.  :func:`fluidq.find_threshold` reports its
        bisection bracket as run (``unstable_from_per_s`` gives it such a proven end).
    method : str
        ``"closed_form"``, ``"renewal"``, ``"dtmc"``, ``"simulation"`` or ``"flow_balance"`` (a work-conserving
        scheduler on an engine whose batch time reads the batch composition: vLLM's flow balance,
        :func:`fluidq.dtmc.flow_basis.flow_balance_capacity`).
    policy : str
    work_conserving_rate_per_s : float
        Theorem 2's ``capacity / (m_p + m_d)`` (arXiv:2504.07347), the threshold of every
        work-conserving policy, for comparison.
    reason : str
    expression : str or None
        A closed form when one exists.
    details : dict
        Method-specific numbers (the renewal curve, chain sizes, ...).
    status : Status
        ``RESOLVED``, ``INCONCLUSIVE`` or ``UNBRACKETED`` (see :class:`Status`).
    confidence : float or None
        Simulation: lower bound on the probability that every verdict used is right, hence that the
        bracket holds the threshold.  ``None`` for the numerical methods.
    steps : tuple of dict
        Simulation: the rates tried, in order, with their verdicts.
    horizon_s, n_replications : optional
        Simulation: the length and number of the runs at each rate.
    inputs : dict
        What the search was run with.
    """

    arrival_rate_per_s: float
    lower_per_s: float
    upper_per_s: float
    method: str
    policy: str
    work_conserving_rate_per_s: float
    reason: str
    expression: str | None = None
    details: dict = field(default_factory=dict, repr=False)
    status: Status = Status.RESOLVED
    confidence: float | None = None
    steps: tuple = ()
    horizon_s: float | None = None
    n_replications: int | None = None
    inputs: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not isinstance(self.status, Status):
            object.__setattr__(self, "status", Status(self.status))

    @property
    def error_bound_per_s(self) -> float:
        """``max(upper - rate, rate - lower)``."""
        return max(self.upper_per_s - self.arrival_rate_per_s, self.arrival_rate_per_s - self.lower_per_s)

    @property
    def fraction_of_capacity(self) -> float:
        """``lambda* / lambda*_work-conserving``."""
        return self.arrival_rate_per_s / self.work_conserving_rate_per_s

    @property
    def tokens_per_s(self) -> float:
        return self.arrival_rate_per_s * self.details.get("mean_tokens", float("nan"))

    # the names the simulation search's result used before the two classes were one
    @property
    def low_rate_per_s(self) -> float:
        return self.lower_per_s

    @property
    def high_rate_per_s(self) -> float:
        return self.upper_per_s

    @property
    def fluid_rate_per_s(self) -> float:
        return self.work_conserving_rate_per_s

    @property
    def relative_to_fluid(self) -> float:
        return self.fraction_of_capacity

    def to_dict(self) -> dict:
        d = {"arrival_rate_per_s": self.arrival_rate_per_s, "lower_per_s": self.lower_per_s,
             "upper_per_s": self.upper_per_s, "error_bound_per_s": self.error_bound_per_s,
             "method": self.method, "policy": self.policy, "status": self.status,
             "work_conserving_rate_per_s": self.work_conserving_rate_per_s,
             "fraction_of_capacity": self.fraction_of_capacity, "reason": self.reason,
             "expression": self.expression,
             "details": {k: v for k, v in self.details.items() if k != "curve"}}
        if self.confidence is not None:
            # a simulation search: its bracket under the names it always had, and what it ran
            d.update({"low_rate_per_s": self.lower_per_s, "high_rate_per_s": self.upper_per_s,
                      "fluid_rate_per_s": self.work_conserving_rate_per_s,
                      "relative_to_fluid": self.fraction_of_capacity, "confidence": self.confidence,
                      "steps": list(self.steps), "horizon_s": self.horizon_s,
                      "n_replications": self.n_replications})
        d["inputs"] = self.inputs
        return plain(d)

    def plot(self, ax=None, path=None):
        """A simulation search: the rates tried and the bracket; otherwise the policy's threshold against
        the work-conserving bound (with the renewal curve when there is one)."""
        if self.confidence is not None:
            from .plotting.sim import plot_threshold

            return plot_threshold(self, ax=ax, path=path)
        from .plotting.dtmc import plot_threshold

        return plot_threshold(self, ax=ax, path=path)


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


def line_slope(t, y) -> float:
    """The least-squares slope of ``y`` against ``t`` (a backlog's growth per second): the one fit of every
    result's slope (a simulated run's backlog, its fluid path, a streamed summary's grid, a network run's
    requests in system, a served run's measured backlog).

    Fitted about the means (``sum (t - mean t)(y - mean y) / sum (t - mean t)^2``), so a window far from 0 or
    of a few subnormal seconds loses nothing to scaling (``np.polyfit``'s design matrix overflows there); NaN
    with fewer than two points, or when the window cannot be resolved (its spread squared is 0 or not finite)
    or the slope is not finite."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if t.size < 2 or t.size != y.size:
        return math.nan
    with np.errstate(all="ignore"):
        tw = t - t.mean()
        den = float(np.dot(tw, tw))
        slope = float(np.dot(tw, y - y.mean())) / den if den > 0 and math.isfinite(den) else math.nan
    return slope if math.isfinite(slope) else math.nan


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


def fmt_load(x) -> str:
    """A load (a fraction of a capacity) for people: :data:`MEANINGFUL_DIGITS` significant digits, as the
    report's tables print it (``0.7532``, ``1.126``); ``–`` when undefined.

    Load 1 is the boundary between stable and unstable, so a load other than 1 never reads as 1: one that
    rounds to it gets the digits that show its side (``0.99996`` -> ``0.99996``, not ``1.000``).

    >>> fmt_load(0.7532), fmt_load(0.99996), fmt_load(1.00004), fmt_load(1), fmt_load(float("nan"))
    ('0.7532', '0.99996', '1.00004', '1.000', '–')
    """
    text = fmt_value(x, digits=MEANINGFUL_DIGITS)
    if not is_defined(x) or float(x) == 1:
        return text
    for digits in range(MEANINGFUL_DIGITS + 1, 18):  # 17 significant digits tell any two doubles apart
        if float(text.replace(",", "")) != 1:
            break
        text = fmt_value(x, digits=digits)
    return text


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
