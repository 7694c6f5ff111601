"""The summary table's pieces: a :class:`Row` (one predicted-vs-measured line), a :class:`Case` (one case file as
read) and a :class:`CaseResult` (a case's rows, report text, figure and data), with the cell formatting and scoring
every case kind shares (:func:`_err`, :func:`_status`, :func:`_fmt`, :func:`_interval_table`,
:func:`_interval_words`).

Siblings: :mod:`fluidq.validate.cases` (the registry of case kinds, loading and running a case),
:mod:`~fluidq.validate.case_inputs` (what a case reads besides its run), :mod:`~fluidq.validate.case_run_folder`
(a case built from a run folder alone), :mod:`~fluidq.validate.case_serving` (the serving-run kinds),
:mod:`~fluidq.validate.case_profiles` (the profile and peer kinds).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..results import Result, plain


@dataclass(frozen=True, kw_only=True)
class Row:
    """One line of the summary table.

    ``error_pct`` is ``100 (predicted - measured)/measured``; ``status`` is ``"pass"`` (target met),
    ``"miss"`` (target missed: reported, not hidden), ``"info"`` (no target) or ``"skip"``.
    ``measured_window`` says what the measured number was read over (the run's ticks or requests, in seconds of
    the run) and ``measured_ci`` is its 95 % interval ``(low, high)`` (issue 16: every number states its window
    and interval); empty / None on rows that carry no measurement of a run, or where none can be given (the
    note says why).
    """

    case: str
    source: str
    quantity: str
    predicted: float | str | None
    measured: float | str | None
    unit: str = ""
    error_pct: float | None = None
    target: str = ""
    status: str = "info"
    note: str = ""
    measured_window: str = ""
    measured_ci: tuple | None = None

    def to_dict(self):
        return plain({k: getattr(self, k) for k in self.__dataclass_fields__})


@dataclass(frozen=True, kw_only=True)
class Case:
    """A case read from a TOML file."""

    name: str
    kind: str
    source: str
    fast: bool
    spec: dict
    path: str = ""


@dataclass(frozen=True, kw_only=True, eq=False)
class CaseResult(Result):
    case: Case
    rows: tuple
    markdown: str = ""
    figures: tuple = ()
    data: dict = field(default_factory=dict)
    seconds: float = 0.0
    # what the case's figure draws, (measured run, simulated run, capacity prediction); empty when the
    # case has no figure.  Not part of to_dict (the run's arrays are in the data files already).
    figure_inputs: tuple = field(default=(), repr=False)

    @property
    def inputs(self) -> dict:
        """The case: its name, kind, data source and file."""
        return {"case": self.case.name, "kind": self.case.kind, "source": self.case.source, "path": self.case.path}

    def plot(self, path=None):
        """The case's figure: TTFT per request, requests waiting, served tokens/s (serving cases only)."""
        if not self.figure_inputs:
            raise ParameterError("case", self.case.name, "a serving case with a simulated run (this case draws no figure)")
        from ..plotting.validation import plot_serving_case

        return plot_serving_case(*self.figure_inputs, path=path)

    def to_dict(self):
        return plain({"name": self.case.name, "kind": self.case.kind, "source": self.case.source,
                      "rows": [r.to_dict() for r in self.rows], "figures": list(self.figures),
                      "data": self.data, "seconds": self.seconds})


def _err(pred, meas):
    if pred is None or meas is None or not np.isfinite(pred) or not np.isfinite(meas) or meas == 0:
        return None
    return 100.0 * (pred - meas) / meas


def _fmt(v):
    """A report cell (the summary table's and a case's interval table's): blank for no value, an en dash for an
    undefined one (NaN, an infinity), never nan/inf; thousands separated from 1,000, one decimal from 10, three
    significant figures below."""
    from ..results import fmt_value, is_defined

    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if not is_defined(v):
        return fmt_value(v)
    a = abs(v)
    s = f"{v:,.0f}" if a >= 1000 else f"{v:.3g}" if a < 10 else f"{v:.1f}"
    return s


def _interval_table(rows) -> list:
    """Markdown lines: every measured number of ``rows`` with what it was read over and its 95 % interval (issue 16
    item 7), in the summary table's cells (:func:`_fmt`); empty when no row has a window."""
    windowed = [r for r in rows if r.measured_window]
    if not windowed:
        return []
    md = ["", "| quantity | measured | 95 % interval | read over |", "|---|---|---|---|"]
    for r in windowed:
        ci = f"{_fmt(r.measured_ci[0])}-{_fmt(r.measured_ci[1])}" if r.measured_ci is not None else "none"
        md.append(f"| {r.quantity} | {_fmt(r.measured)} {r.unit} | {ci} | {r.measured_window} |".replace("  ", " "))
    return md


def _interval_words(pred, ci, mean, aim):
    """What the measured 95 % interval lets one say about a prediction: its half-width in percent of the
    measured mean, whether the prediction lies inside it, and -- when the half-width exceeds the ``aim`` --
    that the window cannot resolve the aim (issue 16: every number states its window and interval)."""
    lo, hi = ci
    if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(mean) and mean > 0 and pred is not None
            and np.isfinite(pred)):
        return ""
    half = 100.0 * (hi - lo) / 2.0 / mean
    where = "inside" if lo <= pred <= hi else "outside"
    out = f"; the prediction lies {where} the measured 95 % CI (half-width ±{half:.1f} %)"
    if half > aim and where == "inside":  # outside, the error is resolved: at least the distance to the CI
        out += f", too wide to resolve the {aim:g} % aim"
    return out


def _status(err, limit):
    if err is None:
        return "miss"
    return "pass" if abs(err) <= limit else "miss"
