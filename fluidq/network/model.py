"""Networks of LLM engines: the description (stations, routes, routers; no analysis).

A :class:`Network` is a set of :class:`Station` (an :class:`~fluidq.Engine` with its scheduler and a
class-priority order), optional :class:`Router` objects over parallel stations, and
:class:`RequestClass` objects whose *route* is a sequence of steps:

* :class:`Hop` -- one LLM call ``(engine, prompt tokens, output tokens)`` on a station or a router;
* :class:`Choice` -- probabilistic routing: with probability ``p`` follow a sub-route;
* :class:`Fork` / :class:`Join` -- a fork starts branches that run in parallel with the rest of the
  route; the matching join waits for every branch (and for the main line) before going on.

The topology is a :mod:`networkx` digraph over stations (an edge when some request goes from a hop on
one station to a hop on another): ``is_dag``, ``cycles`` and which JSQ routers share engines are read
here.  This module is a description and computes no traffic equation: the methods ``flow``,
``visit_rates``, ``loads``, ``point_loads``, ``bottleneck``, ``best_split_loads``, ``at_load`` and
``Station.capacity_tokens_per_s`` (and the loads and capacities that :meth:`Network.describe` and
:meth:`Network.to_dict` report) are conveniences that call the analyses :mod:`fluidq.fluid.compile`
(the flow model) and :mod:`fluidq.capacity.network` (capacities, loads, the bottleneck, the best split),
which register themselves here (:func:`register_analysis`) when ``fluidq`` is imported.

A classical multiclass queueing network (Rybko--Stolyar, Lu--Kumar) is the special case of stations
that serve one unit of work per unit time: :meth:`Network.classical` builds it with
``Affine(c=0, a=1/S)`` engines (``S`` tokens per unit of work) and prompt-only hops.

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347 (v3: networks of engines, Rybko--Stolyar example).
Rybko, Stolyar, "Ergodicity of stochastic processes describing the operation of open queueing
networks", Problems Inform. Transmission 28 (1992).  Lu, Kumar, "Distributed scheduling based on due
dates and buffer priorities", IEEE TAC 36 (1991).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from .._validate import integer, real
from ..engine import Engine
from ..errors import ParameterError, TopologyError
from ..workload import Arrival, Poisson
from ..workload.lengths import Length, as_length

__all__ = [
    "Buffer",
    "Choice",
    "FlowModel",
    "Fork",
    "Hop",
    "Join",
    "Network",
    "NoTokens",
    "RequestClass",
    "Router",
    "Station",
    "jsq_shared_engines",
    "register_analysis",
    "route_hops",
]

_PROB_TOL = 1e-9

#: The analyses behind the traffic-equation methods (``Network.flow``, ``loads``, ``visit_rates``,
#: ``point_loads``, ``bottleneck``, ``best_split_loads``, ``at_load``, ``Station.capacity_tokens_per_s``) and the old
#: names ``Buffer``, ``FlowModel``, ``MAX_TOKEN_RATE`` of this module: :mod:`fluidq.fluid.compile` and
#: :mod:`fluidq.capacity.network` register them when ``fluidq`` is imported, so that this description
#: imports no analysis (the pattern of :func:`fluidq.policies.region_aware.register_shape_finder`).
_ANALYSES: dict = {}
_REGISTERED_NAMES = ("Buffer", "FlowModel", "MAX_TOKEN_RATE")


def register_analysis(**functions) -> None:
    """Set the functions behind the :class:`Network` methods of the same names (called by
    :mod:`fluidq.fluid.compile` and :mod:`fluidq.capacity.network`)."""
    _ANALYSES.update(functions)


def _analysis(name):
    try:
        return _ANALYSES[name]
    except KeyError:  # pragma: no cover - `import fluidq` registers every one before a network exists
        raise RuntimeError(f"fluidq.network.model: no analysis {name!r} registered; import fluidq first "
                           "(fluidq.capacity and fluidq.fluid register them)") from None


def __getattr__(name):
    if name in _REGISTERED_NAMES and name in _ANALYSES:
        return _ANALYSES[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, kw_only=True)
class NoTokens(Length):
    """Zero tokens (a hop with no output, e.g. a classical job that is all 'prompt' work)."""

    @property
    def mean(self):
        return 0.0

    @property
    def mean_square(self):
        return 0.0

    def sample(self, rng, n):
        return np.zeros(int(n), dtype=np.int64)

    def support(self):
        return np.array([0]), np.array([1.0])


def _tokens(name, value, allow_zero):
    if allow_zero and isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value == 0:
        return NoTokens()
    if allow_zero and isinstance(value, float) and value == 0.0:
        return NoTokens()
    return as_length(name, value)


def _name(param, value):
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(param, value, "a non-empty name")
    return value.strip()


@dataclass(frozen=True, kw_only=True)
class Hop:
    """One LLM call: ``prompt_tokens`` of prefill and ``output_tokens`` of decode on ``engine``.

    Parameters
    ----------
    engine : str
        Name of a :class:`Station` or of a :class:`Router`.
    prompt_tokens : int or Length
        Prompt (``v_p``) tokens, >= 1.
    output_tokens : int or Length
        Output (``v_d``) tokens; ``0`` is allowed (a prompt-only hop, as in classical networks).
    name : str, optional
        Label used in priorities and results; default ``"<class>.<position>"``.
    """

    engine: str
    prompt_tokens: Length | int
    output_tokens: Length | int
    name: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "engine", _name("engine", self.engine))
        object.__setattr__(self, "prompt_tokens", _tokens("prompt_tokens", self.prompt_tokens, False))
        object.__setattr__(self, "output_tokens", _tokens("output_tokens", self.output_tokens, True))
        if self.name is not None:
            object.__setattr__(self, "name", _name("name", self.name))

    @property
    def mean_tokens(self) -> float:
        """``m_p + m_d`` of this hop."""
        return self.prompt_tokens.mean + self.output_tokens.mean


def _steps(param, steps):
    if isinstance(steps, (Hop, Choice, Fork, Join)):
        steps = (steps,)
    try:
        steps = tuple(steps)
    except TypeError:
        raise ParameterError(param, steps, "a sequence of Hop / Choice / Fork / Join steps") from None
    for s in steps:
        if not isinstance(s, (Hop, Choice, Fork, Join)):
            raise ParameterError(param, s, "a Hop, Choice, Fork or Join step")
    return steps


def _has_hop(steps) -> bool:
    """True if some path through ``steps`` visits an engine."""
    for st in steps:
        if isinstance(st, Hop):
            return True
        if isinstance(st, Choice) and any(_has_hop(sub) for _, sub in st.options):
            return True
        if isinstance(st, Fork) and any(_has_hop(b) for b in st.branches):
            return True
    return False


@dataclass(frozen=True, kw_only=True)
class Choice:
    """Probabilistic routing: follow the sub-route ``options[i][1]`` (may be empty) with probability ``options[i][0]``.

    The probabilities must sum to 1 (a :class:`~fluidq.errors.ParameterError` says what they sum to).
    """

    options: tuple

    def __post_init__(self):
        opts = []
        try:
            raw = list(self.options)
        except TypeError:
            raise ParameterError("options", self.options, "a sequence of (probability, steps) pairs") from None
        if not raw:
            raise ParameterError("options", self.options, "at least one (probability, steps) pair")
        for o in raw:
            try:
                p, steps = o
            except (TypeError, ValueError):
                raise ParameterError("options", o, "a (probability, steps) pair") from None
            p = real("probability", p, nonnegative=True)
            opts.append((p, _steps("options", steps)))
        total = sum(p for p, _ in opts)
        if abs(total - 1.0) > 1e-6:
            raise ParameterError("options", [p for p, _ in opts], "probabilities summing to 1",
                                 f"they sum to {total:.6g}")
        object.__setattr__(self, "options", tuple(opts))


@dataclass(frozen=True, kw_only=True)
class Fork:
    """Start ``branches`` (each a sequence of steps) in parallel; :class:`Join` ``name`` waits for them."""

    name: str
    branches: tuple

    def __post_init__(self):
        object.__setattr__(self, "name", _name("name", self.name))
        try:
            br = tuple(_steps("branches", b) for b in self.branches)
        except TypeError:
            raise ParameterError("branches", self.branches, "a sequence of branches (step sequences)") from None
        if not br:
            raise ParameterError("branches", self.branches, "at least one branch")
        for b in br:
            if not b:
                raise ParameterError("branches", self.branches, "non-empty branches")
        object.__setattr__(self, "branches", br)


@dataclass(frozen=True, kw_only=True)
class Join:
    """Wait until every branch of the fork ``name`` (and the main line) has arrived."""

    name: str

    def __post_init__(self):
        object.__setattr__(self, "name", _name("name", self.name))


@dataclass(frozen=True, kw_only=True)
class Station:
    """An engine in the network, with its scheduler and class priorities.

    Parameters
    ----------
    name : str
        Station name used by hops.
    engine : Engine
        Batch time and budgets.
    policy : str or Policy
        Scheduler (``"sarathi"`` by default); see :func:`fluidq.policies.resolve_policy`.
    priority : sequence of str
        Hop labels served first, highest first (strict static priority among the listed hops;
        unlisted hops come last, FCFS among themselves).  Empty: no class priority (FCFS).

    Notes
    -----
    The simulator applies the priority by presenting the residents to ``policy.select(view)`` in
    priority order (FCFS within a level); the built-in schedulers with FCFS order keep that order, so
    the priority decides which prefill is served first while decode-first schedulers (Sarathi) still
    give every decoding request its token first.  A scheduler whose ordering re-sorts the queue (SJF,
    PARS...) overrides the class priority.  In the fluid model a priority station serves its highest
    non-empty priority level first; stations without priorities are certified for *every*
    work-conserving discipline (FCFS, K-FCFS, token sharing), and their fluid paths use weighted token
    sharing.
    """

    name: str
    engine: Engine
    policy: object = "sarathi"
    priority: tuple = ()

    def __post_init__(self):
        from ..policies import resolve_policy

        object.__setattr__(self, "name", _name("name", self.name))
        if not isinstance(self.engine, Engine):
            raise ParameterError("engine", self.engine, "a fluidq.Engine")
        object.__setattr__(self, "policy", resolve_policy(self.policy, "policy"))
        if isinstance(self.priority, str):
            pr = (self.priority,)
        else:
            try:
                pr = tuple(self.priority)
            except TypeError:
                raise ParameterError("priority", self.priority, "a sequence of hop labels (highest first)") from None
        if len(set(pr)) != len(pr):
            raise ParameterError("priority", pr, "distinct hop labels")
        object.__setattr__(self, "priority", tuple(_name("priority", p) for p in pr))

    @cached_property
    def capacity_tokens_per_s(self) -> float:
        """``b_max / t(b_max)``: what a work-conserving station serves under a backlog (full batches;
        Theorem 2 of arXiv:2504.07347); :func:`fluidq.capacity.network.station_capacity_tokens_per_s`."""
        return _analysis("station_capacity_tokens_per_s")(self)


@dataclass(frozen=True, kw_only=True)
class Router:
    """A router over parallel stations.

    Parameters
    ----------
    name : str
        Name used by hops.
    engines : sequence of str
        Station names behind the router.
    policy : {"random", "jsq"}
        Random split with ``probabilities``, or join-the-shortest-queue.
    probabilities : sequence of float, optional
        For ``"random"``: one per engine, summing to 1 (default uniform).
    count : {"requests", "tokens"}
        For ``"jsq"``: queue length in resident requests or in remaining tokens.

    Notes
    -----
    JSQ over work-conserving engines is throughput-optimal: stable iff the offered tokens per second
    are below the sum of the engines' capacities (Li, Dai, Peng, arXiv:2504.07347, Prop. 3 / Remark 4,
    stated for queue length in requests *(reconstructed)*).  The fluid argument only needs that an
    engine with a positive fluid backlog keeps receiving work until the others catch up, which holds
    for either count; the fluid model of a JSQ router whose engines serve nothing else is one pooled
    point with the summed capacity.  Random routing splits the traffic: engine ``j`` sees
    ``q_j * lambda`` and needs ``q_j lambda (m_p + m_d) < b_max^j / t^j(b_max^j)`` (uniform ``q`` suffices
    only for identical engines).
    """

    name: str
    engines: tuple
    policy: str = "jsq"
    probabilities: tuple | None = None
    count: str = "requests"

    def __post_init__(self):
        object.__setattr__(self, "name", _name("name", self.name))
        eng = (self.engines,) if isinstance(self.engines, str) else tuple(self.engines)
        if not eng:
            raise ParameterError("engines", self.engines, "at least one station name")
        if len(set(eng)) != len(eng):
            raise ParameterError("engines", eng, "distinct station names")
        object.__setattr__(self, "engines", tuple(_name("engines", e) for e in eng))
        if self.policy not in ("random", "jsq"):
            raise ParameterError("policy", self.policy, "'random' or 'jsq'")
        if self.count not in ("requests", "tokens"):
            raise ParameterError("count", self.count, "'requests' or 'tokens'")
        if self.policy == "random" and self.count != "requests":  # a random split reads no queue: it would be ignored
            raise ParameterError("count", self.count, "'requests' (the default) for a random router",
                                 "count is how a jsq router measures its queues; a random split reads none")
        if self.probabilities is not None:
            if self.policy != "random":
                raise ParameterError("probabilities", self.probabilities, "None for a JSQ router")
            p = tuple(real("probabilities", x, nonnegative=True) for x in self.probabilities)
            if len(p) != len(eng):
                raise ParameterError("probabilities", p, f"{len(eng)} values, one per engine")
            if abs(sum(p) - 1.0) > 1e-6:
                raise ParameterError("probabilities", p, "probabilities summing to 1", f"they sum to {sum(p):.6g}")
            object.__setattr__(self, "probabilities", p)
        elif self.policy == "random":
            object.__setattr__(self, "probabilities", tuple([1.0 / len(eng)] * len(eng)))


@dataclass(frozen=True, kw_only=True)
class RequestClass:
    """Requests of one type: an arrival process (or a Poisson rate) and a route."""

    name: str
    route: tuple
    arrival: Arrival | None = None
    rate_per_s: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "name", _name("name", self.name))
        if self.arrival is None:
            if self.rate_per_s is None:
                raise ParameterError("rate_per_s", None, "an arrival rate (or arrival=...)")
            object.__setattr__(self, "arrival", Poisson(rate_per_s=self.rate_per_s))
        elif not isinstance(self.arrival, Arrival):
            raise ParameterError("arrival", self.arrival, "a fluidq arrival process")
        elif self.rate_per_s is not None and not abs(real("rate_per_s", self.rate_per_s, positive=True)
                                                     - self.arrival.rate_per_s) <= 1e-12:
            raise ParameterError("rate_per_s", self.rate_per_s, "None or the arrival's rate")
        object.__setattr__(self, "rate_per_s", self.arrival.rate_per_s)
        route = _steps("route", self.route)
        if not route:
            raise ParameterError("route", self.route, "at least one step")
        if not _has_hop(route):
            raise ParameterError(f"class {self.name!r}: route", self.route,
                                 "a route with at least one hop (every choice option here is empty)")
        object.__setattr__(self, "route", route)


def _labels(cls_name, steps, prefix, out):
    """Default hop labels along a route (depth-first)."""
    res = []
    for i, s in enumerate(steps, 1):
        p = f"{prefix}.{i}" if prefix else f"{cls_name}.{i}"
        if isinstance(s, Hop):
            res.append(s if s.name is not None else replace(s, name=p))
            out.append(res[-1])
        elif isinstance(s, Choice):
            res.append(Choice(options=tuple((pr, _labels(cls_name, st, f"{p}.{o}", out))
                                             for o, (pr, st) in enumerate(s.options, 1))))
        elif isinstance(s, Fork):
            res.append(Fork(name=s.name, branches=tuple(_labels(cls_name, b, f"{p}.{o}", out)
                                                        for o, b in enumerate(s.branches, 1))))
        else:
            res.append(s)
    return tuple(res)


def route_hops(steps):
    """The hops of a route (a class's ``route``, a fork's branch or a choice's option), in the order written:
    forks' branches and choices' options walked where they stand.  :attr:`Network.hops` is this over every
    class; a caller that needs each hop's class walks its classes' routes with it."""
    for s in steps:
        if isinstance(s, Hop):
            yield s
        elif isinstance(s, Choice):
            for _, st in s.options:
                yield from route_hops(st)
        elif isinstance(s, Fork):
            for b in s.branches:
                yield from route_hops(b)


def _check_forks(cls_name, steps, where):
    open_ = {}
    for s in steps:
        if isinstance(s, Fork):
            if s.name in open_:
                raise TopologyError(f"class {cls_name!r}: fork {s.name!r} opened twice in {where}")
            open_[s.name] = s
            for b in s.branches:
                _check_forks(cls_name, b, f"a branch of fork {s.name!r}")
        elif isinstance(s, Join):
            if s.name not in open_:
                raise TopologyError(f"class {cls_name!r}: join {s.name!r} with no fork {s.name!r} before it in "
                                    f"{where} (a join must follow its fork in the same step list)")
            if open_[s.name] is None:
                raise TopologyError(f"class {cls_name!r}: fork {s.name!r} joined twice in {where}")
            open_[s.name] = None
        elif isinstance(s, Choice):
            for _, st in s.options:
                _check_forks(cls_name, st, "a choice option")
    left = [k for k, v in open_.items() if v is not None]
    if left:
        raise TopologyError(f"class {cls_name!r}: fork {left[0]!r} is never joined in {where}; "
                            f"add Join(name={left[0]!r}) after it")


def jsq_shared_engines(net: Network) -> dict:
    """``{JSQ router: engines it shares with other traffic}`` (direct hops, or another router), for every
    JSQ router in order.  A JSQ router that shares none is one pooled point of the fluid model."""
    stations = {s.name for s in net.stations}
    direct = {h.engine for h in net.hops if h.engine in stations}
    used_by: dict = {}
    for r in net.routers:
        for e in r.engines:
            used_by.setdefault(e, []).append(r.name)
    return {r.name: [e for e in r.engines if e in direct or len(used_by[e]) > 1]
            for r in net.routers if r.policy == "jsq"}


#: most hops over all routes of a network (each is a fluid buffer and a simulator queue; building and
#: judging a network is linear in them, about a second per 20,000)
MAX_HOPS = 100_000


@dataclass(frozen=True, kw_only=True)
class Network:
    """Engines, routers and request classes.

    Parameters
    ----------
    stations : sequence of Station
        The engines.
    classes : sequence of RequestClass
        Request types with their routes.
    routers : sequence of Router
        Routers over parallel stations (hops may name a router instead of a station).
    claim : {None, "dag"}
        ``"dag"``: the caller states the station graph is acyclic; a cycle raises
        :class:`~fluidq.errors.TopologyError` naming it.
    name : str
        A label.

    Examples
    --------
    >>> from fluidq import Engine, Affine
    >>> from fluidq.network import Network, Station, RequestClass, Hop
    >>> e = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=768)
    >>> net = Network(stations=[Station(name="E1", engine=e), Station(name="E2", engine=e)],
    ...               classes=[RequestClass(name="A", rate_per_s=1.0,
    ...                                     route=[Hop(engine="E1", prompt_tokens=32, output_tokens=32),
    ...                                            Hop(engine="E2", prompt_tokens=512, output_tokens=32)])])
    >>> net.is_dag
    True
    >>> round(net.loads()["E2"], 4)
    0.7083
    """

    stations: tuple
    classes: tuple
    routers: tuple = ()
    claim: str | None = None
    name: str = "network"

    def __post_init__(self):
        object.__setattr__(self, "name", _name("name", self.name))
        st = tuple(self.stations)
        if not st or not all(isinstance(s, Station) for s in st):
            raise ParameterError("stations", self.stations, "a non-empty sequence of Station")
        cl = tuple(self.classes)
        if not cl or not all(isinstance(c, RequestClass) for c in cl):
            raise ParameterError("classes", self.classes, "a non-empty sequence of RequestClass")
        ro = tuple(self.routers)
        if not all(isinstance(r, Router) for r in ro):
            raise ParameterError("routers", self.routers, "a sequence of Router")
        names = [s.name for s in st]
        dup = {n for n, k in Counter(names).items() if k > 1}  # Counter: linear in the size (routes of 10^5 hops)
        if dup:
            raise TopologyError(f"station name {sorted(dup)[0]!r} is used twice")
        rnames = [r.name for r in ro]
        rcount, name_set = Counter(rnames), set(names)
        for r in ro:
            if rcount[r.name] > 1 or r.name in name_set:
                raise TopologyError(f"router name {r.name!r} is used twice (or is also a station)")
            for e in r.engines:
                if e not in name_set:
                    raise TopologyError(f"router {r.name!r} names unknown engine {e!r}; stations: {', '.join(names)}")
        cnames = [c.name for c in cl]
        if len(set(cnames)) != len(cnames):
            raise TopologyError(f"class name {next(n for n, k in Counter(cnames).items() if k > 1)!r} is used twice")
        known = name_set | set(rnames)
        # labels, fork/join structure, engine names
        labelled, hops = [], []
        for c in cl:
            _check_forks(c.name, c.route, "the route")
            mine: list = []
            labelled.append(replace(c, route=_labels(c.name, c.route, "", mine)))
            hops.extend(mine)
            for h in mine:
                if h.engine not in known:
                    raise TopologyError(f"class {c.name!r} hop {h.name!r} names unknown engine {h.engine!r}; "
                                        f"known: {', '.join(names + rnames)}")
        if len(hops) > MAX_HOPS:
            raise ParameterError("classes", f"<{len(cl)} classes, {len(hops):,} hops>",
                                 f"routes of at most {MAX_HOPS:,} hops in all",
                                 f"the network would have {len(hops):,} hops; each is a buffer of the fluid model "
                                 "and a queue of the simulator")
        labels = [h.name for h in hops]
        dup = {x for x, k in Counter(labels).items() if k > 1}
        if dup:
            raise TopologyError(f"hop label {sorted(dup)[0]!r} is used twice; give hops distinct names")
        object.__setattr__(self, "stations", st)
        object.__setattr__(self, "classes", tuple(labelled))
        object.__setattr__(self, "routers", ro)
        hop_points = {h.name: h.engine for h in hops}
        router_engines = {r.name: r.engines for r in ro}
        for s in st:
            for p in s.priority:
                if p not in hop_points:
                    raise TopologyError(f"station {s.name!r}: priority names unknown hop {p!r}; "
                                        f"hops: {', '.join(labels)}")
                at = hop_points[p]
                if at != s.name and s.name not in router_engines.get(at, ()):
                    raise TopologyError(f"station {s.name!r}: priority names hop {p!r}, which runs on {at!r}")
        if self.claim not in (None, "dag"):
            raise ParameterError("claim", self.claim, "None or 'dag'")
        if self.claim == "dag" and not self.is_dag:
            cyc = self.cycles(limit=1)[0]
            raise TopologyError(f"network {self.name!r} is claimed to be a DAG but has the cycle "
                                f"{' -> '.join(cyc + [cyc[0]])}")

    # ---- lookups ----------------------------------------------------------------------------
    def station(self, name: str) -> Station:
        for s in self.stations:
            if s.name == name:
                return s
        raise TopologyError(f"no station {name!r}; stations: {', '.join(s.name for s in self.stations)}")

    @property
    def hops(self) -> tuple:
        """Every class's hops, class by class, each route's in the order written (:func:`route_hops`)."""
        return tuple(h for c in self.classes for h in route_hops(c.route))

    def engines_of(self, point: str) -> tuple:
        """The stations a hop on ``point`` may run on: a router's engines, or the station ``point`` itself."""
        return self._router_engines.get(point, (point,))

    @cached_property
    def _router_engines(self) -> dict:
        return {r.name: r.engines for r in self.routers}

    def _visited(self) -> set:
        """The stations some class visits: those a hop names, directly or through a router over them (one no class
        visits is refused in a case file, :func:`fluidq.network.toml.load_network`, and noted by :meth:`describe`)."""
        return {e for h in self.hops for e in self.engines_of(h.engine)}

    # ---- topology -----------------------------------------------------------------------------
    @cached_property
    def graph(self):
        """Station digraph: an edge ``u -> v`` when a request goes from a hop on ``u`` to one on ``v``.

        Edge attribute ``classes`` lists the request classes that use it.  Routers are expanded to
        their engines.
        """
        import networkx as nx

        g = nx.DiGraph()
        for s in self.stations:
            g.add_node(s.name)

        def link(prev, h, cname):
            for u, _ in prev:
                for a in self.engines_of(u):
                    for b in self.engines_of(h):
                        if g.has_edge(a, b):
                            if cname not in g[a][b]["classes"]:
                                g[a][b]["classes"].append(cname)
                        else:
                            g.add_edge(a, b, classes=[cname])

        # ``prev``: the points whose hops may directly precede the next hop, each as ``(point, forks)``,
        # ``forks`` the open forks since which that line has run no hop.  A line that runs no hop between
        # a fork and its join (the main line in ``O, fork{...}, join, O``, or a choice option left empty)
        # hands nothing on at the join: the hop after the join follows the branches' last hops, not the
        # hop before the fork.  Only where every line (the main line and each branch) may run no hop does
        # the hop before the fork directly precede the one after the join.
        def walk(steps, prev, cname):
            """Returns the ``prev`` set at the end of ``steps``."""
            forks = {}
            for s in steps:
                if isinstance(s, Hop):
                    link(prev, s.engine, cname)
                    prev = {(s.engine, frozenset())}
                elif isinstance(s, Choice):
                    new = set()
                    for _, st in s.options:
                        new |= walk(st, set(prev), cname)
                    prev = new
                elif isinstance(s, Fork):
                    prev = {(u, f | {s.name}) for u, f in prev}
                    forks[s.name] = [walk(b, set(prev), cname) for b in s.branches]
                elif isinstance(s, Join):
                    lines = [prev, *forks.pop(s.name)]
                    idle_everywhere = all(any(s.name in f for _, f in line) for line in lines)
                    prev = {(u, f - {s.name}) for line in lines for u, f in line
                            if s.name not in f or idle_everywhere}
            return prev

        for c in self.classes:
            walk(c.route, set(), c.name)
        return g

    @property
    def is_dag(self) -> bool:
        """No directed cycle (self-loops count as cycles) in the station graph."""
        import networkx as nx

        return nx.is_directed_acyclic_graph(self.graph)

    def cycles(self, limit: int = 20) -> list:
        """Up to ``limit`` simple cycles of the station graph, each a list of station names.

        Canonical: each cycle starts at its smallest station name, and the list is sorted (by length,
        then names), so the same network always gives the same list.
        """
        import networkx as nx

        limit = integer("limit", limit, minimum=0)
        # networkx's order of cycles (and each cycle's starting node) follows set iteration, which
        # changes between runs: report every cycle rotated to start at its smallest station name, in
        # sorted order (shortest first), so identical runs print identical cycles.
        out = []
        for c in nx.simple_cycles(self.graph):
            c = [str(n) for n in c]
            i = c.index(min(c))
            out.append(c[i:] + c[:i])
        out.sort(key=lambda c: (len(c), c))
        return out[:limit]

    def require_dag(self) -> None:
        """Raise :class:`~fluidq.errors.TopologyError` naming a cycle if the station graph has one."""
        if not self.is_dag:
            cyc = self.cycles(limit=1)[0]
            raise TopologyError(f"network {self.name!r} is not a DAG: cycle {' -> '.join(cyc + [cyc[0]])}")

    # ---- traffic equations (the analyses behind these methods: fluidq.fluid.compile, fluidq.capacity.network)
    @cached_property
    def flow(self):
        """The compiled flow model (buffers, points, sources): :func:`fluidq.fluid.compile.compile_network`,
        a :class:`fluidq.fluid.compile.FlowModel`."""
        return _analysis("flow")(self)

    def visit_rates(self) -> dict:
        """Requests per second through each hop label (summed over the engines of a router);
        :func:`fluidq.capacity.network.visit_rates`."""
        return _analysis("visit_rates")(self)

    def loads(self) -> dict:
        """Offered load per station: ``sum_k lambda_k (m_p^{k,j} + m_d^{k,j}) / capacity_j``.

        Engines behind a JSQ router share the router's pooled load (JSQ balances them); the others
        have their own load from the traffic equations (:func:`fluidq.capacity.network.station_loads`).
        """
        return _analysis("loads")(self)

    def shared_jsq_routers(self) -> tuple:
        """JSQ routers that share an engine with other traffic (direct hops or another router).

        Their split follows the queues, so no fixed split describes them: :meth:`loads` and the fluid
        model use an even split for them, :meth:`best_split_loads` the split that minimises the largest load.
        """
        return tuple(r for r, shared in jsq_shared_engines(self).items() if shared)

    def best_split_loads(self) -> dict:
        """Station loads under the split of the shared JSQ routers' traffic that minimises the largest load
        (a linear program: :func:`fluidq.capacity.network.best_split_loads`).

        Returns
        -------
        dict
            ``{"loads": {station: load}, "max_load": z, "shares": {hop: {engine: visit rate}}}``.
        """
        return _analysis("best_split_loads")(self)

    def point_loads(self) -> dict:
        """Load per service point (stations, and pooled JSQ routers as one point)."""
        return _analysis("point_loads")(self)

    @property
    def bottleneck(self) -> tuple:
        """``(name, load)`` of the most loaded service point."""
        return _analysis("bottleneck")(self)

    # ---- variants ---------------------------------------------------------------------------
    def scaled(self, factor: float) -> Network:
        """The same network with every arrival rate multiplied by ``factor``."""
        f = real("factor", factor, positive=True)
        cl = tuple(replace(c, arrival=c.arrival.with_rate(c.arrival.rate_per_s * f), rate_per_s=None)
                   for c in self.classes)
        return replace(self, classes=cl)

    def at_load(self, load: float) -> Network:
        """Arrival rates scaled so that the bottleneck load equals ``load``
        (:func:`fluidq.capacity.network.at_load`)."""
        return _analysis("at_load")(self, load)

    def with_priorities(self, priorities: dict) -> Network:
        """A copy with station priorities replaced (``{station: [hop labels, highest first]}``)."""
        if not isinstance(priorities, dict):
            raise ParameterError("priorities", priorities, "a dict {station: [hop labels, highest first]}")
        st = tuple(replace(s, priority=tuple(priorities.get(s.name, s.priority))) for s in self.stations)
        unknown = set(priorities) - {s.name for s in self.stations}
        if unknown:
            raise TopologyError(f"with_priorities: unknown station {sorted(unknown)[0]!r}")
        return replace(self, stations=st)

    @classmethod
    def classical(cls, *, stations: Sequence[str], routes: dict, rate_per_s: float | dict, mean_times: dict,
                  priority: dict | None = None, tokens_per_unit: int = 20, b_max: int = 1,
                  exponential: bool = True, name: str = "classical") -> Network:
        """A classical multiclass queueing network as LLM stations serving one unit of work per unit time.

        Each station is ``Engine(Affine(c=0, a=1/tokens_per_unit), b_max)`` with Sarathi (chunked,
        so a job is served preemptively in slices of ``b_max`` tokens); a job of mean time ``m`` is a
        prompt-only hop of ``m * tokens_per_unit`` tokens (geometric when ``exponential``), so the fluid
        model is exactly the classical one.

        Parameters
        ----------
        stations : sequence of str
            Station names.
        routes : dict
            ``{class: [(station, hop_label), ...]}``.
        rate_per_s : float or dict
            Arrival rate per class.
        mean_times : dict
            ``{hop_label: mean service time}`` (time units).
        priority : dict, optional
            ``{station: [hop labels, highest first]}``.
        """
        from ..batchtime import Affine
        from ..workload import Geometric

        S = integer("tokens_per_unit", tokens_per_unit, minimum=1)
        eng = Engine(batch_time=Affine(c=0.0, a=1.0 / S), b_max=b_max)
        priority = priority or {}
        st = [Station(name=s, engine=eng.with_(name=s), policy="sarathi", priority=tuple(priority.get(s, ())))
              for s in stations]
        if not isinstance(routes, dict) or not routes:
            raise ParameterError("routes", routes, "a non-empty dict {class: [(station, hop_label), ...]}")
        if not isinstance(mean_times, dict):
            raise ParameterError("mean_times", mean_times, "a dict {hop_label: mean service time}")
        if isinstance(rate_per_s, dict):
            missing = [c for c in routes if c not in rate_per_s]
            if missing:
                raise ParameterError("rate_per_s", rate_per_s, f"a rate for every class (none for {missing[0]!r})")
        cls_list = []
        for cname, route in routes.items():
            hops = []
            for step in route:
                if isinstance(step, str) or not isinstance(step, Sequence) or len(step) != 2:
                    raise ParameterError(f"routes[{cname!r}]", step, "(station, hop_label) pairs")
                station, label = step
                if label not in mean_times:
                    raise ParameterError("mean_times", mean_times, f"a mean time for hop {label!r}")
                m = real(f"mean_times[{label!r}]", mean_times[label], positive=True) * S
                if exponential:
                    if m < 1:
                        raise ParameterError("tokens_per_unit", S, f"so that every job has >= 1 token (hop {label!r})")
                    size = Geometric(mean_tokens=m)
                else:
                    if not float(m).is_integer():
                        raise ParameterError("tokens_per_unit", S, f"making {label!r} a whole number of tokens")
                    size = int(m)
                hops.append(Hop(engine=station, prompt_tokens=size, output_tokens=0, name=label))
            rate = rate_per_s[cname] if isinstance(rate_per_s, dict) else rate_per_s
            cls_list.append(RequestClass(name=cname, rate_per_s=rate, route=hops))
        return cls(stations=st, classes=cls_list, name=name)

    def describe(self) -> str:
        def count(n, word):
            return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('s') else 's'}"

        lines = [f"network {self.name!r}: {count(len(self.stations), 'station')}, "
                 f"{count(len(self.classes), 'class')}, {count(len(self.routers), 'router')}; "
                 f"{'DAG' if self.is_dag else 'cyclic'}"]
        loads = self.loads()
        shared = self.shared_jsq_routers()
        best = self.best_split_loads()["loads"] if shared else {}
        from ..engine.budgets import binding_k_max
        from .caveats import caveats_and_floors

        caveats, floors = caveats_and_floors(self)  # (the k_max floors it found: not searched for again)
        bounded = {c.split("'")[1] for c in caveats if c.startswith("station ")}
        from ..results import MEANINGFUL_DIGITS, fmt_value

        visited = self._visited()
        for s in self.stations:
            pr = f", priority {' > '.join(s.priority)}" if s.priority else ""
            bs = f" (best split {best[s.name]:.3f})" if shared else ""
            ub = " (an upper bound: see the verdict)" if s.name in bounded else ""
            if s.name not in visited:
                ub += " (no class visits it: a typo in a hop's engine name?)"
            if not ub and binding_k_max(s.engine, s.policy) is not None:  # k_max far from binding (caveats.py)
                k, floor, _ = floors[s.name]
                ub = (f" (k_max={k}: at least {fmt_value(floor, digits=MEANINGFUL_DIGITS)} tokens/s under a "
                      f"backlog, load {fmt_value(loads[s.name] * s.capacity_tokens_per_s / floor, digits=MEANINGFUL_DIGITS)}"
                      " against that)")
            cap = fmt_value(s.capacity_tokens_per_s, digits=MEANINGFUL_DIGITS)
            lines.append(f"  {s.name}: {getattr(s.policy, 'name', s.policy)}, capacity "
                         f"{cap} tokens/s{ub}, load {fmt_value(loads[s.name], digits=MEANINGFUL_DIGITS)}{bs}{pr}")
        if shared:
            lines.append(f"  (loads at an even split of JSQ router{'s' if len(shared) > 1 else ''} "
                         f"{', '.join(map(repr, shared))}, which share{'' if len(shared) > 1 else 's'} engines with other traffic; best split: "
                         "the split minimising the largest load)")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        from ..results import plain

        return plain({"name": self.name, "is_dag": self.is_dag, "cycles": self.cycles(),
                      "loads": self.loads(), "bottleneck": list(self.bottleneck),
                      "best_split_loads": self.best_split_loads()["loads"] if self.shared_jsq_routers() else None,
                      "stations": [{"name": s.name, "engine": s.engine.to_dict(),
                                    "policy": getattr(s.policy, "name", str(s.policy)),
                                    "priority": list(s.priority),
                                    "capacity_tokens_per_s": s.capacity_tokens_per_s} for s in self.stations],
                      "routers": [{"name": r.name, "engines": list(r.engines), "policy": r.policy,
                                   "probabilities": r.probabilities, "count": r.count} for r in self.routers],
                      "classes": [{"name": c.name, "rate_per_s": c.rate_per_s} for c in self.classes],
                      "visit_rates": self.visit_rates()})

    def plot(self, ax=None, path=None, **kw):
        from ..plotting.network import plot_network

        return plot_network(self, ax=ax, path=path, **kw)
