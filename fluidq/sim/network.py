"""Event-driven simulation of a network of LLM engines.

Each station runs its scheduler through the policy protocol of :mod:`fluidq.policies.base`: when a
station is free and has work, it builds a :class:`~fluidq.policies.base.QueueView` of its residents
(in the station's class-priority order, FCFS within a priority level, by arrival at the station),
calls ``policy.select(view)`` and runs the batch for ``t(b)`` seconds.  Events are external
arrivals and batch completions; a request that finishes a hop moves on along its route at once:
probabilistic choices draw from ``rng``, routers pick an engine at random (given probabilities) or
by join-the-shortest-queue (requests or remaining tokens), a fork sends the request down every
branch, and a join releases it when every branch and the main line have arrived.

Order at equal times: external arrivals come first (a request arriving at the instant a batch ends
joins the next batch, as in :func:`fluidq.simulate`; a test checks that a one-engine network gives the
single-engine simulator's requests, exactly coincident times included), then batch completions: the
batch that started first ends first, then the station listed first.  The event-skipping path knows
when each batch inside a run started, so it orders equal times exactly as the generic path does (a
request routed at the instant another station's batch ends joins that station's next batch or the one
after by this rule, in both).

The compiled event loop (``method="auto"``, the default, where it applies): :mod:`fluidq.kernel.network`
runs every station on one event clock in machine code, rule for rule as the Python event-skipping path
below (tests check the two give the same run, bit for bit), for networks whose stations run a
built-in scheduler in FCFS order (Sarathi-Serve and vLLM with chunked prefill in runs of identical batches,
the others batch by batch; a station with a KV cache batch by batch under the memory rules below, with any
memory model, prefix caching included; a context-aware batch time and a first token from the prefill with or
without a cache) and whose classes route through hops to stations or to random or join-the-shortest-queue
routers, probabilistic choices and fork-joins, with class priorities and fixed or random lengths (every draw
from ``rng`` in the Python path's order).  Composition batch times at KV stations, user policies and orderings,
and ``check_batches`` run on the Python path.

Runs of identical batches (``method="auto"`` outside the compiled loop, or ``"python"``): a station
running a decode-first chunked scheduler in FCFS order (Sarathi-Serve, vLLM with chunked prefill) without
``k_max`` advances a run of batches whose composition cannot change -- no request finishes, no prompt completes, nothing
arrives -- in one step, with a virtual decode clock (every decoding request gets one token per batch;
a heap holds the round at which each finishes) and the head prompt's chunk; an arrival cuts the run at
the batch in progress.  Requests' times, counts in system and the recorded token backlogs are those of
``select(view)`` every batch (tests check them equal).

KV cache: a station whose engine has ``kv_capacity_tokens`` applies the single-engine kernel's memory
rules batch by batch (:class:`fluidq.kernel.memory.StationMemory`: rejection at arrival, admission,
preemption by the engine's ``memory`` -- token or block KV, prefix caching, reservation, recompute or swap,
victim rule) and never skips runs (memory can bind at any batch, so it always hands over to
``select(view)``); its view is every resident, in arrival order.

Every station is the kernel's engine itself: a fed :class:`fluidq.kernel.step.EngineRun` (``simulate``'s
``select()`` loop) that the network's clock offers its hops to and steps -- ``begin`` at a batch's start,
``finish`` at its end -- so its batch rule, batch time, token accounting, first token from the prefill and
(with a KV cache) memory pass are written once.  A station without a KV cache hands its EngineRun its
per-priority deques (``queues``), which its run-skipping path reads and writes too.  The horizon
means what it means in :func:`fluidq.simulate`: no batch starts at or after it, and the batches in
progress are completed.

Cost per batch: for the built-in schedulers (a :class:`~fluidq.policies.Scheduler` with a static
order such as FCFS) the view holds only the residents that can enter the batch -- the first
``min(b_max, k_max)`` decoding requests and the prefilling requests whose remaining prompts cover
the budget, in priority order -- so a batch costs ``O(b_max)``, not ``O(queue)``, however long the
queue grows; other policies see every resident.

``fluidq.network.sim`` (and ``fluidq.network.simulate_network``) is the old path of this module,
registered by it when ``fluidq`` is imported, so that the topology package imports no simulator.

References
----------
Li, Dai, Peng, arXiv:2504.07347 (engine model, constraints 6a-6d, networks of engines).
"""
from __future__ import annotations

import gc
import heapq
import itertools
import math
import operator
import sys
import time as _time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .._validate import real
from ..errors import ParameterError, TopologyError
from ..policies.base import RequestState
from ..policies.batch_rule import NO_CAP, budget_split, fits
from ..results import Result, line_slope, plain
from ..network.model import Choice, Fork, Hop, Join, Network

INF = math.inf
NAN = math.nan
# the virtual decode clock's heap holds one int per decoding request, (finishing round, rid) packed as
# ``round << RID_BITS | rid``: ordered as the pair, and compared much faster than a tuple
RID_BITS = 40
RID_MASK = (1 << RID_BITS) - 1
MAX_GRID = 1_000_000  # most recorded grid points of one run
#: most requests one run may be expected to hold (arrivals over the horizon plus the initial ones);
#: each is a Python object and several events, so more would not finish (or fit in memory)
MAX_REQUESTS = 50_000_000
#: most requests expected over all the replications of one call (the runs are made one after another)
MAX_TOTAL_REQUESTS = 100_000_000

__all__ = ["NetworkSimResult", "check_run", "replicate_network", "simulate_network"]


@dataclass(frozen=True)
class NetworkSimResult(Result):
    """One simulated run.

    Attributes
    ----------
    times_s : ndarray
        Sampling grid.
    in_system : dict
        ``{class: requests of that class in the network}`` on the grid.
    buffer_tokens : dict
        ``{buffer label: remaining tokens}`` on the grid (labels as in the fluid model).
    station_tokens, station_requests : dict
        ``{station: remaining tokens / resident requests}`` on the grid.
    completed : dict
        Requests of each class that left the network.
    mean_sojourn_s : dict
        Mean time in the network of the completed requests of each class; ``None`` for a class none
        of whose requests completed (undefined, not a number).
    batches, events : int
        Batches run and events processed.
    horizon_s, wall_s : float
        Simulated and wall-clock seconds.
    seed : object
        The entropy of the generator used (for replay).
    violations : tuple
        Constraint violations found in batches (should be empty for a valid policy).
    blocked : tuple
        ``(station, hop)`` pairs of requests a policy reported it can never schedule.
    preemptions, rejected : dict
        ``{station: count}``: KV-cache preemptions, and hops refused at arrival because the request
        can never fit in the station's KV cache (zero for a station without ``kv_capacity_tokens``).
    hops : dict or None
        With ``record_hops=True``: ``{"station", "arrival_s", "finish_s", "preemptions"}`` arrays, one
        entry per finished hop (station index into ``network.stations``, arrival at the station, end of
        the hop, preemptions it suffered), in the order the hops finished.
    network : Network or None
        The network simulated (kept for :attr:`inputs`; not compared, not in :meth:`to_dict`).
    inputs : dict
        What the run was: ``network`` (its :meth:`~fluidq.network.Network.to_dict`: stations with their
        engines and policies, routers, classes), ``horizon_s`` and ``seed``.
    """

    times_s: np.ndarray
    in_system: dict
    buffer_tokens: dict
    station_tokens: dict
    station_requests: dict
    completed: dict
    mean_sojourn_s: dict
    batches: int
    events: int
    horizon_s: float
    wall_s: float
    seed: object = None
    violations: tuple = ()
    blocked: tuple = ()
    preemptions: dict = field(default_factory=dict)
    rejected: dict = field(default_factory=dict)
    hops: dict | None = field(default=None, repr=False)
    network: Network | None = field(default=None, repr=False, compare=False)

    @property
    def inputs(self) -> dict:
        """The network (its ``to_dict()``; ``None`` for a result made without it), the horizon and the seed,
        JSON-ready."""
        return plain({"network": None if self.network is None else self.network.to_dict(),
                      "horizon_s": self.horizon_s, "seed": self.seed})

    @property
    def total_in_system(self) -> np.ndarray:
        return np.sum([v for v in self.in_system.values()], axis=0)

    @property
    def total_tokens(self) -> np.ndarray:
        return np.sum([v for v in self.buffer_tokens.values()], axis=0)

    def growth_rate(self, *, start_fraction: float = 0.25, tokens: bool = False) -> float:
        """Least-squares slope (per second) of requests (or tokens) in system over the last part of the run."""
        t = self.times_s
        y = self.total_tokens if tokens else self.total_in_system
        m = t >= t[0] + start_fraction * (t[-1] - t[0])
        if m.sum() < 3:
            return float("nan")
        return line_slope(t[m], y[m])  # the one backlog slope (fluidq.results)

    @property
    def us_per_batch(self) -> float:
        return 1e6 * self.wall_s / max(self.batches, 1)

    def to_dict(self) -> dict:
        return plain({"horizon_s": self.horizon_s, "batches": self.batches, "events": self.events,
                      "wall_s": self.wall_s, "completed": self.completed, "mean_sojourn_s": self.mean_sojourn_s,
                      "final_in_system": {k: float(v[-1]) for k, v in self.in_system.items()},
                      "growth_rate_per_s": self.growth_rate(), "violations": list(self.violations),
                      "blocked": [list(b) for b in self.blocked], "seed": self.seed,
                      "preemptions": self.preemptions, "rejected": self.rejected})

    def plot(self, ax=None, path=None, **kw):
        from ..plotting.network import plot_network_sim

        return plot_network_sim(self, ax=ax, path=path, **kw)


