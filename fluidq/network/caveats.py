"""Where a network's capacity arguments are only bounds: read from the stations' engines and
schedulers alone (budgets, ``k_max``, memory, batch-time kind), so this is a fact of the description
that :meth:`Network.describe` prints and the verdicts of :mod:`fluidq.stability.network` attach.
``fluidq.capacity.network`` is the old path of this module.

:func:`capacity_caveats` says, one line per cause, where a station's ``b_max / t(b_max)`` is only an
upper bound on its capacity, and where the loads at an even JSQ split do not describe the network.
"""
from __future__ import annotations

from ..engine.budgets import binding_k_max

__all__ = ["capacity_caveats"]


def capacity_caveats(network) -> list:
    """Why the load and fluid arguments may not describe ``network``, one line per cause.

    Both take a station's capacity to be ``b_max / t(b_max)`` tokens per second whatever requests it
    serves.  That is an upper bound, and not the capacity, when the engine or its scheduler caps the
    batch size (``k_max``: the capacity then depends on the request mix), the scheduler's budget is below
    the engine's, the batch time grows with the KV cache (context-aware), or a KV-cache capacity limits
    the residents.  A ``k_max`` that can never bind (at or above the most requests a batch holds,
    :func:`fluidq.stability.binding_k_max`) is no cause.  An overload (a load above 1 at the upper bound) still proves instability.
    """
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
