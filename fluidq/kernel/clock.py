"""The kernel's Python event clock: :class:`EventClock` advances the time of one engine
(:func:`fluidq.simulate`'s ``select()`` path, :func:`fluidq.kernel.step.run_generic`, through
:func:`run_engine`) and of every station of :func:`fluidq.simulate_network`'s Python path (``method="python"``
or ``"generic"``, and ``"auto"`` where the compiled loop of :mod:`fluidq.kernel.network` does not apply,
through :func:`run_clock`, with the routing between them) -- one loop, written once (2026-12-06, issue 14).

Moved here from ``fluidq.sim.network`` (2026-12-06, issue 14) so that the simulator is a driver: it checks
the inputs, picks the compiled or this loop, and builds :class:`fluidq.sim.network.NetworkSimResult` from
what :func:`run_clock` returns (plain lists, numbers and arrays).

Each station is the kernel's engine: a fed :class:`fluidq.kernel.step.EngineRun` (``simulate``'s
``select()`` loop) that the clock offers its hops to and steps -- ``begin`` at a batch's start, ``finish`` at
its end -- so the batch rule, the batch time, the token accounting and the first token from the prefill
(``prefill_emits_token``) are written once, in :mod:`fluidq.kernel.step`.  A station with a KV cache
(``kv_capacity_tokens``) applies the single-engine kernel's memory rules batch by batch
(:class:`fluidq.kernel.memory.StationMemory`: rejection at arrival, admission, preemption by the engine's
``memory``) and shows its policy every resident, in arrival order.  A station without one hands its EngineRun
its per-priority deques as ``queues``: its policy sees its residents in the station's class-priority order
(FCFS within a level, by arrival at the station; decoding requests before prefilling ones for the built-in
schedulers, which see only the residents that can enter the batch -- the first ``min(b_max, k_max)``
decoding requests and the prefilling requests whose remaining prompts cover the budget -- so a batch costs
``O(b_max)``, not ``O(queue)``); its batch time is ``t(b)``, or ``t(b, kv)`` for a context-aware time with
``kv`` the decoding requests' contexts.

Runs of identical batches (``method="auto"``): a station without a KV cache running a decode-first chunked
scheduler in FCFS order (Sarathi-Serve, vLLM with chunked prefill) without a binding ``k_max`` advances a run of
batches whose composition cannot change -- no request finishes, no prompt completes, nothing arrives -- in one
step (``run_station``), with a virtual decode clock (every decoding request gets one token per batch; a heap
holds the round at which each finishes) and the head prompt's chunk; an arrival cuts the run at the batch in
progress.  It reads and writes the same deques as the station's EngineRun, which runs the batches in between
(when more requests decode than the budget holds).  Requests' times, counts in system and the recorded token
backlogs are those of ``select(view)`` every batch (tests check them equal).

Events are external arrivals and batch completions; a request that finishes a hop moves on along its route at
once: probabilistic choices draw from ``gen``, routers pick an engine at random (given probabilities) or by
join-the-shortest-queue (requests or remaining tokens), a fork sends the request down every branch, and a join
releases it when every branch and the main line have arrived.  Each of these decisions is a function of
:mod:`fluidq.kernel.routing` (``pick``, ``jsq_takes``, ``fork_waits``, ``join_arrive``, ``refused_leaves``), the
ones the compiled loop of :mod:`fluidq.kernel.network` inlines: the routing rules are written once (2026-12-07).
What stays here is this loop's walk over the route's Python objects (``advance``/``finish``: a continuation
``(steps, index, parent, scope)`` per request, a ``_JoinRec`` per fork) and its reading of each station's queue
(``len(tasks)``, :meth:`_StationState.current_work`) for JSQ.  Order at equal times: external arrivals first
(a request arriving at the instant a batch ends joins the next batch, as in :func:`fluidq.simulate`), then
batch completions: the batch that started first ends first, then the station listed first; the run-skipping
path knows when each batch inside a run started, so it orders equal times exactly as batch-by-batch stepping
does.  The horizon means what it means in :func:`fluidq.simulate`: no batch starts at or after it, and the
batches in progress are completed.

References
----------
Li, Dai, Peng, arXiv:2504.07347 (engine model, constraints 6a-6d, networks of engines).
"""
from __future__ import annotations

