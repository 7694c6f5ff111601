"""Truncated Markov chains of small networks with memoryless hops.

Networks run in continuous time (engines are not synchronised, so there is no common batch
boundary); each model is a continuous-time chain on class counts, uniformised into a DTMC
(``P = I + Q / Lambda``) so the same sparse solver and drift tools apply.  A transition that
would push a class above its cap goes to the clipped state: an arrival is dropped, and a job
moving to a full class leaves the network (it is not held where it is: a blocked move under a
preemptive priority would freeze its station, and the full corner of the box would become a
closed class that absorbs all the mass -- the Rybko-Stolyar chain at its caps did).  The
stationary probability flow of these transitions is reported as ``lost_mass`` (per uniformised
step).

Models
------
:func:`parallel_engines`
    Two (or more) engines behind a random or join-the-shortest-queue router.  An engine with
    ``n`` resident requests runs batches of ``B(n) = min(n, b_max)`` tokens (one token per
    request per batch: a request is one memoryless hop of geometric length ``m_p + m_d`` tokens),
    each lasting ``t(B(n))``, so requests complete at rate ``B(n) / (t(B(n)) (m_p + m_d))``.  The
    saturated rate is the engine's capacity ``b_max / t(b_max)`` tokens/s, which is what decides
    stability (Li, Dai, Peng, arXiv:2504.07347, Prop. 3: JSQ is stable below the sum); the
    small-``n`` rates are a simplification of prefill (documented, not the paper's).
:func:`random_routing_engines`
    LLM engines (prefill/decode batches, the engine chain of :func:`fluidq.build_dtmc`) behind a
    random router: exact, since independent routing splits Poisson arrivals into independent
    Poisson streams; the product of the engines' chains.
:func:`dag_network`
    Two or three engines in a DAG: external Poisson arrivals enter at the engines given, a
    request finishing its hop at engine ``i`` moves to engine ``j`` with probability ``r[i][j]``
    (acyclic) or leaves.  Each engine serves as in :func:`parallel_engines` with its own hop
    length.
:func:`fork_join`
    Two branches in parallel on engines 1 and 2, joined before the request leaves; the state
    ``(both, only1, only2)`` counts requests with both branches pending and those whose other
    branch already finished (they sit in the join buffer).  In this model every resident
    request gets one token per batch, so the branch that completes at an engine is uniform among
    its residents.
:func:`rybko_stolyar`
    The classical Rybko-Stolyar network: route A visits station 1 (class 1, mean ``m1``) then 2
    (class 2, ``m2``); route B visits 2 (class 3, ``m3``) then 1 (class 4, ``m4``); exponential
    services; station 1 gives preemptive priority to class 4 and station 2 to class 2 (the
    classes that leave), or the reverse with ``priority="entry"``.  Unstable when
    ``lambda (m2 + m4) > 1`` although both station loads are below one (Rybko & Stolyar 1992;
    Dai 1995).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validate import integer, real
from ..capacity import max_throughput, tokens_per_request
from ..engine import Engine
from ..errors import ParameterError
from ..results import Result, Status, plain
from .solve import stationary
from .state import StateSpace

__all__ = [
    "NetworkChain",
    "NetworkResult",
    "RoutedEnginesResult",
    "dag_network",
    "fork_join",
    "parallel_engines",
    "random_routing_engines",
    "rybko_stolyar",
    "rybko_stolyar_symbolic",
    "virtual_station_work",
]


@dataclass(frozen=True, eq=False)
class NetworkChain:
    """A uniformised network chain: ``P``, the state space, the uniformisation rate ``Lambda``."""

    name: str
    P: sp.csr_matrix
    space: StateSpace
    uniform_rate_per_s: float
    lost: np.ndarray
    build_s: float
    inputs: dict = field(default_factory=dict, repr=False)

    @property
    def n_states(self):
        return self.P.shape[0]

    @property
    def nnz(self):
        return int(self.P.nnz)

    def drift(self, V: np.ndarray) -> np.ndarray:
        """Drift of ``V`` per second: ``Lambda (P V - V)``."""
        return self.uniform_rate_per_s * (self.P @ V - V)

    def coords(self) -> dict:
        return {n: self.space[n] for n in self.space.names}

    def solve(self, method="auto", *, tol=1e-10, tolerance=1e-6) -> NetworkResult:
        t0 = time.perf_counter()
        unstable = self.inputs.get("unstable_reason")
        if unstable:
            return NetworkResult(self.name, Status.UNSTABLE, unstable, self.n_states, self.nnz, self.build_s, 0.0,
                                 "none", None, None, {}, None, self)
        sol = stationary(self.P, method, tol=tol, ref=0)
        s = time.perf_counter() - t0
        if sol.method == "failed":
            return NetworkResult(self.name, Status.INACCURATE, f"no solver converged: {sol.note}", self.n_states,
                                 self.nnz, self.build_s, s, "failed", None, None, {}, None, self)
        lost = float(sol.pi @ self.lost)
        means = {n: float(sol.pi @ self.space[n]) for n in self.space.names}
        if lost > tolerance or not sol.converged:
            status = Status.INACCURATE
            reason = (f"stationary probability {lost:.3g} per step of hitting the truncation caps "
                      f"{self.inputs.get('caps')} (tolerance {tolerance:g}): raise the caps, or the network "
                      "is unstable at this load")
        else:
            status = Status.STABLE
            reason = f"solved by {sol.method} (residual {sol.residual:.1e}); boundary mass {lost:.1e}"
        return NetworkResult(self.name, status, reason, self.n_states, self.nnz, self.build_s, s, sol.method,
                             sol.residual, lost, means, sol.pi, self)


@dataclass(frozen=True, eq=False)
class NetworkResult(Result):
    """Stationary solve of a network chain: status, means per coordinate, boundary mass."""

    network: str
    status: Status
    reason: str
    n_states: int
    nnz: int
    build_s: float
    solve_s: float
    method: str
    residual: float | None
    lost_mass: float | None
    means: dict
    pi: np.ndarray | None = field(default=None, repr=False)
    chain: object = field(default=None, repr=False)

    @property
    def inputs(self) -> dict:
        """What the chain was solved for: the network's name and the solver."""
        return {"network": self.network, "method": self.method}

    @property
    def mean_total(self) -> float | None:
        return float(sum(self.means.values())) if self.means else None

    def to_dict(self):
        return plain({"network": self.network, "status": self.status, "reason": self.reason,
                      "n_states": self.n_states, "nnz": self.nnz, "build_s": self.build_s, "solve_s": self.solve_s,
                      "method": self.method, "residual": self.residual, "lost_mass": self.lost_mass,
                      "means": self.means, "mean_total": self.mean_total})


