"""Plots for networks of engines: the network with loads, fluid paths and simulated trajectories.

Fluid paths and simulations live on different time scales (a fluid path from a given backlog may
last hundreds of thousands of seconds while a simulation runs a few hundred, or the other way
round), so :func:`plot_verdict` draws them on separate panels, each on its own time axis, and every
legend says where its curve starts (the fluid path's initial backlog, an empty or given initial
state for the simulation).
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import FluidqError
from . import axes, finish

__all__ = ["LOAD_BANDS", "plot_fluid_path", "plot_network", "plot_network_sim", "plot_verdict"]

LOAD_BANDS = ((0.8, "#4caf50", "load < 0.8"), (1.0, "#ffb300", "0.8 <= load < 1"),
              (float("inf"), "#e53935", "load >= 1 (overloaded)"))
"""Colour bands of :func:`plot_network`: ``(upper bound, colour, legend text)``."""
_ROUTER_COLOUR = "#cfd8dc"
_END_COLOUR = "#eeeeee"
IN, OUT = "arrivals", "departures"


def _load_colour(rho: float) -> str:
    for hi, col, _ in LOAD_BANDS:
        if rho < hi:
            return col
    return LOAD_BANDS[-1][1]


def network_drawing_graph(network):
    """The graph :func:`plot_network` draws: stations, routers, arrivals and departures.

    Returns a ``networkx.DiGraph`` whose nodes have ``kind`` (``"station"``, ``"router"``, ``"arrivals"``,
    ``"departures"``) and whose edges have ``kind`` (``"route"``: requests of ``classes`` go from one hop's
    point to the next; ``"router"``: a router hands requests to one of its engines, with its
    ``probability`` for a random router).  Unlike :attr:`Network.graph` routers are nodes of their own.
    """
    import networkx as nx

    from ..network.model import Choice, Fork, Hop, Join

    g = nx.DiGraph()
    g.add_node(IN, kind="arrivals")
    for s in network.stations:
        g.add_node(s.name, kind="station")
    routers = {r.name: r for r in network.routers}
    for r in network.routers:
        g.add_node(r.name, kind="router", policy=r.policy)
        for k, e in enumerate(r.engines):
            p = r.probabilities[k] if r.probabilities is not None else None
            g.add_edge(r.name, e, kind="router", classes=[], probability=p)
    g.add_node(OUT, kind="departures")

    def link(prev, point, cname):
        for u in prev:
            if g.has_edge(u, point):
                if cname not in g[u][point]["classes"]:
                    g[u][point]["classes"].append(cname)
            else:
                g.add_edge(u, point, kind="route", classes=[cname])

    def after(point):  # requests leave a router's hop from the engine that served them
        return set(routers[point].engines) if point in routers else {point}

    def walk(steps, prev, cname):
        forks = {}
        for s in steps:
            if isinstance(s, Hop):
                link(prev, s.engine, cname)
                prev = after(s.engine)
            elif isinstance(s, Choice):
                new = set()
                for p, st in s.options:
                    if p > 0:
                        new |= walk(st, set(prev), cname)
                prev = new
            elif isinstance(s, Fork):
                forks[s.name] = (frozenset(prev), [walk(b, set(prev), cname) for b in s.branches])
            elif isinstance(s, Join):
                at_fork, ends = forks.pop(s.name, (frozenset(), []))
                # the main line counts only if it served something between the fork and the join
                prev = set() if frozenset(prev) == at_fork else set(prev)
                for end in ends:
                    prev |= end
        return prev

    for c in network.classes:
        link(walk(c.route, {IN}, c.name), OUT, c.name)
    return g


def _layers(g):
    """Column of each node: arrivals first, departures last, the others by hops from the arrivals.

    Acyclic drawings use the longest path from the arrivals (a node comes after everything that
    feeds it); cyclic ones the shortest.
    """
    import networkx as nx

    inner_g = g.subgraph([n for n in g if n != OUT])
    if nx.is_directed_acyclic_graph(inner_g):
        dist = {IN: 0}
        for n in nx.topological_sort(inner_g):
            if n in dist:
                for m in inner_g.successors(n):
                    dist[m] = max(dist.get(m, 0), dist[n] + 1)
    else:
        dist = nx.single_source_shortest_path_length(inner_g, IN)
    inner = max([*dist.values(), 0])
    col = {}
    for n in g:
        if n == OUT:
            col[n] = inner + 1
        else:
            col[n] = dist.get(n, 1)  # a station no route visits sits in the first column
    return col


def _bend(p0, p1, others, scale, candidates):
    """The ``arc3`` curvature, among ``candidates``, whose arc keeps farthest from the ``others`` boxes.

    ``scale`` = (x, y) inches per data unit (``arc3`` bends in display space); distances are measured
    in box units (half a column across, a third of a row up), and the first candidate that clears
    every box wins.
    """
    (x0, y0), (x1, y1) = p0, p1
    sx, sy = scale
    s = np.linspace(0.0, 1.0, 25)[:, None]
    best, best_score = candidates[0], -1.0
    for rad in candidates:
        cx = (x0 + x1) / 2 + rad * (y1 - y0) * sy / sx
        cy = (y0 + y1) / 2 - rad * (x1 - x0) * sx / sy
        pts = (1 - s) ** 2 * np.array([x0, y0]) + 2 * s * (1 - s) * np.array([cx, cy]) + s ** 2 * np.array([x1, y1])
        score = float("inf")
        for ox, oy in others:
            d = np.maximum(np.abs(pts[:, 0] - ox) / 0.45, np.abs(pts[:, 1] - oy) / 0.3)
            score = min(score, float(d.min()))
        if score > 1.0:
            return rad, (cx, cy)
        if score > best_score:
            best, best_score = rad, score
    cx = (x0 + x1) / 2 + best * (y1 - y0) * sy / sx
    cy = (y0 + y1) / 2 - best * (x1 - x0) * sx / sy
    return best, (cx, cy)


def plot_network(network, *, ax=None, path=None, seed: int = 0, legend: bool = True):
    """The network: stations coloured by load, routers, and the routes between them.

    Stations are boxes sized to their label (name and load), coloured by load band (see
    :data:`LOAD_BANDS`, explained in the legend); routers are grey boxes with dashed arrows to their
    engines (labelled with the split probability of a random router); solid arrows carry the request
    classes named on them, from the arrivals node to the departures node.  Columns follow the number
    of hops from the arrivals.

    Parameters
    ----------
    network : Network
    ax : matplotlib Axes, optional
    path : str or path, optional
        Write the figure here.
    seed : int
        Kept for compatibility (the layout is deterministic).
    legend : bool
        Draw the legend of load colours and node kinds.

    Returns
    -------
    str or Axes
        The path written, or the axes.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, Patch

    g = network_drawing_graph(network)
    loads = network.loads()
    col = _layers(g)
    ncols = max(col.values()) + 1
    by_col: dict = {}
    for n in g:  # insertion order: arrivals, stations, routers, departures
        by_col.setdefault(col[n], []).append(n)
    tallest = max(len(v) for v in by_col.values())
    fig, ax = axes(ax, figsize=(max(6.4, 1.9 * ncols), max(2.8, 1.3 * tallest + 1.4)))
    pos = {}
    for c, nodes in by_col.items():
        k = len(nodes)
        for i, n in enumerate(nodes):
            pos[n] = (float(c), (k - 1) / 2.0 - i)
    boxes = {}
    for n, d in g.nodes(data=True):
        kind = d["kind"]
        if kind == "station":
            rho = loads.get(n, 0.0)
            text, fc, style = f"{n}\nload {rho:.2f}", _load_colour(rho), "round,pad=0.4"
        elif kind == "router":
            text, fc, style = f"{n}\n{d['policy']} router", _ROUTER_COLOUR, "square,pad=0.4"
        else:
            text, fc, style = kind, _END_COLOUR, "round,pad=0.3"
        t = ax.text(*pos[n], text, ha="center", va="center", fontsize=8, zorder=3,
                    bbox={"boxstyle": style, "fc": fc, "ec": "k" if kind in ("station", "router") else "grey",
                              "ls": "--" if kind == "router" else "-", "lw": 1.0})
        t.set_gid(f"node:{kind}:{n}")
        boxes[n] = t
    ax.set_xlim(-0.6, ncols - 0.4)
    ax.set_ylim(-tallest / 2.0 - (0.55 if legend else 0.1), tallest / 2.0 + 0.1)
    box = ax.get_position()
    fw, fh = fig.get_size_inches()
    scale = (box.width * fw / (ncols + 0.2), box.height * fh / (tallest + (0.65 if legend else 0.2)))
    for u, v, d in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[u], pos[v]
        router = d["kind"] == "router"
        colour = "dimgrey" if router else "#455a64"
        if u == v:  # a self-loop: an arc above the box
            arr = FancyArrowPatch((x0 - 0.12, y0 + 0.18), (x0 + 0.12, y0 + 0.18), arrowstyle="-|>",
                                  connectionstyle="arc3,rad=-1.6", mutation_scale=11, color=colour, zorder=4)
            lx, ly = x0, y0 + 0.42
        else:
            others = [pos[n] for n in g if n not in (u, v)]
            if g.has_edge(v, u):  # both directions: each bends to its own side
                cands = (0.25, 0.4, 0.6)
            elif x0 == x1:
                cands = (0.3, -0.3, 0.5, -0.5, 0.8, -0.8)
            else:
                cands = (0.0, 0.25, -0.25, 0.45, -0.45, 0.7, -0.7)
            rad, (cx, cy) = _bend((x0, y0), (x1, y1), others, scale, cands)
            arr = FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=11, color=colour,
                                  connectionstyle=f"arc3,rad={rad}", patchA=boxes[u].get_bbox_patch(),
                                  patchB=boxes[v].get_bbox_patch(), ls="--" if router else "-", lw=1.1,
                                  zorder=4)  # above the boxes, so they are placed when the arrow is clipped
            lx, ly = 0.25 * x0 + 0.5 * cx + 0.25 * x1, 0.25 * y0 + 0.5 * cy + 0.25 * y1  # the arc's midpoint
        arr.set_gid(f"edge:{d['kind']}:{u}->{v}")
        ax.add_patch(arr)
        if router:
            label = "" if d.get("probability") is None else f"p={d['probability']:.2f}"
        else:
            label = ", ".join(d["classes"])
        if label:
            ax.text(lx, ly, label, fontsize=7, color="dimgrey", ha="center", va="center", zorder=5,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
    ax.set_axis_off()
    ax.set_title(f"{network.name}: load per engine ({'DAG' if network.is_dag else 'cyclic'})", fontsize=9)
    if legend:
        handles = [Patch(fc=c, ec="k", label=t) for _, c, t in LOAD_BANDS]
        if network.routers:
            handles.append(Patch(fc=_ROUTER_COLOUR, ec="k", ls="--", label="router"))
            handles.append(Line2D([], [], color="dimgrey", ls="--", label="router to engine"))
        handles.append(Line2D([], [], color="#455a64", label="route (classes named)"))
        ax.legend(handles=handles, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, -0.02),
                  ncol=min(len(handles), 3), frameon=False)
    return finish(fig, ax, path)


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def fluid_initial_text(fp) -> str:
    """Where a fluid path starts, in words: ``"1 token in buffer 'A.1'"``, ``"empty"``..."""
    lv = np.asarray(fp.levels[0], dtype=float)
    nz = [(lab, float(x)) for lab, x in zip(fp.labels, lv) if x > 0]
    if not nz:
        return "empty"
    if len(nz) <= 2:
        return " and ".join(f"{_fmt(x)} token{'s' if x != 1 else ''} in buffer {lab!r}" for lab, x in nz)
    return f"{_fmt(sum(x for _, x in nz))} tokens in {len(nz)} buffers"


