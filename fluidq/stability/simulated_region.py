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

from .._validate import MAX_REQUEST_TOKENS, REQUEST_WHY, array, integer, real
from ..engine import Engine
from ..errors import ParameterError
from ..results import Result, Status, plain

__all__ = ["MAX_RAYS", "RayStatus", "SimulatedRegion", "check_rays", "simulated_region"]

#: Most rays of one simulated region, over all the policies of one call (each ray is one threshold
#: search: up to :data:`SEARCH_SETS` sets of replicated simulations, a fraction of a second to a few seconds
#: of work per ray).  32 rays are 2.9 degrees apart.
MAX_RAYS = 32
RAYS_WHY = ("each ray is one threshold search of up to 34 sets of simulations, up to a few seconds of work; "
            "32 rays are 2.9 degrees apart, finer than a plot shows")
#: Most replication sets one threshold search runs (``find_threshold`` with its default
#: ``max_steps=16``: two per step, each retried once, plus the two ends).
SEARCH_SETS = 34


def check_rays(n_rays, n_policies: int = 1, *, name: str = "n_rays", policies_name: str = "policies") -> int:
    """``n_rays`` checked before any work: an integer >= 1, and ``n_rays x n_policies`` threshold searches
    at most :data:`MAX_RAYS` (the message says how many they would be)."""
    n = integer(name, n_rays, minimum=1, maximum=MAX_RAYS, why=RAYS_WHY)
    if n * n_policies > MAX_RAYS:
        raise ParameterError(name, n_rays, f"at most {MAX_RAYS} rays over all {policies_name} together",
                             f"{n:,} rays x {n_policies} policies would be {n * n_policies:,} threshold searches; "
                             f"{RAYS_WHY}")
    return n


#: the order of the search outcomes, least resolved last (a region's ``status`` is its worst ray's)
_RANK = {Status.RESOLVED: 0, Status.INCONCLUSIVE: 1, Status.UNBRACKETED: 2}
#: what a ray's text adds where the bracket's top was capped at the engine's region
CAPPED_NOTE = " (bracket capped at the engine's region)"


class RayStatus(str):
    """One ray's threshold search: its text is ``find_threshold``'s status, with :data:`CAPPED_NOTE` where the
    bracket's top was capped at the engine's region (``"resolved (bracket capped at the engine's region)"``):
    what :attr:`SimulatedRegion.ray_status` and the JSON show.  ``outcome`` (the search's
    :class:`~fluidq.results.Status`) and ``capped`` are the ray's data, read without parsing the text."""

    def __new__(cls, outcome, capped: bool = False):
        try:
            outcome = Status(outcome)
        except ValueError:
            raise ParameterError("outcome", outcome, "a threshold search's status: "
                                 + ", ".join(s.value for s in _RANK)) from None
        if outcome not in _RANK:
            raise ParameterError("outcome", outcome, "a threshold search's status: "
                                 + ", ".join(s.value for s in _RANK))
        obj = super().__new__(cls, outcome.value + (CAPPED_NOTE if capped else ""))
        obj.outcome, obj.capped = outcome, bool(capped)
        return obj

    def __getnewargs__(self):
        return self.outcome, self.capped


