"""Where a network's capacity arguments are only bounds: read from the stations' engines and
schedulers alone (budgets, ``k_max``, memory, batch-time kind), so this is a fact of the description
that :meth:`Network.describe` prints and the verdicts of :mod:`fluidq.stability.network` attach.
``fluidq.capacity.network`` is the old path of this module.

:func:`capacity_caveats` says, one line per cause, where a station's ``b_max / t(b_max)`` is only an
upper bound on its capacity, and where the loads at an even JSQ split do not describe the network.
"""
from __future__ import annotations

from ..engine.budgets import binding_k_max

__all__ = ["capacity_caveats", "k_max_floor"]


def k_max_floor(network, station) -> tuple | None:
    """``(k, tokens_per_s, why)``: what ``station`` of ``network`` serves at least under any backlog when its
    ``k_max = k`` binds, or ``None`` where no such floor is read.

    The single-engine rule (:func:`fluidq.stability.bounds.k_max_floor`, registered here when ``fluidq`` is
    imported), on the station's engine and scheduler with the largest prompt and output of the hops it serves:
    a scheduler whose batch holds at least ``min(b_max, k_max, demand)`` tokens in every state (checked by
    search), work-conserving, forms batches of at least ``min(b_max, k)`` tokens whenever ``k`` or more requests
    are in the station, and with bounded lengths a large backlog is many requests, so it serves at least
    ``min b/t(b)`` over ``min(b_max, k) <= b <= b_max`` (at the most context ``k`` requests read) whatever the
    mix.  ``None`` with no binding ``k_max``, a hop of unbounded length, async scheduling, a scheduler the
    search refutes or one that is not work-conserving."""
    from ..workload import Poisson, Workload
    from .model import _analysis, route_hops

    k = binding_k_max(station.engine, station.policy)
    if k is None:
        return None
    most_p = most_o = 0
    for c in network.classes:
        for h in route_hops(c.route):
            if station.name not in network.engines_of(h.engine):
                continue
            for length, is_prompt in ((h.prompt_tokens, True), (h.output_tokens, False)):
                sup = length.support()
                if sup is None:
                    return None  # unbounded: a large token backlog need not be many requests
                top = int(max(sup[0]))
                if is_prompt:
                    most_p = max(most_p, top)
                else:
                    most_o = max(most_o, top)
    if most_p < 1:
        return None
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=most_p, output_tokens=max(most_o, 1))
    floor, why = _analysis("k_max_floor")(station.engine, w, station.policy)
    return None if floor is None else (k, floor, why)


def capacity_caveats(network) -> list:
    """Why the load and fluid arguments may not describe ``network``, one line per cause.

    Both take a station's capacity to be ``b_max / t(b_max)`` tokens per second whatever requests it
    serves.  That is an upper bound, and not the capacity, when the engine or its scheduler caps the
    batch size (``k_max``: the capacity then depends on the request mix), the scheduler's budget is below
    the engine's, the batch time grows with the KV cache (context-aware), or a KV-cache capacity limits
    the residents.  A ``k_max`` that can never bind (at or above the most requests a batch holds,
    :func:`fluidq.stability.binding_k_max`) is no cause, and neither is one in a DAG whose station is loaded
    below 1 against :func:`k_max_floor` (what its scheduler serves at least under any backlog with ``k_max``
    binding, whatever the mix: the single-engine rule): feedforward induction drains it at that rate as at
    ``b_max/t(b_max)``.
    An overload (a load above 1 at the upper bound) still proves instability.
    """
    return caveats_and_floors(network)[0]


def caveats_and_floors(network) -> tuple:
    """``(capacity_caveats(network), floors)``: ``floors`` maps the name of each station whose binding ``k_max``
    the caveats let pass (loaded below its :func:`k_max_floor`) to that floor ``(k, tokens_per_s, why)``, so
    that :meth:`Network.describe` prints the floor the caveats found without searching for it again."""
    out = []
    floors = {}
    loads = network.loads() if network.is_dag else {}
    for st in network.stations:
        eng, pol = st.engine, st.policy
        why = []
        k = binding_k_max(eng, pol)  # a k_max at or above the most requests a batch can hold never binds
        if k is not None and st.name in loads:
            fl = k_max_floor(network, st)  # far from binding at this load: the station drains at its floor rate
            if fl is not None and loads[st.name] * st.capacity_tokens_per_s < fl[1]:
                k = None
                floors[st.name] = fl
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
    return out, floors