def sim_initial_text(res) -> str:
    """Where a simulated run starts: ``"empty"`` or ``"N requests in system"``."""
    n0 = float(res.total_in_system[0]) if len(res.times_s) else 0.0
    return "empty" if n0 == 0 else f"{n0:,.0f} requests in system"


def _diverging_view(fp):
    """``(end time, log axis)`` for a fluid path: a diverging one is drawn up to its last peak on a log
    axis, so that its growth shows (drawn to its end, each cycle's long drain made it look stable)."""
    peaks = tuple(getattr(fp, "peaks", ()) or ())
    if getattr(fp, "outcome", None) == "diverging" and len(peaks) >= 2:
        return float(peaks[-1][0]), True
    return None, False


def _draw_peaks(a, fp, t_end):
    pk = np.array([p for p in fp.peaks if p[0] <= t_end * (1 + 1e-12)], dtype=float)
    if len(pk):
        a.plot(pk[:, 0], pk[:, 1], "o", color="C3", ms=3.5, label="peaks of the total backlog", zorder=4)


def plot_fluid_path(fp, *, ax=None, path=None, by: str = "buffer", log: bool = False, initial: str | None = None):
    """Fluid tokens per buffer (``by="buffer"``) or per class (``by="class"``) along a fluid path.

    ``initial`` describes the initial state in the title (default: from the path's first levels,
    e.g. ``"from 1 token in buffer 'A.1'"``).
    """
    fig, ax = axes(ax)
    t = fp.times_s
    t_end, div = _diverging_view(fp)
    keep = slice(None) if t_end is None else np.asarray(t) <= t_end * (1 + 1e-12)
    if by == "class":
        for c, y in fp.by_class().items():
            ax.plot(t[keep], np.asarray(y)[keep], lw=1.4, label=c)
    else:
        for j, lab in enumerate(fp.labels):
            ax.plot(t[keep], fp.levels[keep, j], lw=1.2, label=lab)
    ax.plot(t[keep], fp.total_tokens[keep], color="k", lw=1.0, ls="--", label="total")
    if div:
        _draw_peaks(ax, fp, t_end)
    if log or div:
        ax.set_yscale("symlog")
    end = t_end if t_end is not None else (float(t[-1]) if len(t) else 0.0)
    ax.set_xlim(0.0, end if end > 0 else 1.0)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("fluid backlog [tokens]")
    title = f"fluid path from {initial or fluid_initial_text(fp)}: {fp.outcome}"
    if fp.growth_factor is not None:
        title += f", x{fp.growth_factor:.3g} per cycle"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return finish(fig, ax, path)