import heapq
import itertools
import math
import operator
import sys
from collections import deque

import numpy as np

from ..errors import ParameterError, TopologyError
from ..network.model import Choice, Fork, Hop, Join
from ..policies.base import RequestState
from ..policies.batch_rule import NO_CAP, budget_split, fits
from .routing import fork_waits, join_arrive, jsq_takes, pick, refused_leaves
from .step import NOTHING_CAME, EngineRun, _idle_error

INF = math.inf
NAN = math.nan
# the virtual decode clock's heap holds one int per decoding request, (finishing round, rid) packed as
# ``round << RID_BITS | rid``: ordered as the pair, and compared much faster than a tuple
RID_BITS = 40
RID_MASK = (1 << RID_BITS) - 1

__all__ = ["EventClock", "run_clock", "run_engine"]


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


def _new_task(rid, arrival_s, prompt_tokens, output_tokens, job, cont, rank, label, _new=_Task.__new__, _cls=_Task):
    """A fresh hop's :class:`_Task`: RequestState's fields with the constructor's defaults (stored one by one
    instead of calling it, which is slower), and the hop's place. Used by ``submit`` here and by the compiled
    network loop's asker (:mod:`fluidq.kernel.network_select`), so the two paths' objects are the same."""
    task = _new(_cls)
    task.rid = rid
    task.arrival_s = arrival_s
    task.prompt_tokens = prompt_tokens
    task.output_tokens = output_tokens
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
    return task


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
        # decoding requests first (by priority, then in the order their prefill ended), then prefilling
        # requests (by priority, then arrival at the station): a built-in scheduler only compares
        # requests of the same kind, so this is its priority/FCFS order
        return window_view((self.dec[r] for r in sorted(self.dec)), (self.pre[r] for r in sorted(self.pre)),
                           b_max, k_max, self.policy_chunks)

    view = view_requests  # (the EngineRun's queues: the requests its policy sees)


def window_view(decoding, prefilling, b_max, k_max, chunks) -> list:
    """The built-in schedulers' window of a station's queue: the decoding requests (``decoding``: an iterable per
    priority rank, in rank order, each in the order their prefill ended) up to ``min(b_max, k_max)``, then the
    prefilling ones (``prefilling``, likewise, each in arrival order) until their remaining prompts (counted whole
    only when the scheduler chunks or they fit ``b_max``, each at most ``b_max``) reach ``b_max`` -- at least one --
    or ``min(b_max, k_max) + 8`` of them.  The Python clock's view (``_StationState.view_requests``) and the compiled
    loop's (:func:`fluidq.kernel.network_window.window`) are this one rule."""
    lim = b_max if k_max is None else min(b_max, k_max)
    out = []
    n = 0
    for q in decoding:
        for t in q:
            if n >= lim:
                break
            out.append(t)
            n += 1
        if n >= lim:
            break
    cum, n, cap = 0, 0, lim + 8
    for q in prefilling:
        for t in q:
            if (cum >= b_max and n >= 1) or n >= cap:
                break
            out.append(t)
            need = t.prompt_tokens - t.prefilled
            if need <= b_max or chunks:
                cum += need if need < b_max else b_max
            n += 1
        if (cum >= b_max and n >= 1) or n >= cap:
            break
    return out


def _windowable(policy):
    """True for a built-in Scheduler whose ordering keeps the given (priority, FCFS) order."""
    from ..policies.orderings import Ordering
    from ..policies.schedulers import Scheduler

    return isinstance(policy, Scheduler) and type(policy.order).order is Ordering.order


