"""Network capacity: station capacities, the traffic equations' loads, the bottleneck and the best split.

A :class:`~fluidq.network.Network` is a description (stations, routes, routers); its methods
``loads``, ``visit_rates``, ``point_loads``, ``bottleneck``, ``best_split_loads``, ``at_load`` and
``Station.capacity_tokens_per_s`` are the functions here, which this module registers with
:mod:`fluidq.network.model` as soon as that module is imported (the package ``fluidq`` imports this one
right after it; so the description imports no analysis).
They read the compiled flow model :attr:`Network.flow <fluidq.network.Network.flow>`
(:func:`fluidq.fluid.compile.compile_network`).

:func:`capacity_caveats` (where ``b_max / t(b_max)`` is only an upper bound on a station's capacity; read
from the description alone) lives in :mod:`fluidq.network.caveats`; this is its old path too.

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347 (Theorem 2; v3: networks of engines).
"""
from __future__ import annotations

import numpy as np

from .._validate import real
from ..errors import TopologyError
from ..network import model as _model
from ..network.caveats import capacity_caveats  # noqa: F401

__all__ = ["capacity_caveats", "mix_capacity", "mix_loads", "station_capacity_tokens_per_s", "visit_rates", "station_loads", "point_loads",
           "bottleneck", "best_split_loads", "at_load"]


def station_capacity_tokens_per_s(station) -> float:
    """``b_max / t(b_max)``: what a work-conserving station serves under a backlog (full batches;
    Theorem 2 of arXiv:2504.07347).  ``sup_b b/t(b)`` is larger when ``b/t(b)`` peaks at a smaller batch,
    but a work-conserving scheduler does not stop there.  ``b_max`` is the budget the station's scheduler
    forms batches under: its own ``b_max`` when that is below the engine's
    (:func:`fluidq.engine.budgets.effective_engine`), as for the single-engine verdict."""
    # fluidq.capacity.full_batch_rate(engine) without a workload (tests/network hold the two equal)
    from ..engine.budgets import effective_engine

    eng = effective_engine(station.engine, station.policy)
    b = eng.b_max
    return float(b / float(eng.batch_time(b)))


def _station_mix(network) -> dict:
    """``{station: [(visit rate, Hop), ...]}``: the hops each station serves directly (routed to it, or at random
    by a router), with their visit rates; hops behind a pooled JSQ router are not any one station's."""
    hops = {h.name: h for h in network.hops}
    out: dict = {}
    for b in network.flow.buffers:
        if b.engine is not None and b.rate > 0:
            out.setdefault(b.engine, []).append((b.rate, hops[b.hop]))
    return out


def mix_capacity(engine, mix) -> dict:
    """One engine's capacity at a mix of hops, on the basis ``fluidq capacity`` takes for one engine and one
    workload (:func:`fluidq.capacity.full_batch_rate`): the full batch a work-conserving scheduler forms under a
    backlog, the residents that decode together at saturation (the fewest the token budget, ``k_max`` and the KV
    cache allow), and a context-aware batch time read at their mean context -- with the mix's own moments in place
    of one workload's.

    ``mix`` is ``[(visit rate, Hop), ...]``.  A hop's lengths are independent, but the mix pairs them: a decoding
    request's mean context is ``(E[o p] + E[o^2]/2) / E[o]`` over the mix (``m_p + E[o^2]/(2 m_d)`` of
    :func:`fluidq.capacity.mean_resident_context` for one workload, which a mix of (2048, 256) and (3000, 300)
    hops would understate as 2,663.9 instead of 2,701.5 tokens).  A ``k_max`` that binds makes the number still
    an upper bound (the stability region's mix capacity is not taken here).

    Returns ``{"tokens_per_s", "batch_tokens", "residents", "context_tokens", "work_tokens_per_s_per_req_s",
    "reason"}``: the last is the station's token work per request/s of the mix (``sum_h r_h w_h / sum_h r_h``).
    """
    from ..batchtime import ContextAware
    from . import _batch_limit_at, min_footprint_tokens

    rates = np.array([r for r, _ in mix], dtype=float)
    total = float(rates.sum())
    q = rates / total
    mp = np.array([h.prompt_tokens.mean for _, h in mix])
    md = np.array([h.output_tokens.mean for _, h in mix])
    md2 = np.array([h.output_tokens.mean_square for _, h in mix])
    work = np.array([engine.request_work(a, b) for a, b in zip(mp, md)])  # (prefill, decode) work per request
    wp, wd = float(q @ work[:, 0]), float(q @ work[:, 1])
    m_d = float(q @ md)
    context = float(q @ (mp * md + md2 / 2.0)) / m_d if m_d > 0 else 0.0
    smallest = None
    if engine.kv_capacity_tokens is not None:  # the smallest footprint among the hops whose lengths have one
        known = [s for s in (min_footprint_tokens(h) for _, h in mix) if s is not None]
        smallest = min(known) if known else None
    lim = _batch_limit_at(engine, wp, wd, context, smallest)
    if lim.b_lim < 1:
        return {"tokens_per_s": 0.0, "batch_tokens": 0, "residents": 0.0, "context_tokens": context,
                "work_tokens_per_s_per_req_s": wp + wd,
                "reason": f"no hop fits the KV cache: the smallest holds {smallest} tokens at its end, the "
                          f"cache {engine.kv_capacity_tokens}"}
    n, b_lim = lim.residents, lim.b_lim
    notes = [f"the mix's mean decode context {context:,.1f} tokens per decoding request"]
    if lim.kv_binds:
        notes.append(f"the KV cache ({engine.kv_capacity_tokens:,} tokens) binds: at most {n:.1f} requests decode "
                     f"together, so batches hold at most {b_lim} tokens")
    if isinstance(engine.batch_time, ContextAware):
        notes.append(f"the context-aware batch time at {n:.1f} decoding requests x {context:,.1f} = "
                     f"{n * context:,.0f} KV tokens per batch")
    return {"tokens_per_s": float(b_lim / float(lim.batch_time(b_lim))), "batch_tokens": int(b_lim),
            "residents": float(n), "context_tokens": context, "work_tokens_per_s_per_req_s": wp + wd,
            "binding": lim.binding, "reason": "; ".join(notes)}


