"""A station with a KV cache whose policy is asked in Python, on the compiled network loop: its memory passes
compiled on the loop's arrays, its policy (``select``, the victim's order, ``may_evict``) asked in Python
(2026-12-07, h-netmem; before, h-netkv ran the station's memory rules on the Python clock's EngineRun).

:mod:`fluidq.kernel.network_select` asks the policies of a network's stations in Python once an event of the
compiled loop (:mod:`fluidq.kernel.network`) is over.  A station with a KV cache (``kv_capacity_tokens``) keeps its
memory state in the loop's own columns, those of the native KV stations (built-in FCFS schedulers, whose pass is
``_mem_form``): its residents (the rank-0 prefill queue, in arrival order) and swapped-out requests (the rank-0
decode queue, oldest first), each hop's KV held, blocks, admission number, tokens to recompute and preemptions
(``T_KV`` .. ``T_QN``), the station's KV used, free and never-used blocks, admissions and the region of the
prefix-cache pool ``pq`` (``S_MEM`` .. ``S_NKV``).  :func:`_kv_pass` (compiled, cached) is
``StationMemory.form`` (:mod:`fluidq.kernel.memory`) on those arrays, phase by phase as the single-engine select
loop's (:mod:`fluidq.kernel._select_phases`: ``PH_MEM0``, ``PH_ASKM``, ``PH_FORM``, ``PH_VIC``):

* ``P_MEM0``: the swap-ins, oldest first while ``swap_in_fits``; no resident in view: no batch (``ST_NONE``);
* ``P_ASK``: the view's ids into ``vw`` (every resident below the ask's view ``lim``, or with ``hide`` those
  holding KV, as StationMemory narrows it) and ``ST_ASK``: the driver (:meth:`KVStation.ask`) asks the policy and
  writes its batch into ``al_t``/``al_k`` (prefill) and ``fR`` (decoders);
* ``P_FORM``: with the check (``EngineRun.faults``: ``check_batches``, or a policy that is not a trusted built-in
  scheduler) the batch against ``batch_violations``' rules on the arrays first (:func:`_bad`, O(batch); ``ST_BAD``:
  the driver's ``batch_faults``/``batch_violations`` on the view name the problem, EngineRun's
  :class:`~fluidq.kernel.step.PolicyError`, or with the check off a batch over the budgets alone runs as given);
  then the token rules' pass over that batch (``token_pass``, ``token_take`` per chunk, into ``bk``, then
  ``token_next``: accept, ask again with the admitted requests alone, or a victim) or the paged rules'
  (``blocks_needed`` of the running requests against the free blocks, ``_paged_need``; the running requests' blocks,
  new requests admitted head-of-line by ``paged_take`` with their own cached prefix back by
  ``prefix_want``/``pool_reuse``, ``_paged_admit``; ``paged_retry``); a victim under vLLM's most-recent rule is
  chosen here (``victim_key`` over the admission numbers, ``_most_recent``), any other stops with
  ``ST_VICTIM`` and the admitted requests' ids in ``vw``: the driver orders them by the memory module's own
  ``_victim_order`` (the policy's ordering, arrival order without one) and takes the last that ``_may_evict_hook``'s
  hook allows (the paged rules: else the first candidate; the token rules: ``-1``, and the first candidate in
  ``K_VICF``);
* ``P_VIC``: ``no_victim_decoders`` where every candidate refuses, else the preemption (:func:`fluidq.kernel.network.
  _preempt`, the native stations' own: recompute or swap-out, the station's work and buffers), and ask again;
* ``P_FIN``: the never-exceed clamp of the token rules (``decoders_within``, ``_within_memory``): ``ST_DONE``, the
  batch in ``al_t``/``al_k[s, :K_NP]`` and ``fR[s, :K_ND]``, its swap seconds in ``kf``.

Every decision is a call of :mod:`fluidq.kernel.memory`'s rule functions as network.py inlines them, and the steps
this pass shares with the native KV stations' pass (:func:`fluidq.kernel.network._mem_form`) are network.py's own
inlined helpers, which both call (2026-12-07, h-dedup; each pass had its copy): the swap-ins (``_swap_ins``:
``swap_in_fits``, ``cdiv``, the pool's ``_palloc``), the running requests' blocks (``_paged_need``:
``blocks_needed``), vLLM's most-recent victim (``_most_recent``: ``victim_key``), the paged admission
(``_paged_admit``: ``prefix_want``, ``_preuse``, ``paged_take``, ``_ptake``; a prefix taken back listed in ``tq``),
the token rules' pass (:func:`fluidq.kernel.kvrules.token_pass`: ``token_take``; the single-engine KV kernel's too)
and their last clamp (``_within_memory``: ``decoders_within``); this pass calls ``token_next``, ``paged_retry``,
``no_victim_decoders`` and ``_preempt`` itself.  No rule is written here; what is its own is the phases, the view,
the compiled check of the policy's batch and the victim candidates handed to the driver.  Why its own phases on
network.py's columns rather than the select loop's (:mod:`fluidq.kernel._select_phases`, whose arrays are one
engine's, ``ri``/``si``): the station's memory state
already lives in these columns (``_mem_end`` ends its batches, ``_submit`` refuses and queues its hops, the records
read them), so the pass reads and writes the one state the loop keeps, with no copy between two layouts per ask.
The requests whose objects a pass changes (a victim, a prefix taken back) are listed in ``tq`` for the driver.

The driver (:meth:`KVStation.ask`, called by :class:`fluidq.kernel.network_select.Asker` in the Python clock's order
of asks) keeps the station's request objects (:func:`fluidq.kernel.clock._new_task`, the Python clock's, with ``job``,
``rank`` -- the station's rank of the hop, which a KV station's view does not apply -- and ``label``) up to date from
the arrays by :mod:`fluidq.kernel._net_sync`'s functions, as network_select's ``_sync`` does (the last batch's
requests, the hops submitted since the last ask), and the requests a pass touched, asks the policy with EngineRun's
checks (:meth:`fluidq.kernel.step.EngineRun.ask`: a return that is not a Batch, a policy that wrote its requests'
fields with the check, ``batch_violations`` with the check, ``batch_faults`` without it for a policy that is not a
trusted built-in scheduler, ``blocked`` ids), and times the batch as EngineRun does (``t(b)`` from the Python path's
table, plus seconds per KV token of the decoders for a context-aware time, or the engine's ``composition_time`` on the
prefill chunks' and decoders' KV held; a batch past the table is EngineRun's over-budget
:class:`~fluidq.kernel.step.PolicyError`; the swap seconds added): the answer gives its end (``S_ASKEND``, ``R_END``),
or the end of a pass that only swapped in (no batch: ``S_SWAPWAIT`` when it is over, and the station asks again), or
an idle station (an empty batch with work left is noted, ``idle_ask``, as EngineRun notes it). The loop ends the batch
as its native KV stations' (``_mem_end``: prefill chunks, the prefill's first token and a recomputation's catch-up
token, decode tokens, KV grown, the finished released in arrival order).

Covered since 2026-12-07 (h-netwin) too: a subclass of a built-in FCFS scheduler that overrides ``select``
or ``budgets`` (the Python clock shows it every resident at a KV station, as any policy: no window there), and,
with ``check_batches=True`` given explicitly, the KV stations under built-in FCFS schedulers (asked here, their
batches checked as EngineRun checks them); a KV station under a built-in FCFS scheduler with a composition batch
time is asked here whatever the check (the loop's own KV rule has no composition time).

A join-the-shortest-queue router by remaining tokens that can pick such a station runs here too (2026-12-07,
h-netjsq): a memory pass changes the station's remaining tokens when the batch starts, in the middle of the event
that offered the hop, so the loop makes the event's asks so far before such a router reads a station whose ask is
pending (:mod:`fluidq.kernel.network`'s ``ASK_NOW``).  Composition batch times run here (the driver calls the
engine's ``composition_time`` on the arrays).  Not followed: a policy that writes its
requests' fields with the check off (the Python clock then reads the written fields in its memory pass; the loop
reads its arrays).
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915
from __future__ import annotations

from itertools import chain

import numpy as np

from ..policies.base import Batch, QueueView, _shape_errors, _whole, batch_faults, batch_violations
from ._net_sync import decoded, prefilled, submitted
from ._select_checks import _junk_blocked
from .memory import ACCEPT, ASK_AGAIN, _may_evict_hook, _unfinished, _victim_order
from .network import (Q_DH, Q_PH, R_END, S_ASKEND, S_BS, S_FREE, S_KVCAP, S_MOSTREC, S_NALLOC, S_NBLKN, S_NH, S_NKV,
                      S_PAGED, S_USED, T_D, T_DEC, T_KV, T_LAB, T_NPRE, T_NXT, T_P, T_PREF, T_RC, _inline, _kernel,
                      _mholds, _most_recent, _mvisible, _no_victim_decoders, _paged_admit, _paged_need, _paged_retry,
                      _preempt, _swap_ins, _token_next, _token_pass, _within_memory)
from .step import _bad_batch, _note_raised, _require_batch, _tampered, _trusted

__all__ = ["KVStation"]

# the pass's phases and what it returns
P_MEM0, P_ASK, P_FORM, P_VIC, P_FIN = range(5)
ST_NONE, ST_ASK, ST_VICTIM, ST_DONE = range(4)
ST_BAD = 4  # (the compiled check of the policy's batch: K_BAD says what; the driver's check names it)
# kx (int, one array: ``ks``, then ``vw``, ``tq`` and ``mark``, each a row of the loop's request ids long, ``tq`` two
# more).  ks: the phase, the view narrowed to the admitted, asks made and their bound (the token rules), the
# admitted count of the token rules, the batch's prompts and decoders, the victim chosen by the driver (-1: every
# candidate refuses) and the first candidate (-1: none), the requests touched (tq[:K_NTQ]), the ids in vw, the ask's
# view (request ids below it), the policy chunks (StationMemory.chunkable); the batch checked (EngineRun.faults),
# the check skipped once (a batch over the budgets alone with the check off), what the check found (B_*), the view's
# stamp in ``mark``, the budgets ``b_max`` and ``k_max`` (-1: none); the formed batch's tokens and its decoders' KV
(K_PH, K_HIDE, K_ATT, K_ATTMAX, K_NADM, K_NP, K_ND, K_VIC, K_VICF, K_NTQ, K_NVW, K_LIM, K_CHUNK, K_CHK, K_SKIP, K_BAD,
 K_STAMP, K_BMAX, K_KMAX, K_TOK, K_KVR) = range(21)
N_K = 24
#: what the compiled check found: a batch no engine can run, or one over the budgets (b_max, k_max) only
B_FAULT, B_OVER = 1, 2
# kf (float): the swap seconds of the swap-ins and of the preemptions
F_E1, F_E2 = range(2)


@_kernel
def _kv_pass(s, st, stf, ti, qh, al_t, al_k, fR, buf, pq, kx, kf, bk):
    """``StationMemory.form`` for station ``s`` on the loop's arrays, from phase ``ks[K_PH]`` until the policy must
    be asked (``ST_ASK``), a victim chosen (``ST_VICTIM``), or the batch is formed (``ST_DONE``; ``ST_NONE``: no
    resident in view; ``ST_BAD``: the policy's batch breaks a rule, see :func:`_bad`).  See the module notes."""
    N = ti.shape[0]
    ks = kx[:N_K]
    vw = kx[N_K:N_K + N]
    tq = kx[N_K + N:N_K + 2 * N + 2]
    mark = kx[N_K + 2 * N + 2:]
    paged = st[s, S_PAGED] != 0
    kvcap = st[s, S_KVCAP]
    lim = ks[K_LIM]
    while True:
        ph = ks[K_PH]
        if ph == P_MEM0:  # the swapped-out requests come back first, oldest first, while their KV fits
            ex1 = _swap_ins(s, st, stf, ti, qh, pq)
            kf[F_E1] = ex1
            kf[F_E2] = 0.0
            n = 0
            rid = qh[s, 0, Q_PH]
            while rid and rid < lim:
                n += 1
                rid = ti[rid, T_NXT]
            ks[K_NP] = 0
            ks[K_ND] = 0
            if n == 0:
                return ST_NONE
            ks[K_HIDE] = 1 if qh[s, 0, Q_DH] != 0 else 0  # while requests are swapped out, no new one is admitted
            ks[K_ATT] = 0
            ks[K_ATTMAX] = 2 * n + 8
            ks[K_NADM] = st[s, S_NKV]
            ks[K_PH] = P_ASK
        elif ph == P_ASK:
            if not paged and ks[K_ATT] >= ks[K_ATTMAX]:  # (unreachable: each pass preempts or narrows the view)
                ks[K_PH] = P_FIN  # the last batch asked, as it is
                continue
            ks[K_ATT] += 1
            hide = ks[K_HIDE] != 0
            stamp = ks[K_STAMP] + 2  # (the view's requests marked: the check's "resident")
            ks[K_STAMP] = stamp
            n = 0
            rid = qh[s, 0, Q_PH]
            while rid and rid < lim:
                if _mvisible(ti, rid, hide, paged):
                    vw[n] = rid
                    mark[rid] = stamp
                    n += 1
                rid = ti[rid, T_NXT]
            ks[K_NVW] = n
            ks[K_PH] = P_FORM
            return ST_ASK
        elif ph == P_FORM:  # the policy's batch is al_t/al_k[s, :K_NP], fR[s, :K_ND]
            npf = ks[K_NP]
            nd = ks[K_ND]
            if ks[K_CHK] != 0 and ks[K_SKIP] == 0:
                bad = _bad(s, npf, nd, ti, al_t, al_k, fR, mark, ks)
                if bad:
                    ks[K_BAD] = bad
                    return ST_BAD
            ks[K_SKIP] = 0
            hide = ks[K_HIDE] != 0
            if paged:  # StationMemory._paged
                if _paged_need(s, npf, nd, st, ti, al_t, al_k, fR) > st[s, S_FREE]:
                    # preempt: the most recently admitted, or the last in the policy's order
                    if st[s, S_MOSTREC]:
                        ks[K_VIC] = _most_recent(s, st, ti, qh)
                        ks[K_PH] = P_VIC
                        continue
                    ks[K_NVW] = _admitted(s, qh, ti, lim, vw, True)
                    ks[K_PH] = P_VIC
                    return ST_VICTIM
                kept, stop, ks[K_NTQ] = _paged_admit(s, npf, nd, st, ti, al_t, al_k, fR, buf, pq, tq, ks[K_NTQ])
                if _paged_retry(stop, kept, nd, hide, st[s, S_NBLKN]):
                    ks[K_HIDE] = 1  # ask again with the admitted requests alone
                    ks[K_PH] = P_ASK
                    continue
                ks[K_NP] = kept
                _sums(s, ti, al_k, fR, ks)
                return ST_DONE
            # StationMemory._tokens: the whole remaining prompt plus one token of headroom per admitted request
            room = kvcap - st[s, S_USED] - nd
            if room >= 0:
                reserve = ks[K_NADM]
                # (the chunks kept into bk: al_t/al_k keep the policy's batch until it is accepted)
                kept, room, dropped = _token_pass(npf, al_t[s], al_k[s], bk[0], bk[1], ti[:, T_P], ti[:, T_PREF],
                                                  ti[:, T_KV], room, reserve, ks[K_CHUNK] != 0)
                nxt = _token_next(dropped, hide, kept == 0 and nd == 0, room, reserve, ks[K_NADM])
                if nxt == ASK_AGAIN:
                    ks[K_HIDE] = 1
                    ks[K_PH] = P_ASK
                    continue
                if nxt == ACCEPT:
                    for j in range(kept):
                        al_t[s, j] = bk[0, j]
                        al_k[s, j] = bk[1, j]
                    ks[K_NP] = kept
                    ks[K_PH] = P_FIN
                    continue
            # a victim: the admitted requests, for the driver to order as the policy does
            ks[K_NVW] = _admitted(s, qh, ti, lim, vw, False)
            ks[K_PH] = P_VIC
            return ST_VICTIM
        elif ph == P_VIC:
            v = ks[K_VIC]
            if not paged:
                if v < 0:  # every candidate refuses
                    k = _no_victim_decoders(ks[K_ND], kvcap - st[s, S_USED])
                    if k or ks[K_VICF] < 0:
                        ks[K_NP] = 0
                        ks[K_ND] = k
                        ks[K_PH] = P_FIN
                        continue
                    v = ks[K_VICF]
                ks[K_NADM] -= 1
            kf[F_E2] += _preempt(s, v, st, stf, ti, qh, buf, pq)
            q = ks[K_NTQ]
            tq[q] = v
            ks[K_NTQ] = q + 1
            ks[K_HIDE] = 1  # (vLLM: no waiting request is admitted in an iteration that preempted)
            ks[K_PH] = P_ASK
        else:  # P_FIN: never exceed memory (at most the free tokens' decoders, no prefill)
            ks[K_NP], ks[K_ND] = _within_memory(s, ks[K_NP], ks[K_ND], st, al_k)
            _sums(s, ti, al_k, fR, ks)
            return ST_DONE


@_inline
def _admitted(s, qh, ti, lim, vw, paged):
    """The station's admitted requests in view (ids below ``lim``) that hold memory under the paged or the token
    rules, in its order, into ``vw``; their number (the victim candidates the driver orders as the policy does)."""
    n = 0
    rid = qh[s, 0, Q_PH]
    while rid and rid < lim:
        if _mholds(ti, rid, paged):
            vw[n] = rid
            n += 1
        rid = ti[rid, T_NXT]
    return n


@_inline
def _sums(s, ti, al_k, fR, ks):
    """The formed batch's tokens and its decoders' KV held (a context-aware time's)."""
    x = ks[K_ND]
    for j in range(ks[K_NP]):
        x += al_k[s, j]
    ks[K_TOK] = x
    kv = 0
    for j in range(ks[K_ND]):
        kv += ti[fR[s, j], T_KV]
    ks[K_KVR] = kv


@_inline
def _bad(s, npf, nd, ti, al_t, al_k, fR, mark, ks):
    """The policy's batch against :func:`~fluidq.policies.base.batch_violations`' rules on the arrays, O(batch):
    requests of the view (marked ``K_STAMP``), chunks of at least a token within the remaining prompt, once per
    request, decoders done with their prompt and not finished, once each (:data:`B_FAULT` else), and the budgets
    ``b_max`` and ``k_max`` (:data:`B_OVER`); 0: none broken.  The driver's check in Python
    (``batch_faults``/``batch_violations`` on the view) then names the first problem."""
    N = ti.shape[0]
    stamp = ks[K_STAMP]
    tokens = 0
    for j in range(npf):
        rid = al_t[s, j]
        m = al_k[s, j]
        if rid < 1 or rid >= N or mark[rid] != stamp or m < 1 or m > ti[rid, T_P] - ti[rid, T_PREF]:
            return B_FAULT
        mark[rid] = stamp + 1  # (twice: not "resident" the second time)
        tokens += m
    for j in range(nd):
        rid = fR[s, j]
        if rid < 1 or rid >= N or mark[rid] != stamp:
            return B_FAULT
        if ti[rid, T_PREF] < ti[rid, T_P] or ti[rid, T_DEC] >= ti[rid, T_D]:
            return B_FAULT
        mark[rid] = stamp + 1
    tokens += nd
    if tokens > ks[K_BMAX] or (ks[K_KMAX] >= 0 and npf + nd > ks[K_KMAX]):
        return B_OVER
    return 0


class _Arrays:
    """A request's fields as the loop's arrays hold them (``EngineRun.owned``'s ``get``), for the station's requests
    ``res`` (residents and swapped out)."""

    __slots__ = ("res", "ti")

    def __init__(self, ti, res):
        self.ti, self.res = ti, res

    def get(self, rid):
        if rid not in self.res:
            return None
        row = self.ti[rid].tolist()
        return row[T_P], row[T_D], row[T_PREF], row[T_DEC]


class KVStation:
    """Station ``s`` (a :class:`~fluidq.network.Station` with a KV cache) whose policy is asked in Python, its memory
    passes compiled (:func:`_kv_pass`; see the module notes).  ``kv_table``: the Python path's ``(tau_b, ks)`` of its
    engine; ``swap_s``: seconds per KV token swapped (the loop's ``R_SWAPS``); ``check``: ``check_batches``;
    ``ranks``: each hop's rank at the station by its step row, the Python clock's ``rank`` of a request object;
    ``horizon`` is the loop's (it asks no station at or past it)."""

    kv = True

    def __init__(self, s, station, horizon, check, swap_s, kv_table, ranks):
        self.s = s
        self.name = station.name
        self.policy = policy = station.policy
        self.select = policy.select
        eng = station.engine
        self.b_max, self.k_max = eng.b_max, eng.k_max
        self.tau_b, self.ks = kv_table
        self.compose = getattr(eng.batch_time, "composition_time", None)
        self.check = bool(check)
        self.faults = self.check or not _trusted(policy)  # (EngineRun.faults)
        self.may_evict = _may_evict_hook(policy)
        self.ranks = ranks  # {step row: the hop's rank at the station, as the Python clock ranks it}
        self.res: dict = {}  # the station's requests by id (residents and swapped out), in request id order
        self.hi = 1  # request ids below this are known (in res, or gone, or not at this station)
        self.last = None  # the last batch: its prefill ids, its decoders' ids (arrays), its start
        self.blocked: set = set()  # ids its batches reported never schedulable (EngineRun.blocked_ids)
        self.idle_ask = None  # (EngineRun.idle_ask) the time and waiting ids of its last empty answer with work left
        self.kx = self.kst = self.vw = self.tq = self.bk = None
        self.kf = np.zeros(2)

    def _state(self, a):
        """The pass's arrays, sized to the loop's (``kx``: ``ks``, ``vw``, ``tq``, ``mark``; ``bk``: the chunks)."""
        n = a.ti.shape[0]
        if self.kx is None:
            self.kx = kx = np.zeros(N_K + 3 * n + 2, dtype=np.int64)
            self.kst = ks = kx[:N_K]
            self.vw = kx[N_K:N_K + n]
            self.tq = kx[N_K + n:N_K + 2 * n + 2]
            ks[K_CHUNK] = int(bool(getattr(self.policy, "chunked", False)))  # (StationMemory.chunkable)
            ks[K_CHK] = int(self.faults)
            ks[K_BMAX] = self.b_max
            ks[K_KMAX] = -1 if self.k_max is None else self.k_max
        if self.bk is None or self.bk.shape[1] < a.al_t.shape[1]:
            self.bk = np.zeros((2, a.al_t.shape[1]), dtype=np.int64)

    def _sync(self, a, lim, new_task, labels):
        """The request objects up to date: the last batch's requests (prefilled, decoded, first scheduled; the
        finished leave) and the hops submitted to the station with ids below ``lim`` (:mod:`fluidq.kernel._net_sync`,
        as the other stations asked in Python)."""
        ti = a.ti
        res = self.res
        if self.last is not None:
            pids, dids, t0 = self.last
            self.last = None
            if pids is not None:
                for r, finished in prefilled(res, ti, pids, t0):
                    if finished:  # it left the station
                        del res[r.rid]
            if dids is not None:
                decoded(res, None, map(res.__getitem__, dids.tolist()), ti[dids, T_DEC].tolist())
        if lim > self.hi:
            for r in submitted(a, self.s, self.hi, lim, len(res), new_task, labels, self.ranks):
                res[r.rid] = r
            self.hi = lim

    def _touched(self, ti):
        """The objects of the requests the last pass preempted or gave a prefix back (``on_preempt``, ``on_reuse``)."""
        ks = self.kst
        n = int(ks[K_NTQ])
        ks[K_NTQ] = 0
        res = self.res
        for rid in self.tq[:n].tolist():
            row = ti[rid].tolist()
            r = res[rid]
            r.prompt_tokens = row[T_P]
            r.prefilled = row[T_PREF]
            r.recompute_tokens = row[T_RC]
            r.preemptions = row[T_NPRE]

    def ask(self, asker, lim, t):
        """The ask of station ``s`` at ``t`` with the hops below ``lim`` in view, on ``asker``'s arrays: its batch
        formed and timed (see the module notes).  Returns ``None`` (idle: no batch) or ``()`` (the answer is written:
        ``S_ASKEND``, ``R_END``, ``S_NALLOC``, ``S_NH``; a pass that only swapped in has no prompts nor decoders)."""
        s = self.s
        a = asker.a
        self._sync(a, lim, asker.new_task, asker.labels)
        self._state(a)
        ks, kf, res, policy, name = self.kst, self.kf, self.res, self.policy, self.name
        ks[K_PH] = P_MEM0
        ks[K_LIM] = lim
        ks[K_NTQ] = 0
        ks[K_SKIP] = 0
        batch = view = None
        paged = a.st[s, S_PAGED] != 0
        while True:
            status = _kv_pass(s, a.st, a.stf, a.ti, a.qh, a.al_t, a.al_k, a.fR, a.buf, a.pq, self.kx, kf, self.bk)
            if ks[K_NTQ]:
                self._touched(a.ti)
            if status == ST_ASK:  # EngineRun.ask on the view the pass wrote
                st = a.st
                reqs = tuple(map(res.__getitem__, self.vw[:ks[K_NVW]].tolist()))
                free = int(st[s, S_FREE] * st[s, S_BS]) if paged else int(st[s, S_KVCAP] - st[s, S_USED])
                view = QueueView(requests=reqs, now_s=t, b_max=self.b_max, k_max=self.k_max, kv_free_tokens=free)
                try:
                    batch = self.select(view)
                except Exception as e:  # the user's exception, its type kept, with a note of where
                    _note_raised(e, policy, t, "the compiled network loop", name)
                    raise
                if batch.__class__ is not Batch:  # (check on or off)
                    _require_batch(getattr(policy, "name", policy), batch, t, name)
                if self.check:  # (the batch's requests as the loop's arrays hold them)
                    bad = _tampered(_Arrays(a.ti, res), batch, res)
                    if bad:
                        raise _bad_batch(policy, t, bad, name)
                if not self._write(asker, batch):  # (not whole numbers, not pairs, junk in blocked)
                    self._refuse(batch, view, t)
                    raise AssertionError(f"station {name!r} at t={t:.6g} s: a batch the loop cannot write and "
                                         "batch_faults accepts")  # pragma: no cover
                if batch.blocked:
                    self.blocked.update(batch.blocked)
                    blk, ti = a.blk, a.ti
                    for rid in batch.blocked:
                        blk[s, ti[int(rid), T_LAB]] = 1
                a = asker.a  # (the batch arrays may have grown)
            elif status == ST_VICTIM:  # the last admitted request in the policy's order that may be evicted
                adm = _unfinished(list(map(res.__getitem__, self.vw[:ks[K_NVW]].tolist())))
                cands = _victim_order(policy, adm, t)[::-1]
                me = self.may_evict
                victim = next((q for q in cands if me is None or me(q, t)), None)
                if paged:  # (no refusal under the paged rules: the first candidate then)
                    victim = cands[0] if victim is None else victim
                ks[K_VIC] = -1 if victim is None else victim.rid
                ks[K_VICF] = cands[0].rid if cands else -1
            elif status == ST_BAD:  # EngineRun's check names the problem; the check off runs a batch over the budgets
                if ks[K_BAD] == B_FAULT or self.check:
                    self._refuse(batch, view, t)
                    if ks[K_BAD] == B_FAULT:  # pragma: no cover -- a fault batch_faults does not name
                        raise AssertionError(f"station {name!r} at t={t:.6g} s: a batch the loop refuses and "
                                             "batch_faults accepts")
                ks[K_SKIP] = 1
            else:
                break
        return self._answer(a, t, status, batch, view)

    def _refuse(self, batch, view, t):
        """EngineRun.ask's check of ``batch``: its PolicyError where it finds a problem."""
        bad = batch_violations(batch, view) if self.check else batch_faults(batch, view)
        if bad:
            raise _bad_batch(self.policy, t, bad, self.name)

    def _write(self, asker, batch) -> bool:
        """The policy's batch into the loop's arrays (prefill ``al_t``/``al_k``, decoders ``fR``; grown for a batch over
        the budgets); ``False`` where its entries are not whole numbers in ``(rid, tokens)`` pairs or ``blocked``
        names an id not in view (the driver's check then names the problem)."""
        s = self.s
        pre, dec = batch.prefill, batch.decode
        npf, nd = len(pre), len(dec)
        if self.faults and ((npf and ({*map(type, pre)} != _TUPLE or {*map(type, chain.from_iterable(pre))} != _INT)) or
                            (nd and {*map(type, dec)} != _INT)) and _shape_errors(batch):
            return False
        if self.faults and batch.blocked and (not all(map(_whole, batch.blocked)) or _junk_blocked(
                batch, tuple(map(self.res.__getitem__, self.vw[:self.kst[K_NVW]].tolist())))):
            return False
        asker._room(npf, nd)  # (a batch over the budgets with the check off: the arrays grow)
        a = asker.a
        if self.bk.shape[1] < a.al_t.shape[1]:
            self.bk = np.zeros((2, a.al_t.shape[1]), dtype=np.int64)
        try:
            if npf:
                x = np.array(pre, dtype=np.int64)
                if x.shape != (npf, 2):
                    return False
                a.al_t[s, :npf] = x[:, 0]
                a.al_k[s, :npf] = x[:, 1]
            if nd:
                a.fR[s, :nd] = np.array(dec, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):  # (not whole numbers, beyond int64)
            return False
        self.kst[K_NP] = npf
        self.kst[K_ND] = nd
        return True

    def _answer(self, a, t, status, batch, view):
        """EngineRun.begin after the memory pass: the batch's time and end written for the loop, or idle."""
        s = self.s
        st, stf, ti = a.st, a.stf, a.ti
        ks, kf = self.kst, self.kf
        extra = float(kf[F_E1] + kf[F_E2])
        npf, nd = int(ks[K_NP]), int(ks[K_ND])
        if npf == 0 and nd == 0:
            if extra > 0:  # only swaps this time: busy moving KV, then asked again
                st[s, S_ASKEND] = 1
                stf[s, R_END] = t + extra
                st[s, S_NALLOC] = 0
                st[s, S_NH] = 0
                return ()
            if self.faults:  # (EngineRun.begin: the last empty answer with work left, every resident and swapped out)
                res, blocked = self.res, self.blocked
                swapped = self._swapped(a)
                out = set(swapped)
                ids = [rid for rid in res if rid < self.hi and rid not in out] + swapped
                waiting = [rid for rid in ids if res[rid].demand > 0 and rid not in blocked]
                self.idle_ask = (t, waiting) if waiting else None
            return None
        self.idle_ask = None
        pids = a.al_t[s, :npf].copy() if npf else None
        dids = a.fR[s, :nd].copy() if nd else None
        tokens = int(ks[K_TOK])
        if self.compose is not None:  # the batch's composition: prefill chunks with prior context, decode contexts
            ctxs = [] if dids is None else ti[dids, T_KV].tolist()
            chunks = [] if pids is None else list(zip(a.al_k[s, :npf].tolist(), ti[pids, T_KV].tolist()))
            tau = self.compose(chunks, ctxs)
        else:
            try:
                tau = self.tau_b[tokens]
                if self.ks:  # context-aware: the decoders' KV held
                    tau = tau + self.ks * int(ks[K_KVR])
            except IndexError:  # (the check off: past the table, EngineRun's over-budget PolicyError)
                kept = Batch(prefill=tuple(zip(a.al_t[s, :npf].tolist(), a.al_k[s, :npf].tolist())),
                             decode=tuple(a.fR[s, :nd].tolist()), blocked=batch.blocked)
                bad = batch_violations(kept, view) or [f"(6d) batch has {kept.tokens} tokens > b_max={self.b_max}"]
                raise _bad_batch(self.policy, t, bad, self.name) from None
        end = t + tau
        if extra:
            end += extra
        st[s, S_ASKEND] = 1
        stf[s, R_END] = end
        st[s, S_NALLOC] = npf
        st[s, S_NH] = nd
        self.last = (pids, dids, t)
        return ()

    def _swapped(self, a):
        """The swapped-out requests' ids, oldest first (StationMemory.swapped)."""
        out = []
        ti = a.ti
        rid = int(a.qh[self.s, 0, Q_DH])
        while rid:
            out.append(rid)
            rid = int(ti[rid, T_NXT])
        return out


_TUPLE, _INT = {tuple}, {int}
