"""The network event loop, in array style: every station of a network on one event clock, compiled by numba
(or run as the same Python under ``NUMBA_DISABLE_JIT=1``).

It is :func:`fluidq.simulate_network`'s ``method="auto"`` path (the Python event-skipping path of
:mod:`fluidq.sim.network`, rule for rule) for the common case:

* every station runs a built-in scheduler in FCFS order with a token budget ``budget``, a batch time of
  the batch's tokens alone (a table ``tau[station, tokens]``) and no KV memory: a decode-first chunked
  scheduler with mixed batches (Sarathi-Serve, vLLM with chunked prefill) without a ``k_max`` below its
  budget in runs of identical batches (below), any other (Orca, vLLM, FasterTransformer, a binding
  ``k_max``, ``chunk_long_prompts``, a context-aware batch time -- seconds per KV token of the decoders --, an
  engine whose prefill gives the first token) batch by batch, :meth:`~fluidq.policies.Scheduler.select`'s rule
  over the requests the Python path's view shows (``_take_prefill``, each prompt by the batch rule's
  ``take_one``; blocked prompts are reported);
* class priorities at stations (a rank per hop and station; FCFS within a rank);
* classes whose routes are sequences of hops, probabilistic choices and fork-joins, nested (a table of steps,
  ``K_*``; :func:`_advance` walks it as the Python path's ``advance``: a choice draws one uniform, a fork sends
  the request down its branches in order and then its main line, a join waits for every branch); a hop goes to
  a station or to a router: random (uniforms drawn by the caller, used in order, the choices' among them),
  join-the-shortest-queue by requests or by remaining tokens (ties to the engine listed first).  The routing
  decisions -- a choice's option and a random router's engine from a uniform, JSQ's pick, what a fork's join
  waits for and whether an arrival there is the last, whether a hop refused by a KV cache leaves the network --
  are :mod:`fluidq.kernel.routing`'s functions, the ones the Python event clock calls, inlined (``_pick``,
  ``_jsq_takes``, ``_fork_waits``, ``_join_arrive``, ``_refused_leaves``; 2026-12-07): what stays here is the
  walk over the step table (:func:`_submit`, :func:`_advance`, :func:`_move_on_py`) and the stations' queues
  JSQ reads (``S_NT``, :func:`_current_work`);
* fixed or random prompt and output tokens: a random length's draws come ``LBN`` at a time from the
  caller, when the kernel asks (:func:`simulate` returns 1 and resumes where it stopped), in the order the
  Python path draws them; the random routers' and choices' uniforms come a block at a time from the
  caller (``uniforms``), which rewinds its generator to the first one not used before a length's draws, so
  every draw comes in the Python path's order;
* stations with a KV cache (``S_MEM``), batch by batch as the Python path runs them: the memory rules of
  :class:`fluidq.kernel.memory.StationMemory` (refusal at arrival of a hop that can never fit, swap-ins
  first, then ``Scheduler.select`` over every resident in arrival order under the token rules -- whole
  remaining prompt plus one token of headroom per admitted request, the victim the last admitted in order
  -- or the paged rules of any other memory -- block size, whole-prompt or incremental reservation, the
  last-in-order or most recent victim, prefix caching -- recompute or swap preemption), a context-aware
  batch time (seconds per KV token of the decoders) and an engine whose prefill gives the first token.
  The decisions of these rules are :mod:`fluidq.kernel.memory`'s plain rule functions, the ones
  ``StationMemory`` calls, inlined here (the token and paged admission, the reservation with prefix reuse,
  swap-ins, refusal, recomputation, the block pool of :class:`fluidq.kernel.memory.BlockPool` on this station's
  region of ``pq``; :mod:`fluidq.kernel.kv` calls most of them too, its notes say which it writes out);
  ``_mem_form``, ``_mem_end`` and ``_preempt`` hold the station's walk over its residents (linked lists) and
  its victim search, in StationMemory's order of operations; the steps of ``_mem_form`` that the pass of a KV
  station asked in Python (:mod:`fluidq.kernel.network_kv`) takes too are inlined helpers both call (``_swap_ins``,
  ``_paged_need``, ``_most_recent``, ``_paged_admit``, ``_within_memory``, and :mod:`fluidq.kernel.kvrules`'
  ``token_pass``, the single-engine KV kernel's too; 2026-12-07, h-dedup).  ``tests/network/test_network_kernel_kv.py``
  holds them to the Python path bit for bit.

* stations whose policies are asked in Python (a user's ``select(view)``, a built-in scheduler with an ordering
  other than FCFS; 2026-12-07): batch by batch, their batch starts noted (``_ask``) and made in Python
  once the event is over (:data:`STATUS_ASK`; :mod:`fluidq.kernel.network_select` builds the Python path's view from
  these arrays, checks the batch and writes it into ``al_t``/``al_k``/``fR``), then started (``_answered``) and
  ended as a built-in batch-by-batch station's.  With a KV cache (h-netmem, 2026-12-07) the station's memory state
  is its columns here, as a native KV station's: :mod:`fluidq.kernel.network_kv`'s compiled pass (``_kv_pass``,
  StationMemory.form on these arrays, every decision a memory-rule call) forms the batch, stopping where the policy
  must be asked or a victim chosen in Python; the answer gives the batch's end, ``S_ASKEND``/``R_END``, or a swap-in
  wait, and ``_mem_end`` ends it as a native KV station's batch.

A JSQ router by remaining tokens over a KV station asked in Python (2026-12-07, h-netjsq): the Python clock starts
such a station's batch -- its memory pass, which adds a recomputation's tokens to its remaining tokens and takes a
prefix hit's off -- where a hop is offered to it idle, in the middle of the event, so a hop routed later in the same
event reads them after the pass; before such a router reads an engine whose ask is pending, ``_refill`` says
:data:`ASK_NOW`, :func:`simulate` (or :func:`initial`) stops, the caller makes the event's asks so far and the loop
starts their batches (``_answered``) and resumes where it stopped, as for a length refill.

A KV station with a composition batch time (whatever its policy: the native KV rule here tabulates ``t(b)``) and
subclasses of the built-in FCFS schedulers with a rule of their own are asked in Python too (2026-12-07: h-netwin and
the lead's merge; :mod:`fluidq.sim.network` decides, ``_kernel_unsupported``, ``_composed_kv``).

The model (as the Python path): a station runs *runs* of identical batches -- every decoding request gets
one token per batch (a virtual decode clock ``G``, rounds served so far, and a heap of finishing rounds
``(F, rid)``; a decoder that starts decoding after a live one whose ``(F, rid)`` comes first is *covered*: it gets
no heap entry (its ``F`` in ``T_PRV``, its coverer's ``T_NXT`` names it) until that one finishes and hands it its
place, since the coverer's entry, or its own coverer's, bounds it -- equal outputs keep one entry, as in
:mod:`fluidq.kernel.fcfs`), the prefilling requests the same chunks, whole prompts in priority/FCFS order and the last
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
from ..policies import batch_rule
from ..policies.batch_rule import NO_CAP
from .fcfs import _budget_split, _decode_after_prefill, _fits  # batch_rule's integer core, inlined
from . import memory as _rules  # the memory rules, written once (StationMemory's), inlined below
from . import routing as _routing  # the routing rules, written once (the Python clock's too), inlined below
from .memory import ACCEPT, ASK_AGAIN, STOP
from .kvrules import token_pass as _token_pass  # (the token rules' pass over a batch's chunks)


def _kernel(fn=None, **options):
    """numba's ``njit`` as :func:`fluidq.kernel._jit.jit` applies it (cached, GIL released; uncompiled,
    ``fn`` itself), without numba's reference counting (``_nrt=False``: these functions allocate nothing,
    and the counting of some thirty array arguments through every inlined helper cost two thirds of the
    loop's time), with ``options`` (``inline="always"`` for the helpers, so that a call passes no arrays)."""
    return _jit.jit(fn, _nrt=False, **options)


_inline = _kernel(inline="always")
# the memory rules (fluidq.kernel.memory's plain functions: StationMemory's decisions and BlockPool's queue), inlined
# (the block arithmetic's shift argument ``bsh`` is -1 here: a station divides by its block size, as it always did)
_blocks_needed = _inline(_rules.blocks_needed)
_cdiv = _inline(_rules.cdiv)
_decoders_within = _inline(_rules.decoders_within)
_never_fits = _inline(_rules.never_fits)
_no_victim_decoders = _inline(_rules.no_victim_decoders)
_paged_retry = _inline(_rules.paged_retry)
_paged_take = _inline(_rules.paged_take)
_pool_alloc = _inline(_rules.pool_alloc)
_pool_release = _inline(_rules.pool_release)
_pool_reuse = _inline(_rules.pool_reuse)
_prefix_want = _inline(_rules.prefix_want)
_recompute = _inline(_rules.recompute)
_swap_in_fits = _inline(_rules.swap_in_fits)
_token_next = _inline(_rules.token_next)
_victim_key = _inline(_rules.victim_key)
# the routing rules (fluidq.kernel.routing's plain functions, which the Python event clock calls too), inlined
_pick = _inline(_routing.pick)
_jsq_takes = _inline(_routing.jsq_takes)
_fork_waits = _inline(_routing.fork_waits)
_join_arrive = _inline(_routing.join_arrive)
_refused_leaves = _inline(_routing.refused_leaves)
#: the batch rule's per-prompt step of the prefill walk (whole, chunk, never schedulable, head-of-line), inlined
_take_one = _jit.jit(batch_rule.take_one, inline="always")

__all__ = ["initial", "run_network", "simulate"]

INF = np.inf

