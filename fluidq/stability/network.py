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
  power to tell that growth from zero and sees none (but not where the idealised fluid model, withheld
  as only an upper bound, diverges: the test does not exclude growth below the band, so that stays
  "unknown").  Otherwise the simulation says "unknown": the
  test cannot tell growth of that size from zero at this horizon, or the growth is significant but
  below the band (growth, never read as flat).  A simulation verdict is finite-horizon evidence and
  the reason says so;
* ``None`` -- unknown.

When the simulation runs alongside a fluid certificate it is reported as a cross-check, and a
disagreement is stated in the reason.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np

from .._validate import integer, real
from ..errors import ParameterError
from ..results import Result, Status, plain
from ..network.caveats import capacity_caveats  # noqa: F401 (documented here too)
from ..network.model import Network, register_analysis
from .bounds import k_max_floor as _k_max_floor

# the single-engine k_max floor, read per station by fluidq.network.caveats (a description: it calls the analysis)
register_analysis(k_max_floor=_k_max_floor)

__all__ = ["NetworkStabilityResult", "check_network_stability", "min_route_s", "route_sojourn_s", "simulation_growth",
           "simulation_size"]


@dataclass(frozen=True)
class NetworkStabilityResult(Result):
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
    inputs: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        return plain({"status": self.status, "decided_by": self.decided_by, "reason": self.reason,
                      "loads": self.loads, "bottleneck": list(self.bottleneck), "is_dag": self.is_dag,
                      "cycles": self.cycles, "fluid": self.fluid.to_dict(), "simulation": self.simulation})

    @property
    def decided_in_words(self) -> str:
        """:attr:`decided_by` in words for people (:func:`decided_words`)."""
        return decided_words(self.decided_by)

    def plot(self, ax=None, path=None, **kw):
        from ..plotting.network import plot_verdict

        return plot_verdict(self, ax=ax, path=path, **kw)


def simulation_growth(network: Network, *, horizon_s: float, replications: int = 4, rng=None,
                      initial=None, start_fraction: float = 0.25, growth_tolerance: float = 0.01,
                      confidence: float = 0.95, **sim_kw) -> dict:
    """Growth of requests in system over seeded replications, judged by the shared growth test.

    The rate of each run is the least-squares slope of the number in system after the first
    ``start_fraction`` of the horizon (an oscillating unstable network such as Rybko--Stolyar still has a
    clearly positive slope over most of the run); :func:`fluidq.stability.growth.growth_test` judges
    them against a growth of ``growth_tolerance`` times the total arrival rate.  ``sim_kw`` goes to
    :func:`fluidq.simulate_network` (``swap_s_per_token`` for stations that swap preempted KV).

    Returns
    -------
    dict
        ``growth_per_s`` (mean), ``ci`` (interval at ``confidence``), ``replications``, ``horizon_s``,
        ``arrival_rate_per_s``, ``per_run``, ``band_per_s`` (the growth to detect), ``verdict``,
        ``powered``, ``needed_horizon_s``, ``test_reason``, ``test`` (the
        :class:`~fluidq.stability.growth.GrowthTest`) and ``runs``.
    """
    from ..sim.network import replicate_network
    from .growth import growth_test

    replications = integer("replications", replications, minimum=1, maximum=MAX_REPLICATIONS,
                           why="each replication is a full simulation of the network")
    horizon_s = real("horizon_s", horizon_s, positive=True)
    check_simulation_size(network, horizon_s, replications)  # before any work, with the size it would have
    from ..sim.core import _seed_sequence

    root = _seed_sequence(rng)  # None, a seed >= 0, a SeedSequence or a Generator; else refused naming rng
    runs = replicate_network(network, horizon_s=horizon_s, replications=replications, initial=initial,
                             rng=np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key), **sim_kw)

    def growth(r):
        try:
            with np.errstate(all="ignore"):
                return r.growth_rate(start_fraction=start_fraction)
        except (np.linalg.LinAlgError, ValueError):  # a degenerate series: no slope (the test says so)
            return float("nan")

    g = np.array([growth(r) for r in runs])
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
    from .growth import decide

    return decide(lo, hi, band)


