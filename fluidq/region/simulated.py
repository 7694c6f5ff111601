"""The region a scheduler actually achieves, by simulation along rays of the (prefill, decode) plane.

For a fan of request shapes ``(m_p, m_d)`` -- directions from the origin -- the stability
threshold ``lambda_th`` of the policy is bracketed by simulation (:func:`fluidq.sim.find_threshold`,
deterministic arrivals by default, so the fluid behaviour shows without noise); the points
``lambda_th (m_p, m_d)`` trace the boundary of the set of loads the policy sustains.  Unlike the
engine's region this set need not be convex (Dumas 1997 for priority networks); it is drawn as the
polygon through the points.

References
----------
Li, Dai, Peng, arXiv:2504.07347, §6 (the vertex-C experiment: only Sarathi with a small budget is
stable there).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import integer, real
from ..engine import Engine
from ..errors import ParameterError
from ..results import plain

__all__ = ["SimulatedRegion", "simulated_region"]


@dataclass(frozen=True, eq=False)
class SimulatedRegion:
    """Stability thresholds of one policy along rays, as points in (prefill, decode) tokens/s.

    Attributes
    ----------
    label : str
        The policy's name.
    request_shapes : ndarray of int, shape (n, 2)
        ``(m_p, m_d)`` of each ray (deterministic lengths).
    low_rate_per_s, high_rate_per_s : ndarray
        Bracket of the threshold on each ray: highest rate judged bounded, lowest judged growing.
    points : ndarray, shape (n, 2)
        ``midpoint rate * (m_p, m_d)``: the boundary estimate, tokens/s.  The midpoint is taken with the
        bracket's top capped at the engine region's rate on the ray (no scheduler is stable outside it),
        so no point lies outside the engine's region; ``status`` says where the cap applied.
    engine_scale : ndarray
        Each point's ``scale`` in the engine's region (``1`` = on its boundary).
    status : tuple of str
        ``find_threshold``'s status per ray.
    """

    label: str
    request_shapes: np.ndarray
    low_rate_per_s: np.ndarray
    high_rate_per_s: np.ndarray
    points: np.ndarray
    engine_scale: np.ndarray
    status: tuple
    engine: Engine = field(repr=False, default=None)
    inputs: dict = field(default_factory=dict, repr=False)

    @property
    def vertices(self) -> np.ndarray:
        """The polygon: origin, the point on the prefill axis side, the ray points, the decode side."""
        return np.vstack([[0.0, 0.0], self.points])

    def to_dict(self) -> dict:
        return plain({"label": self.label, "request_shapes": self.request_shapes,
                      "low_rate_per_s": self.low_rate_per_s, "high_rate_per_s": self.high_rate_per_s,
                      "points_tokens_per_s": self.points, "engine_scale": self.engine_scale,
                      "status": list(self.status), "inputs": self.inputs, "method": "simulation (find_threshold)"})


def _rays(n_rays: int, request_tokens: int) -> np.ndarray:
    frac = np.linspace(0.05, 0.95, n_rays)
    mp = np.maximum(1, np.round(frac * request_tokens)).astype(int)
    md = np.maximum(1, request_tokens - mp)
    return np.unique(np.stack([mp, md], 1), axis=0)[::-1]


def simulated_region(engine: Engine, policy, *, request_shapes=None, n_rays: int = 7, request_tokens: int = 400,
                     horizon_s: float = 200.0, n_replications: int = 2, rel_tol: float = 0.02,
                     poisson: bool = False, rng=None, progress=None) -> SimulatedRegion:
    """Bracket ``policy``'s stability threshold along rays, by simulation.

    Parameters
    ----------
    engine : Engine
    policy : str, Policy, or callable
        A scheduler, or a function ``workload -> policy`` for policies that depend on the
        workload (e.g. ``lambda w: RegionAware.for_workload(engine, w)``).
    request_shapes : sequence of (int, int), optional
        The rays as request shapes ``(m_p, m_d)``; default ``n_rays`` shapes of
        ``request_tokens`` tokens from prefill-heavy to decode-heavy.
    horizon_s, n_replications, rel_tol
        Passed to :func:`fluidq.sim.find_threshold` (per rate tried).
    poisson : bool
        Poisson arrivals instead of deterministic ones (then use more replications and longer runs).
    rng : None, int or SeedSequence
        Root seed (one child per ray).

    Returns
    -------
    SimulatedRegion
    """
    from ..sim import find_threshold
    from ..workload import Periodic, Poisson, Workload
    from .region import stability_region

    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    n_rays = integer("n_rays", n_rays, minimum=1)
    request_tokens = integer("request_tokens", request_tokens, minimum=2)
    horizon_s = real("horizon_s", horizon_s, positive=True)
    shapes = _rays(n_rays, request_tokens) if request_shapes is None else np.asarray(request_shapes, dtype=int)
    if shapes.ndim != 2 or shapes.shape[1] != 2 or np.any(shapes < 1):
        raise ParameterError("request_shapes", request_shapes, "pairs (m_p, m_d) of whole tokens >= 1")
    seeds = np.random.SeedSequence(rng).spawn(len(shapes))
    region = stability_region(engine)
    arrival = Poisson if poisson else Periodic
    lows, highs, status, label, lams = [], [], [], None, []
    for i, ((mp, md), seed) in enumerate(zip(shapes, seeds)):
        w = Workload(arrival=arrival(rate_per_s=1.0), prompt_tokens=int(mp), output_tokens=int(md))
        factory = callable(policy) and not hasattr(policy, "select") and not isinstance(policy, str)
        pol = policy(w) if factory else policy
        lam = region.max_request_rate(mp, md)
        lams.append(lam)
        th = find_threshold(engine, w, pol, low_rate_per_s=0.3 * lam, high_rate_per_s=1.05 * lam,
                            n_replications=n_replications, horizon_s=horizon_s, rel_tol=rel_tol, rng=seed,
                            check_batches=False)
        label = label or th.policy
        lows.append(th.low_rate_per_s)
        highs.append(th.high_rate_per_s)
        status.append(th.status)
        if progress:
            progress(i + 1, len(shapes))
    lows, highs, lams = np.array(lows), np.array(highs), np.array(lams)
    # no scheduler is stable outside the engine's region (paper §6): the threshold is at most ``lam`` on
    # each ray, so the bracket's top is capped there (a finite-horizon bracket can reach past it)
    top = np.minimum(highs, lams)
    capped = highs > lams
    status = [f"{st} (bracket capped at the engine's region)" if c else st for st, c in zip(status, capped)]
    lows = np.minimum(lows, lams)
    mid = np.where(np.isfinite(top), 0.5 * (lows + top), lows)
    pts = shapes * mid[:, None]
    scale = np.array([region.scale_of(p) for p in pts])
    return SimulatedRegion(label=str(label), request_shapes=shapes, low_rate_per_s=lows, high_rate_per_s=highs,
                           points=pts, engine_scale=scale, status=tuple(status), engine=engine,
                           inputs={"horizon_s": horizon_s, "n_replications": n_replications, "rel_tol": rel_tol,
                                   "arrivals": "poisson" if poisson else "periodic", "rng": repr(rng)})
