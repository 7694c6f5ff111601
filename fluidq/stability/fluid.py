"""Fluid stability verdicts: stable with a certificate, unstable with evidence, or unknown.

:func:`fluid_stability` decides in this order and says which argument decided:

1. **load** -- a service point with load > 1 diverges under every work-conserving discipline, and under
   every discipline when ``b/t(b)`` peaks at ``b_max`` (the fluid backlog grows
   at least at ``(load - 1) * capacity`` tokens/s; for one engine this is Theorem 2(a) of Li, Dai,
   Peng, arXiv:2504.07347).  Load within ``tolerance`` of 1 is *critical*.  A station whose ``k_max``
   binds and which serves one request mix is loaded against its ``k_max`` capacity (the stability
   region along that mix, §6 of the paper), which no scheduler exceeds.
2. the fluid model needs work-conserving engines (checked by search,
   :func:`fluidq.check_work_conserving`) serving ``b_max / t(b_max)`` under backlog; otherwise -- or
   where a station's ``k_max`` binds (it then serves less, by an amount the scheduler sets) -- the
   answer is *unknown*.
3. **feedforward** -- an acyclic station graph (DAG, fork-join included) with every load < 1 is
   stable under any work-conserving discipline: the sources drain in finite time, then their
   successors, by induction (Dai 1995; the paper's v3 claim for K-FCFS engines).  Without joins,
   re-entrant stations (self-loops: consecutive calls to one engine) are allowed, since a
   work-conserving station with load < 1 drains its total remaining work whatever its class order.
4. **priority_layers** -- the buffers can be ordered so that each is fed only by earlier buffers and
   outranked at its engine only by earlier buffers (e.g. Rybko--Stolyar with the entering classes
   first): with every load < 1 they drain one after the other.  This scales to any size.
5. **diverging_path** -- an exact fluid path from a unit initial state returns to a scaled copy of
   itself with growth factor ``g > 1`` per cycle: by homogeneity it grows ``g`` times every cycle
   forever (the Rybko--Stolyar mechanism).  It is one path: where fluid paths are not unique the
   reason says so (every cut structure of each mode the path visits is solved, up to
   ``MAX_UNIQUENESS_BUFFERS`` buffers, which finds Lu--Kumar's draining solution beside the causal one
   the path follows; beyond that the reason says uniqueness was not checked), and hops that share a
   priority level (served FIFO by the stations) are shared by weighted token sharing in the paths
   tried, which the reason says too.
6. **lyapunov** -- a linear function ``V(z) = sum_i c_i z_i`` with ``dV/dt <= -1`` in every mode the
   discipline can be in (every set of non-empty buffers; for buffers that share a station without a
   priority order, every vertex of the allocation set, i.e. every work-conserving allocation), found
   by a linear program: every fluid path drains by time ``V(z(0))``.
7. otherwise *unknown*, with what was tried.  Stability under static priorities is undecidable in
   general (Gamarnik & Katz 2009), so "unknown" is an answer, not a failure.

References
----------
Dai, Ann. Appl. Probab. 5 (1995); Chen, "Fluid approximations and stability of multiclass queueing
networks: work-conserving disciplines", Ann. Appl. Probab. 5 (1995); Li, Dai, Peng, arXiv:2504.07347.
"""
from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from .._validate import integer, real
from ..errors import ParameterError
from ..results import Result, Status, fmt_load, plain
from ..fluid.path import FluidPath, FluidSystem, _network_flow, fluid_path

__all__ = ["FluidStabilityResult", "backlog_slope", "fluid_stability", "lyapunov_certificate"]


