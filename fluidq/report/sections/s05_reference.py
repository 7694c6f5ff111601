"""What the whole report is measured against: the reference capacity, the loads, the schedulers."""
from __future__ import annotations

from .. import Section


def render(ctx):
    from ..reference import HIGH, LOW

    ref = ctx.reference
    md = "\n".join([
        ref.capacity_note, "",
        (f"**Loads shown.** Every section looks at loads below and above capacity as fractions of this "
         f"`lambda*` (the simulations at {LOW:g} and {HIGH:g}), whatever rate the workload offers; a section "
         "that uses another basis says so where it does."), "",
        ref.policy_note,
    ])
    return Section("Reference capacity and scheduler configuration", md, [], {"reference": ref.to_dict()})
