"""Stability from simulation: replications, backlog growth slopes, and the empirical threshold.

The fluid limit of Li, Dai, Peng (arXiv:2504.07347, Theorem 2) predicts that the token backlog of
a work-conserving engine grows at ``max(0, lambda (m_p + m_d) - capacity)`` tokens per second.
:func:`replicate` estimates that slope from seeded replications (least squares over the second
part of each run, a Student-t confidence interval across replications) and gives a verdict:

* ``"growing"``: the whole interval lies above the tolerance (default 1 % of the offered load);
* ``"bounded"``: the interval lies below zero, or holds zero, ends below the tolerance and is narrow
  enough (half-width at most half the tolerance) to tell growth of the tolerance from zero -- and the
  fitted window saw at least ``MIN_FIT_ARRIVALS`` arrivals per run;
* ``"inconclusive"``: otherwise -- the test cannot tell growth of the tolerance from zero at this
  horizon (run longer or replicate more; the reason says about how long), or the backlog grows
  significantly by less than the tolerance, which is growth and not read as flat.

This is the test every simulation verdict of fluidq shares (:func:`fluidq.stability.growth.growth_test`,
also used for networks).  "Bounded" is a statement about the horizon simulated: a backlog that grows
more slowly than the tolerance is not excluded.
"""
from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from .._validate import integer, real
from ..capacity import max_throughput, offered_tokens_per_s, request_work, tokens_per_request
from ..engine import Engine
from ..errors import ParameterError
from ..results import Result, Status, ThresholdResult, plain
from ..sim.core import MAX_RUNS, _seed_sequence, check_size, simulate
from ..workload import Workload
from .growth import _n, growth_test, interval, least_iterations

__all__ = ["ReplicationResult", "ThresholdResult", "find_threshold", "replicate"]

#: most replication sets one find_threshold may run
MAX_STEPS = 1000
#: fewest arrivals per run in the fitted window for a "bounded" verdict
MIN_FIT_ARRIVALS = 30

_STATUS = {"growing": Status.UNSTABLE, "bounded": Status.STABLE, "inconclusive": Status.UNKNOWN}
_VERDICT = {v: k for k, v in _STATUS.items()}


def _ci(x: np.ndarray, confidence: float) -> tuple[float, float, float]:
    return interval(x, confidence)


@dataclass(frozen=True, eq=False)
class ReplicationResult(Result):
    """Seeded replications of one simulation and the stability verdict they support.

    Attributes
    ----------
    verdict : str
        ``"growing"``, ``"bounded"`` or ``"inconclusive"`` (see the module docstring); ``status``
        gives the same as a :class:`~fluidq.Status` (unstable / stable / unknown).
    slope_tokens_per_s : float
        Mean over replications of the fitted token-backlog slope.
    slope_ci : tuple of float
        Its confidence interval at ``confidence``.
    slopes_tokens_per_s, slopes_requests_per_s : numpy.ndarray
        The per-replication slopes (tokens/s and requests/s).
    predicted_slope_tokens_per_s : float
        Fluid prediction ``max(0, lambda (m_p + m_d) - capacity)``, with the rate the scheduler serves
        under a backlog as capacity.  When ``k_max`` binds for a work-conserving scheduler that is not
        region-aware that rate is not known: the smaller of the k_max region's rate and that of the
        region of the batches it forms (:func:`fluidq.region.policy_region`, an outer estimate) bounds it
        from above, so the prediction is a lower bound on the slope (``inputs["capacity_is_bound"]``) and
        ``fluid_in_ci`` may be false with the verdict right.  For a replayed trace (one
        sample path, not a stationary process) the slope of the fluid path driven by the replayed
        arrivals themselves (:meth:`SimResult.fluid_backlog_slope`), whose effective load is in
        ``inputs["replayed_window"]``.
    fluid_in_ci : bool
        Whether the prediction lies in ``slope_ci``.
    tolerance_tokens_per_s : float
        The slope below which a backlog counts as bounded.
    mean_requests_in_system, mean_requests_ci : float, tuple
        Time-average requests in the system (after ``start_frac`` of each run) and its interval.
    runs : tuple of SimResult
        The replications kept (every one with ``keep_runs=True``, the first ``k`` with ``keep_runs=k``,
        none with ``False``).
    """

    policy: str
    arrival_rate_per_s: float
    verdict: str
    slope_tokens_per_s: float
    slope_ci: tuple
    slopes_tokens_per_s: np.ndarray
    slopes_requests_per_s: np.ndarray
    predicted_slope_tokens_per_s: float
    tolerance_tokens_per_s: float
    confidence: float
    mean_requests_in_system: float
    mean_requests_ci: tuple
    horizon_s: float
    n_replications: int
    runs: tuple = field(default=(), repr=False)
    reason: str = ""
    inputs: dict = field(default_factory=dict, repr=False)

    @property
    def status(self) -> Status:
        return _STATUS[self.verdict]

    @property
    def fluid_in_ci(self) -> bool:
        return bool(self.slope_ci[0] <= self.predicted_slope_tokens_per_s <= self.slope_ci[1])

    def to_dict(self) -> dict:
        return plain({"policy": self.policy, "arrival_rate_per_s": self.arrival_rate_per_s, "verdict": self.verdict,
                      "status": self.status, "slope_tokens_per_s": self.slope_tokens_per_s,
                      "slope_ci": list(self.slope_ci), "slopes_tokens_per_s": self.slopes_tokens_per_s,
                      "slopes_requests_per_s": self.slopes_requests_per_s,
                      "predicted_slope_tokens_per_s": self.predicted_slope_tokens_per_s,
                      "fluid_in_ci": self.fluid_in_ci, "tolerance_tokens_per_s": self.tolerance_tokens_per_s,
                      "confidence": self.confidence, "mean_requests_in_system": self.mean_requests_in_system,
                      "mean_requests_ci": list(self.mean_requests_ci), "horizon_s": self.horizon_s,
                      "n_replications": self.n_replications, "reason": self.reason, "inputs": self.inputs})

    def plot(self, ax=None, key: str = "requests", **kw):
        """Backlog trajectories of every replication."""
        from ..plotting.sim import plot_trajectories

        return plot_trajectories({f"{self.policy} #{i}": r for i, r in enumerate(self.runs)}, key=key, ax=ax, **kw)