def _fast_budget(station):
    """The token budget when the station can skip runs of identical batches, else ``None``.

    Eligible: a built-in :class:`~fluidq.policies.Scheduler` that is decode-first with mixed batches and
    chunked prefill (Sarathi-Serve, vLLM with chunked prefill) in FCFS order, without a batch-size limit
    below its budget (one at or above it never binds), with a batch time of batch tokens alone.  Its
    ``select`` and ``budgets`` must be the library's (:func:`fluidq.kernel.step._trusted`): a subclass that
    overrides either has a rule of its own, asked every batch (before 2026-12-07, h-netwin, such a subclass
    skipped runs by the built-in rule, so ``method="python"`` ignored its ``select`` while fewer requests
    decoded than the budget, and differed from ``"generic"``).
    """
    from ..policies.orderings import Ordering
    from ..policies.schedulers import Scheduler
    from .step import _trusted

    pol, eng = station.policy, station.engine
    if not (isinstance(pol, Scheduler) and pol.mixed and pol.chunked and pol.priority == "decode"
            and type(pol.order).order is Ordering.order and _trusted(pol)) \
            or getattr(eng, "prefill_emits_token", False):
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


def _fed_engine(s, swap_s, buf_tokens, horizon, check_batches, violations, blocked, kv_table=None):
    """Give station ``s`` its engine: the kernel's :class:`~fluidq.kernel.step.EngineRun`, fed by the network
    (``fed=True``) and stepped by its clock (``begin`` at a batch's start, ``finish`` at its end), so that
    the batch rule, the batch time, the token accounting and the first token from the prefill are the
    kernel's, written once.  It keeps the buffers' remaining tokens (``buf_tokens``, by each task's label):
    served tokens come off, a preemption by recomputation puts the discarded ones back, a prefix-cache hit
    takes the reused ones off.  Its requests by id are the station's ``tasks``; never-schedulable prompts
    and, with ``check_batches``, batch violations are reported into ``blocked`` and ``violations``.

    With ``kv_capacity_tokens``: the single-engine simulator's batch-time table (``kv_table``: its
    ``(tau_b, ks)``, which :func:`fluidq.simulate_network` makes) and memory rules
    (:class:`~fluidq.kernel.memory.StationMemory`), every resident in view in arrival order.  Without: the
    station's per-priority deques are the run's ``queues`` (its view in hop-priority order, the built-in
    schedulers' window; shared with the run-skipping path), its batch time ``t(b)`` from the station's
    table (``t(b, kv)`` for a context-aware time, ``kv`` the decoders' contexts), its remaining tokens the
    station's ``work`` (the clock hands it over around ``finish``)."""
    eng, name = s.engine, s.s.name

    def on_violation(t, bad):  # (EngineRun raises PolicyError next, naming the station: the run stops there)
        violations.extend(f"{name} t={t:.6g}: {m}" for m in bad[:3])

    def on_blocked(rids):
        tasks = run.by_id
        for rid in rids:
            blocked.add((name, tasks[rid].label))

    if eng.kv_capacity_tokens is not None:
        tau_b, ks = kv_table
        run = EngineRun((), (), (), policy=s.policy, b_max=eng.b_max, k_max=eng.k_max, tau_b=tau_b, ks=ks,
                        horizon=horizon, record=False, check=bool(check_batches), kv_cap=eng.kv_capacity_tokens,
                        preemption=eng.memory.preemption, swap_s_per_token=swap_s, memory=eng.memory,
                        compose=getattr(eng.batch_time, "composition_time", None), emit_at_prefill=s.emit,
                        fed=True, labels=buf_tokens, on_blocked=on_blocked, on_violation=on_violation,
                        station=name)
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
                        fed=True, labels=buf_tokens, on_blocked=on_blocked, on_violation=on_violation, queues=s,
                        station=name)
        s.residents = run.by_id
    s.engine_run = run
    s.tasks = run.by_id


_TABLE_MAX = 1 << 15

#: the largest station budget (tokens) the compiled network loop (:mod:`fluidq.kernel.network`) takes: it sizes
#: its per-station arrays by the largest budget of the network -- the batch-time table (one dense float64 array
#: of ``stations x (largest budget + 1)``, tabulated before the run because a network's batch sizes are not known
#: up front: lengths are drawn as the classes route), the decoders' and the batch's allocation arrays -- about 56
#: bytes per token per station: 14 MB per station at 2**18, 0.9 GB per station at the engines' largest budget,
#: 2**24.  A network with a larger station budget runs on the Python path (lazily filled tables), with a
#: :class:`~fluidq.kernel.KernelLimitWarning`.  :data:`fluidq.sim.core.EAGER_TAU_TOKENS` is this bound (the KV
#: stations had it already).
KERNEL_TABLE_MAX = 1 << 18


