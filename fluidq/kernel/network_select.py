"""Stations whose policies are asked in Python, on the compiled network loop's state (issue 15, 2026-12-07).

:mod:`fluidq.kernel.network` runs every station of a network on one compiled event clock.  A station whose policy
is not a built-in scheduler in FCFS order as given -- a user's object with its own ``select(view)``, a built-in
:class:`~fluidq.policies.Scheduler` with another ordering (``Sarathi(order=SJF())``, SRPT, ...), or a subclass of a
built-in FCFS one that overrides ``select`` or ``budgets`` -- and, with ``check_batches=True`` given explicitly, every
station, is run there batch by batch too, but its batches are formed in Python, as :mod:`fluidq.kernel.select` does
it for one engine:

* when such a station starts a batch (where the Python event clock, :func:`fluidq.kernel.clock.run_clock`, calls
  its ``EngineRun.begin``: a hop offered to the idle station, or the end of its batch once its finished hops have
  moved on), the loop notes an *ask* (``_ask``: the station is busy, the ask's order in the event, its time, and
  its view -- the hops submitted to the station so far, request ids below ``S_ASKLIM``) and goes on with the
  event; when the event is over it stops with ``STATUS_ASK``.  Nothing the rest of the event does depends on the
  batch an ask will form (routing reads the stations' requests and remaining tokens, which a batch changes only
  when it ends), so asking after the event gives the Python clock's batches -- except at a KV station, whose
  memory pass changes its remaining tokens as the batch starts (a recomputation adds, a prefix hit takes off): a
  JSQ router by remaining tokens about to read such a station with its ask pending has the loop stop in the
  middle of the event (``G_NEED`` ``ASK_NOW``, 2026-12-07, h-netjsq), make the asks so far (``asker(False)``, the
  same call) and resume where it stopped, once their batches have started;
* :class:`Asker` (called by :func:`fluidq.kernel.network.run_network`) makes the asks in the Python clock's order
  (by request id at the ask, then order): for each it brings the station's persistent request objects
  (:class:`fluidq.kernel.clock._Task`, the Python path's objects, with ``job``, ``rank`` and ``label``) up to date
  from the arrays -- the requests of the station's last batch (prefilled, decoded, first scheduled; the finished
  ones leave) and the hops submitted since its last ask (request ids up to the ask's view, read off the hops'
  station column; :mod:`fluidq.kernel._net_sync`'s functions, which the windowed and the KV stations' drivers call
  too) -- so an ask costs O(batch + new hops) in Python besides the view's tuple and the policy;
  the view is the Python path's for a station without a KV cache (:meth:`fluidq.kernel.clock._StationState.view_requests`):
  for a policy that is not a built-in scheduler in FCFS order, every resident, in the station's class-priority
  order, by arrival at the station within a level (request id order); for one that is (a subclass with a rule of
  its own; the built-in one under ``check_batches=True``), the built-in window of the station's queues
  (:mod:`fluidq.kernel.network_window`, 2026-12-07, h-netwin); ``b_max`` and ``k_max`` the engine's, no
  ``kv_free_tokens``.  A station without residents is not asked (``EngineRun.begin`` asks no policy then);
* the answer: a return that is not a :class:`~fluidq.policies.Batch` raises EngineRun's
  :class:`~fluidq.kernel.step.PolicyError` (:func:`fluidq.kernel.step._require_batch`, the same message); the
  batch is written into the loop's arrays (prefill ``(rid, tokens)`` in ``al_t``/``al_k``, decoders in ``fR``;
  entries that are not ``int`` go through :func:`fluidq.policies.base._shape_errors` first) and checked there by
  a compiled pass, O(batch) (:func:`_fits_loop`: :func:`fluidq.policies.base.batch_violations`' rules, and no
  request twice in the prefill part), and its ``blocked`` ids marked; the loop then starts every answered batch (``_answered``: its time as
  a built-in batch-by-batch station's, ``t(b)`` or a context-aware time, and its end on the event heap) and
  resumes.  An empty batch leaves the station idle -- and the Python clock asks again at the next hop submitted
  to it in the same event, with that hop in view: so does the asker (or, for an ask made in the middle of an
  event, the loop, at that hop's submission);
* a batch that breaks the constraints raises EngineRun's :class:`~fluidq.kernel.step.PolicyError`, the Python
  clock's message (``station 'name': policy 'p' at t=... s: <first problem>``, from
  :func:`~fluidq.policies.base.batch_violations` with ``check_batches``, else
  :func:`~fluidq.policies.base.batch_faults`; ``blocked`` ids checked by :func:`fluidq.kernel.select._junk_blocked`),
  at once.  A batch over the budgets ((6d) ``b_max``, ``k_max``) with the check off runs as the Python clock runs it
  (2026-12-07, h-netkv; before, the whole network restarted on the Python clock): the loop's batch arrays grow
  (``run_network``'s ``grow``), and a batch over ``b_max`` is timed as EngineRun times it (``t(b)`` by a scalar
  call, :meth:`Asker._time_over`; the answer gives its end, ``S_ASKEND``);
* an empty answer while requests wait with work left (not in ``blocked``) is noted per station (``idle_ask``, as
  EngineRun notes it); at the horizon, a station whose last answer was such, with no hop after it, raises the Python
  clock's :class:`~fluidq.kernel.step.PolicyError` (:meth:`Asker.stalled`); a user policy's own exception keeps
  its type, with a note (PEP 678) naming the station, the policy, the time and this path.

The batch's end is the loop's batch-by-batch station's (``S_GEN``): prefill chunks, the first token from the
prefill, decode tokens, finished hops moved on in the Python path's order; the records, the routing and the other
stations are the loop's.  A station WITH a KV cache runs its memory passes compiled on the loop's arrays, its
policy (``select``, the victim's order, ``may_evict``) asked in Python (:mod:`fluidq.kernel.network_kv`; h-netmem,
2026-12-07 -- h-netkv asked it through the Python clock's own EngineRun and memory rules).  Covered: any policy
or ordering, subclasses of the built-in schedulers included (with their window, :mod:`fluidq.kernel.network_window`,
at a station without a KV cache), with or without a KV cache (under a JSQ router by remaining tokens too, h-netjsq),
``check_batches`` default, off or on (on given explicitly: every station asked and checked in Python, h-netwin),
context-aware batch times, the first token from the prefill, class priorities, mixed with every station the loop
runs natively; a built-in FCFS scheduler at a KV station with a composition batch time is asked here too.  What
still runs on the Python clock (``_kernel_unsupported`` says which): a station without a KV cache whose batch time
cannot be tabulated in one call up to ``b_max``, a router policy other than random and JSQ, a class with an empty
route, and a station budget above the loop's table (which warns).
"""
# ruff: noqa: PLR0912, PLR0915
from __future__ import annotations

