"""Plots of latency comparisons and length-ranking quality."""
from __future__ import annotations

import numpy as np

from . import axes, finish

_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_STYLES = ("-", (0, (5, 2)), (0, (1, 1.5)), "-.", (0, (6, 2, 1, 2, 1, 2)), (0, (3, 3)), (0, (8, 2, 2, 2)))


def plot_latency_vs_load(comparison, *, metric: str = "latency_per_token_mean_s", policies=None, logy: bool = True,
                         x=None, xlabel=None, ax=None, path=None):
    """One curve per policy: ``metric`` (mean over replications, CI bars) against the load.

    ``x`` (one value per load) and ``xlabel`` replace the loads and their label, e.g. to show the
    loads as fractions of another capacity than the comparison's own.
    """
    from ..errors import ParameterError

    fig, ax = axes(ax)
    if x is None:
        x = np.asarray(comparison.loads)
    else:
        x = np.asarray(x, dtype=float)
        if x.shape != (len(comparison.loads),):
            raise ParameterError("x", x, f"one value per load ({len(comparison.loads)})")
    pols = list(policies or comparison.policies)
    for i, p in enumerate(pols):
        v = np.array([m for m, _ in comparison.values[p][metric]], float)
        h = np.array([hw for _, hw in comparison.values[p][metric]], float)
        # own marker and dash pattern per policy, later ones thinner: near-equal curves stay visible
        ax.errorbar(x, v, yerr=np.where(np.isfinite(h), h, 0.0), marker=_MARKERS[i % len(_MARKERS)], ms=4,
                    lw=1.0 + 1.2 * (len(pols) - 1 - i) / max(1, len(pols) - 1), ls=_STYLES[i % len(_STYLES)],
                    capsize=2, label=p, zorder=2 + i)
    label, unit = comparison.metric_label(metric)  # the analysis names its metrics
    if xlabel is None:  # (the loads are fractions of the load basis lambda* of `fluidq check --load`, 2026-12-07)
        inputs = getattr(comparison, "inputs", None) or {}
        basis, cap = inputs.get("load_basis"), inputs.get("capacity_requests_per_s")
        xlabel = "load (fraction of the load basis" + (f" {basis}" if basis else "") + \
            (f", {cap:.4g} req/s)" if isinstance(cap, (int, float)) else ")")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{label} [{unit}]" if unit else label)
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    return finish(fig, ax, path)


def plot_cross_model(result, *, ax=None, path=None):
    """Heat map of Kendall tau_b: rows trained on, columns evaluated on."""
    fig, ax = axes(ax, figsize=(6.4, 5.6))
    im = ax.imshow(result.tau, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(result.models)), result.models, rotation=90, fontsize=6)
    ax.set_yticks(range(len(result.models)), result.models, fontsize=6)
    ax.set_xlabel("ranked model (held-out prompts)")
    ax.set_ylabel("trained on")
    fig.colorbar(im, ax=ax, label="Kendall tau_b")
    return finish(fig, ax, path)


def plot_gamma_history(ordering, *, ax=None, path=None):
    """gamma over time of a :class:`~fluidq.policies.latency.GammaAda` after a run."""
    fig, ax = axes(ax)
    h = [(t, g) for t, g in ordering.history if t is not None]
    if h:
        t, g = zip(*h)
        ax.step(t, g, where="post")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("gamma [1/s]")
    ax.set_yscale("log")
    return finish(fig, ax, path)
