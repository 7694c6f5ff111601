"""Reading and judging the runs written by the GPU harness (``validation/gpu/harness.py``).

A harness *session* is a folder with ``harness_meta.json`` (device, date, model config, budgets,
the measured batch-time table ``{"tokens", "kv_tokens", "seconds"}``, the loads and schedulers)
and one sub-folder per run in the vLLM run format (``vllm_requests.jsonl``,
``vllm_timeseries.csv``, ``vllm_meta.json`` whose ``harness`` entry names the scheduler, the
load and whether the scheduler is work-conserving).

fluidq's prediction is made here again from the session's own measured table (a context-aware
fit, then :func:`~fluidq.validate.predict.predict_capacity`), not read from the harness.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..errors import DataError

__all__ = ["find_sessions", "session_prediction", "evaluate_harness_runs"]


def find_sessions(root) -> list[Path]:
    """Folders under ``root`` (itself included) holding a ``harness_meta.json``."""
    root = Path(root)
    if not root.exists():
        return []
    found = sorted({p.parent for p in root.rglob("harness_meta.json")})
    return found


def session_prediction(session: Path):
    """``(meta, prediction, fit)`` for a harness session."""
    from ..batchtime.fit import fit_batch_time
    from ..batchtime.operators import FittedIterationModel
    from .predict import predict_capacity
    from .runs import read_run

    meta = json.loads((session / "harness_meta.json").read_text())
    tab = meta.get("batch_time_table") or {}
    for k in ("tokens", "kv_tokens", "seconds"):
        if not tab.get(k):
            raise DataError(f"{session}/harness_meta.json: batch_time_table has no {k!r}")
    fit = fit_batch_time(tab["tokens"], tab["seconds"], kind="context-aware", kv_tokens=tab["kv_tokens"])
    model = FittedIterationModel(fit.model, name=str(session.name))
    p, o = [], []
    for r in meta.get("runs", []):
        run = read_run(session / r)
        p.append(run.input_tokens)
        o.append(run.output_tokens)
    if not p:
        raise DataError(f"{session}/harness_meta.json: lists no runs")
    pred = predict_capacity(model, np.concatenate(p), np.concatenate(o), b_max=int(meta["b_max"]),
                            k_max=meta.get("k_max"), kv_capacity_tokens=meta.get("kv_capacity_tokens"))
    return meta, pred, fit


def evaluate_harness_runs(root, *, case_name: str, source: str, limit_pct: float = 10.0):
    """Rows for every harness run under ``root`` (see the module docstring)."""
    from .cases import Row, _err, _status
    from .runs import queue_growth, read_run, saturated_throughput

    sessions = find_sessions(root)
    if not sessions:
        return ([Row(case=case_name, source=source, quantity="(no harness runs yet)", predicted=None, measured=None,
                     status="skip", note=f"nothing under {root}; run validation/gpu/run_gpu.sh (in a source checkout of fluidq) on a CUDA machine")],
                "", {})
    rows, md, out = [], [], {}
    for s in sessions:
        meta, pred, fit = session_prediction(s)
        label = f"{meta.get('device', '?')} {meta.get('date', '')}".strip()
        md.append(f"**{s.name}** ({label}, {meta.get('mode', '')} mode): {fit.describe()}; prediction: {pred.reason}.")
        rows.append(Row(case=case_name, source=label, quantity="t(b, kv) fit of the harness table (held-out MAPE)",
                        predicted=100 * fit.mape_heldout, measured=None, unit="%", target="<= 5 %",
                        status="pass" if fit.mape_heldout <= 0.05 else "miss", note=f"{fit.n_points} measured batches"))
        out[s.name] = {"prediction": pred.to_dict(), "fit": fit.to_dict() | {"residuals_s": None}, "runs": {}}
        for r in meta.get("runs", []):
            run = read_run(s / r)
            h = run.meta.get("harness", {})
            load = h.get("load")
            try:
                load = float("nan") if load is None else float(load)
            except (TypeError, ValueError):
                raise DataError(f"{s / r}: harness load {load!r} is not a number") from None
            at = f"at load {load:g}" if math.isfinite(load) else "at an unstated load"
            wc = bool(h.get("work_conserving", False))
            sched = h.get("scheduler", "?")
            sat = saturated_throughput(run)
            qg = queue_growth(run)
            out[s.name]["runs"][r] = {"saturated": sat, "queue_growth": qg, "load": load, "scheduler": sched}
            it_path = s / r / "iterations.csv"
            if it_path.exists():
                it = np.genfromtxt(it_path, delimiter=",", names=True, ndmin=1)
                if it.size:
                    pr = np.asarray(fit.model(np.maximum(it["tokens"], 1), it["kv_tokens"]), dtype=float)
                    mape = float(np.mean(np.abs(pr - it["seconds"]) / it["seconds"]) * 100)
                    bias = float(np.mean((pr - it["seconds"]) / it["seconds"]) * 100)
                    rows.append(Row(case=case_name, source=label, quantity=f"in-run iteration times vs t(b, kv), {sched} "
                                    f"{at} (MAPE)", predicted=mape, measured=None, unit="%",
                                    status="info", note=f"{it.size} iterations; mean signed error {bias:+.1f} %"))
            if load > 1:
                e = _err(pred.tokens_per_s, sat["tokens_per_s"])
                rows.append(Row(case=case_name, source=label, quantity=f"capacity, {sched} {at}",
                                predicted=pred.tokens_per_s, measured=sat["tokens_per_s"], unit="tokens/s", error_pct=e,
                                target=f"within ±{limit_pct:g} %" if wc else "",
                                status=_status(e, limit_pct) if wc else "info",
                                note=("work-conserving: serves the capacity" if wc else
                                      "not work-conserving: may serve less than the capacity (no target)")
                                     + f"; binding {pred.binding}"))
            else:
                off = qg["offered_tokens_per_s"]
                slope = qg["backlog_tokens_per_s"] if np.isfinite(qg["backlog_tokens_per_s"]) else 0.0
                stable = slope <= 0.1 * off if np.isfinite(off) else True
                rows.append(Row(case=case_name, source=label, quantity=f"backlog growth, {sched} {at}",
                                predicted=0.0, measured=slope, unit="tokens/s", target="<= 10 % of offered" if wc else "",
                                status=("pass" if stable else "miss") if wc else "info",
                                note=f"offered {off:.0f} tokens/s; the theory says a work-conserving scheduler is "
                                     "stable below capacity"))
    return rows, "\n\n".join(md), out
