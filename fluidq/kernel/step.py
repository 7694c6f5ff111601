"""The kernel's ``select()`` loop: ``policy.select(view)`` at every iteration, with optional KV-cache memory.

This path runs any policy (a user's object, an ordering whose keys change with time) and is the
reference the compiled loops (:mod:`fluidq.kernel.fcfs`, :mod:`fluidq.kernel.kv`) are tested against.
It moved here from ``fluidq.sim._generic`` (2026-12-06, issue 14; that path re-exports
:func:`run_generic` and :class:`PolicyError`): it imports only the errors and the policies, so it belongs
to the kernel layer, and :func:`fluidq.simulate` drives it.  The state of a run -- its request queues
(the residents in view, the window's waiting FIFO, the swapped-out), its memory
(:class:`~fluidq.kernel.memory.StationMemory`), its clock and counters -- is an :class:`EngineRun`, and one
iteration is :func:`step` (``EngineRun.step``: admit what the scheduler sees, ask the policy through the
memory rules, charge the batch's time, advance its requests, release the finished ones).  A step is
two halves that a clock calls apart (2026-12-06): ``begin()`` forms the batch and returns its end,
``finish()`` advances its requests at that end and returns the finished ones.  The run is driven by the
kernel's one event clock, :class:`fluidq.kernel.clock.EventClock`, which drives every station of a network
too: :func:`run_generic`'s engine is its one station (:func:`fluidq.kernel.clock.run_engine`), whose
``begin`` the clock calls at each batch end and at each wake-up of the idle engine (2026-12-06, issue 14;
the same run as calling :func:`step` until it returns ``False``).  A run either knows its arrivals up front
(``arr``, ``P``, ``D``: :func:`run_generic`) or is *fed*
(``fed=True``): a caller offers each request when it arrives (``offer``), sets the time (``begin(now)``)
and routes what ``finish()`` returns.  The Python network clock (:func:`fluidq.kernel.clock.run_clock`) runs each station
as a fed ``EngineRun`` on its event clock: with a KV cache, every resident in view in arrival order; without
one, with the station's per-priority deques as the run's ``queues`` (its view in hop-priority order, the
built-in schedulers' window), which the station's run-skipping path advances too.

Memory (``kv_capacity_tokens``) follows these rules, applied by
:class:`fluidq.kernel.memory.StationMemory` (their one written copy, which the stations of a network
drive too):

* a request *holds* KV tokens for its processed prompt and its generated tokens; it holds none
  before its first prefill chunk (admission) or after it finishes;
* a batch may only add as many KV tokens as are free.  *Admission only when memory allows*: a new
  request (holding no KV) is admitted only if its whole remaining prompt fits with a headroom of
  one token per request already holding KV (a simplified version of vLLM's watermark, so that an
  admission does not force a preemption at the next decode step); admission is head-of-line in
  the policy's order, and none happens while swapped-out requests wait or after a preemption in
  the same iteration.  When a new request cannot be admitted, the policy is asked again without the
  new requests, so that it can give the budget to admitted ones.  Prefill chunks of admitted
  requests are cut to the free memory (chunking policies) or dropped (whole-prompt policies);
* when the decode tokens alone do not fit, a resident is *preempted*: the last one in the
  policy's ordering (the latest arrival under FCFS, as vLLM does) among those whose ordering
  does not refuse through the optional hook ``ordering.may_evict(request, now_s) -> bool``;
  if every candidate refuses, decode tokens are dropped from the end of the batch, and only if
  that leaves nothing to run is the last candidate evicted anyway (otherwise the engine would
  deadlock);
* ``preemption="recompute"``: the victim's KV is discarded; it must prefill its prompt plus the
  tokens it had generated (vLLM merges them into the prompt).  Its :class:`RequestState` then has
  ``prompt_tokens`` = original prompt + ``recompute_tokens`` and ``prefilled`` = 0; the discarded
  KV counts as wasted tokens.
* ``preemption="swap"``: the victim's KV moves to host memory, costing ``swap_s_per_token`` per
  token (added to the iteration's time); it returns, oldest first and before any new request is
  admitted, as soon as its KV fits, paying the same cost again.

A request whose prompt plus output exceeds the capacity can never finish; it is rejected at
arrival (counted in ``rejected``), never admitted.

Those are the default rules (``engine.memory == Memory()``).  Any other
:class:`~fluidq.engine.Memory` is *paged* (:class:`~fluidq.kernel.memory.BlockPool`): a request holds
``ceil(tokens / block_size)`` blocks of the ``kv_capacity_tokens // block_size``, without headroom.
Each iteration the policy's batch is taken in two steps, as vLLM v1 does: the running requests
(holding blocks) get blocks for their next tokens, and while they do not fit the victim
(``memory.victim``: last in the policy's ordering, or most recently admitted) is preempted and the
policy asked again with the admitted requests alone: as in vLLM (v1 schedules its waiting queue only when
the running pass preempted nothing; V0 likewise), an iteration that preempted admits no waiting request,
the victim included (2026-12-06; a partially prefilled admitted request's chunk still runs); then the new
requests of the batch are admitted head-of-line while their reservation fits (``memory.reservation``: the
whole remaining prompt, or the chunk scheduled now).
With ``memory.prefix_caching`` a victim re-admitted takes back its own leading blocks that are
still cached (its prefill restarts after them; the tokens given back are not ``wasted``).  A
request needing more blocks than the cache has is rejected at arrival.  ``initial`` residents
count as admitted in their order.  With ``emit_at_prefill`` the iteration completing a prefill
gives the first output token (vLLM), so ``output_tokens - 1`` decode iterations follow, and the
iteration in which a recomputation after a preemption catches up (its prompt being the original one
plus the tokens generated so far) gives the next token (2026-12-07: vLLM v1 keeps the token sampled for
every scheduled request but a partial prefill, ``vllm/v1/worker/gpu_model_runner.py``, and
``Scheduler.update_from_output`` appends it; before, a decode iteration followed to give it); a batch time
with ``composition_time`` is charged from the batch's prefill chunks (with their prior context)
and the decode contexts (KV held) instead of its token count.  A decoder's context (a composition's, a
context-aware time's ``kv``) is the KV it holds before the step, with or without a cache: without one, prompt +
generated tokens, less the prefill's first token with ``emit_at_prefill`` (its KV is cached only at the next
step, as a cache's count has it; vLLM's ``num_computed_tokens``).

Async scheduling (``async_scheduling``, vLLM's ``--async-scheduling``, on by default since vLLM
0.14): the engine schedules batch ``k + 1`` while batch ``k`` runs and reads batch ``k``'s outputs
only after that.  So the batch starting at ``t`` sees the arrivals up to the start of the batch
before it (a request arriving during batch ``k`` runs in batch ``k + 2``), and a request that
finishes in batch ``k`` keeps its ``k_max`` slot and its KV through batch ``k + 1`` (it is given no
token there).  When nothing is scheduled for the next batch the engine reads every output and
arrival at once.  Decodes continue without a gap (the next token is fed on the device).

Cost.  ``policy.select`` reads every request in its view, so a view of the whole queue would make
each iteration cost O(queue) and an overloaded run O(horizon^2).  For a built-in
:class:`~fluidq.policies.Scheduler` whose ordering keeps arrival order (FCFS), the kernel shows the
policy only the requests it could touch: every request that has been served (or holds or held KV)
plus the ``min(b_max, k_max) + 1`` oldest waiting ones that it could admit (such a scheduler takes
waiting prompts head-of-line, each costing at least one token and one slot of the batch, so it
never reaches further).  The rest wait in a FIFO (O(1) per arrival); a waiting prompt that the
scheduler reports it can never schedule (``Batch.blocked``) is set aside once reported.  The
batches, and so the results, are the same as with the whole queue in view (the tests check it);
the count of requests shown to the policy is returned as ``examined``.  Other policies and
orderings see the whole queue (their order may depend on every request).
"""
from __future__ import annotations