class _Task(RequestState):
    """One hop of one request at one station: the scheduler's :class:`RequestState` and the hop's place in
    the network, one object per hop.

    Made by the simulator's ``submit``, which sets every field itself (a test checks that a task's
    RequestState fields are those of the RequestState constructor): ``job`` (class index, arrival time in
    the network), ``cont`` (where the request goes after this hop; ``None``: it leaves the network),
    ``rank`` (priority rank at the station), ``label`` (buffer label, as in the fluid model), and ``d0``,
    ``g0`` (decoded tokens and decode round when the station's virtual decode clock took it over).
    Compared and hashed by identity (two residents are never the same request).
    """

    __slots__ = ("cont", "d0", "g0", "job", "label", "rank")
    __eq__ = object.__eq__
    __hash__ = object.__hash__


class _JoinRec:
    __slots__ = ("cont", "waiting")

    def __init__(self, waiting):
        self.waiting = waiting
        self.cont = None


class _StationState:
    def __init__(self, idx, station, windowed):
        self.idx = idx
        self.s = station
        self.engine = station.engine
        self.policy = station.policy
        self.rank = {h: k for k, h in enumerate(station.priority)}
        self.low = len(station.priority)
        # rank -> deque of tasks in prefill (station-arrival order) / decoding (prefill-end order); one deque
        # per rank made here, so that the dicts iterate in priority order
        self.pre: dict = {r: deque() for r in range(self.low + 1)}
        self.dec: dict = {r: deque() for r in range(self.low + 1)}
        self.pre_qs = tuple(self.pre.values())  # the prefill deques in priority order (never replaced)
        self.tasks: dict = {}  # rid -> task
        self.busy = False
        self.work = 0          # remaining tokens of residents
        self.windowed = windowed
        self.bt_cache: dict = {}
        self.context_aware = getattr(self.engine.batch_time, "kind", "") == "context_aware"
        # event-skipping state (see _fast_budget): virtual decode clock and the current run
        self.fast_budget = None
        self.G = 0
        self.fheap: list = []  # packed (finishing round, rid) of the decoding requests
        self.virtual = False
        self.ndec = 0
        self.dec_garbage = 0  # finished requests left in the decode queues while the decode clock is virtual
        self.dec_label: dict = {}
        self.run = None
        self.routing = False
        self.mem = None  # StationMemory of a station with a KV cache (then every batch runs select(view))
        self.engine_run = None  # the kernel's EngineRun of the station (fed by the network), see _fed_engine
        self.residents = None  # (without a KV cache) the EngineRun's requests by id, which are ``tasks``
        # vLLM's engine: the iteration completing a prefill gives the first output token (no run skipping)
        self.emit = bool(getattr(self.engine, "prefill_emits_token", False))

    def current_work(self, now, arriving, cur):
        """Remaining tokens of the residents at ``now`` (inside a run, the batches done so far count).

        A batch of the run ending exactly at ``now`` counts as done when its end would be processed before
        the current event: never for an external arrival (arrivals come first at equal times), and for a
        request routed by the batch end being processed, when that batch's key ``(start, station index)``
        is below ``cur``, the current event's (the order of the generic path's events).
        """
        if self.run is None:
            return self.work
        t0, tau, k, _, _, btok = self.run
        t, j = t0, 0
        while j < k:
            start = t
            t += tau
            if t > now or (t == now and (arriving or (start, self.idx) > cur)):
                break
            j += 1
        return self.work - j * btok

    # -- a station without a KV cache: these deques are its EngineRun's queues (``EngineRun(queues=...)``) --
    def add(self, task):
        """An offered hop (the network's ``submit`` inlines this)."""
        self.tasks[task.rid] = task
        self.pre[task.rank].append(task)

    def end(self, batch, done):
        """After the EngineRun served ``batch``'s tokens: the decoding requests that finished (``done``, in
        batch order) leave their decode deques, a prompt that completed leaves its prefill deque for its
        decode deque (or, with nothing left to decode, finishes); return the finished, the decoders first,
        then the prompts (batch order)."""
        tasks, dec, dec_label = self.tasks, self.dec, self.dec_label
        if done:
            for t in done:
                dec[t.rank].remove(t)
                dec_label[t.label] -= 1
            self.ndec -= len(done)
        for rid, _ in batch.prefill:
            t = tasks[rid]
            if t.prefilled >= t.prompt_tokens:
                self.pre[t.rank].remove(t)
                if t.decoded < t.output_tokens:
                    dec.setdefault(t.rank, deque()).append(t)
                    dec_label[t.label] = dec_label.get(t.label, 0) + 1
                    self.ndec += 1
                else:
                    done.append(t)
        return done

    def view_requests(self, b_max, k_max):
        if not self.windowed:
            items = [t for r in sorted(self.pre.keys() | self.dec.keys())
                     for t in list(self.dec.get(r, ())) + list(self.pre.get(r, ()))]
            items.sort(key=lambda t: (t.rank, t.arrival_s, t.rid))
            return items
        lim = b_max if k_max is None else min(b_max, k_max)
        out = []
        n = 0
        for r in sorted(self.dec):
            for t in self.dec[r]:
                if n >= lim:
                    break
                out.append(t)
                n += 1
            if n >= lim:
                break
        cum, n = 0, 0
        for r in sorted(self.pre):
            for t in self.pre[r]:
                if (cum >= b_max and n >= 1) or n >= lim + 8:
                    break
                out.append(t)
                need = t.prompt_tokens - t.prefilled
                if need <= b_max or self.policy_chunks:
                    cum += min(need, b_max)
                n += 1
            if (cum >= b_max and n >= 1) or n >= lim + 8:
                break
        # decoding requests first (by priority, then in the order their prefill ended), then prefilling
        # requests (by priority, then arrival at the station): a built-in scheduler only compares
        # requests of the same kind, so this is its priority/FCFS order
        return out

    view = view_requests  # (the EngineRun's queues: the requests its policy sees)


def _windowable(policy):
    """True for a built-in Scheduler whose ordering keeps the given (priority, FCFS) order."""
    from ..policies.orderings import Ordering
    from ..policies.schedulers import Scheduler

    return isinstance(policy, Scheduler) and type(policy.order).order is Ordering.order


def _fast_budget(station):
    """The token budget when the station can skip runs of identical batches, else ``None``.

    Eligible: a built-in :class:`~fluidq.policies.Scheduler` that is decode-first with mixed batches and
    chunked prefill (Sarathi-Serve, vLLM with chunked prefill) in FCFS order, without a batch-size limit
    below its budget (one at or above it never binds), with a batch time of batch tokens alone.
    """
    from ..policies.orderings import Ordering
    from ..policies.schedulers import Scheduler

    pol, eng = station.policy, station.engine
    if not (isinstance(pol, Scheduler) and pol.mixed and pol.chunked and pol.priority == "decode"
            and type(pol.order).order is Ordering.order) or getattr(eng, "prefill_emits_token", False):
        return None
    budget = eng.b_max if pol.b_max is None else min(eng.b_max, pol.b_max)
    ks = [k for k in (eng.k_max, pol.k_max) if k is not None]
    if (ks and min(ks) < budget) or getattr(eng.batch_time, "kind", "") == "context_aware":
        return None  # a k_max at or above the budget never binds (every request in a batch takes a token)
    return budget


class _TauCache(dict):
    """``{b: t(b)}`` of a station without a KV cache, filled on demand (``t(b)`` by ``fn(b)``) beyond the
    table made up front: the batch time its EngineRun charges (``tau_b[b]``) and its run-skipping path reads."""

    __slots__ = ("fn",)

    def __init__(self, table, fn):
        super().__init__(table)
        self.fn = fn

    def __missing__(self, b):
        v = self[b] = float(self.fn(b))
        return v


def _fed_engine(s, swap_s, buf_tokens, horizon, check_batches, violations, blocked):
    """Give station ``s`` its engine: the kernel's :class:`~fluidq.kernel.step.EngineRun`, fed by the network
    (``fed=True``) and stepped by its clock (``begin`` at a batch's start, ``finish`` at its end), so that
    the batch rule, the batch time, the token accounting and the first token from the prefill are the
    kernel's, written once.  It keeps the buffers' remaining tokens (``buf_tokens``, by each task's label):
    served tokens come off, a preemption by recomputation puts the discarded ones back, a prefix-cache hit
    takes the reused ones off.  Its requests by id are the station's ``tasks``; never-schedulable prompts
    and, with ``check_batches``, batch violations are reported into ``blocked`` and ``violations``.

    With ``kv_capacity_tokens``: the single-engine kernel's batch-time table and memory rules
    (:class:`~fluidq.kernel.memory.StationMemory`), every resident in view in arrival order.  Without: the
    station's per-priority deques are the run's ``queues`` (its view in hop-priority order, the built-in
    schedulers' window; shared with the run-skipping path), its batch time ``t(b)`` from the station's
    table (``t(b, kv)`` for a context-aware time, ``kv`` the decoders' contexts), its remaining tokens the
    station's ``work`` (the clock hands it over around ``finish``)."""
    from ..kernel.step import EngineRun
    from .core import _tau_table

    eng, name = s.engine, s.s.name

    def on_violation(t, bad):
        violations.extend(f"{name} t={t:.6g}: {m}" for m in bad[:3])

    def on_blocked(rids):
        tasks = run.by_id
        for rid in rids:
            blocked.add((name, tasks[rid].label))

    if eng.kv_capacity_tokens is not None:
        tau_b, ks = _tau_table(eng)
        run = EngineRun((), (), (), policy=s.policy, b_max=eng.b_max, k_max=eng.k_max, tau_b=tau_b, ks=ks,
                        horizon=horizon, record=False, check=bool(check_batches), kv_cap=eng.kv_capacity_tokens,
                        preemption=eng.memory.preemption, swap_s_per_token=swap_s, memory=eng.memory,
                        compose=getattr(eng.batch_time, "composition_time", None), emit_at_prefill=s.emit,
                        fed=True, labels=buf_tokens, on_blocked=on_blocked, on_violation=on_violation)
        s.mem = run.mem
    else:
        bt = eng.batch_time
        if s.context_aware:  # t(b, kv) = t(b, 0) + kv_s_per_token * kv, as the engine's call adds them
            ks = float(bt.kv_s_per_token)
            tau_b = s.bt_cache = _TauCache({}, lambda b: bt(b, 0))
        else:
            ks = 0.0
            tau_b = s.bt_cache = _TauCache(_batch_time_table(eng), bt)
        run = EngineRun((), (), (), policy=s.policy, b_max=eng.b_max, k_max=eng.k_max, tau_b=tau_b, ks=ks,
                        horizon=horizon, record=False, check=bool(check_batches), emit_at_prefill=s.emit,
                        fed=True, labels=buf_tokens, on_blocked=on_blocked, on_violation=on_violation, queues=s)
        s.residents = run.by_id
    s.engine_run = run
    s.tasks = run.by_id


