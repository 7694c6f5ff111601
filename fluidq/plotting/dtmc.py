"""Plots of DTMC results: stationary distribution, drift field, thresholds."""
from __future__ import annotations

import numpy as np

from . import axes, finish
from .sim import _wrap_title


def plot_stationary(result, *, ax=None, path=None, log=True):
    """Stationary law of ``(n_p, n_d)`` as a heat map (embedded chain, head progress summed out)."""
    fig, ax = axes(ax)
    if result.pi is None:
        ax.text(0.5, 0.5, f"no stationary distribution: {result.status}", ha="center", va="center",
                transform=ax.transAxes)
        return finish(fig, ax, path)
    ch = result.chain
    npx, ndx = ch.space["n_p"], ch.space["n_d"]
    grid = np.zeros((npx.max() + 1, ndx.max() + 1))
    np.add.at(grid, (npx, ndx), result.pi)
    img = np.log10(np.maximum(grid, 1e-16)) if log else grid
    im = ax.imshow(img, origin="lower", aspect="auto", cmap="viridis")
    fig.colorbar(im, ax=ax, label="log10 probability" if log else "probability")
    ax.set_xlabel("requests decoding n_d")
    ax.set_ylabel("requests in prefill n_p")
    _wrap_title(ax, f"{result.policy}: lambda = {result.arrival_rate_per_s:.4g} req/s, {result.status}", fontsize=8)
    return finish(fig, ax, path)


def plot_drift(chain, *, weights="tokens", ax=None, path=None):
    """Drift field of the engine chain: arrows of ``E[(dn_d, dn_p)]`` coloured by the drift of ``V``."""
    fig, ax = axes(ax)
    sp_ = chain.space
    npx, ndx = sp_["n_p"].astype(float), sp_["n_d"].astype(float)
    head = sp_["j"] == 0
    dp = chain.P @ npx - npx
    dd = chain.P @ ndx - ndx
    dv = chain.drift(weights) / chain.sojourn_s
    step_p = max(1, int(npx.max()) // 15)
    step_d = max(1, int(ndx.max()) // 20)
    sel = head & (sp_["n_p"] % step_p == 0) & (sp_["n_d"] % step_d == 0)
    sel &= (sp_["n_p"] < npx.max()) & (sp_["n_d"] < ndx.max())
    lim = float(np.max(np.abs(dv[sel]))) if sel.any() else 1.0
    q = ax.quiver(ndx[sel], npx[sel], dd[sel], dp[sel], dv[sel], cmap="coolwarm", clim=(-lim, lim),
                  angles="xy")
    fig.colorbar(q, ax=ax, label=f"drift of {weights} per second")
    ax.set_xlabel("requests decoding n_d")
    ax.set_ylabel("requests in prefill n_p")
    ax.set_title(f"{chain.policy}: one-step drift (interior)", fontsize=8)
    return finish(fig, ax, path)


def plot_threshold(result, *, ax=None, path=None):
    """The threshold against Theorem 2's bound (and vLLM's decode-rate curve when available)."""
    fig, ax = axes(ax)
    curve = result.details.get("curve")
    md = result.details.get("mean_output_tokens")
    if curve:
        lam, D = np.array(sorted(curve)).T
        ax.plot(lam, D, ".", ms=3, label="decode rate D(lambda) the engine delivers")
        if md:
            # the threshold is where the decode demand lambda m_d meets the delivered rate
            ax.plot(lam, lam * md, "-", lw=1, color="C1", label="decode demand lambda m_d")
        ax.set_ylabel("decode tokens per second")
    else:
        ax.set_yticks([])
    ax.axvline(result.arrival_rate_per_s, color="C3", lw=1.2, label=f"{result.policy}: {result.arrival_rate_per_s:.4g} req/s")
    ax.axvline(result.work_conserving_rate_per_s, color="grey", ls="--", lw=1,
               label=f"work-conserving: {result.work_conserving_rate_per_s:.4g} req/s")
    ax.set_xlabel("arrival rate [req/s]")
    ax.legend(fontsize=7)
    return finish(fig, ax, path)


def plot_dtmc(result, *, path=None):
    """Stationary distribution and drift field side by side in one figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    plot_stationary(result, ax=a1)
    plot_drift(result.chain, ax=a2)
    return finish(fig, a1, path)
