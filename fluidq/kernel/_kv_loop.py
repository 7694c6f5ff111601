"""The compiled KV kernel's loop, :func:`_advance`: the simulation that :func:`fluidq.kernel.kv.step` (the
driver: buffer growth, progress) calls, iteration by iteration.  Its state layout is
:mod:`fluidq.kernel._kv_layout`, its inlined parts (arrivals, the resident lists, the block pool, FCFS
``select``, the decoders' heap) :mod:`fluidq.kernel._kv_parts`; what the kernel covers is told in
:mod:`fluidq.kernel.kv`.

Numba compiles the loop (``_advance``, which the plain-Python :func:`fluidq.kernel.kv.step` calls) apart by two arguments' types:
``mode`` (None: no composition batch time, no async scheduling) and ``feat`` (None: vLLM's rules alone -- paged, the
most recently admitted victim, recompute, no prefix caching); with None the flags they stand for are constants and
their branches are gone from the loop (``feat``: 3-13 % off a vLLM run, issue 15's binding cache at 1.2 lambda*,
2026-12-07, benchmarks/README.md).  A power-of-two block size (``cfg[C_BSH]``, its log2) makes the block arithmetic
shifts and masks (the rules' ``bsh`` argument: ``cdiv``, ``bmod``, ``blocks_needed``, ``prefix_want`` in
:mod:`fluidq.kernel.memory`; the same integers; ~6 % of that run); any other divides.

Memory can bind at any iteration, so this kernel forms the iterations one by one (compiled): the
policy's ``select`` is :func:`~fluidq.kernel._kv_parts._select` over the residents in arrival order, and the memory rules of
:class:`fluidq.kernel.memory.StationMemory` are applied in the same order of operations
(``tests/sim/test_sim_kv_kernel.py`` holds the two identical) by calling :mod:`fluidq.kernel.kvrules`' functions (the
jitted, inlined forms of :mod:`fluidq.kernel.memory`'s), as :mod:`fluidq.kernel.network` does: the block pool with
prefix caching (``_alloc``, ``_release``, ``_reuse``), the block arithmetic (``cdiv``, ``bmod``, ``blocks_needed``:
the blocks the running requests add), the refusal (``never_fits``), the swap-in test (``swap_in_fits``), token
admission (``token_pass``, ``token_take`` per chunk -- the pass network.py's KV passes call too --, ``token_next``
after the pass), paged admission and reservation
(``paged_take``, ``paged_retry``), prefix caching's take-back (``prefix_want``) and recomputation (``recompute``).
Until 2026-12-07 the admissions were written out here: calling them cost 1.046-1.058x per request (commit f9bb483,
2026-12-06), when issue 15's KV target (within 2x of the run without memory) had no room for it; since the block
shift it has (branch h-rules15, ``bench_kernel.py --kv``, cache-loaded processes, 2026-12-07, benchmarks/README.md:
vLLM's binding cache at 1.2 lambda* within 2x in every run).  ``blocks_needed`` and ``prefix_want`` were written
out here until branch h-rules15b (2026-12-07) because the rules divided where this loop shifted
(``kvrules.prefix_want`` in place of the copy cost 1.09-1.17x on the prefix-caching case of ``bench_kernel.py``);
the rules now take the shift as an argument (``bsh``: log2 of the block size or -1; the Python path passes
:func:`~fluidq.kernel.memory.block_shift`'s, the network loop -1) and this loop calls them: against main 5665e9a,
cache-loaded processes alternating, the prefix-caching case 0.97-1.02x (best of 3-5 rounds, three sets), vLLM's
binding cache at 1.2 lambda* within 2x of the run without memory in every process (1.39-1.86x; shared 2-vCPU VM,
2026-12-07, benchmarks/README.md, h-rules15b).  ``tests/sim/test_sim_prefix_takeback.py`` still works the
take-back out by hand for both paths.  The two decoder clamps are calls too (``no_victim_decoders`` when no request
can be preempted, ``decoders_within`` never to exceed memory; only the rebuild of the batch's decoders, ``_fill_bd``,
stays in this kernel), and so is the victim rule: ``victim_key`` (the admission number under vLLM's most-recent rule, else
the place in arrival order; the victim is the holder of KV with the largest key), which ``StationMemory``
(``max`` / ``_victim_order``), network.py's most-recent walk and this loop's walks compare.  What stays here is how
the walks find that largest key in this loop's structures: the admissions' stack ``sr``/``sq`` (pushed in
admission order, so its top is the most recent; no comparison needed) and the lists ``dl``/``pl`` (in ascending
request id, i.e. arrival order, so their last holder is the latest arrival).  No decision of the memory rules is
written out in this loop; a change to a rule is made in :mod:`fluidq.kernel.memory`.

The decoders run on a virtual clock of decode rounds ``G`` (one per iteration that serves decoders):
a decoder's actual ``dc`` and ``kv`` are its stored values plus ``G - gb``; a heap of finishing rounds
(``hf``, ``hr``; stale entries dropped when they surface) gives the finishes.  A batch's decoders are the first
ones of ``dl``, so a decoder is served whenever a younger one is: one that joins ``dl`` right behind a live
decoder finishing no later gets no entry (``cv`` 1, *covered*, as in :mod:`fluidq.kernel.fcfs`), nor when it is
left out of a batch; it gets one when the decoder ahead of it leaves ``dl`` (finishes or is preempted) or an
older decoder comes back between the two (a swap-in, a recomputed victim).  Equal output lengths leave about
one entry in the heap where every decoder had one; ``cnt[r]`` counts the
decoders whose KV sits at offset ``r`` in a block at round 0, so the decoders needing a new block
this round are ``cnt[-G % block_size]``; running sums over the decoders give the batch's KV for
context-aware times and records.  An iteration that serves every decoder (the usual case under a KV
cache) thus costs O(1) plus its events (a finish, a completed prompt, a first token, a preemption);
a decoder's values are made actual when it leaves (finish, preemption) or is left out of a batch.

When the cache binds, a batch is formed in passes: each preemption asks the policy again.  A pass that must
preempt whatever prompts it would take -- decode goes first and takes every decoder, and the blocks (tokens)
those decoders need this round already exceed the free ones -- skips the prefill walk (``nowalk``): its victim
is chosen without it.  On the Theorem-2 workload with vLLM's binding cache this leaves 1.00 walks per iteration
where there were 1.29 (the iterations and preemptions unchanged).
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915, PLR1730, N806
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._kv_layout import (STATUS_DONE, STATUS_PROGRESS, STATUS_GROW, C_BMAX, C_KCAP, C_MIXED, C_CHUNKED, C_CHUNK_LONG,
                         C_PREFILL_FIRST, C_RECORD, C_REPORT, C_PAGED, C_BS, C_WHOLE, C_MOST_RECENT, C_EMIT, C_KVCAP,
                         C_WSIZE, C_NEVER, C_SWAP, C_CACHING, C_MAXBLK, C_COMPOSE, C_ASYNC, C_KENG, C_BSH, I_NA,
                         I_NSYS, I_WORK, I_PH, I_PT, I_NFRESH, I_NPARKED, I_HIDDEN, I_USED, I_FREE, I_NADM, I_ADMSEQ,
                         I_NB, I_NR, I_NITER, I_MIXED, I_TOKS, I_RESUME, I_PREEMPT, I_WASTED, I_REJECTED, I_PEAK,
                         I_NBLOCKED, I_EXAMINED, I_KVDEC, I_SDEC, I_G, I_NSTK, I_NH, I_NFR, I_SWT, I_SH, I_NSW,
                         I_NEED_B, I_NEED_H, I_NEED_R, I_NEED_Q, I_NLG, I_NOWALK, I_NMOVE, F_T, F_BUSY, F_NEXT,
                         F_TSEEN, R_T, R_B, R_X, R_S, R_Q, R_D, R_K, R_U, R_RES, R_WAIT, R_USE, SLACK, L_D, L_P, L_F)
from ._kv_parts import (_alloc, _arrive, _demand, _fill_bd, _ins, _join, _let_go, _release, _rem, _reuse,
                        _select, _uncover_next)
from .fcfs import _hpop, _hpush  # inlined into the loop (numba inline="always")
from .kvrules import bmod as _bmod, cdiv as _cdiv  # the rules kept written once (see the module notes)
from .kvrules import blocks_needed, decoders_within, no_victim_decoders, prefix_want, victim_key
from .kvrules import swap_in_fits
from .kvrules import recompute as _recompute
from .kvrules import ACCEPT, ASK_AGAIN, STOP, paged_retry, paged_take, token_next, token_pass
from .compose import chunks_s as _chunks_s  # the iteration model's compiled evaluation (a composition batch time)


@jit(_nrt=False)
def _advance(arr, P, D, tau, cfg, cf, si, sf, pc, rc, pf, dc, kv, nbk, adm, npre, hwm, isbl, st, fs, pdn, ftk, fin,
             dl, pl, ql, pos_d, pos_p, lp, pend, bpr, bpm, bd, bl, run, fl, sr, sq, gb, cv, cnt, fr, swq, shl, stamp,
             cup, qpos, qn, qs, ct, lg, mode, feat, qe, hf, hr, bt, bn, bw, RF, RI):
    """:func:`step`'s simulation, until the end, a progress report or a buffer without room (``STATUS_GROW``,
    at the top of an iteration, with the sizes needed in ``si``)."""
    n = len(arr)
    b_max = cfg[C_BMAX]
    k_cap = cfg[C_KCAP]
    mixed = cfg[C_MIXED] != 0
    chunked = cfg[C_CHUNKED] != 0
    chunk_long = cfg[C_CHUNK_LONG] != 0
    prefill_first = cfg[C_PREFILL_FIRST] != 0
    record = cfg[C_RECORD] != 0
    report = cfg[C_REPORT] != 0
    paged = feat is None or cfg[C_PAGED] != 0  # (feat: see below)
    bs = cfg[C_BS]
    bsh = cfg[C_BSH]
    whole = cfg[C_WHOLE] != 0
    most_recent = feat is None or cfg[C_MOST_RECENT] != 0
    emit = cfg[C_EMIT] != 0
    kv_cap = cfg[C_KVCAP]
    w_size = cfg[C_WSIZE]
    never = cfg[C_NEVER]
    # ``feat`` is None for a run under vLLM's rules (paged, the most recently admitted victim, recompute preemption,
    # no prefix caching), an int else: numba compiles the first apart in the same way, with ``paged`` and
    # ``most_recent`` the constant True and ``swap`` and ``caching`` False, so it carries none of the other rules'
    # branches (the token rules' admission, the arrival-order victim, swap, the freed-block pool)
    swap = feat is not None and cfg[C_SWAP] != 0
    caching = feat is not None and cfg[C_CACHING] != 0
    maxblk = cfg[C_MAXBLK]
    # ``mode`` is None for a run with neither a composition batch time nor async scheduling (an int else): numba
    # compiles that case apart, with both flags constant False and their branches gone (with them as run-time
    # flags the plain runs measured 1.14-1.29x slower per request)
    compose = mode is not None and cfg[C_COMPOSE] != 0
    async_ = mode is not None and cfg[C_ASYNC] != 0
    keng = cfg[C_KENG]
    skip_ok = chunked and not prefill_first  # a pass bound to preempt skips its prefill walk (see the batch below)
    total = kv_cap // bs
    swap_s = cf[2]
    cap_sw = len(swq)
    horizon = cf[0]
    ks = cf[1]

    na = si[I_NA]
    n_sys = si[I_NSYS]
    work = si[I_WORK]
    ph = si[I_PH]
    pt = si[I_PT]
    n_fresh = si[I_NFRESH]
    n_parked = si[I_NPARKED]
    hidden = si[I_HIDDEN]
    used = si[I_USED]
    free = si[I_FREE]
    nadm = si[I_NADM]
    admseq = si[I_ADMSEQ]
    nb = si[I_NB]
    nr = si[I_NR]
    n_iter = si[I_NITER]
    mixed_iters = si[I_MIXED]
    tok_served = si[I_TOKS]
    resume = si[I_RESUME] != 0
    preemptions = si[I_PREEMPT]
    wasted = si[I_WASTED]
    rejected = si[I_REJECTED]
    peak = si[I_PEAK]
    n_blocked = si[I_NBLOCKED]
    examined = si[I_EXAMINED]
    kvdec = si[I_KVDEC]  # over the decoders: KV tokens held, prompt + generated tokens
    sdec = si[I_SDEC]
    G = si[I_G]  # decode rounds: a decoder's dc and kv are its base values + G - gb (see the module notes)
    nh = si[I_NH]  # hf/hr[:nh]: heap of (round at which a decoder finishes, request); stale entries dropped
    nfr = si[I_NFR]  # fr[:nfr]: decoders not served yet (their first token is still to come)
    swap_tokens = si[I_SWT]
    sh = si[I_SH]  # swapped-out requests: the ring swq[sh:sh + nsw] (oldest first), KV held shl[rid]
    nsw = si[I_NSW]
    nstk = si[I_NSTK]  # sr/sq[:nstk]: (request, admission number) in admission order; stale entries skipped
    t = sf[F_T]
    busy = sf[F_BUSY]
    next_report = sf[F_NEXT]
    tseen = sf[F_TSEEN]
    nlg = si[I_NLG]
    status = STATUS_DONE
    flush = False  # (async) the requests finished in the batch before are let go first, and every arrival is seen

    while True:
        if flush:
            if used > peak:
                peak = used
            used, free, nadm, n_sys = _let_go(lg, nlg, kv, nbk, stamp, cup, qe, qs, qpos, qn, paged, caching, used,
                                              free, nadm, n_sys)
            nlg = 0
            tseen = np.nan
            flush = False
        if len(bt) < nb + (n - na) + 2:  # room for every arrival row and this iteration's row
            si[I_NEED_B] = nb + (n - na) + 2
            status = STATUS_GROW
            break
        if not resume:
            na, n_sys, work, pt, hidden, rejected, nb = _arrive(
                arr, P, D, t if tseen != tseen else tseen, na, n, n_sys, work, pend, pt, hidden, rejected, bt, bn, bw,
                nb, paged, bs, total, kv_cap)
            bt[nb] = t
            bn[nb] = n_sys
            bw[nb] = work
            nb += 1
            if t >= horizon:
                break
            if report and t >= next_report:
                status = STATUS_PROGRESS
                break
        # room for this iteration: three heap pushes per request in the system (one joining the decoders, one
        # when it is uncovered, one left out of the batch), a record row, and in the freed-block queue twice the
        # blocks used before its end (a request is allocated blocks at most twice in an iteration: admitted again
        # after a preemption)
        need_h = nh + 3 * n_sys + 2
        need_r = nr + 1 if record else 0
        need_q = 0
        if caching:
            more = 2 * n_sys * maxblk
            need_q = 2 * (total - qs[0] + (qs[0] if qs[0] < more else more)) + 64
        if len(hf) < need_h or RF.shape[0] < need_r or qe.shape[0] < need_q:
            si[I_NEED_H] = need_h
            si[I_NEED_R] = need_r
            si[I_NEED_Q] = need_q
            status = STATUS_GROW
            resume = True  # this iteration's arrivals and row are in: go on from here
            break
        resume = False
        if ph > SLACK and ph > pt - ph:  # the waiting FIFO moved to the front (see SLACK)
            for i in range(pt - ph):
                pend[i] = pend[ph + i]
            pt -= ph
            ph = 0
            si[I_NMOVE] += 1
        while ph < pt and n_fresh < w_size:  # the window: waiting requests come into view
            rid = pend[ph]
            ph += 1
            _ins(ql, pos_p, lp, L_F, rid)
            hidden -= P[rid]
            if P[rid] <= never:
                n_fresh += 1
        if lp[L_D + 2] + lp[L_P + 2] + lp[L_F + 2] + nlg == 0 and nsw == 0:  # nobody in view
            if na >= n:
                break
            nxt = arr[na] if arr[na] < horizon else horizon
            if nxt > t:  # (async: an arrival not seen yet may be due already)
                t = nxt
            tseen = np.nan
            continue
        k_it = k_cap
        if async_ and keng >= 0:  # requests finished in the batch in flight still hold their k_max slots
            if keng - nlg < 1:  # every slot is held by a finished request: read the outputs first
                flush = True
                continue
            if keng - nlg < k_it:
                k_it = keng - nlg

        # ---- the batch: the policy's choice under the memory rules (StationMemory.form) ----
        extra_s = 0.0
        while nsw > 0:  # swapped-out requests come back first, oldest first, while their KV fits
            rid = swq[sh]
            held = shl[rid]
            if not swap_in_fits(paged, held, bs, free, used, kv_cap):
                break
            sh = (sh + 1) % cap_sw
            nsw -= 1
            if paged:
                nbk[rid] = _cdiv(held, bs, bsh)
                free -= nbk[rid]
            used += held
            kv[rid] = held
            swap_tokens += held
            extra_s += held * swap_s
            nadm += 1
            if pf[rid] >= pc[rid]:  # a decoder again, from this round on
                st[rid] = 1
                _ins(dl, pos_d, lp, L_D, rid)
                kvdec += kv[rid]
                sdec += P[rid] + dc[rid]
                gb[rid] = G
                cnt[_bmod(kv[rid] - G, bs, bsh)] += 1
                nh = _join(dl, pos_d, lp, st, gb, D, dc, cv, hf, hr, nh, rid, G + D[rid] - dc[rid], si)
                if dc[rid] == 0:
                    fr[nfr] = rid
                    nfr += 1
            else:
                st[rid] = 0
                _ins(pl, pos_p, lp, L_P, rid)
        hide = nsw > 0  # while requests are swapped out, no new one is admitted
        demand = 0
        npf = 0
        nd = 0
        alld = False
        full = 0
        while True:
            if lp[L_D + 2] + lp[L_P + 2] + lp[L_F + 2] == 0:  # every resident swapped out: nothing to run
                npf = 0
                nd = 0
                demand = 0 if hide else hidden
                if nlg > 0:  # (async) the finished requests still resident are shown to the policy
                    examined += nlg
                break
            # a pass that preempts whatever its prefill walk gives skips the walk: decode goes first and takes
            # every decoder, whose own new blocks (tokens) exceed the free ones (the prefill chunks only add to that
            # need; the victim is chosen without them; with a chunking scheduler the walk notes no blocked prompt).
            # (paged: the decoders needing a new block this round, cnt[-G % bs], are some of the ndl decoders, so
            # their count above the free blocks implies ndl above them: that clause is not tested again)
            ndl = lp[L_D + 2]
            nowalk = (skip_ok and 0 < ndl <= b_max and ndl <= k_it and
                      (used + ndl > kv_cap if not paged else cnt[_bmod(-G, bs, bsh)] > free))
            npf, nd, nbl, alld, full = _select(dl, pl, ql, lp, hide, paged, bs, bsh, G, gb, kv, nbk, pc, pf, b_max, k_it,
                                               mixed, chunked, chunk_long, prefill_first, bpr, bpm, bd, bl, nowalk)
            if nowalk:
                si[I_NOWALK] += 1
            if alld and paged:
                full = cnt[_bmod(-G, bs, bsh)]
            examined += nadm if hide else lp[L_D + 2] + lp[L_P + 2] + lp[L_F + 2] + nlg
            if record:
                demand = _demand(pl, ql, lp, hide, paged, kv, nbk, pc, pf) + (0 if hide else hidden)
            for j in range(nbl):  # blocked: noted; one never served is set aside (the window's parking)
                rid = bl[j]
                if isbl[rid] == 0:
                    isbl[rid] = 1
                    n_blocked += 1
                if fs[rid] != fs[rid]:  # (never served: in ql)
                    _rem(ql, pos_p, lp, L_F, rid)
                    n_parked += 1
                    hidden += pc[rid]
                    if pc[rid] <= never:
                        n_fresh -= 1
            victim = -1
            if not paged:
                room = kv_cap - used - nd
                if room >= 0:
                    reserve = nadm
                    kept, room, dropped_new = token_pass(npf, bpr, bpm, bpr, bpm, pc, pf, kv, room, reserve, chunked)
                    nxt = token_next(dropped_new, hide, kept == 0 and nd == 0, room, reserve, nadm)
                    if nxt == ASK_AGAIN:
                        hide = True
                        continue
                    if nxt == ACCEPT:
                        npf = kept
                        break
            if paged:
                need = full  # a decoder whose blocks are full needs one more
                for j in range(npf):
                    rid = bpr[j]
                    if nbk[rid] >= 0:
                        need += blocks_needed(kv[rid], bpm[j], bs, bsh, nbk[rid])
                if need <= free:
                    for j in range(npf):  # the running requests' blocks first
                        rid = bpr[j]
                        run[j] = 1 if nbk[rid] >= 0 else 0
                        if run[j]:
                            k = blocks_needed(kv[rid], bpm[j], bs, bsh, nbk[rid])
                            if k > 0:
                                nbk[rid] += k
                    free -= need  # (the decoders' blocks are counted in nbk when their token is added)
                    if caching:
                        _alloc(qe, qs, stamp, cup, need)
                    kept = 0
                    stop = False
                    for j in range(npf):  # then new requests, head-of-line, while their reservation fits
                        rid = bpr[j]
                        m = bpm[j]
                        if run[j]:
                            bpr[kept] = rid
                            bpm[kept] = m
                            kept += 1
                            continue
                        if stop:
                            continue
                        hit = 0
                        if caching and cup[rid] > 0:  # its own leading blocks, still cached, come back
                            w = prefix_want(pc[rid], bs, bsh, free)
                            if w == STOP:
                                stop = True
                                continue
                            hit = _reuse(qe, cup, qpos, qn, rid, w)
                            free -= hit
                        m = paged_take(pc[rid], pf[rid], m, hit, bs, whole, free)  # (m up to its remaining prompt)
                        if m == STOP:
                            stop = True
                            continue
                        nbk[rid] = hit
                        if hit:
                            kv[rid] = hit * bs
                            used += hit * bs
                            pf[rid] = hit * bs
                            wasted -= hit * bs
                            work -= hit * bs
                            demand -= hit * bs
                        adm[rid] = admseq
                        if most_recent:
                            if nstk == len(sr) or nstk > 2 * nadm + SLACK:  # keep the entries still admitted
                                si[I_NMOVE] += 1
                                w = 0
                                for i in range(nstk):
                                    q = sr[i]
                                    if nbk[q] >= 0 and adm[q] == sq[i]:
                                        sr[w] = q
                                        sq[w] = sq[i]
                                        w += 1
                                nstk = w
                            sr[nstk] = rid
                            sq[nstk] = admseq
                            nstk += 1
                        admseq += 1
                        nadm += 1
                        k = blocks_needed(kv[rid], m, bs, bsh, nbk[rid])
                        if k > 0:
                            free -= k
                            nbk[rid] += k
                            if caching:
                                _alloc(qe, qs, stamp, cup, k)
                        bpr[kept] = rid
                        bpm[kept] = m
                        kept += 1
                    if paged_retry(stop, kept, nd, hide, nadm):
                        hide = True  # ask again with the admitted requests alone
                        continue
                    npf = kept
                    break
            # the victim: the most recently admitted, or the latest arrival holding KV
            if paged and most_recent and swap:  # (a request swapped back in keeps its admission number)
                top = -1  # (admission numbers are >= 0)
                for i in range(lp[L_D], lp[L_D + 1]):
                    rid = dl[i]
                    if rid >= 0 and victim_key(True, adm[rid], rid) > top:
                        top = victim_key(True, adm[rid], rid)
                        victim = rid
                for i in range(lp[L_P], lp[L_P + 1]):
                    rid = pl[i]
                    if rid >= 0 and nbk[rid] >= 0 and victim_key(True, adm[rid], rid) > top:
                        top = victim_key(True, adm[rid], rid)
                        victim = rid
            elif paged and most_recent:
                # the stack holds the admissions in ascending victim_key(True, ...) (pushed as admitted): its top
                while nstk > 0:  # the latest admission still holding blocks (stale entries on top dropped)
                    rid = sr[nstk - 1]
                    if nbk[rid] >= 0 and adm[rid] == sq[nstk - 1]:
                        victim = rid
                        break
                    nstk -= 1
                if victim >= 0 and st[victim] == 2:
                    # (async) it finished in the batch in flight (in lg): it holds its blocks but is no victim;
                    # the latest admission below it is, and it stays on the stack (stale once let go)
                    victim = -1
                    for i in range(nstk - 2, -1, -1):
                        rid = sr[i]
                        if nbk[rid] >= 0 and adm[rid] == sq[i] and st[rid] != 2:
                            victim = rid
                            break
            else:  # the lists are in ascending key (request id, arrival order): the last decoder, or a later holder
                i = lp[L_D + 1] - 1
                while i >= lp[L_D] and dl[i] < 0:
                    i -= 1
                if i >= lp[L_D]:
                    victim = dl[i]
                for i in range(lp[L_P + 1] - 1, lp[L_P] - 1, -1):
                    rid = pl[i]
                    if (victim_key(False, 0, rid) > victim_key(False, 0, victim) and
                            (nbk[rid] >= 0 if paged else kv[rid] > 0)):
                        victim = rid
                        break
                    if rid >= 0 and victim_key(False, 0, rid) < victim_key(False, 0, victim):
                        break
            if victim < 0:  # (async, token rules: every KV holder finished in the batch in flight)
                npf = 0
                nd = no_victim_decoders(nd, kv_cap - used)
                if alld and nd < lp[L_D + 2]:
                    alld = False
                    full = _fill_bd(dl, lp, bd, nd, paged, bs, bsh, G, gb, kv)
                break
            # preempt the victim: by recomputation its KV is discarded; by swap it moves to the host
            if st[victim] == 1:  # a decoder (its values made actual) leaves the decoders
                cnt[_bmod(kv[victim] - gb[victim], bs, bsh)] -= 1
                dc[victim] += G - gb[victim]
                kv[victim] += G - gb[victim]
                if paged:
                    nbk[victim] = _cdiv(kv[victim], bs, bsh)
                kvdec -= kv[victim]
                sdec -= P[victim] + dc[victim]
                nh = _uncover_next(dl, pos_d, lp, st, gb, D, dc, cv, hf, hr, nh, victim)
                _rem(dl, pos_d, lp, L_D, victim)
                if not swap:
                    _ins(pl, pos_p, lp, L_P, victim)
            elif swap:
                _rem(pl, pos_p, lp, L_P, victim)
            held = kv[victim]
            used -= held
            kv[victim] = 0
            if paged:
                free += nbk[victim]
                if caching:
                    _release(qe, qs, stamp, cup, qpos, qn, victim, nbk[victim])
                nbk[victim] = -1
            nadm -= 1
            preemptions += 1
            npre[victim] += 1
            if swap:
                swap_tokens += held
                shl[victim] = held
                swq[(sh + nsw) % cap_sw] = victim
                nsw += 1
                st[victim] = 3
                extra_s += held * swap_s
            else:
                wasted += held
                pc[victim], rc[victim], again = _recompute(pc[victim], rc[victim], dc[victim], pf[victim])
                work += again
                pf[victim] = 0
                st[victim] = 0
            hide = True  # no new request is admitted in an iteration that preempted (vLLM; both rules)

        x = 0
        for j in range(npf):
            x += bpm[j]
        if not paged and x + nd > kv_cap - used:  # never exceed memory: prefill dropped, the decoders clamped
            npf = 0
            x = 0
            f = decoders_within(nd, kv_cap - used)
            if f < nd:
                nd = f
                if alld:
                    alld = False
                    full = _fill_bd(dl, lp, bd, nd, paged, bs, bsh, G, gb, kv)
        if npf == 0 and nd == 0:
            if async_ and (nlg > 0 or tseen == tseen):  # nothing in flight: every output and arrival is read now
                flush = True
                continue
            if extra_s > 0:  # only swaps: they take their time
                t += extra_s
                busy += extra_s
                continue
            if na >= n:
                break
            t = arr[na] if arr[na] < horizon else horizon
            continue

        # ---- run it ----
        tokens = x + nd
        kvr = 0
        by_kv = ks != 0.0 or compose  # (a composition reads the KV held, as context-aware times do)
        if by_kv or record:  # the decoders' contexts: KV held, or prompt + generated tokens
            if alld:
                kvr = kvdec if by_kv else sdec
            else:
                for j in range(nd):
                    rid = bd[j]
                    kvr += (kv[rid] if by_kv else P[rid] + dc[rid]) + G - gb[rid]
        if compose:  # the prefill chunks with the KV they hold, the decoders' contexts (IterationModel.time)
            tau_j = _chunks_s(ct, bpm, bpr, kv, npf, nd, kvr)
        else:
            tau_j = tau[tokens] + ks * kvr if ks != 0.0 else tau[tokens]
        if record:
            RF[nr, R_T] = t
            RF[nr, R_B] = tau_j + extra_s
            RI[nr, R_X] = x
            RI[nr, R_S] = nd
            RI[nr, R_Q] = npf + nd
            RI[nr, R_D] = demand
            RI[nr, R_K] = kvr
        t0 = t
        t += tau_j
        if extra_s != 0.0:
            t += extra_s
        n_iter += 1
        busy += tau_j + extra_s
        tok_served += tokens
        na, n_sys, work, pt, hidden, rejected, nb = _arrive(  # (async: the next batch is formed while this one runs)
            arr, P, D, t0 if async_ else t, na, n, n_sys, work, pend, pt, hidden, rejected, bt, bn, bw, nb, paged, bs,
            total, kv_cap)
        if async_:
            tseen = t0
        work -= tokens
        if npf and nd:
            mixed_iters += 1
        # the decoders first (a prompt completing below joins them after this iteration): one more round
        nfl = 0  # requests finishing in this iteration, listed in fl
        last = -1 if alld or nd == 0 else bd[nd - 1]  # the youngest decoder served
        w = 0
        for j in range(nfr):  # first tokens (entries of decoders that left are dropped every iteration)
            rid = fr[j]
            if st[rid] != 1 or dc[rid] + G - gb[rid] != 0:
                continue
            if nd and (alld or rid <= last):
                ftk[rid] = t
            else:
                fr[w] = rid
                w += 1
        nfr = w
        if nd:
            if not alld:  # the decoders not served keep their values: their base moves to the next round
                for i in range(lp[L_D], lp[L_D + 1]):
                    rid = dl[i]
                    if rid <= last:
                        continue
                    cnt[_bmod(kv[rid] - gb[rid], bs, bsh)] -= 1
                    dc[rid] += G - gb[rid]
                    kv[rid] += G - gb[rid]
                    gb[rid] = G + 1
                    cnt[_bmod(kv[rid] - gb[rid], bs, bsh)] += 1
                    if cv[rid] == 0:  # (a covered one stays covered: the older decoders are left out too, or served)
                        nh = _hpush(hf, hr, nh, gb[rid] + D[rid] - dc[rid], rid)
            G += 1
            while nh > 0 and hf[0] <= G:  # finishing decoders
                f = hf[0]
                rid = hr[0]
                nh = _hpop(hf, hr, nh)
                if st[rid] != 1 or gb[rid] + D[rid] - dc[rid] != f:
                    continue  # stale: it left, or its finishing round moved
                nh = _uncover_next(dl, pos_d, lp, st, gb, D, dc, cv, hf, hr, nh, rid)
                cnt[_bmod(kv[rid] - gb[rid], bs, bsh)] -= 1
                dc[rid] += G - gb[rid]
                kv[rid] += G - gb[rid]
                gb[rid] = G
                st[rid] = 2
                fin[rid] = t
                fl[nfl] = rid
                nfl += 1
        kvdec += nd
        sdec += nd
        grown = nd
        nfl_dec = nfl  # fl[:nfl_dec] are decoders (in dl), the rest finish with their prefill
        useful = 0
        for j in range(npf):
            rid = bpr[j]
            m = bpm[j]
            if record and paged:  # prompt tokens computed for the first time
                top = pf[rid] + m
                if top > pc[rid] - rc[rid]:
                    top = pc[rid] - rc[rid]
                if top > hwm[rid]:
                    useful += top - hwm[rid]
                    hwm[rid] = top
            first = fs[rid] != fs[rid]
            if first:  # served for the first time: it leaves ql (for pl, or dl below)
                fs[rid] = t0
                n_fresh -= 1
                _rem(ql, pos_p, lp, L_F, rid)
            pf[rid] += m
            if not paged and kv[rid] == 0:
                nadm += 1
            kv[rid] += m
            grown += m
            if pf[rid] < pc[rid]:
                if first:
                    _ins(pl, pos_p, lp, L_P, rid)
            else:
                if not first:
                    _rem(pl, pos_p, lp, L_P, rid)
                if pdn[rid] != pdn[rid]:
                    pdn[rid] = t
                    if emit and dc[rid] == 0:  # the prefill's iteration gives the first token
                        dc[rid] = 1
                        ftk[rid] = t
                        work -= 1
                        useful += 1
                elif emit and 0 < dc[rid] < D[rid]:  # a recomputation caught up: it samples the next token
                    dc[rid] += 1
                    work -= 1
                    useful += 1
                if dc[rid] >= D[rid]:
                    st[rid] = 2
                    fin[rid] = t
                    fl[nfl] = rid
                    nfl += 1
                else:  # a decoder from the next round on (the same steps as a swapped-in decoder's above: an
                    # inlined helper returning (kvdec, sdec, nh, nfr) cost 4-14 % of KV-kernel speed, 2026-12-06)
                    st[rid] = 1
                    _ins(dl, pos_d, lp, L_D, rid)
                    kvdec += kv[rid]
                    sdec += P[rid] + dc[rid]
                    gb[rid] = G
                    cnt[_bmod(kv[rid] - G, bs, bsh)] += 1
                    nh = _join(dl, pos_d, lp, st, gb, D, dc, cv, hf, hr, nh, rid, G + D[rid] - dc[rid], si)
                    if dc[rid] == 0:
                        fr[nfr] = rid
                        nfr += 1
        used += grown
        if used > peak:
            peak = used
        if record:
            RI[nr, R_U] = used
        for j in range(nfl):  # release the finished requests' KV
            rid = fl[j]
            if j < nfl_dec:
                if paged:
                    nbk[rid] = _cdiv(kv[rid], bs, bsh)
                kvdec -= kv[rid]
                sdec -= P[rid] + dc[rid]
                _rem(dl, pos_d, lp, L_D, rid)
        if async_:  # those finished in the batch before go; these hold their slots and KV through the next batch
            used, free, nadm, n_sys = _let_go(lg, nlg, kv, nbk, stamp, cup, qe, qs, qpos, qn, paged, caching, used,
                                              free, nadm, n_sys)
            for j in range(nfl):
                lg[j] = fl[j]
            nlg = nfl
        else:
            used, free, nadm, n_sys = _let_go(fl, nfl, kv, nbk, stamp, cup, qe, qs, qpos, qn, paged, caching, used,
                                              free, nadm, n_sys)
        if record:
            RI[nr, R_RES] = nadm
            RI[nr, R_WAIT] = lp[L_D + 2] + lp[L_P + 2] + lp[L_F + 2] + nlg - nadm + nsw + (pt - ph) + n_parked
            RI[nr, R_USE] = useful + nd
            nr += 1

    si[I_NA] = na
    si[I_NSYS] = n_sys
    si[I_WORK] = work
    si[I_PH] = ph
    si[I_PT] = pt
    si[I_NFRESH] = n_fresh
    si[I_NPARKED] = n_parked
    si[I_HIDDEN] = hidden
    si[I_USED] = used
    si[I_FREE] = free
    si[I_NADM] = nadm
    si[I_ADMSEQ] = admseq
    si[I_NB] = nb
    si[I_NR] = nr
    si[I_NITER] = n_iter
    si[I_MIXED] = mixed_iters
    si[I_TOKS] = tok_served
    si[I_RESUME] = 1 if resume or status == STATUS_PROGRESS else 0
    si[I_PREEMPT] = preemptions
    si[I_WASTED] = wasted
    si[I_REJECTED] = rejected
    si[I_PEAK] = peak
    si[I_NBLOCKED] = n_blocked
    si[I_EXAMINED] = examined
    si[I_KVDEC] = kvdec
    si[I_SDEC] = sdec
    si[I_G] = G
    si[I_NH] = nh
    si[I_NFR] = nfr
    si[I_SWT] = swap_tokens
    si[I_SH] = sh
    si[I_NSW] = nsw
    si[I_NSTK] = nstk
    sf[F_T] = t
    sf[F_BUSY] = busy
    sf[F_TSEEN] = tseen
    si[I_NLG] = nlg
    return status
