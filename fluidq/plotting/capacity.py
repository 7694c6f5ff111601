"""Plots of batch-time models, capacity and verdict grids."""
from __future__ import annotations

import numpy as np

from . import axes, finish
from .sim import _wrap_title


def plot_batch_time(batch_time, *, b_max=512, points=None, ax=None, path=None):
    """``t(b)`` in ms over ``1..b_max`` (and measured ``points=(tokens, seconds)`` if given)."""
    fig, ax = axes(ax)
    hi = int(max(b_max, np.max(points[0]) if points is not None else 0))
    b = np.arange(1, hi + 1)
    ax.plot(b, 1e3 * np.asarray(batch_time(b)), lw=1.5, label=batch_time.describe())
    if points is not None:
        ax.plot(points[0], 1e3 * np.asarray(points[1]), "o", ms=3, label="measured")
    ax.axvline(b_max, color="grey", ls=":", lw=1, label=f"b_max = {b_max}")
    ax.set_xlabel("batch tokens b")
    ax.set_ylabel("batch time t(b) [ms]")
    ax.legend(fontsize=7)
    return finish(fig, ax, path)


def plot_capacity_vs_bmax(curve, workload=None, *, b_max_values=None, engines=None, ax=None, path=None):
    """Draw a :class:`~fluidq.capacity.curve.CapacityCurveResult`: capacity (tokens/s) as the budget
    ``b_max`` varies, the configured ``b_max`` and, with a workload, the offered load.

    ``engines`` (an engine count, with a workload) adds the load each engine carries when the
    workload is split evenly over that many: where the curve lies above it, that count suffices.

    The curve is computed by :func:`fluidq.capacity.capacity_vs_bmax` (plotting recomputes no analysis):
    the old call ``plot_capacity_vs_bmax(engine, workload, b_max_values=...)`` is now
    ``capacity_vs_bmax(engine, workload, b_max_values=...).plot(engines=...)``; ``workload`` and
    ``b_max_values`` are kept in the signature only to say so.
    """
    from .._validate import integer
    from ..errors import ParameterError

    if not (hasattr(curve, "b_max_values") and hasattr(curve, "configured_b_max")):
        raise ParameterError("curve", type(curve).__name__,
                             "a CapacityCurveResult: fluidq.capacity.capacity_vs_bmax(engine, workload, "
                             "b_max_values=...).plot(engines=...) (plotting draws results and computes no capacity)")
    for name, value in (("workload", workload), ("b_max_values", b_max_values)):
        if value is not None:
            raise ParameterError(name, type(value).__name__, "None with a CapacityCurveResult "
                                 "(give it to fluidq.capacity.capacity_vs_bmax)")
    n = None if engines is None else integer("engines", engines, minimum=1)
    fig, ax = axes(ax)
    x = np.asarray(curve.b_max_values)
    ax.plot(x, np.asarray(curve.tokens_per_s, dtype=float), lw=1.5)
    ax.axvline(curve.configured_b_max, color="grey", ls=":", lw=1, label=f"configured b_max = {curve.configured_b_max}")
    offered = curve.offered_tokens_per_s
    if offered is not None:
        ax.axhline(offered, color="C3", ls="--", lw=1,
                   label="offered load" + (" (one engine)" if n is not None else ""))
        if n is not None:
            ax.axhline(offered / n, color="C2", ls="-.", lw=1.2, label=f"offered load per engine, {n} engines")
    ax.set_xlabel("token budget b_max")
    ax.set_ylabel("capacity [tokens/s]")
    ax.legend(fontsize=7)
    return finish(fig, ax, path)


def _engine_labels(result):
    """One label per engine: its name (``Engine(name=...)``, a profile's name), numbered when repeated."""
    names = [str(d.get("name") or "engine") for d in result.inputs.get("engines", [])]
    if len(names) != len(result.per_engine_tokens_per_s):
        names = ["engine"] * len(result.per_engine_tokens_per_s)
    if len(names) > 1 and len(set(names)) < len(names):
        names = [f"{n} #{i + 1}" for i, n in enumerate(names)]
    return names


def _offered_tokens_per_s(result):
    """The workload's offered token rate ``lambda (m_p + m_d)``, when the result knows the workload."""
    w = result.inputs.get("workload") or {}
    rate = (w.get("arrival") or {}).get("rate_per_s")
    mp, md = w.get("mean_prompt_tokens"), w.get("mean_output_tokens")
    if rate is None or mp is None or md is None:
        return None
    return float(rate) * (float(mp) + float(md))