def _ctmc(name, names, caps, events, inputs, t0):
    """Uniformised chain on the box ``0..caps`` from ``events``: list of ``(rate(x) -> array, delta)``."""
    shape = tuple(c + 1 for c in caps)
    space = StateSpace.from_mask(names, shape, np.ones(shape, dtype=bool))
    X = [space[n] for n in names]
    S = space.size
    rates, dests, outs = [], [], []
    for rate_fn, delta in events:
        r = np.broadcast_to(np.asarray(rate_fn(*X), dtype=float), (S,)).copy()
        new = [x + d for x, d in zip(X, delta)]
        out = np.zeros(S, dtype=bool)
        for v, c in zip(new, caps):
            out |= (v < 0) | (v > c)
        if np.any((r > 0) & np.any([v < 0 for v in new], axis=0)):  # pragma: no cover - model bug
            raise RuntimeError(f"{name}: an event with positive rate empties a class below zero")
        new = [np.clip(v, 0, c) for v, c in zip(new, caps)]
        rates.append(r)
        dests.append(space.index(*new))  # out of the box: the clipped state (the job beyond a cap is lost)
        outs.append(out)
    total = np.sum(rates, axis=0)
    Lam = float(total.max()) * 1.0001
    rows, cols, vals = [], [], []
    lost = np.zeros(S)
    stay = np.ones(S)
    src = np.arange(S)
    for r, d, o in zip(rates, dests, outs):
        keep = r > 0
        rows.append(src[keep])
        cols.append(d[keep])
        vals.append(r[keep] / Lam)
        stay -= np.where(keep, r / Lam, 0.0)
        lost += np.where(o & keep, r / Lam, 0.0)
    rows.append(src)
    cols.append(src)
    vals.append(stay)
    P = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(S, S))
    P.sum_duplicates()
    inputs = dict(inputs, caps=dict(zip(names, caps)))
    return NetworkChain(name, P, space, Lam, lost, time.perf_counter() - t0, inputs)