@functools.cache
def _sim_keywords() -> frozenset:
    """The keywords of :func:`simulate` that :func:`replicate` passes on (read once: a threshold search calls
    replicate many times)."""
    import inspect

    return frozenset(inspect.signature(simulate).parameters) - {"engine", "workload", "policy", "horizon_s", "rng"}


def _check_sim_keywords(sim_kw: dict) -> None:
    """Refuse, naming it, a keyword :func:`simulate` does not take, before any run (it raised a bare
    TypeError from the first replication)."""
    known = _sim_keywords()
    for k in sim_kw:
        if k not in known:
            raise ParameterError(k, sim_kw[k], "a keyword of fluidq.simulate that replicate passes on: "
                                 + ", ".join(sorted(known)))


def replicate(engine, workload: Workload, policy="sarathi", *, n_replications: int = 8, horizon_s: float = 100.0,
              rng=None, confidence: float = 0.95, start_frac: float = 0.5, tolerance: float = 0.01,
              keep_runs: bool | int = True, progress=None, **sim_kw) -> ReplicationResult:
    """Run ``n_replications`` independent simulations and judge whether the backlog grows.

    Parameters
    ----------
    engine, workload, policy
        As for :func:`simulate`.
    n_replications : int
        Independent runs (>= 2), seeded by ``SeedSequence(rng).spawn(n_replications)``.
    horizon_s : float or None
        Length of each run.  ``None``: chosen from the growth to detect (``tolerance`` of the offered
        load): a first round of ``max(3000 t(b_max), 300 / lambda)`` seconds, then, when its interval is
        too wide to tell that growth from zero, one round at the horizon the ``T^{-3/2}`` scaling of the
        slope's spread says would (at most 10 times the first, and within the simulator's size limits).  A
        "growing" verdict is taken only when its interval clears :func:`transient_slope` (what a stable engine
        started empty can show in the fitted window) and, where the capacity says the engine keeps up, the
        window opens after the heavy-traffic relaxation time ``2 sigma^2 / (capacity - offered)^2``
        (``~ E[S] / (1 - rho)^2``); otherwise one longer round on the same seeds must confirm it (at most
        :data:`CONFIRM_MAX_FACTOR` times the first), else the verdict is "inconclusive".
        ``inputs["auto_horizon"]`` records the rounds, ``inputs["transient_slope_tokens_per_s"]`` and
        ``inputs["relaxation_s"]`` the two limits.
    rng : None, int, SeedSequence or Generator
        Root of the seeds (``None``: fresh entropy, recorded in ``inputs``; a Generator gives the
        root entropy by one draw; an int seed must be >= 0).
    confidence : float
        Level of the Student-t intervals (0 < confidence < 1).
    start_frac : float
        The slope is fitted over ``[start_frac * horizon, horizon]`` (the start is a transient).  A
        "growing" verdict needs the window to open after a request can have left: the shortest request
        takes ``ceil(p / b_max) + d`` iterations (smallest lengths); at the runs' mean iteration time that
        is ``inputs["fill_s"]``, and a window opening before it gives "inconclusive" (the engine is still
        filling; the network verdict has the same rule).
    tolerance : float
        Bounded/growing boundary as a fraction of the offered load ``lambda (m_p + m_d)``.
    keep_runs : bool or int
        Keep the :class:`SimResult` of each replication (``True``), of none (``False``), or of the first
        ``k`` (an int ``k``: memory for ``k`` runs, not ``n_replications``).
    **sim_kw
        Passed to :func:`simulate` (``method``, ``preemption``...).

    Returns
    -------
    ReplicationResult

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347, Theorem 2 (fluid backlog slope).
    """
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload (replications redraw its arrivals)")
    n_replications = integer("n_replications", n_replications, minimum=2, maximum=MAX_RUNS,
                             why="each replication is a full simulation")
    _check_sim_keywords(sim_kw)
    if horizon_s is None:
        return _replicate_auto(engine, workload, policy, n_replications=n_replications, rng=rng,
                               confidence=confidence, start_frac=start_frac, tolerance=tolerance,
                               keep_runs=keep_runs, progress=progress, **sim_kw)
    horizon_s = real("horizon_s", horizon_s, positive=True)
    confidence = real("confidence", confidence)
    if not 0 < confidence < 1:
        raise ParameterError("confidence", confidence, "a level strictly between 0 and 1")
    start_frac = real("start_frac", start_frac)
    if not 0 <= start_frac < 1:
        raise ParameterError("start_frac", start_frac, "a fraction in [0, 1)")
    tolerance = real("tolerance", tolerance, positive=True)
    # refuse, before any run, replications too large to simulate (as simulate() does for one run)
    check_size(engine, workload, horizon_s, None, runs=n_replications, names={"runs": "n_replications"})
    ss = _seed_sequence(rng)
    children = ss.spawn(n_replications)
    from ..dtmc.saturation import saturation

    cap, cap_how, bound = _k_max_saturation(engine, saturation(engine, workload, policy), workload)
    runs, st, sr, mq, fit_n, tbar = [], [], [], [], [], []
    replay = None
    for i, child in enumerate(children):
        r = simulate(engine, workload, policy, horizon_s=horizon_s, rng=child, **sim_kw)
        if i == 0 and workload.replays_trace:
            replay = {**r.offered(), "fit_window": r.offered(start_frac),
                      "fluid_slope_tokens_per_s": (r.fluid_backlog_slope(cap, start_frac) if cap > 0
                                                   else r.offered(start_frac)["tokens_per_s"])}
        st.append(r.backlog_slope("tokens", start_frac))
        sr.append(r.backlog_slope("requests", start_frac))
        mq.append(r.time_average("requests", start_s=start_frac * r.end_s))
        fit_n.append(r.offered(start_frac)["arrivals"])
        if r.n_iterations > 0:  # the run's mean iteration time (busy time per iteration)
            tbar.append(r.busy_fraction * r.end_s / r.n_iterations)
        if keep_runs is True or (keep_runs is not False and i < keep_runs):
            runs.append(r)
        if progress is not None:
            progress(i + 1, n_replications)
    st, sr = np.asarray(st), np.asarray(sr)
    m, lo, hi = _ci(st, confidence)
    mq_m, mq_lo, mq_hi = _ci(np.asarray(mq), confidence)
    offered = offered_tokens_per_s(engine, workload)  # token work: m_p + m_d - 1 per request with prefill_emits_token
    pred = max(0.0, offered - cap)
    pred_txt = f"max(0, offered - {_n(cap)} tokens/s served under backlog [{cap_how}])"
    if replay is not None:
        # a replayed window offers what its arrivals hold, not the trace's mean rate: compare with the
        # fluid path those very arrivals drive (the tolerance stays relative to the nominal load)
        pred = replay["fluid_slope_tokens_per_s"]
        pred_txt = "of the replayed arrivals"
    if bound and replay is None:
        pred_txt += ", a lower bound on the slope (that rate bounds what the scheduler serves from above)"
    tol = tolerance * offered
    identical = bool(np.all(st == st[0]))
    note = ""
    if identical and workload.replays_trace:
        # a replayed trace gives the same path every time: one sample, no interval; demand a clear trend
        # flat means within half the tolerance (as for identical runs in the shared growth test): a slope
        # between half the tolerance and 5x it is neither flat nor a clear trend
        note = ("; the replications are identical (a replayed trace is one sample path), so growth must exceed "
                "5x the tolerance, and flat means within half of it")
        verdict = "growing" if m > 5 * tol else ("bounded" if abs(m) <= 0.5 * tol else "inconclusive")
        need = None
    else:
        # the test every simulation verdict shares: "bounded" only with the power to tell growth of the
        # tolerance from zero, and significant growth below the tolerance is not read as flat
        test = growth_test(st, band=tol, horizon_s=horizon_s, confidence=confidence, unit="tokens",
                           band_words=f"{tolerance:.0%} of the offered load")
        verdict = _VERDICT[test.status]
        note = f"; {test.finding}"
        need = test.needed_horizon_s
    few = float(np.mean(fit_n)) if fit_n else 0.0
    if verdict == "bounded" and few < MIN_FIT_ARRIVALS:
        # a window that saw (almost) nothing arrive is no evidence of a bounded backlog
        verdict = "inconclusive"
        note += (f"; but only {few:.3g} arrivals per run fall in the fitted window (fewer than {MIN_FIT_ARRIVALS}): "
                 "too little traffic to call the backlog bounded (run longer)")
    # a request stays for at least ceil(p / b_max) + d iterations: until such a stay has passed, the number
    # in system rises to its level whether or not the engine is stable (the network verdict's rule)
    least = least_iterations(workload.prompt_tokens, workload.output_tokens, engine.b_max)
    fill_s = least * (float(np.mean(tbar)) if tbar else math.nan)
    if verdict == "growing" and fill_s > start_frac * horizon_s:
        verdict = "inconclusive"
        note += (f"; but the fitted window opens at {start_frac * horizon_s:.4g} s, before a request can have "
                 f"left (the shortest request takes {least} iterations, "
                 f"{fill_s:.4g} s at these runs' mean iteration time): the number in system still rises as the "
                 f"engine fills, so this is no evidence of growth (runs of at least {fill_s / start_frac:.4g} s "
                 "are needed)")
    if identical and not workload.replays_trace and not note:
        note = "; the replications are identical (deterministic arrivals and lengths)"
    name = runs[0].policy if runs else getattr(policy, "name", str(policy))
    reason = (f"token-backlog slope {_n(m)} tokens/s, {confidence:.0%} CI [{_n(lo)}, {_n(hi)}] over "
              f"{n_replications} runs of {horizon_s:g} s (fitted after {start_frac:.0%} of each run); tolerance "
              f"{_n(tol)} tokens/s = {tolerance:.0%} of the {'' if replay is None else 'nominal '}offered "
              f"{_n(offered)} tokens/s; fluid prediction {pred_txt} = {_n(pred)} tokens/s{note}")
    if replay is not None:
        reason += (f"; the replayed window holds {replay['arrivals']} arrivals in {replay['window_s']:.4g} s "
                   f"({replay['requests_per_s']:.3g} req/s, effective load {replay['tokens_per_s'] / (cap or math.nan):.3f}) "
                   f"against the nominal {workload.arrival_rate_per_s:.3g} req/s (load "
                   f"{offered / (cap or math.nan):.3f})")
    return ReplicationResult(policy=name, arrival_rate_per_s=workload.arrival_rate_per_s, verdict=verdict,
                             slope_tokens_per_s=m, slope_ci=(lo, hi), slopes_tokens_per_s=st,
                             slopes_requests_per_s=sr, predicted_slope_tokens_per_s=pred,
                             tolerance_tokens_per_s=tol, confidence=confidence, mean_requests_in_system=mq_m,
                             mean_requests_ci=(mq_lo, mq_hi), horizon_s=horizon_s, n_replications=n_replications,
                             runs=tuple(runs), reason=reason,
                             inputs={"entropy": ss.entropy, "spawn_key": list(ss.spawn_key),
                                     "capacity_tokens_per_s": cap, "capacity_is_bound": bound,
                                     "offered_tokens_per_s": offered,
                                                                          "start_frac": start_frac, "replayed_window": replay,
                                     "needed_horizon_s": need, "fill_s": fill_s if math.isfinite(fill_s) else None})