# hop (int, one row per step of a route, the steps of every sequence followed by an end row): router or station,
# target, prompt, output, the next step, class, the random prompt's and output's length source (-1: fixed), the
# step's kind (K_*) and its arguments (H_A, H_B, H_C, below), whether the step lies in a fork's branch (a request
# refused there stays counted in the system); then, for a hop, the rank at each station (H_RANK0 + s) and the
# buffer label (H_RANK0 + n_st + s)
H_ROUTER, H_TGT, H_P, H_D, H_NEXT, H_CLS, H_PSRC, H_DSRC, H_KIND, H_A, H_B, H_C, H_INFORK, H_SUB, H_STK, H_RANK0 = \
    range(16)
# (H_SUB and H_STK are not the row's: row i holds the i-th entry of the list of the choices' options and the
# forks' branches -- their first steps -- and the i-th entry of the stack of steps a request has still to take)
#: step kinds: a hop; a probabilistic choice (H_A: its options' place in H_SUB and in ``u``, the first step of each
#: option and its probability; H_B: how many); a fork (H_A: its index among its class's forks, H_B: branches,
#: H_C: their first steps' place in H_SUB); a join (H_A: its fork's index); the end of a sequence (H_A: what
#: follows -- 0 the request leaves, 1 the step H_B of the enclosing sequence (after a choice), 2 the branch of the
#: fork H_B arrives, and when it is the last the request goes on at step H_C, after the join)
K_HOP, K_CHOICE, K_FORK, K_JOIN, K_END = range(5)
#: draws per refill of a random length's buffer (as the Python path's ``sample_len``); ``lb[src]`` holds the
#: draws not used yet from place ``lb[src, LB_POS]`` to ``lb[src, LB_END]`` (room for ``2 * LBN``)
LBN = 256
LB_POS, LB_END = 2 * LBN, 2 * LBN + 1
# rt (int, one row per router): kind (0 random, 1 JSQ by requests, 2 JSQ by tokens), engines, engine ids
R_KIND, R_N, R_ENG0 = range(3)
# st (int, one row per station)
(S_BUDGET, S_NRANK, S_BUSY, S_ROUTING, S_G, S_NDEC, S_WORK, S_NT, S_RUN, S_RK, S_RD, S_RBTOK, S_NALLOC,
 S_NH, S_EVPOS, S_JC, S_GEN, S_KMAX, S_MIXED, S_CHUNKED, S_CHL, S_PF, S_VB, S_LIM) = range(24)
#: the station options :func:`run_network` takes per station, in this order (S_GEN: batch by batch)
S_OPTIONS = (S_GEN, S_KMAX, S_MIXED, S_CHUNKED, S_CHL, S_PF, S_VB, S_LIM)
# a station with a KV cache (S_MEM; batch by batch, S_GEN too): its memory (KV tokens, paged rules, block size,
# whole-prompt reservation, most-recent victim, swap preemption, prefix caching, the prefill's first token),
# then its state: blocks in all, free, never used; KV tokens held; admissions so far; requests holding blocks;
# preemptions, hops refused; waiting for a swap-in only; its region of the freed-block queue ``pq`` (offset,
# size, head, tail); residents, and residents holding KV tokens (``S_NDEC``: residents decoding) -- the counts
# let a scan of the residents stop once it has seen every request it can use
(S_MEM, S_KVCAP, S_PAGED, S_BS, S_WHOLE, S_MOSTREC, S_SWAP, S_CACHING, S_EMIT, S_TOTAL, S_FREE, S_FRESH, S_USED,
 S_ADMSEQ, S_NBLKN, S_PREEMPT, S_REJECTED, S_SWAPWAIT, S_QOFF, S_QCAP, S_QH, S_QT, S_NRES, S_NKV) = range(24, 48)
#: a station of runs: the decoder that started decoding last, while it decodes (0: none; covering, module doc)
S_DLAST = 48
#: a station whose policy is asked in Python (:mod:`fluidq.kernel.network_select`; batch by batch, ``S_GEN`` too):
#: on; its pending ask (0: none, else the order in which the asks of one event were made); the first request id
#: not in that ask's view (the hops submitted to the station before it are its residents then)
S_ASK, S_ASKP, S_ASKLIM = 49, 50, 51
#: the answer to its ask gives the batch's end itself (``stf[s, R_END]``; with no prompts and no decoders, the end of
#: a memory pass that only swapped in): a station with a KV cache whose policy is asked in Python (its driver times
#: the batch: :mod:`fluidq.kernel.network_kv`), or a batch over the station's budget (its time beyond the loop's
#: table)
S_ASKEND = 52
N_S = 53
#: the memory options :func:`run_network` takes per station (``mem``), in this order
S_MEMORY = (S_MEM, S_KVCAP, S_PAGED, S_BS, S_WHOLE, S_MOSTREC, S_SWAP, S_CACHING, S_EMIT)
# stf (float, one row per station): the current run's start and batch time; the end and start of its batch
# S_JC (the run's batches timed so far); a KV station's context-aware seconds per KV token and swap seconds per
# token
R_T0, R_TAU, R_TC, R_TL, R_KS, R_SWAPS = range(6)
R_AT = 6  # (a station asked in Python) the time of its pending ask: the start of the batch the answer makes
R_END = 7  # (an answer with S_ASKEND) the end of the batch it makes
N_R = 8
# ti (int, one row per hop of a request)
T_ST, T_P, T_D, T_PREF, T_RANK, T_LAB, T_HOP, T_CLS, T_NXT, T_PRV, T_DEC, T_JOB = range(12)
N_T = 12
# ... and, when a station has a KV cache, the hop's memory state: KV tokens held, blocks held (-1: not admitted),
# admission number, prompt tokens to recompute, preemptions, KV held while swapped out, the generation of its
# last block release, its leading blocks still cached, and where its last release sits in ``pq`` (place, blocks)
# (``T_P`` is the current prompt: the original plus the tokens to recompute).  The residents of a KV station
# are its rank-0 prefill queue (in arrival order), the swapped-out ones its rank-0 decode queue (oldest first).
T_KV, T_NBLK, T_ADM, T_RC, T_NPRE, T_HELD, T_STAMP, T_CUP, T_QPOS, T_QN = range(12, 22)
N_TM = 22
# tf (float): arrival in the network, arrival at the station
TF_JIN, TF_ARR = range(2)
# qh[s, rank, :]: the prefill queue's head and tail, the decode queue's (batch-by-batch stations) (0: empty)
Q_PH, Q_PT, Q_DH, Q_DT = range(4)
# g (int): batches, events, event sequence, next rid, labels seen, uniforms used, arriving, current event's
# station, next external arrival, next grid point, hops recorded, event heap size, record hops, max batches
# (-1: none); the length source to refill, and where to resume (phase: 1 a batch's end, 2 a run's end,
# moving hops on, 3 an external arrival's route; its station, the next of its finished hops, how many); the
# request being moved along its route (its job -- one per request: the index of its forks' counters in ``jf`` --
# and class), jobs so far, the steps left to take (G_SP entries of the stack H_STK), the choices' probabilities
# ahead of the uniforms in ``u``
(G_NB, G_EV, G_SEQ, G_RID, G_SEEN, G_U, G_ARRIVING, G_CURIDX, G_AI, G_GI, G_NHOP, G_NEV, G_RECHOPS,
 G_MAXB, G_NEED, G_PHASE, G_RS, G_RI, G_RND, G_JOB, G_JCLS, G_NJOB, G_SP, G_U0, G_UEND) = range(25)
#: the asks made in the current event (stations asked in Python), and whether the caller has answered them
G_NASK, G_ASKED = 25, 26
N_G = 27
#: :func:`simulate`'s return when stations must be asked in Python (the caller answers and calls again)
STATUS_ASK = 2
#: ``G_NEED`` when the block of uniforms (``u[G_U0:G_UEND]``) is used up and a random router or a choice needs one
UNIFORMS = 1 << 30
#: ``G_NEED`` when a join-the-shortest-queue router by remaining tokens is about to read a station with a KV cache
#: whose policy is asked in Python and whose ask of this event is still pending: the Python clock starts that batch
#: (its memory pass: a recomputation's tokens added, a prefix hit's taken off) before the router reads its queue, so
#: the caller makes the event's asks so far first (:func:`simulate` returns 1; the loop answers them, ``_answered``,
#: and resumes where it stopped)
ASK_NOW = UNIFORMS + 1
#: the most uniforms per block (drawn from the caller's generator when the loop asks, in the Python path's order)
UB = 4096
# gf (float): current event's batch start, next grid point, horizon, next external arrival, resume time, the
# arrival in the network of the request being moved along its route; then the sums of sojourns per class (GF_SOJ + c)
GF_CURSTART, GF_NEXTREC, GF_HORIZON, GF_TA, GF_RT, GF_JIN = range(6)
N_GF = GF_SOJ = 6


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
def _fsift(fF, fR, s, n):
    """Sift the top of station ``s``'s heap of ``n`` entries down to its place (``_fpop``, ``_freplace``)."""
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


@_inline
def _fpop(fF, fR, s, n):
    """Drop the top of station ``s``'s heap of ``n`` entries; return the new size."""
    n -= 1
    if n == 0:
        return 0
    _fswap(fF, fR, s, 0, n)
    _fsift(fF, fR, s, n)
    return n


