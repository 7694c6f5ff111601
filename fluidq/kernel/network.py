"""The network event loop, in array style: every station of a network on one event clock, compiled by numba
(or run as the same Python under ``NUMBA_DISABLE_JIT=1``).

It is :func:`fluidq.simulate_network`'s ``method="auto"`` path (the Python event-skipping path of
:mod:`fluidq.sim.network`, rule for rule) for the common case:

* every station runs a built-in scheduler in FCFS order with a token budget ``budget``, a batch time of
  the batch's tokens alone (a table ``tau[station, tokens]``) and no KV memory: a decode-first chunked
  scheduler with mixed batches (Sarathi-Serve, vLLM with chunked prefill) without a ``k_max`` below its
  budget in runs of identical batches (below), any other (Orca, vLLM, FasterTransformer, a binding
  ``k_max``, ``chunk_long_prompts``) batch by batch, :meth:`~fluidq.policies.Scheduler.select`'s rule
  over the requests the Python path's view shows (``_take_prefill``; blocked prompts are reported);
* class priorities at stations (a rank per hop and station; FCFS within a rank);
* classes whose routes are sequences of hops; a hop goes to a station or to a router: random (uniforms
  drawn by the caller, used in order), join-the-shortest-queue by requests or by remaining tokens (ties to
  the engine listed first);
* fixed or random prompt and output tokens: a random length's draws come ``LBN`` at a time from the
  caller, when the kernel asks (:func:`simulate` returns 1 and resumes where it stopped), in the order the
  Python path draws them (so random lengths cannot be mixed with random routers' draws).

Fork-join, probabilistic choices, random lengths with a random router, KV memory, context-aware batch
times, orderings other than FCFS and user policies stay on the Python path (:mod:`fluidq.sim.network`
decides).

The model (as the Python path): a station runs *runs* of identical batches -- every decoding request gets
one token per batch (a virtual decode clock ``G``, rounds served so far, and a heap of finishing rounds
``(F, rid)``), the prefilling requests the same chunks, whole prompts in priority/FCFS order and the last
maybe a chunk -- until a decoder finishes, a prompt completes, or an arrival cuts the run at the batch in
progress.  A run admits at most ``budget - decoders`` prompts, each taking at least a token, so a station
never holds more decoders than its budget (the Python path's fall-back to ``select(view)`` for that case
never runs for these schedulers, and has no counterpart here).  Events are ordered by (time, start of the
last batch, station, sequence number); external arrivals come first at equal times.  The event heap holds
one event per busy station (the end of its run; ``S_EVPOS`` is its place): a run cut short moves its
event earlier in place, with a new sequence number (the Python path pushes a new event and skips the
stale one, which counts as no event).  A run is timed (one addition per batch, the Python path's times)
only up to the next external arrival, which may cut it; until every batch is timed its event's key is a
lower bound, and an event that comes first with such a key is timed further instead of processed.

State: flat integer/float arrays (see the column constants); request hops are ``rid`` 1, 2, ... in
the order they arrive at a station, with a doubly linked prefill queue per station and rank.
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915, PLR1730, PLR2004, N806
from __future__ import annotations

import numpy as np

from . import _jit


def _kernel(fn=None, **options):
    """numba's ``njit`` as :func:`fluidq.kernel._jit.jit` applies it (cached, GIL released; uncompiled,
    ``fn`` itself), without numba's reference counting (``_nrt=False``: these functions allocate nothing,
    and the counting of some thirty array arguments through every inlined helper cost two thirds of the
    loop's time), with ``options`` (``inline="always"`` for the helpers, so that a call passes no arrays)."""
    return _jit.jit(fn, _nrt=False, **options)


_inline = _kernel(inline="always")

__all__ = ["initial", "run_network", "simulate"]

INF = np.inf

# hop (int, one row per hop): router or station, target, prompt, output, next hop (-1: the request
# leaves), class, the random prompt's and output's length source (-1: fixed); then the rank at each
# station (H_RANK0 + s) and the buffer label (H_RANK0 + n_st + s)
H_ROUTER, H_TGT, H_P, H_D, H_NEXT, H_CLS, H_PSRC, H_DSRC, H_RANK0 = range(9)
#: draws per refill of a random length's buffer (as the Python path's ``sample_len``); ``lb[src]`` holds the
#: draws not used yet from place ``lb[src, LB_POS]`` to ``lb[src, LB_END]`` (room for ``2 * LBN``)
LBN = 256
LB_POS, LB_END = 2 * LBN, 2 * LBN + 1
# rt (int, one row per router): kind (0 random, 1 JSQ by requests, 2 JSQ by tokens), engines, engine ids
R_KIND, R_N, R_ENG0 = range(3)
# st (int, one row per station)
(S_BUDGET, S_NRANK, S_BUSY, S_ROUTING, S_G, S_NDEC, S_WORK, S_NT, S_RUN, S_RK, S_RD, S_RBTOK, S_NALLOC,
 S_NH, S_EVPOS, S_JC, S_GEN, S_KMAX, S_MIXED, S_CHUNKED, S_CHL, S_PF, S_VB, S_LIM) = range(24)