def work_variance_rate(engine, workload: Workload) -> float:
    """``sigma^2`` (tokens^2 per second): the variance rate of the token work ``A(t)`` that ``workload`` brings,
    ``lambda (c_a^2 E[W]^2 + Var W)`` with ``W`` a request's token work (``p + d``, less one with
    ``prefill_emits_token``: a shift, the same variance) and ``c_a^2`` the squared coefficient of variation of
    the inter-arrival times (Poisson 1, periodic 0, Gamma ``cv^2``, a trace's own gaps) -- the functional
    central limit theorem of a renewal-reward process.  The lengths' joint distribution is read from the trace
    rows where the workload draws them from a trace; otherwise prompt and output are independent."""
    from ..workload.arrivals import Gamma, Periodic, Poisson, TraceArrivals

    arr = workload.arrival
    if isinstance(arr, Poisson):
        ca2 = 1.0
    elif isinstance(arr, Periodic):
        ca2 = 0.0
    elif isinstance(arr, Gamma):
        ca2 = float(arr.cv) ** 2
    elif isinstance(arr, TraceArrivals):
        gaps = np.diff(np.asarray(arr.times_s, dtype=float))
        ca2 = float(np.var(gaps) / np.mean(gaps) ** 2) if gaps.size > 1 and np.mean(gaps) > 0 else 1.0
    else:  # another renewal process: Poisson's variability, the heavy-traffic reference
        ca2 = 1.0
    if workload.trace is not None:
        var_w = float(np.var(np.asarray(workload.trace.prompt_tokens, dtype=float)
                             + np.asarray(workload.trace.output_tokens, dtype=float)))
    else:
        p, d = workload.prompt_tokens, workload.output_tokens
        var_w = max(0.0, (p.mean_square - p.mean ** 2) + (d.mean_square - d.mean ** 2))
    mean_w = tokens_per_request(engine, workload)
    return float(workload.arrival_rate_per_s * (ca2 * mean_w ** 2 + var_w))


