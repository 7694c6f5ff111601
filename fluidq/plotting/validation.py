"""Figures of the validation report: one serving case (measured vs simulated), and the error summary.

They draw results ``fluidq.validate`` already computed (a case's run, simulation and capacity
prediction; the report's rows) and recompute nothing; matplotlib is imported inside the functions.
"""
from __future__ import annotations

import numpy as np

__all__ = ["plot_serving_case", "plot_summary"]


def plot_serving_case(run, rep, pred, path=None):
    """Three panels: TTFT per request (measured vs replay), requests waiting per tick, served tokens/s."""
    from . import finish
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 3.6), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    ax1.plot(run.arrival_s, run.ttft_s, ".", ms=3, label="measured (vLLM)")
    ax1.plot(rep.arrival_s, rep.ttft_s, ".", ms=3, label="fluidq replay")
    ax1.set_xlabel("arrival (s)")
    ax1.set_ylabel("TTFT (s)")
    ax1.legend(fontsize=8)
    ts = run.timeseries
    ax2.plot(ts["t"], ts["waiting"], label="measured waiting")
    tr = rep.running_trace
    if tr.size:
        ax2.plot(tr[:, 0], tr[:, 2], label="replay waiting", alpha=0.8)
        ax2.plot(tr[:, 0], tr[:, 1], label="replay running", alpha=0.6, lw=0.8)
    ax2.plot(ts["t"], ts["running"], label="measured running", lw=0.8)
    ax2.set_xlabel("time (s)")
    ax2.set_ylabel("requests")
    ax2.legend(fontsize=7)
    tok = ts["prompt_throughput"] + ts["gen_throughput"]
    ax3.plot(ts["t"], tok, lw=0.8, label="measured served tokens/s")
    m = ts["waiting"] > 0
    if m.any():
        ax3.axhline(tok[m].mean(), color="C0", ls="--", label=f"measured, saturated: {tok[m].mean():.0f}")
    ax3.axhline(pred.tokens_per_s, color="C3", ls="-.", label=f"fluidq capacity: {pred.tokens_per_s:.0f}")
    ax3.set_xlabel("time (s)")
    ax3.set_ylabel("tokens/s")
    ax3.legend(fontsize=7)
    fig.suptitle(run.name, fontsize=10)
    return finish(fig, ax1, path)


def plot_summary(rows, path=None, ax=None):
    """Signed error (%) of every row with one, coloured by pass/miss."""
    from . import axes, finish

    rs = [r for r in rows if r.error_pct is not None]
    fig, ax = axes(ax, figsize=(10, max(2.5, 0.28 * len(rs) + 1)))
    y = np.arange(len(rs))
    col = ["#2a7" if r.status == "pass" else "#d33" if r.status == "miss" else "#888" for r in rs]
    errs = np.array([r.error_pct for r in rs], dtype=float)
    lim = float(min(60.0, max(15.0, np.nanmax(np.abs(errs)) * 1.1))) if errs.size else 15.0
    ax.barh(y, np.clip(errs, -lim, lim), color=col)
    for yi, e in zip(y, errs):  # bars beyond the axis are clipped and labelled
        if abs(e) > lim:
            ax.text(np.sign(e) * lim * 0.98, yi, f"{e:+.0f} %", va="center", ha="right" if e > 0 else "left",
                    fontsize=7, color="white")
    ax.set_xlim(-lim, lim)
    ax.set_yticks(y, [f"{r.case}: {r.quantity}"[:80] for r in rs], fontsize=7)
    ax.axvline(0, color="k", lw=0.8)
    for x in (-10, -5, 5, 10):
        ax.axvline(x, color="k", lw=0.4, ls=":")
    ax.set_xlabel("error (%): predicted vs measured (green pass, red miss, grey no target)")
    ax.invert_yaxis()
    return finish(fig, ax, path)