def parallel_engines(engines, workload, router: str = "jsq", *, probabilities=None, cap: int = 60,
                     queue_metric: str = "requests") -> NetworkChain:
    """Engines behind a router (``"jsq"`` on resident requests, or ``"random"`` with ``probabilities``).

    Parameters
    ----------
    engines : Engine or sequence of Engine
        Two or three engines (an Engine is used twice).
    workload : Workload
        Poisson arrivals; each request is one memoryless hop of mean ``m_p + m_d`` tokens (``m_p + m_d - 1``
        on engines with ``prefill_emits_token``).
    router : {"jsq", "random"}
    probabilities : sequence of float, optional
        Routing probabilities for ``"random"`` (default uniform).
    cap : int
        Truncation: at most ``cap`` requests per engine.
    queue_metric : {"requests"}
        JSQ compares resident requests (with one-token-per-request batches tokens and requests
        coincide in this model).

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347, Prop. 3 / Remark 4.
    """
    t0 = time.perf_counter()
    if isinstance(engines, Engine):
        engines = [engines, engines]
    engines = list(engines)
    if not 2 <= len(engines) <= 3 or not all(isinstance(e, Engine) for e in engines):
        raise ParameterError("engines", engines, "two or three fluidq.Engine objects")
    if router not in ("jsq", "random"):
        raise ParameterError("router", router, "'jsq' or 'random'")
    if queue_metric != "requests":
        raise ParameterError("queue_metric", queue_metric, "'requests' in this model")
    cap = integer("cap", cap, minimum=2)
    K = len(engines)
    lam = workload.arrival_rate_per_s
    works = {tokens_per_request(e, workload) for e in engines}  # m_p + m_d - 1 with prefill_emits_token
    if len(works) > 1:
        raise ParameterError("engines", engines, "engines that agree on prefill_emits_token (one token work per "
                             "request in this model)")
    m = works.pop()
    if router == "random":
        q = np.full(K, 1.0 / K) if probabilities is None else np.asarray(probabilities, float)
        if q.shape != (K,) or np.any(q < 0) or abs(q.sum() - 1) > 1e-9:
            raise ParameterError("probabilities", probabilities, f"{K} non-negative numbers summing to 1")
    names = tuple(f"n{j + 1}" for j in range(K))

    def service(e):
        b = np.arange(0, cap + 1)
        B = np.minimum(b, e.b_max)
        t = np.where(B > 0, np.asarray(e.batch_time(np.maximum(B, 1).astype(float)), float), 1.0)
        return np.where(B > 0, B / (t * m), 0.0)

    mus = [service(e) for e in engines]
    events = []
    for j in range(K):
        delta = tuple(1 if i == j else 0 for i in range(K))
        if router == "random":
            events.append((lambda *x, j=j: np.full(x[0].shape, lam * q[j]), delta))
        else:
            def jsq(*x, j=j):
                X = np.stack(x)
                mn = X.min(axis=0)
                ties = (X == mn).sum(axis=0)
                return np.where(X[j] == mn, lam / ties, 0.0)
            events.append((jsq, delta))
        events.append((lambda *x, j=j: mus[j][x[j]], tuple(-1 if i == j else 0 for i in range(K))))
    caps_tok = [max_throughput(e).tokens_per_s for e in engines]
    unstable = None
    offered = lam * m
    if router == "jsq" and offered >= sum(caps_tok):
        unstable = (f"offered {offered:.4g} tokens/s >= the sum of engine capacities {sum(caps_tok):.4g}: no router "
                    "is stable (Prop. 3 of arXiv:2504.07347)")
    if router == "random":
        bad = [j for j in range(K) if q[j] * offered >= caps_tok[j]]
        if bad:
            unstable = (f"random routing sends {q[bad[0]] * offered:.4g} tokens/s to engine {bad[0] + 1}, at or above its "
                        f"capacity {caps_tok[bad[0]]:.4g}")
    return _ctmc(f"{K} engines, {router}", names, [cap] * K, events,
                 {"router": router, "arrival_rate_per_s": lam, "mean_tokens": m, "capacities_tokens_per_s": caps_tok,
                  "unstable_reason": unstable}, t0)