N_S = 24
#: the station options :func:`run_network` takes per station, in this order (S_GEN: batch by batch)
S_OPTIONS = (S_GEN, S_KMAX, S_MIXED, S_CHUNKED, S_CHL, S_PF, S_VB, S_LIM)
# stf (float, one row per station): the current run's start and batch time; the end and start of its batch
# S_JC (the run's batches timed so far)
R_T0, R_TAU, R_TC, R_TL = range(4)
# ti (int, one row per hop of a request)
T_ST, T_P, T_D, T_PREF, T_RANK, T_LAB, T_HOP, T_CLS, T_NXT, T_PRV, T_DEC = range(11)
N_T = 11
# tf (float): arrival in the network, arrival at the station
TF_JIN, TF_ARR = range(2)
# qh[s, rank, :]: the prefill queue's head and tail, the decode queue's (batch-by-batch stations) (0: empty)
Q_PH, Q_PT, Q_DH, Q_DT = range(4)
# g (int): batches, events, event sequence, next rid, labels seen, uniforms used, arriving, current event's
# station, next external arrival, next grid point, hops recorded, event heap size, record hops, max batches
# (-1: none); the length source to refill, and where to resume (phase: 1 a batch's end, 2 a run's end,
# moving hops on; its station, the next of its finished hops, how many)
(G_NB, G_EV, G_SEQ, G_RID, G_SEEN, G_U, G_ARRIVING, G_CURIDX, G_AI, G_GI, G_NHOP, G_NEV, G_RECHOPS,
 G_MAXB, G_NEED, G_PHASE, G_RS, G_RI, G_RND) = range(19)
N_G = 19
# gf (float): current event's batch start, next grid point, horizon, next external arrival, resume time
GF_CURSTART, GF_NEXTREC, GF_HORIZON, GF_TA, GF_RT = range(5)
N_GF = 5


@_inline
def _evless(evf, evi, a, b):
    """Event ``a`` before event ``b``: (time, batch start, station, sequence number)."""
    if evf[a, 0] != evf[b, 0]:
        return evf[a, 0] < evf[b, 0]
    if evf[a, 1] != evf[b, 1]:
        return evf[a, 1] < evf[b, 1]
    if evi[a, 0] != evi[b, 0]:
        return evi[a, 0] < evi[b, 0]
    return evi[a, 1] < evi[b, 1]


@_inline
def _evswap(evf, evi, st, a, b):
    for c in range(2):
        x = evf[a, c]
        evf[a, c] = evf[b, c]
        evf[b, c] = x
    for c in range(2):
        y = evi[a, c]
        evi[a, c] = evi[b, c]
        evi[b, c] = y
    st[evi[a, 0], S_EVPOS] = a
    st[evi[b, 0], S_EVPOS] = b


@_inline
def _evsiftup(evf, evi, st, i):
    while i > 0:
        p = (i - 1) >> 1
        if not _evless(evf, evi, i, p):
            break
        _evswap(evf, evi, st, i, p)
        i = p


@_inline
def _evpush(evf, evi, st, g, t, start, s):
    """Schedule the end of station ``s``'s run (its sequence number is the next one)."""
    i = g[G_NEV]
    g[G_NEV] = i + 1
    evf[i, 0] = t
    evf[i, 1] = start
    evi[i, 0] = s
    evi[i, 1] = g[G_SEQ]
    g[G_SEQ] += 1
    st[s, S_EVPOS] = i
    _evsiftup(evf, evi, st, i)


@_inline
def _evsiftdown(evf, evi, st, n, i):
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _evless(evf, evi, c + 1, c):
            c += 1
        if not _evless(evf, evi, c, i):
            break
        _evswap(evf, evi, st, i, c)
        i = c


@_inline
def _evkey(evf, evi, st, stf, g, s, seq):
    """Give station ``s``'s event the end of its run timed so far (``R_TC``, ``R_TL``) and ``seq``."""
    i = st[s, S_EVPOS]
    evf[i, 0] = stf[s, R_TC]
    evf[i, 1] = stf[s, R_TL]
    evi[i, 1] = seq
    _evsiftup(evf, evi, st, i)
    _evsiftdown(evf, evi, st, g[G_NEV], st[s, S_EVPOS])


@_inline
def _time_run(s, limit, st, stf, horizon):
    """Time station ``s``'s run batch by batch (one addition per batch: the times of batch-by-batch
    simulation) until a batch ends at or after ``limit`` (the next external arrival, which may cut the
    run) or the run's last batch; a batch ending at or after the horizon is the run's last (none starts
    after it).  The run's event key is exact once every batch is timed, a lower bound before."""
    k = st[s, S_RK]
    jc = st[s, S_JC]
    tc = stf[s, R_TC]
    tl = stf[s, R_TL]
    tv = stf[s, R_TAU]
    while jc < k:
        tl = tc
        tc += tv
        jc += 1
        if tc >= horizon:
            k = jc
            break
        if tc >= limit:
            break
    st[s, S_RK] = k
    st[s, S_JC] = jc
    stf[s, R_TC] = tc
    stf[s, R_TL] = tl


