"""One stability verdict for a network: load conditions, fluid model and (optionally) simulation.

``check_network_stability(network, simulate=False, ...)`` (also reached as
``fluidq.check_stability(network, ...)``) returns a :class:`NetworkStabilityResult` whose
``decided_by`` names the argument that settled it:

* ``"load"`` -- a service point is overloaded (unstable under every policy) or at load 1 (critical);
* ``"fluid:feedforward"``, ``"fluid:lyapunov"``, ``"fluid:diverging_path"`` -- the fluid model's
  certificate (see :func:`fluidq.fluid.fluid_stability`);
* ``"simulation"`` -- the fluid model gave no answer and seeded replications did, through the shared
  growth test (:func:`fluidq.stability.growth.growth_test`): the number in system grows (95 %
  interval of the growth slope above ``growth_tolerance`` of the arrival rate), or the test has the
  power to tell that growth from zero and sees none.  Otherwise the simulation says "unknown": the
  test cannot tell growth of that size from zero at this horizon, or the growth is significant but
  below the band (growth, never read as flat).  A simulation verdict is finite-horizon evidence and
  the reason says so;
* ``None`` -- unknown.

When the simulation runs alongside a fluid certificate it is reported as a cross-check, and a
disagreement is stated in the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import integer, real
from ..errors import ParameterError
from ..results import Status, plain
from .model import Network

__all__ = ["NetworkStabilityResult", "check_network_stability", "simulation_growth"]


@dataclass(frozen=True)
class NetworkStabilityResult:
    """Verdict for a network.

    Attributes
    ----------
    status : Status
    decided_by : str or None
        Which argument decided (see the module docstring).
    reason : str
    loads : dict
        Load per station (engines behind a JSQ router share its pooled load).
    bottleneck : tuple
        ``(point, load)``.
    is_dag : bool
    cycles : list
    fluid : FluidStabilityResult
    simulation : dict or None
        ``growth_per_s`` (mean), ``ci`` (95 % interval), ``replications``, ``horizon_s``,
        ``arrival_rate_per_s`` and the per-run growth rates.
    """

    status: Status
    decided_by: str | None
    reason: str
    loads: dict
    bottleneck: tuple
    is_dag: bool
    cycles: list
    fluid: object
    simulation: dict | None = None
    method: str = "network"
    runs: tuple = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return plain({"status": self.status, "decided_by": self.decided_by, "reason": self.reason,
                      "loads": self.loads, "bottleneck": list(self.bottleneck), "is_dag": self.is_dag,
                      "cycles": self.cycles, "fluid": self.fluid.to_dict(), "simulation": self.simulation})

    def plot(self, ax=None, path=None, **kw):
        from ..plotting.network import plot_verdict

        return plot_verdict(self, ax=ax, path=path, **kw)


def simulation_growth(network: Network, *, horizon_s: float, replications: int = 4, rng=None,
                      initial=None, start_fraction: float = 0.25, growth_tolerance: float = 0.01,
                      confidence: float = 0.95) -> dict:
    """Growth of requests in system over seeded replications, judged by the shared growth test.

    The rate of each run is the least-squares slope of the number in system after the first
    ``start_fraction`` of the horizon (an oscillating unstable network such as Rybko--Stolyar still has a
    clearly positive slope over most of the run); :func:`fluidq.stability.growth.growth_test` judges
    them against a growth of ``growth_tolerance`` times the total arrival rate.

    Returns
    -------
    dict
        ``growth_per_s`` (mean), ``ci`` (interval at ``confidence``), ``replications``, ``horizon_s``,
        ``arrival_rate_per_s``, ``per_run``, ``band_per_s`` (the growth to detect), ``verdict``,
        ``powered``, ``needed_horizon_s``, ``test_reason``, ``test`` (the
        :class:`~fluidq.stability.growth.GrowthTest`) and ``runs``.
    """
    from ..stability.growth import growth_test
    from .sim import replicate_network

    runs = replicate_network(network, horizon_s=horizon_s, replications=replications, rng=rng, initial=initial)
    g = np.array([r.growth_rate(start_fraction=start_fraction) for r in runs])
    lam = float(sum(c.rate_per_s for c in network.classes))
    test = growth_test(g, band=growth_tolerance * lam, horizon_s=horizon_s, confidence=confidence,
                       band_words=f"{100 * growth_tolerance:.3g}% of the arrival rate {lam:.4g}/s")
    return {"growth_per_s": test.mean, "ci": test.ci, "replications": len(g), "horizon_s": horizon_s,
            "arrival_rate_per_s": lam, "per_run": g.tolist(), "band_per_s": test.band,
            "verdict": test.status.value, "powered": test.powered, "needed_horizon_s": test.needed_horizon_s,
            "test_reason": test.reason, "test": test, "runs": runs}


def simulation_verdict(lo: float, hi: float, band: float) -> Status:
    """Verdict of an interval ``[lo, hi]`` for the growth of the number in system (per second).

    The rule of :func:`fluidq.stability.growth.decide`: unstable when the whole interval is above
    ``band``; stable when it is below zero (a drift down, from a backlog at the start, is not growth) or
    holds zero, ends below ``band`` and has a half-width of at most ``band / 2`` (the power to tell growth
    of ``band`` from zero); unknown otherwise.
    """
    from ..stability.growth import decide

    return decide(lo, hi, band)


def capacity_caveats(network: Network) -> list:
    """Why the load and fluid arguments may not describe ``network``, one line per cause.

    Both take a station's capacity to be ``b_max / t(b_max)`` tokens per second whatever requests it
    serves.  That is an upper bound, and not the capacity, when the engine or its scheduler caps the
    batch size (``k_max``: the capacity then depends on the request mix), the scheduler's budget is below
    the engine's, the batch time grows with the KV cache (context-aware), or a KV-cache capacity limits
    the residents.  A ``k_max`` that can never bind (at or above the most requests a batch holds,
    :func:`fluidq.stability.binding_k_max`) is no cause.  An overload (a load above 1 at the upper bound) still proves instability.
    """
    from ..stability import binding_k_max

    out = []
    for st in network.stations:
        eng, pol = st.engine, st.policy
        why = []
        k = binding_k_max(eng, pol)  # a k_max at or above the most requests a batch can hold never binds
        if k is not None:
            who = "engine" if k == eng.k_max else "scheduler"
            why.append(f"{who} k_max={k}")
        if getattr(pol, "b_max", None) is not None and pol.b_max < eng.b_max:
            why.append(f"scheduler budget {pol.b_max} < engine b_max {eng.b_max}")
        if getattr(eng.batch_time, "kind", "") == "context_aware":
            why.append("a context-aware batch time t(b, kv)")
        if eng.kv_capacity_tokens is not None:
            why.append(f"kv_capacity_tokens={eng.kv_capacity_tokens}")
        if why:
            out.append(f"station {st.name!r} has {', '.join(why)}: b_max/t(b_max) is only an upper bound on its "
                       "capacity")
    for r in network.shared_jsq_routers():
        out.append(f"JSQ router {r!r} shares an engine with other traffic: its split follows the queues, so the "
                   "loads and the fluid model (at an even split) do not describe it")
    return out


def _hops_that_never_fit(network: Network) -> list:
    """Hops with a positive visit rate whose every request is larger than its station's KV cache."""
    def smallest(length):
        sup = length.support()
        return int(np.min(sup[0])) if sup is not None else 1

    rates = {}
    for b in network.flow.buffers:
        rates[b.hop] = rates.get(b.hop, 0.0) + b.rate
    stations = {st.name: st for st in network.stations}
    routers = {r.name: r for r in network.routers}
    out = []
    for h in network.hops:
        if not rates.get(h.name, 0.0) > 0:
            continue
        names = routers[h.engine].engines if h.engine in routers else (h.engine,)
        need = smallest(h.prompt_tokens) + smallest(h.output_tokens)
        caps = [stations[e].engine.kv_capacity_tokens for e in names]
        if all(c is not None and need > c for c in caps):
            out.append(f"hop {h.name!r} needs at least {need} KV tokens (prompt + output), more than the KV cache of "
                       + ", ".join(f"{e!r} ({c})" for e, c in zip(names, caps)))
    return out