import heapq
from itertools import chain

import numpy as np

from ..policies.base import Batch, QueueView, _shape_errors, _whole, batch_faults, batch_violations
from ._jit import jit
from ._net_sync import decoded, prefilled, submitted
from .network import (G_ASKED, G_RID, R_AT, R_END, S_ASKEND, S_ASKLIM, S_ASKP, S_BUSY, S_NALLOC, S_NH, T_D, T_DEC,
                      T_LAB, T_P, T_PREF, T_ST)
from .select import _junk_blocked
from .network_window import in_view, sync_window, window
from .step import NOTHING_CAME, _bad_batch, _idle_error, _note_raised, _require_batch, _tampered, _trusted

__all__ = ["Asker"]


class _Station:
    """A station asked in Python: its policy, its residents' objects (one dict per priority rank, in request id
    order) and what its last batch changed."""

    __slots__ = ("b_max", "batch_time", "blocked", "by_rank", "chunks", "dec", "emit", "faults", "hi", "idle_ask",
                 "k_max", "last", "name", "policy", "pre", "res", "s", "select", "windowed")
    kv = False

    def __init__(self, s, station, n_rank, check=False, windowed=False):
        self.s = s
        self.name = station.name
        self.policy = station.policy
        self.select = station.policy.select
        self.b_max = station.engine.b_max
        self.k_max = station.engine.k_max
        self.batch_time = station.engine.batch_time
        self.emit = bool(getattr(station.engine, "prefill_emits_token", False))
        self.by_rank = [{} for _ in range(n_rank)]
        self.res: dict = {}  # every resident by id
        # windowed (a built-in scheduler in FCFS order asked in Python: network_window): the Python clock's queues
        # (clock._StationState's pre and dec), one dict per rank: the prompts by arrival at the station (request id
        # order), the decoders in the order their prefill ended; by_rank is not kept then
        self.windowed = bool(windowed)
        self.pre = [{} for _ in range(n_rank)]
        self.dec = [{} for _ in range(n_rank)]
        pol = station.policy
        self.chunks = bool(getattr(pol, "chunked", True) or getattr(pol, "chunk_long_prompts", False))
        self.hi = 1  # request ids below this are known (in res, or gone, or not at this station)
        self.last = None  # the last batch: its prefill ids (an array), its decoders (objects, ids), its start
        self.faults = bool(check) or not _trusted(self.policy)  # (EngineRun.faults)
        self.blocked: set = set()  # ids its batches reported never schedulable (EngineRun.blocked_ids)
        self.idle_ask = None  # (EngineRun.idle_ask) the time and waiting ids of its last empty answer with work left