def _batch_time_table(engine):
    """``{b: t(b)}`` for ``b = 1..b_max``, from one vectorised call (as the single-engine simulator does).

    Element-wise evaluation gives the scalar call's floats; a batch-time model that cannot be evaluated
    on an array, or a ``b_max`` above ``_TABLE_MAX``, leaves the table empty (filled on demand).
    """
    tab = _batch_time_array(engine)
    return {} if tab is None else dict(enumerate(tab.tolist(), 1))


def _batch_time_array(engine, limit: int = _TABLE_MAX):
    """``t(b)`` for ``b = 1..b_max`` as an array from one vectorised call, or ``None`` (see
    :func:`_batch_time_table`; ``None`` too for a ``b_max`` above ``limit``: the Python path's dict of floats
    stops at :data:`_TABLE_MAX`, the compiled loop's array at :data:`KERNEL_TABLE_MAX`)."""
    if engine.b_max > limit:
        return None
    try:
        tab = np.asarray(engine.batch_time(np.arange(1, engine.b_max + 1, dtype=float)), dtype=float)
    except Exception:  # noqa: BLE001 -- fall back to scalar calls, which report their own errors
        return None
    if tab.shape != (engine.b_max,):
        return None
    return tab


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


class EventClock:
    """The kernel's one event clock: every Python run -- one engine (:func:`fluidq.kernel.step.run_generic`,
    through :func:`run_engine`) or every station of a network (:func:`run_clock`) -- advances its time here.

    It holds the event heap of batch ends (and of an idle engine's wake-ups), ordered by ``(time, start of
    the batch, station index, seq)``: at equal times the batch that started first ends first, then the
    station listed first, then the event scheduled first.  :meth:`run` merges that heap with a stream of
    external arrivals (first at equal times, none delivered after the horizon) and calls each event's
    handler; :meth:`begin` is a station's batch start -- its :class:`~fluidq.kernel.step.EngineRun`'s
    ``begin`` -- that schedules the batch's end, or, for an engine with its arrivals up front that is idle
    (or must read its outputs first, with async scheduling), its wake-up at the time ``begin`` moved it to.
    The horizon rule (no batch starts at or after it, the batches in progress are completed) and the
    progress reports are ``EngineRun.begin``'s; an event's handler ends the batch (``EngineRun.finish``)
    and starts the next one through :meth:`begin` again, so the loop that advances time is written once."""

    __slots__ = ("heap", "seq")

    def __init__(self):
        self.heap: list = []
        self.seq = itertools.count().__next__  # tie-break of events at equal keys: order of scheduling

    def begin(self, er, now, idx, on_end, on_wake, who):
        """Start a batch of station ``who`` (index ``idx``) at ``now``: ``er.begin(now)``; schedule the
        batch's end (handler ``on_end``) and return it, or, when no batch runs, return ``None`` after
        scheduling a run with arrivals up front to wake (``on_wake``) at the time ``begin`` moved it to
        (its next arrival, the horizon, or now to read the outputs of an async batch).  A fed run that
        forms no batch is over until its caller offers a request (``er.over``)."""
        end = er.begin(now)
        if end is not None:
            heapq.heappush(self.heap, (end, now, idx, self.seq(), on_end, who, None))
        elif not er.over:
            heapq.heappush(self.heap, (er.t, now, idx, self.seq(), on_wake, who, None))
        return end

    def run(self, horizon, ext_t=(INF,), arrive=None, record_until=None, next_rec=INF):
        """Process events in time order until none is left (or a handler returns a true value: stop); return
        the number of events processed (arrivals and heap events).

        ``ext_t``: the external arrival times in order, ending with an ``INF`` sentinel; each one at or
        before ``horizon`` is delivered as ``arrive(i, t)`` (``i`` its index) before any heap event at the
        same time.  A heap event ``ev = (t, start, idx, seq, handler, who, run)`` is delivered as
        ``handler(ev, t)``.  ``record_until(t)``: called before an event at ``t >= next_rec``, it records
        up to ``t`` and returns the next ``next_rec``."""
        heap = self.heap
        hpop = heapq.heappop
        lim = horizon if horizon < INF else sys.float_info.max  # (the INF sentinel is never delivered)
        events = 0
        ai = 0
        ta = ext_t[0]  # the next external arrival
        while True:
            if heap:
                ev = heap[0]
                te = ev[0]
            else:
                te = INF
            if ta <= te and ta <= lim:  # an external arrival (first at equal times)
                t = ta
                i = ai
                ai += 1
                ta = ext_t[ai]
                if t >= next_rec:
                    next_rec = record_until(t)
                events += 1
                arrive(i, t)
                continue
            if te == INF:  # (batches in progress at the horizon are completed; none starts after it)
                break
            hpop(heap)
            if te >= next_rec:
                next_rec = record_until(te)
            events += 1
            if ev[4](ev, te):
                break
        return events