@dataclass(frozen=True, eq=False)
class RoutedEnginesResult(Result):
    """LLM engines behind a random router, each solved by its own engine chain.

    ``results[j]`` is engine ``j``'s :class:`~fluidq.dtmc.StationaryResult` at its share
    ``rates_per_s[j]`` of the arrivals; ``status`` is the worst of theirs; ``mean_requests`` the sum of
    their time-average requests (``None`` unless every engine is stable).
    """

    results: tuple
    rates_per_s: tuple
    probabilities: tuple
    status: Status
    mean_requests: float | None

    @property
    def inputs(self) -> dict:
        """The routing: each engine's arrival rate and routing probability."""
        return {"rates_per_s": list(self.rates_per_s), "probabilities": list(self.probabilities)}

    def to_dict(self):
        return plain({"status": self.status, "mean_requests": self.mean_requests, "rates_per_s": self.rates_per_s,
                      "probabilities": self.probabilities, "engines": [r.to_dict() for r in self.results]})


def random_routing_engines(engines, workload, policy="sarathi", *, probabilities=None,
                           **build_kw) -> RoutedEnginesResult:
    """LLM engines (prefill/decode batches) behind a random router: exact, engine by engine.

    A router that sends each request to engine ``j`` with probability ``q_j``, independently, thins
    the Poisson arrivals into independent Poisson streams of rates ``q_j lambda``, and the engines
    share nothing else: the network's stationary law is the product of the engines' own embedded
    chains (:func:`fluidq.build_dtmc`, with its batch rule, lengths and truncation; ``build_kw`` go to
    it).  Join-the-shortest-queue couples the engines through the routing and their unsynchronised
    batch boundaries, which no finite chain of counts embeds exactly; see :func:`parallel_engines` for
    the memoryless-hop approximation.

    Parameters
    ----------
    engines : Engine or sequence of Engine
        An Engine is used twice.
    workload : Workload
        Poisson arrivals and the lengths :func:`fluidq.build_dtmc` accepts.
    policy : str or Scheduler
        Every engine's scheduler.
    probabilities : sequence of float, optional
        Routing probabilities (default uniform).
    """
    from . import build_dtmc

    if isinstance(engines, Engine):
        engines = [engines, engines]
    engines = list(engines)
    if len(engines) < 2 or not all(isinstance(e, Engine) for e in engines):
        raise ParameterError("engines", engines, "two or more fluidq.Engine objects")
    K = len(engines)
    q = np.full(K, 1.0 / K) if probabilities is None else np.asarray(probabilities, float)
    if q.shape != (K,) or np.any(~np.isfinite(q)) or np.any(q <= 0) or abs(q.sum() - 1) > 1e-9:
        raise ParameterError("probabilities", probabilities, f"{K} positive numbers summing to 1")
    lam = workload.arrival_rate_per_s
    results = tuple(build_dtmc(e, workload.with_rate(float(qj * lam)), policy, **build_kw).solve()
                    for e, qj in zip(engines, q))
    order = [Status.STABLE, Status.INACCURATE, Status.UNSTABLE]
    status = max((r.status for r in results), key=lambda st: order.index(st) if st in order else len(order))
    total = sum(r.mean_requests for r in results) if all(r.status == Status.STABLE for r in results) else None
    return RoutedEnginesResult(results, tuple(float(qj * lam) for qj in q), tuple(float(x) for x in q), status, total)


def _service_rates(e, cap, m):
    n = np.arange(0, cap + 1)
    B = np.minimum(n, e.b_max)
    t = np.where(B > 0, np.asarray(e.batch_time(np.maximum(B, 1).astype(float)), float), 1.0)
    return np.where(B > 0, B / (t * m), 0.0)


