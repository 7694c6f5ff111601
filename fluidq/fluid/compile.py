"""The flow model of a network: buffers, service points and the linear flow structure between them.

:func:`compile_network` turns a :class:`~fluidq.network.Network` (a description: stations, routes,
routers) into a :class:`FlowModel` -- one buffer per hop and service point, with its visit rate, mean
tokens and sources; a JSQ router whose engines serve nothing else becomes one pooled point with the
summed capacity.  The traffic equations (:mod:`fluidq.capacity.network`), the fluid paths and
certificates (:mod:`fluidq.fluid.path`, :mod:`fluidq.stability.fluid`) and the network simulator
read it.  ``Network.flow`` is this compile: this module registers it with :mod:`fluidq.network.model`
when ``fluidq`` is imported, so that the description imports no analysis.

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347 (v3: networks of engines).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.budgets import binding_k_max
from ..errors import ParameterError
from ..network import model as _model
from ..network.model import Choice, Fork, Hop, Join, Network, jsq_shared_engines

__all__ = ["Buffer", "FlowModel", "MAX_TOKEN_RATE", "compile_network"]


@dataclass(frozen=True)
class Buffer:
    """One fluid class: a hop of a request class at one service point.

    ``point`` is a station name, or a JSQ router name (a pooled point).  ``w`` is the mean tokens
    of the hop (work per request: ``m_p + m_d``, or ``m_p + m_d - 1`` on an engine whose prefill emits the
    first output token, :meth:`fluidq.Engine.request_work`; at a pooled point whose engines disagree on that,
    :func:`pooled_work`), ``rate`` its visit rate in requests per second.
    """

    label: str
    hop: str
    cls: str
    point: str
    w: float
    rate: float
    engine: str | None  # the station when routed at random to one engine; None for a pooled JSQ point
    in_fork: bool = False  # between a fork and its join (fluid there has siblings waiting elsewhere)


@dataclass(frozen=True)
class FlowModel:
    """Buffers, service points and the linear flow structure between them.

    Each inflow is a list of sources ``(kind, index, coeff)`` with kind ``"ext"`` (class arrival
    rate), ``"buf"`` (completions of a buffer, ``u/w`` requests/s) or ``"join"`` (join output).
    """

    buffers: tuple
    points: tuple            # names
    capacity: np.ndarray     # tokens/s per point
    point_of: np.ndarray     # point index per buffer
    ext_rate: np.ndarray     # requests/s per class
    classes: tuple
    inflow: tuple            # per buffer: tuple of sources
    joins: tuple             # per join: (label, tuple of inputs, each a tuple of sources)
    exits: tuple             # per class: tuple of sources
    priority_rank: np.ndarray  # rank within its point (0 = highest); large for unlisted
    prioritized: np.ndarray    # bool per point: has a strict priority order
    pooled: tuple            # names of JSQ points (pooled)
    notes: tuple             # why the fluid model does not describe the network (a JSQ router sharing an
    #                          engine): fluid_stability then never says stable or diverging
    k_max_notes: tuple = ()  # stations whose k_max binds, or whose batch time reads the batch composition: they
    #                          serve less than `capacity` under a backlog, so fluid_stability proves nothing below
    #                          overload there (idealised=True ignores them)

    @property
    def n(self) -> int:
        return len(self.buffers)

    def loads(self) -> np.ndarray:
        work = np.zeros(len(self.points))
        for i, b in enumerate(self.buffers):
            work[self.point_of[i]] += b.rate * b.w
        return work / self.capacity



def pooled_work(stations, mp: float, md: float) -> float:
    """Tokens per request of a hop at a pooled JSQ point over ``stations`` (the pooled point's capacity is the sum
    of theirs, ``C = sum_i c_i`` tokens/s).

    When the engines agree on ``prefill_emits_token`` it is their common ``Engine.request_work``.  When they do
    not, a request served by engine ``i`` is ``w_i`` tokens (``m_p + m_d - 1`` where the prefill emits the first
    output token, ``m_p + m_d`` elsewhere); under a backlog every engine is busy and serves ``c_i / w_i``
    requests/s, so the pool serves ``sum_i c_i / w_i`` and the work that makes the point's load ``lambda w / C``
    equal ``lambda / sum_i c_i / w_i`` is ``C / sum_i (c_i / w_i)``, whatever the stations' order (before, the
    point took its first engine's rule: a load of 0.1645 or 0.1795 by the order, P=10, D=2)."""
    works = [float(sum(st.engine.request_work(mp, md))) for st in stations]
    if all(w == works[0] for w in works):
        return works[0]
    caps = [float(st.capacity_tokens_per_s) for st in stations]
    if not all(c > 0 and w > 0 for c, w in zip(caps, works)):
        return max(works)  # (an engine that serves nothing, or no work: no rate to weight by; the larger work)
    return sum(caps) / sum(c / w for c, w in zip(caps, works))


