"""What a policy serves under a large backlog (:func:`saturated_rate`), the rate the fluid backlog
drains at: the reference rate of the DTMC builders and of the simulation's growth verdicts.

It lives with the renewal-reward thresholds it reads (:mod:`fluidq.dtmc.threshold`); it is
importable as ``fluidq.stability.saturated_rate`` too.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..capacity import max_throughput, tokens_per_request
from ..engine import Engine
from ..engine.budgets import effective_engine
from ..policies import resolve_policy
from ..policies.conservation import work_conserving_cached as _work_conserving
from ..workload import Workload

__all__ = ["Saturation", "saturated_rate", "saturation"]


@dataclass(frozen=True)
class Saturation:
    """What :func:`saturation` found: the rate and the pieces it was computed from, for a caller that
    refines the rate (:func:`fluidq.stability.replicate` under a binding ``k_max``) without solving them again.

    Attributes
    ----------
    tokens_per_s, how : float, str
        What :func:`saturated_rate` returns.
    policy : Policy
        The resolved policy.
    engine : Engine
        The engine under the policy's budgets (:func:`fluidq.engine.budgets.effective_engine`).
    capacity : CapacityResult
        ``max_throughput(engine, workload)`` of that engine.
    work_conserving : bool
        Whether the policy is work-conserving.
    """

    tokens_per_s: float
    how: str
    policy: object
    engine: Engine
    capacity: object
    work_conserving: bool


def saturation(engine, workload: Workload, policy="sarathi") -> Saturation:
    """:func:`saturated_rate` with the resolved policy, effective engine and capacity it read."""
    from .threshold import cached_renewal_threshold

    pol = resolve_policy(policy)
    engine = effective_engine(engine, pol)
    cap = max_throughput(engine, workload)
    wc = bool(_work_conserving(pol).work_conserving)

    def out(rate, how):
        return Saturation(float(rate), how, pol, engine, cap, wc)

    if cap.tokens_per_s <= 0:
        return out(0.0, cap.reason)
    if wc:
        from .flow_basis import flow_balance_capacity

        fb = flow_balance_capacity(engine, workload)
        if fb is not None:  # t(b) is not such an engine's iteration time: vLLM's flow balance is the basis
            return out(fb.requests_per_s * tokens_per_request(engine, workload),
                       f"vLLM's flow balance ({fb.binding} binds), the load basis of an engine whose batch time reads "
                       "the batch composition")
        # where k_max binds along the mix the region sets the figure and batches may be short (h-words2)
        fills = ("serves at most this under a backlog" if cap.method == "region" else "fills its batches")
        return out(cap.work_conserving_tokens_per_s, f"{cap.work_conserving_basis}: a work-conserving scheduler "
                                                     f"{fills}")
    thr, _why = cached_renewal_threshold(engine, workload, pol)
    if thr is not None:
        return out(thr * tokens_per_request(engine, workload), f"{getattr(pol, 'name', pol)}'s own threshold {thr:.4g} req/s")
    return out(cap.tokens_per_s, "sup b/t(b), an upper bound (this policy's own rate is not known)")


def saturated_rate(engine, workload: Workload, policy="sarathi") -> tuple[float, str]:
    """``(tokens_per_s, how)``: what ``policy`` serves under a large backlog, the rate the fluid backlog
    drains at (its slope is ``max(0, lambda (m_p + m_d) - rate)``).

    Work-conserving: ``b_max/t(b_max)`` (full batches; the region bound when ``k_max`` binds); on an engine whose
    batch time reads the batch composition, vLLM's flow balance (:func:`fluidq.dtmc.flow_basis.flow_balance_capacity`).  Not
    work-conserving with a known threshold (renewal-reward): the threshold times ``m_p + m_d``.  Else the
    Theorem-2(a) bound ``sup_b b/t(b)``, which only bounds the rate from above.  :func:`saturation` returns
    the same rate with the pieces it was computed from.
    """
    s = saturation(engine, workload, policy)
    return s.tokens_per_s, s.how
