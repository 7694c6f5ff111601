"""Plots of stability regions: the engine's region, the regions schedulers reach, operating points."""
from __future__ import annotations

import numpy as np

from . import axes, finish
from .sim import _wrap_title


def _polygon(ax, region, *, color, label, fill=True, lw=1.6, ls="-"):
    v = np.vstack([region.vertices, region.vertices[:1]])
    ax.plot(v[:, 0], v[:, 1], color=color, lw=lw, ls=ls, label=label)
    if fill:
        ax.fill(v[:, 0], v[:, 1], color=color, alpha=0.12, lw=0)


_DASHES = ((0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 3)), (0, (8, 2, 2, 2, 2, 2)))


def _name(region):
    """The legend name of a region: the engine's own name (``Engine(name=...)``, a profile's name)
    for an engine's region, the scheduler's label (``sarathi-512``) for a policy's."""
    e = getattr(region, "engine", None)
    own = getattr(e, "name", None)
    if region.label == "engine" and own and own != "engine":
        return own
    return region.label


#: the least distance, in axes fraction, between two vertex labels of a region plot: a vertex closer than this to
#: one already labelled keeps its point but not its label (near-duplicate vertices such as (265, 63), (264, 63)
#: and (255, 63) tokens/s stacked their labels into one unreadable block)
MIN_LABEL_GAP = 0.05


def _spaced_labels(ax, labels):
    """The ``(vertex, text)`` pairs to write: in order, each at least :data:`MIN_LABEL_GAP` (axes fraction) from
    every one kept before it, at the axes' current limits."""
    if not labels:
        return []
    to_axes = ax.transData + ax.transAxes.inverted()
    pos = to_axes.transform(np.array([v for v, _ in labels], dtype=float))
    kept = []
    for i, p in enumerate(pos):
        if all(np.hypot(*(p - pos[j])) >= MIN_LABEL_GAP for j in kept):
            kept.append(i)
    return [labels[i] for i in kept]