def _hops_that_never_fit(network: Network) -> list:
    """Hops with a positive visit rate whose every request is larger than its station's KV cache."""
    def smallest(length):
        sup = length.support()
        return int(np.min(sup[0])) if sup is not None else 1

    rates = {}
    for b in network.flow.buffers:
        rates[b.hop] = rates.get(b.hop, 0.0) + b.rate
    stations = {st.name: st for st in network.stations}
    out = []
    for h in network.hops:
        if not rates.get(h.name, 0.0) > 0:
            continue
        names = network.engines_of(h.engine)
        need = smallest(h.prompt_tokens) + smallest(h.output_tokens)
        caps = [stations[e].engine.kv_capacity_tokens for e in names]
        if all(c is not None and need > c for c in caps):
            out.append(f"hop {h.name!r} needs at least {need} KV tokens (prompt + output), more than the KV cache of "
                       + ", ".join(f"{e!r} ({c})" for e, c in zip(names, caps)))
    return out


#: most batches one round of replications with the automatic horizon may take (an upper bound, see
#: :func:`simulation_size`; at some tens of microseconds a batch, a few seconds): a longer horizon the
#: growth test would need is not run, and the verdict says the test lacked the power at the horizon run
AUTO_BATCH_BUDGET = 200_000
#: most hop visits (expected) one round of replications with the automatic horizon may make
AUTO_VISIT_BUDGET = 1_000_000
#: most batches (upper bound) of a round after the first, when the first round's evidence asks for longer runs
#: (:func:`check_network_stability` doubles the horizon up to this).  Measured 2026-12-07 on the 2-core
#: development machine: about 0.13 us a batch (a fork-join of two Splitwise Llama-2-70B stations) and 0.23 us a hop
#: visit (a 2,000-hop route), so a round at the cap takes about a CPU-second.  The first round's budgets above
#: keep the first answer fast; this cap decides the fork-join at 0.7 and 0.9 of its mix capacity and the shipped
#: plan_code_review, which the first round left unknown (tests/network/test_network_auto_extension.py)
AUTO_EXTEND_BATCHES = 5_000_000
#: most hop visits (expected) of a round after the first
AUTO_EXTEND_VISITS = 5_000_000
#: most batches (upper bound) over all replications of a given ``horizon_s``
MAX_SIM_BATCHES = 100_000_000
#: most hop visits (requests through hops, expected) over all replications of a given ``horizon_s``
MAX_SIM_VISITS = 100_000_000
#: most replications of one verdict
MAX_REPLICATIONS = 10_000
#: fewest requests expected per run in the fitted window for a "stable" simulation verdict
MIN_FIT_ARRIVALS = 30


def simulation_size(network: Network, horizon_s: float, replications: int = 1) -> dict:
    """The size of ``replications`` simulations of ``network`` over ``horizon_s``, without running them.

    ``batches`` bounds the batches over all runs: a station runs at most one batch per shortest batch
    time ``t(1)`` and at most one per token it is offered (every batch serves a token), so at most
    ``min(horizon / t(1), horizon x its offered tokens/s + 1)`` (engines behind a JSQ router are each given the
    pooled point's tokens).  ``visits`` is the expected number of hop visits (requests through a hop) and
    ``requests`` of arrivals, over all runs.  ``batches_per_s`` is the batch bound per simulated second
    of one run.
    """
    from ..sim.core import _shortest_batch_s

    fm = network.flow
    tok = {st.name: 0.0 for st in network.stations}
    for b in fm.buffers:
        for e in ((b.engine,) if b.engine is not None else network.engines_of(b.point)):
            tok[e] = tok.get(e, 0.0) + b.rate * b.w
    per_s = 0.0
    for st in network.stations:
        t1 = _shortest_batch_s(st.engine)
        bound = 1.0 / t1 if t1 > 0 else math.inf
        per_s += min(bound, tok.get(st.name, 0.0))
    with np.errstate(over="ignore"):
        batches = float(replications) * (float(horizon_s) * per_s + len(network.stations))
        visits = float(replications) * float(horizon_s) * float(sum(b.rate for b in fm.buffers))
        requests = float(replications) * float(horizon_s) * float(sum(c.rate_per_s for c in network.classes))
    return {"batches": batches, "visits": visits, "requests": requests, "batches_per_s": per_s,
            "runs": int(replications), "horizon_s": float(horizon_s)}