@dataclass(frozen=True)
class FluidStabilityResult(Result):
    """Verdict of the fluid model.

    Attributes
    ----------
    status : Status
        stable / unstable / critical / unknown.
    certificate : str or None
        What decided: ``"load"``, ``"feedforward"``, ``"diverging_path"``, ``"priority_layers"``,
        ``"lyapunov"``, or ``None``.
    reason : str
        The argument in words.
    loads : dict
        Load per service point: offered tokens/s over ``b_max / t(b_max)`` (summed over a pooled JSQ
        router's engines), except at a station whose ``k_max`` binds and which serves one request mix,
        where the denominator is its ``k_max`` capacity (the stability region along that mix).
    growth_factor : float or None
        Backlog growth per full cycle of a diverging path.
    peak_growth : float or None
        Ratio of successive backlog peaks on that path (one peak per half cycle in a two-station cycle).
    backlog_slope_tokens_per_s : float or None
        Linear growth of the total backlog when a point is overloaded.
    lyapunov : dict or None
        ``{buffer label: c_i}`` (seconds per token) of the certificate ``V(z) = sum c_i z_i``.
    path : FluidPath or None
        The diverging path, or a representative path.
    paths_checked : int
        Fluid paths computed.
    k_max_capacities : dict
        ``{station: (tokens/s, reason)}``: the ``k_max`` capacity the loads of those stations are taken against
        (stations whose ``k_max`` binds and which serve one request mix); empty when there is none.
    """

    status: Status
    certificate: str | None
    reason: str
    loads: dict
    growth_factor: float | None = None
    peak_growth: float | None = None
    backlog_slope_tokens_per_s: float | None = None
    lyapunov: dict | None = None
    path: FluidPath | None = field(default=None, repr=False)
    paths_checked: int = 0
    method: str = "fluid"
    non_unique: bool = False
    inputs: dict = field(default_factory=dict, repr=False)
    k_max_capacities: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        return plain({"status": self.status, "certificate": self.certificate, "reason": self.reason,
                      "loads": self.loads, "growth_factor": self.growth_factor, "peak_growth": self.peak_growth,
                      "backlog_slope_tokens_per_s": self.backlog_slope_tokens_per_s, "lyapunov": self.lyapunov,
                      "paths_checked": self.paths_checked, "method": self.method, "non_unique": self.non_unique,
                      "path": self.path.to_dict() if self.path is not None else None})

    def plot(self, ax=None, path=None, **kw):
        if self.path is None:
            from ..errors import DataError

            raise DataError("this verdict has no fluid path to plot")
        return self.path.plot(ax=ax, path=path, **kw)


def _names_short(names, limit: int = 8) -> str:
    names = list(names)
    return ", ".join(names[:limit]) + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _point_words(network, point) -> str:
    """'station NAME' or 'JSQ router NAME (its engines pooled)'."""
    if any(r.name == point for r in network.routers):
        return f"JSQ router {point!r} (its engines pooled)"
    return f"station {point!r}"


def _overload_scope(network, point) -> str:
    """Which disciplines an overload at ``point`` covers: all of them when ``b/t(b)`` peaks at ``b_max`` on its
    engines (Theorem 2(a)), else the work-conserving ones (full batches), which the loads are computed for."""
    from ..capacity import engine_capacity, full_batch_rate
    from ..engine.budgets import effective_engine

    names = next((r.engines for r in network.routers if r.name == point), (point,))
    # the batches each scheduler forms: its own budget where that is below the engine's
    engines = [effective_engine(st.engine, st.policy) for st in network.stations if st.name in names]
    sup = sum(engine_capacity(e)[0] for e in engines)
    full = sum(full_batch_rate(e)[0] for e in engines)
    if sup <= full * (1 + 1e-12):
        return "under every discipline (Theorem 2(a))"
    return (f"under every work-conserving discipline (full batches serve {full:.6g} tokens/s; a scheduler that "
            f"sized its batches could serve up to {sup:.6g})")


