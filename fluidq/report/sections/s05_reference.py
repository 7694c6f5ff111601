"""The report's story in one place: one engine's capacity, the engines the workload needs, the loads shown."""
from __future__ import annotations

from .. import Section


def render(ctx):
    from ..reference import fmt4

    ref = ctx.reference
    hi = (f"{fmt4(ref.high)} (one engine fewer)" if ref.high_is_fewer else f"{fmt4(ref.high)} (above capacity)")
    md = "\n".join([
        ref.capacity_note, "",
        ref.deployment_note, "",
        (f"**How the sections follow.** *Capacity* derives `lambda*` (Theorem 2) and the engine count; the "
         f"*verdicts* judge each scheduler at the operating point load {fmt4(ref.low)} and around it; the "
         f"*simulations* check those verdicts at loads {fmt4(ref.low)} and {hi}; the *region* places the "
         "operating point in the (prefill, decode) plane; *latency* compares request orderings on one engine "
         "at the operating point and at a busier load, and says whether their intervals separate. Every load is a fraction of "
         "`lambda*`; a section that uses another basis says so where it does."), "",
        ref.policy_note,
    ])
    return Section("Reference capacity, deployment and scheduler configuration", md, [],
                   {"reference": ref.to_dict()})