def dag_network(engines, arrival_rates_per_s, hop_tokens, routing, *, cap: int = 30) -> NetworkChain:
    """A DAG of two or three engines with memoryless hops.

    Parameters
    ----------
    engines : sequence of Engine
    arrival_rates_per_s : sequence of float
        External Poisson arrivals per engine (requests/s).
    hop_tokens : sequence of float
        Mean tokens (``m_p + m_d``) of the hop at each engine.
    routing : square matrix
        ``routing[i][j]``: probability that a request leaving engine ``i`` continues at ``j``; rows sum
        to at most 1 (the rest leaves); must be acyclic (strictly upper triangular after ordering).
    cap : int
        At most ``cap`` requests per engine.
    """
    t0 = time.perf_counter()
    engines = list(engines)
    K = len(engines)
    if not 2 <= K <= 3 or not all(isinstance(e, Engine) for e in engines):
        raise ParameterError("engines", engines, "two or three fluidq.Engine objects")
    lam = np.asarray(arrival_rates_per_s, float)
    m = np.asarray(hop_tokens, float)
    R = np.asarray(routing, float)
    if lam.shape != (K,) or np.any(lam < 0) or lam.sum() <= 0:
        raise ParameterError("arrival_rates_per_s", arrival_rates_per_s, f"{K} rates >= 0, not all zero")
    if m.shape != (K,) or np.any(m < 1):
        raise ParameterError("hop_tokens", hop_tokens, f"{K} mean hop lengths >= 1 token")
    if R.shape != (K, K) or np.any(R < 0) or np.any(R.sum(axis=1) > 1 + 1e-12):
        raise ParameterError("routing", routing, f"a {K}x{K} sub-stochastic matrix")
    import networkx as nx

    g = nx.DiGraph([(i, j) for i in range(K) for j in range(K) if R[i, j] > 0])
    g.add_nodes_from(range(K))
    if not nx.is_directed_acyclic_graph(g):
        from ..errors import TopologyError

        raise TopologyError(f"routing has a cycle {nx.find_cycle(g)}; use rybko_stolyar for re-entrant lines")
    cap = integer("cap", cap, minimum=2)
    flow = np.linalg.solve(np.eye(K) - R.T, lam)  # traffic equations
    names = tuple(f"n{j + 1}" for j in range(K))
    mus = [_service_rates(e, cap, mj) for e, mj in zip(engines, m)]
    events = []
    for j in range(K):
        unit = tuple(1 if i == j else 0 for i in range(K))
        if lam[j] > 0:
            events.append((lambda *x, j=j: np.full(x[0].shape, lam[j]), unit))
        leave = 1.0 - R[j].sum()
        if leave > 0:
            events.append((lambda *x, j=j, f=leave: f * mus[j][x[j]], tuple(-u for u in unit)))
        for k in range(K):
            if R[j, k] > 0:
                delta = tuple(-1 if i == j else (1 if i == k else 0) for i in range(K))
                events.append((lambda *x, j=j, f=R[j, k]: f * mus[j][x[j]], delta))
    caps_tok = np.array([max_throughput(e).tokens_per_s for e in engines])
    loads = flow * m / caps_tok
    unstable = None
    if np.any(loads >= 1):
        j = int(np.argmax(loads))
        unstable = f"engine {j + 1} has load {loads[j]:.3f} >= 1 (traffic equations)"
    return _ctmc(f"DAG of {K} engines", names, [cap] * K, events,
                 {"flows_per_s": flow.tolist(), "loads": loads.tolist(), "unstable_reason": unstable}, t0)


