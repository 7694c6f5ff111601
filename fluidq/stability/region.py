"""The verdict below Theorem 2 when a batch-size limit ``k_max`` binds: the offered point against the
stability region (:mod:`fluidq.capacity.region`) and against the region of the batches the policy
forms under backlog (:func:`fluidq.region.policy_region`), paper §6 of arXiv:2504.07347.
"""
from __future__ import annotations

from ..capacity import offered_tokens_per_s, request_work
from ..capacity.region_capacity import fixed_prompt
from ..policies.region_aware import RegionAware
from ..results import Status, fmt_load

__all__ = ["cached_policy_region", "region_verdict"]

_POLICY_CACHE: dict = {}


def cached_policy_region(engine, policy, prompt_tokens=None):
    """:func:`fluidq.region.policy_region`, cached for hashable (engine, policy, prompt) keys."""
    from .policy_region import policy_region

    try:
        key = (engine, policy, prompt_tokens)
        hash(key)
    except TypeError:
        return policy_region(engine, policy, prompt_tokens=prompt_tokens)
    if key not in _POLICY_CACHE:
        if len(_POLICY_CACHE) > 256:
            _POLICY_CACHE.clear()
        _POLICY_CACHE[key] = policy_region(engine, policy, prompt_tokens=prompt_tokens)
    return _POLICY_CACHE[key]


def region_verdict(engine, workload, pol, rho, tolerance, wc, cap):
    """``(status, reason, method)`` when ``k_max`` binds (``cap.method == "region"``), else ``None``.

    Above the region boundary no scheduler is stable (paper §6).  Below it Theorem 2(b) no longer
    applies: a work-conserving scheduler can diverge inside the region (Sarathi with
    ``b_max = 1024`` at vertex C).  The offered point is then compared with the region of the
    batches the policy forms under backlog (:func:`fluidq.region.policy_region`, an outer
    estimate, ours): outside it -> unstable (fluid argument; simulations agree for Sarathi-Serve,
    Orca and FasterTransformer at vertex C); inside it -> unknown (the policy's dynamics, not an LP,
    set its time shares: simulate, e.g. :func:`fluidq.region.simulated_region`).  Policies that
    are neither work-conserving nor region-aware return ``None`` (their own verdict applies).
    """
    name = getattr(pol, "name", repr(pol))
    offered = offered_tokens_per_s(engine, workload)
    if rho > 1 + tolerance:
        return (Status.UNSTABLE, f"offered load {offered:.4g} tokens/s is outside the stability region (load {fmt_load(rho)} "
                f"along the workload's mix): {cap.reason}; no scheduler is stable", "region")
    if rho >= 1 - tolerance:
        return (Status.CRITICAL, f"load {fmt_load(rho)} is within {tolerance:.0%} of the stability region's boundary: "
                f"{cap.reason}", "region")
    if not (wc.work_conserving or isinstance(pol, RegionAware)):
        return None
    pr = cached_policy_region(engine, pol, fixed_prompt(workload))
    mp, md = request_work(engine, workload)  # m_d - 1 decode tokens with prefill_emits_token
    point = (workload.arrival_rate_per_s * mp, workload.arrival_rate_per_s * md)
    s = pr.scale_of(point)
    # ``s``: the factor by which the point can grow along its direction before it leaves the region of
    # the batches the policy forms under backlog (s > 1 inside, s < 1 outside); ``1 / s`` is the point's
    # position relative to that region's boundary (the load there: < 1 inside, > 1 outside).
    there = 1.0 / s if s > 0 else float("inf")
    if there > 1 + tolerance:  # the same rule as for the engine's load ``rho``
        return (Status.UNSTABLE, f"inside the stability region (load {fmt_load(rho)}), but outside the region of the "
                f"batches {name} forms under backlog: they reach only {s:.4f} of this point along its direction "
                f"(load {there:.4f} relative to that region's boundary, above 1), so its backlog grows once formed "
                f"(fluid argument, ours; Theorem 2(b) does not hold under k_max -- a region-aware scheduler that "
                f"time-shares the batch shapes of `fluidq region --point` serves it; in Python "
                f"fluidq.policies.region_aware.RegionAware): {cap.reason}", "region")
    if there >= 1 - tolerance:
        side = "on" if abs(there - 1) <= 1e-9 else ("just outside" if there > 1 else "just inside")
        where = (f"{side} the boundary of the region of the batches {name} forms under backlog (load {there:.4f} "
                 f"relative to that boundary: above 1 is outside, below 1 inside; within the {tolerance:.0%} "
                 f"tolerance, and that region is an outer estimate)")
    else:
        where = (f"inside the region of the batches {name} forms under backlog (load {there:.4f} relative to that "
                 f"region's boundary, below 1)")
    return (Status.UNKNOWN, f"inside the stability region (load {fmt_load(rho)}) and {where}, but under k_max Theorem 2(b) "
            f"does not hold and the policy's dynamics set its time shares: simulate to decide "
            f"(`fluidq simulate --replications N` or `fluidq region --policies NAME --simulate`; in Python "
            f"fluidq.sim.replicate, fluidq.region.simulated_region): {cap.reason}", "region")