def transient_slope(sigma2: float, horizon_s: float, start_frac: float = 0.5, points: int = 200) -> float:
    """The backlog slope (tokens/s) a *stable* engine started empty can show over ``[start_frac T, T]``.

    Heavy traffic (the Brownian approximation of the token backlog: reflected Brownian motion with variance
    rate ``sigma2`` and drift ``-(capacity - offered)``), started at 0, has a mean that rises for about the
    relaxation time ``2 sigma2 / drift^2`` -- ``~ E[S] / (1 - rho)^2``, far beyond a run of a few hundred
    arrivals at rho 0.95 -- and over any window its mean rises no faster than with zero drift, where it is
    ``sigma sqrt(2 t / pi)`` (the mean of the running maximum of a driftless Brownian motion).  The least-squares
    slope of that curve over the fitted window (the grid of :meth:`SimResult.backlog_slope`) is returned: it
    needs no capacity (which near saturation is itself an estimate) and falls as ``T^{-1/2}``.  A growth slope
    whose interval does not clear it cannot tell a growing backlog from a stable engine still filling.
    """
    from ..results import line_slope

    if not (sigma2 > 0 and horizon_s > 0):
        return 0.0
    g = np.linspace(start_frac * horizon_s, horizon_s, points)
    return float(line_slope(g, math.sqrt(sigma2) * np.sqrt(2.0 * g / math.pi)))