import math

from collections import deque

from ..errors import ParameterError, PolicyError  # noqa: F401 (PolicyError: re-exported)
from ..policies.base import Batch, QueueView, RequestState, batch_faults, batch_violations
from .memory import StationMemory, _may_evict_hook, _victim_order  # noqa: F401 (re-exported)

NAN = math.nan
INF = math.inf


def _where(station) -> str:
    """The prefix of a network station's :class:`PolicyError` messages (none for one engine)."""
    return "" if station is None else f"station {station!r}: "


def _require_batch(name, batch, t, station=None):
    """A policy's return that is not a :class:`~fluidq.policies.Batch` (or a subclass) is a :class:`PolicyError`
    naming the policy (EngineRun and the select() kernel, :mod:`fluidq.kernel.select`, call it; a network's
    station, ``station``, is named first)."""
    if not isinstance(batch, Batch):
        raise PolicyError(f"{_where(station)}policy {name!r} at t={t:.6g} s returned {batch!r:.80}, not a "
                          f"fluidq.policies.Batch")


def _trusted(policy) -> bool:
    """A built-in :class:`~fluidq.policies.Scheduler` whose ``select`` and ``budgets`` are the library's: its batches
    are valid by construction (tests hold them), so with the check off none of its batches is read twice."""
    from ..policies.schedulers import Scheduler

    cls = type(policy)
    return isinstance(policy, Scheduler) and cls.select is Scheduler.select and cls.budgets is Scheduler.budgets


def _bad_batch(policy, t, bad, station=None):
    """The :class:`PolicyError` of a batch whose first problem (of :func:`~fluidq.policies.base.batch_violations` or
    :func:`~fluidq.policies.base.batch_faults`) is ``bad[0]``: every path raises this message."""
    return PolicyError(f"{_where(station)}policy {getattr(policy, 'name', policy)!r} at t={t:.6g} s: {bad[0]}")


def _note_raised(exc, policy, t, path, station=None):
    """A user policy's own exception keeps its type; a note (PEP 678) says which policy raised it, when, on which
    path."""
    exc.add_note(f"raised in select(view) of {_where(station)}policy {getattr(policy, 'name', policy)!r} at "
                 f"t={t:.6g} s ({path})")


def _idle_with_work(policy, view, blocked, t, station=None, ending="nothing more arrives"):
    """A policy scheduled nothing (and did not list as blocked) some request with work left, with nothing
    more to arrive: no later call can differ, so the run would end with that work silently undone.  ``view``:
    anything with the ``requests`` in the engine (with a KV cache, every resident: the admitted, the waiting and
    the swapped out)."""
    waiting = _waiting_ids(view, blocked)
    if waiting:
        raise _idle_error(policy, t, waiting, station, ending)


def _waiting_ids(view, blocked) -> list:
    if view is None:
        return []
    return [r.rid for r in view.requests if r.demand > 0 and r.rid not in blocked]


#: how a network station's stall ends its message (the clocks check at the horizon: see ``EngineRun.idle_ask``)
NOTHING_CAME = "nothing more reached the station before the horizon"


def _idle_error(policy, t, waiting, station=None, ending="nothing more arrives"):
    return PolicyError(f"{_where(station)}policy {getattr(policy, 'name', policy)!r} at t={t:.6g} s scheduled "
                       f"nothing (an empty batch) while {len(waiting)} requests wait with work left (ids "
                       f"{waiting[:5]}{'...' if len(waiting) > 5 else ''}) and {ending}: the run "
                       f"could never finish them (schedule one, or list those it can never schedule in "
                       f"Batch.blocked)")


_FIELDS = ("prompt_tokens", "output_tokens", "prefilled", "decoded")


