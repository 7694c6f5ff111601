"""The ``select()`` loop on the kernel's state: user policies (and orderings the compiled loops do not cover) asked in
Python, everything else advanced by compiled code over flat arrays.

:func:`run_select` runs what :func:`fluidq.kernel.step.run_generic` (:class:`~fluidq.kernel.step.EngineRun`) runs
-- ``policy.select(view)`` at every iteration -- and returns the same dict, bit for bit (per-request times, backlog
series, iterations, busy time, records, ``examined``; ``tests/kernel/test_select_kernel.py`` holds the two equal on
random engines, workloads, user policies and the built-in non-FCFS orderings).  The state of the run is the
kernel's: flat arrays indexed by request with kv.py's names (``pc`` the prompt, ``pf`` prefilled, ``dc`` decoded,
``st`` 0 not arrived or rejected, 1 resident, 2 finished, 3 swapped out; ``fs``/``pdn``/``ftk``/``fin`` first
scheduled, prefill done, first token, finish), advanced by :func:`_advance` (compiled by
:func:`fluidq.kernel._jit.jit`, cached; plain Python without numba), which runs until the policy must be asked and
stops with a status, as :mod:`fluidq.kernel.kv` stops for progress and buffer growth:

* ``STATUS_ASK``: a batch is due at ``t``.  The driver brings its persistent
  :class:`~fluidq.policies.base.RequestState` objects up to date from what the kernel says changed -- the
  requests of the last batch (``cg``: prefilled, decoded, first scheduled), the arrivals since the last ask and the
  finished requests (``fo``) -- so an iteration costs O(batch + arrivals + finishes) in Python besides the view's
  tuple (O(queue), in C) and the policy's own cost; it builds the :class:`~fluidq.policies.base.QueueView` (the
  residents in arrival order, as EngineRun shows them), calls ``select``, notes ``blocked`` ids, writes the batch
  into ``bp`` (prefill ``(rid, tokens)``) and ``bd`` (decodes) and resumes;
* ``STATUS_BAD``: the kernel's check of the batch (compiled, O(batch): residents only, chunks ``>= 1`` within the
  remaining prompt, decodes of requests done with their prompt and not finished, one decode per request, ``b_max``,
  ``k_max``) found something wrong: the driver asks :func:`~fluidq.policies.base.batch_violations` (the one written
  copy of the constraints) and raises :class:`~fluidq.kernel.step.PolicyError` with EngineRun's message.  The
  compiled check only decides when to ask it: it flags every batch ``batch_violations`` does;
* ``STATUS_PROGRESS`` (``progress(t, arrivals)`` is due, at EngineRun's instants), ``STATUS_GROW`` (a backlog or
  record buffer needs room, asked before the phase writes anything), ``STATUS_BATCH`` (``record_batches``: the batch
  about to run), ``STATUS_DONE``.

The phases (``si[S_PH]``) are EngineRun's halves: ``PH_BEGIN`` (the arrivals up to ``t`` with their backlog rows,
the row at ``t``, the horizon, the progress report), ``PH_IDLE`` (an empty engine jumps to its next arrival, else
ask), ``PH_FORM`` (the batch written: an empty one jumps to the next arrival; else the batch time -- ``t(b)``, a
context-aware ``t(b) + ks * kv`` over the decoders' contexts, or a composition's time, which the driver computes in
Python by the engine's ``composition_time`` on the request objects as EngineRun does -- the record row, then
EngineRun's ``finish``: the arrivals up to the batch's end, the prefill chunks, the first token from the prefill with
``emit_at_prefill``, the decode tokens, the finished requests released).

With a KV cache under the default token rules (``Memory()``; branch h-sel15, 2026-12-07) the formation is
``StationMemory.form``'s, phase by phase: the swap-ins (``PH_MEM0``, oldest first while ``swap_in_fits``), then the
passes of ``StationMemory._tokens`` -- ``PH_ASKM`` asks the policy (``STATUS_ASK``; the view is every resident, or the
admitted ones alone, ``si[S_HIDE]``, as StationMemory narrows it), ``PH_FORM`` takes the chunks by ``token_take`` and
decides by ``token_next`` (accept, ask again without the new requests, or preempt), and a preemption stops with
``STATUS_VICTIM``: the driver orders the admitted requests by the memory module's own ``_victim_order`` (the policy's
ordering, arrival order without one) and asks ``_may_evict_hook``'s hook, as StationMemory does, and passes the
victim (or none, and the first candidate); ``PH_VIC`` applies ``no_victim_decoders`` or preempts (``recompute`` or a
swap-out), and asks again.  The accepted batch goes through the never-exceed clamp (``decoders_within``); with a
composition batch time the driver computes its time from the KV held (``STATUS_TAU``).  Every decision is a call
to :mod:`fluidq.kernel.kvrules` (``never_fits`` at arrival, ``swap_in_fits``, ``token_take``, ``token_next``,
``no_victim_decoders``, ``decoders_within``, ``recompute``): no rule is written here.  The objects the memory rules
change (a victim's prompt, prefilled, recompute and preemption counts; a swap out of or back into the view) are
refreshed from the arrays (``tq``) at the next stop.

The paged rules (any other :class:`~fluidq.engine.Memory` -- vLLM's blocks, ``VLLM`` --; same branch) are
``StationMemory._paged``'s pass in ``PH_FORM``: the running requests' blocks (``blocks_needed``) against the free
ones; while they do not fit, ``STATUS_VICTIM`` (the driver takes the most recently admitted by ``victim_key`` over
the admission numbers, or the last in ``_victim_order`` that ``may_evict`` allows, else the first candidate, as
StationMemory does) and the policy is asked again with the admitted requests alone; then the running requests take
their blocks (``_take``) and new ones are admitted head-of-line by ``paged_take``, with ``paged_retry`` to ask
again; swap-ins take ``cdiv(held)`` blocks back; rejection is ``never_fits`` over the blocks. With prefix caching
the pool of freed blocks is kvrules' (``pool_alloc``, ``pool_release``, ``pool_reuse`` on
``qe``/``qs``/``stamp``/``cup``/``qpos``/``qn``, the layout of :mod:`fluidq.kernel.kv`; ``qe`` holds twice the
cache's blocks, so a compaction always leaves room), and a re-admitted request takes back its own cached leading
blocks by ``prefix_want`` (its prompt restarts after them: ``prefilled``, KV held, work and wasted tokens as
StationMemory changes them).

Async scheduling, ``initial`` residents and ``record_batches`` (branch h-sel2, 2026-12-07) are EngineRun's too.
With ``async_scheduling`` (``si[S_ASYNC]``) a batch's finish admits the arrivals up to its *start* and notes it
(``F_TSEEN``, ``S_TSEEN``: EngineRun's ``t_seen``, up to which the next ``PH_BEGIN`` reads), and its finished
requests stay resident in state 4, holding their KV and ``k_max`` slot (``lg[:S_NLAG]``: EngineRun's ``lag_fin``),
until the next batch's finish releases them (``_release_lag``, after noting the peak as ``after_batch`` does).
``PH_IDLE`` gives the policy ``k_max - S_NLAG`` slots (``S_KMAX``, which its view shows); with none left it releases
them and begins again at ``t``, and so does an empty batch while outputs or arrivals are unread (that pass's swap time
uncharged, as in EngineRun).  A finished request holding its KV is never a victim (the driver's candidates go through
``memory._unfinished``).  ``initial`` residents are requests ``0..n0-1`` (the arrivals follow), set up as EngineRun's
constructor and ``StationMemory.hold`` do: KV = prefilled + decoded, paged ``cdiv`` blocks in their order with
admission numbers (too many: EngineRun's ParameterError); after a swap-in the driver orders its objects by
``(arrival_s, rid)``, as StationMemory sorts its residents.  With ``record_batches``, ``PH_RUN`` stops once per batch
(``STATUS_BATCH``) and the driver keeps the policy's Batch, or with a cache the one the memory rules kept (with the
policy's ``blocked``).  Held bit for bit to EngineRun by ``tests/kernel/test_select_async_initial.py``.

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

The user-policy checks are EngineRun's, by step.py's functions (branch h-selmirror, 2026-12-07): a policy's own
exception gets ``_note_raised``'s note; with the check, the batch's requests' fields are compared with the arrays
(``_tampered``: a policy must not write them) and ``blocked`` ids with the view's; with it off, ``batch_faults``
(unless ``_trusted``) refuses what no engine can run, and a batch the compiled check flags for its budgets alone
(``b_max``, ``k_max``) is run as given (``si[S_SKIPCHK]``), as EngineRun runs it -- one of more tokens than the
batch-time table holds is refused with the budget's message (EngineRun fails indexing its table).  With a KV cache,
a run that ends on an empty batch with nothing more to arrive (``si[S_STALL]``) raises ``_idle_with_work``'s error
over every resident and the swapped out (``step._All``), unless the policy is ``_trusted``.
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915, N806
from __future__ import annotations

import math
from collections import deque
from itertools import repeat

import numpy as np

from ..errors import ParameterError
from ..policies.base import Batch, QueueView, RequestState, _shape_errors, batch_faults, batch_violations
from . import memory as _rules
from ._jit import jit
from .kvrules import ACCEPT, ASK_AGAIN, STOP, decoders_within, never_fits, no_victim_decoders, recompute, swap_in_fits
from .kvrules import blocks_needed, cdiv, paged_retry, paged_take, pool_alloc, pool_release, pool_reuse, prefix_want
from .kvrules import token_next, token_take
from .memory import _may_evict_hook, _unfinished, _victim_order, block_shift, victim_key
from .step import _All, _bad_batch, _idle_with_work, _note_raised, _require_batch, _tampered, _trusted

__all__ = ["STATUS_ASK", "STATUS_BAD", "STATUS_BATCH", "STATUS_DONE", "STATUS_GROW", "STATUS_PROGRESS", "STATUS_TAU", "STATUS_VICTIM",
           "covers", "run_select"]

STATUS_DONE, STATUS_PROGRESS, STATUS_GROW, STATUS_ASK, STATUS_BAD, STATUS_VICTIM, STATUS_TAU = 0, 1, 2, 3, 4, 5, 6
STATUS_BATCH = 7  # (record_batches) the batch about to run is bp[:S_NP], bd[:S_ND]: the driver keeps it
# phases: a batch's start (arrivals, backlog row, horizon, progress), the idle test, the batch written, over; with a
# KV cache: the swap-ins, the ask, the victim chosen, and the batch run (its time, record, finish)
PH_BEGIN, PH_IDLE, PH_FORM, PH_OVER, PH_MEM0, PH_ASKM, PH_VIC, PH_RUN = 0, 1, 2, 3, 4, 5, 6, 7

# si (int64): the integer state
(S_PH, S_N, S_N0, S_NA, S_NRES, S_WORK, S_NITER, S_MIXED, S_TOK, S_NB, S_NR, S_NP, S_ND, S_BMAX, S_KMAX, S_SKIPCHK,
 S_EMIT, S_RECORD, S_PROG, S_COMPOSE, S_DEM, S_NFIN, S_NCG, S_STAMP, S_NEED, S_NEEDR, S_KVR, S_CTX) = range(28)
# with a KV cache (the token rules): on, capacity, used, admitted (holding KV), swapped out (ring sw[S_SWH:S_SWT]),
# the view narrowed to the admitted, attempts of this formation and their bound, the scheduler chunks, swap
# preemption, the victim chosen by the driver (-1: none refuses) and the first candidate (-1: none), counters, the
# requests whose object changed (tq[:S_NTQ]: rid, 0 recomputed / 1 swapped out / 2 swapped in)
(S_MEM, S_KVCAP, S_USED, S_NADM, S_NSW, S_SWH, S_SWT, S_HIDE, S_ATT, S_ATTMAX, S_CHUNK, S_SWAP, S_VIC, S_VICF,
 S_PREEMPT, S_REJ, S_WASTED, S_SWAPTOK, S_PEAK, S_NTQ) = range(28, 48)
S_CGP = 48  # the prefill chunks' rows at the head of cg (the rest: the batch's decoders)
# the paged rules (any Memory but the default, without prefix caching): on, block size and its shift, blocks in the
# cache and free, whole-prompt reservation, the most recently admitted victim, admissions so far
S_PAGED, S_BS, S_BSH, S_TOTAL, S_FREE, S_WHOLE, S_MOSTREC, S_NADMSEQ = range(49, 57)
S_CACHING = 57  # prefix caching: the pool of freed blocks (kvrules' pool_*) on qe, qs, stamp, cup, qpos, qn
S_NVW = 58  # (records with a KV cache) the last view's request ids, vw[:S_NVW], whose demand a record row holds
# async scheduling: on, the engine's k_max (-1: none), the finished requests still holding their slot and KV (lg[:S_NLAG],
# state R_ST 4), whether the arrivals were read up to F_TSEEN only; record_batches: on, the batch reported
S_ASYNC, S_KMAX0, S_NLAG, S_TSEEN, S_RECB, S_BREP = range(59, 65)
S_STALL = 65  # (with a KV cache) the run ended on an empty batch with nothing more to arrive: the driver's idle test
N_SI = 66
# sf (float64): the clock and its sums; the swap seconds of this formation's swap-ins and of its preemptions
F_T, F_T0, F_H, F_BUSY, F_KS, F_NEXT, F_TAU, F_SWAPS, F_E1, F_E2, F_TSEEN = range(11)
N_SF = 11
# ri (int64, per request): prompt, output, prefilled, decoded, state (0 not arrived or rejected, 1 resident, 2
# finished, 3 swapped out, 4 finished but holding its slot and KV one batch longer: async scheduling), the check's
# marks and sum, KV held, tokens to recompute, preemptions
R_PC, R_D, R_PF, R_DC, R_ST, R_MP, R_MD, R_ACC, R_KV, R_RC, R_NPRE = range(11)
R_NBK, R_ADM = 11, 12  # (paged) blocks held, -1 when not admitted; admission number
R_HWM = 13  # (paged records) prompt tokens ever computed: recomputation is not useful
N_RI = 14
# rf (float64, per request): first scheduled, prefill done, first token, finish
R_FS, R_PDN, R_FTK, R_FIN = range(4)


@jit(inline="always")
def _served(ri, rf, cg, cgf, ncg, i, t):
    """After request ``i``'s tokens of the batch ending at ``t``: its finish time if its prompt and output are done,
    and its row of changes for the driver (``cg[ncg]``: id, prefilled, decoded; ``cgf[ncg]``: first scheduled); return
    the next row and its demand now.  (The prefill and the decode advance of ``_advance`` end alike.)"""
    if ri[i, R_PF] >= ri[i, R_PC] and ri[i, R_DC] >= ri[i, R_D]:
        rf[i, R_FIN] = t
    cg[ncg, 0] = i
    cg[ncg, 1] = ri[i, R_PF]
    cg[ncg, 2] = ri[i, R_DC]
    cgf[ncg] = rf[i, R_FS]
    return ncg + 1, _demand(ri, i)


@jit(inline="always")
def _demand(ri, i):
    """``RequestState.demand`` from the arrays: the remaining prompt, or one decode token, or 0."""
    if ri[i, R_PF] < ri[i, R_PC]:
        return ri[i, R_PC] - ri[i, R_PF]
    if ri[i, R_DC] < ri[i, R_D]:
        return 1
    return 0


@jit(inline="always")
def _admit(si, arr, ri, bt, bnw, upto):
    """EngineRun.admit_arrivals: every arrival up to ``upto`` joins the residents, a backlog row at its time."""
    na, n, n0 = si[S_NA], si[S_N], si[S_N0]
    nb, nres, work, dem = si[S_NB], si[S_NRES], si[S_WORK], si[S_DEM]
    mem = si[S_MEM] != 0
    while na < n and arr[na] <= upto:
        i = n0 + na
        ta = arr[na]
        na += 1
        if mem and never_fits(si[S_PAGED] != 0, ri[i, R_PC], ri[i, R_D], si[S_BS], si[S_TOTAL],
                              si[S_KVCAP]):  # StationMemory.rejects
            si[S_REJ] += 1
            continue
        ri[i, R_ST] = 1
        nres += 1
        work += ri[i, R_PC] + ri[i, R_D]
        dem += _demand(ri, i)
        bt[nb] = ta
        bnw[nb, 0] = nres
        bnw[nb, 1] = work
        nb += 1
    si[S_NA], si[S_NB], si[S_NRES], si[S_WORK], si[S_DEM] = na, nb, nres, work, dem


@jit(inline="always")
def _bad(si, ri, bp, npf, bd, nd, ntab):
    """Whether the batch breaks what :func:`~fluidq.policies.base.batch_violations` checks (or would index past the
    batch-time table): a filter that flags every batch it would flag; it marks ``ri[:, R_MP/R_MD]``."""
    N = ri.shape[0]
    hide = si[S_HIDE] != 0
    s = si[S_STAMP] + 1
    si[S_STAMP] = s
    tokens = 0
    nreq = 0
    for j in range(npf):
        rid, m = bp[j, 0], bp[j, 1]
        if rid < 0 or rid >= N or ri[rid, R_ST] != 1 or m < 1 or (hide and not _held(si, ri, rid)):
            return True
        if ri[rid, R_MP] == s:  # twice in the prefill part (batch_faults: one chunk per request per batch)
            return True
        ri[rid, R_MP] = s
        nreq += 1
        if m > ri[rid, R_PC] - ri[rid, R_PF]:
            return True
        tokens += m
    for j in range(nd):
        rid = bd[j]
        if rid < 0 or rid >= N or ri[rid, R_ST] != 1 or (hide and not _held(si, ri, rid)):
            return True
        if ri[rid, R_PF] < ri[rid, R_PC] or ri[rid, R_DC] >= ri[rid, R_D]:
            return True
        if ri[rid, R_MD] == s:  # (6c) twice in the batch
            return True
        ri[rid, R_MD] = s
        if ri[rid, R_MP] != s:
            nreq += 1
    tokens += nd
    if tokens > si[S_BMAX] or tokens >= ntab:
        return True
    return si[S_KMAX] >= 0 and nreq > si[S_KMAX]


@jit(inline="always")
def _held(si, ri, i):
    """Admitted: holding KV (token rules), or blocks (the paged rules' ``nblk``)."""
    if si[S_PAGED] != 0:
        return ri[i, R_NBK] >= 0
    return ri[i, R_KV] > 0


@jit(inline="always")
def _alloc(si, pool, k):
    """``BlockPool.alloc``: ``k`` free blocks taken (with prefix caching, off the queue: ``pool_alloc``)."""
    si[S_FREE] -= k
    if si[S_CACHING] != 0:
        qe, qs, stamp, cup, qpos, qn = pool
        qs[0], qs[1] = pool_alloc(qe, 0, qs[0], qs[1], k, stamp, cup)


@jit(inline="always")
def _release(si, pool, i, nb):
    """``BlockPool.release``: request ``i`` frees its ``nb`` blocks (with prefix caching, queued: ``pool_release``)."""
    si[S_FREE] += nb
    if si[S_CACHING] != 0:
        qe, qs, stamp, cup, qpos, qn = pool
        qs[1], qs[2] = pool_release(qe, 0, qe.shape[0], qs[1], qs[2], stamp, cup, qpos, qn, i, nb)


@jit(inline="always")
def _take(si, ri, pool, i, m):
    """``StationMemory._take``: the blocks request ``i`` needs for ``m`` more tokens, off the free ones."""
    k = blocks_needed(ri[i, R_KV], m, si[S_BS], si[S_BSH], ri[i, R_NBK])
    if k > 0:
        _alloc(si, pool, k)
        ri[i, R_NBK] += k


@jit(inline="always")
def _preempt(si, sf, ri, sw, tq, pool, v):
    """``StationMemory._preempt`` (token rules) on the arrays: ``v`` gives up its KV, swapped out or to recompute
    (``recompute``, the rule); its object is refreshed by the driver (``tq``)."""
    held = ri[v, R_KV]
    si[S_USED] -= held
    ri[v, R_KV] = 0
    if si[S_PAGED] != 0:  # its blocks go back to the pool (no prefix caching: plain free blocks)
        nb = ri[v, R_NBK]
        _release(si, pool, v, nb if nb > 0 else 0)
        ri[v, R_NBK] = -1
    si[S_PREEMPT] += 1
    ri[v, R_NPRE] += 1
    q = si[S_NTQ]
    tq[q, 0] = v
    si[S_NTQ] = q + 1
    if si[S_SWAP] != 0:
        si[S_SWAPTOK] += held
        ri[v, R_ST] = 3
        k = si[S_SWT] % sw.shape[0]
        sw[k, 0] = v
        sw[k, 1] = held
        si[S_SWT] += 1
        si[S_NSW] += 1
        tq[q, 1] = 1
        return held * sf[F_SWAPS]
    si[S_WASTED] += held
    pc, rc, again = recompute(ri[v, R_PC], ri[v, R_RC], ri[v, R_DC], ri[v, R_PF])
    ri[v, R_PC] = pc
    ri[v, R_RC] = rc
    ri[v, R_PF] = 0
    si[S_WORK] += again
    tq[q, 1] = 0
    return 0.0


@jit(inline="always")
def _leave(si, ri, pool, fo, nfin, i):
    """Request ``i`` leaves the engine (EngineRun.release): finished, in ``fo[nfin]`` for the driver, its KV (blocks)
    freed; return the next row of ``fo``."""
    ri[i, R_ST] = 2
    fo[nfin] = i
    if si[S_MEM] != 0:
        si[S_USED] -= ri[i, R_KV]
        if si[S_PAGED] != 0:
            if ri[i, R_NBK] >= 0:  # (BlockPool.release, then forget: plain free blocks)
                _release(si, pool, i, ri[i, R_NBK])
                if si[S_CACHING] != 0:
                    qe, qs, stamp, cup, qpos, qn = pool
                    stamp[i] = -1
                    cup[i] = 0
                ri[i, R_NBK] = -1
                si[S_NADM] -= 1
        elif ri[i, R_KV] > 0:
            si[S_NADM] -= 1
    return nfin + 1


@jit(inline="always")
def _release_lag(si, ri, pool, fo, lg):
    """Async scheduling: the requests finished in the batch before (``lg[:S_NLAG]``) leave now, their outputs read
    (EngineRun.release of ``lag_fin``; StationMemory.after_batch notes the peak first)."""
    if si[S_MEM] != 0 and si[S_USED] > si[S_PEAK]:
        si[S_PEAK] = si[S_USED]
    nfin = si[S_NFIN]
    for j in range(si[S_NLAG]):
        nfin = _leave(si, ri, pool, fo, nfin, lg[j])
    si[S_NRES] -= nfin - si[S_NFIN]
    si[S_NFIN] = nfin
    si[S_NLAG] = 0


@jit
def _advance(si, sf, arr, ri, rf, bp, bd, tau_b, bt, bnw, rci, rcf, fo, cg, cgf, bk, sw, tq, qe, qs, stamp, cup,
             qpos, qn, vw, lg):
    """Run the engine until the policy must be asked (``STATUS_ASK``) or another status (see the module notes)."""
    n = si[S_N]
    h = sf[F_H]
    mem = si[S_MEM] != 0
    paged = si[S_PAGED] != 0
    caching = si[S_CACHING] != 0
    pool = (qe, qs, stamp, cup, qpos, qn)
    kv_cap = si[S_KVCAP]
    asy = si[S_ASYNC] != 0
    while True:
        ph = si[S_PH]
        if ph == PH_BEGIN:  # EngineRun.begin up to the idle test
            need = si[S_NB] + (n - si[S_NA]) + 2
            if need > bt.shape[0]:
                si[S_NEED] = need
                return STATUS_GROW
            t = sf[F_T]
            # (async scheduling: the arrivals up to the previous batch's start, read when it was formed)
            _admit(si, arr, ri, bt, bnw, sf[F_TSEEN] if si[S_TSEEN] != 0 else t)
            nb = si[S_NB]
            bt[nb] = t
            bnw[nb, 0] = si[S_NRES]
            bnw[nb, 1] = si[S_WORK]
            si[S_NB] = nb + 1
            if t >= h:
                si[S_PH] = PH_OVER
                return STATUS_DONE
            si[S_PH] = PH_IDLE
            if si[S_PROG] != 0 and t >= sf[F_NEXT]:
                return STATUS_PROGRESS
        elif ph == PH_IDLE:
            if si[S_NRES] == 0:  # an idle engine jumps to its next arrival (S_NRES counts the swapped out too)
                na = si[S_NA]
                if na >= n:
                    si[S_PH] = PH_OVER
                    return STATUS_DONE
                t = sf[F_T]
                a = arr[na]
                x = h if h <= a else a
                sf[F_T] = x if x > t else t
                si[S_TSEEN] = 0
                si[S_PH] = PH_BEGIN
                continue
            if asy and si[S_KMAX0] >= 0:  # the requests finished in the batch in flight hold their k_max slots
                k = si[S_KMAX0] - si[S_NLAG]
                if k < 1:  # every slot is held by a finished request: read the outputs first, begin again
                    si[S_KMAX] = si[S_KMAX0]
                    _release_lag(si, ri, pool, fo, lg)
                    si[S_TSEEN] = 0
                    si[S_PH] = PH_BEGIN
                    continue
                si[S_KMAX] = k
            if mem:
                si[S_PH] = PH_MEM0
                continue
            si[S_HIDE] = 0
            si[S_PH] = PH_FORM
            return STATUS_ASK
        elif ph == PH_MEM0:  # StationMemory.form: the swap-ins first, oldest first, while their KV fits
            e1 = 0.0
            while si[S_NSW] > 0:
                k = si[S_SWH] % sw.shape[0]
                v, held = sw[k, 0], sw[k, 1]
                if not swap_in_fits(paged, held, si[S_BS], si[S_FREE], si[S_USED], kv_cap):
                    break
                si[S_SWH] += 1
                si[S_NSW] -= 1
                if paged:  # its blocks back (its admission number kept)
                    k = cdiv(held, si[S_BS], si[S_BSH])
                    _alloc(si, pool, k)
                    ri[v, R_NBK] = k
                si[S_USED] += held
                ri[v, R_KV] = held
                ri[v, R_ST] = 1
                si[S_NADM] += 1
                si[S_SWAPTOK] += held
                e1 += held * sf[F_SWAPS]
                q = si[S_NTQ]
                tq[q, 0] = v
                tq[q, 1] = 2
                si[S_NTQ] = q + 1
            sf[F_E1] = e1
            sf[F_E2] = 0.0
            if si[S_NRES] - si[S_NSW] == 0:  # nobody in memory: the swap time alone
                si[S_NP] = 0
                si[S_ND] = 0
                si[S_PH] = PH_RUN
                continue
            si[S_HIDE] = 1 if si[S_NSW] > 0 else 0  # (StationMemory._tokens)
            si[S_ATT] = 0
            si[S_ATTMAX] = 2 * (si[S_NRES] - si[S_NSW]) + 8
            si[S_PH] = PH_ASKM
        elif ph == PH_ASKM:
            if si[S_ATT] >= si[S_ATTMAX]:  # (unreachable: each pass preempts or narrows the view) the last batch
                si[S_PH] = PH_RUN
                _clamp(si, bp, kv_cap)
                if si[S_COMPOSE] != 0:
                    return STATUS_TAU
                continue
            si[S_PH] = PH_FORM
            return STATUS_ASK
        elif ph == PH_FORM:  # the batch is in bp[:S_NP], bd[:S_ND]
            npf, nd = si[S_NP], si[S_ND]
            if si[S_SKIPCHK] == 0 and _bad(si, ri, bp, npf, bd, nd, tau_b.shape[0]):
                return STATUS_BAD
            si[S_SKIPCHK] = 0
            if not mem:
                si[S_PH] = PH_RUN
                continue
            if paged:  # the paged rules' pass (StationMemory._paged)
                need = 0
                for j in range(npf):
                    i = bp[j, 0]
                    if ri[i, R_NBK] >= 0:
                        need += blocks_needed(ri[i, R_KV], bp[j, 1], si[S_BS], si[S_BSH], ri[i, R_NBK])
                for j in range(nd):
                    i = bd[j]
                    need += blocks_needed(ri[i, R_KV], 1, si[S_BS], si[S_BSH], ri[i, R_NBK])
                if need > si[S_FREE]:  # a victim (the driver: most recently admitted, or last in the order)
                    si[S_PH] = PH_VIC
                    return STATUS_VICTIM
                s = si[S_STAMP] + 1  # the running requests: admitted before this pass
                si[S_STAMP] = s
                for j in range(npf):
                    i = bp[j, 0]
                    if ri[i, R_NBK] >= 0:
                        ri[i, R_MP] = s
                for j in range(npf):
                    i = bp[j, 0]
                    if ri[i, R_MP] == s:
                        _take(si, ri, pool, i, bp[j, 1])
                for j in range(nd):
                    _take(si, ri, pool, bd[j], 1)
                w = 0
                stop = False
                for j in range(npf):
                    i, m = bp[j, 0], bp[j, 1]
                    if ri[i, R_MP] == s:
                        bk[w, 0] = i
                        bk[w, 1] = m
                        w += 1
                        continue
                    if stop:
                        continue
                    hit = 0
                    if caching and cup[i] > 0:  # its own leading blocks, still cached, come back
                        want = prefix_want(ri[i, R_PC], si[S_BS], si[S_BSH], si[S_FREE])
                        if want == STOP:
                            stop = True
                            continue
                        hit = pool_reuse(qe, 0, cup, qpos, qn, i, want)
                        si[S_FREE] -= hit
                    x = paged_take(ri[i, R_PC], ri[i, R_PF], m, hit, si[S_BS], si[S_WHOLE] != 0, si[S_FREE])
                    if x == STOP:
                        stop = True
                        continue
                    if ri[i, R_NBK] < 0:
                        si[S_NADM] += 1
                    ri[i, R_NBK] = hit
                    if hit:  # (StationMemory: the prompt restarts after them; not wasted, not computed again)
                        g = hit * si[S_BS]
                        ri[i, R_KV] = g
                        si[S_USED] += g
                        ri[i, R_PF] = g
                        si[S_WASTED] -= g
                        si[S_WORK] -= g
                        q = si[S_NTQ]
                        tq[q, 0] = i
                        tq[q, 1] = 3
                        si[S_NTQ] = q + 1
                    ri[i, R_ADM] = si[S_NADMSEQ]
                    si[S_NADMSEQ] += 1
                    _take(si, ri, pool, i, x)
                    bk[w, 0] = i
                    bk[w, 1] = x
                    w += 1
                if paged_retry(stop, w, nd, si[S_HIDE] != 0, si[S_NADM]):
                    si[S_HIDE] = 1
                    si[S_PH] = PH_ASKM
                    continue
                for j in range(w):
                    bp[j, 0] = bk[j, 0]
                    bp[j, 1] = bk[j, 1]
                si[S_NP] = w
                si[S_PH] = PH_RUN
                if si[S_COMPOSE] != 0:
                    return STATUS_TAU
                continue
            # the token rules' pass over the policy's batch (StationMemory._tokens)
            room = kv_cap - si[S_USED] - nd
            if room >= 0:
                reserve = si[S_NADM]
                w = 0
                dropped = False
                chunk = si[S_CHUNK] != 0
                for j in range(npf):
                    i, m = bp[j, 0], bp[j, 1]
                    x = token_take(m, ri[i, R_PC] - ri[i, R_PF], ri[i, R_KV], room, reserve, chunk)
                    if x >= 0:
                        bk[w, 0] = i
                        bk[w, 1] = x
                        w += 1
                        room -= x
                    elif x == STOP:
                        dropped = True
                        break
                nxt = token_next(dropped, si[S_HIDE] != 0, w == 0 and nd == 0, room, reserve, si[S_NADM])
                if nxt == ASK_AGAIN:
                    si[S_HIDE] = 1
                    si[S_ATT] += 1
                    si[S_PH] = PH_ASKM
                    continue
                if nxt == ACCEPT:
                    for j in range(w):
                        bp[j, 0] = bk[j, 0]
                        bp[j, 1] = bk[j, 1]
                    si[S_NP] = w
                    si[S_PH] = PH_RUN
                    _clamp(si, bp, kv_cap)
                    if si[S_COMPOSE] != 0:
                        return STATUS_TAU
                    continue
            si[S_PH] = PH_VIC  # a victim: the driver orders the admitted requests as the policy does
            return STATUS_VICTIM
        elif ph == PH_VIC:
            v = si[S_VIC]
            nd = si[S_ND]
            if paged:  # (no refusal under the paged rules: the first candidate is the victim then)
                if v < 0:
                    v = si[S_VICF]
                sf[F_E2] += _preempt(si, sf, ri, sw, tq, pool, v)
                si[S_NADM] -= 1
                si[S_HIDE] = 1
                si[S_PH] = PH_ASKM
                continue
            if v < 0:  # every candidate refuses
                k = no_victim_decoders(nd, kv_cap - si[S_USED])
                if k or si[S_VICF] < 0:
                    si[S_NP] = 0
                    si[S_ND] = k
                    si[S_PH] = PH_RUN
                    _clamp(si, bp, kv_cap)
                    if si[S_COMPOSE] != 0:
                        return STATUS_TAU
                    continue
                v = si[S_VICF]
            sf[F_E2] += _preempt(si, sf, ri, sw, tq, pool, v)
            si[S_NADM] -= 1
            si[S_HIDE] = 1
            si[S_ATT] += 1
            si[S_PH] = PH_ASKM
        elif ph == PH_RUN:  # the batch is bp[:S_NP], bd[:S_ND]: its time, record and finish (EngineRun)
            record = si[S_RECORD] != 0
            need = si[S_NB] + (n - si[S_NA]) + 2
            if need > bt.shape[0]:
                si[S_NEED] = need
                return STATUS_GROW
            if record and si[S_NR] + 1 > rcf.shape[0]:
                si[S_NEEDR] = si[S_NR] + 1
                return STATUS_GROW
            npf, nd = si[S_NP], si[S_ND]
            t = sf[F_T]
            extra = sf[F_E1] + sf[F_E2] if mem else 0.0
            if npf == 0 and nd == 0:  # nothing to run: the swap time alone, or wait for the next arrival
                if asy and (si[S_NLAG] > 0 or si[S_TSEEN] != 0):
                    # async scheduling, nothing in flight: every output and arrival is read now (this pass's swap
                    # time is not charged, as in EngineRun.begin), and the engine begins again at t
                    _release_lag(si, ri, pool, fo, lg)
                    si[S_TSEEN] = 0
                    si[S_PH] = PH_BEGIN
                    continue
                if extra > 0:
                    t = t + extra
                    sf[F_T] = t
                    sf[F_BUSY] += extra
                    si[S_PH] = PH_BEGIN
                    continue
                na = si[S_NA]
                if na >= n:
                    si[S_PH] = PH_OVER
                    if mem:  # (EngineRun.begin: the driver asks _idle_with_work over every resident)
                        si[S_STALL] = 1
                    return STATUS_DONE
                a = arr[na]
                sf[F_T] = h if h <= a else a
                si[S_PH] = PH_BEGIN
                continue
            if si[S_RECB] != 0:  # record_batches: the driver keeps the batch (reported once)
                if si[S_BREP] == 0:
                    si[S_BREP] = 1
                    return STATUS_BATCH
                si[S_BREP] = 0
            ptok = 0
            for j in range(npf):
                ptok += bp[j, 1]
            tokens = ptok + nd
            ks = sf[F_KS]
            emit = si[S_EMIT]
            if si[S_COMPOSE] != 0:  # the composition's time and the decoders' contexts, from the driver
                tau = sf[F_TAU]
                kvr = si[S_CTX]
            elif ks != 0.0:  # context-aware: the decoders' KV held (without a cache: prompt + generated - emit)
                kvr = 0
                if mem:
                    for j in range(nd):
                        kvr += ri[bd[j], R_KV]
                else:
                    for j in range(nd):
                        kvr += ri[bd[j], R_PF] + ri[bd[j], R_DC]
                    kvr -= emit * nd
                tau = tau_b[tokens] + ks * kvr
            else:
                kvr = 0
                tau = tau_b[tokens]
            if record:
                r = si[S_NR]
                rcf[r, 0] = t
                rcf[r, 1] = tau + extra
                rci[r, 0] = ptok
                rci[r, 1] = nd
                s = si[S_STAMP] + 1  # distinct requests of the batch
                si[S_STAMP] = s
                nreq = 0
                for j in range(npf):
                    i = bp[j, 0]
                    if ri[i, R_MP] != s:
                        ri[i, R_MP] = s
                        nreq += 1
                for j in range(nd):
                    i = bd[j]
                    if ri[i, R_MP] != s:
                        ri[i, R_MP] = s
                        nreq += 1
                rci[r, 2] = nreq
                if mem:  # the last view's demand (every resident in memory, or the admitted alone)
                    dv = 0
                    for j in range(si[S_NVW]):
                        dv += _demand(ri, vw[j])
                    rci[r, 3] = dv
                else:
                    rci[r, 3] = si[S_DEM]
                if ks == 0.0 and si[S_COMPOSE] == 0:
                    kvr = 0
                    for j in range(nd):
                        kvr += ri[bd[j], R_PF] + ri[bd[j], R_DC] - ri[bd[j], R_RC]
                rci[r, 4] = kvr
                si[S_NR] = r + 1
            t0 = t
            t += tau
            if extra:
                t += extra
            sf[F_T] = t
            sf[F_T0] = t0
            si[S_NITER] += 1
            sf[F_BUSY] += tau + extra
            si[S_TOK] += tokens
            # EngineRun.finish: the arrivals up to the batch's end come first (async scheduling: up to its start, the
            # next batch being formed while this one runs)
            if asy:
                _admit(si, arr, ri, bt, bnw, t0)
                si[S_TSEEN] = 1
                sf[F_TSEEN] = t0
            else:
                _admit(si, arr, ri, bt, bnw, t)
            work = si[S_WORK] - tokens
            if npf > 0 and nd > 0:
                si[S_MIXED] += 1
            dem = si[S_DEM]
            ncg = si[S_NCG]
            grown = 0
            useful = 0
            for j in range(npf):
                i, m = bp[j, 0], bp[j, 1]
                if record and paged:  # prompt tokens computed for the first time
                    top = ri[i, R_PF] + m
                    if ri[i, R_PC] - ri[i, R_RC] < top:
                        top = ri[i, R_PC] - ri[i, R_RC]
                    if top > ri[i, R_HWM]:
                        useful += top - ri[i, R_HWM]
                        ri[i, R_HWM] = top
                dem -= _demand(ri, i)
                x = rf[i, R_FS]
                if x != x:
                    rf[i, R_FS] = t0
                ri[i, R_PF] += m
                if mem:
                    if ri[i, R_KV] == 0 and not paged:
                        si[S_NADM] += 1  # admitted: it holds KV from now on
                    ri[i, R_KV] += m
                    grown += m
                if ri[i, R_PF] >= ri[i, R_PC]:  # (prefill done)
                    x = rf[i, R_PDN]
                    if x != x:
                        rf[i, R_PDN] = t
                        if emit != 0 and ri[i, R_DC] == 0 and ri[i, R_D] > 0:  # the prefill gives the 1st token
                            ri[i, R_DC] = 1
                            rf[i, R_FTK] = t
                            work -= 1
                            useful += 1
                    elif emit != 0 and 0 < ri[i, R_DC] < ri[i, R_D]:  # a recomputation caught up: next token
                        ri[i, R_DC] += 1
                        work -= 1
                        useful += 1
                ncg, d = _served(ri, rf, cg, cgf, ncg, i, t)
                dem += d
            for j in range(nd):
                i = bd[j]
                dem -= _demand(ri, i)
                ri[i, R_DC] += 1
                if mem:
                    ri[i, R_KV] += 1
                    grown += 1
                if ri[i, R_DC] == 1:
                    rf[i, R_FTK] = t
                ncg, d = _served(ri, rf, cg, cgf, ncg, i, t)
                dem += d
            si[S_WORK] = work
            si[S_DEM] = dem
            si[S_NCG] = ncg
            si[S_CGP] = npf
            if mem:
                si[S_USED] += grown
                if si[S_USED] > si[S_PEAK]:  # (StationMemory.after_batch notes the peak before releasing)
                    si[S_PEAK] = si[S_USED]
                if record:
                    rci[si[S_NR] - 1, 5] = si[S_USED]
            # the finished requests leave (prompt done and every output token given), their KV freed; with async
            # scheduling those of the batch before leave now and this batch's hold their slot and KV one more batch
            if asy:
                _release_lag(si, ri, pool, fo, lg)
                nl = 0
                for j in range(npf + nd):
                    i = bp[j, 0] if j < npf else bd[j - npf]
                    if ri[i, R_ST] == 1 and ri[i, R_PF] >= ri[i, R_PC] and ri[i, R_DC] >= ri[i, R_D]:
                        ri[i, R_ST] = 4
                        lg[nl] = i
                        nl += 1
                si[S_NLAG] = nl
            else:
                nfin = si[S_NFIN]
                for j in range(npf + nd):
                    i = bp[j, 0] if j < npf else bd[j - npf]
                    if ri[i, R_ST] == 1 and ri[i, R_PF] >= ri[i, R_PC] and ri[i, R_DC] >= ri[i, R_D]:
                        nfin = _leave(si, ri, pool, fo, nfin, i)
                si[S_NRES] -= nfin - si[S_NFIN]
                si[S_NFIN] = nfin
            if record and paged:  # residents holding blocks, the others (swapped out included), useful tokens
                r = si[S_NR] - 1
                rci[r, 6] = si[S_NADM]
                rci[r, 7] = si[S_NRES] - si[S_NADM]
                rci[r, 8] = useful + nd
            si[S_PH] = PH_BEGIN
        else:
            return STATUS_DONE


@jit(inline="always")
def _clamp(si, bp, kv_cap):
    """StationMemory.form's last rule: never exceed memory (at most the free tokens' decoders, no prefill)."""
    tokens = si[S_ND]
    for j in range(si[S_NP]):
        tokens += bp[j, 1]
    if tokens > kv_cap - si[S_USED]:
        si[S_ND] = decoders_within(si[S_ND], kv_cap - si[S_USED])
        si[S_NP] = 0


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
                _idle_with_work(policy, view, blocked, t)  # EngineRun.begin: an empty batch, nothing to arrive
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


class _Owned:
    """A request's fields as the arrays hold them (``EngineRun.owned``'s ``get``), for the residents ``objs``."""

    __slots__ = ("objs", "ri")

    def __init__(self, ri, objs):
        self.ri, self.objs = ri, objs

    def get(self, rid):
        try:
            if rid not in self.objs:
                return None
        except TypeError:  # (unhashable: batch_faults says what)
            return None
        return tuple(self.ri[rid, [R_PC, R_D, R_PF, R_DC]].tolist())


_FIELDS4 = [R_PC, R_D, R_PF, R_DC]


def _differs(ri, batch, objs) -> bool:
    """Whether a resident request of ``batch`` has (prompt, output, prefilled, decoded) other than the arrays' (or
    the batch is not plain pairs of ids: then ``step._tampered`` and the checks after it decide)."""
    try:
        rids = [item[0] for item in batch.prefill]
        rids += batch.decode
        keep = [(rid, r) for rid, r in zip(rids, map(objs.get, rids)) if r is not None]
        if not keep:
            return False
        ids = np.array([rid for rid, _ in keep], dtype=np.int64)
        # (compared as Python lists, with step._tampered's equality: building a numpy array of the objects'
        # fields cost more than the rest of the check)
        return [[r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded] for _, r in keep] != \
            ri[ids][:, _FIELDS4].tolist()
    except (TypeError, IndexError, KeyError, ValueError, OverflowError):
        return True


def _junk_blocked(batch, reqs) -> bool:
    """Whether ``blocked`` names an id that is not a request of the view (batch_violations says which)."""
    ids = {r.rid for r in reqs}
    try:
        return any(rid not in ids for rid in batch.blocked)
    except TypeError:
        return True


def _stalled(policy, si, ri, sw, ol, objs, blocked, t):
    """EngineRun's idle error with a KV cache: every resident and the swapped out (``step._All``), their fields
    brought up to date from the arrays first."""
    res = [ol[rid] for rid in objs if ri[rid, R_ST] == 1]
    ring = [int(sw[k % sw.shape[0], 0]) for k in range(int(si[S_SWH]), int(si[S_SWT]))]
    swapped = [(ol[rid], None) for rid in ring]
    for r in res + [q for q, _ in swapped]:
        r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded = ri[r.rid, [R_PC, R_D, R_PF, R_DC]].tolist()
    _idle_with_work(policy, _All(res, swapped), blocked, t)


def _residents(objs, batch) -> bool:
    return all(rid in objs for rid, _ in batch.prefill) and all(rid in objs for rid in batch.decode)


def _raise(name, t, batch, view):
    """EngineRun's :class:`PolicyError` for a batch the kernel's check flagged (``batch_violations`` decides)."""
    bad = batch_violations(batch, view)
    if not bad:  # pragma: no cover - the kernel's check flags only what batch_violations flags
        raise RuntimeError(f"fluidq select kernel: a batch at t={t:.6g} flagged but within the constraints")
    raise _bad_batch(name, t, bad)