@_inline
def _freplace(fF, fR, s, n, f, r):
    """Replace the top of station ``s``'s heap of ``n`` entries by (``f``, ``r``) (a pop and a push in one)."""
    fF[s, 0] = f
    fR[s, 0] = r
    _fsift(fF, fR, s, n)


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
    # the batch rule's split for a decode-first mixed scheduler without a binding k_max (every decoder fits:
    # a station runs here only with at most ``budget`` decoders): d decode tokens, the rest to prefill
    d, rem, _ = _budget_split(False, True, st[s, S_BUDGET], 1, st[s, S_NDEC], NO_CAP)
    btok = d
    na = 0
    if rem > 0:  # whole prompts in priority/FCFS order, the last maybe a chunk (these schedulers chunk)
        for r in range(nrank):
            rid = qh[s, r, Q_PH]
            while rid:
                need = ti[rid, T_P] - ti[rid, T_PREF]
                if not _fits(need, rem):
                    need = rem
                al_t[s, na] = rid
                al_k[s, na] = need
                na += 1
                btok += need
                rem -= need
                if rem == 0:
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
def _take_decode(s, nd, st, ti, qh, fR):
    """A batch-by-batch station's first ``nd`` decoders (at most all of them), in priority order then the order
    their prefills ended (into ``fR[s]``); return how many."""
    n = 0
    for r in range(st[s, S_NRANK]):
        rid = qh[s, r, Q_DH]
        while rid:
            if n >= nd:
                return n
            fR[s, n] = rid
            n += 1
            rid = ti[rid, T_NXT]
    return n


@_inline
def _take_prompt(s, rid, need, n, budget, slots, b, chunked, chl, ti, al_t, al_k, blk):
    """``Scheduler.select``'s rule for one prompt needing ``need`` tokens, as the ``n``-th of the batch's prefill
    part: the batch rule's step (``batch_rule.take_one``, inlined) -- whole where it fits the budget, a chunk of
    the budget where the scheduler chunks (or chunks prompts above its budget ``b`` and this is one), skipped
    and reported in ``blk`` where it can never fit, else head-of-line.  Return (prompts, budget, slots, whether
    head-of-line stops the scan)."""
    got = _take_one(need, budget, b, chunked, chl)
    if got > 0:
        al_t[s, n] = rid
        al_k[s, n] = got
        return n + 1, budget - got, slots - 1, False
    if got < 0:
        blk[s, ti[rid, T_LAB]] = 1  # can never fit: skipped, reported
        return n, budget, slots, False
    return n, budget, slots, True  # head-of-line: wait for a batch with room


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
            n, budget, slots, wait = _take_prompt(s, rid, need, n, budget, slots, b, chunked, chl, ti, al_t, al_k, blk)
            if wait:
                return budget, slots, n
            wn += 1
            if need <= vb or shows:
                wcum += need if need < vb else vb
            rid = ti[rid, T_NXT]
    return budget, slots, n


@_kernel
def _batch_start(s, now, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk):
    """Start one batch of a batch-by-batch station (prefill part in ``al_t``/``al_k``, decoders in
    ``fR[s]``: this station has no runs and no decode heap), or leave it idle.  The split of the token budget
    and the ``k_max`` slots between decode and prefill is the batch rule's (``batch_rule.budget_split`` and
    ``decode_after_prefill``, inlined)."""
    if now >= gf[GF_HORIZON]:
        st[s, S_BUSY] = 0
        return
    if st[s, S_ASK] != 0:  # its policy is asked in Python, once the current event is over
        _ask(s, now, st, stf, g)
        return
    b = st[s, S_BUDGET]
    k = st[s, S_KMAX]
    mixed = st[s, S_MIXED] != 0
    ndec = st[s, S_NDEC]
    D0, B, S = _budget_split(st[s, S_PF] != 0, mixed, b, 1, ndec, k)  # (n_p: prefill takes none when none waits)
    budget = B
    npf = 0
    if B >= 1 and S >= 1:
        budget, _, npf = _take_prefill(s, B, S, st, ti, qh, al_t, al_k, blk)
    nd = D0 if D0 >= 0 else _decode_after_prefill(mixed, ndec, b, k, B - budget, npf)
    ndd = _take_decode(s, nd, st, ti, qh, fR) if nd > 0 else 0
    if npf == 0 and ndd == 0:
        st[s, S_BUSY] = 0
        return
    st[s, S_NALLOC] = npf
    st[s, S_NH] = ndd
    st[s, S_BUSY] = 1
    _evpush(evf, evi, st, g, now + _gen_time(s, B - budget + ndd, ndd, tau, st, stf, ti, fR), now, s)


@_inline
def _gen_time(s, tokens, ndd, tau, st, stf, ti, fR):
    """The time of a batch-by-batch station's batch of ``tokens`` tokens whose decoders are ``fR[s, :ndd]``:
    ``t(b)``, plus for a context-aware time seconds per KV token times the decoders' KV held."""
    tv = tau[s, tokens]
    ks = stf[s, R_KS]
    if ks != 0.0:  # context-aware: t(b) + seconds per KV token * the decoders' KV held: prompt + decoded, less the
        kvs = 0    # prefill's first token (its KV is cached at the next step), as a KV station's T_KV counts it
        for a in range(ndd):
            rid = fR[s, a]
            kvs += ti[rid, T_P] + ti[rid, T_DEC]
        if st[s, S_EMIT] != 0:
            kvs -= ndd
        tv = tv + ks * kvs
    return tv


@_inline
def _ask(s, now, st, stf, g):
    """Station ``s`` (its policy asked in Python) starts a batch at ``now``: the ask is noted (its order among
    this event's asks, its view -- the hops submitted so far --, its time) and made when the event is over
    (:func:`simulate` returns :data:`STATUS_ASK`); the station is busy until the answer."""
    st[s, S_BUSY] = 1
    g[G_NASK] += 1
    st[s, S_ASKP] = g[G_NASK]
    st[s, S_ASKLIM] = g[G_RID]
    stf[s, R_AT] = now


@_inline
def _answered(tau, st, stf, ti, fR, al_k, evf, evi, g):
    """Start the batches the caller wrote for this event's asks (prefill ``al_t``/``al_k``, decoders ``fR``; a
    station answered with an empty batch has ``S_ASKP`` 0 and is idle)."""
    for s in range(st.shape[0]):
        if st[s, S_ASKP] > 0:
            now = stf[s, R_AT]
            ndd = st[s, S_NH]
            if st[s, S_ASKEND] != 0:  # the answer timed it (a KV station's memory pass in Python, or a batch over
                if ndd == 0 and st[s, S_NALLOC] == 0:  # the budget); no batch: a pass that only swapped in
                    st[s, S_SWAPWAIT] = 1
                _evpush(evf, evi, st, g, stf[s, R_END], now, s)
                st[s, S_ASKP] = 0
                continue
            tokens = ndd
            for a in range(st[s, S_NALLOC]):
                tokens += al_k[s, a]
            _evpush(evf, evi, st, g, now + _gen_time(s, tokens, ndd, tau, st, stf, ti, fR), now, s)
            st[s, S_ASKP] = 0
    g[G_NASK] = 0
    g[G_ASKED] = 0


# ---- stations with a KV cache: StationMemory's rules (fluidq.kernel.memory), batch by batch ----------------
# The Python path (fluidq.sim.network) runs such a station through StationMemory.form with Scheduler.select on
# every resident in arrival order (class priorities do not apply there); these functions restate that, operation
# for operation, on the station's arrays: the residents are its rank-0 prefill queue, the swapped-out requests
# its rank-0 decode queue, and the block pool (BlockPool of fluidq.kernel.memory) is the station's columns S_FREE,
# S_FRESH and, with prefix caching, its region of ``pq`` (one row per freed block: request, block index,
# generation, taken back).


@_inline
def _mvisible(ti, rid, hide, paged):
    """In the view: every resident, or with ``hide`` only those holding KV (admitted)."""
    if not hide:
        return True
    if paged:
        return ti[rid, T_NBLK] >= 0
    return ti[rid, T_KV] > 0


@_inline
def _mholds(ti, rid, paged):
    """Holds KV (admitted): blocks under the paged rules, tokens under the token rules."""
    if paged:
        return ti[rid, T_NBLK] >= 0
    return ti[rid, T_KV] > 0


@_inline
def _misdec(ti, rid):
    return ti[rid, T_PREF] >= ti[rid, T_P] and ti[rid, T_DEC] < ti[rid, T_D]


@_inline
def _mem_decoders(s, hide, nd, st, ti, qh, fR):
    """The first ``nd`` decoders in view (arrival order) into ``fR[s]``; return how many (fewer where fewer are
    in view).  The scan stops once it has seen every decoder (``S_NDEC``)."""
    paged = st[s, S_PAGED] != 0
    ndec = st[s, S_NDEC]
    n = 0
    seen = 0
    rid = qh[s, 0, Q_PH]
    while rid and seen < ndec and n < nd:
        if _misdec(ti, rid):
            seen += 1
            if _mvisible(ti, rid, hide, paged):
                fR[s, n] = rid
                n += 1
        rid = ti[rid, T_NXT]
    return n


@_inline
def _mem_prefill(s, hide, budget, slots, st, ti, qh, al_t, al_k, blk):
    """The prefill part over the residents in view within ``budget`` tokens and ``slots`` prompts (chunks into
    ``al_t``/``al_k``, prompts that can never fit reported in ``blk``); return (prompts, budget left).  With
    ``hide`` the scan stops once it has seen every resident holding KV."""
    paged = st[s, S_PAGED] != 0
    b = st[s, S_BUDGET]
    chunked = st[s, S_CHUNKED] != 0
    chl = st[s, S_CHL] != 0
    nhold = st[s, S_NBLKN] if paged else st[s, S_NKV]
    npf = 0
    seen = 0
    rid = qh[s, 0, Q_PH]
    while rid:
        holds = _mholds(ti, rid, paged)
        if hide:
            if seen >= nhold:
                break
            if not holds:
                rid = ti[rid, T_NXT]
                continue
        if holds:
            seen += 1
        if ti[rid, T_PREF] < ti[rid, T_P]:
            if budget < 1 or slots < 1:
                break
            need = ti[rid, T_P] - ti[rid, T_PREF]
            npf, budget, slots, wait = _take_prompt(s, rid, need, npf, budget, slots, b, chunked, chl, ti, al_t, al_k,
                                                    blk)
            if wait:
                break
        rid = ti[rid, T_NXT]
    return npf, budget