#: most times the first round's horizon a confirmation of a "growing" verdict may run (a budget, not a basis:
#: the reason says when the horizon the transient asks for was capped)
CONFIRM_MAX_FACTOR = 10.0


def _replicate_auto(engine, workload, policy, *, n_replications, rng, **kw) -> ReplicationResult:
    """:func:`replicate` with the horizon chosen from the growth to detect (see its ``horizon_s``)."""
    from dataclasses import replace

    from ..sim.core import _shortest_batch_s

    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    lam = workload.arrival_rate_per_s
    bt = engine.batch_time.base if hasattr(engine.batch_time, "base") else engine.batch_time
    try:
        t_full = float(np.asarray(bt(np.array([float(engine.b_max)])), dtype=float)[0])
    except Exception:  # noqa: BLE001 - a user's batch time: simulate() names the problem
        t_full = _shortest_batch_s(engine)
    h1 = max(3000.0 * t_full if math.isfinite(t_full) else 0.0, 300.0 / lam if lam > 0 else 0.0, 1.0)
    root = _seed_sequence(rng)

    def run(h):
        return replicate(engine, workload, policy, n_replications=n_replications, horizon_s=h,
                         rng=np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key), **kw)

    first = run(h1)
    need = first.inputs.get("needed_horizon_s")
    rounds = [{"horizon_s": h1, "verdict": first.verdict}]
    res, note = first, ""
    if first.verdict == "inconclusive" and need is not None and need > h1:
        h2 = min(10.0 * h1, 1.1 * need)
        try:
            check_size(engine, workload, h2, None, runs=n_replications)
        except ParameterError as exc:
            note = f"; a second round of {h2:.4g} s was not run: {exc}"
        else:
            res = run(h2)
            rounds.append({"horizon_s": h2, "verdict": res.verdict})
            if 1.1 * need > h2:
                note = f"; the test asked for {1.1 * need:.4g} s, capped at 10 times the first round"
    # a growing verdict must clear the slope a stable engine started empty can show in the fitted window
    # (transient_slope), and, where the capacity says the engine keeps up, its window must open after the
    # relaxation time 2 sigma^2 / (capacity - offered)^2 (heavy traffic: ~E[S]/(1 - rho)^2, far beyond h1 near
    # rho = 1, where the rising mean reads as growth); one that does not is confirmed by a longer round (the
    # same seeds, so the same paths run on), or is no verdict
    frac = res.inputs.get("start_frac", 0.5)
    sigma2 = work_variance_rate(engine, workload)
    cap, offered = res.inputs.get("capacity_tokens_per_s") or 0.0, res.inputs.get("offered_tokens_per_s") or 0.0
    relax = 2.0 * sigma2 / (cap - offered) ** 2 if cap > offered > 0 else 0.0

    def unconfirmed(r):
        """Why the growing verdict ``r`` is no evidence of growth yet ("" when it is)."""
        if r.verdict != "growing":
            return ""
        h, lo = r.horizon_s, r.slope_ci[0]
        allow_r = transient_slope(sigma2, h, frac)
        if not lo > allow_r:
            return (f"the growing verdict at {h:.4g} s (lower end {_n(lo)} tokens/s) does not clear {_n(allow_r)} "
                    "tokens/s, the slope a stable engine started empty can show in that window (heavy traffic, "
                    f"variance rate of the arriving work {_n(sigma2)} tokens^2/s)")
        if frac * h < relax:
            return (f"the growing verdict at {h:.4g} s fits a window opening at {frac * h:.4g} s, inside the "
                    f"relaxation time {relax:.4g} s of a stable engine at load {offered / cap:.3f} of the "
                    f"{_n(cap)} tokens/s it serves under backlog (2 sigma^2 / (capacity - offered)^2, heavy "
                    "traffic): its mean backlog still rises there")
        return ""

    why = unconfirmed(res)
    if why:
        h_was = res.horizon_s
        allow = transient_slope(sigma2, h_was, frac)
        # long enough that the allowance falls to half the slope seen (or the tolerance), as T^(-1/2), and the
        # window opens after the relaxation time; at least twice the last round, at most CONFIRM_MAX_FACTOR h1
        target = max(0.5 * res.slope_tokens_per_s, res.tolerance_tokens_per_s)
        want = max(2.0 * h_was, h_was * (allow / target) ** 2 if target > 0 else math.inf, relax / frac)
        hc = min(want, CONFIRM_MAX_FACTOR * h1)
        capped = (f" (the transient asked for {want:.4g} s, capped at {CONFIRM_MAX_FACTOR:g} times the first round)"
                  if want > hc else "")
        try:
            if not hc > h_was:
                raise ParameterError("horizon_s", hc, f"a confirmation round longer than the {h_was:.4g} s run",
                                     f"the rounds are capped at {CONFIRM_MAX_FACTOR:g} times the first")
            check_size(engine, workload, hc, None, runs=n_replications)
        except ParameterError as exc:
            note += f"; {why}, and a confirmation round of {hc:.4g} s was not run ({exc}): no verdict"
            res = replace(res, verdict="inconclusive")
        else:
            conf = run(hc)
            rounds.append({"horizon_s": hc, "verdict": conf.verdict})
            allow_c = transient_slope(sigma2, hc, frac)
            if conf.verdict == "growing" and not conf.slope_ci[0] > allow_c:
                note += (f"; {why}; the confirmation round of {hc:.4g} s{capped} grows too, but its lower end "
                         f"{_n(conf.slope_ci[0])} tokens/s does not clear that round's {_n(allow_c)} tokens/s "
                         "either: no verdict (a stable engine near saturation still filling, or slow growth)")
                conf = replace(conf, verdict="inconclusive")
            else:
                note += f"; {why}, so a confirmation round of {hc:.4g} s{capped} decides"
            res = conf
    allow = transient_slope(sigma2, res.horizon_s, frac)
    words = " then ".join(f"{r['horizon_s']:.4g} s ({r['verdict']})" for r in rounds)
    return replace(res, reason=f"automatic horizon, chosen from the growth to detect: {words}{note}; {res.reason}",
                   inputs={**res.inputs, "auto_horizon": rounds, "transient_slope_tokens_per_s": allow,
                           "work_variance_tokens2_per_s": sigma2, "relaxation_s": relax})