def mix_loads(network) -> dict:
    """The load of each station whose ``b_max / t(b_max)`` is only an upper bound because its batch time reads
    the KV cache (context-aware) or a KV cache limits its residents, on the basis ``fluidq capacity`` takes for
    one engine (:func:`mix_capacity` at the mix of hops the station serves): ``{station: {"load",
    "capacity_tokens_per_s", "upper_bound_tokens_per_s", "upper_bound_load", ...}}``.  Unlike the upper
    bound's load, this one is not a bound either way (a fluid estimate at the mean context, as ``fluidq
    capacity``'s), but it is the number that says where the station saturates: the classes' rates divided by the
    largest such load put it at 1.  Stations behind a pooled JSQ router are left out (no one station's mix).
    Where the KV cache binds this mean-footprint figure overstates what the engine serves under the cache's rules;
    :func:`fluidq.dtmc.station_basis.station_load_bases` gives each station's load on the load basis of ``fluidq
    check`` (what ``fluidq network`` prints first)."""
    from ..batchtime import ContextAware
    from ..engine.budgets import effective_engine

    mix = _station_mix(network)
    base = station_loads(network)
    out = {}
    for st in network.stations:
        eng = effective_engine(st.engine, st.policy)
        if st.name not in mix or not (isinstance(eng.batch_time, ContextAware) or eng.kv_capacity_tokens is not None):
            continue
        m = mix_capacity(eng, mix[st.name])
        offered = sum(r for r, _ in mix[st.name]) * m["work_tokens_per_s_per_req_s"]
        cap = m["tokens_per_s"]
        out[st.name] = {"load": offered / cap if cap > 0 else float("inf"), "capacity_tokens_per_s": cap,
                        "offered_tokens_per_s": offered, "upper_bound_tokens_per_s": st.capacity_tokens_per_s,
                        "upper_bound_load": base.get(st.name, 0.0), **{k: v for k, v in m.items()
                                                                      if k != "tokens_per_s"}}
    return out


def visit_rates(network) -> dict:
    """Requests per second through each hop label (summed over the engines of a router)."""
    out: dict = {}
    for b in network.flow.buffers:
        out[b.hop] = out.get(b.hop, 0.0) + b.rate
    return out


def station_loads(network) -> dict:
    """Offered load per station: ``sum_k lambda_k (m_p^{k,j} + m_d^{k,j}) / capacity_j``.

    Engines behind a JSQ router share the router's pooled load (JSQ balances them); the others
    have their own load from the traffic equations.
    """
    fm = network.flow
    pl = dict(zip(fm.points, fm.loads()))
    out = {}
    for s in network.stations:
        if s.name in pl:
            out[s.name] = float(pl[s.name])
        else:
            out[s.name] = 0.0
    for r in network.routers:
        if r.name in pl:
            for e in r.engines:
                out[e] = float(pl[r.name])
    return out