@_kernel
def _mem_select(s, hide, st, ti, qh, al_t, al_k, fR, blk):
    """``Scheduler.select`` (FCFS) over the station's residents in view (every one, or with ``hide`` those
    holding KV): the prefill chunks into ``al_t``/``al_k``, the decoders into ``fR[s]``, prompts that can never
    fit reported in ``blk``; return (prompts, decoders).  The split between decode and prefill is the batch
    rule's (``budget_split``, ``decode_after_prefill``) on the decoders in view: decode first, the decoders are
    taken up to the split for every decoder, and the split is then made for those in view."""
    b = st[s, S_BUDGET]
    k = st[s, S_KMAX]
    mixed = st[s, S_MIXED] != 0
    ndec = st[s, S_NDEC]
    if st[s, S_PF] != 0:  # prefill first: decode takes what prefill leaves
        _, B, S = _budget_split(True, mixed, b, 1, ndec, k)
        npf = 0
        budget = B
        if B >= 1 and S >= 1:
            npf, budget = _mem_prefill(s, hide, B, S, st, ti, qh, al_t, al_k, blk)
        nd = _decode_after_prefill(mixed, ndec, b, k, B - budget, npf)
        if nd > 0:
            nd = _mem_decoders(s, hide, nd, st, ti, qh, fR)
        return npf, nd
    nd, _, _ = _budget_split(False, mixed, b, 1, ndec, k)
    if nd > 0:
        nd = _mem_decoders(s, hide, nd, st, ti, qh, fR)
    _, B, S = _budget_split(False, mixed, b, 1, nd, k)
    npf = 0
    if B >= 1 and S >= 1:
        npf, _ = _mem_prefill(s, hide, B, S, st, ti, qh, al_t, al_k, blk)
    return npf, nd


@_kernel
def _palloc(s, k, st, ti, pq):
    """``BlockPool.alloc``: take ``k`` free blocks (with prefix caching :func:`~fluidq.kernel.memory.pool_alloc`
    on the station's region of ``pq``)."""
    st[s, S_FREE] -= k
    if st[s, S_CACHING] == 0:
        return
    st[s, S_FRESH], st[s, S_QH] = _pool_alloc(pq, st[s, S_QOFF], st[s, S_FRESH], st[s, S_QH], k, ti[:, T_STAMP],
                                             ti[:, T_CUP])


@_kernel
def _prelease(s, i, nb, st, ti, pq):
    """``BlockPool.release``: request ``i`` frees its ``nb`` blocks (with prefix caching kept as its cached
    prefix: :func:`~fluidq.kernel.memory.pool_release` on the station's region of ``pq``)."""
    st[s, S_FREE] += nb
    if st[s, S_CACHING] == 0:
        ti[i, T_STAMP] += 1
        return
    st[s, S_QH], st[s, S_QT] = _pool_release(pq, st[s, S_QOFF], st[s, S_QCAP], st[s, S_QH], st[s, S_QT],
                                            ti[:, T_STAMP], ti[:, T_CUP], ti[:, T_QPOS], ti[:, T_QN], i, nb)


@_kernel
def _preuse(s, i, want, st, ti, pq):
    """``BlockPool.reuse``: request ``i`` takes back up to ``want`` leading blocks of its cached prefix."""
    hit = _pool_reuse(pq, st[s, S_QOFF], ti[:, T_CUP], ti[:, T_QPOS], ti[:, T_QN], i, want)
    st[s, S_FREE] -= hit
    return hit


@_inline
def _ptake(s, rid, m, st, ti, pq):
    """The blocks ``rid`` needs for ``m`` more KV tokens."""
    k = _blocks_needed(ti[rid, T_KV], m, st[s, S_BS], -1, ti[rid, T_NBLK])
    if k > 0:
        _palloc(s, k, st, ti, pq)
        ti[rid, T_NBLK] += k


@_inline
def _res_insert(qh, ti, s, rid):
    """Put ``rid`` back among the station's residents, in arrival (request id) order."""
    q = qh[s, 0, Q_PT]
    while q and q > rid:
        q = ti[q, T_PRV]
    nx = ti[q, T_NXT] if q else qh[s, 0, Q_PH]
    ti[rid, T_PRV] = q
    ti[rid, T_NXT] = nx
    if q:
        ti[q, T_NXT] = rid
    else:
        qh[s, 0, Q_PH] = rid
    if nx:
        ti[nx, T_PRV] = rid
    else:
        qh[s, 0, Q_PT] = rid


@_kernel
def _preempt(s, v, st, stf, ti, qh, buf, pq):
    """``StationMemory._preempt``: ``v`` loses its KV (recomputed later, or swapped out); return the swap
    seconds."""
    held = ti[v, T_KV]
    was_dec = _misdec(ti, v)
    st[s, S_USED] -= held
    ti[v, T_KV] = 0
    if held > 0:
        st[s, S_NKV] -= 1
    if was_dec:
        st[s, S_NDEC] -= 1
    if st[s, S_PAGED]:
        nb = ti[v, T_NBLK]
        if nb >= 0:
            st[s, S_NBLKN] -= 1
        else:
            nb = 0
        _prelease(s, v, nb, st, ti, pq)
        ti[v, T_NBLK] = -1
    st[s, S_PREEMPT] += 1
    ti[v, T_NPRE] += 1
    if st[s, S_SWAP]:
        _qremove(qh, ti, s, 0, Q_PH, v)
        st[s, S_NRES] -= 1
        ti[v, T_HELD] = held
        _qappend(qh, ti, s, 0, Q_DH, v)
        return held * stf[s, R_SWAPS]
    ti[v, T_P], ti[v, T_RC], again = _recompute(ti[v, T_P], ti[v, T_RC], ti[v, T_DEC], ti[v, T_PREF])
    ti[v, T_PREF] = 0
    st[s, S_WORK] += again
    buf[ti[v, T_LAB]] += again
    return 0.0


@_inline
def _last_holding(s, st, ti, qh):
    """The last resident holding KV (the victim in FCFS order: the residents' list is in ascending
    ``victim_key(False, ...)``, arrival order), or 0 (scanning from the first resident until every one holding KV
    is seen: the waiting requests behind them are not scanned)."""
    paged = st[s, S_PAGED] != 0
    nhold = st[s, S_NBLKN] if paged else st[s, S_NKV]
    seen = 0
    last = 0
    rid = qh[s, 0, Q_PH]
    while rid and seen < nhold:
        if _mholds(ti, rid, paged):
            seen += 1
            last = rid
        rid = ti[rid, T_NXT]
    return last


@_inline
def _swap_ins(s, st, stf, ti, qh, pq):
    """``StationMemory.form``'s first step: the swapped-out requests come back, oldest first, while their KV fits
    (``swap_in_fits``); return their swap seconds.  The native pass (:func:`_mem_form`) and the pass of a station
    asked in Python (:func:`fluidq.kernel.network_kv._kv_pass`) both call it."""
    paged = st[s, S_PAGED] != 0
    bs = st[s, S_BS]
    kvcap = st[s, S_KVCAP]
    swap_s = stf[s, R_SWAPS]
    ex1 = 0.0
    while qh[s, 0, Q_DH]:
        rid = qh[s, 0, Q_DH]
        held = ti[rid, T_HELD]
        if not _swap_in_fits(paged, held, bs, st[s, S_FREE], st[s, S_USED], kvcap):
            break
        _qremove(qh, ti, s, 0, Q_DH, rid)
        if paged:
            k = _cdiv(held, bs, -1)
            _palloc(s, k, st, ti, pq)
            ti[rid, T_NBLK] = k
            st[s, S_NBLKN] += 1
        st[s, S_USED] += held
        ti[rid, T_KV] = held
        if held > 0:
            st[s, S_NKV] += 1
        if _misdec(ti, rid):
            st[s, S_NDEC] += 1
        ex1 += held * swap_s
        _res_insert(qh, ti, s, rid)
        st[s, S_NRES] += 1
    return ex1


@_inline
def _paged_need(s, npf, nd, st, ti, al_t, al_k, fR):
    """The blocks the batch (``al_t``/``al_k[s, :npf]``, decoders ``fR[s, :nd]``) adds for its running requests
    (``blocks_needed``; a new request's reservation is taken after them, :func:`_paged_admit`)."""
    bs = st[s, S_BS]
    need = 0
    for j in range(npf):
        rid = al_t[s, j]
        if ti[rid, T_NBLK] >= 0:
            need += _blocks_needed(ti[rid, T_KV], al_k[s, j], bs, -1, ti[rid, T_NBLK])
    for j in range(nd):
        rid = fR[s, j]
        need += _blocks_needed(ti[rid, T_KV], 1, bs, -1, ti[rid, T_NBLK])
    return need


@_inline
def _most_recent(s, st, ti, qh):
    """vLLM's victim under the paged rules: the request holding blocks with the largest ``victim_key`` (its admission
    number; 0: none), scanning the residents until every one holding blocks is seen."""
    victim = 0
    top = -1
    seen = 0
    rid = qh[s, 0, Q_PH]
    while rid and seen < st[s, S_NBLKN]:
        if ti[rid, T_NBLK] >= 0:
            seen += 1
            if _victim_key(True, ti[rid, T_ADM], rid) > top:
                top = _victim_key(True, ti[rid, T_ADM], rid)
                victim = rid
        rid = ti[rid, T_NXT]
    return victim