#: most tokens per second one hop may carry (rate x mean tokens): far beyond any engine, and small
#: enough that loads, fluid levels and their products stay finite floats
MAX_TOKEN_RATE = 1e24


def compile_network(net: Network) -> FlowModel:
    """The flow model of ``net`` (what :attr:`fluidq.network.Network.flow` returns)."""
    routers = {r.name: r for r in net.routers}
    stations = {s.name: s for s in net.stations}
    # JSQ routers become pooled points when their engines serve nothing else
    sharing = jsq_shared_engines(net)
    pooled, notes, k_max_notes = [], [], []
    for r in net.routers:
        if r.policy == "jsq":
            shared = sharing[r.name]
            if shared:
                notes.append(f"JSQ router {r.name!r} shares engine {shared[0]!r} with other traffic: "
                             "no pooled fluid model")
            else:
                pooled.append(r.name)
    for s in net.stations:
        # the fluid capacity below is b_max / t(b_max); a batch-size limit that binds caps what the station
        # serves below that (its capacity is the k_max stability region along its request mix), so a fluid
        # path drained at b_max / t(b_max) proves nothing there (fluidq.stability.fluid uses the k_max
        # capacity for the load where it can, and past this note says neither stable nor diverging)
        k = binding_k_max(s.engine, s.policy)
        if k is not None:
            who = "engine" if k == s.engine.k_max else "scheduler"
            k_max_notes.append(f"station {s.name!r} has {who} k_max={k}, which binds: its capacity is the k_max stability "
                         f"region along its request mix, below the fluid model's b_max/t(b_max) = "
                         f"{s.capacity_tokens_per_s:.6g} tokens/s, so the fluid model cannot prove it stable")
        if getattr(s.engine.batch_time, "kind", None) == "composition":
            # t(b) is one prefill chunk with no decode cost (fluidq.dtmc.flow_basis): b_max/t(b_max) is not what
            # the station serves, nor a bound on it (fluidq.stability.fluid proves nothing from its load)
            k_max_notes.append(f"station {s.name!r} has a batch time that reads the batch composition: its t(b) is one "
                               "prefill chunk with no decode cost, so b_max/t(b_max) = "
                               f"{s.capacity_tokens_per_s:.6g} tokens/s is not its capacity and the fluid model proves "
                               "nothing there (its single-engine verdict reads vLLM's flow balance)")
    points = [s.name for s in net.stations] + pooled
    pidx = {p: i for i, p in enumerate(points)}
    cap = [s.capacity_tokens_per_s for s in net.stations] + [
        sum(stations[e].capacity_tokens_per_s for e in routers[p].engines) for p in pooled]
    buffers, inflow, joins, exits = [], [], [], []
    point_of = []
    cls_rate = [c.rate_per_s for c in net.classes]

    def rate_of(sources):
        tot = 0.0
        for kind, i, co in sources:
            tot += co * (cls_rate[i] if kind == "ext" else buffers[i].rate if kind == "buf" else joins[i][2])
        return tot

    depth = [0]

    def hop_work(hop, point):
        # the hop's token work on the engine serving it (Engine.request_work: one decode iteration fewer
        # when the prefill emits the first output token)
        mp, md = hop.prompt_tokens.mean, hop.output_tokens.mean
        if point in stations:
            return sum(stations[point].engine.request_work(mp, md))
        return pooled_work([stations[e] for e in routers[point].engines], mp, md)

    def add_buffer(hop, cname, point, engine, sources, label):
        r = rate_of(sources)
        buffers.append(Buffer(label=label, hop=hop.name, cls=cname, point=point, w=hop_work(hop, point), rate=r,
                              engine=engine, in_fork=depth[0] > 0))
        inflow.append(tuple(sources))
        point_of.append(pidx[point])
        return ("buf", len(buffers) - 1, 1.0)

    def walk(steps, incoming, cname):
        forks = {}
        for s in steps:
            if isinstance(s, Hop):
                if s.engine in stations:
                    incoming = [add_buffer(s, cname, s.engine, s.engine, incoming, s.name)]
                elif s.engine in pooled:
                    incoming = [add_buffer(s, cname, s.engine, None, incoming, s.name)]
                else:
                    r = routers[s.engine]
                    probs = r.probabilities if r.policy == "random" else [1.0 / len(r.engines)] * len(r.engines)
                    out = []
                    for e, q in zip(r.engines, probs):
                        if q <= 0:
                            continue
                        src = [(k, i, co * q) for k, i, co in incoming]
                        out.append(add_buffer(s, cname, e, e, src, f"{s.name}@{e}"))
                    incoming = out
            elif isinstance(s, Choice):
                new = []
                for p, st in s.options:
                    if p <= 0:
                        continue
                    new.extend(walk(st, [(k, i, co * p) for k, i, co in incoming], cname))
                incoming = new
            elif isinstance(s, Fork):
                depth[0] += 1
                forks[s.name] = [walk(b, list(incoming), cname) for b in s.branches]
            elif isinstance(s, Join):
                depth[0] -= 1
                inputs = [tuple(incoming)] + [tuple(b) for b in forks.pop(s.name)]
                r = min(rate_of(inp) for inp in inputs)
                joins.append((s.name, tuple(inputs), r))
                incoming = [("join", len(joins) - 1, 1.0)]
        return incoming

    for ci, c in enumerate(net.classes):
        exits.append(tuple(walk(c.route, [("ext", ci, 1.0)], c.name)))
    for b in buffers:
        tokens = b.rate * b.w
        if not tokens <= MAX_TOKEN_RATE:
            c = next(c for c in net.classes if c.name == b.cls)
            raise ParameterError(f"class {b.cls!r} rate_per_s", c.rate_per_s,
                                 f"a rate whose hops carry at most {MAX_TOKEN_RATE:.0e} tokens/s: hop {b.label!r} "
                                 f"({b.w:.4g} tokens per request at {b.rate:.4g} req/s) would carry "
                                 f"{tokens:.4g} tokens/s, beyond what the loads and fluid model can represent")
    # priority ranks
    rank = np.full(len(buffers), 10 ** 6, dtype=np.int64)
    prioritized = np.zeros(len(points), dtype=bool)
    for s in net.stations:
        if s.priority:
            prioritized[pidx[s.name]] = True
            order = {h: k for k, h in enumerate(s.priority)}
            for i, b in enumerate(buffers):
                if b.point == s.name and b.hop in order:
                    rank[i] = order[b.hop]
    for p in pooled:
        eng = routers[p].engines
        prs = [stations[e].priority for e in eng]
        if any(prs):
            if any(pp != prs[0] for pp in prs):
                notes.append(f"engines of JSQ router {p!r} have different priorities; the pooled fluid model uses "
                             f"those of {eng[0]!r}")
            prioritized[pidx[p]] = bool(prs[0])
            order = {h: k for k, h in enumerate(prs[0])}
            for i, b in enumerate(buffers):
                if b.point == p and b.hop in order:
                    rank[i] = order[b.hop]
    return FlowModel(buffers=tuple(buffers), points=tuple(points), capacity=np.asarray(cap, dtype=float),
                     point_of=np.asarray(point_of, dtype=np.int64), ext_rate=np.asarray(cls_rate, dtype=float),
                     classes=tuple(c.name for c in net.classes), inflow=tuple(inflow), joins=tuple(joins),
                     exits=tuple(exits), priority_rank=rank, prioritized=prioritized, pooled=tuple(pooled),
                     notes=tuple(notes), k_max_notes=tuple(k_max_notes))


# Network.flow (and the old names fluidq.network.model.Buffer / FlowModel / MAX_TOKEN_RATE) come from
# here; fluidq's package imports this module right after fluidq.network.model (its `_IMPORTED_WITH`), before any network is built
_model.register_analysis(flow=compile_network, Buffer=Buffer, FlowModel=FlowModel, MAX_TOKEN_RATE=MAX_TOKEN_RATE)
