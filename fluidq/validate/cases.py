"""Validation cases: described in TOML files, run by kind, each returning rows of the summary table.

A case file (``validation/cases/*.toml``) has ``name``, ``kind``, ``source``, ``fast`` (part of the
fast subset) and kind-specific keys (paths are relative to ``validation/data/``):

``serving_run``
    A measured vLLM run with operator profiles of the same GPU: predicted capacity and binding
    limit vs the served throughput over the saturated interval; predicted backlog growth vs the
    measured one; the run's own arrivals replayed and TTFT/TPOT/latency compared with the
    measured ones and with the peer simulator's errors.
``serving_run_measured``
    Measurements only (an engine fluidq does not model): rows marked ``info``.
``peer_vidur``
    fluidq's capacity from Vidur's profiles against Vidur's simulated saturation.
``batch_time_fit``
    Each profile's fitted models and held-out MAPE (``fluidq.fit_batch_time``).
``hybrid_batch``
    Sarathi-Serve Table 2: hybrid vs pure prefill batches of equal total tokens.
``profile_vs_measured``
    Whole-iteration times built from operator profiles vs batch times measured by another team.
``harness_runs``
    Runs written by ``validation/gpu/harness.py``.

Where each part lives (this module keeps the registry, :data:`KINDS`, :func:`load_cases` and :func:`run_case`, and
re-exports every name below from its old place):

``case_rows``
    :class:`Row`, :class:`Case`, :class:`CaseResult` and the table's cell formatting and scoring.
``case_inputs``
    What a case reads besides its run: data files, layout, model facts, communication, a planned KV capacity.
``case_run_folder``
    :func:`case_for_run`: a ``serving_run`` case from a vLLM run folder alone (``fluidq validate --run``).
``case_serving``
    The kinds ``serving_run``, ``serving_run_measured`` and ``harness_runs``.
``case_profiles``
    The kinds ``peer_vidur``, ``batch_time_fit``, ``hybrid_batch`` and ``profile_vs_measured``.

The measured side is :mod:`fluidq.validate.runs` (the run's own files, never a case's expected answer); the
predicted side :mod:`~fluidq.validate.deployment`, :mod:`~fluidq.validate.predict` and
:mod:`~fluidq.validate.replay`; the case modules set the two side by side.
"""
from __future__ import annotations

import time
from pathlib import Path

from .._io import read_text, toml_loads
from ..errors import DataError, UnknownNameError
# the pieces, re-exported from their old place (fluidq.validate.cases.NAME keeps working)
from .case_inputs import (_TMP, _case_comm, _case_facts, _copy_folder, _n_layers, _plain_path,  # noqa: F401
                          _planned_kv, _user_paths, run_layout)
from .case_profiles import (_batch_time_fit, _hybrid_batch, _kv_from_memory, _load_measured,  # noqa: F401
                            _peer_vidur, _profile_vs_measured)
from .case_rows import (Case, CaseResult, Row, _err, _fmt, _interval_table, _interval_words,  # noqa: F401
                        _status)
from .case_run_folder import _check_served_model, case_for_run  # noqa: F401
from .case_serving import (_NO_LATENCY_CI, _RUN_MEAN_TARGETS, _harness_runs, _serving_run,  # noqa: F401
                           _serving_run_measured)

__all__ = ["Row", "Case", "CaseResult", "load_cases", "run_case", "KINDS"]


def load_cases(cases_dir) -> list[Case]:
    """All ``*.toml`` cases in ``cases_dir``, sorted by file name."""
    cases_dir = Path(cases_dir)
    if not cases_dir.is_dir():
        raise DataError(f"{cases_dir}: no such cases folder")
    out = []
    for p in sorted(cases_dir.glob("*.toml")):
        spec = toml_loads(read_text("case file", p, what="case file"), where=str(p))
        for k in ("name", "kind"):
            if k not in spec:
                raise DataError(f"{p}: missing key {k!r}")
        if spec["kind"] not in KINDS:
            raise UnknownNameError("case kind", spec["kind"], KINDS)
        out.append(Case(name=spec["name"], kind=spec["kind"], source=spec.get("source", ""),
                        fast=bool(spec.get("fast", False)), spec=spec, path=str(p)))
    return out



KINDS = {"serving_run": _serving_run, "serving_run_measured": _serving_run_measured, "peer_vidur": _peer_vidur,
         "batch_time_fit": _batch_time_fit, "hybrid_batch": _hybrid_batch,
         "profile_vs_measured": _profile_vs_measured, "harness_runs": _harness_runs}


def run_case(case: Case, data_dir, **ctx) -> CaseResult:
    """Run one case; the rows carry pass/miss against its targets."""
    if case.kind not in KINDS:
        raise UnknownNameError("case kind", case.kind, KINDS)
    t0 = time.time()
    try:
        res = KINDS[case.kind](case, Path(data_dir), ctx)
    except (FileNotFoundError, DataError) as exc:
        res = CaseResult(case=case, rows=(Row(case=case.name, source=case.source, quantity="(case could not run)",
                                              predicted=None, measured=None, status="skip", note=str(exc)),))
    return CaseResult(case=res.case, rows=res.rows, markdown=res.markdown, figures=res.figures, data=res.data,
                      seconds=time.time() - t0, figure_inputs=res.figure_inputs)