@_inline
def _paged_admit(s, npf, nd, st, ti, al_t, al_k, fR, buf, pq, tq, nq):
    """``StationMemory._paged`` once the batch fits (:func:`_paged_need`): the running requests' blocks first, then
    the new requests head-of-line while their reservation fits (``paged_take``), each taking back its own cached
    prefix first (``prefix_want``, :func:`_preuse`) and given its admission number; the batch's prompts kept are
    compacted in place in ``al_t``/``al_k[s]``.  A request that took a prefix back is listed in ``tq[nq:]`` where
    ``nq >= 0`` (:func:`fluidq.kernel.network_kv._kv_pass`'s requests a pass touched, whose objects its driver
    updates; the native pass, :func:`_mem_form`, passes ``nq = -1`` and lists none).  Returns (prompts kept, whether
    a new request stopped the admission, ``nq``)."""
    bs = st[s, S_BS]
    for j in range(npf):  # the running requests' blocks first
        rid = al_t[s, j]
        if ti[rid, T_NBLK] >= 0:
            _ptake(s, rid, al_k[s, j], st, ti, pq)
    for j in range(nd):
        _ptake(s, fR[s, j], 1, st, ti, pq)
    caching = st[s, S_CACHING] != 0
    whole = st[s, S_WHOLE] != 0
    kept = 0
    stop = False
    for j in range(npf):  # then new requests, head-of-line, while their reservation fits
        rid = al_t[s, j]
        m = al_k[s, j]
        if ti[rid, T_NBLK] >= 0:
            al_t[s, kept] = rid
            al_k[s, kept] = m
            kept += 1
            continue
        if stop:
            continue
        p = ti[rid, T_P]
        hit = 0
        if caching and ti[rid, T_CUP] > 0:  # its own leading blocks, still cached, come back
            w = _prefix_want(p, bs, -1, st[s, S_FREE])
            if w == STOP:
                stop = True
                continue
            hit = _preuse(s, rid, w, st, ti, pq)
        x = _paged_take(p, ti[rid, T_PREF], m, hit, bs, whole, st[s, S_FREE])
        if x == STOP:
            stop = True
            continue
        ti[rid, T_NBLK] = hit
        st[s, S_NBLKN] += 1
        if hit:
            if ti[rid, T_KV] == 0:
                st[s, S_NKV] += 1
            ti[rid, T_KV] = hit * bs
            st[s, S_USED] += hit * bs
            ti[rid, T_PREF] = hit * bs
            st[s, S_WORK] -= hit * bs
            buf[ti[rid, T_LAB]] -= hit * bs
            if nq >= 0:
                tq[nq] = rid
                nq += 1
        ti[rid, T_ADM] = st[s, S_ADMSEQ]
        st[s, S_ADMSEQ] += 1
        _ptake(s, rid, x, st, ti, pq)
        al_t[s, kept] = rid
        al_k[s, kept] = x
        kept += 1
    return kept, stop, nq


@_inline
def _within_memory(s, npf, nd, st, al_k):
    """The token rules' last clamp, never to exceed memory: a batch over the free tokens keeps no prompt and the
    decoders ``decoders_within`` allows; return (prompts, decoders)."""
    x = nd
    for j in range(npf):
        x += al_k[s, j]
    if x > st[s, S_KVCAP] - st[s, S_USED]:
        return 0, _decoders_within(nd, st[s, S_KVCAP] - st[s, S_USED])
    return npf, nd


@_kernel
def _mem_form(s, st, stf, ti, qh, fR, al_t, al_k, blk, buf, pq):
    """``StationMemory.form``: swap-ins, then the policy's batch under the token or the paged rules (prefill
    chunks in ``al_t``/``al_k``, decoders in ``fR[s]``); return (prompts, decoders, swap seconds, whether any
    request is resident).  Its steps are the helpers it shares with :func:`fluidq.kernel.network_kv._kv_pass`
    (:func:`_swap_ins`, :func:`_paged_need`, :func:`_most_recent`, :func:`_paged_admit`, ``token_pass``,
    :func:`_within_memory`); what is its own is the built-in FCFS policy's batch (:func:`_mem_select`) and the victim
    in arrival order (:func:`_last_holding`)."""
    paged = st[s, S_PAGED] != 0
    kvcap = st[s, S_KVCAP]
    ex1 = _swap_ins(s, st, stf, ti, qh, pq)
    if qh[s, 0, Q_PH] == 0:
        return 0, 0, ex1, False
    hide = qh[s, 0, Q_DH] != 0  # while requests are swapped out, no new one is admitted
    ex2 = 0.0
    npf = 0
    nd = 0
    if paged:
        while True:
            npf, nd = _mem_select(s, hide, st, ti, qh, al_t, al_k, fR, blk)
            if _paged_need(s, npf, nd, st, ti, al_t, al_k, fR) > st[s, S_FREE]:
                # preempt: the most recently admitted, or the last in order
                victim = _most_recent(s, st, ti, qh) if st[s, S_MOSTREC] else _last_holding(s, st, ti, qh)
                ex2 += _preempt(s, victim, st, stf, ti, qh, buf, pq)
                hide = True  # vLLM: no waiting request is admitted in an iteration that preempted
                continue
            kept, stop, _ = _paged_admit(s, npf, nd, st, ti, al_t, al_k, fR, buf, pq, blk[s], -1)
            if _paged_retry(stop, kept, nd, hide, st[s, S_NBLKN]):
                hide = True  # ask again with the admitted requests alone
                continue
            npf = kept
            break
        return npf, nd, ex1 + ex2, True
    # the token rules: the whole remaining prompt plus one token of headroom per admitted request
    chunkable = st[s, S_CHUNKED] != 0
    nres = st[s, S_NRES]
    nadm = st[s, S_NKV]
    att = 0
    while att < 2 * nres + 8:
        att += 1
        npf, nd = _mem_select(s, hide, st, ti, qh, al_t, al_k, fR, blk)
        room = kvcap - st[s, S_USED] - nd
        if room >= 0:
            reserve = nadm
            kept, room, dropped = _token_pass(npf, al_t[s], al_k[s], al_t[s], al_k[s], ti[:, T_P], ti[:, T_PREF],
                                              ti[:, T_KV], room, reserve, chunkable)
            nxt = _token_next(dropped, hide, kept == 0 and nd == 0, room, reserve, nadm)
            if nxt == ASK_AGAIN:
                hide = True
                continue
            if nxt == ACCEPT:
                npf = kept
                break
        victim = _last_holding(s, st, ti, qh)
        if victim == 0:
            npf = 0
            nd = _no_victim_decoders(nd, kvcap - st[s, S_USED])
            break
        ex2 += _preempt(s, victim, st, stf, ti, qh, buf, pq)
        nadm -= 1
        hide = True
    npf, nd = _within_memory(s, npf, nd, st, al_k)
    return npf, nd, ex1 + ex2, True


@_kernel
def _mem_start(s, now, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk, buf, pq):
    """Start the next batch of a station with a KV cache (or a wait for swap-ins alone), or leave it idle."""
    if now >= gf[GF_HORIZON]:
        st[s, S_BUSY] = 0
        return
    if st[s, S_ASK] != 0:  # its policy and memory rules run in Python, once the current event is over
        _ask(s, now, st, stf, g)
        return
    npf, nd, extra, resident = _mem_form(s, st, stf, ti, qh, fR, al_t, al_k, blk, buf, pq)
    if not resident or (npf == 0 and nd == 0):
        if extra > 0:  # only swaps this time: the station is busy moving KV, then tries again
            st[s, S_BUSY] = 1
            st[s, S_SWAPWAIT] = 1
            st[s, S_NALLOC] = 0
            st[s, S_NH] = 0
            _evpush(evf, evi, st, g, now + extra, now, s)
        else:
            st[s, S_BUSY] = 0
        return
    tokens = nd
    for a in range(npf):
        tokens += al_k[s, a]
    tv = tau[s, tokens]
    ks = stf[s, R_KS]
    if ks != 0.0:  # context-aware: the decoders' KV tokens
        kvs = 0
        for a in range(nd):
            kvs += ti[fR[s, a], T_KV]
        tv = tv + ks * kvs
    end = now + tv
    if extra != 0.0:
        end += extra
    st[s, S_NALLOC] = npf
    st[s, S_NH] = nd
    st[s, S_BUSY] = 1
    st[s, S_SWAPWAIT] = 0
    _evpush(evf, evi, st, g, end, now, s)