def _n(x: float) -> str:
    return f"{x:.3g}" if math.isfinite(x) else "more than 1.8e+308"


def check_simulation_size(network: Network, horizon_s: float, replications: int) -> dict:
    """Refuse, before any work, simulations too large to run (see :func:`simulation_size`)."""
    from ..sim.core import _shortest_batch_s

    t1 = max((_shortest_batch_s(st.engine) for st in network.stations), default=0.0)
    if t1 > 0 and not horizon_s >= t1:
        raise ParameterError("horizon_s", horizon_s, f"a horizon of at least {t1:.4g} s",
                             "one batch of the slowest engine; a shorter run serves nothing and has no growth slope")
    size = simulation_size(network, horizon_s, replications)
    what = f"{replications} runs of {horizon_s:.4g} s"
    if not size["batches"] <= MAX_SIM_BATCHES:
        raise ParameterError("horizon_s", horizon_s, f"simulations of at most {MAX_SIM_BATCHES:,} batches over all "
                             "replications", f"{what} could take up to {_n(size['batches'])} batches "
                             f"({_n(size['batches_per_s'])} per simulated second of a run); shorten the horizon or "
                             "run fewer replications")
    if not size["visits"] <= MAX_SIM_VISITS:
        raise ParameterError("horizon_s", horizon_s, f"simulations of at most {MAX_SIM_VISITS:,} hop visits over all "
                             f"replications", f"{what} would make about {_n(size['visits'])} hop visits "
                             f"({_n(size['requests'])} requests); shorten the horizon or run fewer replications")
    return size


def _slowest_route(network: Network, hop_s, *, choose) -> float:
    """The largest, over the classes, of a route's time: ``hop_s(hop)`` summed along it, a choice's options
    reduced by ``choose`` (``min``: its quickest; ``max``: its longest), a fork's slowest branch."""
    from ..network.model import Choice, Fork, Hop

    def walk(steps):
        total = 0.0
        for st in steps:
            if isinstance(st, Hop):
                total += hop_s(st)
            elif isinstance(st, Choice):
                total += choose((walk(o) for p, o in st.options if p > 0), default=0.0)
            elif isinstance(st, Fork):
                total += max((walk(br) for br in st.branches), default=0.0)
        return total

    return max(walk(c.route) for c in network.classes)


def min_route_s(network: Network) -> float:
    """The least time a request of the slowest class needs to pass its whole route, seconds.

    A hop takes at least ``ceil(v_p / b_max) + v_d`` batches (its prompt in full batches, then one decode
    token per batch, constraint (6a)-(6c)) of at least ``t(1)`` each, with the smallest lengths the hop can
    draw; a choice takes its quickest option, a fork its slowest branch.  Until the runs are several times
    longer than this, the number in system grows while the network fills, whatever its stability.
    """
    from ..sim.core import _shortest_batch_s
    from .growth import least_iterations

    stations = {st.name: st for st in network.stations}

    def hop_s(h):
        engines = [stations[e].engine for e in network.engines_of(h.engine)]
        t1 = min(_shortest_batch_s(e) for e in engines)
        if not t1 > 0:
            return 0.0
        return least_iterations(h.prompt_tokens, h.output_tokens, max(e.b_max for e in engines)) * t1

    return _slowest_route(network, hop_s, choose=min)