class Asker:
    """The Python side of the compiled network loop's asks (see the module notes).

    ``stations``: ``{station index: (Station, ranks)}`` of the stations asked in Python; ``labels``: the buffer
    label names by index (a request object's ``label``); ``check``: ``check_batches`` (the budgets checked too)."""

    def __init__(self, stations: dict, labels, check=False, kv=None, horizon=None, swap_s=0.0):
        from .clock import _new_task, _windowable
        from .network_kv import KVStation

        kv = kv or {}
        # (a station without a KV cache whose policy is a built-in scheduler in FCFS order -- a subclass with a rule
        # of its own, or the built-in one itself under check_batches=True -- is shown the Python clock's window)
        self.stations = {s: (KVStation(s, st, horizon, check, swap_s, *kv[s]) if s in kv else
                             _Station(s, st, n_rank, check, _windowable(st.policy)))
                         for s, (st, n_rank) in stations.items()}
        self.check = bool(check)
        self.labels = list(labels)
        self.lab_index = {lab: i for i, lab in enumerate(self.labels)}
        self.new_task = _new_task
        self.a = None
        self.grow = None  # (run_network's: room in the batch arrays for a batch of n entries)

    def bind(self, **arrays):
        """The loop's state arrays (``g``, ``st``, ``stf``, ``ti``, ``tf``, ``al_t``, ``al_k``, ``fR``, ``blk``,
        ``buf``; ``qh``, ``pq`` for the KV stations' compiled passes, network_kv); bound again when the batch arrays
        grow (``grow(n)``, a batch of ``n`` entries)."""
        from types import SimpleNamespace

        if self.a is None:
            self.mark = np.zeros(arrays["ti"].shape[0], dtype=np.int64)  # (_fits_loop's marks)
            self.stamp = 0
            self.pids = self.dids = None  # (the batch _write wrote: its prefill and decode ids, as arrays)
        self.a = SimpleNamespace(**arrays)

    def _room(self, npf, nd):
        """Grow the loop's batch arrays (run_network's ``grow``) for ``npf`` prompts and ``nd`` decoders (a batch over
        the budgets, which the Python clock runs as given with the check off)."""
        a = self.a
        if npf >= a.al_t.shape[1] or nd >= a.fR.shape[1] or npf + nd >= a.done_n:
            self.grow(npf + nd)

    def _sync(self, S, lim):
        """Bring station ``S``'s objects up to date: its last batch's requests, and the hops submitted to it with
        ids below ``lim`` (:mod:`fluidq.kernel._net_sync`)."""
        a = self.a
        ti = a.ti
        res, by_rank = S.res, S.by_rank
        if S.last is not None:
            pids, dids, t0 = S.last
            S.last = None
            if pids is not None:  # the prefill chunks' requests: prefilled, decoded (a first token from the prefill),
                # first scheduled; the finished leave the station
                for r, finished in prefilled(res, ti, pids, t0):
                    if finished:
                        del res[r.rid]
                        del by_rank[r.rank][r.rid]
            if dids is not None:  # the decoders (done with their prompts): decoded, and those finished leave
                objs, idx = dids
                decoded(res, by_rank, objs, ti[idx, T_DEC].tolist())
        if lim > S.hi:
            for r in submitted(a, S.s, S.hi, lim, len(res), self.new_task, self.labels):
                res[r.rid] = r
                by_rank[r.rank][r.rid] = r
            S.hi = lim

    def _next_hop(self, S, lim):
        """The first hop submitted to station ``S`` with an id at or above ``lim`` (in this event), or ``None``."""
        a = self.a
        top = int(a.g[G_RID])
        if lim >= top:
            return None
        x = np.flatnonzero(a.ti[lim:top, T_ST] == S.s)
        return int(x[0]) + lim if x.size else None

    def __call__(self, final):
        """Make the asks of the event just over (see the module notes); ``final``: the loop has stopped."""
        a = self.a
        st, stf = a.st, a.stf
        asked = st[:, S_ASKP].tolist()
        pend = [(int(st[s, S_ASKLIM]), asked[s], s) for s in self.stations if asked[s] > 0]
        if len(pend) > 1:
            heapq.heapify(pend)  # (the Python clock's order: the ask made at the earlier submitted hop first)
        while pend:
            lim, order, s = heapq.heappop(pend)
            S = self.stations[s]
            t = float(stf[s, R_AT])
            st[s, S_ASKEND] = 0
            npf = nd = 0
            if S.kv:  # (a station with a KV cache: its memory pass compiled, its policy asked, network_kv)
                if S.ask(self, lim, t) is not None:  # its answer is written: a batch, or a pass that only swapped in
                    continue
            elif S.windowed:
                sync_window(self, S, lim)
            else:
                self._sync(S, lim)
            if not S.kv and S.res:  # (a station without residents asks no policy: EngineRun.begin)
                if S.windowed:
                    reqs = window(S)
                else:
                    reqs = tuple(chain.from_iterable(d.values() for d in S.by_rank)) if len(S.by_rank) > 1 else \
                        tuple(S.by_rank[0].values())
                view = QueueView(requests=reqs, now_s=t, b_max=S.b_max, k_max=S.k_max, kv_free_tokens=None)
                try:
                    batch = S.select(view)
                except Exception as e:  # (EngineRun.ask: the user's exception with a note of where)
                    _note_raised(e, S.policy, t, "the compiled network loop", S.name)
                    raise
                if batch.__class__ is not Batch:  # (EngineRun.ask, check on or off)
                    _require_batch(getattr(S.policy, "name", S.policy), batch, t, S.name)
                if self.check:  # (EngineRun's check: the batch's requests as the loop's arrays hold them)
                    bad = _tampered(_Arrays(a.ti, S.res), batch, S.res)
                    if bad:
                        raise _bad_batch(S.policy, t, bad, S.name)
                pre, dec = batch.prefill, batch.decode
                npf, nd = len(pre), len(dec)
                fit = self._write(S, s, lim, batch)
                if S.windowed and fit != _FAULT and not in_view(batch, reqs):  # (a resident outside the window:
                    fit = _FAULT  # not in the view, which batch_faults names)
                if fit == _FAULT or (fit == _OVER and self.check) or (batch.blocked and (
                        not all(map(_whole, batch.blocked)) or _junk_blocked(batch, reqs))):
                    # EngineRun's PolicyError, the same message
                    bad = (batch_violations if self.check else batch_faults)(batch, view) if S.faults else None
                    if bad:
                        raise _bad_batch(S.policy, t, bad, S.name)
                    if fit == _FAULT:  # pragma: no cover -- a fault batch_faults does not name
                        raise AssertionError(f"station {S.name!r} at t={t:.6g} s: a batch the loop refuses and "
                                             "batch_faults accepts")
                if fit == _OVER and batch.tokens > S.b_max:  # (the check off) beyond the loop's batch-time table:
                    st[s, S_ASKEND] = 1  # its time as the Python clock's EngineRun charges it
                    stf[s, R_END] = t + self._time_over(S, batch)
                if batch.blocked:
                    blk, ti = a.blk, a.ti
                    S.blocked.update(batch.blocked)
                    for rid in batch.blocked:
                        blk[s, ti[int(rid), T_LAB]] = 1
                if not npf and not nd and S.faults:  # (EngineRun.begin: the last empty answer with work left)
                    waiting = [r.rid for r in reqs if r.demand > 0 and r.rid not in S.blocked]
                    S.idle_ask = (t, waiting) if waiting else None
                else:
                    S.idle_ask = None
            if not npf and not nd:  # idle: asked again at the next hop submitted to it in this event
                nxt = self._next_hop(S, lim)
                if nxt is not None:
                    heapq.heappush(pend, (nxt + 1, order, s))
                    continue
                st[s, S_ASKP] = 0
                st[s, S_BUSY] = 0
                continue
            st[s, S_NALLOC] = npf
            st[s, S_NH] = nd
            S.last = (self.pids, (list(map(S.res.__getitem__, dec)), self.dids) if nd else None, t)
        if not final:
            self.a.g[G_ASKED] = 1

    @staticmethod
    def _time_over(S, batch):
        """The time of a batch over the station's budget (the check off), as its EngineRun charges it: ``t(b)`` from
        a scalar call (the Python clock's table stops at ``b_max``), or ``t(b, 0)`` plus seconds per KV token times
        the decoders' contexts for a context-aware time."""
        bt = S.batch_time
        tokens = batch.tokens
        if getattr(bt, "kind", "") != "context_aware":
            return float(bt(tokens))
        res = S.res
        kvr = 0
        for rid in batch.decode:
            r = res[rid]
            kvr += r.prefilled + r.decoded
        kvr -= S.emit * len(batch.decode)
        return float(bt(tokens, 0)) + float(bt.kv_s_per_token) * kvr

    def stalled(self):
        """At the horizon: the :class:`PolicyError` of the Python clock (:func:`fluidq.kernel.clock.run_clock`) for a
        station whose policy's last answer was empty while requests waited with work left, and no hop came after."""
        stalls = sorted((S.idle_ask[0], s, S.idle_ask[1]) for s, S in self.stations.items() if S.idle_ask is not None)
        if stalls:
            t, s, waiting = stalls[0]
            S = self.stations[s]
            raise _idle_error(S.policy, t, waiting, S.name, NOTHING_CAME)

    def _write(self, S, s, lim, batch) -> int:
        """Write the batch into the loop's arrays (``al_t``/``al_k``, ``fR``) and say whether the loop runs it as the
        Python clock does: entries that are ``int`` (or pairs of them; else :func:`~fluidq.policies.base._shape_errors`
        decides, and a whole number that is not an ``int`` goes through it too) and within
        :func:`~fluidq.policies.base.batch_violations`' rules, no request twice in the prefill part
        (:func:`_fits_loop`, compiled)."""
        pre, dec = batch.prefill, batch.decode
        npf, nd = len(pre), len(dec)
        try:
            if npf:
                if {*map(type, pre)} != _TUPLE or {*map(type, chain.from_iterable(pre))} != _INT:
                    if _shape_errors(batch):
                        return _FAULT
                x = np.array(pre, dtype=np.int64)
                if x.shape != (npf, 2):
                    return _FAULT
                self._room(npf, nd)
                a = self.a
                self.pids = x[:, 0]
                a.al_t[s, :npf] = self.pids
                a.al_k[s, :npf] = x[:, 1]
            else:
                self.pids = None
            if nd:
                if {*map(type, dec)} != _INT and _shape_errors(batch):
                    return _FAULT
                self.dids = np.array(dec, dtype=np.int64)
                self._room(npf, nd)
                self.a.fR[s, :nd] = self.dids
        except (TypeError, ValueError, OverflowError):  # (not whole numbers, beyond int64)
            return _FAULT
        a = self.a
        self.stamp += 2
        return _fits_loop(s, lim, npf, nd, S.b_max, -1 if S.k_max is None else S.k_max, a.al_t, a.al_k, a.fR, a.ti,
                          self.mark, self.stamp)