@_kernel
def _mem_end(s, st, ti, qh, fR, al_t, al_k, buf, done, pq):
    """End the batch of a station with a KV cache: tokens served, KV grown, the finished hops (into ``done``, in
    arrival order) release their KV and leave the residents; return how many finished."""
    npf = st[s, S_NALLOC]
    ndd = st[s, S_NH]
    emit = st[s, S_EMIT] != 0
    tokens = ndd
    nd = 0
    for a in range(npf):
        rid = al_t[s, a]
        m = al_k[s, a]
        lab = ti[rid, T_LAB]
        buf[lab] -= m
        ti[rid, T_PREF] += m
        if ti[rid, T_KV] == 0 and m > 0:
            st[s, S_NKV] += 1
        ti[rid, T_KV] += m
        tokens += m
        if ti[rid, T_PREF] >= ti[rid, T_P]:
            if emit and ti[rid, T_DEC] == 0 and ti[rid, T_D] > 0:  # the prefill gives the first token
                ti[rid, T_DEC] = 1
                st[s, S_WORK] -= 1
                buf[lab] -= 1
            elif emit and 0 < ti[rid, T_DEC] < ti[rid, T_D]:  # a recomputation caught up: the next token
                ti[rid, T_DEC] += 1
                st[s, S_WORK] -= 1
                buf[lab] -= 1
            if ti[rid, T_DEC] >= ti[rid, T_D]:
                done[nd] = rid
                nd += 1
            else:
                st[s, S_NDEC] += 1
    for a in range(ndd):
        rid = fR[s, a]
        ti[rid, T_DEC] += 1
        buf[ti[rid, T_LAB]] -= 1
        ti[rid, T_KV] += 1
        if ti[rid, T_DEC] >= ti[rid, T_D]:
            st[s, S_NDEC] -= 1
            done[nd] = rid
            nd += 1
    st[s, S_WORK] -= tokens
    st[s, S_USED] += tokens
    for i in range(1, nd):  # arrival order (the residents')
        x = done[i]
        j = i - 1
        while j >= 0 and done[j] > x:
            done[j + 1] = done[j]
            j -= 1
        done[j + 1] = x
    paged = st[s, S_PAGED] != 0
    for i in range(nd):  # StationMemory.after_batch
        rid = done[i]
        st[s, S_USED] -= ti[rid, T_KV]
        if ti[rid, T_KV] > 0:
            st[s, S_NKV] -= 1
        st[s, S_NRES] -= 1
        if paged:
            _prelease(s, rid, ti[rid, T_NBLK], st, ti, pq)
            ti[rid, T_STAMP] = -1  # forgotten: its blocks are ordinary free ones
            ti[rid, T_CUP] = 0
            ti[rid, T_NBLK] = -1
            st[s, S_NBLKN] -= 1
        _qremove(qh, ti, s, 0, Q_PH, rid)
    return nd


@_inline
def _refill(h, hop, lb, rt, g, st):
    """The length source whose buffer runs out if hop ``h`` is submitted now (the caller appends the next
    ``LBN`` draws, after the one left if the prompt takes it, and calls again), else :data:`UNIFORMS` if the hop
    goes to a random router and the block of uniforms is used up, :data:`ASK_NOW` if it goes to a JSQ router by
    remaining tokens one of whose engines is a KV station with an ask pending (its memory pass changes the tokens the
    router reads: the asks of the event so far are made first), or -1 (the Python path draws the lengths, then the
    router's uniform)."""
    ps = hop[h, H_PSRC]
    ds = hop[h, H_DSRC]
    if ps >= 0 and lb[ps, LB_END] - lb[ps, LB_POS] < 1:
        return ps
    if ds >= 0 and lb[ds, LB_END] - lb[ds, LB_POS] < (2 if ds == ps else 1):
        return ds
    if hop[h, H_ROUTER]:
        r = hop[h, H_TGT]
        kind = rt[r, R_KIND]
        if kind == 0 and g[G_U] >= g[G_UEND]:
            return UNIFORMS
        if kind == 2 and g[G_NASK] != 0:
            for j in range(rt[r, R_N]):
                e = rt[r, R_ENG0 + j]
                if st[e, S_ASKP] > 0 and st[e, S_MEM] != 0:
                    return ASK_NOW
    return -1


@_inline
def _submit(h, ci, jin, now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf,
            buf, seen, u, blk, lb, cls_i, pq):
    """A request of class ``ci`` (in the network since ``jin``) arrives for hop ``h`` at ``now``."""
    n_st = st.shape[0]
    if hop[h, H_ROUTER]:
        r = hop[h, H_TGT]
        ne = rt[r, R_N]
        kind = rt[r, R_KIND]
        if kind == 0:  # random: one uniform (routing's pick)
            x = u[g[G_U]]
            g[G_U] += 1
            s = rt[r, R_ENG0 + _pick(x, rp[r], 0, ne)]
        else:  # JSQ by requests (1) or remaining tokens (2), over the engines in the order listed (routing's rule)
            s = -1
            key = 0
            for j in range(ne):
                e = rt[r, R_ENG0 + j]
                kk = st[e, S_NT] if kind == 1 else _current_work(e, now, st, stf, g, gf)
                if _jsq_takes(j, kk, key):
                    s = e
                    key = kk
    else:
        s = hop[h, H_TGT]
    lab = hop[h, H_RANK0 + n_st + s]
    if seen[lab] == 0:
        g[G_SEEN] += 1
        seen[lab] = g[G_SEEN]
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
    mem = st[s, S_MEM] != 0
    if mem and _never_fits(st[s, S_PAGED] != 0, p, d, st[s, S_BS], st[s, S_TOTAL], st[s, S_KVCAP]):
        st[s, S_REJECTED] += 1  # it can never fit in the station's KV cache: it leaves the network, unless the hop
        if _refused_leaves(hop[h, H_INFORK] != 0):  # lies in a fork's branch (routing's rule)
            cls_i[ci, 0] -= 1
        return
    rid = g[G_RID]
    g[G_RID] = rid + 1
    rank = hop[h, H_RANK0 + s]
    if mem:
        ti[rid, T_KV] = 0
        ti[rid, T_NBLK] = -1
        st[s, S_NRES] += 1
    ti[rid, T_ST] = s
    ti[rid, T_P] = p
    ti[rid, T_D] = d
    ti[rid, T_PREF] = 0
    ti[rid, T_DEC] = 0
    ti[rid, T_RANK] = rank
    ti[rid, T_LAB] = lab
    ti[rid, T_HOP] = h
    ti[rid, T_CLS] = ci
    ti[rid, T_JOB] = g[G_JOB]
    tf[rid, TF_JIN] = jin
    tf[rid, TF_ARR] = now
    st[s, S_NT] += 1
    st[s, S_WORK] += p + d
    _qappend(qh, ti, s, rank, Q_PH, rid)
    buf[lab] += p + d
    if st[s, S_ROUTING]:
        return  # the station starts its next batch once every finished request has moved on
    if st[s, S_BUSY] == 0:
        if mem:
            _mem_start(s, now, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk, buf, pq)
        elif st[s, S_GEN]:
            _batch_start(s, now, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk)
        else:
            _run_start(s, now, tau, st, stf, ti, qh, fF, fR, al_t, al_k, evf, evi, g, gf)
    elif st[s, S_RUN] != 0 and st[s, S_RK] > 1:
        _cut_run(s, now, st, stf, evf, evi, g, gf)


@_kernel
def _advance(now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf, seen, u, blk, lb,
             cls_i, pq, jf):
    """Move the request ``G_JOB`` (class ``G_JCLS``, in the network since ``GF_JIN``) along its route from the steps
    on the stack (the Python path's ``advance``, depth first: a fork's branches in order, then its main line):
    submit hops, draw choices (a uniform each, in order), count arrivals at joins; return 1 when a hop needs a
    length buffer refilled or a choice or router the next block of uniforms first (``G_NEED``; the step stays on
    the stack), else 0."""
    job = g[G_JOB]
    ci = g[G_JCLS]
    jin = gf[GF_JIN]
    while g[G_SP] > 0:
        g[G_SP] -= 1
        x = hop[g[G_SP], H_STK]
        while True:
            kind = hop[x, H_KIND]
            if kind == K_HOP:
                need = _refill(x, hop, lb, rt, g, st)
                if need >= 0:
                    g[G_NEED] = need
                    hop[g[G_SP], H_STK] = x
                    g[G_SP] += 1
                    return 1
                _submit(x, ci, jin, now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf,
                        buf, seen, u, blk, lb, cls_i, pq)
                break
            if kind == K_CHOICE:  # one uniform picks the option (routing's pick; its probabilities at u[off:off + n])
                if g[G_U] >= g[G_UEND]:  # the block of uniforms is used up: the caller draws the next
                    g[G_NEED] = UNIFORMS
                    hop[g[G_SP], H_STK] = x
                    g[G_SP] += 1
                    return 1
                v = u[g[G_U]]
                g[G_U] += 1
                off = hop[x, H_A]
                x = hop[off + _pick(v, u, off, hop[x, H_B]), H_SUB]
                continue
            if kind == K_FORK:  # the branches first, in order, then the main line (pushed first)
                n = hop[x, H_B]
                off = hop[x, H_C]
                jf[job, hop[x, H_A]] = _fork_waits(n)
                sp = g[G_SP]
                hop[sp, H_STK] = hop[x, H_NEXT]
                for j in range(n):
                    hop[sp + 1 + j, H_STK] = hop[off + n - 1 - j, H_SUB]
                g[G_SP] = sp + 1 + n
                break
            if kind == K_JOIN:  # the main line arrives: it waits for the branches still out (routing's join_arrive)
                f = hop[x, H_A]
                left, last = _join_arrive(jf[job, f])
                jf[job, f] = left
                if not last:
                    break
                x = hop[x, H_NEXT]
                continue
            pk = hop[x, H_A]  # the end of a sequence
            if pk == 0:  # the request leaves the network
                cls_i[ci, 0] -= 1
                cls_i[ci, 1] += 1
                gf[GF_SOJ + ci] += now - jin
                break
            if pk == 1:  # back to the sequence that made the choice
                x = hop[x, H_B]
                continue
            f = hop[x, H_B]  # a branch arrives at its join: the last arrival takes the main line on
            left, last = _join_arrive(jf[job, f])
            jf[job, f] = left
            if last:
                x = hop[x, H_C]
                continue
            break
    return 0