_TABLE_MAX = 1 << 15


def _batch_time_table(engine):
    """``{b: t(b)}`` for ``b = 1..b_max``, from one vectorised call (as the single-engine simulator does).

    Element-wise evaluation gives the scalar call's floats; a batch-time model that cannot be evaluated
    on an array, or a ``b_max`` above ``_TABLE_MAX``, leaves the table empty (filled on demand).
    """
    tab = _batch_time_array(engine)
    return {} if tab is None else dict(enumerate(tab.tolist(), 1))


def _batch_time_array(engine):
    """``t(b)`` for ``b = 1..b_max`` as an array from one vectorised call, or ``None`` (see
    :func:`_batch_time_table`)."""
    if engine.b_max > _TABLE_MAX:
        return None
    try:
        tab = np.asarray(engine.batch_time(np.arange(1, engine.b_max + 1, dtype=float)), dtype=float)
    except Exception:  # noqa: BLE001 -- fall back to scalar calls, which report their own errors
        return None
    if tab.shape != (engine.b_max,):
        return None
    return tab


def _kernel_unsupported(network: Network, check_batches) -> str | None:
    """Why ``network`` needs the Python event loop (``None``: the compiled loop of
    :mod:`fluidq.kernel.network` runs it).

    The compiled loop covers stations running a built-in scheduler in FCFS order (runs of identical batches
    where :func:`_fast_budget` allows them, batch by batch otherwise: Orca, vLLM, FasterTransformer,
    ``k_max``, a context-aware batch time, an engine whose prefill gives the first token, as the Python
    path): without a KV cache, with a batch time of the batch's tokens (a context-aware time's base) that
    tabulates in one call (:func:`_batch_time_table`); with a KV cache (any memory model: token or block KV,
    reservation, victim rule, recompute or swap, prefix caching), with the Python path's batch-time table
    (context-aware times included) and a first token from the prefill or not -- but not a composition batch
    time or a ``b_max`` above :data:`fluidq.sim.core.EAGER_TAU_TOKENS`; and classes whose routes are hops to
    stations or to random or join-the-shortest-queue routers, probabilistic choices and fork-joins (nested
    too), with fixed or random lengths (every draw from ``rng`` in the Python path's order).  User policies and
    orderings other than FCFS, ``check_batches`` and the cases excluded above stay on the Python path (the
    returned reason names the first one met).
    """
    from .core import EAGER_TAU_TOKENS

    if check_batches:
        return "check_batches=True checks every batch in Python"
    for st in network.stations:
        pol = st.policy
        if not _windowable(pol) or type(pol).select is not _scheduler_select() or \
                type(pol).budgets is not _scheduler_select(budgets=True):
            return f"station {st.name!r} does not run a built-in scheduler in FCFS order"
        if st.engine.kv_capacity_tokens is not None:  # (batch by batch, the Python path's memory rules)
            if getattr(st.engine.batch_time, "composition_time", None) is not None:
                return f"station {st.name!r} has a KV cache and a composition batch time"
            if st.engine.b_max > EAGER_TAU_TOKENS:
                return (f"station {st.name!r} has a KV cache and a b_max above {EAGER_TAU_TOKENS} "
                        "(a lazy batch-time table)")
            continue
        if _batch_time_array(st.engine) is None:
            return f"station {st.name!r}'s batch time cannot be tabulated in one call up to b_max"
    for c in network.classes:
        if not c.route:
            return f"class {c.name!r} has an empty route"
    for r in network.routers:
        if r.policy != "random" and r.policy != "jsq":
            return f"router {r.name!r}'s policy {r.policy!r}"
    return None


def _scheduler_select(budgets=False):
    """``Scheduler.select`` (or ``Scheduler.budgets``): a subclass that overrides either runs in Python."""
    from ..policies.schedulers import Scheduler

    return Scheduler.budgets if budgets else Scheduler.select


def _initial_hops(network, initial):
    """``initial`` as (class index, step index, count) triples, checked as the Python path checks them."""
    out = []
    for label, count in (initial or {}).items():
        found = None
        for ci, c in enumerate(network.classes):
            for k, stp in enumerate(c.route):
                if isinstance(stp, Hop) and stp.name == label:
                    found = (ci, k)
        if found is None:
            raise TopologyError(f"initial: {label!r} is not a top-level hop of any class route")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ParameterError(f"initial[{label!r}]", count, "a whole number of requests >= 0")
        out.append((found[0], found[1], int(count)))
    return out


