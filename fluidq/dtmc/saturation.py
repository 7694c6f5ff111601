"""What a policy serves under a large backlog (:func:`saturated_rate`), the rate the fluid backlog
drains at: the reference rate of the DTMC builders and of the simulation's growth verdicts.

It lives with the renewal-reward thresholds it reads (:mod:`fluidq.dtmc.threshold`); it is
importable as ``fluidq.stability.saturated_rate`` too.
"""
from __future__ import annotations

from ..capacity import max_throughput
from ..engine.budgets import effective_engine
from ..policies import resolve_policy
from ..policies.conservation import work_conserving_cached as _work_conserving
from ..workload import Workload

__all__ = ["saturated_rate"]



def saturated_rate(engine, workload: Workload, policy="sarathi") -> tuple[float, str]:
    """``(tokens_per_s, how)``: what ``policy`` serves under a large backlog, the rate the fluid backlog
    drains at (its slope is ``max(0, lambda (m_p + m_d) - rate)``).

    Work-conserving: ``b_max/t(b_max)`` (full batches; the region bound when ``k_max`` binds).  Not
    work-conserving with a known threshold (renewal-reward): the threshold times ``m_p + m_d``.  Else the
    Theorem-2(a) bound ``sup_b b/t(b)``, which only bounds the rate from above.
    """
    from .threshold import cached_renewal_threshold

    pol = resolve_policy(policy)
    engine = effective_engine(engine, pol)
    cap = max_throughput(engine, workload)
    if cap.tokens_per_s <= 0:
        return 0.0, cap.reason
    if _work_conserving(pol).work_conserving:
        return float(cap.work_conserving_tokens_per_s), (f"{cap.work_conserving_basis}: a work-conserving scheduler "
                                                         "fills its batches")
    thr, _why = cached_renewal_threshold(engine, workload, pol)
    if thr is not None:
        return float(thr * workload.mean_tokens), f"{getattr(pol, 'name', pol)}'s own threshold {thr:.4g} req/s"
    return float(cap.tokens_per_s), "sup b/t(b), an upper bound (this policy's own rate is not known)"
