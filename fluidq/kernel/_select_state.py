"""The state of the ``select()`` loop on the kernel's arrays: the slots of its flat arrays, and the statuses and
phases by which the compiled phases (:mod:`fluidq.kernel._select_phases`) and the Python driver
(:func:`fluidq.kernel.select.run_select`) hand the run to each other.  Numbers only: numba reads them as constants
when it compiles the phases, the driver and the checks in Python (:mod:`fluidq.kernel._select_checks`) index the
same arrays by them.

* ``si`` (int64): the integer state -- the phase ``si[S_PH]`` (``PH_*``), counts, budgets and switches; with a KV
  cache the memory's (``S_MEM`` to ``S_NTQ``), with the paged rules the block pool's (``S_PAGED`` to
  ``S_CACHING``), async scheduling's and ``record_batches``' (``S_ASYNC`` to ``S_BREP``); ``N_SI`` slots;
* ``sf`` (float64): the clock and its sums (``F_*``, ``N_SF`` slots);
* ``ri`` (int64, a row per request, :mod:`fluidq.kernel.kv`'s names): ``R_PC`` the prompt, ``R_D`` the output,
  ``R_PF`` prefilled, ``R_DC`` decoded, ``R_ST`` the state (0 not arrived or rejected, 1 resident, 2 finished, 3
  swapped out, 4 finished but holding its slot and KV one batch longer: async scheduling), the compiled check's
  marks, KV held, tokens to recompute, preemptions, and under the paged rules blocks held, admission number and
  the prompt tokens ever computed (``N_RI`` columns);
* ``rf`` (float64, a row per request): first scheduled, prefill done, first token, finish (``R_FS``, ``R_PDN``,
  ``R_FTK``, ``R_FIN``; NaN until then).

``STATUS_*`` is what :func:`fluidq.kernel._select_phases._advance` returns: why it stopped, and so what the driver
does before it resumes (:mod:`fluidq.kernel.select`'s notes); ``PH_*`` is where it resumes (the phases:
:mod:`fluidq.kernel._select_phases`'s notes).  Moved out of select.py unchanged (branch h-selsplit, 2026-12-07);
every name here is still importable from :mod:`fluidq.kernel.select`.
"""

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