@_inline
def _evpop(evf, evi, st, g):
    """Drop the first event."""
    st[evi[0, 0], S_EVPOS] = -1
    n = g[G_NEV] - 1
    g[G_NEV] = n
    if n > 0:
        _evswap(evf, evi, st, 0, n)
        _evsiftdown(evf, evi, st, n, 0)


@_inline
def _fless(fF, fR, s, a, b):
    return fF[s, a] < fF[s, b] or (fF[s, a] == fF[s, b] and fR[s, a] < fR[s, b])


@_inline
def _fswap(fF, fR, s, a, b):
    x = fF[s, a]
    fF[s, a] = fF[s, b]
    fF[s, b] = x
    x = fR[s, a]
    fR[s, a] = fR[s, b]
    fR[s, b] = x


@_inline
def _fpush(fF, fR, s, n, f, r):
    """Push (finishing round, rid) onto station ``s``'s heap of ``n`` entries; return the new size."""
    i = n
    fF[s, i] = f
    fR[s, i] = r
    while i > 0:
        p = (i - 1) >> 1
        if not _fless(fF, fR, s, i, p):
            break
        _fswap(fF, fR, s, i, p)
        i = p
    return n + 1


@_inline
def _fpop(fF, fR, s, n):
    """Drop the top of station ``s``'s heap of ``n`` entries; return the new size."""
    n -= 1
    if n == 0:
        return 0
    _fswap(fF, fR, s, 0, n)
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _fless(fF, fR, s, c + 1, c):
            c += 1
        if not _fless(fF, fR, s, c, i):
            break
        _fswap(fF, fR, s, i, c)
        i = c
    return n


@_inline
def _qappend(qh, ti, s, r, head, rid):
    """Append ``rid`` to station ``s``'s queue (``head``: Q_PH or Q_DH) of rank ``r``."""
    tail = qh[s, r, head + 1]
    ti[rid, T_PRV] = tail
    ti[rid, T_NXT] = 0
    if tail:
        ti[tail, T_NXT] = rid
    else:
        qh[s, r, head] = rid
    qh[s, r, head + 1] = rid


@_inline
def _qremove(qh, ti, s, r, head, rid):
    p = ti[rid, T_PRV]
    n = ti[rid, T_NXT]
    if p:
        ti[p, T_NXT] = n
    else:
        qh[s, r, head] = n
    if n:
        ti[n, T_PRV] = p
    else:
        qh[s, r, head + 1] = p


@_inline
def _current_work(s, now, st, stf, g, gf):
    """Remaining tokens at station ``s`` at ``now``: the batches of its run that ended before the current
    event count as done (one ending exactly at ``now`` does when its key is below the current event's)."""
    if st[s, S_RUN] == 0:
        return st[s, S_WORK]
    tau = stf[s, R_TAU]
    k = st[s, S_RK]
    t = stf[s, R_T0]
    arriving = g[G_ARRIVING] != 0
    cs = gf[GF_CURSTART]
    ci = g[G_CURIDX]
    j = 0
    while j < k:
        start = t
        t += tau
        if t > now or (t == now and (arriving or start > cs or (start == cs and s > ci))):
            break
        j += 1
    return st[s, S_WORK] - j * st[s, S_RBTOK]


@_inline
def _cut_run(s, now, st, stf, evf, evi, g, gf):
    """Cut station ``s``'s run at the batch in progress at ``now`` (its event moves earlier)."""
    tau = stf[s, R_TAU]
    k = st[s, S_RK]
    t = stf[s, R_T0]
    arriving = g[G_ARRIVING] != 0
    cs = gf[GF_CURSTART]
    ci = g[G_CURIDX]
    i = 0
    start = t
    while i < k:
        start = t
        t += tau
        i += 1
        if t > now or (t == now and (arriving or start > cs or (start == cs and s > ci))):
            break
    if i < k:  # (the batch in progress was timed: the event's time is at or after now)
        st[s, S_RK] = i
        st[s, S_JC] = i
        stf[s, R_TC] = t
        stf[s, R_TL] = start
        _evkey(evf, evi, st, stf, g, s, g[G_SEQ])
        g[G_SEQ] += 1