_TUPLE, _INT = {tuple}, {int}
#: what :func:`_fits_loop` finds: a batch the loop runs, one no engine can run, one over the budgets only
_FITS, _FAULT, _OVER = 0, 1, 2


class _Arrays:
    """A request's fields as the loop's arrays hold them (``EngineRun.owned``'s ``get``), for residents ``res``."""

    __slots__ = ("res", "ti")

    def __init__(self, ti, res):
        self.ti, self.res = ti, res

    def get(self, rid):
        if rid not in self.res:
            return None
        row = self.ti[rid].tolist()  # (the row as a list, then four items: ~0.4 us, where a fancy index took ~1.8)
        return row[T_P], row[T_D], row[T_PREF], row[T_DEC]


@jit
def _fits_loop(s, lim, npf, nd, b_max, k_max, al_t, al_k, fR, ti, mark, stamp):
    """The batch written for station ``s`` (prefill ``al_t``/``al_k[s, :npf]``, decoders ``fR[s, :nd]``) refers to
    residents in the view (ids below ``lim``, at ``s``, not finished), takes chunks of at least one token within the
    remaining prompt, once per request, decodes requests done with their prompt and not finished, once each, and
    keeps ``b_max`` tokens and ``k_max`` requests (``-1``: none): :func:`~fluidq.policies.base.batch_violations`'
    rules, as the loop needs them (``mark``: per request, the ``stamp`` of the batch that took it); return
    :data:`_FITS`, :data:`_FAULT`, or :data:`_OVER` (within every rule but the budgets)."""
    tokens = 0
    for j in range(npf):
        rid = al_t[s, j]
        m = al_k[s, j]
        if rid < 1 or rid >= lim or ti[rid, T_ST] != s or m < 1 or mark[rid] == stamp:
            return 1
        if m > ti[rid, T_P] - ti[rid, T_PREF]:  # (a finished hop has none left)
            return 1
        mark[rid] = stamp
        tokens += m
    for j in range(nd):
        rid = fR[s, j]
        if rid < 1 or rid >= lim or ti[rid, T_ST] != s or mark[rid] == stamp + 1:
            return 1
        if ti[rid, T_PREF] < ti[rid, T_P] or ti[rid, T_DEC] >= ti[rid, T_D]:
            return 1
        mark[rid] = stamp + 1
    tokens += nd
    if tokens > b_max or (k_max >= 0 and npf + nd > k_max):
        return 2
    return 0