@dataclass(frozen=True, eq=False)
class SimulatedRegion(Result):
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
        so no point lies outside the engine's region; ``ray_status`` says where the cap applied.
    engine_scale : ndarray
        Each point's ``scale`` in the engine's region (``1`` = on its boundary).
    ray_status : tuple of RayStatus
        ``find_threshold``'s status per ray, as text (``"resolved"``, ``"inconclusive"``, ``"unbracketed"``,
        with ``" (bracket capped at the engine's region)"`` where the cap applied) that carries the ray's
        ``outcome`` (a Status) and ``capped``; a Status (or its text) given for a ray is an uncapped
        :class:`RayStatus`.  ``to_dict()`` writes the texts under the key ``"status"`` (the JSON of
        ``fluidq region --simulate``, unchanged).
    status : Status
        The region's outcome as one :class:`~fluidq.results.Status`, that of the protocol
        (:class:`fluidq.results.Result`): its least resolved ray's ``outcome`` -- ``UNBRACKETED`` if a ray's
        threshold was not bracketed, else ``INCONCLUSIVE`` if a ray's bracket could not be narrowed as asked,
        else ``RESOLVED`` (a capped bracket is still resolved).

    Until 2026-12-06 ``status`` was the old name of ``ray_status`` (the per-ray tuple); use ``ray_status``
    for the rays.  A Status is a ``str``, so ``sr.status[0]`` is now its first letter.
    """

    label: str
    request_shapes: np.ndarray
    low_rate_per_s: np.ndarray
    high_rate_per_s: np.ndarray
    points: np.ndarray
    engine_scale: np.ndarray
    ray_status: tuple
    engine: Engine = field(repr=False, default=None)
    inputs: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        rays = []
        for r in self.ray_status:
            if not isinstance(r, RayStatus):
                try:
                    r = RayStatus(r)
                except ParameterError:
                    raise ParameterError("ray_status", r, "a threshold search's status per ray (a Status, or a "
                                         "RayStatus(outcome, capped=True) for a capped bracket)") from None
            rays.append(r)
        object.__setattr__(self, "ray_status", tuple(rays))

    @property
    def status(self) -> Status:
        """The least resolved ray's outcome (see the class notes; the rays' own are :attr:`ray_status`)."""
        return max((r.outcome for r in self.ray_status), key=_RANK.__getitem__, default=Status.RESOLVED)

    @property
    def vertices(self) -> np.ndarray:
        """The polygon: origin, the point on the prefill axis side, the ray points, the decode side."""
        return np.vstack([[0.0, 0.0], self.points])

    def to_dict(self) -> dict:
        return plain({"label": self.label, "request_shapes": self.request_shapes,
                      "low_rate_per_s": self.low_rate_per_s, "high_rate_per_s": self.high_rate_per_s,
                      "points_tokens_per_s": self.points, "engine_scale": self.engine_scale,
                      "status": [str(r) for r in self.ray_status], "inputs": self.inputs, "method": "simulation (find_threshold)"})


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
    from ..capacity.region import stability_region
    from ..workload import Periodic, Poisson, Workload
    from .simulation import find_threshold

    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    n_rays = check_rays(n_rays)
    request_tokens = integer("request_tokens", request_tokens, minimum=2, maximum=MAX_REQUEST_TOKENS,
                             why=REQUEST_WHY)
    horizon_s = real("horizon_s", horizon_s, positive=True)
    if request_shapes is None:
        shapes = _rays(n_rays, request_tokens)
    else:
        raw = array("request_shapes", request_shapes, ndim=2)
        if raw.shape[1] != 2 or np.any(raw < 1) or np.any(raw != np.round(raw)):
            raise ParameterError("request_shapes", request_shapes, "pairs (m_p, m_d) of whole tokens >= 1")
        if np.any(raw > MAX_REQUEST_TOKENS):
            raise ParameterError("request_shapes", request_shapes,
                                 f"token counts <= {MAX_REQUEST_TOKENS:,}", REQUEST_WHY)
        if len(raw) > MAX_RAYS:
            raise ParameterError("request_shapes", f"<{len(raw):,} shapes>", f"at most {MAX_RAYS} shapes (rays)",
                                 RAYS_WHY)
        shapes = raw.astype(np.int64)
    region = stability_region(engine)
    arrival = Poisson if poisson else Periodic
    lam_all = [region.max_request_rate(int(mp), int(md)) for mp, md in shapes]
    _check_work(engine, shapes, lam_all, arrival, horizon_s, n_replications)
    seeds = np.random.SeedSequence(rng).spawn(len(shapes))
    lows, highs, status, label, lams = [], [], [], None, []
    for i, ((mp, md), seed) in enumerate(zip(shapes, seeds)):
        w = Workload(arrival=arrival(rate_per_s=1.0), prompt_tokens=int(mp), output_tokens=int(md))
        factory = callable(policy) and not hasattr(policy, "select") and not isinstance(policy, str)
        pol = policy(w) if factory else policy
        lam = lam_all[i]
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
    status = [RayStatus(st, capped=c) for st, c in zip(status, capped)]
    lows = np.minimum(lows, lams)
    mid = np.where(np.isfinite(top), 0.5 * (lows + top), lows)
    pts = shapes * mid[:, None]
    scale = np.array([region.scale_of(p) for p in pts])
    return SimulatedRegion(label=str(label), request_shapes=shapes, low_rate_per_s=lows, high_rate_per_s=highs,
                           points=pts, engine_scale=scale, ray_status=tuple(status), engine=engine,
                           inputs={"horizon_s": horizon_s, "n_replications": n_replications, "rel_tol": rel_tol,
                                   "arrivals": "poisson" if poisson else "periodic", "rng": repr(rng)})


def _check_work(engine, shapes, lams, arrival, horizon_s, n_replications) -> None:
    """Refuse, before any simulation, a region whose runs could not be simulated or would take too long:
    each run (the fastest ray's rate, a little above its fluid threshold) within the simulator's limits,
    and all the runs of all the searches within ``MAX_TOTAL_ARRIVALS`` arrivals."""
    from ..sim.core import MAX_TOTAL_ARRIVALS, check_size
    from ..workload import Workload

    i = int(np.argmax(lams))
    fastest = Workload(arrival=arrival(rate_per_s=1.05 * lams[i]), prompt_tokens=int(shapes[i][0]),
                       output_tokens=int(shapes[i][1]))
    check_size(engine, fastest, horizon_s=horizon_s, runs=n_replications, names={"runs": "n_replications"})
    n_replications = int(n_replications)
    arrivals = float(sum(1.05 * lam * horizon_s for lam in lams)) * n_replications * SEARCH_SETS
    if not arrivals <= MAX_TOTAL_ARRIVALS:
        raise ParameterError("horizon_s", horizon_s,
                             f"a region of at most {MAX_TOTAL_ARRIVALS:,} simulated arrivals over all its searches",
                             f"{len(shapes)} rays x up to {SEARCH_SETS} sets x {n_replications:,} replications of "
                             f"{horizon_s:.4g} s at about the rays' thresholds would be up to {arrivals:.3g} "
                             "arrivals; fewer rays, fewer replications or a shorter horizon")