def _tampered(owned, batch, by_id):
    """With the check: the first field of a request in ``batch`` that differs from what the engine last wrote
    (``owned``: ``{rid: (prompt, output, prefilled, decoded)}``) -- a policy wrote it -- as a one-item list of the
    message, or ``None``.  O(batch).  Requests that are not in the batch are compared when they next are (an edit
    matters only once the request runs); entries that are not ``(rid, tokens)`` pairs of residents are left to
    :func:`~fluidq.policies.base.batch_faults`."""
    try:
        rids = [item[0] for item in batch.prefill] + list(batch.decode)
        for rid in rids:
            was = owned.get(rid)
            r = by_id.get(rid)
            if was is None or r is None:
                continue
            now = (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded)
            if now != was:
                k = next(i for i in range(4) if now[i] != was[i])
                return [f"request {rid}: the policy changed RequestState.{_FIELDS[k]} ({was[k]} -> {now[k]}); a "
                        f"request's fields are the engine's, read-only to a policy"]
    except (TypeError, IndexError, KeyError):  # (not pairs, unhashable ids: batch_faults says what)
        return None
    return None


class _All:
    """Every request in an engine with a KV cache, as a view's ``requests`` (the residents and the swapped out)."""

    __slots__ = ("requests",)

    def __init__(self, residents, swapped):
        self.requests = list(residents) + [r for r, _ in swapped]


class _Residents:
    """The resident list of a run without memory (with memory, :class:`StationMemory` owns it)."""

    def __init__(self):
        self.residents: list = []

    def add(self, r):
        self.residents.append(r)


class _Unkept(dict):
    """The per-request records (first scheduled, prefill done, first token, finish, preemptions) of a fed run
    whose caller keeps its own (``queues``): every read gives ``default`` (so each event is a request's
    first) and writes are dropped, so that requests leaving the engine by the caller's other path (a network
    station's run skipping) leave nothing behind."""

    __slots__ = ("default",)

    def __init__(self, default):
        super().__init__()
        self.default = default

    def __missing__(self, key):
        return self.default

    def __setitem__(self, key, value):
        pass