def _k_max_saturation(engine, sat, workload):
    """``(rate, how, is_bound)``: what the prediction of :func:`replicate` drains the backlog at, from
    ``sat`` (:func:`fluidq.dtmc.saturation.saturation` of ``engine``, ``workload`` and the policy; its
    policy, effective engine and capacity are read there, not solved again).

    When ``k_max`` binds, :func:`~fluidq.dtmc.saturation.saturated_rate` gives a work-conserving scheduler
    the stability region's rate along the mix -- what a region-aware scheduler serves, not what Sarathi-Serve
    or Orca do: their batches under a backlog reach only the region of :func:`fluidq.region.policy_region`
    (Staircase(0.01128, 0.03547, 128), b_max=1024, k_max=100, 100/100 tokens: region 2,990 tokens/s,
    Sarathi's batches 2,744, Sarathi simulated 2,459-2,464 saturated at 1.1x and 1.3x, 6 x 1,500 s).  That
    policy region is an outer estimate, so its rate along the mix (the smaller of the two) is an upper bound
    on what the scheduler serves, and the predicted slope a lower bound.
    """
    from ..engine.budgets import binding_k_max
    from ..policies.region_aware import RegionAware

    pol, cap, cap_how = sat.policy, sat.tokens_per_s, sat.how
    if binding_k_max(engine, pol) is None or cap <= 0 or workload.replays_trace:
        return cap, cap_how, False
    from ..dtmc.flow_basis import is_composition

    if sat.work_conserving and is_composition(sat.engine):
        return cap, cap_how, False  # vLLM's flow balance counts max_num_seqs itself
    if isinstance(pol, RegionAware) or not sat.work_conserving:
        return cap, cap_how, False  # time-shares the region's own batch shapes / has its own threshold
    from ..capacity.region_capacity import fixed_prompt
    from .region import cached_policy_region

    eff = sat.engine
    if eff.k_max is None or sat.capacity.method != "region":
        return cap, cap_how, False
    try:
        pr = cached_policy_region(eff, pol, fixed_prompt(workload))
    except ParameterError:  # too large to probe: keep the region's rate, a bound all the same
        return cap, f"{cap_how}; under k_max an upper bound on what {getattr(pol, 'name', pol)} serves", True
    lam, (mp, md) = workload.arrival_rate_per_s, request_work(engine, workload)
    s = pr.scale_of((lam * mp, lam * md))
    own = float(s * offered_tokens_per_s(engine, workload)) if np.isfinite(s) else cap
    name = getattr(pol, "name", pol)
    if own < cap:
        return own, (f"the region of the batches {name} forms under backlog along this mix (an outer estimate, "
                     f"below the k_max region's {_n(cap)} tokens/s that a region-aware scheduler serves): an upper "
                     "bound on what it serves"), True
    return cap, f"{cap_how}; under k_max an upper bound on what {name} serves", True