def point_loads(network) -> dict:
    """Load per service point (stations, and pooled JSQ routers as one point)."""
    fm = network.flow
    return {p: float(x) for p, x in zip(fm.points, fm.loads())}


def bottleneck(network) -> tuple:
    """``(name, load)`` of the most loaded service point."""
    pl = point_loads(network)
    name = max(pl, key=pl.get)
    return name, pl[name]


def best_split_loads(network) -> dict:
    """Station loads under the split of the shared JSQ routers' traffic that minimises the largest load.

    Solves the linear program: minimise ``z`` over the shares ``x[h, e] >= 0`` of each hop ``h`` routed
    by a shared JSQ router (``sum_e x[h, e]`` = the hop's visit rate) such that every station's load --
    its fixed traffic plus ``sum_h x[h, e] w_h / capacity_e`` -- is at most ``z``.  If even this ``z`` is
    above 1 some engine's work grows under every routing and discipline; below 1 a router *can* keep
    every engine below capacity (whether JSQ does is not decided here).  Without shared JSQ routers
    this is :func:`station_loads`.

    Returns
    -------
    dict
        ``{"loads": {station: load}, "max_load": z, "shares": {hop: {engine: visit rate}}}``.
    """
    from scipy.optimize import linprog

    shared = set(network.shared_jsq_routers())
    loads = station_loads(network)
    if not shared:
        return {"loads": loads, "max_load": max(loads.values(), default=0.0), "shares": {}}
    fm = network.flow
    caps = {st.name: st.capacity_tokens_per_s for st in network.stations}
    hop_engine = {h.name: h.engine for h in network.hops}
    fixed = {name: 0.0 for name in caps}
    split: dict = {}  # hop -> [visit rate, w, engines]
    for b in fm.buffers:
        if hop_engine.get(b.hop) in shared:
            ent = split.setdefault(b.hop, [0.0, b.w, network.engines_of(hop_engine[b.hop])])
            ent[0] += b.rate
        elif b.point in fixed:
            fixed[b.point] += b.rate * b.w / caps[b.point]
    names = list(caps)
    var = [(h, e) for h, (_, _, engines) in split.items() for e in engines]
    n = len(var) + 1  # shares, then z
    a_ub, b_ub = [], []
    for st in names:  # fixed_e + sum_h x[h,e] w_h / cap_e - z <= 0
        row = np.zeros(n)
        for k, (h, e) in enumerate(var):
            if e == st:
                row[k] = split[h][1] / caps[st]
        row[-1] = -1.0
        a_ub.append(row)
        b_ub.append(-fixed[st])
    a_eq, b_eq = [], []
    for h, (rate, _, _) in split.items():
        row = np.zeros(n)
        for k, (hh, _) in enumerate(var):
            if hh == h:
                row[k] = 1.0
        a_eq.append(row)
        b_eq.append(rate)
    c = np.zeros(n)
    c[-1] = 1.0
    res = linprog(c, A_ub=np.array(a_ub), b_ub=np.array(b_ub), A_eq=np.array(a_eq), b_eq=np.array(b_eq),
                  bounds=[(0, None)] * n, method="highs")
    if not res.success:  # pragma: no cover - the program is always feasible and bounded
        raise TopologyError(f"best split of the shared JSQ routers: the linear program failed ({res.message})")
    x = res.x
    out = dict(fixed)
    shares: dict = {}
    for k, (h, e) in enumerate(var):
        out[e] += x[k] * split[h][1] / caps[e]
        shares.setdefault(h, {})[e] = float(x[k])
    for st in names:  # stations behind pooled routers keep the pooled load
        if loads.get(st, 0.0) and st not in {b.point for b in fm.buffers}:
            out[st] = loads[st]
    return {"loads": {k: float(v) for k, v in out.items()}, "max_load": float(max(out.values())),
            "shares": shares}


def at_load(network, load: float):
    """``network`` with its arrival rates scaled so that the bottleneck load equals ``load``."""
    load = real("load", load, positive=True)
    name, now = bottleneck(network)
    if not now > 0:
        raise TopologyError(f"at_load: no engine carries any load (bottleneck {name!r} at {now}), so no rate "
                            "scaling reaches a load")
    return network.scaled(load / now)


# the Network / Station methods of the same names are these functions (the description imports no analysis);
# the package fluidq imports this module (and fluidq.fluid.compile, behind Network.flow) right after
# fluidq.network.model, before any network exists
_model.register_analysis(station_capacity_tokens_per_s=station_capacity_tokens_per_s, visit_rates=visit_rates,
                         loads=station_loads, point_loads=point_loads, bottleneck=bottleneck,
                         best_split_loads=best_split_loads, at_load=at_load)
