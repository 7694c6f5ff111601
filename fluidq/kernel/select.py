"""The ``select()`` loop on the kernel's state: user policies (and orderings the compiled loops do not cover) asked in
Python, everything else advanced by compiled code over flat arrays.

:func:`run_select` runs what :func:`fluidq.kernel.step.run_generic` (:class:`~fluidq.kernel.step.EngineRun`) runs
-- ``policy.select(view)`` at every iteration -- and returns the same dict, bit for bit (per-request times, backlog
series, iterations, busy time, records, ``examined``; ``tests/kernel/test_select_kernel.py`` holds the two equal on
random engines, workloads, user policies and the built-in non-FCFS orderings).  The state of the run is the
kernel's: flat arrays indexed by request with kv.py's names, advanced by ``_advance``, which runs until the policy
must be asked and stops with a status.  The loop lives in four modules:

* :mod:`fluidq.kernel.select` (this one) -- the driver: :func:`run_select` (the arrays set up, the policy asked,
  each status answered, the result) and :func:`covers` (which runs it takes);
* :mod:`fluidq.kernel._select_state` -- the slots of the arrays (``S_*``, ``F_*``, ``R_*``), the statuses and phases;
* :mod:`fluidq.kernel._select_phases` -- the compiled phases (``_advance`` and what it inlines): EngineRun's begin,
  formation (the token and the paged memory rules, async scheduling) and finish on the arrays;
* :mod:`fluidq.kernel._select_checks` -- the checks of a policy's batch that run in Python.

Every name of the three is importable from here too (as before the split, branch h-selsplit, 2026-12-07).  The
driver answers each status:

* ``STATUS_ASK``: a batch is due at ``t``.  The driver brings its persistent
  :class:`~fluidq.policies.base.RequestState` objects up to date from what the kernel says changed -- the requests of
  the last batch (``cg``: prefilled, decoded, first scheduled), the arrivals since the last ask, the finished
  requests (``fo``) and those the memory rules changed (``tq``: a victim's prompt, prefilled, recompute and
  preemption counts; a swap out of or back into the view, after which it orders its objects by ``(arrival_s, rid)``
  as StationMemory sorts its residents) -- so an iteration costs O(batch + arrivals + finishes) in Python besides
  the view's tuple (O(queue), in C) and the policy's own cost; it builds the :class:`~fluidq.policies.base.QueueView`
  (the residents in arrival order, as EngineRun shows them), calls ``select``, checks the batch
  (:mod:`~fluidq.kernel._select_checks`), notes ``blocked`` ids, writes the batch into ``bp`` (prefill
  ``(rid, tokens)``) and ``bd`` (decodes) and resumes;
* ``STATUS_BAD``: the kernel's check of the batch (compiled, O(batch): residents only, chunks ``>= 1`` within the
  remaining prompt, decodes of requests done with their prompt and not finished, one decode per request, ``b_max``,
  ``k_max``) found something wrong: EngineRun's :class:`~fluidq.kernel.step.PolicyError` (``_raise``), or with the
  check off a batch over its budgets alone is run as given;
* ``STATUS_VICTIM`` (a KV cache is short): the token rules take the last of the admitted requests in the memory
  module's own ``_victim_order`` (the policy's ordering, arrival order without one) that ``_may_evict_hook``'s hook
  allows, as StationMemory does, and are passed it (or none, and the first candidate); the paged rules the most
  recently admitted by ``victim_key`` over the admission numbers, or as the token rules.  A finished request holding
  its KV (async scheduling) is never a victim (``memory._unfinished``);
* ``STATUS_TAU`` (a composition's time from the KV held), ``STATUS_PROGRESS`` (``progress(t, arrivals)`` is due, at
  EngineRun's instants), ``STATUS_GROW`` (a backlog or record buffer needs room, asked before the phase writes
  anything), ``STATUS_BATCH`` (``record_batches``: the driver keeps the policy's Batch, or with a cache the one the
  memory rules kept, with the policy's ``blocked``), ``STATUS_DONE``.

``initial`` residents (branch h-sel2) are requests ``0..n0-1`` (the arrivals follow), set up as EngineRun's
constructor and ``StationMemory.hold`` do: KV = prefilled + decoded, paged ``cdiv`` blocks in their order with
admission numbers (too many: EngineRun's ParameterError).  Held bit for bit to EngineRun by
``tests/kernel/test_select_async_initial.py``.

Covered (2026-12-07): engines without a KV cache or with one under the token rules (``Memory()``) or the paged
rules (vLLM's, prefix caching included), recompute or swap preemption, ``may_evict``; synchronous or async
scheduling; any policy or ordering, ``k_max``, context-aware and composition batch times, ``emit_at_prefill``,
``initial`` residents in their prompt or decoding, ``record_batches``, records (``kv_used``; paged: ``resident``,
``waiting``, ``useful_tokens`` with the high-water mark ``R_HWM``; the row's ``demand`` is the last view's, whose ids
the driver passes in ``vw``), progress reports, ``check``.  Not covered, so :func:`fluidq.simulate` runs them on
:class:`EngineRun` (the reference): ``initial`` residents in another state (finished -- EngineRun releases one at
the next batch in which any request finishes --, decoded tokens before the prompt is done, or counts out of range:
:func:`covers`), the window (a built-in FCFS scheduler's view where no compiled FCFS loop runs it),
``method="generic"``, and ``method="auto"`` without numba (uncompiled, the array style is slower than EngineRun;
``method="fast"`` runs this loop as plain Python then).  The built-in FCFS schedulers keep running on
:mod:`fluidq.kernel.fcfs` / :mod:`fluidq.kernel.kv` where those cover them.
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915, N806
from __future__ import annotations

import math
from collections import deque
from itertools import repeat

import numpy as np

from ..errors import ParameterError
from ..policies.base import Batch, QueueView, RequestState, _shape_errors, batch_faults
from . import memory as _rules
from ._select_checks import _Owned, _differs, _junk_blocked, _idle_arrays, _raise, _residents, _stalled
from ._select_phases import _advance
from ._select_state import (F_BUSY, F_H, F_KS, F_NEXT, F_SWAPS, F_T, F_TAU, N_RI, N_SF, N_SI, R_ADM, R_D, R_DC, R_FIN,
                            R_FS, R_FTK, R_KV, R_NBK, R_NPRE, R_PC, R_PDN, R_PF, R_RC, R_ST, S_ASYNC, S_BMAX, S_BS,
                            S_BSH, S_CACHING, S_CGP, S_CHUNK, S_COMPOSE, S_CTX, S_DEM, S_EMIT, S_FREE, S_HIDE, S_KMAX,
                            S_KMAX0, S_KVCAP, S_MEM, S_MIXED, S_MOSTREC, S_N, S_N0, S_NA, S_NADM, S_NADMSEQ, S_NB,
                            S_NCG, S_ND, S_NEED, S_NEEDR, S_NFIN, S_NITER, S_NLAG, S_NP, S_NR, S_NRES, S_NTQ, S_NVW,
                            S_PAGED, S_PEAK, S_PREEMPT, S_PROG, S_RECB, S_RECORD, S_REJ, S_SKIPCHK, S_STALL, S_SWAP,
                            S_SWAPTOK, S_TOK, S_TOTAL, S_TSEEN, S_USED, S_VIC, S_VICF, S_WASTED, S_WHOLE, S_WORK,
                            STATUS_ASK, STATUS_BAD, STATUS_BATCH, STATUS_GROW, STATUS_PROGRESS, STATUS_TAU,
                            STATUS_VICTIM)
from .memory import _may_evict_hook, _unfinished, _victim_order, block_shift, victim_key
from .step import _bad_batch, _note_raised, _require_batch, _tampered, _trusted

# the names select.py held before the split (branch h-selsplit) that the driver does not read, importable from
# here still (tests and other modules import them from fluidq.kernel.select)
from ._select_checks import _FIELDS4  # noqa: F401
from ._select_phases import _admit, _alloc, _bad, _clamp, _demand, _held, _leave, _preempt, _release  # noqa: F401
from ._select_phases import _release_lag, _served, _take  # noqa: F401
from ._select_state import F_E1, F_E2, F_T0, F_TSEEN, PH_ASKM, PH_BEGIN, PH_FORM, PH_IDLE, PH_MEM0  # noqa: F401
from ._select_state import PH_OVER, PH_RUN, PH_VIC, R_ACC, R_HWM, R_MD, R_MP, S_ATT, S_ATTMAX, S_BREP  # noqa: F401
from ._select_state import S_KVR, S_NSW, S_PH, S_STAMP, S_SWH, S_SWT, STATUS_DONE  # noqa: F401

__all__ = ["STATUS_ASK", "STATUS_BAD", "STATUS_BATCH", "STATUS_DONE", "STATUS_GROW", "STATUS_PROGRESS", "STATUS_TAU", "STATUS_VICTIM",
           "covers", "run_select"]


_ready = False  # _advance called once in this process (compiled or loaded)


def _grow_rows(a, need):
    b = np.empty((max(need, 2 * a.shape[0]),) + a.shape[1:], dtype=a.dtype)
    b[:a.shape[0]] = a
    return b


def covers(*, kv_cap=None, memory=None, async_scheduling=False, initial=(), record_batches=False, window=False,
           record=False) -> bool:
    """Whether :func:`run_select` runs this :func:`~fluidq.kernel.step.run_generic` call (see the module notes):
    every one but the window (a built-in FCFS scheduler's view, :mod:`fluidq.kernel.step`) and ``initial`` residents
    in a state no run reaches (see :func:`_plain_resident`)."""
    if window:
        return False
    return all(_plain_resident(r) for r in initial)


def _plain_resident(r) -> bool:
    """An ``initial`` resident in a state a run reaches: in its prompt (``0 <= prefilled < prompt``, nothing decoded)
    or decoding (``prefilled == prompt``, ``0 <= decoded < output``), whole numbers.  (EngineRun also takes others:
    a finished one stays until some request finishes, a decoded count before the prompt is done, more prefilled
    than the prompt; those run on it.)"""
    try:
        p, d, pf, dc = (int(x) for x in (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded))
    except (AttributeError, TypeError, ValueError, OverflowError):
        return False
    if (p, d, pf, dc) != (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded):
        return False
    return (0 <= pf < p and dc == 0) or (pf == p and 0 <= dc < d)


def run_select(arr, P, D, *, policy, b_max, k_max, tau_b, ks, horizon, record, check, compose=None,
               emit_at_prefill=False, progress=None, kv_cap=None, preemption="recompute",
               swap_s_per_token=0.0, memory=None, initial=(), record_batches=False, async_scheduling=False) -> dict:
    """Simulate as :func:`fluidq.kernel.step.run_generic` does (the cases :func:`covers` says), on the kernel's
    arrays; return the same dict (numpy arrays where it has lists).  ``initial``: residents at time 0 (ids
    ``0..n0-1``, the arrivals after them), each holding the KV of its prefilled and decoded tokens with a cache;
    ``record_batches``: the list of the batches run (``batches``); ``async_scheduling``: each batch formed while
    the previous one runs (see :mod:`fluidq.kernel.step`)."""
    arr = np.ascontiguousarray(arr, dtype=float)
    P = np.ascontiguousarray(P, dtype=np.int64)
    D = np.ascontiguousarray(D, dtype=np.int64)
    n = len(arr)
    initial = tuple(initial)
    n0 = len(initial)
    N = n0 + n
    mem = kv_cap is not None
    ri = np.zeros((N, N_RI), dtype=np.int64)
    ri[n0:, R_PC] = P
    ri[n0:, R_D] = D
    rf = np.full((N, 4), math.nan)
    tau = np.ascontiguousarray(tau_b, dtype=float)
    si = np.zeros(N_SI, dtype=np.int64)
    sf = np.zeros(N_SF)
    si[S_N] = n
    si[S_N0] = n0
    si[S_BMAX] = b_max
    si[S_KMAX] = si[S_KMAX0] = -1 if k_max is None else k_max
    si[S_ASYNC] = int(bool(async_scheduling))
    si[S_RECB] = int(bool(record_batches))
    si[S_EMIT] = int(bool(emit_at_prefill))
    si[S_RECORD] = int(bool(record))
    si[S_PROG] = int(progress is not None)
    si[S_COMPOSE] = int(compose is not None)
    if mem:
        si[S_MEM] = 1
        si[S_KVCAP] = kv_cap
        si[S_CHUNK] = int(bool(getattr(policy, "chunked", False)))  # (StationMemory.chunkable)
        si[S_SWAP] = int(preemption == "swap")
        sf[F_SWAPS] = swap_s_per_token
        if memory is not None and not memory.default_rules:  # the paged rules (StationMemory.paged)
            si[S_CACHING] = int(bool(memory.prefix_caching))
            si[S_PAGED] = 1
            si[S_BS] = memory.block_size
            si[S_BSH] = block_shift(memory.block_size)
            si[S_TOTAL] = si[S_FREE] = kv_cap // memory.block_size
            si[S_WHOLE] = int(memory.reservation == "whole_prompt")
            si[S_MOSTREC] = int(memory.victim == "most_recent")
    ri[:, R_NBK] = -1
    # the pool of freed blocks with prefix caching (kvrules' pool functions): room for twice the blocks, so a
    # compaction always leaves room (pool_release)
    total = int(si[S_TOTAL])
    qe = np.zeros((2 * total + 64 if si[S_CACHING] else 1, 4), dtype=np.int64)
    qs = np.array([total, 0, 0], dtype=np.int64)  # never-used blocks, queue head, queue end
    stamp, cup, qpos, qn = (np.zeros(N if si[S_CACHING] else 1, dtype=np.int64) for _ in range(4))
    objs: dict = {}  # the residents' RequestState objects (not the swapped out), in arrival order
    ol = [None] * N  # every request's object by id
    for j, r0 in enumerate(initial):  # (EngineRun's constructor; with a cache, StationMemory.hold)
        r = RequestState(rid=j, arrival_s=float(r0.arrival_s), prompt_tokens=int(r0.prompt_tokens),
                         output_tokens=int(r0.output_tokens), prefilled=int(r0.prefilled), decoded=int(r0.decoded),
                         score=r0.score)
        objs[j] = ol[j] = r
        ri[j, R_PC], ri[j, R_D], ri[j, R_PF], ri[j, R_DC], ri[j, R_ST] = (r.prompt_tokens, r.output_tokens,
                                                                        r.prefilled, r.decoded, 1)
        si[S_NRES] += 1
        si[S_WORK] += r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded
        si[S_DEM] += r.demand
        if mem:
            held = r.prefilled + r.decoded
            ri[j, R_KV] = held
            si[S_USED] += held
            if held > 0:
                si[S_NADM] += 1
            if si[S_PAGED] and held > 0:
                k = _rules.cdiv(held, int(si[S_BS]), int(si[S_BSH]))
                if k > si[S_FREE]:
                    raise ParameterError("initial", f"<{n0} residents>", f"residents whose KV fits in the "
                                         f"{int(si[S_TOTAL])} blocks of {int(si[S_BS])} tokens of the cache")
                si[S_FREE] -= k  # (_alloc, in Python: BlockPool.alloc)
                if si[S_CACHING]:
                    qs[0], qs[1] = _rules.pool_alloc(qe, 0, int(qs[0]), int(qs[1]), k, stamp, cup)
                ri[j, R_NBK] = k
                ri[j, R_ADM] = si[S_NADMSEQ]
                si[S_NADMSEQ] += 1
    sf[F_H] = horizon
    sf[F_KS] = ks
    cap = 64
    bp = np.zeros((cap, 2), dtype=np.int64)
    bk = np.zeros((cap, 2), dtype=np.int64)
    bd = np.zeros(cap, dtype=np.int64)
    fo = np.zeros(max(N, 1), dtype=np.int64)  # (each request leaves once)
    lg = np.zeros(max(N, 1), dtype=np.int64)  # (async scheduling) the finished requests holding their slots
    cg = np.zeros((2 * cap, 3), dtype=np.int64)
    cgf = np.zeros(2 * cap)
    sw = np.zeros((max(N, 1), 2), dtype=np.int64)  # the swapped-out ring (each request in it at most once)
    tq = np.zeros((2 * max(N, 1) + 2, 2), dtype=np.int64)  # (two entries per request and formation at most)
    bt = np.zeros(N + 1024)
    bnw = np.zeros((N + 1024, 2), dtype=np.int64)
    rci = np.zeros((1024 if record else 0, 9), dtype=np.int64)
    vw = np.zeros(max(N, 1) if record and mem else 1, dtype=np.int64)
    rcf = np.zeros((1024 if record else 0, 2))
    arr_l, P_l, D_l = arr.tolist(), P.tolist(), D.tolist()
    get = ol.__getitem__
    consume = deque(maxlen=0).extend
    may_evict = _may_evict_hook(policy) if mem else None
    blocked: set = set()
    batches = [] if record_batches else None
    examined = 0
    select = policy.select
    a_seen = 0  # arrivals made into objects so far
    last = None  # the last batch and its view (for the error message)
    name = getattr(policy, "name", policy)
    trusted = _trusted(policy)
    faults = not check and not trusted
    owned = _Owned(ri, objs) if check else None

    def touched():
        """Refresh the objects the memory rules changed (victims, swaps) from the arrays."""
        nonlocal objs
        k = int(si[S_NTQ])
        resort = False
        for rid, kind in tq[:k].tolist():
            r = ol[rid]
            pc, pf, rc, npre = ri[rid, [R_PC, R_PF, R_RC, R_NPRE]].tolist()
            r.prompt_tokens, r.prefilled, r.recompute_tokens, r.preemptions = pc, pf, rc, npre
            if kind == 1:
                del objs[rid]
            elif kind == 2:
                objs[rid] = r
                resort = True
        si[S_NTQ] = 0
        if resort:  # (StationMemory sorts its residents by arrival after a swap-in)
            objs = dict(sorted(objs.items(), key=lambda kv: (kv[1].arrival_s, kv[0])))

    paged = bool(si[S_PAGED])

    def admitted(ids=False):
        keys = np.fromiter(objs, np.int64, len(objs))
        keys = keys[ri[keys, R_NBK] >= 0 if paged else ri[keys, R_KV] > 0]
        return keys if ids else list(map(get, keys.tolist()))

    global _ready
    if not _ready:  # the first call compiles _advance (or loads it from numba's cache): a note if that is slow
        from .run import compile_note

        with compile_note("the select() kernel (policies asked in Python)"):
            status = _advance(si, sf, arr, ri, rf, bp, bd, tau, bt, bnw, rci, rcf, fo, cg, cgf, bk, sw, tq, qe, qs,
                              stamp, cup, qpos, qn, vw, lg)
        _ready = True
    else:
        status = _advance(si, sf, arr, ri, rf, bp, bd, tau, bt, bnw, rci, rcf, fo, cg, cgf, bk, sw, tq, qe, qs, stamp,
                          cup, qpos, qn, vw, lg)
    while True:
        if status == STATUS_ASK:
            # bring the objects up to date: the last batch's requests, the arrivals, the finished, the preempted
            k = int(si[S_NCG])
            if k:  # the last batch's prefill chunks' requests (cg[:npf]) and decoders' (cg[npf:k], decoded alone)
                npf = int(si[S_CGP])
                if npf:
                    for r, p, d, f in zip(map(get, cg[:npf, 0].tolist()), cg[:npf, 1].tolist(), cg[:npf, 2].tolist(),
                                          cgf[:npf].tolist()):
                        r.prefilled = p
                        r.decoded = d
                        r.first_scheduled_s = f
                if k > npf:
                    consume(map(setattr, map(get, cg[npf:k, 0].tolist()), repeat("decoded"), cg[npf:k, 2].tolist()))
                si[S_NCG] = 0
            na = int(si[S_NA])
            while a_seen < na:
                a = a_seen
                a_seen += 1
                i = n0 + a
                if mem and ri[i, R_ST] == 0:  # rejected at arrival (it can never fit)
                    continue
                objs[i] = ol[i] = RequestState(rid=i, arrival_s=arr_l[a], prompt_tokens=P_l[a],
                                               output_tokens=D_l[a])
            k = int(si[S_NFIN])
            if k:
                for rid in fo[:k].tolist():
                    del objs[rid]
                si[S_NFIN] = 0
            if si[S_NTQ]:
                touched()
            t = float(sf[F_T])
            km = int(si[S_KMAX])
            k_max = None if km < 0 else km  # (async scheduling: less the slots the finished requests hold)
            if mem:
                visible = admitted() if si[S_HIDE] else objs.values()
                if record:  # the view's ids: a record row holds their demand (EngineRun: view.demand)
                    ids = admitted(True) if si[S_HIDE] else np.fromiter(objs, np.int64, len(objs))
                    vw[:len(ids)] = ids
                    si[S_NVW] = len(ids)
                reqs = tuple(visible)
                view = QueueView(requests=reqs, now_s=t, b_max=b_max, k_max=k_max,
                                 kv_free_tokens=int(si[S_FREE] * si[S_BS] if paged else kv_cap - si[S_USED]))
            else:
                reqs = tuple(objs.values())
                view = QueueView(requests=reqs, now_s=t, b_max=b_max, k_max=k_max, kv_free_tokens=None)
            examined += len(reqs)
            try:
                batch = select(view)
            except Exception as e:  # the user's exception, its type kept, with a note of where (EngineRun.ask)
                _note_raised(e, policy, t, "fluidq.simulate's compiled select() loop, method='auto'")
                raise
            if batch.__class__ is not Batch:  # (EngineRun.ask, check on or off)
                _require_batch(name, batch, t)
            if check:
                # a policy that wrote its batch's requests' fields (EngineRun.owned: the arrays are the engine's)
                if _differs(ri, batch, objs):  # (vectorized; step._tampered then names the field)
                    bad = _tampered(owned, batch, objs)
                    if bad:
                        raise _bad_batch(policy, t, bad)
                if _shape_errors(batch):  # entries that are not whole numbers (numpy would cast them)
                    _raise(name, t, batch, view)
                if batch.blocked and _junk_blocked(batch, reqs):  # (the compiled check reads no blocked ids)
                    _raise(name, t, batch, view)
            elif faults:  # the check off: only what no engine can run (a built-in scheduler's batches are not read)
                bad = batch_faults(batch, view)
                if bad:
                    raise _bad_batch(policy, t, bad)
            last = (batch, view)
            pre, dec = batch.prefill, batch.decode
            nbp, nd = len(pre), len(dec)
            if nbp > bp.shape[0] or nd > bd.shape[0]:
                c = max(nbp, nd, 2 * bp.shape[0])
                bp = np.zeros((c, 2), dtype=np.int64)
                bk = np.zeros((c, 2), dtype=np.int64)
                bd = np.zeros(c, dtype=np.int64)
                fo = np.zeros(2 * c, dtype=np.int64)
                cg = np.zeros((2 * c, 3), dtype=np.int64)
                cgf = np.zeros(2 * c)
            try:
                if nbp:
                    bp[:nbp] = pre
                if nd:
                    bd[:nd] = dec
            except (TypeError, ValueError, OverflowError):  # not integers: the constraints say what is wrong
                _raise(name, t, batch, view)
            si[S_NP], si[S_ND] = nbp, nd
            if batch.blocked:
                blocked.update(batch.blocked)
            if not mem and not nbp and not nd and si[S_NA] >= n and not (si[S_ASYNC] and (si[S_NLAG] or si[S_TSEEN])):
                # EngineRun.begin: an empty batch, nothing to arrive; the work left read from the arrays (a policy
                # that wrote its requests' fields with the check off must not end the run silently)
                _idle_arrays(policy, ri, objs, blocked, t)
            if not mem and compose is not None and (nbp or nd):
                ctxs = [objs[rid].prefilled + objs[rid].decoded - emit_at_prefill for rid in dec] \
                    if _residents(objs, batch) else None
                if ctxs is None:  # a request not resident: the kernel's check reports it
                    si[S_CTX] = 0
                    sf[F_TAU] = math.nan
                else:
                    sf[F_TAU] = compose([(m, objs[rid].prefilled) for rid, m in pre], ctxs)
                    si[S_CTX] = sum(ctxs)
        elif status == STATUS_VICTIM:  # the victim: last in the policy's ordering that may be evicted
            if si[S_NTQ]:
                touched()
            t = float(sf[F_T])
            if paged and si[S_MOSTREC]:  # vLLM: the most recently admitted
                adm = _unfinished(admitted())  # (not a finished request holding its KV: async scheduling)
                seq = dict(zip((q.rid for q in adm), ri[[q.rid for q in adm], R_ADM].tolist()))
                si[S_VIC] = max(adm, key=lambda q: victim_key(True, seq[q.rid], 0)).rid
            else:
                cands = _victim_order(policy, _unfinished(admitted()), t)[::-1]
                victim = None
                for q in cands:
                    if may_evict is None or may_evict(q, t):
                        victim = q
                        break
                si[S_VIC] = -1 if victim is None else victim.rid
                si[S_VICF] = cands[0].rid if cands else -1
        elif status == STATUS_TAU:  # a composition's time of the batch the memory rules kept, from the KV held
            nbp, nd = int(si[S_NP]), int(si[S_ND])
            ids = bp[:nbp, 0]
            ctxs = ri[bd[:nd], R_KV].tolist()
            sf[F_TAU] = compose(list(zip(bp[:nbp, 1].tolist(), ri[ids, R_KV].tolist())), ctxs)
            si[S_CTX] = sum(ctxs)
        elif status == STATUS_BATCH:  # EngineRun.batches: the policy's batch, or the one the memory rules kept
            batch = last[0]
            if mem:
                nbp, nd = int(si[S_NP]), int(si[S_ND])
                batch = Batch(prefill=tuple(map(tuple, bp[:nbp].tolist())), decode=tuple(bd[:nd].tolist()),
                              blocked=batch.blocked)
            batches.append(batch)
        elif status == STATUS_BAD:
            batch, view = last
            if check or batch_faults(batch, view) or batch.tokens >= tau.shape[0]:
                _raise(name, float(sf[F_T]), batch, view)
            # (a policy that wrote its requests' fields may pass batch_faults on the objects, not on the arrays)
            bad = _tampered(_Owned(ri, objs), batch, objs)
            if bad:
                raise _bad_batch(policy, float(sf[F_T]), bad)
            # the check off: over the budgets (b_max, k_max) alone, run as given, as EngineRun runs it
            si[S_SKIPCHK] = 1
        elif status == STATUS_PROGRESS:
            t = float(sf[F_T])
            progress(t, int(si[S_NA]))
            sf[F_NEXT] = t + 1.0 + 0.02 * t
        elif status == STATUS_GROW:
            if si[S_NEED] > bt.shape[0]:
                bt = _grow_rows(bt, int(si[S_NEED]))
                bnw = _grow_rows(bnw, int(si[S_NEED]))
            if si[S_NEEDR] > rcf.shape[0]:
                rci = _grow_rows(rci, int(si[S_NEEDR]))
                rcf = _grow_rows(rcf, int(si[S_NEEDR]))
        else:
            if si[S_STALL] and not trusted:  # EngineRun.begin: an empty batch with a KV cache, nothing to arrive
                _stalled(policy, si, ri, sw, ol, objs, blocked, float(sf[F_T]))
            break
        status = _advance(si, sf, arr, ri, rf, bp, bd, tau, bt, bnw, rci, rcf, fo, cg, cgf, bk, sw, tq, qe, qs, stamp,
                          cup, qpos, qn, vw, lg)
    nb, nr = int(si[S_NB]), int(si[S_NR])
    recs = None
    if record:
        recs = {"t_s": rcf[:nr, 0].copy(), "prefill_tokens": rci[:nr, 0].copy(), "decode_tokens": rci[:nr, 1].copy(),
                "requests": rci[:nr, 2].copy(), "batch_s": rcf[:nr, 1].copy(), "demand": rci[:nr, 3].copy(),
                "kv_tokens": rci[:nr, 4].copy()}
        if mem:
            recs["kv_used"] = rci[:nr, 5].copy()
        if paged:
            recs.update(resident=rci[:nr, 6].copy(), waiting=rci[:nr, 7].copy(), useful_tokens=rci[:nr, 8].copy())
    return {"first_scheduled_s": rf[:, R_FS].copy(), "prefill_done_s": rf[:, R_PDN].copy(),
            "first_token_s": rf[:, R_FTK].copy(), "finish_s": rf[:, R_FIN].copy(),
            "backlog": (bt[:nb].copy(), bnw[:nb, 0].copy(), bnw[:nb, 1].copy()), "iterations": int(si[S_NITER]),
            "busy_s": float(sf[F_BUSY]), "mixed_iterations": int(si[S_MIXED]), "tokens_served": int(si[S_TOK]),
            "records": recs, "end_s": float(sf[F_T]), "n_blocked": len(blocked), "n_arrived": int(si[S_NA]),
            "preemptions_per_request": ri[:, R_NPRE].copy(), "preemptions": int(si[S_PREEMPT]),
            "wasted_tokens": int(si[S_WASTED]), "swap_tokens": int(si[S_SWAPTOK]), "rejected": int(si[S_REJ]),
            "peak_kv_tokens": int(si[S_PEAK]), "batches": batches, "examined": examined}