def run_engine(run):
    """Run ``run``, an :class:`~fluidq.kernel.step.EngineRun` with its arrivals up front (:func:`run_generic`'s
    single engine: array-fed, with its window, async scheduling, initial residents, records and memory), on
    the :class:`EventClock` as its one station, until it is over; return ``run``.  The engine admits its
    own arrivals (at a batch's start and end, or up to the previous batch's start with async scheduling);
    the clock wakes it when it is idle, at the time its ``begin`` moved it to."""
    clock = EventClock()
    begin = clock.begin

    def on_end(ev, t):
        run.finish()  # (None after a pass that only swapped in: the engine tries again at once)
        begin(run, t, 0, on_end, on_wake, run)

    def on_wake(ev, t):
        begin(run, t, 0, on_end, on_wake, run)

    begin(run, run.t, 0, on_end, on_wake, run)
    clock.run(run.horizon)
    return run


def run_clock(network, horizon, gen, initial, dt_rec, check_batches, max_batches, method, swap_s, record_hops,
              kv_tables):
    """Run ``network`` on the event clock until ``horizon`` (inputs checked by the caller,
    :func:`fluidq.simulate_network`); return the run as a dict of the fields of its result
    (:class:`fluidq.sim.network.NetworkSimResult` less ``horizon_s``, ``wall_s``, ``seed`` and ``network``).

    ``gen``: the generator every draw comes from (arrivals, lengths, choices, random routers), in this
    loop's order; ``initial``: ``{hop label: n}`` at time 0; ``dt_rec``: the recording grid's step;
    ``method``: ``"auto"`` lets stations skip runs of identical batches (:func:`_fast_budget`),
    ``"generic"`` steps every batch; ``swap_s``: seconds per KV token swapped; ``record_hops``: record
    every finished hop; ``kv_tables``: ``{station index: (tau_b, ks)}``, the batch-time table (and
    seconds per KV token) of each station with a KV cache, as the single-engine simulator makes them."""
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
        _fed_engine(s, swap_s, buf_tokens, horizon, check_batches, violations, blocked, kv_tables.get(s.idx))

    # the kernel's event clock: its heap holds the stations' batch ends and run ends
    clock = EventClock()
    heap = clock.heap
    nseq = clock.seq  # tie-break of events at equal times: order of scheduling
    clock_begin = clock.begin
    hpush, hpop = heapq.heappush, heapq.heappop
    next_rid = itertools.count(1).__next__
    new_task = _new_task

    from ..network.model import NoTokens
    from ..workload.lengths import Fixed

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

    # router name -> (its stations in the order listed, a random router's probabilities (None: JSQ), whether a
    # JSQ router counts requests)
    router_plan = {r.name: ([sidx[e] for e in r.engines],
                            None if r.policy != "random" else tuple(float(q) for q in r.probabilities),
                            r.count == "requests") for r in network.routers}

    def pick_station(hop, p, d):
        """The station of ``hop``: its own, or the one its router picks (routing's rules: ``pick`` from one
        uniform for a random router, ``jsq_takes`` over the engines in the order listed for JSQ)."""
        if hop.engine in sidx:
            return sidx[hop.engine]
        engines, probs, by_requests = router_plan[hop.engine]
        if probs is not None:
            return engines[pick(gen.random(), probs, 0, len(probs))]
        best, key = None, None
        for j, s in enumerate(engines):
            k = len(s.tasks) if by_requests else s.current_work(now_box[0], arriving, (cur_start, cur_idx))
            if jsq_takes(j, k, key):
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
        task = new_task(rid, now, p, d, job, cont, rank, label)
        if mem is None:  # into the EngineRun's queues (its offer, inlined: the station keeps its work)
            s.tasks[rid] = task  # (a new hop: nothing is served yet, and its prompt is >= 1 token)
            s.work += p + d
            dq.append(task)
            owned = s.engine_run.owned
            if owned is not None:  # (the check: the fields as the engine wrote them, compared after select)
                owned[rid] = (p, d, 0, 0)
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
        """A hop refused by a station's KV cache: the request leaves the network or, inside a fork's branch,
        stays counted in the system (routing's ``refused_leaves``); whether the hop lies in a branch is read from
        its continuation's chain of parents."""
        parent = None if cont is None else cont[2]
        in_fork = False
        while parent is not None:
            if parent[0] == "join":
                in_fork = True
                break
            parent = parent[1][2]
        if refused_leaves(in_fork):
            in_sys[job[0]] -= 1

    choice_probs: dict = {}  # id(choice) -> (the choice, its options' probabilities)

    def advance(job, steps, idx, parent, scope, now):
        """Walk the route ``steps`` from step ``idx`` (``parent``: what follows the sequence; ``scope``: the
        forks open, by name): submit the next hop, or take a choice's option (routing's ``pick``, one uniform), a
        fork's branches in order and then its main line, a join's arrival (routing's ``fork_waits`` and
        ``join_arrive``); past the end, :func:`finish`."""
        while idx < len(steps):
            step = steps[idx]
            if isinstance(step, Hop):
                idx += 1
                submit(job, step, hop_info.get(id(step)) or plan_hop(step),
                       None if parent is None and idx >= len(steps) else (steps, idx, parent, scope), now)
                return
            if isinstance(step, Choice):
                cp = choice_probs.get(id(step))
                if cp is None:
                    cp = choice_probs[id(step)] = (step, tuple(float(pr) for pr, _ in step.options))
                probs = cp[1]
                chosen = step.options[pick(gen.random(), probs, 0, len(probs))][1]
                advance(job, chosen, 0, ("seq", (steps, idx + 1, parent, scope)), {}, now)
                return
            if isinstance(step, Fork):
                jr = _JoinRec(fork_waits(len(step.branches)))
                scope = dict(scope)
                scope[step.name] = jr
                for br in step.branches:
                    advance(job, br, 0, ("join", jr), {}, now)
                idx += 1
                continue
            if isinstance(step, Join):  # the main line arrives
                jr = scope[step.name]
                jr.waiting, last = join_arrive(jr.waiting)
                if not last:
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
        else:  # a branch arrives at its join: after the last arrival the main line goes on
            x.waiting, last = join_arrive(x.waiting)
            if last and x.cont is not None:
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
            hpush(heap, (t, start, s.idx, nseq(), run_end, s, run))

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
        hpush(heap, (t_end, t_last, s.idx, nseq(), run_end, s, run))

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
        # (the clock schedules the batch's end; a fed run that forms no batch waits for an offer)
        end = clock_begin(er, now, s.idx, end_batch, None, s)
        if s.mem is not None:
            s.work = er.work  # (recomputation and prefix reuse change it)
        s.busy = end is not None

    def end_batch(ev, now):
        """End the station's batch (the clock's event ``ev``): its EngineRun's ``finish`` (tokens served, the
        first token from the prefill, KV grown, the finished released and, without a KV cache, the station's
        deques moved on); its finished hops move on, then the station starts its next batch.  After a pass
        that only swapped in, the station tries again.  Returns whether the run stops (``max_batches``)."""
        nonlocal n_batches, cur_start, cur_idx
        _, cur_start, cur_idx, _, _, s, _ = ev
        er = s.engine_run
        if s.mem is None:
            er.work = s.work  # (the station's remaining tokens: the routing and the run skipping change them)
        fin = er.finish()
        s.work = er.work
        if fin is None:  # only swaps: no batch ran
            s.busy = False
            start_batch(s, now)
            return n_batches >= mb
        n_batches += 1
        # (empty per-rank deques are kept: ranks are few, and an empty deque adds nothing to a view)
        move_on(s, fin, now)
        if not s.busy:
            if s.fast_budget is not None and s.ndec <= s.fast_budget:
                run_station(s, now, False)  # (start_batch's first case, inlined)
            else:
                start_batch(s, now)
        return n_batches >= mb

    def run_end(ev, now):
        """The end of a station's run of identical batches (the clock's event ``ev``), unless the run was cut
        short by an arrival (a stale event, not counted).  Returns whether the run stops (``max_batches``)."""
        nonlocal cur_start, cur_idx, stale
        _, cur_start, cur_idx, _, _, s, run = ev
        if run is not s.run:
            stale += 1
            return False
        run_station(s, now, True)
        return n_batches >= mb

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
        """Record the grid points up to ``t``; return the next one (``math.inf`` past the last)."""
        nonlocal gi
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
        return grid_l[gi] if gi < G else math.inf

    def arrive(i, t):
        """External arrival ``i`` at ``t``: a new request of its class enters its route."""
        nonlocal arriving
        ci = ext_c[i]
        in_sys[ci] += 1  # (new_job, inlined)
        h0 = first_hop[ci]
        arriving = True
        if h0 is not None:  # (advance, inlined for a route that starts with a hop)
            submit((ci, t), h0, first_info[ci], first_cont[ci], t)
        else:
            advance((ci, t), routes[ci], 0, None, {}, t)
        arriving = False  # (an arrival ends no batch: max_batches is checked after batch ends)

    # (events: (time, start of the batch, station index, seq, handler, station, run): at equal times, the batch
    # that started first ends first, then the lower station index -- the event-skipping path can compute this
    # order for the batches inside a run, so both paths order equal times alike)
    stale = 0  # ends of runs cut short by an arrival
    mb = max_batches if max_batches is not None else INF
    events = clock.run(horizon, ext_t, arrive, record_until, next_rec) - stale
    if n_batches < mb:  # a user policy left a station idle with work that no later hop made it take up
        stalls = sorted((s.engine_run.idle_ask[0], s.idx, s.engine_run.idle_ask[1]) for s in stations
                        if s.engine_run.idle_ask is not None and s.engine_run.cur is None)
        if stalls:
            t_ask, si, waiting = stalls[0]
            raise _idle_error(stations[si].policy, t_ask, waiting, stations[si].s.name, NOTHING_CAME)
    record_until(horizon)  # (every grid point is <= horizon)
    # (flat lists: numpy reads them much faster than a list of short lists)
    rec_in = np.array([x for r in rows for x in r[0]], dtype=float).reshape(G, len(cls_names))
    rec_st_tok = np.array([x for r in rows for x in r[2]], dtype=float).reshape(G, len(stations))
    rec_st_req = np.array([x for r in rows for x in r[3]], dtype=float).reshape(G, len(stations))
    labels = dict.fromkeys(buf_tokens)  # every label met (routers add theirs as they pick), first seen first
    rec_buf = {lab: np.array([r[1].get(lab, 0) for r in rows], dtype=float) for lab in labels}
    return dict(
        times_s=grid, in_system={c: rec_in[:, i].copy() for i, c in enumerate(cls_names)},
        buffer_tokens={k: v for k, v in rec_buf.items()},
        station_tokens={s.s.name: rec_st_tok[:, s.idx].copy() for s in stations},
        station_requests={s.s.name: rec_st_req[:, s.idx].copy() for s in stations},
        completed=dict(zip(cls_names, completed)),
        mean_sojourn_s={c: (soj[i] / completed[i] if completed[i] else None) for i, c in enumerate(cls_names)},
        batches=n_batches, events=events,
        violations=tuple(violations[:50]), blocked=tuple(sorted(blocked)),
        preemptions={s.s.name: (s.mem.preemptions if s.mem is not None else 0) for s in stations},
        rejected={s.s.name: (s.mem.rejected if s.mem is not None else 0) for s in stations},
        hops=None if hops is None else {
            "station": np.array([h[0] for h in hops], dtype=np.int64),
            "arrival_s": np.array([h[1] for h in hops], dtype=float),
            "finish_s": np.array([h[2] for h in hops], dtype=float),
            "preemptions": np.array([h[3] for h in hops], dtype=np.int64)})
