"""Stability verdicts for one engine under a scheduler.

``check_stability(engine, workload, policy)`` compares the offered load
``rho = lambda (m_p + m_d) / capacity`` with Theorem 2 of Li, Dai, Peng (arXiv:2504.07347):

* ``rho > 1 + tolerance``: unstable under every scheduler (Theorem 2a);
* ``|rho - 1| <= tolerance``: critical (the boundary, where neither part of the theorem decides);
* ``rho < 1 - tolerance`` and a policy found work-conserving by search
  (:func:`fluidq.check_work_conserving`): stable (Theorem 2b);
* ``rho < 1 - tolerance`` and a non-work-conserving policy: decided from the policy's own
  stability threshold when one is available, otherwise unknown.

The capacity is that of the budgets the scheduler forms batches under (:func:`effective_engine`: its own
``b_max`` / ``k_max`` when smaller than the engine's); a ``k_max`` that can never bind (at or above the
most requests a batch holds, :func:`binding_k_max`) is treated as absent and changes no verdict.
With a batch-size limit ``k_max`` that binds for the workload's mix, the capacity is where
``(lambda m_p, lambda m_d)`` leaves the stability region (:func:`fluidq.stability_region`) and
the verdict below it comes from :func:`fluidq.region.capacity.region_verdict` (``method="region"``), or,
where that leaves it unknown, from the floor of what the scheduler serves under any backlog
(``method="k_max_floor"``, :func:`fluidq.stability.bounds.k_max_floor`).  A KV cache that can never bind
(:func:`fluidq.stability.bounds.kv_never_binds`) is dropped first: the verdict is the engine's without memory.
:func:`decide_stability` (``fluidq check``'s default ``--method auto``) lets seeded replications decide
where the analytic verdict is unknown, labelled.

An engine whose batch time reads the batch composition (an operator-profile iteration model, ``fluidq check
--profile-dir``) has ``t(b)`` = one prefill chunk with no decode cost, not its iteration time (at a vLLM
engine's capacity point 0.50-0.83 of it): its load is read against vLLM's flow balance
(:func:`fluidq.dtmc.flow_basis.flow_balance_capacity`, the function ``fluidq check`` calls too;
``method="flow_balance"``, ``inputs["load_basis"]``).  Where the KV cache binds the capacity is an estimate,
and below it the verdict is unknown, never stable.  Where the cache binds under its own rules
(:func:`fluidq.dtmc.kv_basis.kv_capacity`, the load basis of :func:`fluidq.dtmc.load_basis.load_basis`), that
capacity is the verdict's (``inputs["load_basis"] == "kv_rules"``), with ``k_max`` set too: the band and Theorem 2(a)
decide; so past the switch to ``max_num_seqs``, where the same flow balance is the load basis (h-basis), and where
the cache can never bind the verdict is the engine's without memory, its load said on that basis.  Without a KV bind the flow balance's verdict is an
estimate, stated as such (``method="flow_balance"``): stable below 0.95 and unstable above 1.05 of it, read
over the workload's length distributions (seeded rows), not only their means.  Several engines
behind a router under a policy that is not work-conserving are unstable above ``n`` times the policy's own
threshold (what one engine serves saturated).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace

from .._validate import real
from ..capacity import max_throughput, offered_tokens_per_s
from ..engine.budgets import (binding_k_max, effective_engine, max_requests_per_batch,  # noqa: F401
                                without_idle_k_max)
from ..engine import Engine
from ..errors import ParameterError
from ..policies import resolve_policy
from ..policies.conservation import work_conserving_cached as _work_conserving
from ..results import MEANINGFUL_DIGITS, Result, Status, fmt_load, fmt_value, plain
from ..workload import Poisson, Workload

__all__ = ["CHECK_METHODS", "StabilityResult", "Status", "binding_k_max", "check_stability", "decide_stability",
           "effective_engine",
           "max_requests_per_batch", "without_idle_k_max"]


def _tps(x) -> str:
    """A tokens/s figure in a reason, at the meaningful digits with separators (as ``fluidq check`` prints it)."""
    return fmt_value(x, digits=MEANINGFUL_DIGITS)


@dataclass(frozen=True)
class StabilityResult(Result):
    """A verdict: ``status`` (stable / unstable / critical / unknown), ``load`` and ``reason``.

    ``load`` is ``offered_tokens_per_s / capacity_tokens_per_s`` for the analytic verdicts, with one
    capacity per engine, scheduler and request mix whatever the rate -- so the load is proportional to the
    arrival rate: ``b_max / t(b_max)`` (what a work-conserving scheduler serves under a backlog, the
    capacity Theorem 2(b) of arXiv:2504.07347 is stated with) for a work-conserving scheduler; ``sup_b
    b/t(b)`` (Theorem 2(a): what any scheduler serves at best) for one that is not; the stability region
    along the mix (its ``k_max`` capacity, §6) when ``k_max`` binds.  The two Theorem-2 numbers differ only
    when ``b/t(b)`` peaks below ``b_max`` (a staircase whose step ``b0`` does not divide ``b_max``); an
    offered rate above the peak is then called unstable under every scheduler, and its ``load`` is still
    measured against ``b_max / t(b_max)`` (the reason gives both).  Engines behind a router
    (``n_engines``) sum their capacities.  On an engine whose batch time reads the batch composition the
    capacity is vLLM's flow balance (``method="flow_balance"``); ``inputs["load_basis"]`` names the basis
    (``"theorem2"`` or ``"flow_balance"``, with ``flow_balance_requests_per_s`` and ``flow_balance_binding``; or
    ``"kv_rules"`` where the KV cache or ``max_num_seqs`` binds under the cache's own rules: the capacity is then
    :func:`fluidq.dtmc.kv_basis.kv_capacity`'s, ``kv_rules_requests_per_s``, the load basis of every face).
    """

    status: Status
    load: float
    reason: str
    policy: str
    capacity_tokens_per_s: float
    offered_tokens_per_s: float
    method: str = "closed_form"
    work_conserving: bool | None = None
    threshold_requests_per_s: float | None = None
    inputs: dict = field(default_factory=dict, repr=False)
    #: ``method="simulation"``: the :class:`~fluidq.stability.simulation.ReplicationResult` that decided
    replications: object = field(default=None, repr=False)

    def plot(self, ax=None, path=None):
        """The offered load against the capacity (and the policy's own threshold, if any)."""
        from ..plotting.capacity import plot_stability

        return plot_stability(self, ax=ax, path=path)

    def to_dict(self) -> dict:
        return plain({"status": self.status, "load": self.load, "reason": self.reason, "policy": self.policy,
                      "capacity_tokens_per_s": self.capacity_tokens_per_s,
                      "offered_tokens_per_s": self.offered_tokens_per_s, "method": self.method,
                      "work_conserving": self.work_conserving,
                      "threshold_requests_per_s": self.threshold_requests_per_s,
                      **({} if self.replications is None else {"simulation": self.replications.to_dict()})})


#: most identical engines behind a router that check_stability sums over (one term per engine)
MAX_ENGINES = 1_000_000




def _non_work_conserving_verdict(engine, workload, pol, rho, tolerance, wc):
    """Verdict below the Theorem-2 bound for a policy that is not work-conserving.

    Decided from the policy's own threshold (renewal-reward, :func:`fluidq.dtmc.threshold.renewal_threshold`,
    cached per engine, lengths and policy) when it applies; otherwise "unknown": Theorem 2 only
    says such a policy is not maximally stable.
    """
    from ..dtmc.threshold import cached_renewal_threshold

    thr, why = cached_renewal_threshold(engine, workload, pol)
    if thr is None:
        return Status.UNKNOWN, (f"{pol.name} is not work-conserving ({wc.reason}); below the Theorem-2 bound "
                                f"(load {fmt_load(rho)}) no threshold is available: {why}"), None, "closed_form"
    if thr == 0:
        return Status.UNSTABLE, f"{pol.name} is not work-conserving and unstable at every rate: {why}", 0.0, "renewal"
    lam = workload.arrival_rate_per_s
    r = lam / thr
    share = thr * rho / lam  # threshold as a fraction of the Theorem-2 bound
    base = (f"{pol.name} is not work-conserving; its own threshold for these lengths is {thr:.4g} req/s "
            f"(renewal-reward over its prefill/decode cycles, {share:.1%} of the Theorem-2 bound)")
    if r > 1 + tolerance:
        return Status.UNSTABLE, f"{base}; arrival rate {lam:.4g} req/s is above it", thr, "renewal"
    if r >= 1 - tolerance:
        return Status.CRITICAL, f"{base}; arrival rate {lam:.4g} req/s is within {tolerance:.0%} of it", thr, "renewal"
    return Status.STABLE, f"{base}; arrival rate {lam:.4g} req/s is below it", thr, "renewal"


def _pooled_non_wc_verdict(engine, workload, pol, rho, tolerance, wc, n_engines):
    """Verdict below the Theorem-2 bound for ``n_engines`` engines behind a router under a policy that is not
    work-conserving.  Its own threshold for these lengths (renewal-reward) is what one engine serves under a
    large backlog (:func:`fluidq.dtmc.saturation.saturated_rate`), so no router makes ``n`` engines serve more
    than ``n`` times it: an arrival rate above that is unstable.  Below it fluidq has no verdict (a router's
    split is not Poisson, so the single-engine threshold does not apply to each engine)."""
    from ..dtmc.threshold import cached_renewal_threshold

    name = pol.name
    lam = workload.arrival_rate_per_s
    thr, why = cached_renewal_threshold(engine, workload, pol)
    base = (f"{name} is not work-conserving; for {n_engines} engines behind a router below the Theorem-2 bound "
            f"(load {fmt_load(rho)})")
    if thr is None:
        return (Status.UNKNOWN, f"{base} fluidq has no verdict ({why}): simulate the network (fluidq.simulate_network)",
                None, "closed_form")
    top = n_engines * thr
    if lam > top * (1 + tolerance):
        return (Status.UNSTABLE, f"{name} is not work-conserving; one engine serves at most {thr:.4g} req/s of these "
                f"lengths under any backlog (its own threshold, renewal-reward over its prefill/decode cycles: what it "
                f"serves saturated), so {n_engines} engines behind any router serve at most {top:.4g} req/s; the "
                f"arrival rate {lam:.4g} req/s is above it ({lam / top:.4g} times), so the backlog grows", top, "renewal")
    return (Status.UNKNOWN, f"{base}, and at or below {n_engines} times its own threshold ({top:.4g} req/s, what "
            f"the engines serve saturated), fluidq has no verdict: simulate the network (fluidq.simulate_network)",
            top, "closed_form")


def _is_network(x) -> bool:
    """``x`` is a :class:`fluidq.network.Network` (never, while that module is not imported: an engine's
    verdict loads no network description)."""
    model = sys.modules.get("fluidq.network.model")
    return model is not None and isinstance(x, model.Network)


#: what :func:`check_stability` may decide by (``method=``; the names of `fluidq check --method`, with one meaning)
CHECK_METHODS = ("auto", "analytic", "simulation")

#: replications and the total wall-clock budget (seconds) :func:`decide_stability` spends by default
DECIDE_REPLICATIONS = 4
DECIDE_BUDGET_S = 60.0


def decide_stability(engine, workload, policy="sarathi", *, tolerance: float = 0.02, n_engines: int = 1,
                     n_replications: int = DECIDE_REPLICATIONS, rng=0, deadline_s: float | None = None,
                     budget_s: float = DECIDE_BUDGET_S) -> StabilityResult:
    """The analytic verdict, and seeded replications only where it is ``unknown`` (``fluidq check --method
    auto``).

    The analytic verdict (:func:`check_stability`) is returned as it is unless its status is unknown; then
    ``n_replications`` seeded runs at the automatic horizon (:func:`fluidq.replicate` with ``horizon_s=None``,
    the shared growth test) decide, when the wall clock allows: ``deadline_s`` (a :func:`time.monotonic`
    time, shared by several calls) or else ``budget_s`` from now.  A decided simulation gives
    ``method="simulation"`` and ``inputs["decided_by"] = "simulation"`` with the interval and horizon in the
    reason ("decided by simulation"); ``inputs["wall_s"]`` is the wall time the simulation took.  An inconclusive
    simulation, one not run (budget spent, several engines), or one refused keeps the analytic ``unknown``
    and says why.  A simulated "stable" is a bounded backlog over the horizon simulated, not a proof.
    """
    import time

    ana = check_stability(engine, workload, policy, tolerance=tolerance, n_engines=n_engines)
    if ana.status is not Status.UNKNOWN:
        return replace(ana, inputs={**ana.inputs, "decided_by": "analytic"})
    now = time.monotonic()
    end = deadline_s if deadline_s is not None else now + real("budget_s", budget_s, nonnegative=True)
    why = None
    if n_engines != 1:
        why = "not simulated: several engines behind a router (simulate the network: fluidq.simulate_network)"
    elif not now < end:  # (a NaN deadline is spent, never endless)
        why = "not simulated: the simulation budget of this call was spent on earlier verdicts"
    if why is None:
        try:
            sim = check_stability(engine, workload, policy, tolerance=tolerance, method="simulation",
                                  n_replications=n_replications, rng=rng)
        except ParameterError as exc:  # e.g. runs too large to simulate
            why = f"not simulated: {exc}"
        else:
            took = time.monotonic() - now
            rep = sim.replications
            if sim.status is Status.UNKNOWN:
                return replace(ana, reason=f"{ana.reason}; simulation inconclusive ({rep.reason})",
                               inputs={**ana.inputs, "decided_by": "none", "wall_s": took},
                               replications=rep)
            word = "bounded backlog" if sim.status is Status.STABLE else "growing backlog"
            lo, hi = rep.slope_ci
            # a replayed trace's window can carry another load than the nominal one: keep what it held
            window = rep.reason[rep.reason.index("; the replayed window"):] if "; the replayed window" in rep.reason \
                else ""
            # replications that cannot differ (a replayed trace, fixed lengths and arrivals) give no interval
            same = len(set(map(float, rep.slopes_tokens_per_s))) == 1
            spread = ("no interval: the runs are identical" if same
                      else f"{rep.confidence:.0%} CI [{lo:.4g}, {hi:.4g}]")
            reason = (f"decided by simulation ({word}: token-backlog slope {rep.slope_tokens_per_s:.4g} tokens/s, "
                      f"{spread}, tolerance {rep.tolerance_tokens_per_s:.4g}, "
                      f"{rep.n_replications} seeded runs of {rep.horizon_s:.4g} s"
                      f"{' replaying the trace, one sample path' if workload.replays_trace else ''}{window}; "
                      f"a statement about that horizon, not a proof); the analytic verdict was unknown: {ana.reason}")
            return replace(sim, reason=reason, inputs={**sim.inputs, "decided_by": "simulation", "wall_s": took})
    return replace(ana, reason=f"{ana.reason}; {why}", inputs={**ana.inputs, "decided_by": "none"})


def check_stability(engine, workload: Workload | None = None, policy="sarathi", *, tolerance: float = 0.02,
                    n_engines: int = 1, method: str = "analytic", **kw) -> StabilityResult:
    """Is ``policy`` stable on ``engine`` (or is a network stable)?  Every verdict of fluidq, one entry point.

    Parameters
    ----------
    engine : Engine or Network
        The engine (its ``b_max`` is the budget), or a :class:`fluidq.network.Network` (then ``workload``
        is ``None``, the classes carry the arrivals, the result is a
        :class:`~fluidq.stability.network.NetworkStabilityResult` and ``**kw`` goes to
        :func:`fluidq.stability.network.check_network_stability`).
    workload : Workload
        Arrival rate and length distributions.
    policy : str or Policy
        ``"fastertransformer"``, ``"vllm"``, ``"orca"``, ``"sarathi"``, ``"vllm-chunked"`` or an object.
    tolerance : float
        Relative band around load 1 reported as ``critical``.
    n_engines : int
        Identical copies of ``engine`` behind a join-the-shortest-queue router; the capacity is
        their sum (Prop. 3 of arXiv:2504.07347, for work-conserving engines).
    method : {"analytic", "auto", "simulation"}
        ``"analytic"`` (default): the analytic verdict -- Theorem 2, the ``k_max`` region, the KV-cache
        estimate or the policy's own renewal threshold, whichever applies (``result.method`` names it); no
        simulation runs.  ``"auto"``: the analytic verdict, and seeded replications only where it is unknown,
        as ``fluidq check --method auto`` (the command line's default) decides: :func:`decide_stability`
        for an engine (``**kw``: ``n_replications``, ``rng``, ``deadline_s``, ``budget_s``; a decided
        simulation is labelled ``method="simulation"``, ``inputs["decided_by"]`` says which decided), and for a
        network ``check_network_stability`` without simulation, then with it (``**kw`` to both) when the
        loads and the fluid model leave it unknown.  ``"simulation"``: seeded replications decide
        (:func:`fluidq.replicate`, the shared growth test; ``**kw`` goes to it: ``n_replications`` (default
        8), ``horizon_s`` (default ``None``, chosen from the growth to detect), ``rng``, ``growth_tolerance``
        (its ``tolerance``) ...); the analytic load and capacity are still reported, and
        ``result.replications`` holds the runs' summary.  For a network, ``"simulation"`` is
        ``check_network_stability(..., simulate=True)``.  (Until 2026-12-07 ``"auto"`` was the analytic verdict
        alone, while the command line's ``--method auto`` simulated where it was unknown: one name, two
        meanings; the command line's is the one kept, and the default here stays the analytic verdict.)
    **kw
        Only with a network or ``method="simulation"`` / ``"auto"`` (see above); refused otherwise, naming the
        argument.

    Returns
    -------
    StabilityResult (an engine) or NetworkStabilityResult (a network)

    Raises
    ------
    PolicyError
        ``policy`` returns something that is not a :class:`~fluidq.policies.Batch`, or a batch that breaks
        (6a)-(6d) or k_max in the searched states of :func:`fluidq.policies.check_work_conserving` (budgets 2, 3, 4,
        6): it is not a valid policy, so no verdict applies (since 2026-12-07; before, a verdict was returned).

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347, Theorem 2.

    Examples
    --------
    >>> import fluidq
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=15.0), prompt_tokens=100, output_tokens=100)
    >>> fluidq.check_stability(e, w, "sarathi").status
    <Status.STABLE: 'stable'>
    """
    if not isinstance(method, str) or method not in CHECK_METHODS:
        raise ParameterError("method", method, " or ".join(repr(m) for m in CHECK_METHODS))
    if _is_network(engine):
        # a network of engines: loads, fluid model and optional simulation (fluidq.stability.network)
        from .network import check_network_stability

        if workload is not None:
            raise ParameterError("workload", workload, "None for a network (its classes carry the arrivals)")
        if method == "simulation":
            if kw.get("simulate", True) is not True:
                raise ParameterError("simulate", kw["simulate"], "True (or left out) with method='simulation'")
            kw["simulate"] = True
        elif method == "auto":
            if "simulate" in kw:
                raise ParameterError("simulate", kw["simulate"], "left out with method='auto' (it simulates only "
                                     "where the analysis leaves the verdict unknown)")
            first = check_network_stability(engine, tolerance=tolerance, **kw)
            if first.status is not Status.UNKNOWN:
                return first
            kw["simulate"] = True
        return check_network_stability(engine, tolerance=tolerance, **kw)
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine or a fluidq.network.Network")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    if method == "simulation":
        return _simulation_verdict(engine, workload, policy, tolerance=tolerance, n_engines=n_engines, **kw)
    if method == "auto":
        extra = sorted(set(kw) - {"n_replications", "rng", "deadline_s", "budget_s"})
        if extra:
            raise ParameterError(extra[0], kw[extra[0]], "no such argument with method='auto'",
                                 "it takes n_replications, rng, deadline_s and budget_s (fluidq.decide_stability); "
                                 "method='simulation' takes the simulation's own")
        return decide_stability(engine, workload, policy, tolerance=tolerance, n_engines=n_engines, **kw)
    if kw:
        name = sorted(kw)[0]
        raise ParameterError(name, kw[name], "no such argument for an engine's analytic verdict",
                             "the extra arguments go to the simulation (method='simulation') or to a network's "
                             "verdict")
    tolerance = real("tolerance", tolerance, nonnegative=True)
    if tolerance >= 1:
        raise ParameterError("tolerance", tolerance, "a relative tolerance < 1")
    pol = resolve_policy(policy)
    from .._validate import integer

    n_engines = integer("n_engines", n_engines, minimum=1, maximum=MAX_ENGINES,
                        why=f"the capacity sums one term per engine; {n_engines} engines would be that many terms")
    given_engine = engine
    # the budgets the scheduler forms batches under (its own b_max / k_max when smaller); a k_max that
    # can never bind changes no verdict
    engine = effective_engine(engine, pol)
    # a KV cache that can never bind (at most min(b_max, k_max) requests hold KV under a decode-first FCFS
    # scheduler, and the cache holds that many at the largest p + o): the engine runs as without it
    kv_note, why_kv = "", None
    cached = engine  # (with its cache: the load basis reads it even where it never binds, h-basis)
    if engine.kv_capacity_tokens is not None:
        from .bounds import kv_never_binds

        free, why_kv = kv_never_binds(engine, workload, pol, given_engine)
        if free:
            engine = without_idle_k_max(engine.with_(kv_capacity_tokens=None), pol)
            kv_note = f" ({why_kv}; the verdict is that of the engine without memory)"
    cap = max_throughput(engine, workload, n_engines=n_engines)
    # the token work the arrivals bring: lambda (m_p + m_d), or lambda (m_p + m_d - 1) when the engine's
    # prefill emits the first output token (fluidq.capacity.request_work)
    offered = offered_tokens_per_s(engine, workload)
    wc = _work_conserving(pol)
    if wc.invalid:  # batches that break (6a)-(6d)/k_max: no verdict of the theory applies to it
        from ..errors import PolicyError

        raise PolicyError(f"policy {getattr(pol, 'name', pol)!r} is not a valid policy, so no stability verdict "
                          f"applies: {wc.reason.removeprefix('not a valid policy: ')}")
    # Theorem 2(a): no scheduler serves more than sup_b b/t(b) (``cap.tokens_per_s``); a work-conserving one
    # fills its batches to b_max under a backlog and serves b_max/t(b_max) (Theorem 2(b) is stated with it)
    sup = cap.tokens_per_s
    full = cap.work_conserving_tokens_per_s if cap.work_conserving_tokens_per_s is not None else sup
    ref = full if wc.work_conserving else sup
    rho_any = offered / sup if sup > 0 else math.inf
    rho = offered / ref if ref > 0 else math.inf
    name = getattr(pol, "name", repr(pol))
    # what the work-conserving figure is: one engine's b_max/t(b_max), or the sum over the engines
    wc_what = "b_max/t(b_max)" if n_engines == 1 else f"the {n_engines} engines' b_max/t(b_max), summed,"
    assumption = "" if isinstance(workload.arrival, Poisson) else (
        " (Theorem 2 is stated for Poisson arrivals; the fluid argument behind it extends to "
        "renewal arrivals with this mean rate)")
    threshold = None
    method = "closed_form"
    region_v = None
    # an engine whose batch time reads the batch composition: t(b) is not its iteration time (no decode cost), so
    # the load is read against vLLM's flow balance (the basis of `fluidq check --profile-dir --load`)
    from ..dtmc.flow_basis import flow_balance_capacity

    try:
        fb = flow_balance_capacity(engine, workload, n_engines=n_engines) if sup > 0 else None
    except ParameterError as err:  # the flow balance's block-counted cache holds no request: none is ever served
        if err.name != "kv_capacity_tokens":
            raise
        fb, sup = None, 0.0
        cap = replace(cap, reason=f"no request of this workload fits the KV cache in whole blocks ({err}), so none "
                      "is ever served")
    kv_rules = None
    if fb is None and sup > 0 and engine.kv_capacity_tokens is not None:
        # an engine with a KV cache: its load basis is the capacity under the cache's own rules wherever the cache
        # or max_num_seqs binds (issues 16, 20; fluidq.dtmc.kv_basis.kv_capacity): the capacities here take the
        # batch that mean footprints allow, or the stability region's batches, which overstate what it serves
        # (h-basis: not only where the mean footprints fill the cache, so the verdict reads the load basis; a cache
        # that can never bind was taken off above, and the verdict is the engine's without memory, whose proofs
        # (the k_max region, k_max_floor) hold there)
        from ..dtmc.kv_basis import kv_capacity

        kv_rules = kv_capacity(engine, workload, n_engines=n_engines)
    basis = "theorem2"
    if fb is not None:
        basis = "flow_balance"
    elif sup > 0 and kv_rules is None and (cap.method == "region" or binding_k_max(engine, pol) is not None):
        # a batch-size limit below the budget (paper §6): batches may be short under a backlog, so
        # Theorem 2(b) does not apply; the stability region and the policy's own region decide (each of
        # n identical engines behind a join-the-shortest-queue router sees 1/n of the traffic).  Not where the
        # KV cache binds under its own rules (kv_rules, which counts k_max too): the region's vertices take the
        # batch of mean footprints, above where simulations saturate (SATURATION_PER_BASIS["max_throughput"]), and
        # the load basis decides below
        from .region import region_verdict

        per_engine = workload if n_engines == 1 else workload.with_rate(workload.arrival_rate_per_s / n_engines)
        region_v = region_verdict(engine, per_engine, pol, rho_any, tolerance, wc, cap)
    if sup <= 0:
        status = Status.UNSTABLE
        rho = math.inf
        reason = cap.reason
    elif fb is not None:
        status, reason, method, rho, ref = _flow_balance_verdict(engine, workload, name, wc, cap, fb, offered,
                                                                 tolerance, n_engines, assumption)
    elif region_v is not None:
        status, reason, method = region_v
        rho, ref = rho_any, sup  # the region's capacity along the mix is the denominator
        if status is Status.UNKNOWN and n_engines == 1 and engine.kv_capacity_tokens is None:
            # what the scheduler serves at least under any backlog with k_max binding (fluidq.stability.bounds)
            from .bounds import k_max_floor

            floor, why_floor = k_max_floor(engine, workload, pol)
            if floor is not None and offered < (1 - tolerance) * floor:
                status, method = Status.STABLE, "k_max_floor"
                reason = (f"k_max binds, so Theorem 2(b) does not hold as stated, but {why_floor}; the offered "
                          f"{_tps(offered)} tokens/s is {fmt_load(offered / floor)} of that floor (below 1 - "
                          f"{tolerance:.0%}), so the token backlog drains (the fluid argument of Theorem 2(b) with "
                          f"this floor for b_max/t(b_max)){assumption}; load {fmt_load(rho_any)} of the stability "
                          f"region along the mix: {cap.reason}")
            elif floor is not None:
                reason = (f"{reason}; {why_floor}, and the offered {_tps(offered)} tokens/s is "
                          f"{fmt_load(offered / floor)} of that floor, not below it, so it proves nothing here")
        if n_engines > 1:
            reason = (f"each of {n_engines} engines behind a join-the-shortest-queue router gets 1/{n_engines} of the "
                      f"traffic ({workload.arrival_rate_per_s / n_engines:.4g} of {workload.arrival_rate_per_s:.4g} "
                      f"req/s), and the rates below are per engine: {reason}")
    elif cap.kv_batch_tokens is not None or kv_rules is not None:
        # the KV cache binds: the capacities are fluid estimates from mean footprints (see KV_ESTIMATE_BAND);
        # Theorem 2(a) without the cache is the only proof (where the mean footprints do not fill the cache, the
        # capacity itself, the stability region along the mix where k_max binds: a bound over every scheduler)
        bound = cap.bound_tokens_per_s if cap.bound_tokens_per_s is not None else sup
        lo, hi = KV_ESTIMATE_BAND
        if kv_rules is not None and kv_rules.requests_per_s > 0:
            # the load basis (fluidq.dtmc.load_basis): the capacity under the cache's own rules; where seeded
            # simulations saturate against it, and against the mean-footprint batch's b/t(b), is the measured
            # SATURATION_PER_BASIS (RESULTS.md), quoted from there
            from ..capacity import tokens_per_request
            from .measured import SATURATION_PER_BASIS

            kv_band, mt_band = SATURATION_PER_BASIS["kv_rules"], SATURATION_PER_BASIS["max_throughput"]

            mean_fp = ref
            ref = kv_rules.requests_per_s * tokens_per_request(engine, workload)
            rho = offered / ref
            top = ref
            basis = "kv_rules"
            serves = (f"under the KV cache's own rules {name} serves about {kv_rules.requests_per_s:.4g} req/s = "
                      f"{_tps(ref)} tokens/s under a backlog" if wc.work_conserving else
                      f"under the KV cache's own rules no scheduler serves more than about "
                      f"{kv_rules.requests_per_s:.4g} req/s = {_tps(ref)} tokens/s")
            # which limit binds, in the words every face says (fluidq.dtmc.load_basis, h-words2), and the band
            # measured where it binds: where max_num_seqs binds, SATURATION_WHERE_K_MAX_BINDS, not the 17
            # KV-bound engines' band
            from ..dtmc.load_basis import K_MAX_BINDS, KV_CACHE_BINDS_PART

            if kv_rules.binding == "k_max":
                from .measured import SATURATION_WHERE_K_MAX_BINDS

                which, kv_band = K_MAX_BINDS, SATURATION_WHERE_K_MAX_BINDS["kv_rules"]
                band_words = kv_band.within_words()
            else:
                which = "the KV cache binds" if cap.kv_batch_tokens is not None else KV_CACHE_BINDS_PART
                band_words = kv_band.saturate_words()
            other = (f"b/t(b) at the batch the cache allows from mean request footprints (about "
                     f"{cap.kv_batch_tokens} tokens) would give {_tps(mean_fp)} tokens/s, load "
                     f"{fmt_load(offered / mean_fp)}, which overstates what the engine serves under the cache's rules "
                     f"(on those engines {mt_band.above_words()})" if cap.kv_batch_tokens is not None else
                     f"max_throughput would give {_tps(mean_fp)} tokens/s, load {fmt_load(offered / mean_fp)} "
                     f"({cap.method == 'region' and 'the stability region along the mix, ' or ''}a bound over every "
                     "scheduler, one free to size its prefill chunks, not what vLLM's scheduler serves)")
            est = (f"{which}, and that capacity (vLLM's flow balance on this engine: a request admitted "
                   f"only when its whole prompt fits, residents that outgrow the cache preempted and recomputed; "
                   f"{kv_rules.reason}) is a fluid estimate: {band_words} (the load basis of `fluidq "
                   f"check --load`, fluidq.dtmc.load_basis; {kv_band.source}); {other}")
        else:
            top = max(ref, sup)  # a staircase step near the KV-limited batch: the work-conserving estimate may be low
            serves = (f"{name} serves about {_tps(ref)} tokens/s under a backlog" if wc.work_conserving else
                      f"no scheduler serves more than about {_tps(ref)} tokens/s")
            est = (f"the KV cache binds (full batches of about {cap.kv_batch_tokens} tokens), and that capacity is a "
                   "fluid estimate from mean request footprints, which simulation moves by up to tens of percent "
                   "either way (staircase steps near that batch, recompute preemptions)"
                   + (f"; {_kv_rules_words(kv_rules, workload)}" if kv_rules is not None else ""))
        if offered > bound * (1 + tolerance):
            status = Status.UNSTABLE
            bound_name, bound_gloss = (
                ("the stability region's capacity along the mix (§6 of arXiv:2504.07347)",
                 "what any scheduler serves at best") if cap.bound_tokens_per_s is None and cap.method == "region" else
                ("sup b/t(b)", "what the engine serves at best even without its KV-cache limit"))
            reason = (f"offered load {_tps(offered)} tokens/s exceeds {bound_name} = {_tps(bound)} tokens/s, "
                      f"{bound_gloss} ({fmt_load(offered / bound)} times it; "
                      f"load {fmt_load(rho)} against the {_tps(ref)} tokens/s under the cache); by Theorem 2(a) no "
                      f"scheduler is stable{assumption}")
        elif _past(offered, hi * top, below=False):
            status = Status.UNSTABLE
            reason = (f"{serves} (load {fmt_load(rho)}); the offered {_tps(offered)} tokens/s is more than {hi:g} times "
                      f"{'it' if top == ref else f'the {_tps(top)} tokens/s of the best batch under the cache'}, "
                      f"beyond the estimate's error, so the backlog grows: {est}")
        elif wc.work_conserving and _past(offered, lo * ref, below=True):
            # below the band the estimate says the scheduler keeps up, but an estimate is no proof (a seeded
            # simulation at 0.78 of it was inconclusive): unknown, with the estimate's word
            status = Status.UNKNOWN
            reason = (f"{serves} (load {fmt_load(rho)}); the offered {_tps(offered)} tokens/s is below {lo:g} times it, "
                      f"so by the estimate {name} keeps up, but that is not proven: {est}; nothing bounds what the "
                      "engine serves under the cache from below (preemptions can waste work), so fluidq says no "
                      "verdict; simulate to decide (`fluidq simulate --replications N`; fluidq.replicate in Python)")
        elif not wc.work_conserving and _past(offered, lo * ref, below=True):
            # far below the band: the estimate is not in question, the policy is (issue: it said "too close
            # to call" at load 0.1)
            status = Status.UNKNOWN
            reason = (f"{name} is not work-conserving ({wc.reason}), and under a binding KV cache fluidq has no "
                      f"threshold of its own for it; the offered {_tps(offered)} tokens/s is only "
                      f"{fmt_load(offered / ref)} of what any scheduler serves at best under the cache (about "
                      f"{_tps(ref)} tokens/s), well below the {lo:g}-{hi:g} band where the estimate itself is in "
                      "doubt, but Theorem 2 says nothing of a policy that is not work-conserving below that bound: "
                      f"{est}; simulate to decide (`fluidq check --method simulation`, `fluidq simulate "
                      "--replications N`; fluidq.replicate in Python)")
        else:
            status = Status.UNKNOWN
            reason = (f"{serves} (load {fmt_load(rho)}), too close to call: {est}; between {lo:g} and {hi:g} times the "
                      "estimate fluidq has no verdict; simulate to decide (`fluidq simulate --replications N`; "
                      "fluidq.replicate in Python)")
    elif rho_any > 1 + tolerance:
        # the load keeps its denominator (ref): measured against sup only here, it would fall as the rate rose
        # past the peak of b/t(b) (1.07 at 1.07x b_max/t(b_max), 1.031 at 1.10x on a staircase peaking 6.7% higher)
        status = Status.UNSTABLE
        over = "" if ref == sup else (f"; load {fmt_load(rho)} against {wc_what} = {_tps(ref)} tokens/s, what "
                                      f"{name} serves under a backlog")
        reason = (f"offered load {_tps(offered)} tokens/s exceeds the capacity {_tps(sup)} tokens/s "
                  f"({fmt_load(rho_any)} times it{over}); by Theorem 2(a) no scheduler is stable{assumption}")
    elif wc.work_conserving and rho > 1 + tolerance:
        status = Status.UNSTABLE
        reason = (f"{name} is work-conserving: under a backlog it fills every batch to b_max and serves "
                  f"{wc_what} = {_tps(full)} tokens/s, below the offered {_tps(offered)} tokens/s "
                  f"(load {fmt_load(rho)}), "
                  f"so its backlog grows (fluid argument of Theorem 2; b/t(b) peaks at a smaller batch, "
                  f"{_tps(sup)} tokens/s, which only a scheduler that sizes its batches could use){assumption}")
    elif rho >= 1 - tolerance and wc.work_conserving:
        status = Status.CRITICAL
        reason = (f"load {fmt_load(rho)} is within {tolerance:.0%} of the capacity {_tps(ref)} tokens/s "
                  f"({wc_what.rstrip(',')}, what a work-conserving scheduler serves); at the boundary Theorem 2 decides "
                  "nothing")
    elif wc.work_conserving:
        status = Status.STABLE
        where = "the engine is" if n_engines == 1 else (
            f"{n_engines} engines behind a join-the-shortest-queue router are (Prop. 3)")
        reason = (f"{name} is work-conserving (no short batch in {wc.states_checked:,} searched states); "
                  f"load {fmt_load(rho)} < 1 relative to {wc_what} = {_tps(ref)} tokens/s, so by Theorem 2(b) {where} "
                  f"positive recurrent{assumption}")
        if engine.kv_capacity_tokens is not None:
            # Theorem 2(b) is for an engine without memory; a cache that the mean footprints do not fill can
            # still fill under a backlog (a prefill-first scheduler admits prompts while decoders wait: Orca on
            # 4 x H100, 70B, k_max 2048, preempted 377 times in 120 s at 1.3x) and preemptions waste work
            status = Status.UNKNOWN
            why_not = why_kv  # (the cache was kept: kv_never_binds said why, above)
            reason = (f"without its KV cache: {reason}; but the cache ({engine.kv_capacity_tokens:,} tokens) is not "
                      f"shown never to bind ({why_not}), and under a backlog it can "
                      "fill and preempt (recompute wastes work), so that is no proof here; simulate to decide "
                      "(`fluidq check --method auto`; fluidq.replicate in Python)")
    elif n_engines > 1:
        status, reason, threshold, method = _pooled_non_wc_verdict(engine, workload, pol, rho, tolerance, wc,
                                                                   n_engines)
    else:
        status, reason, threshold, method = _non_work_conserving_verdict(engine, workload, pol, rho, tolerance, wc)
    if kv_note:
        reason = f"{reason}{kv_note}"
        if fb is None and sup > 0:
            # the load basis of `--load` reads the engine with its cache (fluidq.dtmc.load_basis: the flow balance
            # under the cache's rules, max_num_seqs binding): the verdict above is the engine's without memory, and
            # its load is said on that basis too, the one `fluidq capacity`'s load-basis line prints (h-basis)
            from ..capacity import tokens_per_request
            from ..dtmc.kv_basis import kv_capacity

            kv_rules = kv_capacity(cached, workload, n_engines=n_engines)
            if kv_rules is not None and kv_rules.requests_per_s > 0:
                ref = kv_rules.requests_per_s * tokens_per_request(engine, workload)
                rho, basis = offered / ref, "kv_rules"
                reason = (f"{reason}; load {fmt_load(rho)} of the load basis of `fluidq check --load`, the capacity "
                          f"under the KV cache's rules ({kv_rules.requests_per_s:.4g} req/s: {kv_rules.reason})")
    if engine.b_max < given_engine.b_max:
        reason = (f"{reason} (the scheduler's own budget b_max={engine.b_max} caps its batches below the engine's "
                  f"{given_engine.b_max}: the capacities here are for batches of at most {engine.b_max} tokens)")
    return StabilityResult(status=status, load=rho, reason=reason, policy=name,
                           capacity_tokens_per_s=ref, offered_tokens_per_s=offered, method=method,
                           work_conserving=wc.work_conserving, threshold_requests_per_s=threshold,
                           inputs={"engine": given_engine.to_dict(), "workload": workload.to_dict(),
                                   "tolerance": tolerance, "n_engines": n_engines, "load_basis": basis,
                                   **({} if fb is None else {"flow_balance_requests_per_s": fb.requests_per_s,
                                                             "flow_balance_binding": fb.binding}),
                                   **({} if kv_rules is None else {"kv_rules_requests_per_s": kv_rules.requests_per_s})})


def _kv_rules_words(kv_rules, workload) -> str:
    """The capacity under the KV cache's rules (:func:`fluidq.dtmc.kv_basis.kv_capacity`) and the load against it, in
    words, for a verdict whose own capacity is the mean-footprint estimate."""
    lam = kv_rules.requests_per_s
    return (f"under the cache's own rules (a request admitted only when its whole prompt fits, residents that "
            f"outgrow the cache preempted and recomputed: {kv_rules.reason}) the engine serves about {lam:.4g} "
            f"req/s, so the load is {fmt_load(workload.arrival_rate_per_s / lam) if lam > 0 else '–'} of that "
            "(the basis of `fluidq check --load` and `fluidq simulate --load`, where seeded simulations put the "
            "stability threshold; fluidq.dtmc.kv_basis.kv_capacity)")


#: a load within this relative distance of a band edge is at the edge, not past it: a load read back from the rate
#: that ``--load`` set is the edge up to float noise (``--load 0.95`` reads back 0.9499999999999998 on some engines,
#: which was decided as "0.9500 is below 0.95 times the capacity")
_EDGE_RTOL = 1e-9


def _past(x: float, edge: float, *, below: bool) -> bool:
    """``x`` lies beyond ``edge`` (below it where ``below``, else above it) by more than float noise
    (:data:`_EDGE_RTOL`): a load at an edge is inside the band, where the estimate decides nothing."""
    if math.isclose(x, edge, rel_tol=_EDGE_RTOL):
        return False
    return x < edge if below else x > edge


def _flow_balance_verdict(engine, workload, name, wc, cap, fb, offered, tolerance, n_engines, assumption):
    """``(status, reason, method, load, capacity_tokens_per_s)`` for an engine whose batch time reads the batch
    composition (:func:`fluidq.dtmc.flow_basis.flow_balance_capacity`): the load is read against vLLM's flow
    balance, a fluid estimate decided outside :data:`~fluidq.dtmc.flow_basis.FLOW_BALANCE_BAND`
    (:data:`KV_ESTIMATE_BAND` when the KV cache binds, and then never stable).  ``t(b)`` (one prefill chunk, no
    decode cost) is neither the iteration time nor a bound on it (a whole chunk's attention can exceed that of
    the decodes it stands for), so no Theorem-2 bound is read from it."""
    from ..capacity import tokens_per_request
    from ..dtmc.flow_basis import estimate_band

    ref = fb.requests_per_s * tokens_per_request(engine, workload)
    rho = offered / ref if ref > 0 else math.inf
    lo, hi = estimate_band(fb)
    who = "" if n_engines == 1 else f" ({n_engines} engines behind a router, summed)"
    est = (f"vLLM's flow balance{who} serves {fb.requests_per_s:.4g} req/s = {_tps(ref)} tokens/s of batch work "
           f"({fb.binding} binds: {fb.reason}); the batch time reads the batch composition, so t(b) (one prefill "
           f"chunk, no decode cost) is not the iteration time and b/t(b) is not the capacity (at a vLLM engine's capacity point it "
           f"overstates it); the flow balance is the load basis, a fluid estimate decided outside {lo:g}-{hi:g} "
           "times it")
    never = float(getattr(fb, "never_served_fraction", 0.0) or 0.0)
    if never > 0:
        # a request whose prompt and output exceed the whole KV cache is never served: such requests arrive at
        # lambda * never per second and stay, so the backlog grows under every scheduler
        lam = workload.arrival_rate_per_s
        return (Status.UNSTABLE, f"{100 * never:.2g} % of the workload's requests (of the lengths read) do not fit the "
                f"KV cache with their output, so they are never served and accumulate at {lam * never:.4g} req/s "
                f"under every scheduler: {est}", "flow_balance", rho, ref)
    if not wc.work_conserving:
        return (Status.UNKNOWN, f"{name} is not work-conserving; fluidq has no verdict for it on an engine whose batch "
                f"time reads the batch composition (load {fmt_load(rho)} of the flow balance: {est}); simulate to "
                "decide (`fluidq simulate --replications N`; fluidq.replicate in Python)", "flow_balance", rho, ref)
    lo_edge, hi_edge = min(lo, 1 - tolerance), max(hi, 1 + tolerance)  # the edges the verdicts read
    if _past(rho, hi_edge, below=False):
        return (Status.UNSTABLE, f"load {fmt_load(rho)} is above {hi_edge:g} times the capacity, beyond the estimate's "
                f"error, so the backlog grows{assumption}: {est}", "flow_balance", rho, ref)
    if abs(rho - 1) <= tolerance:
        return (Status.CRITICAL, f"load {fmt_load(rho)} is within {tolerance:.0%} of the capacity: {est}",
                "flow_balance", rho, ref)
    if _past(rho, lo_edge, below=True) and fb.binding == "kv_cache":
        # where the KV cache binds no lower bound on what the engine serves is known (recompute preemptions can
        # waste work), as on the KV-estimate verdicts: no proof of stability
        return (Status.UNKNOWN, f"load {fmt_load(rho)} is below {lo_edge:g} times the capacity, so by the estimate {name} "
                f"keeps up, but that is not proven where the KV cache binds (preemptions can waste work): {est}; "
                "simulate to decide (`fluidq simulate --replications N`; fluidq.replicate in Python)",
                "flow_balance", rho, ref)
    if _past(rho, lo_edge, below=True):
        return (Status.STABLE, f"{name} is work-conserving and the load {fmt_load(rho)} is below {lo_edge:g} times the "
                f"capacity, beyond the estimate's error, so {name} keeps up{assumption}: {est}", "flow_balance", rho,
                ref)
    return (Status.UNKNOWN, f"load {fmt_load(rho)}, too close to call: {est}; simulate to decide (`fluidq simulate "
            "--replications N`; fluidq.replicate in Python)", "flow_balance", rho, ref)


def _simulation_verdict(engine, workload, policy, *, tolerance, n_engines, growth_tolerance: float = 0.01,
                        n_replications: int = 8, horizon_s=None, **rep_kw) -> StabilityResult:
    """``check_stability(..., method="simulation")`` for one engine: replications decide; the analytic load,
    capacity and verdict are reported beside them."""
    from .._validate import integer
    from .simulation import replicate

    if integer("n_engines", n_engines, minimum=1) != 1:
        raise ParameterError("n_engines", n_engines, "1 with method='simulation'",
                             "simulate engines behind a router with fluidq.simulate_network (a Network)")
    ana = check_stability(engine, workload, policy, tolerance=tolerance)
    rep = replicate(engine, workload, policy, n_replications=n_replications, horizon_s=horizon_s,
                    tolerance=growth_tolerance, keep_runs=False, **rep_kw)
    reason = (f"simulation: {rep.verdict} ({rep.reason}); the analytic verdict ({ana.method}) is "
              f"{ana.status.value}: {ana.reason}")
    return StabilityResult(status=rep.status, load=ana.load, reason=reason, policy=ana.policy,
                           capacity_tokens_per_s=ana.capacity_tokens_per_s,
                           offered_tokens_per_s=ana.offered_tokens_per_s, method="simulation",
                           work_conserving=ana.work_conserving, threshold_requests_per_s=ana.threshold_requests_per_s,
                           inputs={**ana.inputs, "method": "simulation", "replications": rep.inputs},
                           replications=rep)


#: ``(low, high)``: where a KV-cache-bound verdict is decided by the fluid estimate of the capacity (stable
#: below ``low`` times the work-conserving estimate, unstable above ``high`` times the larger of it and the
#: best batch under the cache); between them it is unknown.  In simulation the estimate erred by -7 %
#: (affine batch time, fixed 600/200 lengths, 30k-token cache), -4 % (affine, Azure conversation lengths,
#: 40k) and beyond +15 % (the paper's staircase, Azure conversation, 50k: the KV-limited batch of 263
#: tokens sits just past a step); tests/stability/test_kv_verdicts.py holds both ends to simulation.
from ..dtmc.flow_basis import KV_ESTIMATE_BAND  # noqa: E402  (one value: the flow-balance verdicts read it too)


def __getattr__(name):
    if name == "saturated_rate":  # lives with the renewal thresholds it reads (imported on first use)
        from ..dtmc.saturation import saturated_rate

        return saturated_rate
    if name == "stability_threshold":  # the one threshold entry point (closed form, renewal, DTMC, simulation)
        from ..dtmc.threshold import stability_threshold

        return stability_threshold
    if name in ("fluid", "network", "simulation"):  # the fluid, network and simulation verdicts: imported on
        import importlib  # first use (they load networks, flow paths, the simulator and its kernel, which an
        # engine's analytic verdict does not need)

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'fluidq.stability' has no attribute {name!r}")


# the network, fluid and simulation verdicts register their old paths (under fluidq.network, fluidq.fluid and
# fluidq.sim) when first imported, which the package fluidq arranges on the first use of those paths
# (fluidq/__init__.py: _OLD_NAMES, _OLD_MODULES)