#: the automatic horizon covers this many route sojourns (:func:`route_sojourn_s`), so that the fitted window
#: (after the first quarter) opens after five of them: a warm-up the runs discard
WARMUP_SOJOURNS = 20.0
#: the automatic work budget may be passed up to this factor to cover WARMUP_SOJOURNS route sojourns
WARMUP_BUDGET_FACTOR = 3.0


def _implied_batch_s(engine, offered_tokens_per_s: float, decode_share: float = 0.0,
                     context_tokens: float = 0.0) -> tuple:
    """``(b, t(b))``: the batch the offered load implies and its iteration time: the fixed point of ``b = offered * t(b)``
    (a work-conserving engine's batch at that throughput), ``1 <= b <= b_max``, iterated from ``b = 1``
    (``t`` is increasing, so the iteration rises to the smallest fixed point).  A context-aware batch time
    reads ``b * decode_share`` decoders of ``context_tokens`` each."""
    from ..batchtime.models import ContextAware
    from ..sim.core import _shortest_batch_s

    ctx = isinstance(engine.batch_time, ContextAware)

    def t(b):
        try:
            kv = [b * decode_share * context_tokens] if ctx else None
            out = engine.batch_time([float(b)], kv) if ctx else engine.batch_time(float(b))
            return float(np.asarray(out, dtype=float).reshape(-1)[0])
        except Exception:  # noqa: BLE001 - a batch time that needs a composition: its shortest batch
            return float(_shortest_batch_s(engine))

    b = 1.0
    for _ in range(60):
        nb = min(float(engine.b_max), max(1.0, offered_tokens_per_s * t(b)))
        if abs(nb - b) <= 1e-6 * b:
            break
        b = nb
    return b, t(b)


def route_sojourn_s(network: Network) -> float:
    """About how long a request of the slowest class takes to pass its longest route at the offered loads,
    seconds: per hop, ``ceil(m_p / b_max) + m_d`` iterations (the mean lengths) at the iteration time of the
    batch its station's load implies (:func:`_implied_batch_s`; a router's slowest engine), summed along the
    route (a choice's longest option, a fork's longest branch).  An estimate for sizing runs (their warm-up),
    not a bound: :func:`min_route_s` is the bound."""

    stations = {st.name: st for st in network.stations}
    pace = {n: bt[1] for n, bt in _station_batches(network).items()}

    def hop_s(h):
        names = network.engines_of(h.engine)
        iters = max(math.ceil(h.prompt_tokens.mean / stations[n].engine.b_max) for n in names) + h.output_tokens.mean
        return iters * max(pace[n] for n in names)

    return _slowest_route(network, hop_s, choose=max)


def _station_batches(network: Network) -> dict:
    """``{station: (b, t(b))}``: the batch each station's offered load implies (:func:`_implied_batch_s`)."""

    stations = {st.name: st for st in network.stations}
    loads = network.loads()
    # per station, the mean decode share m_d / (m_p + m_d) and decode context m_p + m_d / 2 of its hops
    seen: dict = {}

    for h in network.hops:
        mp, md = float(h.prompt_tokens.mean), float(h.output_tokens.mean)
        for n in network.engines_of(h.engine):
            seen.setdefault(n, []).append((md / (mp + md) if mp + md > 0 else 0.0, mp + md / 2.0))
    pace = {}
    for name, st in stations.items():
        offered = float(loads.get(name, 0.0)) * float(st.capacity_tokens_per_s)
        rows = seen.get(name) or [(0.0, 0.0)]
        share = sum(r[0] for r in rows) / len(rows)
        ctx = sum(r[1] for r in rows) / len(rows)
        pace[name] = _implied_batch_s(st.engine, offered if math.isfinite(offered) else 0.0, share, ctx)
    return pace


def _warmup_fraction(horizon_s: float, sojourn_s: float) -> float:
    """The share of an automatic run discarded as warm-up before the growth is fitted: three route sojourns
    (:func:`route_sojourn_s`), at least the first quarter and at most half of the run."""
    return min(0.5, max(0.25, 3.0 * sojourn_s / horizon_s)) if horizon_s > 0 else 0.25


