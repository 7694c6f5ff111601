"""Truncated Markov chains of small networks with memoryless hops.

Networks run in continuous time (engines are not synchronised, so there is no common batch
boundary); each model is a continuous-time chain on class counts, uniformised into a DTMC
(``P = I + Q / Lambda``) so the same sparse solver and drift tools apply.  Transitions that
would leave the truncation box are dropped (the chain stays put) and their stationary
probability flow is reported as ``lost_mass`` (per uniformised step).

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
from ..capacity import max_throughput
from ..engine import Engine
from ..errors import ParameterError
from ..results import Status, plain
from .solve import stationary
from .state import StateSpace

__all__ = ["NetworkChain", "NetworkResult", "parallel_engines", "rybko_stolyar", "virtual_station_work"]


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

    def solve(self, method="auto", *, tol=1e-10, tolerance=1e-6) -> "NetworkResult":
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


@dataclass(frozen=True)
class NetworkResult:
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
        dests.append(np.where(out, -1, space.index(*new)))
        outs.append(out)
    total = np.sum(rates, axis=0)
    Lam = float(total.max()) * 1.0001
    rows, cols, vals = [], [], []
    lost = np.zeros(S)
    stay = np.ones(S)
    src = np.arange(S)
    for r, d, o in zip(rates, dests, outs):
        keep = (r > 0) & ~o
        rows.append(src[keep])
        cols.append(d[keep])
        vals.append(r[keep] / Lam)
        stay -= np.where(keep, r / Lam, 0.0)
        lost += np.where(o & (r > 0), r / Lam, 0.0)
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
        Poisson arrivals; each request is one memoryless hop of mean ``m_p + m_d`` tokens.
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
    m = workload.mean_tokens
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


def rybko_stolyar(arrival_rate_per_s: float, means=(0.1, 0.6, 0.1, 0.6), *, priority: str = "exit",
                  cap: int = 12, rate_b_per_s: float | None = None) -> NetworkChain:
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
    cap : int
        At most ``cap`` jobs per class.

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
    cap = integer("cap", cap, minimum=2)
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
    return _ctmc(f"rybko-stolyar ({priority} priority)", ("x1", "x2", "x3", "x4"), [cap] * 4, events,
                 {"arrival_rate_per_s": lam, "rate_b_per_s": lamb, "means": (m1, m2, m3, m4), "priority": priority,
                  "station_loads": (rho1, rho2), "virtual_load": lam * m2 + lamb * m4,
                  "unstable_reason": unstable}, t0)


def virtual_station_work(chain: NetworkChain) -> np.ndarray:
    """``W = m2 (x1 + x2) + m4 (x3 + x4)`` for a Rybko-Stolyar chain."""
    m1, m2, m3, m4 = chain.inputs["means"]
    x = chain.coords()
    return m2 * (x["x1"] + x["x2"]) + m4 * (x["x3"] + x["x4"])