def plot_network_sim(res, *, ax=None, path=None, tokens: bool = True):
    """Simulated backlog per buffer (tokens) or requests in system per class; the title says how it starts."""
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
    ax.set_xlim(0.0, float(res.horizon_s))
    ax.set_xlabel("time [s]")
    ax.set_title(f"simulation over {res.horizon_s:,.4g} s, starting {sim_initial_text(res)}", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return finish(fig, ax, path)


def _two_panels(ax, n):
    """``n`` (1 or 2) axes: a new figure, the given pair, or the given axes split in two."""
    if ax is None or (isinstance(ax, (str, os.PathLike)) and n > 1):
        path = ax
        import matplotlib

        matplotlib.use("Agg", force=False) if matplotlib.get_backend().lower() != "agg" else None
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4 * n if n > 1 else 6.4, 4.0), layout="constrained")
        fig._fluidq_path = path
        return fig, list(fig.subplots(1, n)) if n > 1 else [fig.add_subplot()]
    if isinstance(ax, (list, tuple)):
        got = list(ax)
        if len(got) < n:
            from ..errors import ParameterError

            raise ParameterError("ax", ax, f"{n} matplotlib Axes (one per panel)")
        return got[0].figure, got[:n]
    fig, ax = axes(ax)
    if n == 1:
        return fig, [ax]
    spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
    if spec is None:  # not on a grid: the simulation goes to an inset
        return fig, [ax, ax.inset_axes([0.55, 0.55, 0.42, 0.4])]
    sub = spec.subgridspec(1, 2, wspace=0.25)
    ax.remove()
    return fig, [fig.add_subplot(sub[0]), fig.add_subplot(sub[1])]