def _longer_wanted(sim: dict, h: float, sf: float, route_s: float, lam: float) -> float | None:
    """The horizon the evidence of a round of ``h`` seconds asks for, or ``None`` when it asks for no longer runs:
    the growth test's ``needed_horizon_s`` (times 1.1) when it lacks the power; four route passages
    (:func:`min_route_s`) when it saw growth in a window that opens before a request can have passed its route
    (the network filling); twice the horizon when it saw growth whose interval straddles the band (above zero,
    not all above the band); twice the horizon at which ``MIN_FIT_ARRIVALS`` arrive in the fitted window when it
    saw no growth in too few arrivals."""
    verdict, need = sim["verdict"], sim["needed_horizon_s"]
    if verdict == "unknown" and need is not None and need > h:
        return 1.1 * float(need)
    lo, hi = sim["ci"]
    if verdict == "unknown" and 0 < lo and hi > sim["band_per_s"]:
        return 2.0 * h  # growth whose interval straddles the band: a longer run narrows it to one side
    if verdict == "unstable" and sf * h < route_s:
        return 4.0 * route_s
    if verdict == "stable" and lam > 0 and (1.0 - sf) * h * lam < MIN_FIT_ARRIVALS:
        return 2.0 * MIN_FIT_ARRIVALS / lam
    return None


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
                            swap_s_per_token: float | None = None, **fluid_kw) -> NetworkStabilityResult:
    """Is the network stable?  One verdict from loads, the fluid model and optionally simulation.

    Parameters
    ----------
    network : Network
    simulate : bool
        Also run ``replications`` seeded simulations of ``horizon_s`` seconds and test the growth of
        the number in system (:func:`fluidq.stability.growth.growth_test`).  Without ``horizon_s`` the
        horizon is chosen from the growth to detect: a first round of 3000 batches of the slowest engine
        (at least long enough for a drift of the band to add 20 requests), at least four times the least
        time a request needs to pass its route (:func:`min_route_s`) and :data:`WARMUP_SOJOURNS` route
        sojourns at the offered loads (:func:`route_sojourn_s`), whose first three are discarded as warm-up
        before the growth is fitted (1/4 to 1/2 of each run); it stays within :data:`AUTO_BATCH_BUDGET`
        batches and :data:`AUTO_VISIT_BUDGET` hop visits, passed up to :data:`WARMUP_BUDGET_FACTOR` times only
        to cover those sojourns.  While a round's evidence asks for longer runs -- the growth test's interval
        too wide to tell the band from zero (the ``T^{-3/2}`` scaling of the slope's spread says how long
        would), growth whose interval straddles the band, growth seen before a request can have passed its
        route, or too few arrivals in the fitted window -- rounds of at least twice the horizon follow, up to the cap of :data:`AUTO_EXTEND_BATCHES`
        batches and :data:`AUTO_EXTEND_VISITS` hop visits a round (about a CPU-second) or ``max_horizon_s``.
        Where the cap stops it, the verdict says how long the runs the evidence asks for are (and their
        batches), so that ``horizon_s`` can be given.  The verdict is therefore a *sequential* test: each round
        is a look of the growth test at 95 %, the next round runs only while the last left it undecided, and
        the first round that decides gives the verdict -- at most ``k = 1 + ceil(log2(cap / first horizon))``
        looks (the horizon at least doubles), 6 where the first round takes its whole
        :data:`AUTO_BATCH_BUDGET` (the cap is 25 times it), more when it is shorter; the result states both,
        ``simulation["looks"]`` (rounds run) and ``simulation["max_looks"]`` (k).  By the union bound a wrong
        decision over the looks is at most k times 5 %, less in practice: a look past the first runs only
        where the one before could not decide.  The level is not split across the looks (Bonferroni, 5 %/k
        each): that would need runs about ``(z_{1-0.025/k} / 1.96)^{2/3}`` longer at every look (1.3x at k = 6,
        the slope's spread scaling as ``T^{-3/2}``) to bound an error that mostly cannot happen, since an
        undecided look is the only way to another.  A given
        ``horizon_s`` is used as is, and refused before any work when its runs would pass
        :data:`MAX_SIM_BATCHES` batches or :data:`MAX_SIM_VISITS` hop visits (see
        :func:`simulation_size`).  Growth seen before a request can have passed its route is the network
        filling, not instability: "unknown".
    growth_tolerance : float
        The growth the simulation must detect, as a fraction of the total arrival rate (> 0): "stable"
        needs an interval that holds zero, ends below it and is narrow enough to tell it from zero;
        significant growth below it is not read as flat.
    tolerance : float
        Relative band around load 1 called critical.
    max_horizon_s : float, optional
        Longest horizon the automatic choice may extend to, in place of the cap of :data:`AUTO_EXTEND_BATCHES`
        batches and :data:`AUTO_EXTEND_VISITS` hop visits a round (never shorter than the first round).
    swap_s_per_token : float, optional
        Passed to :func:`fluidq.simulate_network`: the swap cost of stations whose engine's memory swaps
        preempted KV (``engine.memory.preemption == "swap"``; refused there, naming it, when missing).
        Stations with a KV cache are simulated under the single-engine kernel's memory rules.

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
    from .fluid import fluid_stability

    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    gt = real("growth_tolerance", growth_tolerance, positive=True)
    # the idealised model (every station serving b_max/t(b_max)); capacity_caveats below withhold what it
    # cannot prove for this network
    fl = fluid_stability(network, tolerance=tolerance, idealised=True, **fluid_kw)
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
        # a station whose k_max binds, loaded above 1 against its k_max capacity (the stability region along
        # its one request mix: no scheduler serves more) also grows, whatever the other caveats; fluid_stability
        # found those stations (and took their loads against that capacity) already
        kover = {k: fl.loads[k] for k in fl.k_max_capacities if fl.loads.get(k, 0.0) > 1.0 + tolerance}
        if kover and not over:
            status, decided = Status.UNSTABLE, "load"
            reason = f"{'; '.join(caveats)}; even so, {fl.reason}"
        elif over:
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
    # stations with a KV cache are simulated with the single-engine memory rules (fluidq.sim.network runs
    # fluidq.kernel.memory.StationMemory per batch); a swapping station needs its swap cost
    sim_kw = {} if swap_s_per_token is None else {"swap_s_per_token": swap_s_per_token}
    budget_note = ""
    if simulate:
        route_s = min_route_s(network)
        sojourn_s = route_sojourn_s(network)
        reps = integer("replications", replications, minimum=2, maximum=MAX_REPLICATIONS,
                       why="each replication is a full simulation of the network")
        lam = float(sum(c.rate_per_s for c in network.classes))
        sf = 0.25
        looks = max_looks = 1  # rounds of replications run, and the most the automatic horizon may run
        if horizon_s is not None:
            h = real("horizon_s", horizon_s, positive=True)
            check_simulation_size(network, h, reps)  # before any work, with the size it would have
            sim = simulation_growth(network, horizon_s=h, replications=reps, rng=rng, growth_tolerance=gt, **sim_kw)
        else:
            # long enough that the fitted window (after the first quarter) starts once a request can have
            # passed its route
            # and long enough to discard a warm-up of several route sojourns at the offered loads (real hops
            # with long decodes take tens of seconds; t(b_max) and t(1) alone sized runs that ended in the warm-up)
            h = max(_default_horizon(network, gt * lam), 4.0 * route_s, WARMUP_SOJOURNS * sojourn_s)
            # the work budget of the first round: the horizon asked for above is not run when its batches would
            # pass AUTO_BATCH_BUDGET; the rounds after it may extend up to AUTO_EXTEND_BATCHES (below)
            one = simulation_size(network, 1.0, reps)
            per_s, visits_s = one["batches_per_s"] * reps, one["visits"]
            h_budget = min(AUTO_BATCH_BUDGET / per_s if per_s > 0 else math.inf,
                           AUTO_VISIT_BUDGET / visits_s if visits_s > 0 else math.inf)
            budget = f"{AUTO_BATCH_BUDGET:,} batches and {AUTO_VISIT_BUDGET:,} hop visits a round"
            # the warm-up is not cut short by the budget: when WARMUP_SOJOURNS route sojourns fit within
            # WARMUP_BUDGET_FACTOR times it, the run covers them (beyond that the budget holds: a longer run
            # would still not cover the warm-up)
            warm = WARMUP_SOJOURNS * sojourn_s
            h_floor = warm if warm <= WARMUP_BUDGET_FACTOR * h_budget else 0.0
            if h > max(h_budget, h_floor):
                budget_note = (f"; the horizon the test asks for ({h:.4g} s: up to {_n(h * per_s)} batches and "
                               f"{_n(h * visits_s)} hop visits over {reps} runs) passes the automatic work budget "
                               f"of {budget}, so {max(h_budget, h_floor):.4g} s was run (give horizon_s to run longer)")
                h = max(h_budget, h_floor)
            check_simulation_size(network, h, reps)
            sf = _warmup_fraction(h, sojourn_s)
            sim = simulation_growth(network, horizon_s=h, replications=reps, rng=rng, growth_tolerance=gt,
                                    start_fraction=sf, **sim_kw)
            # while the evidence asks for longer runs (the test lacks the power, the fitted window opens before
            # a request can have passed its route, too few arrivals in it), rounds of at least twice the horizon,
            # up to the extension cap: AUTO_EXTEND_BATCHES batches and AUTO_EXTEND_VISITS hop visits a round,
            # or max_horizon_s when given
            if max_horizon_s is not None:
                h_ext = real("max_horizon_s", max_horizon_s, positive=True)
                cap_words = f"max_horizon_s={h_ext:.4g} s"
            else:
                h_ext = min(AUTO_EXTEND_BATCHES / per_s if per_s > 0 else math.inf,
                            AUTO_EXTEND_VISITS / visits_s if visits_s > 0 else math.inf)
                cap_words = (f"the automatic cap of {AUTO_EXTEND_BATCHES:,} batches and {AUTO_EXTEND_VISITS:,} hop "
                             f"visits over the {reps} runs of a round")
            h_ext = max(h_ext, h)
            # a sequential test: each round (look) is the growth test at 95 %, and a round follows only while the
            # one before it left the verdict undecided; the horizon at least doubles up to h_ext, so at most
            # 1 + ceil(log2(h_ext / h)) looks (6 where the first round takes its whole batch budget, the cap being
            # 25 times it); stated in the result (simulation["looks"], ["max_looks"]), not Bonferroni-split
            max_looks = 1 + max(0, math.ceil(math.log2(h_ext / h) - 1e-12)) if h > 0 else 1
            want = _longer_wanted(sim, h, sf, route_s, lam)
            extended = False
            while want is not None and h < h_ext:
                looks += 1
                h = min(h_ext, max(2.0 * h, want))
                check_simulation_size(network, h, reps)
                sf = _warmup_fraction(h, sojourn_s)
                sim = simulation_growth(network, horizon_s=h, replications=reps, rng=rng, growth_tolerance=gt,
                                        start_fraction=sf, **sim_kw)
                want, extended = _longer_wanted(sim, h, sf, route_s, lam), True
            if extended:
                budget_note = ""  # the first round's note: superseded by the rounds after it
            if want is not None:
                budget_note = (f"; the automatic horizon stops at {h:.4g} s (up to {_n(h * per_s)} batches and "
                               f"{_n(h * visits_s)} hop visits over {reps} runs), {cap_words}: runs of about "
                               f"{want:.4g} s (up to {_n(want * per_s)} batches and {_n(want * visits_s)} hop visits) "
                               "are what the evidence asks for to decide (give horizon_s to run longer)")
        runs = tuple(sim.pop("runs"))
        test = sim.pop("test")
        sim["looks"], sim["max_looks"] = looks, max_looks
        sv = test.status
        words = f"simulation: {test.reason}"
        if sv == Status.UNSTABLE and sf * h < route_s:
            # the fit window starts before a request can have passed its route: the network is still filling
            sv = Status.UNKNOWN
            sim["verdict"] = sv.value
            words += (f", but the fitted window starts at {sf * h:.4g} s, before a request can have passed its "
                      f"route (at least {route_s:.4g} s): the number in system grows while the network fills, so "
                      f"this is no evidence of instability (runs of at least {4 * route_s:.4g} s are needed)")
        seen = (1.0 - sf) * h * lam  # expected arrivals per run in the fitted window (after the warm-up)
        if sv == Status.STABLE and seen < MIN_FIT_ARRIVALS:
            sv = Status.UNKNOWN
            sim["verdict"] = sv.value
            words += (f", but only about {seen:.3g} requests arrive per run in the fitted window (fewer than "
                      f"{MIN_FIT_ARRIVALS}): too little traffic to call it stable (run longer)")
        words += budget_note if sv == Status.UNKNOWN else ""
        if decided is None and status == Status.UNKNOWN and sv == Status.STABLE and fl.status == Status.UNSTABLE:
            # the test rules out growth of the band, not slower growth; the idealised model (capacities that
            # only bound the real ones from above) diverges: slow growth is the likely reading, not flat
            reason = (f"{reason}; {words}; but the idealised fluid model above diverges and growth below "
                      f"{sim['band_per_s']:.3g}/s is not excluded by the simulation: unknown (a longer horizon or a "
                      "smaller growth_tolerance can tell)")
        elif decided is None and status == Status.UNKNOWN and sv != Status.UNKNOWN:
            status = sv
            decided = "simulation"
            reason = f"{reason}; {words}: {sv.value} on this horizon (finite-horizon evidence, not a proof)"
        elif decided is not None and sv != Status.UNKNOWN and sv != status and status != Status.CRITICAL:
            reason = f"{reason}; NOTE: {words}, which disagrees (horizon too short, or transient)"
        else:
            reason = f"{reason}; {words}"
    inputs = {**fl.inputs, "simulate": bool(simulate), "horizon_s": horizon_s, "replications": replications,
              "growth_tolerance": gt, "max_horizon_s": max_horizon_s, "swap_s_per_token": swap_s_per_token,
              "rng": rng if rng is None or isinstance(rng, int) else repr(rng)}
    return NetworkStabilityResult(status=status, decided_by=decided, reason=reason, loads=loads, bottleneck=bott,
                                  is_dag=network.is_dag, cycles=network.cycles(), fluid=fl, simulation=sim,
                                  runs=runs, inputs=inputs)


def decided_words(decided_by) -> str:
    """:attr:`NetworkStabilityResult.decided_by` in words for people (``fluid:diverging_path`` -> "the fluid
    model: diverging path", ``load`` -> "the station loads")."""
    if not decided_by:
        return "nothing: unknown"
    if decided_by.startswith("fluid:"):
        return f"the fluid model: {decided_by.split(':', 1)[1].replace('_', ' ')}"
    return {"load": "the station loads", "simulation": "simulation"}.get(decided_by, decided_by)


# the documented old path ``fluidq.network.stability`` (and ``fluidq.network.check_network_stability``):
# registered here, by the analysis, so that the topology package imports no verdict
sys.modules.setdefault("fluidq.network.stability", sys.modules[__name__])
_net_pkg = sys.modules["fluidq.network"]
for _name in ("check_network_stability", "NetworkStabilityResult"):
    setattr(_net_pkg, _name, globals()[_name])
_net_pkg.stability = sys.modules[__name__]