@_inline
def _run_start(s, now, tau, st, stf, ti, qh, fF, fR, al_t, al_k, evf, evi, g, gf):
    """Start station ``s``'s next run of identical batches (at most ``budget`` decoders), or leave it idle."""
    horizon = gf[GF_HORIZON]
    if now >= horizon:  # no batch starts at or after the horizon
        st[s, S_BUSY] = 0
        return
    G = st[s, S_G]
    nrank = st[s, S_NRANK]
    d = st[s, S_NDEC]
    rem = st[s, S_BUDGET] - d
    btok = d
    na = 0
    if rem > 0:  # whole prompts in priority/FCFS order, the last maybe a chunk
        for r in range(nrank):
            rid = qh[s, r, Q_PH]
            while rid:
                need = ti[rid, T_P] - ti[rid, T_PREF]
                al_t[s, na] = rid
                na += 1
                if need < rem:
                    al_k[s, na - 1] = need
                    btok += need
                    rem -= need
                else:
                    al_k[s, na - 1] = rem
                    btok += rem
                    rem = 0
                    break
                rid = ti[rid, T_NXT]
            if rem == 0:
                break
    st[s, S_NALLOC] = na
    if d:  # until the next decode completion; with prefill one batch, unless the head prompt alone is chunked
        k = fF[s, 0] - G
        if na:
            if na == 1:
                rid = al_t[s, 0]
                kp = (ti[rid, T_P] - ti[rid, T_PREF]) // al_k[s, 0]
                if kp < k:
                    k = kp
            else:
                k = 1
    elif na:
        if na == 1:
            rid = al_t[s, 0]
            k = (ti[rid, T_P] - ti[rid, T_PREF]) // al_k[s, 0]
        else:
            k = 1
    else:
        st[s, S_BUSY] = 0
        return
    tv = tau[s, btok]
    if k > 2 and tv > 0:  # batches that would start after the horizon are never seen
        x = (horizon - now) / tv
        if x < 4.0e18:
            kk = int(x) + 2
            if kk < k:
                k = kk
    st[s, S_RUN] = 1
    stf[s, R_T0] = now
    stf[s, R_TAU] = tv
    st[s, S_RK] = k
    st[s, S_RD] = d
    st[s, S_RBTOK] = btok
    st[s, S_BUSY] = 1
    st[s, S_JC] = 0
    stf[s, R_TC] = now
    stf[s, R_TL] = now
    _time_run(s, gf[GF_TA], st, stf, horizon)
    _evpush(evf, evi, st, g, stf[s, R_TC], stf[s, R_TL], s)


@_kernel
def _take_decode(s, budget, slots, st, ti, qh, fR):
    """A batch-by-batch station's decoders, in priority order then the order their prefills ended, while
    the budget and the slots last (into ``fR[s]``); return (budget, slots, decoders)."""
    n = 0
    for r in range(st[s, S_NRANK]):
        rid = qh[s, r, Q_DH]
        while rid:
            if budget < 1 or slots < 1:
                return budget, slots, n
            fR[s, n] = rid
            n += 1
            budget -= 1
            slots -= 1
            rid = ti[rid, T_NXT]
    return budget, slots, n


@_kernel
def _take_prefill(s, budget, slots, st, ti, qh, al_t, al_k, blk):
    """A batch-by-batch station's prefill part (``Scheduler.select``'s rule: whole prompts, a chunk where
    the scheduler chunks, a prompt above the budget blocked where it does not, else head-of-line) over the
    prompts the Python path's view holds (in priority order then arrival at the station, up to the
    ``b_max`` tokens and ``min(b_max, k_max) + 8`` prompts it shows); return (budget, slots, prompts)."""
    b = st[s, S_BUDGET]
    vb = st[s, S_VB]
    lim8 = st[s, S_LIM] + 8
    chunked = st[s, S_CHUNKED] != 0
    chl = st[s, S_CHL] != 0
    shows = chunked or chl
    wcum = 0
    wn = 0
    n = 0
    for r in range(st[s, S_NRANK]):
        rid = qh[s, r, Q_PH]
        while rid:
            if (wcum >= vb and wn >= 1) or wn >= lim8 or budget < 1 or slots < 1:
                return budget, slots, n
            need = ti[rid, T_P] - ti[rid, T_PREF]
            if need <= budget:
                al_t[s, n] = rid
                al_k[s, n] = need
                n += 1
                budget -= need
                slots -= 1
            elif chunked or (chl and need > b):
                al_t[s, n] = rid
                al_k[s, n] = budget
                n += 1
                budget = 0
                slots -= 1
            elif need > b:
                blk[s, ti[rid, T_LAB]] = 1  # can never fit: skipped, reported
            else:
                return budget, slots, n  # head-of-line: wait for a batch with room
            wn += 1
            if need <= vb or shows:
                wcum += need if need < vb else vb
            rid = ti[rid, T_NXT]
    return budget, slots, n


@_kernel
def _batch_start(s, now, tau, st, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk):
    """Start one batch of a batch-by-batch station (prefill part in ``al_t``/``al_k``, decoders in
    ``fR[s]``: this station has no runs and no decode heap), or leave it idle."""
    if now >= gf[GF_HORIZON]:
        st[s, S_BUSY] = 0
        return
    budget = st[s, S_BUDGET]
    slots = st[s, S_KMAX]
    npf = 0
    ndd = 0
    if st[s, S_MIXED]:
        if st[s, S_PF]:
            budget, slots, npf = _take_prefill(s, budget, slots, st, ti, qh, al_t, al_k, blk)
            budget, slots, ndd = _take_decode(s, budget, slots, st, ti, qh, fR)
        else:
            budget, slots, ndd = _take_decode(s, budget, slots, st, ti, qh, fR)
            budget, slots, npf = _take_prefill(s, budget, slots, st, ti, qh, al_t, al_k, blk)
    elif st[s, S_PF]:
        budget, slots, npf = _take_prefill(s, budget, slots, st, ti, qh, al_t, al_k, blk)
        if npf == 0:
            budget, slots, ndd = _take_decode(s, budget, slots, st, ti, qh, fR)
    elif st[s, S_NDEC] > 0:
        budget, slots, ndd = _take_decode(s, budget, slots, st, ti, qh, fR)
    else:
        budget, slots, npf = _take_prefill(s, budget, slots, st, ti, qh, al_t, al_k, blk)
    if npf == 0 and ndd == 0:
        st[s, S_BUSY] = 0
        return
    st[s, S_NALLOC] = npf
    st[s, S_NH] = ndd
    st[s, S_BUSY] = 1
    _evpush(evf, evi, st, g, now + tau[s, st[s, S_BUDGET] - budget], now, s)