def plot_verdict(result, *, ax=None, path=None, fluid_path=None, fluid_initial: str | None = None):
    """A verdict on two panels, each on its own time axis: the fluid path, and the simulated runs.

    Parameters
    ----------
    result : NetworkStabilityResult
    ax : Axes or pair of Axes, optional
        Where to draw; one Axes is split in two when both panels are drawn.
    path : str or path, optional
        Write the figure here.
    fluid_path : FluidPath, optional
        Draw this fluid path instead of the verdict's own (``result.fluid.path``, if any).
    fluid_initial : str, optional
        Words for the fluid path's initial state in its legend (default: from its first levels).

    Returns
    -------
    str, Axes or tuple of Axes
        The path written; else the axes, a ``(fluid, simulation)`` tuple when both panels are drawn.

    Notes
    -----
    A fluid path that grows linearly from empty (an overloaded point, ``outcome == "growing"``) is
    also drawn on the simulation panel, over the simulated horizon: both start empty, so they share a
    time axis.  Other fluid paths start from a given backlog and keep their own panel.
    """
    fp = fluid_path if fluid_path is not None else result.fluid.path
    runs = tuple(result.runs or ())
    n = (fp is not None) + bool(runs)
    own = ax is None or isinstance(ax, (str, os.PathLike))  # a figure of ours: the verdict is its title
    fig, panels = _two_panels(ax, max(n, 1))
    title = f"{result.status.value} (decided by {result.decided_in_words})"
    single = n < 2 or not own  # no suptitle: the first panel's title carries the verdict
    k = 0
    if fp is not None:
        a = panels[k]
        k += 1
        t = fp.times_s
        start = fluid_initial or fluid_initial_text(fp)
        t_end, div = _diverging_view(fp)
        keep = slice(None) if t_end is None else np.asarray(t) <= t_end * (1 + 1e-12)
        a.plot(t[keep], fp.total_tokens[keep], color="k", lw=1.4, label=f"fluid model from {start}")
        end = t_end if t_end is not None else (float(t[-1]) if len(t) else 0.0)
        a.set_xlim(0.0, end if end > 0 else 1.0)
        a.set_xlabel("fluid time [s]")
        a.set_ylabel("fluid backlog [tokens]" + (" (log scale)" if div else ""))
        sub = f"fluid path: {fp.outcome}"
        if fp.growth_factor is not None:
            sub += f", x{fp.growth_factor:.3g} per cycle"
        if div:
            _draw_peaks(a, fp, t_end)
            a.set_yscale("log" if np.all(fp.total_tokens[keep] > 0) else "symlog")
            sub += ", drawn to its last peak"
        a.set_title(f"{title}\n{sub}" if single else sub, fontsize=9)
        a.legend(fontsize=7, loc="best")
    if runs:
        a = panels[k]
        horizon = max(float(r.horizon_s) for r in runs)
        for i, r in enumerate(runs):
            lab = (f"simulation run 1 of {len(runs)}, starts {sim_initial_text(r)}" if i == 0 else
                   ("other runs" if i == 1 else None))
            a.plot(r.times_s, r.total_tokens, color="C3" if i == 0 else "grey", lw=1.0 if i == 0 else 0.6,
                   alpha=1.0 if i == 0 else 0.6, label=lab, zorder=3 if i == 0 else 2)
        if fp is not None and fp.outcome == "growing" and not np.any(np.asarray(fp.levels[0]) > 0):
            tt = np.linspace(0.0, horizon, 200)
            try:
                a.plot(tt, fp.at(tt).sum(axis=-1), color="k", ls="--", lw=1.2,
                       label="fluid model from empty (same time axis)")
            except FluidqError:  # a path whose future is unknown: it stays on its own panel
                pass
        a.set_xlim(0.0, horizon)
        a.set_xlabel("simulated time [s]")
        a.set_ylabel("backlog [tokens]")
        sub = f"simulation: {len(runs)} seeded run{'s' if len(runs) > 1 else ''} of {horizon:,.4g} s"
        a.set_title(f"{title}\n{sub}" if single and fp is None else sub, fontsize=9)
        a.legend(fontsize=7, loc="best")
    if n == 0:
        a = panels[0]
        a.text(0.5, 0.5, f"{title}\n(no fluid path and no simulation to draw)", ha="center", va="center",
               fontsize=9, transform=a.transAxes)
        a.set_axis_off()
    if not single:
        fig.suptitle(title, fontsize=10)
    out = finish(fig, panels[0], path)
    if isinstance(out, str):
        return out
    return tuple(panels) if n == 2 else panels[0]