def _move_on_py(s, nd, now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
                seen, u, blk, lb, cls_i, done, hrec, pq, jf):
    """Send the hops ``done[i0:nd]`` that finished at station ``s`` along their routes or out (``g[G_RI]``:
    ``i0`` when resuming, -1 the first time: the hops are recorded, from 0); return ``nd``, or the index of the
    hop whose route needs a length buffer refilled (``G_NEED``; a route taken in part is left on the stack)."""
    i0 = g[G_RI]
    st[s, S_BUSY] = 0
    st[s, S_ROUTING] = 1
    if i0 < 0 and g[G_RECHOPS]:
        n = g[G_NHOP]
        for i in range(nd):
            hrec[n, 0] = s
            hrec[n, 1] = tf[done[i], TF_ARR]
            hrec[n, 2] = now
            hrec[n, 3] = ti[done[i], T_NPRE] if st[s, S_MEM] else 0
            n += 1
        g[G_NHOP] = n
    i = i0 if i0 > 0 else 0
    while i < nd:
        rid = done[i]
        ci = ti[rid, T_CLS]
        nx = hop[ti[rid, T_HOP], H_NEXT]
        kind = hop[nx, H_KIND]
        if g[G_SP] == 0 and kind == K_END and hop[nx, H_A] == 0:  # the request leaves
            cls_i[ci, 0] -= 1
            cls_i[ci, 1] += 1
            gf[GF_SOJ + ci] += now - tf[rid, TF_JIN]
        elif g[G_SP] == 0 and kind == K_HOP:  # the next hop
            need = _refill(nx, hop, lb, rt, g, st)
            if need >= 0:
                g[G_NEED] = need
                break
            g[G_JOB] = ti[rid, T_JOB]
            _submit(nx, ci, tf[rid, TF_JIN], now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k,
                    evf, evi, g, gf, buf, seen, u, blk, lb, cls_i, pq)
        else:  # choices, forks, joins, the end of a sub-route
            if g[G_SP] == 0:
                g[G_JOB] = ti[rid, T_JOB]
                g[G_JCLS] = ci
                gf[GF_JIN] = tf[rid, TF_JIN]
                hop[0, H_STK] = nx
                g[G_SP] = 1
            if _advance(now, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf, seen,
                        u, blk, lb, cls_i, pq, jf):
                break
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
            seen, u, blk, lb, cls_i, pq):
    """The requests waiting at time 0: hop ``ihop[i]`` of class ``icls[i]``, in order, from ``i0``; return
    the number placed (less than all when a length buffer needs a refill or the asks so far must be made first:
    ``G_NEED``; the caller's answers to those asks start their batches here)."""
    if g[G_ASKED] != 0:
        _answered(tau, st, stf, ti, fR, al_k, evf, evi, g)
    i = i0
    while i < ihop.shape[0]:
        need = _refill(ihop[i], hop, lb, rt, g, st)
        if need >= 0:
            g[G_NEED] = need
            break
        cls_i[icls[i], 0] += 1
        g[G_JOB] = g[G_NJOB]
        g[G_NJOB] += 1
        _submit(ihop[i], icls[i], 0.0, 0.0, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf,
                evi, g, gf, buf, seen, u, blk, lb, cls_i, pq)
        i += 1
    return i