@_inline
def _refill(h, hop, lb):
    """The length source whose buffer runs out if hop ``h`` is submitted now (the caller appends the next
    ``LBN`` draws, after the one left if the prompt takes it, and calls again), or -1."""
    ps = hop[h, H_PSRC]
    ds = hop[h, H_DSRC]
    if ps >= 0 and lb[ps, LB_END] - lb[ps, LB_POS] < 1:
        return ps
    if ds >= 0 and lb[ds, LB_END] - lb[ds, LB_POS] < (2 if ds == ps else 1):
        return ds
    return -1


@_inline
def _submit(h, ci, jin, now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf,
            buf, seen, u, blk, lb):
    """A request of class ``ci`` (in the network since ``jin``) arrives for hop ``h`` at ``now``."""
    n_st = st.shape[0]
    if hop[h, H_ROUTER]:
        r = hop[h, H_TGT]
        ne = rt[r, R_N]
        kind = rt[r, R_KIND]
        if kind == 0:
            x = u[g[G_U]]
            g[G_U] += 1
            acc = 0.0
            s = rt[r, R_ENG0 + ne - 1]
            for j in range(ne):
                acc += rp[r, j]
                if x < acc:
                    s = rt[r, R_ENG0 + j]
                    break
        else:
            s = -1
            key = 0
            for j in range(ne):
                e = rt[r, R_ENG0 + j]
                kk = st[e, S_NT] if kind == 1 else _current_work(e, now, st, stf, g, gf)
                if s < 0 or kk < key:
                    s = e
                    key = kk
    else:
        s = hop[h, H_TGT]
    lab = hop[h, H_RANK0 + n_st + s]
    if seen[lab] == 0:
        g[G_SEEN] += 1
        seen[lab] = g[G_SEEN]
    rid = g[G_RID]
    g[G_RID] = rid + 1
    p = hop[h, H_P]
    ps = hop[h, H_PSRC]
    if ps >= 0:
        p = lb[ps, lb[ps, LB_POS]]
        lb[ps, LB_POS] += 1
    d = hop[h, H_D]
    ds = hop[h, H_DSRC]
    if ds >= 0:
        d = lb[ds, lb[ds, LB_POS]]
        lb[ds, LB_POS] += 1
    rank = hop[h, H_RANK0 + s]
    ti[rid, T_ST] = s
    ti[rid, T_P] = p
    ti[rid, T_D] = d
    ti[rid, T_PREF] = 0
    ti[rid, T_DEC] = 0
    ti[rid, T_RANK] = rank
    ti[rid, T_LAB] = lab
    ti[rid, T_HOP] = h
    ti[rid, T_CLS] = ci
    tf[rid, TF_JIN] = jin
    tf[rid, TF_ARR] = now
    st[s, S_NT] += 1
    st[s, S_WORK] += p + d
    _qappend(qh, ti, s, rank, Q_PH, rid)
    buf[lab] += p + d
    if st[s, S_ROUTING]:
        return  # the station starts its next batch once every finished request has moved on
    if st[s, S_BUSY] == 0:
        if st[s, S_GEN]:
            _batch_start(s, now, tau, st, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk)
        else:
            _run_start(s, now, tau, st, stf, ti, qh, fF, fR, al_t, al_k, evf, evi, g, gf)
    elif st[s, S_RUN] != 0 and st[s, S_RK] > 1:
        _cut_run(s, now, st, stf, evf, evi, g, gf)


def _move_on_py(s, nd, now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
             seen, u, blk, lb, cls_i, soj, done, hrec):
    """Send the hops ``done[i0:nd]`` that finished at station ``s`` along their routes or out (``g[G_RI]``:
    ``i0`` when resuming, -1 the first time: the hops are recorded, from 0); return ``nd``, or the index of the
    hop whose next hop needs a length buffer refilled (``G_NEED``)."""
    i0 = g[G_RI]
    st[s, S_BUSY] = 0
    st[s, S_ROUTING] = 1
    if i0 < 0 and g[G_RECHOPS]:
        n = g[G_NHOP]
        for i in range(nd):
            hrec[n, 0] = s
            hrec[n, 1] = tf[done[i], TF_ARR]
            hrec[n, 2] = now
            n += 1
        g[G_NHOP] = n
    i = i0 if i0 > 0 else 0
    while i < nd:
        rid = done[i]
        ci = ti[rid, T_CLS]
        nx = hop[ti[rid, T_HOP], H_NEXT]
        if nx < 0:
            cls_i[ci, 0] -= 1
            cls_i[ci, 1] += 1
            soj[ci] += now - tf[rid, TF_JIN]
        else:
            need = _refill(nx, hop, lb)
            if need >= 0:
                g[G_NEED] = need
                break
            _submit(nx, ci, tf[rid, TF_JIN], now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k,
                    evf, evi, g, gf, buf, seen, u, blk, lb)
        i += 1
    if i == nd:
        st[s, S_ROUTING] = 0
    return i




