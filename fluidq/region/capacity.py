"""The capacity for a given prefill/decode mix when ``k_max`` binds (used by ``max_throughput``).

With a batch-size limit the Theorem-2 number ``sup_b b/t(b)`` is not the capacity for every mix:
the largest request rate is the largest ``lambda`` with ``(lambda m_p, lambda m_d)`` in the
stability region (Li, Dai, Peng, arXiv:2504.07347, §6).  These helpers compute it and say in
words whether, and how, the limit binds.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..batchtime import ContextAware
from .region import stability_region

__all__ = ["region_capacity", "cached_policy_region"]


@lru_cache(maxsize=256)
def _region(engine, kv, prompt):
    return stability_region(engine, kv_tokens=kv, prompt_tokens=prompt)


def fixed_prompt(workload):
    """The prompt length when every prompt has the same length, else ``None``."""
    from ..workload import Fixed

    lp = workload.prompt_tokens
    return lp.n if isinstance(lp, Fixed) else None


def region_capacity(engine, workload) -> tuple[float, int, str, bool]:
    """``(tokens_per_s, batch_tokens, reason, binds)`` for ``workload``'s mix on ``engine``.

    ``tokens_per_s = lambda* (m_p + m_d)`` with ``lambda*`` the largest rate whose point
    ``(lambda m_p, lambda m_d)`` is in the region -- for prompts of one fixed length ``P`` the
    region where a request brings at most ``P`` prefill tokens to a batch, else the
    reconstructed rule (any number) -- ; ``binds`` is True when it is below the
    Theorem-2 number.  ``batch_tokens`` is the largest batch among the shapes where the ray
    leaves the region.
    """
    from ..capacity import mean_decode_context

    kv = mean_decode_context(engine, workload) if isinstance(engine.batch_time, ContextAware) else None
    prompt = fixed_prompt(workload)
    try:
        region = _region(engine, kv, prompt)
    except TypeError:  # unhashable engine (a user model): no cache
        region = stability_region(engine, kv_tokens=kv, prompt_tokens=prompt)
    mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
    lam = region.max_request_rate(mp, md)
    tokens = lam * (mp + md)
    cap = region.capacity_tokens_per_s
    binds = tokens < cap * (1 - 1e-9)
    q = np.array([mp, md]) * lam
    near = np.linalg.norm(region.vertices - q, axis=1) <= 1e-9 * region._scale
    if np.any(near):
        used = [int(np.flatnonzero(near)[0])]
    else:
        proj = region.A @ np.array([mp, md])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(proj > 0, region.b / np.where(proj > 0, proj, 1.0), np.inf)
        used = [int(i) for i in region.facet_vertices[int(np.argmin(ratio))]]
    shapes = [tuple(int(v) for v in region.shapes[i]) for i in used if region.kinds[i] != "idle"]
    batch = max(x + y for x, y in shapes) if shapes else engine.b_max
    words = " and ".join(f"{x} prefill + {y} decode tokens" for x, y in shapes)
    if binds:
        reason = (f"k_max={engine.k_max} binds: for m_p={mp:g}, m_d={md:g} the point (lambda m_p, lambda m_d) "
                  f"leaves the stability region at lambda*={lam:.6g} req/s, through batches of {words} "
                  f"({tokens:.6g} tokens/s, {tokens / cap:.4f} of the Theorem-2 number {cap:.6g}"
                  + (f"; prompts of {prompt} tokens, so a request brings at most {prompt} prefill tokens to a batch"
                     if prompt is not None else "") + "; "
                  "§6 of arXiv:2504.07347, admissibility rule reconstructed)")
    else:
        reason = f"k_max={engine.k_max} does not bind for m_p={mp:g}, m_d={md:g}"
    return float(tokens), int(batch), reason, bool(binds)


_POLICY_CACHE: dict = {}


def cached_policy_region(engine, policy, prompt_tokens=None):
    """:func:`fluidq.region.policy_region`, cached for hashable (engine, policy, prompt) keys."""
    from .policy import policy_region

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
    from ..policies.region_aware import RegionAware
    from ..results import Status

    name = getattr(pol, "name", repr(pol))
    offered = workload.token_rate_per_s
    if rho > 1 + tolerance:
        return (Status.UNSTABLE, f"offered load {offered:.4g} tokens/s is outside the stability region (load {rho:.3f} "
                f"along the workload's mix): {cap.reason}; no scheduler is stable", "region")
    if rho >= 1 - tolerance:
        return (Status.CRITICAL, f"load {rho:.3f} is within {tolerance:.0%} of the stability region's boundary: "
                f"{cap.reason}", "region")
    if not (wc.work_conserving or isinstance(pol, RegionAware)):
        return None
    pr = cached_policy_region(engine, pol, fixed_prompt(workload))
    point = (workload.arrival_rate_per_s * workload.mean_prompt_tokens,
             workload.arrival_rate_per_s * workload.mean_output_tokens)
    s = pr.scale_of(point)
    # ``s``: the factor by which the point can grow along its direction before it leaves the region of
    # the batches the policy forms under backlog (s > 1 inside, s < 1 outside); ``1 / s`` is the point's
    # position relative to that region's boundary (the load there: < 1 inside, > 1 outside).
    there = 1.0 / s if s > 0 else float("inf")
    if there > 1 + tolerance:  # the same rule as for the engine's load ``rho``
        return (Status.UNSTABLE, f"inside the stability region (load {rho:.3f}), but outside the region of the "
                f"batches {name} forms under backlog: they reach only {s:.4f} of this point along its direction "
                f"(load {there:.4f} relative to that region's boundary, above 1), so its backlog grows once formed "
                f"(fluid argument, ours; Theorem 2(b) does not hold under k_max -- a region-aware scheduler, "
                f"fluidq.policies.region_aware.RegionAware, serves it): {cap.reason}", "region")
    if there >= 1 - tolerance:
        side = "on" if abs(there - 1) <= 1e-9 else ("just outside" if there > 1 else "just inside")
        where = (f"{side} the boundary of the region of the batches {name} forms under backlog (load {there:.4f} "
                 f"relative to that boundary: above 1 is outside, below 1 inside; within the {tolerance:.0%} "
                 f"tolerance, and that region is an outer estimate)")
    else:
        where = (f"inside the region of the batches {name} forms under backlog (load {there:.4f} relative to that "
                 f"region's boundary, below 1)")
    return (Status.UNKNOWN, f"inside the stability region (load {rho:.3f}) and {where}, but under k_max Theorem 2(b) "
            f"does not hold and the policy's dynamics set its time shares: simulate to decide "
            f"(fluidq.region.simulated_region, fluidq.sim.replicate): {cap.reason}", "region")