def plot_region(region, *, point=None, mix=None, others=None, simulated=None, points=None, annotate=True, ax=None,
                path=None, title=None):
    """Draw a :class:`~fluidq.region.StabilityRegion` in (prefill, decode) tokens/s.

    Parameters
    ----------
    region : StabilityRegion
        Drawn filled, with each vertex labelled by its batch shape ``(x p + y d)``.
    point : pair, optional
        An operating point ``(lambda m_p, lambda m_d)`` (marked, with its load ``1/scale``).
    mix : RegionMix, optional
        Highlight the shapes of a time-sharing.
    others : dict or sequence of StabilityRegion, optional
        Further regions (e.g. those schedulers reach, :func:`fluidq.region.policy_region`),
        drawn as outlines; a dict maps labels to regions.
    simulated : dict or sequence of SimulatedRegion, optional
        Thresholds found by simulation along rays (:func:`fluidq.region.simulated_region`), drawn
        as markers joined by a line, with the bracket as an error bar along each ray.
    points : dict, optional
        ``{label: (x, y, marker)}`` extra marked points (e.g. simulated outcomes).
    """
    fig, ax = axes(ax, figsize=(6.4, 4.8))
    e = region.engine
    base = f"{_name(region)}: b_max={e.b_max}" + (f", k_max={e.k_max}" if e.k_max else "")
    _polygon(ax, region, color="C0", label=base)
    colours = {}
    if others:
        items = others.items() if isinstance(others, dict) else ((o.label, o) for o in others)
        for i, (lab, o) in enumerate(items):
            colours[str(lab)] = f"C{i + 1}"
            suffix = "" if getattr(o, "label", "engine") == "engine" else " (batches under backlog)"
            if not isinstance(others, dict):
                lab = _name(o)
            # each outline its own dash pattern, so coinciding outlines stay distinguishable
            _polygon(ax, o, color=colours[str(lab)], label=f"{lab}{suffix}", fill=False, lw=1.3,
                     ls=_DASHES[i % len(_DASHES)])
    if simulated:
        items = simulated.items() if isinstance(simulated, dict) else ((o.label, o) for o in simulated)
        for i, (lab, o) in enumerate(items):
            col = colours.get(str(lab)) or f"C{len(colours) + i + 1}"
            pts = o.points
            ax.plot(pts[:, 0], pts[:, 1], "-", marker="D", ms=4, lw=1.0, color=col, label=f"{lab} (simulated)")
            lo = o.request_shapes * o.low_rate_per_s[:, None]
            hi = o.request_shapes * np.where(np.isfinite(o.high_rate_per_s), o.high_rate_per_s,
                                             o.low_rate_per_s)[:, None]
            for a, b in zip(lo, hi):
                ax.plot([a[0], b[0]], [a[1], b[1]], color=col, lw=2.5, alpha=0.5)
    labels = []  # (vertex, text): written once the limits are set, so that their spacing is known
    if annotate:
        for v, s, k in zip(region.vertices, region.shapes, region.kinds):
            if k == "batch":
                ax.plot(v[0], v[1], "o", color="C0", ms=4)
                labels.append((v, f"({s[0]}p+{s[1]}d)"))
    if mix is not None and len(mix.shapes):
        idx = [i for i, s in enumerate(region.shapes) if any(tuple(s) == tuple(m) for m in mix.shapes)]
        ax.plot(region.vertices[idx, 0], region.vertices[idx, 1], "s", mfc="none", color="C3", ms=9,
                label="shapes of the LP mix")
    if point is not None:
        p = np.asarray(point, dtype=float)
        s = region.scale_of(p)
        lab = "operating point" + ("" if not np.isfinite(s) else f" (load {1 / s:.4g})")
        ax.plot(p[0], p[1], "*", color="C3" if s < 1 else "k", ms=12, label=lab)
        if np.isfinite(s):
            q = p * s
            ax.plot([0, q[0]], [0, q[1]], color="grey", lw=0.8, ls=":")
    if points:
        for lab, (x, y, m) in points.items():
            ax.plot(x, y, m, ms=8, label=lab)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    for v, text in _spaced_labels(ax, labels):
        ax.annotate(text, v, textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("prefill tokens/s  (lambda m_p)")
    ax.set_ylabel("decode tokens/s  (lambda m_d)")
    if title:
        _wrap_title(ax, title)
    ax.legend(fontsize=7, loc="upper right")
    return finish(fig, ax, path)


def plot_policy_regions(result, policies=None, *, point=None, simulate=None, n_rays=None, rng=None, ax=None,
                        path=None):
    """Draw a :class:`~fluidq.stability.policy_region.PolicyRegionsResult`: the engine's region and, per
    scheduler, its backlog region and (when simulated) the thresholds it sustains along rays, on one plot.

    The regions are computed by :func:`fluidq.region.policy_regions` (plotting recomputes no analysis):
    the old call ``plot_policy_regions(engine, policies, simulate=..., n_rays=..., rng=...)`` is now
    ``policy_regions(engine, policies, simulate=..., n_rays=..., rng=...).plot(point=...)``; ``policies``,
    ``simulate``, ``n_rays`` and ``rng`` are kept in the signature only to say so.
    """
    from ..errors import ParameterError

    if not (hasattr(result, "engine_region") and hasattr(result, "regions")):
        raise ParameterError("result", type(result).__name__,
                             "a PolicyRegionsResult: fluidq.region.policy_regions(engine, policies, simulate=..., "
                             "n_rays=..., rng=...).plot(point=...) (plotting draws results and computes no region)")
    for name, value in (("policies", policies), ("simulate", simulate), ("n_rays", n_rays), ("rng", rng)):
        if value is not None:
            raise ParameterError(name, value, "None with a PolicyRegionsResult (give it to fluidq.region.policy_regions)")
    return plot_region(result.engine_region, others=dict(result.regions), simulated=result.simulated or None,
                       point=point, ax=ax, path=path, title="engine region (filled) vs. what each scheduler reaches")
