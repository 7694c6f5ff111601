"""Plots of batch-time fits (:class:`~fluidq.batchtime.fit.FitResult`)."""
from __future__ import annotations

import numpy as np

from . import axes, finish
from .sim import _wrap_title


def plot_fit(result, *, ax=None, path=None):
    """Measured iteration times and the fitted model, in ms.

    Token-only fits: the points and the model curve over ``b``.  Context-aware fits: measured
    against predicted time (one point per iteration, the diagonal is a perfect fit), coloured by
    the KV tokens read.
    """
    fig, ax = axes(ax)
    b, y = result.tokens, result.seconds
    title = (f"{result.kind}: MAPE {100 * result.mape:.2f}% (held out {100 * result.mape_heldout:.2f}%), "
             f"R$^2$ {result.r2:.3f}")
    if result.kv_tokens is None:
        grid = np.arange(1, int(b.max()) + 1)
        ax.plot(b, 1e3 * y, "o", ms=3, color="C0", label="measured")
        ax.plot(grid, 1e3 * np.asarray(result.model(grid)), lw=1.3, color="C3", label=result.model.describe())
        ax.set_xlabel("batch tokens b")
        ax.set_ylabel("iteration time [ms]")
    else:
        pred = np.asarray(result.predict(b, result.kv_tokens))
        sc = ax.scatter(1e3 * y, 1e3 * pred, s=6, c=result.kv_tokens, cmap="viridis")
        lo, hi = 1e3 * min(y.min(), pred.min()), 1e3 * max(y.max(), pred.max())
        ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls=":")
        fig.colorbar(sc, ax=ax, label="KV tokens read")
        ax.set_xlabel("measured iteration time [ms]")
        ax.set_ylabel("predicted [ms]")
        ax.plot([], [], " ", label=result.model.describe())
    _wrap_title(ax, title, fontsize=8)
    ax.legend(fontsize=7)
    return finish(fig, ax, path)