def find_threshold(engine, workload_shape: Workload, policy="sarathi", *, low_rate_per_s: float | None = None,
                   high_rate_per_s: float | None = None, rel_tol: float = 0.02, n_replications: int = 8,
                   horizon_s: float | None = None, confidence: float = 0.9, tolerance: float = 0.01,
                   max_steps: int = 16, rng=None, progress=None, unstable_from_per_s: float | None = None,
                   **sim_kw) -> ThresholdResult:
    """Bracket the arrival rate where ``policy`` stops being stable, by simulation and bisection.

    Parameters
    ----------
    engine : Engine
    workload_shape : Workload
        Arrival process and lengths; its rate is replaced by the rates tried (``with_rate``).
    policy : str or Policy
    low_rate_per_s, high_rate_per_s : float, optional
        Initial bracket (default ``0.5`` and ``1.1`` times the fluid threshold ``lambda*``); the search
        widens it (halving the low end, growing the high end by 25 %) while the ends are not
        judged bounded / growing, within ``max_steps``.
    rel_tol : float
        Stop when ``high - low <= rel_tol * midpoint``.  A rate whose verdict is inconclusive is
        tried once more with a longer run (the horizon the growth test says would have the power, between
        2 and 8 times as long); if it stays inconclusive the search stops there
        (status ``"inconclusive"``; the bracket found so far is still valid).
    n_replications : int
        Replications per rate tried.
    horizon_s : float, optional
        Length of each run (default: the time for about 3000 arrivals at ``lambda*``).
    confidence : float
        Overall confidence of the bracket (see :class:`ThresholdResult`).
    tolerance : float
        Slope tolerance as a fraction of the offered load (see :func:`replicate`).
    max_steps : int
        Most replication sets run (each at level ``1 - (1 - confidence)/max_steps``).
    rng : None, int, SeedSequence or Generator
        Root seed (as for :func:`replicate`); each rate gets its own child.
    unstable_from_per_s : float, optional
        A proven upper end: a rate at and above which no scheduler is stable (Theorem 2(a)'s capacity, or
        the ``k_max`` region's rate; :func:`fluidq.stability_threshold` passes it).  The search's high end
        starts there when the default or given one is above it, is taken as growing there without being
        simulated, and is never widened past it.

    Returns
    -------
    ThresholdResult

    Notes
    -----
    The threshold found is the rate where the fitted backlog slope crosses ``tolerance`` times the
    offered load within ``horizon_s``; a longer horizon and a smaller tolerance sharpen it.  For a
    work-conserving policy it should bracket Theorem 2's ``lambda*`` (Li, Dai, Peng,
    arXiv:2504.07347); for FasterTransformer and vanilla vLLM it estimates the lower threshold
    that the paper leaves open.

    A trace workload is *replayed* at each rate (time-scaled from its start), so each verdict is
    about that one window, whose effective load can differ from the nominal rate (see
    ``inputs["replayed_window"]`` of :func:`replicate`).  For the threshold of the stationary
    process, pass ``Workload(arrival=Poisson(rate_per_s=...), prompt_tokens=w.prompt_tokens,
    output_tokens=w.output_tokens)``: Poisson arrivals with the trace's length distributions.
    """
    if not isinstance(workload_shape, Workload):
        raise ParameterError("workload_shape", workload_shape, "a fluidq.Workload")
    confidence = real("confidence", confidence)
    if not 0 < confidence < 1:
        raise ParameterError("confidence", confidence, "a level strictly between 0 and 1")
    rel_tol = real("rel_tol", rel_tol, positive=True)
    max_steps = integer("max_steps", max_steps, minimum=2, maximum=MAX_STEPS,
                        why="each step is a set of n_replications simulations")
    n_replications = integer("n_replications", n_replications, minimum=2, maximum=MAX_RUNS,
                             why="each replication is a full simulation")
    tolerance = real("tolerance", tolerance, positive=True)
    lam_star = max_throughput(engine, workload_shape).requests_per_s
    if not lam_star > 0 and (low_rate_per_s is None or high_rate_per_s is None or horizon_s is None):
        raise ParameterError("engine", getattr(engine, "name", engine), "an engine that can serve these requests",
                             "its capacity for these lengths is 0 (no request fits), so there is no threshold to "
                             "search: it is unstable at every rate")
    proven = (None if unstable_from_per_s is None else
              real("unstable_from_per_s", unstable_from_per_s, positive=True))
    lo = 0.5 * lam_star if low_rate_per_s is None else real("low_rate_per_s", low_rate_per_s, positive=True)
    hi = 1.1 * lam_star if high_rate_per_s is None else real("high_rate_per_s", high_rate_per_s, positive=True)
    if proven is not None and hi >= proven:
        hi = proven  # no rate above it needs a simulation
        if lo >= hi and low_rate_per_s is None:
            lo = 0.5 * hi
    if lo >= hi:
        raise ParameterError("low_rate_per_s", lo, f"a rate below high_rate_per_s={hi:g}"
                             + (" (the proven unstable_from_per_s)" if hi == proven else ""))
    if horizon_s is None:
        horizon_s = 3000.0 / lam_star
    horizon_s = real("horizon_s", horizon_s, positive=True)
    # refuse before any work a first set of runs too large to simulate (at the top rate); later sets (a
    # wider bracket, the retry of an inconclusive verdict at twice the horizon) are checked before they
    # run, and one too large stops the search, saying so
    check_size(engine, workload_shape.with_rate(hi), horizon_s, None, runs=n_replications,
               names={"runs": "n_replications"})
    level = 1.0 - (1.0 - confidence) / max_steps
    ss = _seed_sequence(rng)
    seeds = iter(ss.spawn(2 * max_steps + 2))
    steps: list = []

    refused: list = []

    def judge(rate):
        """Verdict at ``rate``; an inconclusive one is retried once with a longer run (the horizon the growth
        test asks for, 2 to 8 times as long).  ``"refused"``
        when the runs at ``rate`` would be too large to simulate (the search stops there)."""
        h = horizon_s
        for attempt in range(2):
            try:
                check_size(engine, workload_shape.with_rate(rate), h, None, runs=n_replications)
            except ParameterError as exc:
                refused.append(f"the runs at {rate:.4g} req/s were not made: {exc}")
                return "refused"
            res = replicate(engine, workload_shape.with_rate(rate), policy, n_replications=n_replications,
                            horizon_s=h, rng=next(seeds), confidence=level, tolerance=tolerance,
                            keep_runs=False, **sim_kw)
            steps.append({"rate_per_s": rate, "verdict": res.verdict, "slope_tokens_per_s": res.slope_tokens_per_s,
                          "slope_ci": list(res.slope_ci), "horizon_s": h})
            if progress is not None:
                progress(len(steps), max_steps)
            if res.verdict != "inconclusive" or len(steps) >= max_steps:
                break
            # the horizon the growth test says would tell growth of the tolerance from zero (from the
            # T^(-3/2) scaling of the slope's spread), at least twice and at most 8 times the last one
            need = res.inputs.get("needed_horizon_s")
            h = min(8.0 * h, max(2.0 * h, 1.1 * need)) if need is not None else 2.0 * h
        return res.verdict

    best_lo, best_hi = 0.0, math.inf
    status = "resolved"
    # establish the ends; at the proven upper end the verdict is known (growing), not simulated
    v = "growing" if hi == proven else judge(hi)
    while v not in ("growing", "refused") and len(steps) < max_steps - 1:
        hi *= 1.25
        if proven is not None and hi >= proven:
            hi, v = proven, "growing"
            break
        v = judge(hi)
    if v == "growing":
        best_hi = hi
    v = judge(lo) if len(steps) < max_steps else "inconclusive"
    while v not in ("bounded", "refused") and len(steps) < max_steps - 1:
        if v == "growing":
            best_hi = min(best_hi, lo)
        lo *= 0.5
        v = judge(lo)
    if v == "bounded":
        best_lo = lo
    if not (best_lo > 0 and math.isfinite(best_hi)):
        status = "unbracketed"
    else:
        while len(steps) < max_steps and best_hi - best_lo > rel_tol * 0.5 * (best_lo + best_hi):
            mid = 0.5 * (best_lo + best_hi)
            v = judge(mid)
            if v == "growing":
                best_hi = mid
            elif v == "bounded":
                best_lo = mid
            else:  # inconclusive, or refused
                status = "inconclusive"
                break
        if status == "resolved" and best_hi - best_lo > rel_tol * 0.5 * (best_lo + best_hi):
            status = "inconclusive"
    name = getattr(policy, "name", str(policy))
    conf = max(0.0, 1.0 - len(steps) * (1.0 - level))
    reason = (f"{len(steps)} rates tried, {n_replications} runs of {horizon_s:g} s each; bounded up to "
              f"{best_lo:.4g} req/s, growing from {best_hi:.4g} req/s"
              + (" (proven, not simulated: no scheduler is stable at or above it)" if best_hi == proven else "")
              + f" (fluid lambda* = {lam_star:.4g} req/s)" + "".join(f"; {x}" for x in refused))
    return ThresholdResult(arrival_rate_per_s=0.5 * (best_lo + best_hi), lower_per_s=best_lo, upper_per_s=best_hi,
                           method="simulation", policy=name, work_conserving_rate_per_s=lam_star,
                           confidence=conf, steps=tuple(steps), status=Status(status), horizon_s=horizon_s,
                           n_replications=n_replications, reason=reason,
                           inputs={"entropy": ss.entropy, "tolerance": tolerance, "rel_tol": rel_tol,
                                   "per_step_level": level,
                                   **({} if proven is None else {"unstable_from_per_s": proven})})


# the documented paths ``fluidq.sim.replicate`` / ``find_threshold`` / ``ReplicationResult`` /
# ``ThresholdResult`` and the module ``fluidq.sim.stability``: registered here, by the verdict layer,
# so that the simulator imports no verdict (fluidq imports stability, hence this module, eagerly)
sys.modules.setdefault("fluidq.sim.stability", sys.modules[__name__])
_sim_pkg = sys.modules["fluidq.sim"]
for _name in ("replicate", "find_threshold", "ReplicationResult", "ThresholdResult"):
    setattr(_sim_pkg, _name, globals()[_name])
_sim_pkg.stability = sys.modules[__name__]
