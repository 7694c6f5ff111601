"""The FCFS kernel with a KV-cache memory model, in array style: compiled by numba, or run as the same Python.

It runs what :func:`fluidq.kernel.step.run_generic` runs for a built-in
:class:`~fluidq.policies.Scheduler` under FCFS order on an engine with ``kv_capacity_tokens``, and gives
the same results (per-request times, preemptions, iterations, backlog and records; the tests hold the
two equal on random engines, memories, schedulers and workloads), for:

* the default token rules (``Memory()``: whole remaining prompt plus one token of headroom per
  admitted request, head-of-line admission, the policy asked again without new requests, the victim
  the latest arrival holding KV);
* the paged rules of any other :class:`~fluidq.engine.Memory` (blocks of
  ``block_size`` tokens, the running requests' blocks first, the victim most recently admitted or
  last in arrival order, nothing admitted in an iteration that preempted, then head-of-line admission by
  whole-prompt or incremental reservation) --
  vLLM's memory (:data:`fluidq.engine.VLLM`) among them;
* recompute preemption (the victim's KV is discarded; it prefills its prompt plus its generated
  tokens again) or swap preemption (its KV moves to the host and back, oldest first and before any
  admission, at ``swap_s_per_token`` per token added to the iteration), a first token emitted with the
  prefill, context-aware batch times, ``k_max``, the window of waiting requests the generic path shows
  the policy, and the recording grid.

* prefix caching (a re-admitted victim takes back its own leading blocks still cached; freed blocks are
  handed out least recently freed first, a request's tail first).

* a batch time read from the batch's composition (the operator-profile iteration model of
  :class:`~fluidq.batchtime.composition.Composition`, evaluated from its ``kernel_table()`` by
  :func:`fluidq.kernel.compose.chunks_s`: the prefill chunks with the KV each holds, the decoders' KV), and vLLM's
  async scheduling as :class:`fluidq.kernel.step.EngineRun` models it (each batch sees the arrivals up to the start
  of the batch before, ``F_TSEEN``; the requests finished in a batch keep their ``k_max`` slots and KV through the
  next one, ``lg[:nlg]``, released at its end, at an empty batch, or when they hold every slot; they are never
  preemption victims, as in :mod:`fluidq.kernel.memory`).

A lazily tabulated batch time (a budget above ``fluidq.sim.core.EAGER_TAU_TOKENS``) is tabulated by the caller up to
the run's largest possible batch (``fluidq.sim.core._kernel_tau_table``) before this kernel runs; since branch
h-route15 (2026-12-07) no budget sends a run with memory to the Python path.

The kernel is four modules: this one, the driver (:func:`step`: it calls the compiled loop, grows its
buffers and stops for progress reports) and the re-export of every name below; :mod:`fluidq.kernel._kv_loop`,
the compiled loop (``_advance``: how it is compiled apart for vLLM's rules and for composition batch times,
the memory rules it calls, the decoders' virtual clock, the passes of a batch); :mod:`fluidq.kernel._kv_parts`,
the loop's inlined parts (arrivals, the resident lists, the block pool, FCFS ``select``, the decoders' heap);
:mod:`fluidq.kernel._kv_layout`, the state layout (the slots of ``cfg``, ``si``, ``sf``, the records and the
lists).  :func:`fluidq.kernel.run.run_fcfs_kv` builds the arrays and reads the results.

:func:`step` runs until the end or until the caller should report progress (``STATUS_PROGRESS``);
growing buffers are returned.
"""
# ruff: noqa: PLR0913, F401
from __future__ import annotations

import numpy as np