_move_on = _kernel(_move_on_py)  # (called; inlined where it is hot: the end of a run)
_move_on_inline = _inline(_move_on_py)

@_kernel
def _record(t, grid, rin, rbuf, rwk, rnt, st, stf, ti, stl, al_t, al_k, dlab, g, gf, cls_i, buf):
    """The grid points up to ``t``: requests per class, tokens per label and station, residents per station
    (batches of a run in progress that ended before a point count as served)."""
    gi = g[G_GI]
    ng = grid.shape[0]
    n_st = st.shape[0]
    while gi < ng and grid[gi] <= t:
        at = grid[gi]
        for c in range(cls_i.shape[0]):
            rin[gi, c] = cls_i[c, 0]
        for lab in range(buf.shape[0]):
            rbuf[gi, lab] = buf[lab]
        for s in range(n_st):
            w = st[s, S_WORK]
            rnt[gi, s] = st[s, S_NT]
            if st[s, S_RUN] != 0 and stf[s, R_T0] + stf[s, R_TAU] < at:
                tt = stf[s, R_T0]
                tv = stf[s, R_TAU]
                k = st[s, S_RK]
                j = 0
                while j < k:
                    tt += tv
                    if tt >= at:
                        break
                    j += 1
                if j:
                    if st[s, S_RD]:
                        for m in range(stl[s, 0]):
                            lab = stl[s, 1 + m]
                            cnt = dlab[s, lab]
                            if cnt:
                                rbuf[gi, lab] -= j * cnt
                                w -= j * cnt
                    for a in range(st[s, S_NALLOC]):
                        served = j * al_k[s, a]
                        rbuf[gi, ti[al_t[s, a], T_LAB]] -= served
                        w -= served
            rwk[gi, s] = w
        gi += 1
    g[G_GI] = gi
    gf[GF_NEXTREC] = grid[gi] if gi < ng else INF


@_kernel
def initial(i0, ihop, icls, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
            seen, u, blk, lb, cls_i):
    """The requests waiting at time 0: hop ``ihop[i]`` of class ``icls[i]``, in order, from ``i0``; return
    the number placed (less than all when a length buffer needs a refill: ``G_NEED``)."""
    i = i0
    while i < ihop.shape[0]:
        need = _refill(ihop[i], hop, lb)
        if need >= 0:
            g[G_NEED] = need
            break
        cls_i[icls[i], 0] += 1
        _submit(ihop[i], icls[i], 0.0, 0.0, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf,
                evi, g, gf, buf, seen, u, blk, lb)
        i += 1
    return i


