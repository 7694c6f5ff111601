"""Plots of simulation results: queue trajectories, latency CDFs, threshold searches."""
from __future__ import annotations

import numpy as np

from . import axes, finish

__all__ = ["plot_latency_cdf", "plot_threshold", "plot_trajectories"]

_LABEL = {"requests": "requests in system", "tokens": "token backlog (prefill + decode tokens left)"}


# distinct dash patterns, so that runs with identical trajectories (Sarathi and vLLM with chunked
# prefill, say) stay visible one over the other
_STYLES = ("-", (0, (5, 2)), (0, (1, 1.5)), "-.", (0, (6, 2, 1, 2, 1, 2)), (0, (3, 3)), (0, (8, 2, 2, 2)))


def _wrap_title(ax, title, width=None, fontsize=9):
    """Set ``title`` wrapped to the axes' figure width (about 1.9 characters per point of width at 9 pt)."""
    import textwrap

    if width is None:
        inches = ax.figure.get_figwidth() * ax.get_position().width
        width = max(30, int(inches * 72 / (0.55 * fontsize)))
    ax.set_title("\n".join(textwrap.wrap(str(title), width)), fontsize=fontsize)


def plot_trajectories(results, *, key: str = "requests", ax=None, path=None, logy: bool = False, title=None):
    """Backlog over time, one line per run.

    Each run gets its own colour and dash pattern, and runs drawn later are thinner, so a line that
    coincides with an earlier one stays visible on top of it; a run whose trajectory is identical to
    an earlier one's says so in the legend (``"= sarathi"``).

    Parameters
    ----------
    results : dict of str -> SimResult, or a sequence of SimResult
        Runs to draw (labelled by key, or by policy name).
    key : {"requests", "tokens"}
        Requests in the system or remaining tokens.
    logy : bool
        Logarithmic y axis (diverging and flat runs on one plot).
    title : str, optional
        Wrapped to the figure's width.
    """
    if not isinstance(results, dict):
        results = {r.policy: r for r in results}
    fig, ax = axes(ax)
    drawn = []  # (label, t, y) of the runs drawn so far
    n = len(results)
    for i, (label, r) in enumerate(results.items()):
        t = np.append(r.backlog["t_s"], r.end_s)
        y = np.append(r.backlog[key], r.backlog[key][-1])
        same = next((lab for lab, t0, y0 in drawn if t0.shape == t.shape and np.array_equal(t0, t)
                     and np.array_equal(y0, y)), None)
        drawn.append((label, t, y))
        if t.size > 20000:  # thin very long series for drawing (the step shape is kept)
            idx = np.unique(np.linspace(0, t.size - 1, 20000).astype(int))
            t, y = t[idx], y[idx]
        lw = 1.0 + 1.4 * (n - 1 - i) / max(1, n - 1)  # the first run widest, the last thinnest, on top
        ax.step(t, y, where="post", lw=lw, ls=_STYLES[i % len(_STYLES)], color=f"C{i % 10}", zorder=2 + i,
                label=f"{label} (= {same}: identical trajectory)" if same else str(label))
    ax.set_xlabel("time [s]")
    ax.set_ylabel(_LABEL.get(key, key))
    if logy:
        ax.set_yscale("symlog", linthresh=10)
    if title:
        _wrap_title(ax, title)
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