# re-exported (F401): the state layout (the driver, run.py, and the tests read it as kv.<NAME>) and the loop's
# parts (the tests call kv._ins, kv._rem)
from ._kv_layout import (STATUS_DONE, STATUS_PROGRESS, STATUS_GROW, C_BMAX, C_KCAP, C_MIXED,
                         C_CHUNKED, C_CHUNK_LONG, C_PREFILL_FIRST, C_RECORD, C_REPORT, C_PAGED, C_BS, C_WHOLE,
                         C_MOST_RECENT, C_EMIT, C_KVCAP, C_WSIZE, C_NEVER, C_SWAP, C_CACHING, C_MAXBLK, C_COMPOSE,
                         C_ASYNC, C_KENG, C_BSH, N_CFG, I_NA, I_NSYS, I_WORK, I_SPARE, I_PH, I_PT, I_NFRESH,
                         I_NPARKED, I_HIDDEN, I_USED, I_FREE, I_NADM, I_ADMSEQ, I_NB, I_NR, I_NITER, I_MIXED, I_TOKS,
                         I_RESUME, I_PREEMPT, I_WASTED, I_REJECTED, I_PEAK, I_NBLOCKED, I_EXAMINED, I_KVDEC, I_SDEC,
                         I_G, I_NSTK, I_NH, I_NFR, I_SWT, I_SH, I_NSW, I_NEED_B, I_NEED_H, I_NEED_R, I_NEED_Q, I_NCOV,
                         I_NLG, I_NOWALK, I_NMOVE, N_SI, F_T, F_BUSY, F_NEXT, F_TSEEN, N_SF, R_T, R_B, R_X, R_S, R_Q,
                         R_D, R_K, R_U, R_RES, R_WAIT, R_USE, N_RI, SLACK, L_D, L_P, L_F, LP_MOVES, N_LP)
from ._kv_loop import _advance
from ._kv_parts import (_alloc, _arrive, _compact, _demand, _fill_bd, _ins, _join, _let_go,
                        _release, _rem, _reuse, _select, _take_one, _uncover_next)

__all__ = ["N_RI", "N_SI", "STATUS_DONE", "STATUS_PROGRESS", "step"]


def _grow1(a, need):
    """``a`` copied into an array of the same type with at least ``need`` slots, doubling."""
    m = len(a) * 2 + 16
    while m < need:
        m *= 2
    b = np.empty(m, a.dtype)
    b[:len(a)] = a
    return b


def _grow2(a, need):
    """``a`` (rows x columns) copied into one with at least ``need`` rows, doubling."""
    m = a.shape[0] * 2 + 16
    while m < need:
        m *= 2
    b = np.empty((m, a.shape[1]), a.dtype)
    b[:a.shape[0]] = a
    return b


def step(arr, P, D, tau, cfg, cf, si, sf, pc, rc, pf, dc, kv, nbk, adm, npre, hwm, isbl, st, fs, pdn, ftk, fin,
         dl, pl, ql, pos_d, pos_p, lp, pend, bpr, bpm, bd, bl, run, fl, sr, sq, gb, cv, cnt, fr, swq, shl, stamp, cup,
         qpos, qn, qs, ct, lg, mode, feat, qe, hf, hr, bt, bn, bw, RF, RI):
    """Advance the simulation (see the module docstring); return (status, the growing buffers).

    :func:`_advance` runs the simulation without numba's reference counting (which, over some sixty
    arrays, cost about a third of its time) and so allocates nothing: when a buffer lacks room it stops at
    the top of an iteration, and this function grows the buffer and calls it again.

    This function is plain Python (a few calls per run: the buffers double): compiled, it carried its own copy
    of ``_advance``, which numba links into the caller's module and LLVM optimizes a second time there, and that
    copy is what a process loading the cache runs, while the compiling process runs ``_advance``'s own.  The two
    differed by up to 1.4x in speed, in either direction as the loop changed (vLLM, binding cache, 1.2 lambda*,
    2026-12-07, benchmarks/README.md); called from here, every process runs the one copy."""
    while True:
        status = _advance(arr, P, D, tau, cfg, cf, si, sf, pc, rc, pf, dc, kv, nbk, adm, npre, hwm, isbl, st, fs, pdn,
                          ftk, fin, dl, pl, ql, pos_d, pos_p, lp, pend, bpr, bpm, bd, bl, run, fl, sr, sq, gb, cv, cnt,
                          fr, swq, shl, stamp, cup, qpos, qn, qs, ct, lg, mode, feat, qe, hf, hr, bt, bn, bw, RF, RI)
        if status != STATUS_GROW:
            return status, qe, hf, hr, bt, bn, bw, RF, RI
        need = int(si[I_NEED_B])
        if len(bt) < need:
            bt = _grow1(bt, need)
            bn = _grow1(bn, need)
            bw = _grow1(bw, need)
        need = int(si[I_NEED_H])
        if len(hf) < need:
            hf = _grow1(hf, need)
            hr = _grow1(hr, need)
        need = int(si[I_NEED_R])
        if RF.shape[0] < need:
            RF = _grow2(RF, need)
            RI = _grow2(RI, need)
        need = int(si[I_NEED_Q])
        if qe.shape[0] < need:
            qe = _grow2(qe, need)