def _same_length(a, b) -> bool:
    """Whether two length distributions are the same (equal descriptions; arrays compared elementwise)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # an array-valued field: no single truth value
        return False


def _k_max_capacities(network, fm) -> dict:
    """``{station: (tokens/s, reason)}``: the k_max capacity of each station whose batch-size limit binds and
    whose hops all bring one request mix (equal prompt and output lengths) -- the single-engine capacity of
    that mix, the k_max stability region along it (:func:`fluidq.capacity.max_throughput`, §6 of
    arXiv:2504.07347); it is the most any scheduler serves of that mix, so a load above 1 against it proves
    growth.  Left out, keeping b_max/t(b_max): stations behind a JSQ router, with a KV-cache limit or a
    context-aware batch time.  A station serving several mixes has no one k_max capacity (the region depends on the
    mix of prompt lengths, not on the token rates alone) and is left out: the compile note on its ``k_max``
    keeps the verdict from saying stable there."""
    from ..capacity import max_throughput
    from ..engine.budgets import binding_k_max, effective_engine
    from ..workload import Poisson, Workload

    hops = {h.name: h for h in network.hops}
    behind_jsq = {e for r in network.routers if r.policy == "jsq" for e in r.engines}
    out = {}
    for st in network.stations:
        if st.name not in fm.points or binding_k_max(st.engine, st.policy) is None or st.name in behind_jsq:
            continue  # JSQ splits follow the queues: no fixed mix per engine
        if st.engine.kv_capacity_tokens is not None or getattr(st.engine.batch_time, "kind", "") == "context_aware":
            continue  # the region here is that of token budgets alone
        mine = [b for b in fm.buffers if b.point == st.name]
        mixes = [(hops[b.hop].prompt_tokens, hops[b.hop].output_tokens) for b in mine]
        rate = sum(b.rate for b in mine)
        if not mixes or not rate > 0 or not all(_same_length(m[0], mixes[0][0]) and _same_length(m[1], mixes[0][1])
                                                for m in mixes[1:]):
            continue
        prompt, output = mixes[0]
        w = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)
        cap = max_throughput(effective_engine(st.engine, st.policy), w)
        if cap.tokens_per_s > 0:
            out[st.name] = (float(cap.tokens_per_s), cap.reason)
    return out


def _composition_points(network, fm) -> set:
    """Service points (stations, pooled JSQ routers) with an engine whose batch time reads the batch
    composition (:func:`fluidq.dtmc.flow_basis.is_composition`)."""
    from ..dtmc.flow_basis import is_composition

    comp = {s.name for s in network.stations if is_composition(s.engine)}
    return comp | {r.name for r in network.routers if r.name in fm.points and comp.intersection(r.engines)}


def backlog_slope(engine, workload) -> float:
    """Fluid backlog growth of one engine under a work-conserving scheduler,
    ``max(0, lambda (m_p + m_d) - b_max/t(b_max))`` tokens/s (``CapacityResult.work_conserving_tokens_per_s``);
    on an engine whose batch time reads the batch composition the capacity is vLLM's flow balance
    (:func:`fluidq.dtmc.flow_basis.flow_balance_capacity`), as ``check_stability`` reads it.

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347, Theorem 2 and its fluid model.

    Examples
    --------
    >>> import fluidq
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    >>> lam = 1.1 * 0.0167145 * 1e3
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=lam), prompt_tokens=100, output_tokens=100)
    >>> round(backlog_slope(e, w), 0)
    334.0
    """
    from ..capacity import max_throughput, offered_tokens_per_s
    from ..engine import Engine
    from ..workload import Workload

    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine (one engine; for several use a Network)")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload (its token rate is the fluid inflow)")
    from ..capacity import tokens_per_request
    from ..dtmc.flow_basis import flow_balance_capacity

    fb = flow_balance_capacity(engine, workload)
    if fb is not None:  # t(b) is not such an engine's iteration time: vLLM's flow balance is the basis
        cap = fb.requests_per_s * tokens_per_request(engine, workload)
    else:
        res = max_throughput(engine, workload)
        # a work-conserving scheduler fills its batches under a backlog: b_max/t(b_max), not sup_b b/t(b)
        cap = res.work_conserving_tokens_per_s if res.work_conserving_tokens_per_s is not None else res.tokens_per_s
    return max(0.0, offered_tokens_per_s(engine, workload) - cap)


def _peak_growth(path):
    pk = [v for _, v in path.peaks]
    if len(pk) >= 2:
        return float(pk[-1] / pk[-2])
    return None


def _all_solutions(system, pos, choice):
    return [u for u, _ in system.all_solutions(pos, np.ones(system.G, dtype=bool), choice)]


def lyapunov_certificate(network, *, max_buffers: int = 12):
    """Search a linear Lyapunov function for the fluid model by linear programming.

    Returns ``(weights, rows)``: ``weights`` an array ``c >= 0`` with ``c . dz/dt <= -1`` in every mode
    (``None`` when the LP is infeasible), and the number of mode constraints.  Raises
    :class:`~fluidq.errors.ParameterError` for networks with joins or more than ``max_buffers`` buffers,
    :class:`~fluidq.errors.TopologyError` when no class visits an engine.
    """
    from scipy.optimize import linprog

    system = FluidSystem(_network_flow(network))
    n = system.n
    if n > integer("max_buffers", max_buffers, minimum=1):
        raise ParameterError("max_buffers", max_buffers, f">= {n} (the network has {n} buffers; modes are 2^n)")
    if system.nJ:
        raise ParameterError("network", network.name, "a network without joins for the Lyapunov search")
    tol = 1e-7 * max(float(system.cap.max()), 1.0)
    rows = []
    for size in range(1, n + 1):
        for subset in itertools.combinations(range(n), size):
            pos = np.zeros(n, dtype=bool)
            pos[list(subset)] = True
            shared = []
            for p, groups in enumerate(system.groups):
                for gi, grp in enumerate(groups):
                    ne = [i for i in grp if pos[i]]
                    if ne:
                        if len(ne) > 1:
                            shared.append(((p, gi), ne))
                        break
            choices = [dict(zip([k for k, _ in shared], combo))
                       for combo in itertools.product(*[ne for _, ne in shared])] if shared else [None]
            for ch in choices:
                for u in _all_solutions(system, pos, ch):
                    dz = system.demand(u, np.zeros(0)) - u
                    valid = not np.any((~pos) & (dz > tol))
                    if not valid and not shared:
                        continue  # this mode cannot last: an empty buffer would grow at once
                    rows.append(dz)
    if not rows:
        return np.ones(n), 0
    A = np.array(rows)
    res = linprog(np.ones(n), A_ub=A, b_ub=-np.ones(len(rows)), bounds=[(0, None)] * n, method="highs")
    if res.status != 0:
        return None, len(rows)
    return res.x, len(rows)


def _priority_layers(fm):
    """A topological order of the buffer dependency graph, or ``None`` when it has a cycle.

    Edges: ``j -> i`` when buffer ``j`` (or a join it feeds) feeds ``i``; ``h -> i`` when ``h`` outranks ``i``
    at their point; ``i <-> j`` for two buffers sharing a priority level (no order between them).
    """
    import networkx as nx

    g = nx.DiGraph()
    n = fm.n
    g.add_nodes_from(range(n))

    def add_sources(target, sources):
        for kind, j, _ in sources:
            if kind == "buf":
                g.add_edge(j, target)
            elif kind == "join":
                g.add_edge(("join", j), target)

    for i, srcs in enumerate(fm.inflow):
        add_sources(i, srcs)
    for k, (_, inputs, _) in enumerate(fm.joins):
        for inp in inputs:
            add_sources(("join", k), inp)
    by_point: dict = {}
    for i in range(n):
        by_point.setdefault(int(fm.point_of[i]), []).append(i)
    for idx in by_point.values():
        ranked = sorted(idx, key=lambda i: fm.priority_rank[i])
        for a, b in zip(ranked, ranked[1:]):
            if fm.priority_rank[a] == fm.priority_rank[b]:
                return None  # two buffers share a level: edges both ways, a cycle
            g.add_edge(a, b)  # a chain of the levels: its transitive closure is "a outranks b"
    if not nx.is_directed_acyclic_graph(g):
        return None
    return [v for v in nx.topological_sort(g) if not isinstance(v, tuple)]


def _shared_slots(fm) -> list:
    """``(point, [buffer labels])`` for every priority level that holds more than one buffer.

    Inside such a level the stations serve their hops FCFS (first in, first out), but the fluid paths
    fluidq computes share the capacity in proportion to the nominal loads (weighted token sharing):
    a path is a path of that discipline, not of FIFO.
    """
    out = []
    for p, name in enumerate(fm.points):
        idx = [i for i in range(fm.n) if int(fm.point_of[i]) == p]
        for r in sorted({int(fm.priority_rank[i]) for i in idx}):
            grp = [fm.buffers[i].label for i in idx if int(fm.priority_rank[i]) == r]
            if len(grp) > 1:
                out.append((name, grp))
    return out


#: most buffers for which the phases of a diverging path are checked for other consistent allocations
#: (every cut structure of each mode the path visits is solved; at most 4096 a mode)
MAX_UNIQUENESS_BUFFERS = 16


#: most cut structures solved in all when checking a diverging path for other allocations (about a
#: millisecond each); beyond it the reason says uniqueness was not checked
MAX_UNIQUENESS_STRUCTURES = 1500


def _phase_allocations(system, path, budget: int = MAX_UNIQUENESS_STRUCTURES):
    """``(most, complete)``: the most distinct consistent allocations of any mode ``path`` visits (1: its
    phases are unique), and whether every cut structure of every mode was solved within ``budget``.

    The path takes, in each phase, the allocation the causal start-up of the phase settles on (or the
    one closest to the previous phase); this enumerates every cut structure of each mode visited (as
    :meth:`FluidSystem.all_solutions` does), so it also finds the other solutions of a priority fluid
    model that the start-up does not reach (Lu--Kumar from fluid in class 1).
    """
    from ..fluid.path import _distinct

    tol = 1e-9 * max(float(system.cap.max()), 1.0)
    seen: set = set()
    most, left = 1, int(budget)
    for k in range(len(path.times_s) - 1):
        z = np.asarray(path.levels[k], dtype=float)
        q = np.asarray(path.join_levels[k], dtype=float) if system.G else np.zeros(0)
        mass = float(z.sum() + q.sum())
        pos = z > 1e-11 * max(mass, 1.0)
        qzero = q <= 1e-9 * max(float(q.sum()), 1.0)
        key = (pos.tobytes(), qzero.tobytes())
        if key in seen:
            continue
        seen.add(key)
        sols, tried = [], 0
        for st in system.candidate_structures(pos, qzero, None, limit=left + 1):
            tried += 1
            if tried > left:
                return most, False
            sol = system.solve_structure(st, pos)
            if sol is None or np.min(sol[0], initial=0.0) < -tol:
                continue
            un, rn, _ = system.sweep(sol[0], sol[1], pos, qzero, None)
            if np.max(np.abs(un - sol[0]), initial=0.0) <= tol and np.max(np.abs(rn - sol[1]), initial=0.0) <= tol:
                sols.append(sol)
        left -= tried
        if sols:
            most = max(most, _distinct([x[0] for x in sols], tol))
    return most, True


def _path_caveats(fm, non_unique: bool, *, diverging: bool, unchecked: bool = False) -> str:
    """What the fluid paths tried do not cover, as a clause for a reason ("" when nothing).

    ``unchecked``: whether other consistent allocations exist was not checked (too many buffers).
    """
    out = []
    if non_unique:
        out.append("fluid paths are not unique here (a phase of the path has several consistent allocations, "
                   "and the path follows one of them)" +
                   (": this diverging path is one fluid path, and another from the same state may drain"
                    if diverging else ": other paths were not followed"))
    elif unchecked and diverging:
        why = (f"{fm.n} buffers > {MAX_UNIQUENESS_BUFFERS}" if fm.n > MAX_UNIQUENESS_BUFFERS else
               f"more than {MAX_UNIQUENESS_STRUCTURES} cut structures to solve")
        out.append(f"whether other fluid paths exist was not checked ({why}): this diverging path is one fluid path")
    shared = _shared_slots(fm)
    if shared:
        where = "; ".join(f"{pt!r}: {', '.join(map(repr, grp[:6]))}{' ...' if len(grp) > 6 else ''}"
                          for pt, grp in shared[:4]) + (" ..." if len(shared) > 4 else "")
        out.append(f"the paths tried share capacity between same-priority hops by weighted token sharing (in "
                   f"proportion to their loads), not FIFO as the stations serve them ({where})" +
                   ("; the divergence is shown for that discipline" if diverging else ""))
    return "; ".join(out)


def _work_conserving(network):
    from . import _work_conserving as wc

    out = {}
    for s in network.stations:
        out[s.name] = wc(s.policy)
    return out


#: default of ``fluid_stability(max_path_buffers=...)``: a phase of a fluid path costs about ``n^2``
#: operations for ``n`` buffers and the search follows one path per buffer, so beyond this the paths
#: (seconds at 64 buffers, minutes at a few hundred) are skipped
MAX_PATH_BUFFERS = 64


def _load_words(x: float) -> str:
    return f"{x:.3f}" if x < 1e6 else f"{x:.4g}"


def network_inputs(network) -> dict:
    """What a network verdict was computed from, JSON-ready: the stations (engine, policy, priority), the
    routers and the classes (rate, route) -- the description, without the analyses ``Network.to_dict()`` adds."""
    return plain({"name": network.name,
                  "stations": [{"name": s.name, "engine": s.engine.to_dict(),
                                "policy": getattr(s.policy, "name", str(s.policy)), "priority": list(s.priority)}
                               for s in network.stations],
                  "routers": [{"name": r.name, "engines": list(r.engines), "policy": r.policy} for r in network.routers],
                  "classes": [{"name": c.name, "rate_per_s": c.rate_per_s} for c in network.classes]})


def fluid_stability(network, *, tolerance: float = 1e-9, max_lyapunov_buffers: int = 12,
                    max_phases: int = 5000, max_path_buffers: int = MAX_PATH_BUFFERS,
                    idealised: bool = False) -> FluidStabilityResult:
    """Stability of the fluid model of ``network``, with the argument that decided.

    Parameters
    ----------
    network : Network
        The network.
    tolerance : float
        Relative band around load 1 reported as critical.
    max_lyapunov_buffers : int
        Largest number of buffers for the Lyapunov LP (its modes are ``2^n``); ``0`` skips the LP.
    max_phases : int
        Linear pieces per fluid path, ``>= 1``.
    max_path_buffers : int
        Most buffers for which fluid paths are computed (one unit path per buffer, about ``n^2`` work
        per phase); a larger network gets the load, feedforward and priority-layer arguments only
        (and "unknown" beyond them, saying the path search was skipped).  ``>= 0``.
    idealised : bool
        ``False`` (default): a station whose ``k_max`` binds serves less than ``b_max / t(b_max)`` under a
        backlog, so below overload the verdict is *unknown* there (``FlowModel.k_max_notes``).  ``True``:
        the idealised model that takes every station to serve ``b_max / t(b_max)`` -- its stable and
        diverging-path verdicts are then no proof for such a network (what
        :func:`fluidq.stability.network.check_network_stability` reports beside its caveats).  An overload
        is a proof either way.

    Returns
    -------
    FluidStabilityResult

    Raises
    ------
    ParameterError
        ``tolerance`` outside ``[0, 1)``, ``max_lyapunov_buffers < 0`` or ``max_phases < 1``.
    TopologyError
        No request class visits an engine (every route leaves at once, e.g. a
        :class:`~fluidq.network.Choice` whose only option is an empty route): there is no fluid model.
        A class that visits no engine beside classes that do simply adds no fluid.

    Examples
    --------
    >>> from fluidq.network import Network
    >>> rs = Network.classical(stations=["S1", "S2"], routes={"A": [("S1", "1"), ("S2", "2")],
    ...     "B": [("S2", "3"), ("S1", "4")]}, rate_per_s=1.0,
    ...     mean_times={"1": 0.1, "2": 0.6, "3": 0.1, "4": 0.6}, priority={"S1": ["4"], "S2": ["2"]})
    >>> fluid_stability(rs).status
    <Status.UNSTABLE: 'unstable'>
    """
    from ..network.model import Network

    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    tolerance = real("tolerance", tolerance, nonnegative=True)
    if tolerance >= 1:
        raise ParameterError("tolerance", tolerance, "a relative band in [0, 1)",
                             "a band of 1 or more around load 1 would call every network critical")
    max_lyapunov_buffers = integer("max_lyapunov_buffers", max_lyapunov_buffers, minimum=0)
    max_phases = integer("max_phases", max_phases, minimum=1)
    max_path_buffers = integer("max_path_buffers", max_path_buffers, minimum=0)
    if not isinstance(idealised, bool):
        raise ParameterError("idealised", idealised, "True or False")
    inputs = {"network": network_inputs(network), "tolerance": tolerance,
              "max_lyapunov_buffers": max_lyapunov_buffers, "max_phases": max_phases,
              "max_path_buffers": max_path_buffers, "idealised": idealised}
    fm = _network_flow(network)
    paths_ok = fm.n <= max_path_buffers
    used = set(int(i) for i in fm.point_of)
    loads = {p: float(x) for k, (p, x) in enumerate(zip(fm.points, fm.loads())) if k in used}
    kcap = _k_max_capacities(network, fm)
    # every verdict carries the inputs and the k_max capacities (check_network_stability reads them there)
    result = partial(FluidStabilityResult, inputs=inputs, k_max_capacities=kcap)
    for st, (cap_k, _) in kcap.items():
        loads[st] = loads[st] * float(fm.capacity[fm.points.index(st)]) / cap_k
    # a point with an engine whose batch time reads the batch composition: b_max/t(b_max) is neither its capacity
    # nor a bound on it (t(b) counts no decode cost but a whole prefill chunk's attention), so its load proves
    # nothing either way (the compile note on it keeps the verdict from saying stable)
    comp = set() if idealised else _composition_points(network, fm)
    proving = {k: v for k, v in loads.items() if k not in comp} or {k: 0.0 for k in loads}
    worst = max(proving, key=proving.get)
    rho = proving[worst]
    if rho > 1 + tolerance:
        over = {k: v for k, v in proving.items() if v > 1 + tolerance}
        if worst in kcap:
            # overloaded at the k_max capacity: outside the stability region, which no scheduler leaves stable;
            # the fluid paths run at b_max/t(b_max) and would not show it
            cap_k, why = kcap[worst]
            return result(
                status=Status.UNSTABLE, certificate="load",
                reason=(f"{_point_words(network, worst)} has load {_load_words(rho)} > 1 against its k_max capacity "
                        f"{cap_k:.6g} tokens/s (overloaded: {_names_short(sorted(over))}); its work grows at >= "
                        f"{(rho - 1) * cap_k:.4g} tokens/s under every scheduler ({why})"),
                loads=loads, backlog_slope_tokens_per_s=(rho - 1) * cap_k)
        p = fluid_path(network, None, max_phases=4 * fm.n + 16) if paths_ok else None
        slope = float(np.sum(np.maximum(0.0, np.diff(p.levels[-2:], axis=0)[0])) /
                      max(p.times_s[-1] - p.times_s[-2], 1e-300)) if p is not None and len(p.times_s) > 1 else None
        return result(
            status=Status.UNSTABLE, certificate="load",
            reason=(f"{_point_words(network, worst)} has load {_load_words(rho)} > 1 (overloaded: "
                    f"{_names_short(sorted(over))}); "
                    f"its work grows at >= {(rho - 1) * fm.capacity[fm.points.index(worst)]:.4g} tokens/s "
                    f"{_overload_scope(network, worst)}"), loads=loads, backlog_slope_tokens_per_s=slope, path=p,
            paths_checked=int(p is not None))
    if rho >= 1 - tolerance:
        return result(status=Status.CRITICAL, certificate="load",
                      reason=f"{_point_words(network, worst)} has load {rho:.6f}, at the boundary: the fluid model "
                      "neither drains nor diverges linearly", loads=loads)
    wc = _work_conserving(network)
    bad = [k for k, v in wc.items() if not v.work_conserving]
    if bad:
        return result(
            status=Status.UNKNOWN, certificate=None,
            reason=(f"station {bad[0]!r} runs {getattr(network.station(bad[0]).policy, 'name', '?')}, which is not "
                    f"work-conserving ({wc[bad[0]].reason}); the fluid model of work-conserving engines does not "
                    "apply (use simulation)"), loads=loads)
    notes = fm.notes if idealised else fm.notes + fm.k_max_notes
    if notes:
        return result(status=Status.UNKNOWN, certificate=None, reason="; ".join(notes), loads=loads)
    if network.is_dag:
        return result(
            status=Status.STABLE, certificate="feedforward",
            reason=(f"the station graph is acyclic and every load is < 1 (max {fmt_load(rho)} at {worst!r}); with "
                    "work-conserving engines every fluid path drains (feedforward induction, Dai 1995)"),
            loads=loads)
    if not fm.joins:
        import networkx as nx

        g = network.graph.copy()
        loops = sorted({u for u, v in nx.selfloop_edges(g)})
        g.remove_edges_from(list(nx.selfloop_edges(g)))
        if nx.is_directed_acyclic_graph(g):
            return result(
                status=Status.STABLE, certificate="feedforward",
                reason=(f"the station graph is acyclic apart from re-entrant stations ({', '.join(loops)}) and every "
                        f"load is < 1 (max {fmt_load(rho)} at {worst!r}); a work-conserving station with load < 1 drains "
                        "its total remaining work (present and future visits) however it orders its own classes, "
                        "and the stations drain in topological order (Dai 1995)"),
                loads=loads)
    layers = _priority_layers(fm)
    if layers is not None:
        return result(
            status=Status.STABLE, certificate="priority_layers",
            reason=(f"every load is < 1 (max {fmt_load(rho)} at {worst!r}) and the buffers can be ordered so that each is "
                    "fed only by earlier buffers and outranked only by earlier buffers at its engine: in that order "
                    "each buffer drains in finite time and then stays empty (the higher-priority work it competes "
                    "with is then served at its nominal rate, leaving it enough capacity)"),
            loads=loads)
    if not paths_ok:
        return result(
            status=Status.UNKNOWN, certificate=None,
            reason=(f"cyclic network, loads < 1 (max {fmt_load(rho)}); no priority-layer order; fluid-path search "
                    f"skipped: {fm.n} buffers > max_path_buffers={max_path_buffers} (one path per buffer, about "
                    f"{fm.n}^2 operations per phase): no proof either way"), loads=loads)
    system = FluidSystem(fm)
    checked = 0
    rep = None
    non_unique = False
    for i in range(fm.n):
        if fm.buffers[i].in_fork:
            continue  # fluid between a fork and its join needs its siblings: start upstream instead
        z0 = np.zeros(fm.n)
        z0[i] = 1.0
        p = fluid_path(network, z0, cycles=2, max_phases=max_phases, system=system)
        checked += 1
        non_unique = non_unique or p.non_unique
        if p.outcome == "diverging":
            pg = _peak_growth(p)
            unchecked = fm.n > MAX_UNIQUENESS_BUFFERS
            if not p.non_unique and not unchecked:
                most, complete = _phase_allocations(system, p)
                unchecked = not complete
                if most > 1:
                    p = replace(p, non_unique=True)
            non_unique = non_unique or p.non_unique
            extra = _path_caveats(fm, p.non_unique, diverging=True, unchecked=unchecked)
            return result(
                status=Status.UNSTABLE, certificate="diverging_path",
                reason=(f"the fluid path from unit fluid in {fm.buffers[i].label!r} returns to {p.growth_factor:.4g} "
                        f"times its state after {p.cycle_s:.4g} s (for one unit of fluid: a cycle lasts in proportion to "
                        f"the backlog it starts from, so the real network's cycles lengthen as it grows): it grows by "
                        f"that factor every cycle, although "
                        f"every load is < 1 (max {fmt_load(rho)}); cyclic routing with these priorities (Rybko-Stolyar)"
                        + (f"; {extra}" if extra else "")),
                loads=loads, growth_factor=p.growth_factor, peak_growth=pg, path=p, paths_checked=checked,
                non_unique=non_unique)
        if rep is None:
            rep = p
    cert = None
    note = ""
    if not fm.joins and fm.n <= max_lyapunov_buffers:
        c, nrows = lyapunov_certificate(network, max_buffers=max_lyapunov_buffers)
        if c is not None:
            cert = {fm.buffers[i].label: float(c[i]) for i in range(fm.n)}
            return result(
                status=Status.STABLE, certificate="lyapunov",
                reason=(f"a linear Lyapunov function V(z) = sum c_i z_i decreases at rate >= 1 in all {nrows} modes "
                        f"of the discipline (LP); every fluid path drains by time V(z(0)); {checked} unit paths "
                        "drain too" + (
                            "; hops sharing a priority level take every work-conserving split in those modes (every "
                            "vertex of the allocation set), so the certificate covers FIFO as the stations serve "
                            "them, while the unit paths share by weighted tokens" if _shared_slots(fm) else "")),
                loads=loads, lyapunov=cert, path=rep, paths_checked=checked,
                non_unique=non_unique)
        note = f"no linear Lyapunov function over {nrows} modes"
    else:
        note = ("Lyapunov search skipped (joins in a cyclic network)" if fm.joins else
                f"Lyapunov search skipped ({fm.n} buffers > max_lyapunov_buffers={max_lyapunov_buffers})")
    outcomes = sorted({p.outcome for p in [rep] if p is not None})
    extra = _path_caveats(fm, non_unique, diverging=False)
    return result(
        status=Status.UNKNOWN, certificate=None,
        reason=(f"cyclic network, loads < 1 (max {fmt_load(rho)}); no diverging path among {checked} unit initial states "
                f"(outcomes {', '.join(outcomes)}){f'; {extra}' if extra else ''}; {note}: no proof either way"),
        loads=loads, path=rep, paths_checked=checked, non_unique=non_unique)


# the documented old path ``fluidq.fluid.stability`` (and ``fluidq.fluid.fluid_stability``): registered
# here, by the verdict layer, so that the flow-model package imports no verdict
sys.modules.setdefault("fluidq.fluid.stability", sys.modules[__name__])
_fluid_pkg = sys.modules["fluidq.fluid"]
for _name in ("fluid_stability", "FluidStabilityResult", "backlog_slope", "lyapunov_certificate"):
    setattr(_fluid_pkg, _name, globals()[_name])
_fluid_pkg.stability = sys.modules[__name__]
