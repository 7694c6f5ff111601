"""The compiled phases of the ``select()`` loop on the kernel's arrays: :func:`_advance` and the pieces it inlines,
EngineRun's (:class:`~fluidq.kernel.step.EngineRun`) begin, formation and finish written over the flat arrays whose
slots :mod:`fluidq.kernel._select_state` names.  :func:`_advance` (compiled by :func:`fluidq.kernel._jit.jit`,
cached; plain Python without numba) runs until the policy must be asked or the driver must act, and returns a status
(``STATUS_*``) -- as :mod:`fluidq.kernel.kv` stops for progress and buffer growth; what the driver,
:func:`fluidq.kernel.select.run_select`, does at each is in :mod:`fluidq.kernel.select`'s notes.  The checks of a
policy's batch that run in Python are :mod:`fluidq.kernel._select_checks`; the compiled one is :func:`_bad`.

The phases (``si[S_PH]``) are EngineRun's halves: ``PH_BEGIN`` (the arrivals up to ``t`` with their backlog rows,
the row at ``t``, the horizon, the progress report), ``PH_IDLE`` (an empty engine jumps to its next arrival, else
ask), ``PH_FORM`` (the batch written: the compiled check; with a KV cache the memory rules' pass, below),
``PH_RUN`` (an empty batch jumps to the next arrival; else the batch time -- ``t(b)``, a context-aware
``t(b) + ks * kv`` over the decoders' contexts, or a composition's time, which the driver computes in Python by the
engine's ``composition_time`` on the request objects as EngineRun does -- the record row, then EngineRun's
``finish``: the arrivals up to the batch's end, the prefill chunks, the first token from the prefill with
``emit_at_prefill``, the decode tokens, the finished requests released), ``PH_OVER``.

With a KV cache under the default token rules (``Memory()``; branch h-sel15, 2026-12-07) the formation is
``StationMemory.form``'s, phase by phase: the swap-ins (``PH_MEM0``, oldest first while ``swap_in_fits``), then the
passes of ``StationMemory._tokens`` -- ``PH_ASKM`` asks the policy (``STATUS_ASK``; the view is every resident, or the
admitted ones alone, ``si[S_HIDE]``, as StationMemory narrows it), ``PH_FORM`` takes the chunks by ``token_pass``
(``token_take`` per chunk, into ``bk``; the network loop's and the KV kernel's pass too) and decides by ``token_next``
(accept, ask again without the new requests, or preempt), and a preemption stops with ``STATUS_VICTIM`` (the driver
chooses the victim); ``PH_VIC`` applies ``no_victim_decoders`` or preempts (``recompute`` or a swap-out), and asks
again. The accepted batch goes through the never-exceed clamp (``decoders_within``); with a composition batch time the
driver computes its time from the KV held (``STATUS_TAU``). Every decision is a call to :mod:`fluidq.kernel.kvrules`
(``never_fits`` at arrival, ``swap_in_fits``, ``token_pass``/``token_take``, ``token_next``, ``no_victim_decoders``,
``decoders_within``, ``recompute``): no rule is written here. The requests whose objects the memory rules change are
listed in ``tq`` for the driver.

The paged rules (any other :class:`~fluidq.engine.Memory` -- vLLM's blocks, ``VLLM`` --; same branch) are
``StationMemory._paged``'s pass in ``PH_FORM``: the running requests' blocks (``blocks_needed``) against the free
ones; while they do not fit, ``STATUS_VICTIM`` and the policy is asked again with the admitted requests alone; then
the running requests take their blocks (``_take``) and new ones are admitted head-of-line by ``paged_take``, with
``paged_retry`` to ask again; swap-ins take ``cdiv(held)`` blocks back; rejection is ``never_fits`` over the blocks.
With prefix caching the pool of freed blocks is kvrules' (``pool_alloc``, ``pool_release``, ``pool_reuse`` on
``qe``/``qs``/``stamp``/``cup``/``qpos``/``qn``, the layout of :mod:`fluidq.kernel.kv`; ``qe`` holds twice the
cache's blocks, so a compaction always leaves room), and a re-admitted request takes back its own cached leading
blocks by ``prefix_want`` (its prompt restarts after them: ``prefilled``, KV held, work and wasted tokens as
StationMemory changes them).

Async scheduling and ``record_batches`` (branch h-sel2, 2026-12-07) are EngineRun's too.  With
``async_scheduling`` (``si[S_ASYNC]``) a batch's finish admits the arrivals up to its *start* and notes it
(``F_TSEEN``, ``S_TSEEN``: EngineRun's ``t_seen``, up to which the next ``PH_BEGIN`` reads), and its finished
requests stay resident in state 4, holding their KV and ``k_max`` slot (``lg[:S_NLAG]``: EngineRun's ``lag_fin``),
until the next batch's finish releases them (:func:`_release_lag`, after noting the peak as ``after_batch`` does).
``PH_IDLE`` gives the policy ``k_max - S_NLAG`` slots (``S_KMAX``, which its view shows); with none left it releases
them and begins again at ``t``, and so does an empty batch while outputs or arrivals are unread (that pass's swap time
uncharged, as in EngineRun).  With ``record_batches``, ``PH_RUN`` stops once per batch (``STATUS_BATCH``).

Moved out of select.py unchanged (branch h-selsplit, 2026-12-07); every name here is still importable from
:mod:`fluidq.kernel.select`, but the driver calls :func:`_advance` by its name there (a test that wraps it patches
``fluidq.kernel.select._advance``).
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915, N806
from __future__ import annotations

from ._jit import jit
from ._select_state import (F_BUSY, F_E1, F_E2, F_H, F_KS, F_NEXT, F_SWAPS, F_T, F_T0, F_TAU, F_TSEEN, PH_ASKM,
                            PH_BEGIN, PH_FORM, PH_IDLE, PH_MEM0, PH_OVER, PH_RUN, PH_VIC, R_ADM, R_D, R_DC, R_FIN, R_FS,
                            R_FTK, R_HWM, R_KV, R_MD, R_MP, R_NBK, R_NPRE, R_PC, R_PDN, R_PF, R_RC, R_ST, S_ASYNC,
                            S_ATT, S_ATTMAX, S_BMAX, S_BREP, S_BS, S_BSH, S_CACHING, S_CGP, S_CHUNK, S_COMPOSE, S_CTX,
                            S_DEM, S_EMIT, S_FREE, S_HIDE, S_KMAX, S_KMAX0, S_KVCAP, S_MEM, S_MIXED, S_N, S_N0, S_NA,
                            S_NADM, S_NADMSEQ, S_NB, S_NCG, S_ND, S_NEED, S_NEEDR, S_NFIN, S_NITER, S_NLAG, S_NP, S_NR,
                            S_NRES, S_NSW, S_NTQ, S_NVW, S_PAGED, S_PEAK, S_PH, S_PREEMPT, S_PROG, S_RECB, S_RECORD,
                            S_REJ, S_SKIPCHK, S_STALL, S_STAMP, S_SWAP, S_SWAPTOK, S_SWH, S_SWT, S_TOK, S_TOTAL,
                            S_TSEEN, S_USED, S_VIC, S_VICF, S_WASTED, S_WHOLE, S_WORK, STATUS_ASK, STATUS_BAD,
                            STATUS_BATCH, STATUS_DONE, STATUS_GROW, STATUS_PROGRESS, STATUS_TAU, STATUS_VICTIM)
from .kvrules import ACCEPT, ASK_AGAIN, STOP, decoders_within, never_fits, no_victim_decoders, recompute, swap_in_fits
from .kvrules import blocks_needed, cdiv, paged_retry, paged_take, pool_alloc, pool_release, pool_reuse, prefix_want
from .kvrules import token_next, token_pass


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
                w, room, dropped = token_pass(npf, bp[:, 0], bp[:, 1], bk[:, 0], bk[:, 1], ri[:, R_PC], ri[:, R_PF],
                                              ri[:, R_KV], room, reserve, si[S_CHUNK] != 0)
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