def fork_join(engines, workload, *, branch_tokens=None, cap: int = 25) -> NetworkChain:
    """Fork into two branches on two engines, join before leaving; the join buffer is in the state.

    Parameters
    ----------
    engines : Engine or pair of Engine
    workload : Workload
        Poisson arrivals of parent requests.
    branch_tokens : (float, float), optional
        Mean tokens of each branch (default ``m_p + m_d`` of the workload, ``m_p + m_d - 1`` on an engine with
        ``prefill_emits_token``: :func:`fluidq.capacity.tokens_per_request`).
    cap : int
        At most ``cap`` requests in each of the three groups.

    Notes
    -----
    State ``(both, only1, only2)``; engine 1 holds ``both + only1`` branches, engine 2
    ``both + only2``; the join buffer holds ``only1 + only2`` finished branches.  Stable iff each
    engine's load ``lambda m_j / capacity_j < 1`` (the join adds no work).
    """
    t0 = time.perf_counter()
    if isinstance(engines, Engine):
        engines = (engines, engines)
    e1, e2 = engines
    lam = workload.arrival_rate_per_s
    m1, m2 = (tokens_per_request(e1, workload), tokens_per_request(e2, workload)) if branch_tokens is None else (
        real("branch_tokens[0]", branch_tokens[0], positive=True), real("branch_tokens[1]", branch_tokens[1], positive=True))
    cap = integer("cap", cap, minimum=2)
    mu1 = _service_rates(e1, 2 * cap, m1)
    mu2 = _service_rates(e2, 2 * cap, m2)

    def frac(a, b):
        n = a + b
        return np.where(n > 0, a / np.maximum(n, 1), 0.0)

    events = [
        (lambda a, b, c: np.full(a.shape, lam), (1, 0, 0)),
        # engine 1 finishes a branch of a "both" request -> it waits for branch 2 (only2)
        (lambda a, b, c: mu1[a + b] * frac(a, b), (-1, 0, 1)),
        # engine 1 finishes the last branch of an only1 request -> it leaves
        (lambda a, b, c: mu1[a + b] * frac(b, a), (0, -1, 0)),
        (lambda a, b, c: mu2[a + c] * frac(a, c), (-1, 1, 0)),
        (lambda a, b, c: mu2[a + c] * frac(c, a), (0, 0, -1)),
    ]
    caps_tok = (max_throughput(e1).tokens_per_s, max_throughput(e2).tokens_per_s)
    loads = (lam * m1 / caps_tok[0], lam * m2 / caps_tok[1])
    unstable = None
    if max(loads) >= 1:
        unstable = f"branch engine loads {loads[0]:.3f}, {loads[1]:.3f}: one is >= 1"
    return _ctmc("fork-join", ("both", "only1", "only2"), [cap] * 3, events,
                 {"arrival_rate_per_s": lam, "branch_tokens": (m1, m2), "loads": loads, "unstable_reason": unstable},
                 t0)


