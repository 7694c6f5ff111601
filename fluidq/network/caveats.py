"""Where a network's capacity arguments are only bounds: read from the stations' engines and
schedulers alone (budgets, ``k_max``, memory, batch-time kind), so this is a fact of the description
that :meth:`Network.describe` prints and the verdicts of :mod:`fluidq.stability.network` attach.
``fluidq.capacity.network`` is the old path of this module.

:func:`capacity_caveats` says, one line per cause, where a station's ``b_max / t(b_max)`` is only an
upper bound on its capacity, and where the loads at an even JSQ split do not describe the network.
"""
from __future__ import annotations

from ..engine.budgets import binding_k_max


def station_capacity(st) -> float:
    """``b_max/t(b_max)`` of the station (:attr:`Station.capacity_tokens_per_s`, what its load is read against)."""
    return st.capacity_tokens_per_s

__all__ = ["capacity_caveats", "k_max_floor"]

#: the most batch sizes :func:`k_max_floor` evaluates ``b/t(b)`` at (``b_max - k + 1`` of them)
_FLOOR_MAX_SIZES = 1 << 20


def k_max_floor(station) -> tuple | None:
    """``(k, tokens_per_s)``: the least a station whose only capacity cause is a binding ``k_max = k`` serves
    under a backlog, or ``None`` where no such floor is read (no binding ``k_max``, a scheduler that is not
    work-conserving, a context-aware batch time or a KV cache, which bound its batches otherwise).

    The rule: a work-conserving scheduler (every batch takes ``min(b_max, demand)`` tokens, each request it holds
    adding a prefill token or a decode token, :mod:`fluidq.policies.conservation`) holding ``k`` requests under a
    backlog batches at least ``min(k, b_max)`` tokens, so it serves at least ``min_{min(k, b_max) <= b <= b_max}
    b/t(b)`` tokens per second whatever the request mix."""
    import numpy as np

    from ..engine.budgets import effective_engine
    from ..policies.conservation import work_conserving_cached

    eng, pol = station.engine, station.policy
    k = binding_k_max(eng, pol)
    if k is None or eng.kv_capacity_tokens is not None or getattr(eng.batch_time, "kind", "") == "context_aware":
        return None
    if not work_conserving_cached(pol).work_conserving:
        return None
    eff = effective_engine(eng, pol)
    lo = min(k, eff.b_max)
    if eff.b_max - lo + 1 > _FLOOR_MAX_SIZES:
        return None
    b = np.arange(lo, eff.b_max + 1, dtype=float)
    t = np.asarray(eff.batch_time(b), dtype=float)
    if t.shape != b.shape or not np.all(np.isfinite(t) & (t > 0)):
        return None
    return k, float(np.min(b / t))


def capacity_caveats(network) -> list:
    """Why the load and fluid arguments may not describe ``network``, one line per cause.

    Both take a station's capacity to be ``b_max / t(b_max)`` tokens per second whatever requests it
    serves.  That is an upper bound, and not the capacity, when the engine or its scheduler caps the
    batch size (``k_max``: the capacity then depends on the request mix), the scheduler's budget is below
    the engine's, the batch time grows with the KV cache (context-aware), or a KV-cache capacity limits
    the residents.  A ``k_max`` that can never bind (at or above the most requests a batch holds,
    :func:`fluidq.stability.binding_k_max`) is no cause, and neither is one in a DAG whose station is loaded
    below 1 against :func:`k_max_floor` (the least its work-conserving scheduler serves under a backlog with
    ``k_max`` requests, whatever the mix): feedforward induction drains it at that rate as at ``b_max/t(b_max)``.
    An overload (a load above 1 at the upper bound) still proves instability.
    """
    out = []
    loads = network.loads() if network.is_dag else {}
    for st in network.stations:
        eng, pol = st.engine, st.policy
        why = []
        k = binding_k_max(eng, pol)  # a k_max at or above the most requests a batch can hold never binds
        if k is not None and st.name in loads:
            fl = k_max_floor(st)  # far from binding at this load: the station drains at its floor rate
            if fl is not None and loads[st.name] * station_capacity(st) < fl[1]:
                k = None
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