@_kernel
def simulate(ext_t, ext_c, cls_first, hop, rt, rp, stl, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, dlab,
             evf, evi, g, gf, cls_i, soj, buf, seen, u, blk, lb, done, hrec, grid, rin, rbuf, rwk,
             rnt):
    """Run the event loop to the end (the horizon, or ``max_batches``: return 0), or until a random length's
    buffer needs the next draws (return 1: the caller refills source ``G_NEED`` and calls again; the loop
    resumes where it stopped)."""
    horizon = gf[GF_HORIZON]
    while True:
        if g[G_PHASE]:  # resume moving a station's finished hops on, then start its next batch or run
            s = g[G_RS]
            t = gf[GF_RT]
            nd = g[G_RND]
            i = _move_on(s, nd, t, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g,
                         gf, buf, seen, u, blk, lb, cls_i, soj, done, hrec)
            if i < nd:
                g[G_RI] = i
                return 1
            if g[G_PHASE] == 1:
                if st[s, S_BUSY] == 0:
                    _batch_start(s, t, tau, st, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk)
            else:
                _run_start(s, t, tau, st, stf, ti, qh, fF, fR, al_t, al_k, evf, evi, g, gf)
            g[G_PHASE] = 0
            if g[G_MAXB] >= 0 and g[G_NB] >= g[G_MAXB]:
                break
            continue
        te = evf[0, 0] if g[G_NEV] > 0 else INF
        ai = g[G_AI]
        ta = ext_t[ai]
        if ta <= te and ta <= horizon:  # an external arrival (first at equal times)
            ci = ext_c[ai]
            need = _refill(cls_first[ci], hop, lb)
            if need >= 0:
                g[G_NEED] = need
                return 1
            g[G_AI] = ai + 1
            gf[GF_TA] = ext_t[ai + 1]
            if ta >= gf[GF_NEXTREC]:
                _record(ta, grid, rin, rbuf, rwk, rnt, st, stf, ti, stl, al_t, al_k, dlab, g, gf, cls_i, buf)
            g[G_EV] += 1
            cls_i[ci, 0] += 1
            g[G_ARRIVING] = 1
            _submit(cls_first[ci], ci, ta, ta, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf,
                    evi, g, gf, buf, seen, u, blk, lb)
            g[G_ARRIVING] = 0
            continue
        if g[G_NEV] == 0:  # (batches in progress at the horizon are completed; none starts after it)
            break
        s = evi[0, 0]
        if st[s, S_JC] < st[s, S_RK]:  # a run timed only in part: time more of it, the event moves later
            _time_run(s, ta, st, stf, horizon)
            _evkey(evf, evi, st, stf, g, s, evi[0, 1])
            continue
        t = te
        gf[GF_CURSTART] = evf[0, 1]
        g[G_CURIDX] = s
        _evpop(evf, evi, st, g)
        if t >= gf[GF_NEXTREC]:
            _record(t, grid, rin, rbuf, rwk, rnt, st, stf, ti, stl, al_t, al_k, dlab, g, gf, cls_i, buf)
        g[G_EV] += 1
        nd = 0
        if st[s, S_GEN]:  # one batch of a batch-by-batch station ends
            g[G_NB] += 1
            npf = st[s, S_NALLOC]
            ndd = st[s, S_NH]
            tokens = ndd
            for a in range(npf):
                rid = al_t[s, a]
                m = al_k[s, a]
                ti[rid, T_PREF] += m
                buf[ti[rid, T_LAB]] -= m
                tokens += m
            for a in range(ndd):
                rid = fR[s, a]
                ti[rid, T_DEC] += 1
                buf[ti[rid, T_LAB]] -= 1
                if ti[rid, T_DEC] >= ti[rid, T_D]:
                    _qremove(qh, ti, s, ti[rid, T_RANK], Q_DH, rid)
                    st[s, S_NDEC] -= 1
                    done[nd] = rid
                    nd += 1
            st[s, S_WORK] -= tokens
            for a in range(npf):  # completed prompts start decoding (or leave)
                rid = al_t[s, a]
                if ti[rid, T_PREF] >= ti[rid, T_P]:
                    _qremove(qh, ti, s, ti[rid, T_RANK], Q_PH, rid)
                    if ti[rid, T_DEC] < ti[rid, T_D]:
                        _qappend(qh, ti, s, ti[rid, T_RANK], Q_DH, rid)
                        st[s, S_NDEC] += 1
                    else:
                        done[nd] = rid
                        nd += 1
            st[s, S_NT] -= nd
            g[G_RI] = -1
            i = _move_on(s, nd, t, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
                         seen, u, blk, lb, cls_i, soj, done, hrec)
            if i < nd:
                g[G_PHASE] = 1
                g[G_RS] = s
                g[G_RI] = i
                g[G_RND] = nd
                gf[GF_RT] = t
                return 1
            if st[s, S_BUSY] == 0:
                _batch_start(s, t, tau, st, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk)
            if g[G_MAXB] >= 0 and g[G_NB] >= g[G_MAXB]:
                break
            continue
        k = st[s, S_RK]
        st[s, S_RUN] = 0
        g[G_NB] += k
        G = st[s, S_G]
        if st[s, S_RD]:
            G += k
            st[s, S_G] = G
            for m in range(stl[s, 0]):
                lab = stl[s, 1 + m]
                cnt = dlab[s, lab]
                if cnt:
                    buf[lab] -= k * cnt
        st[s, S_WORK] -= k * st[s, S_RBTOK]
        na = st[s, S_NALLOC]
        for a in range(na):
            rid = al_t[s, a]
            take = k * al_k[s, a]
            ti[rid, T_PREF] += take
            buf[ti[rid, T_LAB]] -= take
        nh = st[s, S_NH]
        while nh > 0 and fF[s, 0] <= G:  # the decoders finishing by round G, in (round, rid) order
            rid = fR[s, 0]
            nh = _fpop(fF, fR, s, nh)
            dlab[s, ti[rid, T_LAB]] -= 1
            done[nd] = rid
            nd += 1
        st[s, S_NT] -= nd
        st[s, S_NDEC] -= nd
        for a in range(na):  # completed prompts start decoding (or leave, without output)
            rid = al_t[s, a]
            if ti[rid, T_PREF] >= ti[rid, T_P]:
                _qremove(qh, ti, s, ti[rid, T_RANK], Q_PH, rid)
                od = ti[rid, T_D]
                if od > 0:
                    nh = _fpush(fF, fR, s, nh, G + od, rid)
                    dlab[s, ti[rid, T_LAB]] += 1
                    st[s, S_NDEC] += 1
                else:
                    st[s, S_NT] -= 1
                    done[nd] = rid
                    nd += 1
        st[s, S_NH] = nh
        if nd:
            g[G_RI] = -1
            i = _move_on_inline(s, nd, t, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g,
                                gf, buf, seen, u, blk, lb, cls_i, soj, done, hrec)
            if i < nd:
                g[G_PHASE] = 2
                g[G_RS] = s
                g[G_RI] = i
                g[G_RND] = nd
                gf[GF_RT] = t
                return 1
        _run_start(s, t, tau, st, stf, ti, qh, fF, fR, al_t, al_k, evf, evi, g, gf)
        if g[G_MAXB] >= 0 and g[G_NB] >= g[G_MAXB]:
            break
    _record(horizon, grid, rin, rbuf, rwk, rnt, st, stf, ti, stl, al_t, al_k, dlab, g, gf, cls_i, buf)
    return 0


