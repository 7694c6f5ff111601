"""The inlined parts of the compiled KV kernel's loop (:mod:`fluidq.kernel._kv_loop`): the arrivals into the
waiting FIFO (:func:`_arrive`), the three resident lists in arrival order (:func:`_ins`, :func:`_rem`,
:func:`_compact`), the pool of freed blocks with prefix caching (:func:`_alloc`, :func:`_release`,
:func:`_reuse`) and the finished requests letting go of their KV (:func:`_let_go`), FCFS ``select`` on the
residents in view (:func:`_select`, :func:`_demand`, :func:`_fill_bd`) and the decoders' finishing heap with
its *covered* entries (:func:`_uncover_next`, :func:`_join`).  The slots they index are in
:mod:`fluidq.kernel._kv_layout`; the driver and the overview are :mod:`fluidq.kernel.kv`.
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915, PLR1730, N806
from __future__ import annotations

from ..policies import batch_rule
from ._jit import jit
from ._kv_layout import I_NCOV, L_D, L_F, L_P, LP_MOVES, SLACK
from .fcfs import _budget_split, _decode_after_prefill  # batch_rule's integer core, inlined
from .fcfs import _hpush  # inlined (numba inline="always")
from .kvrules import bmod as _bmod  # the rules kept written once (see kv.py's notes)
from .kvrules import never_fits, pool_alloc, pool_release, pool_reuse

# the per-prompt step of the prefill walk, written once in fluidq/policies/batch_rule.py and inlined (numba's cache
# does not see edits there: clear it, or touch this file, after changing it)
_take_one = jit(batch_rule.take_one, inline="always")


@jit(inline="always", _nrt=False)
def _arrive(arr, P, D, upto, na, n, n_sys, work, pend, pt, hidden, rejected, bt, bn, bw, nb, paged, bs, total,
            kv_cap):
    """Admit the arrivals at times <= ``upto`` into the waiting FIFO (rejecting any that can never fit), with
    a backlog row at each one's own time."""
    while na < n and arr[na] <= upto:
        i = na
        na += 1
        p = P[i]
        d = D[i]
        if never_fits(paged, p, d, bs, total, kv_cap):
            rejected += 1
            continue
        pend[pt] = i
        pt += 1
        hidden += p
        n_sys += 1
        work += p + d
        bt[nb] = arr[i]
        bn[nb] = n_sys
        bw[nb] = work
        nb += 1
    return na, n_sys, work, pt, hidden, rejected, nb


@jit(_nrt=False)
def _compact(lst, pos, lp, b):
    """Drop the removed (-1) entries of the list ``lst[lp[b]:lp[b + 1]]``, moving it to the front."""
    w = 0
    for i in range(lp[b], lp[b + 1]):
        rid = lst[i]
        if rid >= 0:
            lst[w] = rid
            pos[rid] = w
            w += 1
    lp[b] = 0
    lp[b + 1] = w
    lp[LP_MOVES] += 1




@jit(inline="always", _nrt=False)
def _ins(lst, pos, lp, b, rid):
    """Put ``rid`` into the list ``b`` (live entries in ascending request id), usually at its end."""
    if lp[b + 1] == len(lst) or lp[b] > lp[b + 2] + SLACK:  # full, or drifted far from the front: moved there
        _compact(lst, pos, lp, b)
    j = lp[b + 1] - 1
    while j >= lp[b] and lst[j] < 0:
        j -= 1
    if j < lp[b] or lst[j] < rid:  # the newest: appended
        lst[lp[b + 1]] = rid
        pos[rid] = lp[b + 1]
        lp[b + 1] += 1
    else:  # an older request back in this list (after a preemption): the younger entries shift by one
        j = lp[b + 1]
        while j > lp[b] and (lst[j - 1] > rid or lst[j - 1] < 0):
            q = lst[j - 1]
            lst[j] = q
            if q >= 0:
                pos[q] = j
            j -= 1
        lst[j] = rid
        pos[rid] = j
        lp[b + 1] += 1
    lp[b + 2] += 1