class EngineRun:
    """The state of one engine under the ``select()`` loop -- its request queues, its memory, its clock and
    counters -- and :meth:`step`, one iteration, in two halves a clock can call apart: :meth:`begin` (form
    the batch, return its end) and :meth:`finish` (advance its requests at the end, return the finished).
    :func:`run_generic` builds one and runs it on the kernel's event clock (the run of calling ``step()``
    until it returns ``False``); the arguments are :func:`run_generic`'s, and:

    ``fed=True``: no arrivals up front (``arr``, ``P``, ``D`` empty), no async scheduling; a caller's clock
    offers requests one by one (:meth:`offer`, after :meth:`refuses`), sets the time with ``begin(now)`` and routes what
    :meth:`finish` returns -- a station of a network.  Its per-request records are kept by id while the
    request is in the engine, and no backlog is recorded.  ``labels``: a dict of tokens left per label
    (``r.label``), decremented as the engine serves them and changed by recomputation and prefix reuse as
    ``work`` is.  ``on_blocked(rids)``: called with the ids a batch reports never schedulable.
    ``on_violation(t, messages)``: called with a bad batch's problems before the :class:`PolicyError` is raised.
    ``station``: a network station's name, which starts every :class:`PolicyError` message (``station 'E': ...``).

    What is checked (2026-12-07, h-fixpol).  ``check=True``: :func:`~fluidq.policies.base.batch_violations` (every
    constraint, the budgets (6d) ``b_max`` and ``k_max`` included) and, before it, that the batch's requests' fields
    (prompt, output, prefilled, decoded) are what the engine last wrote (``owned``; a policy that wrote them raises,
    O(batch)).  ``check=False``: :func:`~fluidq.policies.base.batch_faults` only -- what no engine can run (ids that
    are not whole numbers or not residents', in ``blocked`` too; chunks below one token or past the remaining prompt;
    a request twice in the prefill part; (6a), (6c)) -- so the check off skips the budgets and the comparison of the
    fields, nothing else; a built-in scheduler whose ``select`` and ``budgets`` are the library's is not read at all.
    A policy's own exception propagates with its type and a note (PEP 678) naming the policy, the time and the path.
    An empty batch while requests wait with work left (not in ``blocked``) and nothing more arrives raises, with or
    without a KV cache; a fed run notes it (``idle_ask``) for its caller's clock to raise at the horizon.

    ``queues`` (a fed run without a KV cache): the caller's queues of the engine's requests, which replace
    the resident list -- a network station's per-priority deques, which its run-skipping path advances
    too.  It has ``residents`` (truthy while a request is in the engine: the run's ``by_id``, which the
    caller sets after construction), ``view(b_max, k_max)`` (the requests the policy sees, in the caller's
    order), ``add(r)`` (an offered request) and ``end(batch, gone)`` (called by :meth:`finish` once the
    batch's tokens are served, with the decoding requests that finished, in batch order: moves the requests
    whose prefill completed, takes out the finished ones and returns them, in the caller's order).  The
    per-request records are then not kept (:class:`_Unkept`); ``labels`` is required."""

    # slots: a run has some 50 attributes, more than a shared-key instance dict holds in CPython (30), and
    # without slots the step's attribute reads and writes measured 5 % slower than local variables
    __slots__ = ("D", "P", "arr", "async_scheduling", "b_max", "batches", "blocked_ids", "bn", "bt", "busy", "bw",
                 "by_id", "check", "compose", "cur", "emit_at_prefill", "examined", "faults", "fed", "fin", "fs", "ftk",
                 "hidden_demand", "hold", "horizon", "hwm", "idle_ask", "owned", "k_max", "k_max0", "ks", "labels", "lag_fin",
                 "last_unseen", "last_view", "mem", "mixed_iters", "n", "n0", "n_fresh", "n_iter", "n_parked", "na",
                 "never_fits", "next_report", "npre", "on_blocked", "on_violation", "over", "paged", "pdn",
                 "pending", "policy", "progress", "queues", "rec", "record", "station", "swapped", "t", "t0", "t_seen", "tau_b",
                 "tok_served", "w_size", "window", "work")

    def __init__(self, arr, P, D, *, policy, b_max, k_max, tau_b, ks, horizon, record, check, kv_cap=None,
                 preemption="recompute", swap_s_per_token=0.0, record_batches=False, initial=(),
                 progress=None, window=False, memory=None, compose=None, emit_at_prefill=False,
                 async_scheduling=False, fed=False, labels=None, on_blocked=None, on_violation=None,
                 queues=None, station=None):
        if queues is not None and (not fed or kv_cap is not None or labels is None):
            raise ParameterError("queues", queues, "None unless the run is fed, keeps labels and has no KV cache")
        if fed and (window or initial or len(arr)):
            raise ParameterError("fed", fed, "a fed run without arrivals up front, initial residents or window")
        if fed and async_scheduling:  # begin() may release lagging finished requests it does not return
            raise ParameterError("async_scheduling", async_scheduling, "False for a fed run (its caller routes "
                                 "only what finish() returns)")
        self.arr, self.P, self.D = arr, P, D
        self.fed, self.labels, self.on_blocked, self.on_violation = fed, labels, on_blocked, on_violation
        self.policy, self.b_max, self.k_max, self.tau_b, self.ks = policy, b_max, k_max, tau_b, ks
        self.horizon, self.record, self.check, self.progress = horizon, record, check, progress
        # what no engine can run (batch_faults) is refused with the check off too; a built-in scheduler's batches
        # are valid by construction and read once
        self.faults = bool(check) or not _trusted(policy)
        self.station = station  # (a network's station: named in PolicyError messages)
        self.idle_ask = None  # (a fed run) the time and waiting ids of an empty answer with work left, until the next batch
        # with the check: each request's fields as the engine last wrote them, {rid: (prompt, output, prefilled,
        # decoded)}, compared after select() for the batch's requests (a policy writing them: PolicyError)
        self.owned = {} if check else None
        self.window, self.compose, self.emit_at_prefill = window, compose, emit_at_prefill
        self.async_scheduling = async_scheduling
        self.n = n = len(arr)
        self.n0 = n0 = len(initial)
        N = n0 + n
        self.fs = [NAN] * N  # first scheduled, prefill done, first token, finish (per request id)
        self.pdn = [NAN] * N
        self.ftk = [NAN] * N
        self.fin = [NAN] * N
        self.npre = [0] * N
        if fed:  # requests come and go with ids the caller gives: records by id, from offer() until they leave
            self.fs, self.pdn, self.ftk, self.fin, self.npre = {}, {}, {}, {}, {}
            if queues is not None:  # (the caller keeps its own: see _Unkept)
                self.fs = self.pdn = self.ftk = self.fin = _Unkept(NAN)
                self.npre = _Unkept(0)
        self.queues = queues
        self.by_id: dict = {}
        self.batches = [] if record_batches else None
        self.blocked_ids: set = set()
        self.work = 0  # tokens left to serve in the system
        mem = None if kv_cap is None else StationMemory(policy, kv_cap, memory, preemption, swap_s_per_token,
                                                        self._on_preempt, self._on_reuse)
        self.mem = mem
        self.hold = (_Residents() if queues is None else queues) if mem is None else mem
        self.swapped = [] if mem is None else mem.swapped  # (mem.swapped is never rebound)
        self.paged = paged = mem is not None and mem.paged
        self.hwm: dict = {}  # paged records: prompt tokens ever computed per request (recomputation is not useful)
        rec = {"t_s": [], "prefill_tokens": [], "decode_tokens": [], "requests": [], "batch_s": [],
               "demand": [], "kv_tokens": []} if record else None
        if record and kv_cap is not None:
            rec["kv_used"] = []
        if record and paged:
            rec.update(resident=[], waiting=[], useful_tokens=[])
        self.rec = rec
        self.examined = 0  # requests shown to the policy, summed over select calls (the kernel's cost)
        self.pending: deque = deque()  # with window: waiting requests not yet shown to the policy, in arrival order
        self.n_fresh = 0  # with window: requests in view never served that the policy could admit
        self.n_parked = 0  # with window: waiting requests reported blocked (never schedulable), set aside
        self.hidden_demand = 0  # prompt tokens of the pending and parked requests
        self.last_view = None  # the view of the last select call, and the demand it did not show
        self.last_unseen = 0
        if window:
            b_eff, k_eff = policy.budgets(QueueView(requests=(), now_s=0.0, b_max=b_max, k_max=k_max))
            self.w_size = int(min(b_eff, k_eff)) + 1
            # a prompt that a non-chunking scheduler can never fit does not count towards the window
            self.never_fits = INF if (policy.chunked or policy.chunk_long_prompts) else b_eff
        for j, r0 in enumerate(initial):
            r = RequestState(rid=j, arrival_s=float(r0.arrival_s), prompt_tokens=int(r0.prompt_tokens),
                             output_tokens=int(r0.output_tokens), prefilled=int(r0.prefilled),
                             decoded=int(r0.decoded), score=r0.score)
            self.by_id[j] = r
            if self.owned is not None:
                self.owned[j] = (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded)
            self.work += r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded
            if mem is None:
                self.hold.residents.append(r)
            elif not mem.hold(r, r.prefilled + r.decoded):
                raise ParameterError("initial", f"<{n0} residents>", f"residents whose KV fits in the "
                                     f"{mem.pool.total} blocks of {mem.bs} tokens of the cache")
        self.t = 0.0
        self.na = 0  # arrivals admitted so far
        self.bt, self.bn, self.bw = [], [], []  # the backlog: times, requests, tokens (a fed run records none)
        self.n_iter = 0
        self.busy = 0.0
        self.mixed_iters = 0
        self.tok_served = 0
        self.next_report = 0.0
        # async scheduling (vLLM's --async-scheduling): the batch about to run was scheduled while the
        # previous one ran, so it sees the arrivals up to that batch's start (t_seen) and the requests
        # finished in it (lag_fin) still hold their slots and KV blocks
        self.k_max0 = k_max
        self.lag_fin: list = []
        self.t_seen = None
        self.cur = None  # the batch in flight between begin() and finish()
        self.t0 = 0.0  # its start
        self.over = False  # the run is over (begin() returned None at the horizon or with nothing left)

    def _on_preempt(self, r, again, recomputed):
        if self.owned is not None:  # (the memory rules wrote its prompt and prefilled)
            self.owned[r.rid] = (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded)
        self.npre[r.rid] += 1
        if recomputed:
            self.work += again  # the discarded prompt and generated tokens must be prefilled again
            if self.labels is not None:
                self.labels[r.label] += again

    def _on_reuse(self, r, tokens):
        if self.owned is not None:
            self.owned[r.rid] = (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded)
        self.work -= tokens  # cached prompt tokens taken back: not computed again
        if self.labels is not None:
            self.labels[r.label] -= tokens

    # -- a fed run: requests offered one by one by a caller's clock (a network's routing) ---------------
    def refuses(self, prompt_tokens, output_tokens) -> bool:
        """Whether a request of these lengths can never fit the KV cache (then it is counted as rejected
        and must not be offered)."""
        return self.mem is not None and self.mem.rejects(prompt_tokens, output_tokens)

    def offer(self, r) -> None:
        """Feed request ``r`` to the engine now (a :class:`RequestState`, or a subclass carrying the caller's
        fields: with ``labels``, its ``label``).  Its id ``r.rid`` is the caller's and must be unique among
        the requests in the engine; its remaining tokens join the engine's ``work`` (and its label's count
        with ``labels``, which the caller adds itself).  It is in view from the next :meth:`begin`."""
        rid = r.rid
        self.by_id[rid] = r
        if self.owned is not None:
            self.owned[rid] = (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded)
        if self.queues is None:
            self.fs[rid] = self.pdn[rid] = self.ftk[rid] = self.fin[rid] = NAN
            self.npre[rid] = 0
        self.work += r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded
        self.hold.add(r)

    def admit_arrivals(self, t):
        """Admit every arrival up to time ``t``, recording the backlog at each arrival's own time."""
        arr, n, na = self.arr, self.n, self.na
        if na >= n or arr[na] > t:
            return
        mem, window, P, D, by_id = self.mem, self.window, self.P, self.D, self.by_id
        residents, swapped, pending = self.hold.residents, self.swapped, self.pending
        bt, bn, bw = self.bt, self.bn, self.bw
        work, hidden, n0, n_parked = self.work, self.hidden_demand, self.n0, self.n_parked
        owned = self.owned
        while na < n and arr[na] <= t:
            i = na
            na += 1
            rid = n0 + i
            if mem is not None and mem.rejects(P[i], D[i]):
                continue
            r = RequestState(rid=rid, arrival_s=float(arr[i]), prompt_tokens=int(P[i]), output_tokens=int(D[i]))
            if owned is not None:
                owned[rid] = (r.prompt_tokens, r.output_tokens, 0, 0)
            if window:
                pending.append(r)
                hidden += r.prompt_tokens
            if mem is not None:
                mem.add(r, resident=not window)
            elif not window:
                residents.append(r)
            by_id[rid] = r
            work += P[i] + D[i]
            bt.append(arr[i])
            bn.append(len(residents) + len(swapped) + len(pending) + n_parked)
            bw.append(work)
        self.na, self.work, self.hidden_demand = na, work, hidden

    def show_waiting(self):
        """Move waiting requests into view until it holds ``w_size`` the policy could admit."""
        pending, residents = self.pending, self.hold.residents
        while pending and self.n_fresh < self.w_size:
            r = pending.popleft()
            residents.append(r)
            self.hidden_demand -= r.prompt_tokens
            if r.prompt_tokens <= self.never_fits:
                self.n_fresh += 1

    def ask(self, visible, t, kv_free):
        """``policy.select`` on the requests in ``visible``; checks the batch, sets blocked ones aside.
        A view of every resident (``visible is hold.residents``) leaves unseen only the window's
        hidden demand; a view narrowed by the memory rules shows none of it."""
        hold = self.hold
        self.last_unseen = self.hidden_demand if visible is hold.residents else 0
        # (a tuple on every path: a policy that edits its view's sequence must not edit a caller's list)
        view = QueueView(requests=tuple(visible), now_s=t, b_max=self.b_max, k_max=self.k_max, kv_free_tokens=kv_free)
        self.last_view = view
        self.examined += len(visible)
        policy = self.policy
        try:
            batch = policy.select(view)
        except Exception as e:  # the user's exception, its type kept (they debug it), with a note of where
            _note_raised(e, policy, t, "the Python network clock" if self.fed else
                         "fluidq.simulate's EngineRun, method='generic'", self.station)
            raise
        if batch.__class__ is not Batch:  # (check on or off: no raw AttributeError)
            _require_batch(getattr(policy, "name", policy), batch, t, self.station)
        if self.owned is not None:  # (the check: the batch's requests as the engine left them)
            bad = _tampered(self.owned, batch, self.by_id)
            if bad:
                raise _bad_batch(policy, t, bad, self.station)
        if self.faults:  # (check off: only what no engine can run; a built-in scheduler's batches are not read)
            bad = batch_violations(batch, view) if self.check else batch_faults(batch, view)
            if bad:
                if self.on_violation is not None:  # (the caller hears of it first; it may raise its own error)
                    self.on_violation(t, bad)
                raise _bad_batch(policy, t, bad, self.station)
        if batch.blocked:
            self.blocked_ids.update(batch.blocked)
            if self.on_blocked is not None:
                self.on_blocked(batch.blocked)
            if self.window:  # never schedulable: reported once, then set aside (still in the system)
                fs = self.fs
                gone = {rid for rid in batch.blocked if fs[rid] != fs[rid]}
                if gone:
                    for q in hold.residents:
                        if q.rid in gone:
                            self.n_parked += 1
                            self.hidden_demand += q.prompt_tokens
                            if q.prompt_tokens <= self.never_fits:  # pragma: no cover - it blocks only those
                                self.n_fresh -= 1
                    hold.residents = [q for q in hold.residents if q.rid not in gone]
        return view, batch

    def _over_budget(self, batch, view, t):
        """The :class:`PolicyError` of a batch over ``b_max`` run with the check off where no batch time can be
        charged for it: the select loop's message (``batch_violations``' first problem, (6d)).  A run of
        :func:`fluidq.simulate` refuses every such batch (the select loop's table ends at ``b_max``); a fed run
        (a network station) runs it where its table holds a time, and refuses it only past the table."""
        bad = batch_violations(batch, view) or [f"(6d) batch has {batch.tokens} tokens > b_max={self.b_max}"]
        if self.on_violation is not None:
            self.on_violation(t, bad)
        return _bad_batch(self.policy, t, bad, self.station)

    def release(self, fin):
        """Take the finished requests ``fin`` out of the engine (their KV is freed)."""
        if self.mem is not None:
            self.mem.after_batch(fin)  # releases their KV (and notes the peak)
        elif fin and self.queues is None:  # (the caller's queues let them go in end())
            gone = {r.rid for r in fin}
            self.hold.residents = [r for r in self.hold.residents if r.rid not in gone]
        by_id = self.by_id
        for r in fin:
            by_id.pop(r.rid, None)
        if self.owned is not None:
            for r in fin:
                self.owned.pop(r.rid, None)
        if self.fed and self.queues is None:
            for d in (self.fs, self.pdn, self.ftk, self.fin, self.npre):
                for r in fin:
                    d.pop(r.rid, None)

    def step(self) -> bool:
        """One iteration of the engine at its time ``t`` -- the kernel's ``step``: :meth:`begin` (admit the
        arrivals the scheduler can see, form the batch, charge its time) then :meth:`finish` (advance every
        request in it, release the finished ones).  An idle engine jumps to the next arrival instead; a
        memory pass that only swaps in charges the swap time.  Returns ``False`` when the run is over (the
        horizon is reached, or nothing is left to arrive or run), else ``True``."""
        if self.begin() is None:
            return not self.over
        self.finish()
        return True

    def begin(self, now=None):
        """The first half of an iteration at the engine's time ``t``: admit the arrivals the scheduler can
        see (a fed run's caller has offered them), form the batch (``policy.select`` through :meth:`ask`, with
        the memory rules of :class:`~fluidq.kernel.memory.StationMemory` when there is a KV cache) and charge
        its time.

        Returns the time the engine is next free -- the end of the batch now in flight (``self.cur``), or
        of a memory pass that only swapped in (``self.cur`` is ``None``) -- and moves the clock ``t`` there;
        :meth:`finish` is then due at that time.  Returns ``None`` when nothing is in flight: the engine
        is idle (a run with arrivals up front has moved ``t`` to the next one; a fed run waits for
        :meth:`offer`), read its lagging outputs (async scheduling), or the run is over (``self.over``:
        the horizon is reached, or nothing is left to arrive or run; for a fed run, only that nothing is
        left now: a later offer and ``begin(now)`` go on).  ``now``: the caller's clock sets the
        engine's time first (a fed run, idle until then)."""
        if now is not None:
            self.t = now
        t = self.t
        hold, swapped, pending, mem = self.hold, self.swapped, self.pending, self.mem
        if not self.fed:  # (a fed run's caller offers the arrivals and records the station's state)
            self.admit_arrivals(t if self.t_seen is None else self.t_seen)
            self.bt.append(t)
            self.bn.append(len(hold.residents) + len(swapped) + len(pending) + self.n_parked)
            self.bw.append(self.work)
        if t >= self.horizon:
            self.over = True
            return None
        if self.progress is not None and t >= self.next_report:
            self.progress(t, self.na)
            self.next_report = t + 1.0 + 0.02 * t
        if self.window:
            self.show_waiting()
        arr, na, n = self.arr, self.na, self.n
        if not hold.residents and not swapped:
            if na >= n:
                self.over = True
                return None
            self.t = max(t, min(self.horizon, arr[na]))
            self.t_seen = None
            return None
        async_scheduling = self.async_scheduling
        if async_scheduling and self.k_max0 is not None:
            # requests finished in the batch in flight still hold their max_num_seqs slots
            self.k_max = self.k_max0 - len(self.lag_fin)
            if self.k_max < 1:  # every slot is held by a finished request: read the outputs first
                self.k_max = self.k_max0
                self.release(self.lag_fin)
                self.lag_fin = []
                self.t_seen = None
                return None
        if mem is None:
            queues = self.queues
            view, batch = self.ask(hold.residents if queues is None else queues.view(self.b_max, self.k_max), t,
                                   None)
            extra_s = 0.0
        else:
            # swap-ins, admission and preemption by the memory rules (one written copy)
            batch, extra_s = mem.form(t, self.ask)
            view = self.last_view
        unseen = self.last_unseen
        if batch is None or batch.empty:
            if async_scheduling and (self.lag_fin or self.t_seen is not None):
                # nothing in flight: the engine sees every output and arrival now
                self.release(self.lag_fin)
                self.lag_fin = []
                self.t_seen = None
                return None
            if extra_s > 0:
                self.cur = None
                self.t = t = t + extra_s
                self.busy += extra_s
                return t
            if na >= n:
                if self.fed:  # a later offer may change the answer: the caller's clock decides at the horizon
                    if self.faults:  # (the last such answer: the one no later call changed)
                        waiting = _waiting_ids(view if mem is None else _All(hold.residents, swapped),
                                               self.blocked_ids)
                        self.idle_ask = (t, waiting) if waiting else None
                elif mem is None or self.faults:  # nothing will ever change the policy's answer: say so
                    # (with a KV cache too: with nothing running every swapped-out request fits again and a
                    # waiting prompt fits the empty cache -- longer ones were rejected at arrival --, so an empty
                    # batch is the policy's own; every resident counts, not only the last, narrowed, view)
                    _idle_with_work(self.policy, view if mem is None else _All(hold.residents, swapped),
                                    self.blocked_ids, t)
                self.over = True
                return None
            self.t = min(self.horizon, arr[na])
            return None
        self.idle_ask = None
        by_id = self.by_id
        record, compose, ks = self.record, self.compose, self.ks
        tokens = batch.tokens
        if tokens < 1:  # (check on or off) tau_b[0] is NaN: the clock would stop, the run spin
            raise PolicyError(f"policy {getattr(self.policy, 'name', self.policy)!r} at t={t:.6g} s returned "
                              f"a batch of {tokens} tokens: {batch!r} (every prefill chunk needs at least one "
                              f"token; return Batch() when nothing is to be scheduled)")
        if tokens > self.b_max and not self.fed:  # (the check off) the select loop's table ends at b_max: refused
            raise self._over_budget(batch, view, t)
        if compose is not None:  # the batch's composition: prefill chunks with prior context, decode contexts
            if mem is not None:
                kv = mem.kv
                ctxs = [kv[rid] for rid in batch.decode]
                tau = compose([(m, kv[rid]) for rid, m in batch.prefill], ctxs)
            else:
                emit_at_prefill = self.emit_at_prefill
                ctxs = [by_id[rid].prefilled + by_id[rid].decoded - emit_at_prefill for rid in batch.decode]
                tau = compose([(m, by_id[rid].prefilled) for rid, m in batch.prefill], ctxs)
            kvr = sum(ctxs)
        elif ks:  # context-aware: the decoders' KV held (with a cache, its count; without one, prompt + generated
            kvr = 0  # tokens less the prefill's first token, whose KV is cached only at the next step, as a cache holds)
            if mem is not None:
                kv = mem.kv
                for rid in batch.decode:
                    kvr += kv[rid]
            else:
                for rid in batch.decode:
                    kvr += by_id[rid].prefilled + by_id[rid].decoded
                kvr -= self.emit_at_prefill * len(batch.decode)
            try:
                tau = self.tau_b[tokens] + ks * kvr
            except IndexError:  # (a fed run, the check off: past a station's table, not a bare IndexError)
                raise self._over_budget(batch, view, t) from None
        else:
            kvr = 0
            try:
                tau = self.tau_b[tokens]
            except IndexError:
                raise self._over_budget(batch, view, t) from None
        if record:
            rec = self.rec
            rec["t_s"].append(t)
            rec["prefill_tokens"].append(batch.prefill_tokens)
            rec["decode_tokens"].append(batch.decode_tokens)
            rec["requests"].append(batch.n_requests)
            rec["batch_s"].append(tau + extra_s)
            rec["demand"].append(view.demand + unseen)
            if not ks and compose is None:
                kvr = sum(by_id[rid].prefilled + by_id[rid].decoded - by_id[rid].recompute_tokens
                          for rid in batch.decode)
            rec["kv_tokens"].append(kvr)
        if self.batches is not None:
            self.batches.append(batch)
        self.cur = batch
        self.t0 = t
        t += tau
        if extra_s:
            t += extra_s
        self.t = t
        self.n_iter += 1
        self.busy += tau + extra_s
        self.tok_served += tokens
        return t

    def finish(self):
        """The second half of an iteration, at the end ``t`` of the batch :meth:`begin` formed: the
        arrivals up to ``t`` come in first (at equal times arrivals precede a batch's end), then every
        request of the batch advances (prefill chunks, the first token of a completed prefill with
        ``emit_at_prefill``, decode tokens, KV grown) and the finished ones are released.  Returns the
        finished requests (with async scheduling, those released now: the previous batch's), or ``None``
        when no batch was in flight (a pass that only swapped in)."""
        batch = self.cur
        if batch is None:
            return None
        self.cur = None
        t0, t = self.t0, self.t
        if self.async_scheduling:
            self.admit_arrivals(t0)  # the next batch was scheduled while this one ran
            self.t_seen = t0
        elif not self.fed:
            self.admit_arrivals(t)
        mem, hold, labels = self.mem, self.hold, self.labels
        record, emit_at_prefill, window = self.record, self.emit_at_prefill, self.window
        by_id = self.by_id
        work = self.work - batch.tokens
        if batch.prefill and batch.decode:
            self.mixed_iters += 1
        done = False
        useful = 0
        grown = 0
        paged = self.paged
        fs, pdn, ftk, fin, hwm, n0 = self.fs, self.pdn, self.ftk, self.fin, self.hwm, self.n0
        if mem is not None:
            kvd = mem.kv
        for rid, m in batch.prefill:
            r = by_id[rid]
            if record and paged:  # prompt tokens computed for the first time
                top = min(r.prefilled + m, r.prompt_tokens - r.recompute_tokens)
                if top > hwm.get(rid, 0):
                    useful += top - hwm.get(rid, 0)
                    hwm[rid] = top
            x = fs[rid]  # (one read: a fed run's _Unkept answers it in Python)
            if x != x:
                fs[rid] = t0
                if window and rid >= n0:
                    self.n_fresh -= 1
            r.prefilled += m
            if labels is not None:  # tokens left per label (a network's buffers)
                labels[r.label] -= m
            if r.first_scheduled_s != r.first_scheduled_s:
                r.first_scheduled_s = t0
            if mem is not None:
                kvd[rid] += m  # (StationMemory.grow, inlined: this loop is the kernel's hot path)
                grown += m
            if r.prefilled >= r.prompt_tokens:
                x = pdn[rid]
                if x != x:
                    pdn[rid] = t
                    if emit_at_prefill and r.decoded == 0 and r.output_tokens > 0:  # the prefill gives the 1st token
                        r.decoded = 1
                        ftk[rid] = t
                        work -= 1
                        useful += 1
                        if labels is not None:
                            labels[r.label] -= 1
                elif emit_at_prefill and 0 < r.decoded < r.output_tokens:
                    # a recomputation after a preemption caught up: its iteration samples the next token, as
                    # the first prefill's does (vLLM v1 keeps every sampled token but a partial prefill's)
                    r.decoded += 1
                    work -= 1
                    useful += 1
                    if labels is not None:
                        labels[r.label] -= 1
                if r.decoded >= r.output_tokens:
                    done = True
                    fin[rid] = t
        queues = self.queues
        if queues is not None:  # (the same decode step without KV or records: a network station's hot loop)
            gone = []  # the decoding requests that finished, in batch order
            for rid in batch.decode:
                r = by_id[rid]
                r.decoded += 1
                labels[r.label] -= 1
                if r.decoded >= r.output_tokens:
                    gone.append(r)
        else:
            for rid in batch.decode:
                r = by_id[rid]
                r.decoded += 1
                if labels is not None:
                    labels[r.label] -= 1
                if mem is not None:
                    kvd[rid] += 1
                    grown += 1
                if r.decoded == 1:
                    ftk[rid] = t
                if r.decoded >= r.output_tokens:
                    fin[rid] = t
                    done = True
        self.work = work
        owned = self.owned
        if owned is not None:  # (the check: the fields the engine just wrote)
            for rid, _ in batch.prefill:
                r = by_id[rid]
                owned[rid] = (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded)
            for rid in batch.decode:
                r = by_id[rid]
                owned[rid] = (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded)
        if mem is not None:
            mem.used += grown
            if record:
                self.rec["kv_used"].append(mem.used)
        if queues is not None:  # the caller's queues say which finished, in their order
            finished = queues.end(batch, gone)
        else:
            finished = [r for r in hold.residents if r.decoded >= r.output_tokens and r.prefilled >= r.prompt_tokens] \
                if done else []
        if self.async_scheduling:
            # the batch after this one was scheduled before this one's outputs were read: requests
            # finished here hold their slot and KV through it (vLLM's async scheduling)
            lag_ids = {r.rid for r in self.lag_fin}
            self.release(self.lag_fin)
            finished, self.lag_fin = self.lag_fin, [r for r in finished if r.rid not in lag_ids]
        else:
            self.release(finished)
        if record and paged:
            rec = self.rec
            rec["resident"].append(len(mem.nblk))
            rec["waiting"].append(len(hold.residents) - len(mem.nblk) + len(self.swapped) + len(self.pending)
                                  + self.n_parked)
            rec["useful_tokens"].append(useful + len(batch.decode))
        return finished

    def result(self) -> dict:
        """The run's outcome as :func:`run_generic` returns it (plain lists and numbers)."""
        m_ = self.mem
        return {"first_scheduled_s": self.fs, "prefill_done_s": self.pdn, "first_token_s": self.ftk,
                "finish_s": self.fin, "backlog": (self.bt, self.bn, self.bw), "iterations": self.n_iter,
                "busy_s": self.busy, "mixed_iterations": self.mixed_iters, "tokens_served": self.tok_served,
                "records": self.rec, "end_s": self.t, "n_blocked": len(self.blocked_ids), "n_arrived": self.na,
                "preemptions_per_request": self.npre, "preemptions": 0 if m_ is None else m_.preemptions,
                "wasted_tokens": 0 if m_ is None else m_.wasted, "swap_tokens": 0 if m_ is None else m_.swap_tokens,
                "rejected": 0 if m_ is None else m_.rejected, "peak_kv_tokens": 0 if m_ is None else m_.peak,
                "batches": self.batches, "examined": self.examined}