def rybko_stolyar(arrival_rate_per_s: float, means=(0.1, 0.6, 0.1, 0.6), *, priority: str = "exit",
                  cap=12, rate_b_per_s: float | None = None) -> NetworkChain:
    """The Rybko-Stolyar network as a truncated chain on ``(x1, x2, x3, x4)``.

    Parameters
    ----------
    arrival_rate_per_s : float
        ``lambda`` of route A (and of route B unless ``rate_b_per_s``).
    means : (m1, m2, m3, m4)
        Mean service times in seconds of classes 1..4 (station 1 serves 1 and 4, station 2 serves 3
        and 2).
    priority : {"exit", "entry"}
        ``"exit"``: station 1 prefers class 4, station 2 prefers class 2 (the unstable ordering).
    cap : int or (int, int, int, int)
        At most ``cap`` jobs per class (one cap, or one per class: the low-priority classes of a
        heavy station need larger caps than the others).

    Notes
    -----
    Virtual station: in the states where class 2 is served while class 4 is empty and class 3
    waits (or the mirror image), only one of the two exit classes is in service and the work
    ``W = m2 (x1 + x2) + m4 (x3 + x4)`` grows at ``lambda (m2 + m4) - 1`` per second; when
    ``lambda (m2 + m4) > 1`` that drift is positive although both stations have load below one.
    """
    t0 = time.perf_counter()
    lam = real("arrival_rate_per_s", arrival_rate_per_s, positive=True)
    lamb = lam if rate_b_per_s is None else real("rate_b_per_s", rate_b_per_s, positive=True)
    if len(means) != 4:
        raise ParameterError("means", means, "four mean service times (m1, m2, m3, m4)")
    m1, m2, m3, m4 = (real(f"means[{i}]", v, positive=True) for i, v in enumerate(means))
    if priority not in ("exit", "entry"):
        raise ParameterError("priority", priority, "'exit' or 'entry'")
    caps = _class_caps(cap, 4)
    exitp = priority == "exit"

    def s1(x1, x2, x3, x4):  # station 1: classes 1 and 4
        first = x4 > 0 if exitp else x1 > 0
        return first, ~first & ((x1 > 0) if exitp else (x4 > 0))

    def s2(x1, x2, x3, x4):  # station 2: classes 3 and 2
        first = x2 > 0 if exitp else x3 > 0
        return first, ~first & ((x3 > 0) if exitp else (x2 > 0))

    events = [
        (lambda *x: np.full(x[0].shape, lam), (1, 0, 0, 0)),
        (lambda *x: np.full(x[0].shape, lamb), (0, 0, 1, 0)),
        # station 1 serving class 4 (exit) or class 1
        (lambda *x: np.where(s1(*x)[0] if exitp else s1(*x)[1], 1 / m4, 0.0), (0, 0, 0, -1)),
        (lambda *x: np.where(s1(*x)[1] if exitp else s1(*x)[0], 1 / m1, 0.0), (-1, 1, 0, 0)),
        # station 2 serving class 2 (exit) or class 3
        (lambda *x: np.where(s2(*x)[0] if exitp else s2(*x)[1], 1 / m2, 0.0), (0, -1, 0, 0)),
        (lambda *x: np.where(s2(*x)[1] if exitp else s2(*x)[0], 1 / m3, 0.0), (0, 0, -1, 1)),
    ]
    rho1 = lam * m1 + lamb * m4
    rho2 = lamb * m3 + lam * m2
    unstable = None
    if rho1 >= 1 or rho2 >= 1:
        unstable = f"station loads {rho1:.3f}, {rho2:.3f}: a station at or above load 1 is unstable under any policy"
    elif exitp and lam * m2 + lamb * m4 > 1:
        unstable = (f"lambda m2 + lambda_B m4 = {lam * m2 + lamb * m4:.3f} > 1: the virtual station {{2, 4}} is "
                    "overloaded under exit priorities (Rybko-Stolyar)")
    return _ctmc(f"rybko-stolyar ({priority} priority)", ("x1", "x2", "x3", "x4"), caps, events,
                 {"arrival_rate_per_s": lam, "rate_b_per_s": lamb, "means": (m1, m2, m3, m4), "priority": priority,
                  "station_loads": (rho1, rho2), "virtual_load": lam * m2 + lamb * m4,
                  "unstable_reason": unstable}, t0)


def _class_caps(cap, n: int) -> list:
    """``cap`` as ``n`` per-class caps (one integer for all, or ``n`` integers), each at least 2."""
    if isinstance(cap, (list, tuple)):
        if len(cap) != n:
            raise ParameterError("cap", cap, f"one integer or {n} integers (one cap per class)")
        return [integer(f"cap[{i}]", c, minimum=2) for i, c in enumerate(cap)]
    return [integer("cap", cap, minimum=2)] * n


def virtual_station_work(chain: NetworkChain) -> np.ndarray:
    """``W = m2 (x1 + x2) + m4 (x3 + x4)`` for a Rybko-Stolyar chain."""
    _m1, m2, _m3, m4 = chain.inputs["means"]
    x = chain.coords()
    return m2 * (x["x1"] + x["x2"]) + m4 * (x["x3"] + x["x4"])


def rybko_stolyar_symbolic():
    """Per-station loads and the virtual-station drift of the Rybko-Stolyar network (sympy).

    Returns a dict of expressions in ``lambda, m1..m4``: ``station1 = lambda (m1 + m4)``,
    ``station2 = lambda (m2 + m3)``, and ``virtual_drift = lambda (m2 + m4) - 1``, the growth rate of
    ``W = m2 (x1 + x2) + m4 (x3 + x4)`` in the states where only one exit class is in service.
    The network is stable under exit priorities iff all three conditions hold (Dai 1995 fluid
    model; Rybko & Stolyar 1992).
    """
    import sympy as sym

    lam, m1, m2, m3, m4 = sym.symbols("lambda m1 m2 m3 m4", positive=True)
    serve2 = m2 * (1 / m2)  # one class-2 completion (rate 1/m2) removes m2 units of W
    drift = sym.simplify(lam * (m2 + m4) - serve2)
    return {"station1": lam * (m1 + m4), "station2": lam * (m2 + m3), "virtual_drift": drift,
            "symbols": (lam, m1, m2, m3, m4)}