def _default_horizon(network, band_per_s: float) -> float:
    """First-round horizon: 3000 batches of the slowest engine at full budget, and long enough that a
    drift of ``band_per_s`` adds 20 requests over the run."""
    worst = 0.0
    for s in network.stations:
        worst = max(worst, float(s.engine.batch_time(s.engine.b_max)))
    return max(3000.0 * worst, 20.0 / band_per_s if band_per_s > 0 else 0.0)


def check_network_stability(network: Network, *, simulate: bool = False, horizon_s: float | None = None,
                            replications: int = 4, rng=None, growth_tolerance: float = 0.01,
                            tolerance: float = 1e-9, max_horizon_s: float | None = None,
                            **fluid_kw) -> NetworkStabilityResult:
    """Is the network stable?  One verdict from loads, the fluid model and optionally simulation.

    Parameters
    ----------
    network : Network
    simulate : bool
        Also run ``replications`` seeded simulations of ``horizon_s`` seconds and test the growth of
        the number in system (:func:`fluidq.stability.growth.growth_test`).  Without ``horizon_s`` the
        horizon is chosen from the growth to detect: a first round of 3000 batches of the slowest engine
        (at least long enough for a drift of the band to add 20 requests), then, if its interval is too
        wide to tell that growth from zero, one round at the horizon the ``T^{-3/2}`` scaling of the
        slope's spread says would (at most ``max_horizon_s``).  A given ``horizon_s`` is used as is.
    growth_tolerance : float
        The growth the simulation must detect, as a fraction of the total arrival rate (> 0): "stable"
        needs an interval that holds zero, ends below it and is narrow enough to tell it from zero;
        significant growth below it is not read as flat.
    tolerance : float
        Relative band around load 1 called critical.
    max_horizon_s : float, optional
        Longest horizon the automatic choice may pick (default 10 times its first round).

    Returns
    -------
    NetworkStabilityResult

    Examples
    --------
    >>> from fluidq.network import Network, check_network_stability
    >>> lk = Network.classical(stations=["S1", "S2"], routes={"A": [("S1", "1"), ("S2", "2"), ("S2", "3"),
    ...     ("S1", "4")]}, rate_per_s=1.0, mean_times={"1": 0.1, "2": 0.6, "3": 0.1, "4": 0.6},
    ...     priority={"S1": ["4", "1"], "S2": ["2", "3"]})
    >>> r = check_network_stability(lk)
    >>> r.status.value, r.decided_by
    ('unstable', 'fluid:diverging_path')
    """
    from ..fluid.stability import fluid_stability

    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    gt = real("growth_tolerance", growth_tolerance, positive=True)
    fl = fluid_stability(network, tolerance=tolerance, **fluid_kw)
    loads = network.loads()
    bott = network.bottleneck
    status = fl.status
    if fl.certificate == "load":
        decided = "load"
    elif fl.certificate is not None:
        decided = f"fluid:{fl.certificate}"
    else:
        decided = None
    reason = fl.reason
    caveats = capacity_caveats(network)
    unfit = _hops_that_never_fit(network)
    if unfit:
        caveats = []  # decided: requests that can never be served pile up
        status, decided = Status.UNSTABLE, "load"
        reason = ("; ".join(unfit) + ": those requests can never be served, so they accumulate (unstable under "
                  "every discipline)")
    if caveats:
        # only an overload at the upper-bound capacities (at the best split of shared JSQ routers) proves
        # anything; every other verdict of the idealised model is withheld
        best = network.best_split_loads()
        over = {k: v for k, v in best["loads"].items() if v > 1.0 + tolerance}
        if over:
            name = max(over, key=over.get)
            status, decided = Status.UNSTABLE, "load"
            reason = (f"{'; '.join(caveats)}; even so, station {name!r} has load {over[name]:.4g} > 1 at its "
                      f"upper-bound capacity{' and the best split of the JSQ routers' if best['shares'] else ''}: "
                      "its work grows under every discipline and routing")
        else:
            status, decided = Status.UNKNOWN, None
            reason = (f"{'; '.join(caveats)}. The idealised model says: {fl.status.value} ({fl.reason}); "
                      f"largest load at the best split {best['max_load']:.4g}; not a verdict for this network "
                      "(simulate to decide)")
    sim = None
    runs = ()
    kv_limited = [st.name for st in network.stations if st.engine.kv_capacity_tokens is not None]
    if simulate and kv_limited:
        reason = (f"{reason}; no simulation: the network simulator does not model the KV-cache limit of "
                  f"{', '.join(map(repr, kv_limited))}")
        simulate = False
    if simulate:
        reps = integer("replications", replications, minimum=2)
        lam = float(sum(c.rate_per_s for c in network.classes))
        if horizon_s is not None:
            h = real("horizon_s", horizon_s, positive=True)
            sim = simulation_growth(network, horizon_s=h, replications=reps, rng=rng, growth_tolerance=gt)
        else:
            h = _default_horizon(network, gt * lam)
            cap_h = (10.0 * h if max_horizon_s is None else
                     max(h, real("max_horizon_s", max_horizon_s, positive=True)))
            sim = simulation_growth(network, horizon_s=h, replications=reps, rng=rng, growth_tolerance=gt)
            need = sim["needed_horizon_s"]
            if sim["verdict"] == "unknown" and need is not None and need > h:
                # the first round cannot tell the band from zero: one round at the horizon that would
                h = min(cap_h, 1.1 * need)
                sim = simulation_growth(network, horizon_s=h, replications=reps, rng=rng, growth_tolerance=gt)
        runs = tuple(sim.pop("runs"))
        test = sim.pop("test")
        sv = test.status
        words = f"simulation: {test.reason}"
        if decided is None and status in (Status.UNKNOWN,) and sv != Status.UNKNOWN:
            status = sv
            decided = "simulation"
            reason = f"{reason}; {words}: {sv.value} on this horizon (finite-horizon evidence, not a proof)"
        elif decided is not None and sv != Status.UNKNOWN and sv != status and status != Status.CRITICAL:
            reason = f"{reason}; NOTE: {words}, which disagrees (horizon too short, or transient)"
        else:
            reason = f"{reason}; {words}"
    return NetworkStabilityResult(status=status, decided_by=decided, reason=reason, loads=loads, bottleneck=bott,
                                  is_dag=network.is_dag, cycles=network.cycles(), fluid=fl, simulation=sim,
                                  runs=runs)