@_kernel
def simulate(ext_t, ext_c, cls_first, hop, rt, rp, stl, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, dlab,
             evf, evi, g, gf, cls_i, buf, seen, u, blk, lb, done, hrec, grid, rin, rbuf, rwk,
             rnt, pq, jf):
    """Run the event loop to the end (the horizon, or ``max_batches``: return 0), or until a random length's
    buffer needs the next draws (return 1: the caller refills source ``G_NEED`` and calls again; the loop
    resumes where it stopped; with ``G_NEED`` :data:`ASK_NOW` the caller makes the asks of the event so far, in
    its middle), or until the asks of an event must be made (:data:`STATUS_ASK`)."""
    horizon = gf[GF_HORIZON]
    while True:
        if g[G_ASKED] != 0:  # the caller answered the asks (once an event is over, or in its middle: ASK_NOW)
            _answered(tau, st, stf, ti, fR, al_k, evf, evi, g)
        if g[G_PHASE] == 3:  # resume an external arrival's route
            g[G_ARRIVING] = 1
            if _advance(gf[GF_RT], hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
                        seen, u, blk, lb, cls_i, pq, jf):
                return 1
            g[G_ARRIVING] = 0
            g[G_PHASE] = 0
            continue
        if g[G_PHASE]:  # resume moving a station's finished hops on, then start its next batch or run
            s = g[G_RS]
            t = gf[GF_RT]
            nd = g[G_RND]
            i = _move_on(s, nd, t, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g,
                         gf, buf, seen, u, blk, lb, cls_i, done, hrec, pq, jf)
            if i < nd:
                g[G_RI] = i
                return 1
            if g[G_PHASE] == 1:
                if st[s, S_BUSY] == 0:
                    if st[s, S_MEM]:
                        _mem_start(s, t, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk, buf, pq)
                    else:
                        _batch_start(s, t, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk)
            else:
                _run_start(s, t, tau, st, stf, ti, qh, fF, fR, al_t, al_k, evf, evi, g, gf)
            g[G_PHASE] = 0
            if g[G_MAXB] >= 0 and g[G_NB] >= g[G_MAXB]:
                break
            continue
        if g[G_NASK] != 0:  # the event is over: its asks are made in Python, then their batches start
            return STATUS_ASK
        te = evf[0, 0] if g[G_NEV] > 0 else INF
        ai = g[G_AI]
        ta = ext_t[ai]
        if ta <= te and ta <= horizon:  # an external arrival (first at equal times)
            ci = ext_c[ai]
            first = cls_first[ci]
            if hop[first, H_KIND] == K_HOP:
                need = _refill(first, hop, lb, rt, g, st)
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
            g[G_JOB] = g[G_NJOB]
            g[G_NJOB] += 1
            if hop[first, H_KIND] == K_HOP:
                _submit(first, ci, ta, ta, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf,
                        evi, g, gf, buf, seen, u, blk, lb, cls_i, pq)
            else:  # a route that starts with a choice or a fork
                g[G_JCLS] = ci
                gf[GF_JIN] = ta
                hop[0, H_STK] = first
                g[G_SP] = 1
                if _advance(ta, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
                            seen, u, blk, lb, cls_i, pq, jf):
                    g[G_PHASE] = 3
                    gf[GF_RT] = ta
                    return 1
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
        if st[s, S_SWAPWAIT]:  # a station with a KV cache finished swapping in: it tries again
            st[s, S_SWAPWAIT] = 0
            st[s, S_BUSY] = 0
            _mem_start(s, t, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk, buf, pq)
            if g[G_MAXB] >= 0 and g[G_NB] >= g[G_MAXB]:
                break
            continue
        if st[s, S_MEM]:  # one batch of a station with a KV cache ends
            g[G_NB] += 1
            nd = _mem_end(s, st, ti, qh, fR, al_t, al_k, buf, done, pq)
        elif st[s, S_GEN]:  # one batch of a batch-by-batch station ends
            g[G_NB] += 1
            npf = st[s, S_NALLOC]
            ndd = st[s, S_NH]
            tokens = ndd
            emit = st[s, S_EMIT] != 0
            for a in range(npf):
                rid = al_t[s, a]
                m = al_k[s, a]
                ti[rid, T_PREF] += m
                buf[ti[rid, T_LAB]] -= m
                tokens += m
                if emit and ti[rid, T_PREF] >= ti[rid, T_P] and ti[rid, T_DEC] == 0 and ti[rid, T_D] > 0:
                    ti[rid, T_DEC] = 1  # the prefill gives the first token
                    buf[ti[rid, T_LAB]] -= 1
                    tokens += 1
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
        if st[s, S_GEN]:
            st[s, S_NT] -= nd
            g[G_RI] = -1
            if nd == 0:  # nothing finished: _move_on's effect without the call (a call of 30 arrays costs more than
                st[s, S_BUSY] = 0  # such a batch's own work: FasterTransformer's stations 0.8x per batch)
                i = 0
            else:
                i = _move_on(s, nd, t, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf,
                             buf, seen, u, blk, lb, cls_i, done, hrec, pq, jf)
            if i < nd:
                g[G_PHASE] = 1
                g[G_RS] = s
                g[G_RI] = i
                g[G_RND] = nd
                gf[GF_RT] = t
                return 1
            if st[s, S_BUSY] == 0:
                if st[s, S_MEM]:
                    _mem_start(s, t, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk, buf, pq)
                else:
                    _batch_start(s, t, tau, st, stf, ti, qh, fR, al_t, al_k, evf, evi, g, gf, blk)
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
        last = st[s, S_DLAST]
        while nh > 0 and fF[s, 0] <= G:  # the decoders finishing by round G, in (round, rid) order
            rid = fR[s, 0]
            c = ti[rid, T_NXT]
            if c:  # the decoder it covered takes its place in the heap
                _freplace(fF, fR, s, nh, ti[c, T_PRV], c)
            else:
                nh = _fpop(fF, fR, s, nh)
            if rid == last:
                last = 0
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
                    f = G + od
                    ti[rid, T_PRV] = f
                    ti[rid, T_NXT] = 0
                    if last and (ti[last, T_PRV] < f or (ti[last, T_PRV] == f and last < rid)):
                        ti[last, T_NXT] = rid  # covered: no heap entry until ``last`` finishes
                    else:
                        nh = _fpush(fF, fR, s, nh, f, rid)
                    last = rid
                    dlab[s, ti[rid, T_LAB]] += 1
                    st[s, S_NDEC] += 1
                else:
                    st[s, S_NT] -= 1
                    done[nd] = rid
                    nd += 1
        st[s, S_NH] = nh
        st[s, S_DLAST] = last
        if nd:
            g[G_RI] = -1
            i = _move_on_inline(s, nd, t, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g,
                                gf, buf, seen, u, blk, lb, cls_i, done, hrec, pq, jf)
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
                icls, uniforms, grid, *, horizon, max_batches, record_hops, n_tasks, n_sources=0, refill=None, mem=None,
                memf=None, sub=None, subp=None, n_jobs=0, n_forks=0, asker=None):
    """Allocate the state, run :func:`initial` and :func:`simulate` and return a dict of the results (see
    :mod:`fluidq.sim.network` for their meaning).

    ``mem`` (int, one row per station, the columns of :data:`S_MEMORY`) and ``memf`` (float: seconds per KV token
    of a context-aware batch time, seconds per token swapped) describe the stations' KV caches (``None``: none);
    a station with one must be run batch by batch (its ``S_GEN`` option 1) with one rank; a station without one
    reads its ``S_EMIT`` and context-aware seconds per KV token there too (batch by batch).

    ``uniforms`` (``None`` where no random router or choice draws one) gives the routers' and choices' uniforms
    from the caller's generator in the Python path's order: ``block()`` draws the next ones (at most :data:`UB`,
    as many as it chooses; the loop asks for a block when one is used up, the first one too), ``rewind(used)`` puts the generator
    right after the first ``used`` of the current block (before a random length's draws, and at the end).

    ``sub`` (int) and ``subp`` (float) list the choices' options (first step, probability) and the forks' branches
    (first step) the step rows of ``hop`` point to; ``n_jobs`` requests enter in all, with ``n_forks`` forks at
    most on one route.

    The first call in a process compiles the loop (or loads it from numba's cache); if that takes more than
    :data:`fluidq.kernel.run.NOTE_AFTER_S` seconds a one-line note says so on stderr.

    ``asker`` (:class:`fluidq.kernel.network_select.Asker`, or ``None``): the stations whose policies are asked in
    Python (``asker.stations``; batch by batch); its ``bind(...)`` gets the state's arrays before the run, and a
    call ``asker(final)`` makes the asks of an event (``final``: those of the last event, after the loop stopped;
    their answers start nothing).
    """
    global _compiled_once
    if not _compiled_once and _jit.compiled():
        from .run import compile_note

        _compiled_once = True
        with compile_note("the network simulation kernel"):
            return run_network(ext_t, ext_c, cls_first, hop, rt, rp, stl, tau, budget, nrank, options, n_cls, n_lab,
                               seen, ihop, icls, uniforms, grid, horizon=horizon, max_batches=max_batches,
                               record_hops=record_hops, n_tasks=n_tasks, n_sources=n_sources, refill=refill,
                               mem=mem, memf=memf, sub=sub, subp=subp, n_jobs=n_jobs, n_forks=n_forks, asker=asker)
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
    if asker is not None:
        st[list(asker.stations), S_ASK] = 1
    stf = np.zeros((n_st, N_R), f64)
    any_mem = mem is not None and bool(np.any(mem[:, 0]))
    qrows = 0
    if mem is not None:  # (a station without a KV cache reads S_EMIT and R_KS too)
        for j, col in enumerate(S_MEMORY):
            st[:, col] = mem[:, j]
        stf[:, R_KS] = memf[:, 0]
        stf[:, R_SWAPS] = memf[:, 1]
    if any_mem:
        for s in range(n_st):
            if st[s, S_MEM]:
                total = st[s, S_KVCAP] // st[s, S_BS]
                st[s, S_TOTAL] = total
                st[s, S_FREE] = total
                st[s, S_FRESH] = total
                if st[s, S_CACHING]:  # (the entries not taken back are free blocks: at most total)
                    st[s, S_QOFF] = qrows
                    st[s, S_QCAP] = 2 * total + 2
                    qrows += 2 * total + 2
    pq = np.zeros((max(qrows, 1), 4), i64)
    ti = np.zeros((n_tasks + 1, N_TM if any_mem else N_T), i64)
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
    gf = np.zeros(N_GF + n_cls, f64)  # (then the sums of sojourns, per class)
    gf[GF_CURSTART] = -INF
    gf[GF_NEXTREC] = grid[0] if grid.size else INF
    gf[GF_HORIZON] = horizon
    gf[GF_TA] = ext_t[0]
    cls_i = np.zeros((n_cls, 2), i64)
    buf = np.zeros(n_lab, i64)
    done = np.zeros(3 * maxb + 8, i64)
    nh = n_tasks + 1 if record_hops else 1
    hrec = np.zeros((nh, 4), f64)  # station, arrival at it, end of the hop, preemptions
    ng = grid.shape[0]
    rin, rbuf = np.zeros((ng, n_cls), i64), np.zeros((ng, n_lab), i64)
    rwk, rnt = np.zeros((ng, n_st), i64), np.zeros((ng, n_st), i64)
    lb = np.zeros((max(n_sources, 1), 2 * LBN + 2), i64)  # random lengths (empty: the first use asks for draws)
    nsub = 0 if sub is None else len(sub)
    hop = np.concatenate([hop, np.zeros((4, hop.shape[1]), i64)])  # (room for the stack: a step of each row, and 4)
    hop[:nsub, H_SUB] = sub[:nsub] if nsub else hop[:0, H_SUB]
    u = np.zeros(nsub + (UB if uniforms is not None else 1), f64)  # the choices' probabilities, then the uniforms
    u[:nsub] = subp[:nsub] if nsub else u[:0]
    g[G_U] = g[G_U0] = g[G_UEND] = nsub

    def next_block():  # (at most UB uniforms, as many as the caller draws)
        x = uniforms.block()
        u[nsub:nsub + x.size] = x
        g[G_U] = g[G_U0] = nsub
        g[G_UEND] = nsub + x.size

    jf = np.zeros((n_jobs + 1, n_forks) if n_forks else (1, 1), i64)  # the forks' counters, per request

    def fill():
        src = int(g[G_NEED])
        used = int(g[G_U] - g[G_U0])
        if src == UNIFORMS:  # the block is used up: the generator stands right after it
            next_block()
            return
        if uniforms is not None:  # the lengths are drawn after the uniforms used so far (the next block: when the
            uniforms.rewind(used)  # loop needs a uniform)
            g[G_U] = g[G_U0] = g[G_UEND] = nsub
        left = lb[src, lb[src, LB_POS]:lb[src, LB_END]].copy()
        lb[src, :left.size] = left
        lb[src, left.size:left.size + LBN] = refill(src)
        lb[src, LB_POS] = 0
        lb[src, LB_END] = left.size + LBN

    if asker is not None:
        def grow(n):  # room in the batch arrays for a batch of n entries (over the budgets, the check off)
            nonlocal al_t, al_k, fR, done
            w = max(2 * al_t.shape[1], n + 1)
            al_t, al_k, fR = (np.concatenate([x, np.zeros((n_st, w + 1 - x.shape[1]), i64)], axis=1)
                              for x in (al_t, al_k, fR))
            done = np.zeros(max(done.shape[0], 2 * w + 8), i64)
            asker.bind(g=g, st=st, stf=stf, ti=ti, tf=tf, al_t=al_t, al_k=al_k, fR=fR, blk=blk, buf=buf, qh=qh, pq=pq,
                       done_n=done.shape[0])

        asker.grow = grow
        asker.bind(g=g, st=st, stf=stf, ti=ti, tf=tf, al_t=al_t, al_k=al_k, fR=fR, blk=blk, buf=buf, qh=qh, pq=pq,
                   done_n=done.shape[0])
    i = 0
    while i < ihop.size or g[G_ASKED] != 0:
        i = initial(i, ihop, icls, hop, rt, rp, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k, evf, evi, g, gf, buf,
                    seen, u, blk, lb, cls_i, pq)
        if i < ihop.size:
            if g[G_NEED] == ASK_NOW:  # (the initial requests' asks so far, made before a JSQ router reads)
                g[G_NEED] = 0
                asker(False)
            else:
                fill()
    while True:
        status = simulate(ext_t, ext_c, cls_first, hop, rt, rp, stl, tau, st, stf, ti, tf, qh, fF, fR, al_t, al_k,
                          dlab, evf, evi, g, gf, cls_i, buf, seen, u, blk, lb, done, hrec, grid, rin, rbuf, rwk,
                          rnt, pq, jf)
        if status == 0:
            break
        if status == STATUS_ASK:
            asker(False)
        elif g[G_NEED] == ASK_NOW:  # (the asks of the event so far, before a JSQ router by tokens reads them)
            g[G_NEED] = 0
            asker(False)
        else:
            fill()
    if g[G_NASK] != 0:  # (the loop stopped at max_batches: the last event's asks are made, as the Python path's)
        t_stop = float(max(stf[s, R_AT] for s in range(n_st) if st[s, S_ASKP] > 0))
        asker(True)
        # the grid points past the last event were recorded before those asks, but a KV station's memory pass
        # (a recomputation's tokens back in its work and buffer, a prefix hit taken off) changed the state they
        # show: the Python clock records them after its last batch starts, so they are recorded again
        g[G_GI] = int(np.searchsorted(grid, t_stop, side="right"))
        _record(horizon, grid, rin, rbuf, rwk, rnt, st, stf, ti, stl, al_t, al_k, dlab, g, gf, cls_i, buf)
    if asker is not None and (max_batches is None or int(g[G_NB]) < max_batches):
        asker.stalled()  # (a user policy's empty answer with work left that no later hop changed: PolicyError)
    if uniforms is not None:  # the generator left right after the last uniform used
        uniforms.rewind(int(g[G_U] - g[G_U0]))
    nhop = int(g[G_NHOP])
    return {"in_system": rin, "buffer_tokens": rbuf, "station_tokens": rwk, "station_requests": rnt,
            "completed": cls_i[:, 1].copy(), "sojourn_sum": gf[GF_SOJ:].copy(), "batches": int(g[G_NB]),
            "events": int(g[G_EV]),
            "seen": seen, "blocked": blk,
            "hops": (hrec[:nhop, 0].astype(i64), hrec[:nhop, 1].copy(), hrec[:nhop, 2].copy(),
                     hrec[:nhop, 3].astype(i64)) if record_hops else None,
            "preemptions": st[:, S_PREEMPT].copy(), "rejected": st[:, S_REJECTED].copy()}