@jit(inline="always", _nrt=False)
def _rem(lst, pos, lp, b, rid):
    """Take ``rid`` out of the list ``b`` (its slot is marked -1; leading marks are skipped, many compacted)."""
    lst[pos[rid]] = -1
    lp[b + 2] -= 1
    lo = lp[b]
    hi = lp[b + 1]
    while lo < hi and lst[lo] < 0:
        lo += 1
    lp[b] = lo
    if lo == hi:
        lp[b] = 0
        lp[b + 1] = 0
    elif hi - lo > 2 * lp[b + 2] + 64:
        _compact(lst, pos, lp, b)


# the pool of freed blocks with prefix caching: kvrules' functions on ``qe`` (``qs``: the never-used blocks, the
# queue's head and tail), called from _advance (not inlined there: they run only with prefix caching)
@jit(_nrt=False)
def _alloc(qe, qs, stamp, cup, k):
    """Take ``k`` free blocks (:func:`~fluidq.kernel.kvrules.pool_alloc`)."""
    qs[0], qs[1] = pool_alloc(qe, 0, qs[0], qs[1], k, stamp, cup)


@jit(_nrt=False)
def _release(qe, qs, stamp, cup, qpos, qn, i, nb):
    """Request ``i`` frees its ``nb`` blocks, kept as its cached prefix (:func:`~fluidq.kernel.kvrules.pool_release`;
    :func:`_advance` keeps room in ``qe`` for twice the blocks ever used, so compaction always leaves room)."""
    qs[1], qs[2] = pool_release(qe, 0, qe.shape[0], qs[1], qs[2], stamp, cup, qpos, qn, i, nb)


@jit(_nrt=False)
def _reuse(qe, cup, qpos, qn, i, want):
    """Request ``i`` takes back up to ``want`` leading blocks of its cached prefix
    (:func:`~fluidq.kernel.kvrules.pool_reuse`); returns how many."""
    return pool_reuse(qe, 0, cup, qpos, qn, i, want)


@jit(inline="always", _nrt=False)
def _let_go(lst, k, kv, nbk, stamp, cup, qe, qs, qpos, qn, paged, caching, used, free, nadm, n_sys):
    """The finished requests ``lst[:k]`` leave: their KV is freed (released, then forgotten with prefix caching:
    their blocks are ordinary free ones).  Returns ``used, free, nadm, n_sys``."""
    for j in range(k):
        rid = lst[j]
        used -= kv[rid]
        kv[rid] = 0
        if paged:
            free += nbk[rid]
            if caching:
                _release(qe, qs, stamp, cup, qpos, qn, rid, nbk[rid])
                stamp[rid] = -1
                cup[rid] = 0
            nbk[rid] = -1
        nadm -= 1
        n_sys -= 1
    return used, free, nadm, n_sys





@jit(inline="always", _nrt=False)
def _select(dl, pl, ql, lp, hide, paged, bs, bsh, G, gb, kv, nbk, pc, pf, b_max, k_cap, mixed, chunked, chunk_long,
            prefill_first, bpr, bpm, bd, bl, nowalk):
    """``Scheduler.select`` (FCFS) on the residents in view: all of them, or with ``hide`` the admitted ones.

    The decode part is the first ``min(budget, slots)`` decoders in arrival order (every decoder holds KV, so
    it is in view either way): with ``nd`` equal to all of them (``alld``) they are the list ``dl`` itself,
    else they are written to ``bd`` (with, under paged rules, how many have their blocks full).  The prefill
    chunks are written to ``bpr``/``bpm`` and the never-schedulable prompts to ``bl``, in arrival order; with
    ``nowalk`` there are none (the caller knows the pass preempts whatever they are).
    Returns ``(npf, nd, nbl, alld, full)``.
    """
    npf = 0
    nbl = 0
    ndl = lp[L_D + 2]
    # the budget split (decode first: D0 decode tokens, the rest to prefill; prefill first: D0 = -1); a
    # prefill-first budget does not depend on n_p beyond "prefill takes nothing when no prompt waits"
    D0, budget, slots = _budget_split(prefill_first, mixed, b_max, 1, ndl, k_cap)
    hol = nowalk
    for part in range(2):  # the served prefilling residents, then the never served ones
        if hol or (part == 1 and hide):  # (none of the never served holds KV)
            break
        lst = pl if part == 0 else ql
        b = L_P if part == 0 else L_F
        for i in range(lp[b], lp[b + 1]):
            if budget < 1 or slots < 1:
                break
            rid = lst[i]
            if rid < 0:
                continue
            if hide and not (nbk[rid] >= 0 if paged else kv[rid] > 0):
                continue
            got = _take_one(pc[rid] - pf[rid], budget, b_max, chunked, chunk_long)  # (batch_rule.take_one)
            if got > 0:  # the whole prompt, or a chunk of the budget left
                bpr[npf] = rid
                bpm[npf] = got
                npf += 1
                budget -= got
                slots -= 1
            elif got < 0:
                bl[nbl] = rid  # can never fit: skipped, reported
                nbl += 1
            else:
                hol = True  # head-of-line
                break
    if D0 >= 0:  # decode went first
        take = D0
        ran = True
    else:  # decode takes what prefill left (T tokens, npf slots)
        take = _decode_after_prefill(mixed, ndl, b_max, k_cap, b_max - budget, npf)
        ran = budget >= 1 and slots >= 1 and (mixed or npf == 0)
    nd = take
    full = 0
    alld = ran and take == ndl
    if ran and not alld:
        full = _fill_bd(dl, lp, bd, take, paged, bs, bsh, G, gb, kv)
    return npf, nd, nbl, alld, full