def _run_kernel(network, horizon, gen, seed, initial, dt_rec, max_batches, wall0, record_hops, swap_s=0.0):
    """:func:`simulate_network`'s ``method="auto"`` run on the compiled loop (``_kernel_unsupported`` is
    None): the same arrivals, router uniforms and length draws from ``gen``, in the same order, so the same
    results as the Python path."""
    from ..kernel.network import (H_A, H_B, H_C, H_CLS, H_D, H_DSRC, H_INFORK, H_KIND, H_NEXT, H_P, H_PSRC, H_RANK0,
                                  H_ROUTER, H_TGT, K_CHOICE, K_END, K_FORK, K_HOP, K_JOIN, LBN, R_ENG0, S_EMIT,
                                  S_MEMORY, S_OPTIONS, UB, run_network)
    from .core import _tau_table
    from ..network.model import NoTokens
    from ..workload.lengths import Fixed

    i64 = np.int64
    stations = network.stations
    n_st = len(stations)
    sidx = {s.name: i for i, s in enumerate(stations)}
    routers = {r.name: (i, r) for i, r in enumerate(network.routers)}
    fm = network.flow
    pooled = set(fm.pooled)
    labels = {b.label: None for b in fm.buffers}
    seen_order = {lab: i + 1 for i, lab in enumerate(labels)}

    # steps: one row per step of every sequence of every class route (depth first), each sequence followed by an
    # end row that says what comes after it; sub/subp: the choices' options and the forks' branches
    rows: list = []  # [kind, step, class, next, a, b, c, in a fork's branch]
    sub: list = []
    subp: list = []
    first, top = [], []  # each class's first step; the rows of its route's top-level steps
    n_forks = 0
    hops_in: list = []  # hop rows per class (a request takes each at most once)
    choices_in: list = []

    def emit(ci, steps, pk, parg, infork, counts):
        """Rows for the sequence ``steps`` (ending in an end row of kind ``pk``, argument ``parg``); return its
        rows."""
        base = len(rows)
        idx = list(range(base, base + len(steps) + 1))
        rows.extend([None] * (len(steps) + 1))
        scope: dict = {}  # fork name -> its index among the class's forks (a join joins the fork before it)
        for i, stp in enumerate(steps):
            nxt = idx[i + 1]
            if isinstance(stp, Hop):
                rows[idx[i]] = [K_HOP, stp, ci, nxt, 0, 0, 0, infork]
                counts[0] += 1
            elif isinstance(stp, Choice):
                firsts = [emit(ci, opt, 1, nxt, infork, counts)[0] for _, opt in stp.options]
                rows[idx[i]] = [K_CHOICE, stp, ci, nxt, len(sub), len(firsts), 0, infork]
                sub.extend(firsts)
                subp.extend(float(pr) for pr, _ in stp.options)
                counts[1] += 1
            elif isinstance(stp, Fork):
                f = scope[stp.name] = counts[2]
                counts[2] += 1
                firsts = [emit(ci, br, 2, f, True, counts)[0] for br in stp.branches]
                rows[idx[i]] = [K_FORK, stp, ci, nxt, f, len(firsts), len(sub), infork]
                sub.extend(firsts)
                subp.extend([0.0] * len(firsts))
            else:  # a Join: its branches' end rows go on after it (the first join of the fork: the one it waits at)
                f = scope[stp.name]
                rows[idx[i]] = [K_JOIN, stp, ci, nxt, f, 0, 0, infork]
                join_next.setdefault((ci, f), nxt)
        rows[idx[-1]] = [K_END, None, ci, idx[-1], pk, parg, 0, infork]
        return idx

    join_next: dict = {}
    for ci, c in enumerate(network.classes):
        counts = [0, 0, 0]  # hops, choices, forks
        idx = emit(ci, c.route, 0, 0, False, counts)
        first.append(idx[0])
        top.append(idx)
        hops_in.append(counts[0])
        choices_in.append(counts[1])
        n_forks = max(n_forks, counts[2])
    for r in rows:  # a branch's end row: where its fork's main line goes on once every branch has arrived
        if r[0] == K_END and r[4] == 2:
            r[6] = join_next[(r[2], r[5])]
    n_h = len(rows)
    hop = np.zeros((n_h, H_RANK0 + 2 * n_st), dtype=i64)
    for j, (kind, _, ci, nxt, a, b, c_, infork) in enumerate(rows):
        hop[j, H_KIND], hop[j, H_CLS], hop[j, H_NEXT], hop[j, H_A], hop[j, H_B], hop[j, H_C] = kind, ci, nxt, a, b, c_
        hop[j, H_INFORK] = infork
    sources: dict = {}  # id(random length) -> (source index, the length)

    def length_src(length):
        if isinstance(length, (Fixed, NoTokens)):
            return -1
        return sources.setdefault(id(length), (len(sources), length))[0]

    kvst = [s.engine.kv_capacity_tokens is not None for s in stations]
    # (a station with a KV cache shows its policy every resident in arrival order: one rank)
    ranks = [{} if kvst[i] else {h: k for k, h in enumerate(s.priority)} for i, s in enumerate(stations)]
    lows = [0 if kvst[i] else len(s.priority) for i, s in enumerate(stations)]
    stl_sets = [set() for _ in stations]
    lab_ids: dict = {}

    def label_id(name):
        if name not in lab_ids:
            lab_ids[name] = len(lab_ids)
        return lab_ids[name]

    for lab in labels:
        label_id(lab)
    for j, (kind, h, ci, *_) in enumerate(rows):
        if kind == K_HOP:
            is_router = h.engine in routers
            hop[j, H_ROUTER] = 1 if is_router else 0
            hop[j, H_TGT] = routers[h.engine][0] if is_router else sidx[h.engine]
            for col, src, length in ((H_P, H_PSRC, h.prompt_tokens), (H_D, H_DSRC, h.output_tokens)):
                hop[j, src] = length_src(length)
                hop[j, col] = length.n if isinstance(length, Fixed) else 0
            targets = routers[h.engine][1].engines if is_router else (h.engine,)
            for si, s in enumerate(stations):
                hop[j, H_RANK0 + si] = ranks[si].get(h.name, lows[si])
                name = f"{h.name}@{s.name}" if is_router and h.engine not in pooled else h.name
                if s.name in targets:
                    lid = label_id(name)
                    hop[j, H_RANK0 + n_st + si] = lid
                    stl_sets[si].add(lid)
            if j == first[ci] and not is_router and h.name not in seen_order:  # planned at set-up, as the Python path
                seen_order[h.name] = len(seen_order) + 1
    lab_names = list(lab_ids)
    n_lab = len(lab_names)
    seen = np.zeros(n_lab, dtype=i64)
    for name, o in seen_order.items():
        seen[lab_ids[name]] = o
    maxl = max((len(x) for x in stl_sets), default=0)
    stl = np.zeros((n_st, maxl + 1), dtype=i64)
    for si, x in enumerate(stl_sets):
        stl[si, 0] = len(x)
        stl[si, 1:1 + len(x)] = sorted(x)
    maxe = max((len(r.engines) for r in network.routers), default=1)
    rt = np.zeros((max(len(network.routers), 1), R_ENG0 + maxe), dtype=i64)
    rp = np.zeros((max(len(network.routers), 1), maxe))
    for i, r in enumerate(network.routers):
        rt[i, 0] = 0 if r.policy == "random" else (1 if r.count == "requests" else 2)
        rt[i, 1] = len(r.engines)
        for j, e in enumerate(r.engines):
            rt[i, R_ENG0 + j] = sidx[e]
            if r.policy == "random":
                rp[i, j] = r.probabilities[j]
    fast = [_fast_budget(s) for s in stations]
    options = np.zeros((n_st, len(S_OPTIONS)), dtype=i64)  # S_GEN, S_KMAX, S_MIXED, S_CHUNKED, S_CHL, S_PF, S_VB, S_LIM
    for si, s in enumerate(stations):
        pol, eng = s.policy, s.engine
        ks = [k for k in (eng.k_max, pol.k_max) if k is not None]
        lim = eng.b_max if eng.k_max is None else min(eng.b_max, eng.k_max)
        options[si] = (fast[si] is None or kvst[si], min(ks) if ks else 1 << 62, pol.mixed, pol.chunked,
                       pol.chunk_long_prompts,
                       pol.priority == "prefill", eng.b_max, lim)
    # the token budget (the scheduler's own b_max may be lower than the engine's)
    budget = np.array([s.engine.b_max if s.policy.b_max is None else min(s.engine.b_max, s.policy.b_max)
                       for s in stations], dtype=i64)
    nrank = np.array([lo + 1 for lo in lows], dtype=i64)
    tau = np.full((n_st, int(budget.max()) + 1), np.nan)
    tables: dict = {}  # (stations often share one engine)
    mem = np.zeros((n_st, len(S_MEMORY)), dtype=i64)  # S_MEM, S_KVCAP, S_PAGED, S_BS, S_WHOLE, S_MOSTREC, S_SWAP,
    memf = np.zeros((n_st, 2))                          # S_CACHING, S_EMIT; R_KS, R_SWAPS
    for si, s in enumerate(stations):
        nb = int(budget[si])
        if kvst[si]:  # the Python path's table (fluidq.sim.core._tau_table: a context-aware time's base)
            key = ("kv", id(s.engine))
            if key not in tables:
                tab, ks = _tau_table(s.engine)
                tables[key] = (np.asarray(tab[1:], dtype=float), ks)
            tab, ks = tables[key]
            tau[si, 1:nb + 1] = tab[:nb]
            m = s.engine.memory
            paged = not m.default_rules
            mem[si] = (1, s.engine.kv_capacity_tokens, paged, m.block_size if paged else 1,
                       m.reservation == "whole_prompt", m.victim == "most_recent", m.preemption == "swap",
                       paged and m.prefix_caching, bool(getattr(s.engine, "prefill_emits_token", False)))
            memf[si] = (ks, swap_s)
            continue
        if id(s.engine) not in tables:
            tables[id(s.engine)] = _batch_time_array(s.engine)  # (a context-aware time's base)
        tau[si, 1:nb + 1] = tables[id(s.engine)][:nb]
        # batch by batch (see _fast_budget): the prefill's first token, a context-aware time's seconds per KV token
        mem[si, S_MEMORY.index(S_EMIT)] = bool(getattr(s.engine, "prefill_emits_token", False))
        if getattr(s.engine.batch_time, "kind", "") == "context_aware":
            memf[si, 0] = float(s.engine.batch_time.kv_s_per_token)
    # external arrivals, drawn and merged as the Python path does
    a_t, a_c = [], []
    for ci, c in enumerate(network.classes):
        times = c.arrival.times(gen, horizon_s=horizon)
        a_t.append(times)
        a_c.append(np.full(len(times), ci, dtype=i64))
    a_t = np.concatenate(a_t) if a_t else np.zeros(0)
    a_c = np.concatenate(a_c) if a_c else np.zeros(0, dtype=i64)
    order = np.lexsort((a_c, a_t))
    ext_t = np.append(a_t[order].astype(float), math.inf)
    ext_c = np.ascontiguousarray(a_c[order], dtype=i64)
    counts = np.bincount(ext_c, minlength=len(network.classes))
    ini = _initial_hops(network, initial)
    ihop = np.array([top[ci][k] for ci, k, n in ini for _ in range(n)], dtype=i64)
    icls = np.array([ci for ci, k, n in ini for _ in range(n)], dtype=i64)
    jobs = [int(counts[ci]) + sum(n for cj, _, n in ini if cj == ci) for ci in range(len(network.classes))]
    n_tasks = int(sum(jobs[ci] * hops_in[ci] for ci in range(len(network.classes))))  # (each hop at most once)
    # the routers' and choices' uniforms, drawn a block at a time; a random length's draws rewind the generator to
    # the first uniform not used yet, so every draw comes from it in the Python path's order
    uniforms = _Uniforms(gen, UB) if any(r.policy == "random" for r in network.routers) or any(choices_in) else None
    G = int(math.floor(horizon / dt_rec * (1 + 1e-12))) + 1
    grid = np.minimum(np.arange(G) * dt_rec, horizon)
    by_index = {i: length for i, length in sources.values()}  # (the Python path's sample_len: LBN at a time)
    out = run_network(ext_t, ext_c, np.array(first, dtype=i64), hop, rt, rp, stl, tau, budget, nrank, options,
                      len(network.classes), n_lab, seen, ihop, icls, uniforms, grid, horizon=horizon,
                      max_batches=max_batches, record_hops=record_hops, n_tasks=n_tasks, n_sources=len(sources),
                      refill=lambda src: np.array([int(v) for v in by_index[src].sample(gen, LBN).tolist()], dtype=i64),
                      mem=mem if any(kvst) or mem[:, -1].any() or memf[:, 0].any() else None, memf=memf,
                      sub=np.array(sub, dtype=i64), subp=np.array(subp, dtype=float), n_jobs=int(sum(jobs)),
                      n_forks=n_forks)
    cls_names = [c.name for c in network.classes]
    completed = [int(x) for x in out["completed"]]
    soj = out["sojourn_sum"].tolist()
    rin = out["in_system"].astype(float)
    rbuf = out["buffer_tokens"].astype(float)
    rwk = out["station_tokens"].astype(float)
    rnt = out["station_requests"].astype(float)
    met = sorted((int(o), i) for i, o in enumerate(out["seen"]) if o > 0)
    wall = _time.perf_counter() - wall0
    hops = out["hops"]
    return NetworkSimResult(
        times_s=grid, in_system={c: rin[:, i].copy() for i, c in enumerate(cls_names)},
        buffer_tokens={lab_names[i]: rbuf[:, i].copy() for _, i in met},
        station_tokens={s.name: rwk[:, i].copy() for i, s in enumerate(stations)},
        station_requests={s.name: rnt[:, i].copy() for i, s in enumerate(stations)},
        completed=dict(zip(cls_names, completed)),
        mean_sojourn_s={c: (soj[i] / completed[i] if completed[i] else None) for i, c in enumerate(cls_names)},
        batches=out["batches"], events=out["events"], horizon_s=horizon, wall_s=wall, seed=seed,
        violations=(), blocked=tuple(sorted((stations[si].name, lab_names[li]) for si, li in zip(*np.nonzero(
            out["blocked"])))), preemptions={s.name: int(out["preemptions"][i]) for i, s in enumerate(stations)},
        rejected={s.name: int(out["rejected"][i]) for i, s in enumerate(stations)},
        hops=None if hops is None else {"station": hops[0], "arrival_s": hops[1], "finish_s": hops[2],
                                        "preemptions": hops[3]},
        network=network)


