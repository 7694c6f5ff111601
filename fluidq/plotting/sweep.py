"""Plots of sweep tables: one column against another, one line per value of a third."""
from __future__ import annotations

from collections import defaultdict

from . import axes, finish

__all__ = ["plot_sweep"]


def plot_sweep(result, *, x: str, y: str, hue: str | None = None, ax=None, path=None, **kw):
    """Mean of ``y`` for each ``x`` (over the other axes), one line per ``hue`` value.

    Rows whose ``y`` is not a number (an error, a status string) are skipped.
    """
    fig, ax = axes(ax)
    groups: dict = defaultdict(lambda: defaultdict(list))
    for r in result.rows:
        yv = r.get(y)
        if isinstance(yv, bool) or not isinstance(yv, (int, float)) or r.get(x) is None:
            continue
        groups[r.get(hue) if hue else y][r[x]].append(float(yv))
    for label, pts in groups.items():
        xs = sorted(pts)
        ax.plot(xs, [sum(pts[v]) / len(pts[v]) for v in xs], marker="o", ms=3, label=str(label), **kw)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if hue:
        ax.legend(title=hue, fontsize="small")
    ax.grid(alpha=0.3)
    return finish(fig, ax, path)