#: one iteration of an :class:`EngineRun` (``step(run) -> bool``), the kernel's ``step`` with ``select()``
step = EngineRun.step


def run_generic(arr, P, D, *, policy, b_max, k_max, tau_b, ks, horizon, record, check, kv_cap=None,
                preemption="recompute", swap_s_per_token=0.0, record_batches=False, initial=(),
                progress=None, window=False, memory=None, compose=None, emit_at_prefill=False,
                async_scheduling=False):
    """Simulate; return a dict of plain lists (:meth:`EngineRun.result`).  The engine is the one station of the
    kernel's event clock (:func:`fluidq.kernel.clock.run_engine`), the clock of a network's stations.

    ``window=True`` (only for a built-in FCFS :class:`~fluidq.policies.Scheduler`, without ``initial``
    residents or batch records) shows the policy the served requests and the oldest waiting ones it
    could admit, not the whole queue (see the module's notes); the results are the same.

    With ``kv_cap``, the memory rules are those of :class:`fluidq.kernel.memory.StationMemory` (the
    one written copy, which the network stations drive too): the token rules, or with a ``memory``
    other than the default, the paged ones (see the module's notes).  ``compose(prefill_chunks,
    decode_contexts)`` replaces ``tau_b`` by the batch's composition; ``emit_at_prefill`` makes the
    iteration completing a prefill give the first output token.  ``async_scheduling`` forms each batch
    while the previous one runs (see the module's notes).
    """
    run = EngineRun(arr, P, D, policy=policy, b_max=b_max, k_max=k_max, tau_b=tau_b, ks=ks, horizon=horizon,
                    record=record, check=check, kv_cap=kv_cap, preemption=preemption,
                    swap_s_per_token=swap_s_per_token, record_batches=record_batches, initial=initial,
                    progress=progress, window=window, memory=memory, compose=compose,
                    emit_at_prefill=emit_at_prefill, async_scheduling=async_scheduling)
    # the one engine is the one station of the kernel's event clock (imported here: the clock is not loaded
    # with ``import fluidq``, and it imports this module)
    from .clock import run_engine

    return run_engine(run).result()