class _Uniforms:
    """The uniforms of the random routers and choices for :func:`fluidq.kernel.network.run_network`, drawn from
    ``gen`` a block at a time: ``block()`` draws the next block (remembering where it starts), ``rewind(used)``
    puts ``gen`` right after the block's first ``used`` (the ones the loop took: the next draw, a random length's,
    is then the Python path's next draw).  ``random()`` draws one double from one 64-bit word, so
    ``gen.random(n)`` is ``n`` calls of ``gen.random()``.

    A block's size follows use: the uniforms the loop took between two rewinds (a random length's refills) with a
    quarter more, and twice the last block when a block is used up before the next rewind (up to ``cap``), so
    that the draws thrown away at a rewind (and drawn again after the length's) stay about the number used
    rather than a fixed ``cap`` per refill; the loop asks for the next block only when it needs a uniform, so a
    rewind soon after another draws none."""

    def __init__(self, gen, cap, first=64):
        self.gen = gen
        self.state = None
        self.cap = cap
        self.size = min(first, cap)  # the next block's
        self.taken = 0  # uniforms taken since the last rewind, in blocks used up
        self.last = 0  # the estimate of the uniforms taken between two rewinds
        self.n = 0  # the current block's size

    def block(self):
        if self.state is not None and self.n:  # the last block is used up: the next one twice as long
            self.taken += self.n
            self.size = min(self.cap, 2 * self.n)
        self.state = self.gen.bit_generator.state
        self.n = self.size
        return self.gen.random(self.n)

    def rewind(self, used):
        if not self.n:  # no block drawn since the last rewind: the generator stands right after the last used
            return
        self.gen.bit_generator.state = self.state
        if used:
            self.gen.random(used)
        taken = self.taken + used
        if taken:  # (a rewind soon after another, with none taken, keeps the estimate)
            self.last = max(taken, self.last // 2)
        self.taken = self.n = 0
        self.size = min(self.cap, self.last + self.last // 4 + 16)


def check_run(network: Network, horizon_s, *, replications: int = 1, initial: dict | None = None,
              names: dict | None = None) -> float:
    """Refuse, before any work, runs that cannot be simulated; return the horizon as a float.

    ``horizon_s`` finite and at least :data:`fluidq.sim.core.MIN_HORIZON_S`; at most
    :data:`MAX_REQUESTS` requests expected in one run (arrivals over the horizon plus ``initial``),
    ``replications`` within ``1 .. MAX_RUNS`` and at most :data:`MAX_TOTAL_REQUESTS` over all of them.
    ``names`` maps ``"horizon_s"`` and ``"replications"`` to the caller's names (e.g. CLI flags); the
    message says the size the runs would have.
    """
    from .._validate import integer
    from .core import MAX_RUNS, MIN_HORIZON_S

    nm = {"horizon_s": "horizon_s", "replications": "replications", **(names or {})}
    horizon = real(nm["horizon_s"], horizon_s, positive=True)
    if horizon < MIN_HORIZON_S:
        raise ParameterError(nm["horizon_s"], horizon_s, f"a horizon >= {MIN_HORIZON_S:g} s",
                             "a shorter run serves nothing (no batch ends within it) and its growth cannot be fitted")
    rate = sum(float(c.rate_per_s) for c in network.classes)
    expected = horizon * rate
    if isinstance(initial, dict):
        vals = [v for v in initial.values() if isinstance(v, (int, float, np.integer, np.floating))
                and not isinstance(v, bool)]
        for v in vals:  # a non-finite count is refused by the run itself, naming initial
            try:
                f = float(v)
            except OverflowError:  # an int beyond the float range
                f = math.inf
            expected += max(f, 0.0) if not math.isnan(f) else 0.0
    if not expected <= MAX_REQUESTS:
        raise ParameterError(nm["horizon_s"], horizon_s,
                             f"a run of at most {MAX_REQUESTS:,} requests: {horizon:.4g} s at the total arrival rate "
                             f"{rate:.4g}/s" + (" plus the initial requests" if initial else "") +
                             f" would make about {expected:.3g} requests")
    n = integer(nm["replications"], replications, minimum=1, maximum=MAX_RUNS,
                why="the runs are kept for the verdict")
    if n > 1 and not n * expected <= MAX_TOTAL_REQUESTS:
        raise ParameterError(nm["replications"], replications,
                             f"at most {MAX_TOTAL_REQUESTS:,} requests over all replications",
                             f"{n:,} runs of about {expected:.3g} requests ({horizon:.4g} s at {rate:.4g}/s) would "
                             f"make {n * expected:.3g}; fewer replications or a shorter horizon")
    return horizon


def simulate_network(network: Network, *, horizon_s: float, rng=None, initial: dict | None = None,
                     record_dt_s: float | None = None, check_batches: bool = False,
                     max_batches: int | None = None, method: str = "auto", swap_s_per_token: float | None = None,
                     record_hops: bool = False) -> NetworkSimResult:
    """Simulate ``network`` for ``horizon_s`` seconds.

    Parameters
    ----------
    network : Network
        The network.
    horizon_s : float
        Simulated time, seconds.
    rng : numpy Generator, SeedSequence or int, optional
        Randomness (arrivals, lengths, choices, random routers); ``np.random.default_rng(rng)``.
    initial : dict, optional
        ``{hop label: n}``: ``n`` requests of the hop's class waiting at that hop at time 0 (the hop
        must be a top-level step of its class's route).
    record_dt_s : float, optional
        Sampling step of the recorded series (default ``horizon_s / 400``).
    check_batches : bool
        Check every batch against constraints (6a)-(6d) and ``k_max`` (slower; violations are
        reported in the result).
    max_batches : int, optional
        Stop after this many batches in total.
    method : {"auto", "generic", "python", "kernel"}
        ``"generic"`` calls ``policy.select(view)`` for every batch.  ``"auto"`` (default) runs the whole
        network on the compiled event loop of :mod:`fluidq.kernel.network` when it covers it (every station
        a built-in scheduler in FCFS order, with a KV cache of any memory model or without one; routes of hops
        to stations, random or JSQ routers, probabilistic choices and fork-joins, fixed or random lengths; no
        ``check_batches``) and numba compiles, with the Python path's results exactly;
        otherwise it runs that Python path, which ``"python"`` forces (``"kernel"`` forces the compiled
        loop, or says why it does not apply).  The Python event-skipping path lets stations
        running a decode-first chunked scheduler in FCFS order (Sarathi-Serve, vLLM with chunked
        prefill) without ``k_max`` skip runs of identical batches: while no request finishes, no prompt
        completes and nothing arrives, every decoding request gets one token per batch (a virtual decode
        clock with a heap of finishing rounds) and the head prompt the same chunk, so the run is advanced
        in one step; an arrival cuts the run at the batch in progress.  Completions, request times and
        recorded series are the generic path's.  Whenever more requests decode than the budget holds,
        the station falls back to ``select(view)``; a station with a KV cache (``kv_capacity_tokens``)
        never skips (memory can bind at any batch): it always runs ``select(view)`` per batch (the compiled
        loop, the same rule batch by batch).
    swap_s_per_token : float, optional
        Seconds per KV token moved by a swap, out or in; required when a station's
        ``engine.memory.preemption`` is ``"swap"``.
    record_hops : bool
        Record every finished hop (the result's ``hops``).

    Returns
    -------
    NetworkSimResult

    Notes
    -----
    Events at equal times: external arrivals first (a request arriving as a batch ends joins the next
    batch, as in :func:`fluidq.simulate`), then batch completions, the batch that started first first,
    then the station listed first; both methods follow this order.

    Horizon: as in :func:`fluidq.simulate`, no batch starts at or after ``horizon_s`` and every batch in
    progress at the horizon is completed (requests finishing in it count as completed, with sojourns a
    little past the horizon; requests they route onward wait at their next station).  The recorded
    series stop at the horizon.

    KV cache: a station whose engine has ``kv_capacity_tokens`` runs the single-engine kernel's memory
    rules (:mod:`fluidq.kernel.memory`; the engine's ``memory``: token KV with the default rules, or
    block KV, prefix caching, reservation, recompute or swap, victim rule): a hop that can never fit
    is refused at arrival (``rejected``; the request leaves the network, or, inside a fork, stays
    counted in the system since its join never completes), and preemptions are counted per station.
    A one-station network gives :func:`fluidq.simulate`'s run exactly (a test checks every built-in
    scheduler).  ``k_max`` and context-aware batch times are modelled.

    Python's cyclic garbage collector is paused while the event loop runs and re-enabled on return
    (also on an error) if it was on: the loop makes no reference cycles, so collections would find
    nothing; other threads allocating cyclic garbage meanwhile keep it until the run ends.

    Examples
    --------
    >>> from fluidq import Engine, Affine
    >>> from fluidq.network import Network, Station, RequestClass, Hop, simulate_network
    >>> e = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256)
    >>> net = Network(stations=[Station(name="E", engine=e)], classes=[RequestClass(name="A", rate_per_s=10.0,
    ...     route=[Hop(engine="E", prompt_tokens=50, output_tokens=20)])])
    >>> r = simulate_network(net, horizon_s=20.0, rng=1)
    >>> r.completed["A"] > 150
    True
    """
    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    for st in network.stations:
        if getattr(st.engine, "async_scheduling", False):
            raise ParameterError(f"stations[{st.name!r}].engine.async_scheduling", True,
                                 "False in a network (async scheduling is modelled by fluidq.simulate only)")
    from .._validate import integer
    from .core import _check_rng

    horizon = check_run(network, horizon_s, initial=initial)
    rng = _check_rng(rng)
    if isinstance(rng, np.random.Generator):
        gen = rng
        seed = None
    else:
        ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
        gen = np.random.default_rng(ss)
        seed = ss.entropy
    dt_rec = real("record_dt_s", record_dt_s, positive=True) if record_dt_s is not None else horizon / 400.0
    if horizon / dt_rec > MAX_GRID:
        raise ParameterError("record_dt_s", record_dt_s, f"a step of at least horizon_s / {MAX_GRID:,} = "
                             f"{horizon / MAX_GRID:.3g} s (at most {MAX_GRID:,} recorded points)")
    if method not in ("auto", "generic", "python", "kernel"):
        raise ParameterError("method", method, "'auto', 'generic', 'python' or 'kernel'")
    max_batches = integer("max_batches", max_batches, minimum=1, allow_none=True)
    if not isinstance(check_batches, (bool, np.bool_)):
        raise ParameterError("check_batches", check_batches, "True or False")
    if initial is not None and not isinstance(initial, dict):
        raise ParameterError("initial", initial, "a dict {hop label: number of requests}")
    if not isinstance(record_hops, (bool, np.bool_)):
        raise ParameterError("record_hops", record_hops, "True or False")
    if swap_s_per_token is not None:
        swap_s_per_token = real("swap_s_per_token", swap_s_per_token, nonnegative=True)
    for st in network.stations:
        if (st.engine.kv_capacity_tokens is not None and st.engine.memory.preemption == "swap"
                and swap_s_per_token is None):
            raise ParameterError("swap_s_per_token", None, f"seconds per KV token moved, for station {st.name!r} "
                                 "whose engine.memory.preemption is 'swap'")
    use_kernel = False
    if method in ("auto", "kernel"):
        why = _kernel_unsupported(network, check_batches)
        if why is not None and method == "kernel":
            raise ParameterError("method", method, "a network the compiled event loop covers",
                                 f"{why}; method='auto' runs it on the Python path")
        if why is None:
            from ..kernel import compiled

            use_kernel = method == "kernel" or compiled()
    wall0 = _time.perf_counter()
    # The event loop makes no reference cycles (a fork's scope is released at its join), so the cyclic
    # garbage collector has nothing to find in the objects it makes per event; paused, it costs no time
    # (the compiled loop makes few objects, but a collection its set-up triggers would cost milliseconds).
    gc_on = gc.isenabled()
    gc.disable()
    try:
        if use_kernel:
            return _run_kernel(network, horizon, gen, seed, initial, dt_rec, max_batches, wall0, bool(record_hops),
                               swap_s_per_token or 0.0)
        return _run(network, horizon, gen, seed, initial, dt_rec, check_batches, max_batches,
                    "generic" if method == "generic" else "auto", wall0,
                    swap_s_per_token or 0.0, bool(record_hops))
    finally:
        if gc_on:
            gc.enable()


def _run(network, horizon, gen, seed, initial, dt_rec, check_batches, max_batches, method, wall0, swap_s,
         record_hops):
    """The event loop of :func:`simulate_network` (inputs checked)."""
    stations = [_StationState(i, s, _windowable(s.policy)) for i, s in enumerate(network.stations)]
    for s in stations:
        pol = s.policy
        s.policy_chunks = bool(getattr(pol, "chunked", True) or getattr(pol, "chunk_long_prompts", False))
        if s.engine.kv_capacity_tokens is not None:
            continue  # (its memory is set up below; it never skips runs)
        if method == "auto" and not check_batches:
            s.fast_budget = _fast_budget(s.s)
    n_batches = 0
    sidx = {s.s.name: s for s in stations}
    routers = {r.name: r for r in network.routers}
    fm = network.flow
    pooled = set(fm.pooled)
    cls_names = [c.name for c in network.classes]
    buf_labels = [b.label for b in fm.buffers]
    buf_tokens = {lab: 0 for lab in buf_labels}
    in_sys = [0] * len(cls_names)
    completed = [0] * len(cls_names)
    soj = [0.0] * len(cls_names)
    violations: list = []
    blocked: set = set()
    hops: list | None = [] if record_hops else None
    for s in stations:
        _fed_engine(s, swap_s, buf_tokens, horizon, check_batches, violations, blocked)

    heap: list = []
    nseq = itertools.count().__next__  # tie-break of events at equal times: order of scheduling
    hpush, hpop = heapq.heappush, heapq.heappop
    next_rid = itertools.count(1).__next__
    new_task = _Task.__new__

    from ..workload.lengths import Fixed
    from ..network.model import NoTokens

    length_buf: dict = {}

    def sample_len(length):
        if isinstance(length, Fixed):
            return length.n
        if isinstance(length, NoTokens):
            return 0
        key = id(length)
        buf = length_buf.get(key)
        if buf is None or buf[1] >= len(buf[0]):
            buf = [length.sample(gen, 256).tolist(), 0, length]
            length_buf[key] = buf
        v = buf[0][buf[1]]
        buf[1] += 1
        return int(v)

    def buffer_label(hop, station_name):
        if hop.engine in routers and hop.engine not in pooled:
            return f"{hop.name}@{station_name}"
        return hop.name

    def pick_station(hop, p, d):
        if hop.engine in sidx:
            return sidx[hop.engine]
        r = routers[hop.engine]
        if r.policy == "random":
            x = gen.random()
            acc = 0.0
            for e, q in zip(r.engines, r.probabilities):
                acc += q
                if x < acc:
                    return sidx[e]
            return sidx[r.engines[-1]]
        best, key = None, None
        for e in r.engines:
            s = sidx[e]
            k = len(s.tasks) if r.count == "requests" else s.current_work(now_box[0], arriving, (cur_start, cur_idx))
            if key is None or k < key:
                best, key = s, k
        return best

    now_box = [0.0]
    arriving = False  # True while an external arrival is placed (it precedes batch ends at its time)
    # the batch end being processed: (start of its batch, station index), its order among equal times
    cur_start, cur_idx = -INF, -1

    # id(hop) -> (fixed prompt or None, fixed output or None, station, label, rank, prefill deque)
    hop_info: dict = {}
    planned: list = []   # the planned hops, held so that no other object can take an id in hop_info

    def fixed_len(length):
        if isinstance(length, Fixed):
            return length.n
        if isinstance(length, NoTokens):
            return 0
        return None

    def plan_hop(hop):
        pf, of = fixed_len(hop.prompt_tokens), fixed_len(hop.output_tokens)
        s = sidx.get(hop.engine)
        if s is None:  # a router: station, label and rank depend on the pick
            info = (pf, of, None, None, None, None)
        else:
            rank = s.rank.get(hop.name, s.low)
            label = buffer_label(hop, s.s.name)
            buf_tokens.setdefault(label, 0)
            info = (pf, of, s, label, rank, s.pre[rank])
        hop_info[id(hop)] = info
        planned.append(hop)
        return info

    def submit(job, hop, info, cont, now):
        pf, of, s, label, rank, dq = info
        p = pf if pf is not None else sample_len(hop.prompt_tokens)
        d = of if of is not None else sample_len(hop.output_tokens)
        if s is None:
            now_box[0] = now
            s = pick_station(hop, p, d)
            label = buffer_label(hop, s.s.name)
            buf_tokens.setdefault(label, 0)
            rank = s.rank.get(hop.name, s.low)
            dq = s.pre[rank]
        mem = s.mem
        if mem is not None and mem.rejects(p, d):  # (the EngineRun's refuses, inlined)
            reject(job, cont)
            return
        rid = next_rid()
        # (RequestState's fields with its defaults, stored here instead of calling a constructor)
        task = new_task(_Task)
        task.rid = rid
        task.arrival_s = now
        task.prompt_tokens = p
        task.output_tokens = d
        task.prefilled = 0
        task.decoded = 0
        task.first_scheduled_s = NAN
        task.score = None
        task.recompute_tokens = 0
        task.preemptions = 0
        task.job = job
        task.cont = cont
        task.rank = rank
        task.label = label
        if mem is None:  # into the EngineRun's queues (its offer, inlined: the station keeps its work)
            s.tasks[rid] = task  # (a new hop: nothing is served yet, and its prompt is >= 1 token)
            s.work += p + d
            dq.append(task)
        else:
            er = s.engine_run
            er.offer(task)  # (into its tasks, work and memory)
            s.work = er.work
        buf_tokens[label] += p + d
        if s.routing:
            return  # the station starts its next batch once every finished request has moved on
        if not s.busy:
            if s.fast_budget is not None and s.ndec <= s.fast_budget:
                run_station(s, now, False)  # (start_batch's first case, inlined)
            else:
                start_batch(s, now)
        elif s.run is not None and s.run[2] > 1:  # a one-batch run has nothing to cut
            cut_run(s, now)

    def reject(job, cont):
        """A hop refused by a station's KV cache: the request leaves the network (inside a fork it stays
        counted in the system: its join never completes)."""
        parent = None if cont is None else cont[2]
        while parent is not None:
            if parent[0] == "join":
                return
            parent = parent[1][2]
        in_sys[job[0]] -= 1

    def advance(job, steps, idx, parent, scope, now):
        while idx < len(steps):
            step = steps[idx]
            if isinstance(step, Hop):
                idx += 1
                submit(job, step, hop_info.get(id(step)) or plan_hop(step),
                       None if parent is None and idx >= len(steps) else (steps, idx, parent, scope), now)
                return
            if isinstance(step, Choice):
                x = gen.random()
                acc = 0.0
                chosen = step.options[-1][1]
                for pr, sub in step.options:
                    acc += pr
                    if x < acc:
                        chosen = sub
                        break
                advance(job, chosen, 0, ("seq", (steps, idx + 1, parent, scope)), {}, now)
                return
            if isinstance(step, Fork):
                jr = _JoinRec(len(step.branches) + 1)
                scope = dict(scope)
                scope[step.name] = jr
                for br in step.branches:
                    advance(job, br, 0, ("join", jr), {}, now)
                idx += 1
                continue
            if isinstance(step, Join):
                jr = scope[step.name]
                jr.waiting -= 1
                if jr.waiting > 0:
                    jr.cont = (steps, idx + 1, parent, scope)
                    return
                idx += 1
                continue
        finish(job, parent, now)

    def finish(job, parent, now):
        if parent is None:
            ci = job[0]
            in_sys[ci] -= 1
            completed[ci] += 1
            soj[ci] += now - job[1]
            return
        kind, x = parent
        if kind == "seq":
            steps, idx, par, scope = x
            advance(job, steps, idx, par, scope, now)
        else:
            x.waiting -= 1
            if x.waiting == 0 and x.cont is not None:
                steps, idx, par, scope = x.cont
                x.cont = None
                advance(job, steps, idx, par, scope, now)

    def materialize(s):
        """Leave the virtual decode clock: drop the finished requests left in the decode queues and give
        the others their decoded counts."""
        G = s.G
        for r, q in s.dec.items():
            live = deque(t for t in q if t.decoded < t.output_tokens)
            for t in live:
                t.decoded = t.d0 + (G - t.g0)
            s.dec[r] = live
        s.dec_garbage = 0
        s.fheap = []
        s.virtual = False

    def cut_run(s, now):
        """Cut the station's run at the batch in progress at ``now``.

        A batch ending exactly at ``now`` ends the run when its end would be processed after the current
        event -- always for an external arrival (arrivals come first at equal times), and for a request
        routed by another station's batch end when this batch's key (start, station index) is above the
        current event's -- else the run goes on to the next batch, as in the generic path.
        """
        t0, tau, k, _, _, _ = s.run
        t, i = t0, 0
        while i < k:
            start = t
            t += tau
            i += 1
            if t > now or (t == now and (arriving or (start, s.idx) > (cur_start, cur_idx))):
                break
        if i < k:  # a new run object: the event of the old one is stale
            s.run = run = [t0, tau, i, s.run[3], s.run[4], s.run[5]]
            hpush(heap, (t, start, s.idx, nseq(), 2, s, run))

    def run_station(s, now, ended):
        """End the station's run of identical batches (``ended``), move its finished requests on, and start
        its next run (one function: a run's end and the next run's start cost one call)."""
        nonlocal n_batches
        if ended:
            _, _, k, allocs, d, btok = s.run
            s.run = None
            n_batches += k
            G = s.G
            if d:
                G = s.G = G + k
                for label, cnt in s.dec_label.items():
                    if cnt:
                        buf_tokens[label] -= k * cnt
            s.work -= k * btok
            moved = []
            for t, take in allocs:
                t.prefilled += k * take
                buf_tokens[t.label] -= k * take
                if t.prefilled >= t.prompt_tokens:
                    moved.append(t)
            done = []
            fh = s.fheap
            dec, dec_label, tasks = s.dec, s.dec_label, s.tasks
            lim = (G + 1) << RID_BITS  # keys of requests finishing by round G
            while fh and fh[0] < lim:
                t = tasks.pop(hpop(fh) & RID_MASK)  # (it leaves the station)
                t.decoded = t.output_tokens  # (marks it finished: it stays in its decode queue until compaction)
                dec_label[t.label] -= 1
                done.append(t)
            if done:
                s.ndec -= len(done)
                s.dec_garbage += len(done)
                if s.dec_garbage > 1024 + 2 * s.ndec:
                    for r, q in dec.items():
                        dec[r] = deque([t for t in q if t.decoded < t.output_tokens])
                    s.dec_garbage = 0
            if moved:
                pre = s.pre
                for t in moved:
                    dq = pre[t.rank]
                    if dq[0] is t:  # a completed prompt heads its rank's queue (prompts are served in order)
                        dq.popleft()
                    else:
                        dq.remove(t)
                    od = t.output_tokens
                    if od > 0:
                        dec[t.rank].append(t)
                        t.d0 = 0
                        t.g0 = G
                        hpush(fh, ((G + od) << RID_BITS) | t.rid)
                        dec_label[t.label] = dec_label.get(t.label, 0) + 1
                        s.ndec += 1
                    else:
                        del tasks[t.rid]
                        done.append(t)
            if done:  # (the finished requests have left s.tasks)
                move_on(s, done, now)
                if s.busy:
                    return
            if s.ndec > s.fast_budget:
                s.busy = False
                start_batch(s, now)
                return
        if now >= horizon:  # no batch starts at or after the horizon
            s.busy = False
            return
        G = s.G
        if not s.virtual:
            heap_ = []
            for q in s.dec.values():
                for t in q:
                    t.d0 = t.decoded
                    t.g0 = G
                    heap_.append(((G + t.output_tokens - t.decoded) << RID_BITS) | t.rid)
            heapq.heapify(heap_)
            s.fheap = heap_
            s.virtual = True
        # the batch rule's split (decode first, mixed, no binding k_max; every decoder fits the budget here)
        d, rem, _ = budget_split(False, True, s.fast_budget, 1, s.ndec, NO_CAP)
        btok = d
        allocs = []  # (task, prefill tokens per batch): whole prompts in priority/FCFS order, the last maybe a chunk
        if rem > 0:
            for q in s.pre_qs:
                for t in q:
                    need = t.prompt_tokens - t.prefilled
                    if not fits(need, rem):  # (these schedulers chunk)
                        need = rem
                    allocs.append((t, need))
                    btok += need
                    rem -= need
                    if rem == 0:
                        break
                if rem == 0:
                    break
        # the run lasts until the next decode completion (round of the heap's top) and, with prefill,
        # one batch -- unless the head prompt alone is chunked: then until its rest is below the chunk
        if d:
            k = (s.fheap[0] >> RID_BITS) - G
            if allocs:
                if len(allocs) == 1:
                    t, take = allocs[0]
                    kp = (t.prompt_tokens - t.prefilled) // take
                    if kp < k:  # noqa: PLR1730 -- a comparison costs less than a min() call here
                        k = kp
                else:
                    k = 1
        elif allocs:
            if len(allocs) == 1:
                t, take = allocs[0]
                k = (t.prompt_tokens - t.prefilled) // take
            else:
                k = 1
        else:
            s.busy = False
            return
        tau = s.bt_cache[btok]  # (the EngineRun's table: _TauCache fills it on demand)
        if k > 2 and tau > 0:
            # batches that would start after the horizon are never seen: a run of 1e27 batches (a huge
            # prompt) is cut to the ones up to the horizon, so the loop below stays short
            k = min(k, int((horizon - now) / tau) + 2)
        if k == 1:
            t_end = now + tau
            t_last = now
        else:
            t_end = now
            for _ in range(k):  # one addition per batch: times bit-identical with the generic path
                t_last = t_end
                t_end += tau
            if t_last >= horizon:  # (once per station) no batch starts at or after the horizon: cut the run
                t_end = now
                for i in range(k):
                    t_last = t_end
                    t_end += tau
                    if t_end >= horizon:
                        k = i + 1
                        break
        s.run = run = [now, tau, k, allocs, d, btok]
        s.busy = True
        # (end, start of the last batch, station, seq): the generic path's key of that batch's end
        hpush(heap, (t_end, t_last, s.idx, nseq(), 2, s, run))

    def move_on(s, done, now):
        """Send the requests that finished their hop at ``s`` along their routes (or out of the network);
        the station starts its next batch only after all of them have moved (``s.routing``)."""
        s.busy = False
        s.routing = True
        if hops is not None:
            hops.extend((s.idx, t.arrival_s, now, t.preemptions) for t in done)
        for t in done:
            cont = t.cont
            if cont is None:  # (finish, inlined: the request leaves)
                ci, t_in = t.job
                in_sys[ci] -= 1
                completed[ci] += 1
                soj[ci] += now - t_in
            else:
                advance(t.job, *cont, now)
        s.routing = False

    def start_batch(s, now):
        """Start the station's next batch: a run of identical batches where the station skips them, else its
        EngineRun's ``begin`` (the kernel's batch rule, batch time and, with a KV cache, memory rules); a
        memory pass that only swaps in keeps the station busy for the swap time."""
        if now >= horizon:  # no batch starts at or after the horizon (as in fluidq.simulate)
            s.busy = False
            return
        if s.fast_budget is not None:
            if s.ndec <= s.fast_budget:
                run_station(s, now, False)
                return
            if s.virtual:
                materialize(s)
        er = s.engine_run
        end = er.begin(now)
        if s.mem is not None:
            s.work = er.work  # (recomputation and prefix reuse change it)
        if end is None:
            s.busy = False
            return
        s.busy = True
        hpush(heap, (end, now, s.idx, nseq(), 1, s, None))

    def end_batch(s, now):
        """End the station's batch: its EngineRun's ``finish`` (tokens served, the first token from the
        prefill, KV grown, the finished released and, without a KV cache, the station's deques moved on);
        its finished hops move on, then the station starts its next batch.  After a pass that only swapped
        in, the station tries again."""
        nonlocal n_batches
        er = s.engine_run
        if s.mem is None:
            er.work = s.work  # (the station's remaining tokens: the routing and the run skipping change them)
        fin = er.finish()
        s.work = er.work
        if fin is None:  # only swaps: no batch ran
            s.busy = False
            start_batch(s, now)
            return
        n_batches += 1
        # (empty per-rank deques are kept: ranks are few, and an empty deque adds nothing to a view)
        move_on(s, fin, now)
        if not s.busy:
            if s.fast_budget is not None and s.ndec <= s.fast_budget:
                run_station(s, now, False)  # (start_batch's first case, inlined)
            else:
                start_batch(s, now)

    # external arrivals: every class's times drawn up front and merged into one time-ordered stream
    # (ties in class order); at equal times arrivals come before batch completions, as in the
    # single-engine simulator (a request arriving when a batch ends joins the next batch)
    a_t, a_c = [], []
    for ci, c in enumerate(network.classes):
        times = c.arrival.times(gen, horizon_s=horizon)
        a_t.append(times)
        a_c.append(np.full(len(times), ci, dtype=np.int64))
    a_t = np.concatenate(a_t) if a_t else np.zeros(0)
    a_c = np.concatenate(a_c) if a_c else np.zeros(0, dtype=np.int64)
    order = np.lexsort((a_c, a_t))
    ext_t = a_t[order].tolist()
    ext_c = a_c[order].tolist()
    ext_t.append(INF)  # (a sentinel: the loop ends at the first arrival time past the horizon)
    routes = [c.route for c in network.classes]
    NO_SCOPE: dict = {}  # the empty fork scope (a Fork copies its scope before adding to it)
    first_hop = [r[0] if r and isinstance(r[0], Hop) else None for r in routes]
    # where a request goes after its first hop (None: it leaves), and the first hop's plan
    first_cont = [None if len(r) == 1 else (r, 1, None, NO_SCOPE) for r in routes]
    first_info = [None if h is None else plan_hop(h) for h in first_hop]

    def new_job(ci, now):
        in_sys[ci] += 1
        return (ci, now)

    for ci, k, count in _initial_hops(network, initial):
        route = network.classes[ci].route
        for _ in range(count):
            job = new_job(ci, 0.0)
            advance(job, route, k, None, {}, 0.0)

    # grid points k * dt up to the horizon (a last point a rounding error past it is put at the horizon)
    G = int(math.floor(horizon / dt_rec * (1 + 1e-12))) + 1
    grid = np.minimum(np.arange(G) * dt_rec, horizon)
    grid_l = grid.tolist()
    next_rec = grid_l[0] if G else math.inf  # record_until(t) has work once t >= next_rec
    # one row per grid point, made into arrays at the end: (requests per class, tokens per buffer label,
    # tokens per station, requests per station)
    rows: list = []
    gi = 0

    def in_run_progress(s, at):
        """Tokens served per label by the batches of the current run that ended by ``at``."""
        t0, tau, k, allocs, d, _ = s.run
        t, j = t0, 0
        while j < k:
            t += tau
            if t >= at:  # a batch ending exactly at a grid point is recorded after it (as events are)
                break
            j += 1
        out: dict = {}
        if j:
            if d:
                for lab, cnt in s.dec_label.items():
                    if cnt:
                        out[lab] = out.get(lab, 0) + j * cnt
            for task, take in allocs:
                out[task.label] = out.get(task.label, 0) + j * take
        return out

    task_dicts = [s.tasks for s in stations]
    get_work = operator.attrgetter("work")

    def record_until(t):
        nonlocal gi, next_rec
        row = None  # grid points between two events share one row unless a run is in progress across them
        first_end = INF  # the earliest end of a current run's first batch
        for s in stations:
            run = s.run
            if run is not None and run[0] + run[1] < first_end:
                first_end = run[0] + run[1]
        while gi < G and grid_l[gi] <= t:
            at = grid_l[gi]
            if at <= first_end:  # no batch of a current run has ended before this point
                if row is None:
                    row = (in_sys[:], dict(buf_tokens), list(map(get_work, stations)), list(map(len, task_dicts)))
                rows.append(row)
                gi += 1
                continue
            buf = dict(buf_tokens)
            works = []
            for s in stations:
                work = s.work
                run = s.run
                if run is not None and run[0] + run[1] < at:
                    for lab, served in in_run_progress(s, at).items():
                        buf[lab] -= served
                        work -= served
                works.append(work)
            rows.append((in_sys[:], buf, works, list(map(len, task_dicts))))
            row = None
            gi += 1
        next_rec = grid_l[gi] if gi < G else math.inf

    events = 0
    ai = 0
    ta = ext_t[0]  # the next external arrival
    mb = max_batches if max_batches is not None else INF
    while True:
        if heap:
            ev = heap[0]
            te = ev[0]
        else:
            te = INF
        if ta <= te and ta <= horizon:  # an external arrival (first at equal times)
            t = ta
            ci = ext_c[ai]
            ai += 1
            ta = ext_t[ai]
            if t >= next_rec:
                record_until(t)
            events += 1
            in_sys[ci] += 1  # (new_job, inlined)
            h0 = first_hop[ci]
            arriving = True
            if h0 is not None:  # (advance, inlined for a route that starts with a hop)
                submit((ci, t), h0, first_info[ci], first_cont[ci], t)
            else:
                advance((ci, t), routes[ci], 0, None, {}, t)
            arriving = False  # (an arrival ends no batch: max_batches is checked after batch ends)
            continue
        if te == INF:  # (batches in progress at the horizon are completed; none starts after it)
            break
        # (time, start of the batch, station index, seq, kind, station, run): at equal times, the batch that
        # started first ends first, then the lower station index (the event-skipping path can compute this
        # order for the batches inside a run, so both paths order equal times alike)
        _, cur_start, cur_idx, _, kind, st_, run_ = ev
        hpop(heap)
        t = te
        if t >= next_rec:
            record_until(t)
        events += 1
        if kind == 1:
            end_batch(st_, t)
        else:
            if run_ is not st_.run:
                events -= 1  # a run cut short by an arrival: stale event
                continue
            run_station(st_, t, True)
        if n_batches >= mb:
            break
    record_until(horizon)  # (every grid point is <= horizon)
    # (flat lists: numpy reads them much faster than a list of short lists)
    rec_in = np.array([x for r in rows for x in r[0]], dtype=float).reshape(G, len(cls_names))
    rec_st_tok = np.array([x for r in rows for x in r[2]], dtype=float).reshape(G, len(stations))
    rec_st_req = np.array([x for r in rows for x in r[3]], dtype=float).reshape(G, len(stations))
    labels = dict.fromkeys(buf_tokens)  # every label met (routers add theirs as they pick), first seen first
    rec_buf = {lab: np.array([r[1].get(lab, 0) for r in rows], dtype=float) for lab in labels}
    wall = _time.perf_counter() - wall0
    return NetworkSimResult(
        times_s=grid, in_system={c: rec_in[:, i].copy() for i, c in enumerate(cls_names)},
        buffer_tokens={k: v for k, v in rec_buf.items()},
        station_tokens={s.s.name: rec_st_tok[:, s.idx].copy() for s in stations},
        station_requests={s.s.name: rec_st_req[:, s.idx].copy() for s in stations},
        completed=dict(zip(cls_names, completed)),
        mean_sojourn_s={c: (soj[i] / completed[i] if completed[i] else None) for i, c in enumerate(cls_names)},
        batches=n_batches, events=events, horizon_s=horizon, wall_s=wall, seed=seed,
        violations=tuple(violations[:50]), blocked=tuple(sorted(blocked)),
        preemptions={s.s.name: (s.mem.preemptions if s.mem is not None else 0) for s in stations},
        rejected={s.s.name: (s.mem.rejected if s.mem is not None else 0) for s in stations},
        hops=None if hops is None else {
            "station": np.array([h[0] for h in hops], dtype=np.int64),
            "arrival_s": np.array([h[1] for h in hops], dtype=float),
            "finish_s": np.array([h[2] for h in hops], dtype=float),
            "preemptions": np.array([h[3] for h in hops], dtype=np.int64)},
        network=network)


def replicate_network(network: Network, *, horizon_s: float, replications: int = 4, rng=None, **kw) -> list:
    """Independent runs seeded from one ``SeedSequence`` (``rng`` an int, SeedSequence or None)."""
    from .._validate import integer

    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    check_run(network, horizon_s, replications=replications, initial=kw.get("initial"))
    n = integer("replications", replications, minimum=1)
    ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    return [simulate_network(network, horizon_s=horizon_s, rng=child, **kw) for child in ss.spawn(n)]


# the documented old path ``fluidq.network.sim`` (and ``fluidq.network.simulate_network``): registered
# here, by the analysis, so that the topology package imports no simulator
sys.modules.setdefault("fluidq.network.sim", sys.modules[__name__])
_net_pkg = sys.modules["fluidq.network"]
for _name in ("simulate_network", "NetworkSimResult"):
    setattr(_net_pkg, _name, globals()[_name])
_net_pkg.sim = sys.modules[__name__]