def plot_capacity(result, *, offered_tokens_per_s=None, ax=None, path=None):
    """Bar chart of the per-engine capacities of a :class:`~fluidq.CapacityResult`.

    One labelled bar per engine (its name), a bar for the total when there are several, the total
    in the title, and a dashed line at the offered load when the workload's rate is known (or given
    as ``offered_tokens_per_s``).
    """
    fig, ax = axes(ax)
    per = [float(x) for x in result.per_engine_tokens_per_s]
    labels = _engine_labels(result)
    colours = ["C0"] * len(per)
    if len(per) > 1:
        per, labels, colours = per + [float(result.tokens_per_s)], labels + ["total"], colours + ["C1"]
    pos = np.arange(len(per))
    bars = ax.bar(pos, per, color=colours, width=0.6)
    ax.bar_label(bars, [f"{v:,.0f}" for v in per], fontsize=7, padding=2)
    ax.set_xticks(pos, labels, rotation=20 if max(len(x) for x in labels) > 14 else 0, fontsize=8)
    ax.set_ylabel("capacity [tokens/s]")
    offered = offered_tokens_per_s if offered_tokens_per_s is not None else _offered_tokens_per_s(result)
    top = max(per)
    if offered is not None and np.isfinite(offered) and offered > 0:
        load = offered / result.tokens_per_s
        ax.axhline(offered, color="C3", ls="--", lw=1.3,
                   label=f"offered load {offered:,.0f} tokens/s (load {load:.2f} of the total)")
        ax.legend(fontsize=7, loc="lower right")
        top = max(top, offered)
    ax.set_ylim(0, 1.15 * top)
    ax.set_xlim(-0.75, len(per) - 0.25)
    req = "" if result.requests_per_s is None else f" = {result.requests_per_s:.3g} req/s"
    n = len(result.per_engine_tokens_per_s)
    ax.set_title(f"capacity: {result.tokens_per_s:,.0f} tokens/s{req} over {n} engine{'s' if n > 1 else ''}",
                 fontsize=9)
    return finish(fig, ax, path)


def plot_verdicts(grid, loads, *, reference_rate_per_s=None, title=None, mark=None, ax=None, path=None):
    """A policy x load grid coloured by verdict; ``reference_rate_per_s`` names the capacity the loads
    are fractions of on the x axis; ``mark`` (one of ``loads``) is outlined and labelled the operating point."""
    fig, ax = axes(ax, figsize=(6.4, 0.5 + 0.45 * len(grid)))
    colours = {"stable": "#4caf50", "unstable": "#e53935", "critical": "#ffb300", "unknown": "#9e9e9e",
               "inaccurate": "#8e24aa"}
    for i, (pol, rs) in enumerate(grid.items()):
        for j, r in enumerate(rs):
            ax.add_patch(__import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
                (j, i), 0.95, 0.9, color=colours.get(r.status.value, "#000")))
            ax.text(j + 0.475, i + 0.45, r.status.value, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(loads))
    ax.set_ylim(0, len(grid))
    ticks = [f"{x:.4g}" for x in loads]
    if mark is not None:
        j = min(range(len(loads)), key=lambda k: abs(loads[k] - mark))
        ax.add_patch(__import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
            (j - 0.02, -0.02), 0.99, len(grid) - 0.04, fill=False, lw=2.0, ec="k", clip_on=False))
        ticks[j] += "\n(operating point)"
    ax.set_xticks([j + 0.475 for j in range(len(loads))], ticks)
    ax.set_yticks([i + 0.45 for i in range(len(grid))], list(grid))
    ax.set_xlabel("offered load (fraction of capacity" + (f" lambda* = {reference_rate_per_s:.4g} req/s)"
                                                          if reference_rate_per_s else ")"))
    if title:
        _wrap_title(ax, title)
    return finish(fig, ax, path)


def plot_stability(result, *, ax=None, path=None):
    """A :class:`~fluidq.StabilityResult`: offered load vs capacity and the policy's own threshold."""
    fig, ax = axes(ax, figsize=(6.4, 2.4))
    colours = {"stable": "#4caf50", "unstable": "#e53935", "critical": "#ffb300", "unknown": "#9e9e9e"}
    ax.barh([0], [result.offered_tokens_per_s], color=colours.get(result.status.value, "#555"), height=0.5,
            label=f"offered ({result.status.value})")
    ax.axvline(result.capacity_tokens_per_s, color="k", lw=1.5, label="capacity (Theorem 2)")
    thr = result.threshold_requests_per_s
    if thr is not None and result.offered_tokens_per_s > 0:
        # the threshold is in requests/s; tokens per request = offered tokens / offered requests
        lam = result.inputs.get("workload", {}).get("arrival", {}).get("rate_per_s")
        if lam:
            ax.axvline(thr * result.offered_tokens_per_s / lam, color="C3", ls="--", lw=1.5,
                       label=f"{result.policy}'s own threshold")
    ax.set_yticks([])
    ax.set_xlabel("tokens per second")
    ax.set_title(f"{result.policy}: {result.status.value} at load {result.load:.3f}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return finish(fig, ax, path)
