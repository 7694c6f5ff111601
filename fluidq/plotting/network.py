"""Plots for networks of engines: the network with loads, fluid paths and simulated trajectories."""
from __future__ import annotations

import numpy as np

from . import axes, finish

__all__ = ["plot_network", "plot_fluid_path", "plot_network_sim", "plot_verdict"]


def plot_network(network, *, ax=None, path=None, seed: int = 0):
    """The station graph: nodes coloured by load (green < 0.8 < amber < 1 < red), edges labelled by class."""
    import networkx as nx

    fig, ax = axes(ax, figsize=(6.4, 4.8))
    g = network.graph
    loads = network.loads()
    pos = nx.circular_layout(g) if len(g) <= 6 else nx.spring_layout(g, seed=seed)
    for u, v, d in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[u], pos[v]
        if u == v:
            ax.annotate("", xy=(x0 + 0.08, y0 + 0.12), xytext=(x0 - 0.08, y0 + 0.12),
                        arrowprops=dict(arrowstyle="->", connectionstyle="arc3,rad=-1.5", color="grey"))
            continue
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="-|>", color="grey", shrinkA=18, shrinkB=18,
                                    connectionstyle="arc3,rad=0.15"))
        lx = (x0 + x1) / 2 + 0.5 * 0.15 * (y1 - y0)
        ly = (y0 + y1) / 2 - 0.5 * 0.15 * (x1 - x0)
        ax.text(lx, ly, ",".join(d.get("classes", [])), fontsize=7, color="dimgrey", ha="center", va="center")
    for n in g.nodes:
        rho = loads.get(n, 0.0)
        col = "#4caf50" if rho < 0.8 else ("#ffb300" if rho < 1 else "#e53935")
        ax.scatter([pos[n][0]], [pos[n][1]], s=900, color=col, zorder=3, edgecolors="k")
        ax.text(pos[n][0], pos[n][1], f"{n}\n{rho:.2f}", ha="center", va="center", fontsize=8, zorder=4)
    ax.set_title(f"{network.name}: load per engine ({'DAG' if network.is_dag else 'cyclic'})", fontsize=9)
    ax.set_axis_off()
    xy = np.array(list(pos.values())) if pos else np.zeros((1, 2))
    cx, cy = xy.mean(axis=0)
    half = max(float(np.ptp(xy[:, 0])), float(np.ptp(xy[:, 1])), 1.0) / 2 + 0.4
    ax.set_xlim(cx - half, cx + half)
    ax.set_ylim(cy - half, cy + half)
    return finish(fig, ax, path)


def plot_fluid_path(fp, *, ax=None, path=None, by: str = "buffer", log: bool = False):
    """Fluid tokens per buffer (``by="buffer"``) or per class (``by="class"``) along a fluid path."""
    fig, ax = axes(ax)
    t = fp.times_s
    if by == "class":
        for c, y in fp.by_class().items():
            ax.plot(t, y, lw=1.4, label=c)
    else:
        for j, lab in enumerate(fp.labels):
            ax.plot(t, fp.levels[:, j], lw=1.2, label=lab)
    ax.plot(t, fp.total_tokens, color="k", lw=1.0, ls="--", label="total")
    if log:
        ax.set_yscale("symlog")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("fluid backlog [tokens]")
    title = f"fluid path: {fp.outcome}"
    if fp.growth_factor is not None:
        title += f", x{fp.growth_factor:.3g} per cycle"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return finish(fig, ax, path)


def plot_network_sim(res, *, ax=None, path=None, tokens: bool = True):
    """Simulated backlog per buffer (tokens) or requests in system per class."""
    fig, ax = axes(ax)
    t = res.times_s
    if tokens:
        for lab, y in res.buffer_tokens.items():
            ax.plot(t, y, lw=1.0, label=lab)
        ax.set_ylabel("backlog [tokens]")
    else:
        for c, y in res.in_system.items():
            ax.plot(t, y, lw=1.0, label=c)
        ax.set_ylabel("requests in system")
    ax.set_xlabel("time [s]")
    ax.legend(fontsize=7, ncol=2)
    return finish(fig, ax, path)


def plot_verdict(result, *, ax=None, path=None):
    """A verdict: the fluid path (if any) and, when simulated, the first run's total backlog."""
    fig, ax = axes(ax)
    fp = result.fluid.path
    if fp is not None:
        ax.plot(fp.times_s, fp.total_tokens, color="k", lw=1.4, label="fluid (total tokens)")
    if result.runs:
        r = result.runs[0]
        ax.plot(r.times_s, r.total_tokens, color="C3", lw=0.9, alpha=0.8, label="simulation (total tokens)")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("backlog [tokens]")
    ax.set_title(f"{result.status.value} ({result.decided_by})", fontsize=9)
    if fp is not None or result.runs:
        ax.legend(fontsize=7)
    return finish(fig, ax, path)
