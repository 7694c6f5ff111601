"""The state layout of the compiled KV kernel (:mod:`fluidq.kernel.kv`): the slots of its integer, float and
option arrays, the record columns, the three resident lists' bookkeeping and the drift allowed before a list
moves to the front (``SLACK``).  Constants only; the driver (:func:`fluidq.kernel.kv.step`,
:func:`fluidq.kernel.run.run_fcfs_kv`) sizes and reads the arrays by them, the loop
(:mod:`fluidq.kernel._kv_loop`) and its inlined parts (:mod:`fluidq.kernel._kv_parts`) index them; numba
compiles their values in (a change here recompiles the kernel: :data:`fluidq.kernel._jit._STAMP_SOURCES`).

State, in flat arrays indexed by request (``pc`` the current prompt, i.e. the original one plus the
``rc`` tokens to recompute; ``pf`` prefilled, ``dc`` decoded, ``kv`` KV tokens held, ``nbk`` blocks
held or -1 when not admitted under paged rules, ``adm`` the admission sequence number, ``st`` 0
prefilling, 1 decoding, 2 finished, 3 swapped out), the residents in view as three lists in arrival
order (ascending request id; a removed entry is -1 until a compaction; ``lp`` holds each list's first
slot, end and live count): the decoders ``dl``, the prefilling requests that were served ``pl`` and
those never served ``ql``; and the FIFO of waiting requests not yet shown to the policy
``pend[ph:pt]``.  The lists, the FIFO and the admissions' stack are moved to the front of their arrays
before they drift far from it (``SLACK``), so a run touches a few kB of them, not request-sized arrays.
"""
from __future__ import annotations

STATUS_DONE, STATUS_PROGRESS = 0, 1
STATUS_GROW = 2  # (between _advance and step only) a buffer needs more room: the sizes are in si[I_NEED_*]

# cfg (int64): the scheduler, the memory and run options
(C_BMAX, C_KCAP, C_MIXED, C_CHUNKED, C_CHUNK_LONG, C_PREFILL_FIRST, C_RECORD, C_REPORT, C_PAGED, C_BS, C_WHOLE,
 C_MOST_RECENT, C_EMIT, C_KVCAP, C_WSIZE, C_NEVER, C_SWAP, C_CACHING, C_MAXBLK) = range(19)
# the batch time from its composition (ct, fluidq.kernel.compose); async scheduling; the engine's k_max (-1: none)
C_COMPOSE, C_ASYNC, C_KENG = range(19, 22)
C_BSH = 22  # log2 of the block size when it is a power of two (vLLM's 16), else -1: the rules' bsh (memory.cdiv)
N_CFG = 23
# si (int64): the integer state
(I_NA, I_NSYS, I_WORK, I_SPARE, I_PH, I_PT, I_NFRESH, I_NPARKED, I_HIDDEN, I_USED, I_FREE, I_NADM, I_ADMSEQ, I_NB,
 I_NR, I_NITER, I_MIXED, I_TOKS, I_RESUME, I_PREEMPT, I_WASTED, I_REJECTED, I_PEAK, I_NBLOCKED, I_EXAMINED, I_KVDEC,
 I_SDEC, I_G, I_NSTK, I_NH, I_NFR, I_SWT, I_SH, I_NSW, I_NEED_B, I_NEED_H, I_NEED_R, I_NEED_Q) = range(38)
I_NCOV = 38  # decoders that joined covered (no heap entry): a count for the tests, not a result
I_NLG = 39  # async scheduling: requests finished in the batch before, still holding their slots and KV (lg[:nlg])
I_NOWALK = 40  # passes that skipped the prefill walk (bound to preempt): a count for the tests, not a result
I_NMOVE = 41  # the waiting FIFO or the victims' stack moved to the front (see SLACK): a count for the tests
N_SI = 42
# sf (float64): the clock, busy time, next progress report; async scheduling: the arrivals the scheduler has
# seen, up to the start of the batch before (nan: up to now)
F_T, F_BUSY, F_NEXT, F_TSEEN = range(4)
N_SF = 4
# record columns: RF (float) t_s, batch_s; RI (int) the rest
R_T, R_B = range(2)
(R_X, R_S, R_Q, R_D, R_K, R_U, R_RES, R_WAIT, R_USE) = range(9)
N_RI = 9

# a list whose first slot lies more than its live entries plus SLACK from the front is moved to the front (O(live),
# after at least live + SLACK removals), and so is the FIFO of waiting requests and the victims' stack: the slots
# in use stay within a few kB instead of sweeping request-sized arrays (page faults and cache misses: ~5 % of a
# run with vLLM's binding cache, n = 200k, 2026-12-06).  Positions change, never the order: the same runs.
SLACK = 1024

# the ordered lists, each (first slot, end, live count) in lp: decoders (dl), prefilling residents that were
# served (pl: some prompt computed or held; preempted ones come back here) and those never served (ql, a FIFO).
# FCFS admission is head-of-line, so every request in pl is older than every one in ql: pl then ql is the
# arrival order of the prefilling residents.
L_D, L_P, L_F = 0, 3, 6
LP_MOVES = 9  # lp[9]: how many times a list was compacted (a count for the tests, not a result)
N_LP = 10
