"""Plots of simulation results: queue trajectories, latency CDFs, threshold searches."""
from __future__ import annotations

import numpy as np

from . import axes, finish

__all__ = ["plot_latency_cdf", "plot_threshold", "plot_trajectories"]

_LABEL = {"requests": "requests in system", "tokens": "token backlog (prefill + decode tokens left)"}


def plot_trajectories(results, *, key: str = "requests", ax=None, path=None, logy: bool = False, title=None):
    """Backlog over time, one line per run.

    Parameters
    ----------
    results : dict of str -> SimResult, or a sequence of SimResult
        Runs to draw (labelled by key, or by policy name).
    key : {"requests", "tokens"}
        Requests in the system or remaining tokens.
    logy : bool
        Logarithmic y axis (diverging and flat runs on one plot).
    """
    if not isinstance(results, dict):
        results = {r.policy: r for r in results}
    fig, ax = axes(ax)
    for label, r in results.items():
        t = np.append(r.backlog["t_s"], r.end_s)
        y = np.append(r.backlog[key], r.backlog[key][-1])
        if t.size > 20000:  # thin very long series for drawing (the step shape is kept)
            idx = np.unique(np.linspace(0, t.size - 1, 20000).astype(int))
            t, y = t[idx], y[idx]
        ax.step(t, y, where="post", lw=1.2, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(_LABEL.get(key, key))
    if logy:
        ax.set_yscale("symlog", linthresh=10)
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return finish(fig, ax, path)


def plot_latency_cdf(results, *, metric: str = "ttlt_s", ax=None, path=None, logx: bool = True):
    """Empirical CDFs of a latency metric (``ttft_s``, ``ttlt_s``, ``tpot_s``, ``latency_per_token_s``)."""
    if not isinstance(results, dict):
        results = {r.policy: r for r in results}
    fig, ax = axes(ax)
    for label, r in results.items():
        x = r.latencies()[metric]
        x = np.sort(x[np.isfinite(x) & (r.requests["arrival_s"] >= r.warmup_s)])
        if x.size == 0:
            continue
        ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", lw=1.2, label=f"{label} (n={x.size})")
    ax.set_xlabel(f"{metric.removesuffix('_s')} [s]")
    ax.set_ylabel("fraction of finished requests")
    if logx:
        ax.set_xscale("log")
    ax.legend(fontsize=7)
    return finish(fig, ax, path)


def plot_threshold(result, *, ax=None, path=None):
    """The rates tried by :func:`fluidq.find_threshold`, their slope intervals and the bracket."""
    fig, ax = axes(ax)
    colours = {"growing": "C3", "bounded": "C2", "inconclusive": "C7"}
    for s in result.steps:
        lo, hi = s["slope_ci"]
        m = s["slope_tokens_per_s"]
        ax.errorbar([s["rate_per_s"]], [m], yerr=[[m - lo], [hi - m]] if np.isfinite(lo) else None, fmt="o",
                    color=colours[s["verdict"]], ms=4)
    ax.axvspan(result.low_rate_per_s, min(result.high_rate_per_s, ax.get_xlim()[1]), color="C1", alpha=0.2,
               label="bracket")
    ax.axvline(result.fluid_rate_per_s, color="grey", ls=":", label="Theorem 2 lambda*")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("arrival rate [req/s]")
    ax.set_ylabel("token-backlog slope [tokens/s]")
    ax.legend(fontsize=7)
    return finish(fig, ax, path)