@jit(inline="always", _nrt=False)
def _demand(pl, ql, lp, hide, paged, kv, nbk, pc, pf):
    """``QueueView.demand`` of the residents in view: one token per decoder, the rest of each prompt."""
    s = lp[L_D + 2]
    for i in range(lp[L_P], lp[L_P + 1]):
        rid = pl[i]
        if rid < 0 or (hide and not (nbk[rid] >= 0 if paged else kv[rid] > 0)):
            continue
        s += pc[rid] - pf[rid]
    if not hide:
        for i in range(lp[L_F], lp[L_F + 1]):
            rid = ql[i]
            if rid >= 0:
                s += pc[rid] - pf[rid]
    return s


@jit(inline="always", _nrt=False)
def _fill_bd(dl, lp, bd, nd, paged, bs, bsh, G, gb, kv):
    """Write the first ``nd`` decoders to ``bd``; return how many have their blocks full."""
    full = 0
    i = lp[L_D]
    j = 0
    while j < nd:
        rid = dl[i]
        i += 1
        if rid < 0:
            continue
        bd[j] = rid
        j += 1
        if paged and _bmod(kv[rid] + G - gb[rid], bs, bsh) == 0:
            full += 1
    return full


@jit(inline="always", _nrt=False)
def _uncover_next(dl, pos_d, lp, st, gb, D, dc, cv, hf, hr, nh, rid):
    """``rid`` leaves the decoders (finishes, or is preempted): the next younger decoder, if ``rid`` covered it,
    gets its heap entry.  Returns the heap's size."""
    hi = lp[L_D + 1]
    j = pos_d[rid] + 1
    while j < hi and dl[j] < 0:
        j += 1
    if j < hi:
        q = dl[j]
        if cv[q] != 0 and st[q] == 1:
            cv[q] = 0
            nh = _hpush(hf, hr, nh, gb[q] + D[q] - dc[q], q)
    return nh


@jit(inline="always", _nrt=False)
def _join(dl, pos_d, lp, st, gb, D, dc, cv, hf, hr, nh, rid, f, si):
    """``rid``, just put into ``dl`` with finishing round ``f``, gets a heap entry unless the next older live
    decoder finishes no later (then ``rid`` is *covered*: ``cv`` 1); if it came back between decoders, the next
    younger one, if covered, gets its entry (its cover is no longer next to it).  Returns the heap's size."""
    nh = _uncover_next(dl, pos_d, lp, st, gb, D, dc, cv, hf, hr, nh, rid)
    lo = lp[L_D]
    j = pos_d[rid] - 1
    while j >= lo and (dl[j] < 0 or st[dl[j]] != 1):  # (one that finished this iteration is skipped)
        j -= 1
    if j >= lo and gb[dl[j]] + D[dl[j]] - dc[dl[j]] <= f:
        cv[rid] = 1
        si[I_NCOV] += 1
    else:
        cv[rid] = 0
        nh = _hpush(hf, hr, nh, f, rid)
    return nh