_compiled_once = False


def run_network(ext_t, ext_c, cls_first, hop, rt, rp, stl, tau, budget, nrank, options, n_cls, n_lab, seen, ihop,
                icls, u, grid, *, horizon, max_batches, record_hops, n_tasks, n_sources=0, refill=None):
    """Allocate the state, run :func:`initial` and :func:`simulate` and return a dict of the results (see
    :mod:`fluidq.sim.network` for their meaning).

    The first call in a process compiles the loop (or loads it from numba's cache); if that takes more than
    :data:`fluidq.kernel.run.NOTE_AFTER_S` seconds a one-line note says so on stderr.
    """
    global _compiled_once
    if not _compiled_once and _jit.compiled():
        from .run import compile_note

        _compiled_once = True
        with compile_note():
            return run_network(ext_t, ext_c, cls_first, hop, rt, rp, stl, tau, budget, nrank, options, n_cls, n_lab,
                               seen, ihop, icls, u, grid, horizon=horizon, max_batches=max_batches,
                               record_hops=record_hops, n_tasks=n_tasks, n_sources=n_sources, refill=refill)
    i64, f64 = np.int64, np.float64
    n_st = budget.shape[0]
    maxb = int(budget.max())
    maxr = int(nrank.max())
    st = np.zeros((n_st, N_S), i64)
    st[:, S_BUDGET] = budget
    st[:, S_NRANK] = nrank
    st[:, S_EVPOS] = -1
    for j, col in enumerate(S_OPTIONS):
        st[:, col] = options[:, j]
    stf = np.zeros((n_st, 4), f64)
    ti = np.zeros((n_tasks + 1, N_T), i64)
    tf = np.zeros((n_tasks + 1, 2), f64)
    qh = np.zeros((n_st, maxr, 4), i64)
    fF = np.zeros((n_st, 2 * maxb + 2), i64)
    fR = np.zeros((n_st, 2 * maxb + 2), i64)
    al_t = np.zeros((n_st, maxb + 1), i64)
    al_k = np.zeros((n_st, maxb + 1), i64)
    dlab = np.zeros((n_st, n_lab), i64)
    blk = np.zeros((n_st, n_lab), i64)
    evf = np.zeros((n_st, 2), f64)  # (one event per busy station: the end of its run)
    evi = np.zeros((n_st, 2), i64)
    g = np.zeros(N_G, i64)
    g[G_RID] = 1
    g[G_SEEN] = int(seen.max()) if seen.size else 0
    g[G_CURIDX] = -1
    g[G_RECHOPS] = 1 if record_hops else 0
    g[G_MAXB] = -1 if max_batches is None else max_batches
    gf = np.zeros(N_GF, f64)
    gf[GF_CURSTART] = -INF
    gf[GF_NEXTREC] = grid[0] if grid.size else INF
    gf[GF_HORIZON] = horizon
    gf[GF_TA] = ext_t[0]
    cls_i = np.zeros((n_cls, 2), i64)
    soj = np.zeros(n_cls, f64)
    buf = np.zeros(n_lab, i64)
    done = np.zeros(3 * maxb + 8, i64)
    nh = n_tasks + 1 if record_hops else 1
    hrec = np.zeros((nh, 3), f64)  # station, arrival at it, end of the hop
    ng = grid.shape[0]
    rin, rbuf = np.zeros((ng, n_cls), i64), np.zeros((ng, n_lab), i64)
    rwk, rnt = np.zeros((ng, n_st), i64), np.zeros((ng, n_st), i64)
    lb = np.zeros((max(n_sources, 1), 2 * LBN + 2), i64)  # random lengths (empty: the first use asks for draws)

    def fill():
        src = int(g[G_NEED])
        left = lb[src, lb[src, LB_POS]:lb[src, LB_END]].copy()
        lb[src, :left.size] = left
        lb[src, left.size:left.size + LBN] = refill(src)
        lb[src, LB_POS] = 0
        lb[src, LB_END] = left.size + LBN

    i = 0
    while i < ihop.size:
        i = initial(i, ihop, icls, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
                    seen, u, blk, lb, cls_i)
        if i < ihop.size:
            fill()
    while simulate(ext_t, ext_c, cls_first, hop, rt, rp, stl, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, dlab,
                   evf, evi, g, gf, cls_i, soj, buf, seen, u, blk, lb, done, hrec, grid, rin, rbuf, rwk,
                   rnt):
        fill()
    nhop = int(g[G_NHOP])
    return {"in_system": rin, "buffer_tokens": rbuf, "station_tokens": rwk, "station_requests": rnt,
            "completed": cls_i[:, 1].copy(), "sojourn_sum": soj, "batches": int(g[G_NB]), "events": int(g[G_EV]),
            "seen": seen, "uniforms_used": int(g[G_U]), "blocked": blk,
            "hops": (hrec[:nhop, 0].astype(i64), hrec[:nhop, 1].copy(), hrec[:nhop, 2].copy()) if record_hops
            else None}
