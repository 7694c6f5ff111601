"""The ``select()`` loop on the kernel's state: user policies (and orderings the compiled loops do not cover) asked in
Python, everything else advanced by compiled code over flat arrays.

:func:`run_select` runs what :func:`fluidq.kernel.step.run_generic` (:class:`~fluidq.kernel.step.EngineRun`) runs
-- ``policy.select(view)`` at every iteration -- and returns the same dict, bit for bit (per-request times, backlog
series, iterations, busy time, records, ``examined``; ``tests/kernel/test_select_kernel.py`` holds the two equal on
random engines, workloads, user policies and the built-in non-FCFS orderings).  The state of the run is the
kernel's: flat arrays indexed by request with kv.py's names (``pc`` the prompt, ``pf`` prefilled, ``dc`` decoded,
``st`` 0 not arrived, 1 resident, 2 finished; ``fs``/``pdn``/``ftk``/``fin`` first scheduled, prefill done, first
token, finish), advanced by :func:`_advance` (compiled by :func:`fluidq.kernel._jit.jit`, cached; plain Python
without numba), which runs until the policy must be asked and stops with a status, as :mod:`fluidq.kernel.kv` stops
for progress and buffer growth:

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
  record buffer needs room, asked before the phase writes anything), ``STATUS_DONE``.

The phases (``si[S_PH]``) are EngineRun's halves: ``PH_BEGIN`` (the arrivals up to ``t`` with their backlog rows,
the row at ``t``, the horizon, the progress report), ``PH_IDLE`` (an empty engine jumps to its next arrival, else
ask), ``PH_FORM`` (the batch written: an empty one jumps to the next arrival; else the batch time -- ``t(b)``, a
context-aware ``t(b) + ks * kv`` over the decoders' contexts, or a composition's time, which the driver computes in
Python by the engine's ``composition_time`` on the request objects as EngineRun does -- the record row, then
EngineRun's ``finish``: the arrivals up to the batch's end, the prefill chunks, the first token from the prefill with
``emit_at_prefill``, the decode tokens, the finished requests released).

Covered (2026-12-07): engines without a KV cache (``kv_capacity_tokens=None``) with synchronous scheduling, any
policy or ordering, ``k_max``, context-aware batch times, ``emit_at_prefill``, composition batch times, records,
progress reports, ``check``.  Not covered, so :func:`fluidq.simulate` runs them on :class:`EngineRun` (the
reference): a KV cache (the token rules, the paged rules -- vLLM's --, recompute and swap, prefix caching), async
scheduling, ``initial`` residents, ``record_batches``.  The memory rules' re-asks (``StationMemory.form``'s passes)
and victim order (``_victim_order``, ``may_evict``) would be further statuses of this loop; they are not written
yet.  The built-in FCFS schedulers keep running on :mod:`fluidq.kernel.fcfs` / :mod:`fluidq.kernel.kv`.

A batch that breaks the constraints under ``check=False`` (which EngineRun runs as given, on garbage) raises
:class:`PolicyError` here too: the arrays cannot hold a request that is not resident.
"""
# ruff: noqa: PLR0912, PLR0913, PLR0915, N806
from __future__ import annotations

import math
from collections import deque
from itertools import repeat

import numpy as np

from ..policies.base import QueueView, RequestState, batch_violations
from ._jit import jit
from .step import PolicyError

__all__ = ["STATUS_ASK", "STATUS_BAD", "STATUS_DONE", "STATUS_GROW", "STATUS_PROGRESS", "run_select"]

STATUS_DONE, STATUS_PROGRESS, STATUS_GROW, STATUS_ASK, STATUS_BAD = 0, 1, 2, 3, 4
# phases: a batch's start (arrivals, backlog row, horizon, progress), the idle test, the batch written, over
PH_BEGIN, PH_IDLE, PH_FORM, PH_OVER = 0, 1, 2, 3

# si (int64): the integer state
(S_PH, S_N, S_N0, S_NA, S_NRES, S_WORK, S_NITER, S_MIXED, S_TOK, S_NB, S_NR, S_NP, S_ND, S_BMAX, S_KMAX, S_SKIPCHK,
 S_EMIT, S_RECORD, S_PROG, S_COMPOSE, S_DEM, S_NFIN, S_NCG, S_STAMP, S_NEED, S_NEEDR, S_KVR, S_CTX) = range(28)
N_SI = 28
# sf (float64): the clock and its sums
F_T, F_T0, F_H, F_BUSY, F_KS, F_NEXT, F_TAU = range(7)
N_SF = 7
# ri (int64, per request): prompt, output, prefilled, decoded, state, the check's marks and sum
R_PC, R_D, R_PF, R_DC, R_ST, R_MP, R_MD, R_ACC = range(8)
N_RI = 8
# rf (float64, per request): first scheduled, prefill done, first token, finish
R_FS, R_PDN, R_FTK, R_FIN = range(4)


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
    while na < n and arr[na] <= upto:
        i = n0 + na
        ri[i, R_ST] = 1
        nres += 1
        work += ri[i, R_PC] + ri[i, R_D]
        dem += _demand(ri, i)
        bt[nb] = arr[na]
        bnw[nb, 0] = nres
        bnw[nb, 1] = work
        nb += 1
        na += 1
    si[S_NA], si[S_NB], si[S_NRES], si[S_WORK], si[S_DEM] = na, nb, nres, work, dem


@jit(inline="always")
def _bad(si, ri, bp, npf, bd, nd, ntab):
    """Whether the batch breaks what :func:`~fluidq.policies.base.batch_violations` checks (or would index past the
    batch-time table): a filter that flags every batch it would flag; it marks ``ri[:, R_MP/R_MD]``."""
    N = ri.shape[0]
    s = si[S_STAMP] + 1
    si[S_STAMP] = s
    tokens = 0
    nreq = 0
    for j in range(npf):
        rid, m = bp[j, 0], bp[j, 1]
        if rid < 0 or rid >= N or ri[rid, R_ST] != 1 or m < 1:
            return True
        if ri[rid, R_MP] != s:
            ri[rid, R_MP] = s
            ri[rid, R_ACC] = 0
            nreq += 1
        ri[rid, R_ACC] += m
        if ri[rid, R_ACC] > ri[rid, R_PC] - ri[rid, R_PF]:
            return True
        tokens += m
    for j in range(nd):
        rid = bd[j]
        if rid < 0 or rid >= N or ri[rid, R_ST] != 1 or ri[rid, R_PF] < ri[rid, R_PC] or ri[rid, R_DC] >= ri[rid, R_D]:
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


@jit
def _advance(si, sf, arr, ri, rf, bp, bd, tau_b, bt, bnw, rci, rcf, fo, cg, cgf):
    """Run the engine until the policy must be asked (``STATUS_ASK``) or another status (see the module notes)."""
    n = si[S_N]
    h = sf[F_H]
    while True:
        ph = si[S_PH]
        if ph == PH_BEGIN:  # EngineRun.begin up to the idle test
            need = si[S_NB] + (n - si[S_NA]) + 2
            if need > bt.shape[0]:
                si[S_NEED] = need
                return STATUS_GROW
            t = sf[F_T]
            _admit(si, arr, ri, bt, bnw, t)
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
            if si[S_NRES] == 0:  # an idle engine jumps to its next arrival
                na = si[S_NA]
                if na >= n:
                    si[S_PH] = PH_OVER
                    return STATUS_DONE
                t = sf[F_T]
                a = arr[na]
                x = h if h <= a else a
                sf[F_T] = x if x > t else t
                si[S_PH] = PH_BEGIN
                continue
            si[S_PH] = PH_FORM
            return STATUS_ASK
        elif ph == PH_FORM:  # the batch is in bp[:S_NP], bd[:S_ND]
            record = si[S_RECORD] != 0
            need = si[S_NB] + (n - si[S_NA]) + 2
            if need > bt.shape[0]:
                si[S_NEED] = need
                return STATUS_GROW
            if record and si[S_NR] + 1 > rcf.shape[0]:
                si[S_NEEDR] = si[S_NR] + 1
                return STATUS_GROW
            npf, nd = si[S_NP], si[S_ND]
            if si[S_SKIPCHK] == 0 and _bad(si, ri, bp, npf, bd, nd, tau_b.shape[0]):
                return STATUS_BAD
            si[S_SKIPCHK] = 0
            t = sf[F_T]
            if npf == 0 and nd == 0:  # nothing to run: the engine waits for the next arrival
                na = si[S_NA]
                if na >= n:
                    si[S_PH] = PH_OVER
                    return STATUS_DONE
                a = arr[na]
                sf[F_T] = h if h <= a else a
                si[S_PH] = PH_BEGIN
                continue
            ptok = 0
            for j in range(npf):
                ptok += bp[j, 1]
            tokens = ptok + nd
            ks = sf[F_KS]
            emit = si[S_EMIT]
            if si[S_COMPOSE] != 0:  # the composition's time and the decoders' contexts, from the driver
                tau = sf[F_TAU]
                kvr = si[S_CTX]
            elif ks != 0.0:  # context-aware: the decoders' KV held
                kvr = 0
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
                rcf[r, 1] = tau + 0.0
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
                rci[r, 3] = si[S_DEM]
                if ks == 0.0 and si[S_COMPOSE] == 0:
                    kvr = 0
                    for j in range(nd):
                        kvr += ri[bd[j], R_PF] + ri[bd[j], R_DC]
                rci[r, 4] = kvr
                si[S_NR] = r + 1
            t0 = t
            t += tau
            sf[F_T] = t
            sf[F_T0] = t0
            si[S_NITER] += 1
            sf[F_BUSY] += tau + 0.0
            si[S_TOK] += tokens
            # EngineRun.finish: the arrivals up to the batch's end come first
            _admit(si, arr, ri, bt, bnw, t)
            work = si[S_WORK] - tokens
            if npf > 0 and nd > 0:
                si[S_MIXED] += 1
            dem = si[S_DEM]
            ncg = si[S_NCG]
            for j in range(npf):
                i, m = bp[j, 0], bp[j, 1]
                dem -= _demand(ri, i)
                x = rf[i, R_FS]
                if x != x:
                    rf[i, R_FS] = t0
                ri[i, R_PF] += m
                if ri[i, R_PF] >= ri[i, R_PC]:
                    x = rf[i, R_PDN]
                    if x != x:
                        rf[i, R_PDN] = t
                        if emit != 0 and ri[i, R_DC] == 0 and ri[i, R_D] > 0:  # the prefill gives the 1st token
                            ri[i, R_DC] = 1
                            rf[i, R_FTK] = t
                            work -= 1
                    elif emit != 0 and 0 < ri[i, R_DC] < ri[i, R_D]:
                        ri[i, R_DC] += 1
                        work -= 1
                    if ri[i, R_DC] >= ri[i, R_D]:
                        rf[i, R_FIN] = t
                dem += _demand(ri, i)
                cg[ncg, 0] = i
                cg[ncg, 1] = ri[i, R_PF]
                cg[ncg, 2] = ri[i, R_DC]
                cgf[ncg] = rf[i, R_FS]
                ncg += 1
            for j in range(nd):
                i = bd[j]
                dem -= _demand(ri, i)
                ri[i, R_DC] += 1
                if ri[i, R_DC] == 1:
                    rf[i, R_FTK] = t
                if ri[i, R_DC] >= ri[i, R_D]:
                    rf[i, R_FIN] = t
                dem += _demand(ri, i)
                cg[ncg, 0] = i
                cg[ncg, 1] = ri[i, R_PF]
                cg[ncg, 2] = ri[i, R_DC]
                cgf[ncg] = rf[i, R_FS]
                ncg += 1
            si[S_WORK] = work
            si[S_DEM] = dem
            si[S_NCG] = ncg
            # the finished requests leave (prompt done and every output token given)
            nfin = si[S_NFIN]
            for j in range(npf + nd):
                i = bp[j, 0] if j < npf else bd[j - npf]
                if ri[i, R_ST] == 1 and ri[i, R_PF] >= ri[i, R_PC] and ri[i, R_DC] >= ri[i, R_D]:
                    ri[i, R_ST] = 2
                    fo[nfin] = i
                    nfin += 1
            si[S_NRES] -= nfin - si[S_NFIN]
            si[S_NFIN] = nfin
            si[S_PH] = PH_BEGIN
        else:
            return STATUS_DONE


def _grow_rows(a, need):
    b = np.empty((max(need, 2 * a.shape[0]),) + a.shape[1:], dtype=a.dtype)
    b[:a.shape[0]] = a
    return b


def covers(*, kv_cap=None, async_scheduling=False, initial=(), record_batches=False, window=False) -> bool:
    """Whether :func:`run_select` runs this :func:`~fluidq.kernel.step.run_generic` call (see the module notes)."""
    return kv_cap is None and not async_scheduling and not initial and not record_batches and not window


def run_select(arr, P, D, *, policy, b_max, k_max, tau_b, ks, horizon, record, check, compose=None,
               emit_at_prefill=False, progress=None) -> dict:
    """Simulate as :func:`fluidq.kernel.step.run_generic` does (the cases :func:`covers` says), on the kernel's
    arrays; return the same dict (numpy arrays where it has lists)."""
    arr = np.ascontiguousarray(arr, dtype=float)
    P = np.ascontiguousarray(P, dtype=np.int64)
    D = np.ascontiguousarray(D, dtype=np.int64)
    n = len(arr)
    N = n
    ri = np.zeros((N, N_RI), dtype=np.int64)
    ri[:, R_PC] = P
    ri[:, R_D] = D
    rf = np.full((N, 4), math.nan)
    tau = np.ascontiguousarray(tau_b, dtype=float)
    si = np.zeros(N_SI, dtype=np.int64)
    sf = np.zeros(N_SF)
    si[S_N] = n
    si[S_BMAX] = b_max
    si[S_KMAX] = -1 if k_max is None else k_max
    si[S_EMIT] = int(bool(emit_at_prefill))
    si[S_RECORD] = int(bool(record))
    si[S_PROG] = int(progress is not None)
    si[S_COMPOSE] = int(compose is not None)
    sf[F_H] = horizon
    sf[F_KS] = ks
    cap = 64
    bp = np.zeros((cap, 2), dtype=np.int64)
    bd = np.zeros(cap, dtype=np.int64)
    fo = np.zeros(2 * cap, dtype=np.int64)
    cg = np.zeros((2 * cap, 3), dtype=np.int64)
    cgf = np.zeros(2 * cap)
    bt = np.zeros(N + 1024)
    bnw = np.zeros((N + 1024, 2), dtype=np.int64)
    rci = np.zeros((1024 if record else 0, 5), dtype=np.int64)
    rcf = np.zeros((1024 if record else 0, 2))
    arr_l, P_l, D_l = arr.tolist(), P.tolist(), D.tolist()
    objs: dict = {}  # the residents' RequestState objects, in arrival order
    blocked: set = set()
    examined = 0
    select = policy.select
    a_seen = 0  # arrivals made into objects so far
    last = None  # the last batch (for the error message's view)
    name = getattr(policy, "name", policy)
    npf = 0  # prefill chunks in the last batch
    ol = [None] * N  # every request's object by id (the residents' are objs's)
    get = ol.__getitem__
    consume = deque(maxlen=0).extend
    pre_ids = dec = ()
    while True:
        status = _advance(si, sf, arr, ri, rf, bp, bd, tau, bt, bnw, rci, rcf, fo, cg, cgf)
        if status == STATUS_ASK:
            # bring the objects up to date: the last batch's requests, the arrivals, the finished
            k = int(si[S_NCG])
            if k:  # the last batch's prefill chunks' requests (cg[:npf]) and decoders' (cg[npf:k], decoded alone)
                if npf:
                    for r, p, d, f in zip(map(get, pre_ids), cg[:npf, 1].tolist(), cg[:npf, 2].tolist(),
                                          cgf[:npf].tolist()):
                        r.prefilled = p
                        r.decoded = d
                        r.first_scheduled_s = f
                if k > npf:
                    consume(map(setattr, map(get, dec), repeat("decoded"), cg[npf:k, 2].tolist()))
                si[S_NCG] = 0
            na = int(si[S_NA])
            while a_seen < na:
                i = a_seen
                objs[i] = ol[i] = RequestState(rid=i, arrival_s=arr_l[i], prompt_tokens=P_l[i],
                                               output_tokens=D_l[i])
                a_seen += 1
            k = int(si[S_NFIN])
            if k:
                for rid in fo[:k].tolist():
                    del objs[rid]
                si[S_NFIN] = 0
            t = float(sf[F_T])
            reqs = tuple(objs.values())
            view = QueueView(requests=reqs, now_s=t, b_max=b_max, k_max=k_max, kv_free_tokens=None)
            examined += len(reqs)
            batch = select(view)
            last = (batch, view)
            pre, dec = batch.prefill, batch.decode
            npf, nd = len(pre), len(dec)
            pre_ids = [rid for rid, _ in pre]
            if npf > bp.shape[0] or nd > bd.shape[0]:
                c = max(npf, nd, 2 * bp.shape[0])
                bp = np.zeros((c, 2), dtype=np.int64)
                bd = np.zeros(c, dtype=np.int64)
                fo = np.zeros(2 * c, dtype=np.int64)
                cg = np.zeros((2 * c, 3), dtype=np.int64)
                cgf = np.zeros(2 * c)
            try:
                if npf:
                    bp[:npf] = pre
                if nd:
                    bd[:nd] = dec
            except (TypeError, ValueError, OverflowError):  # not integers: the constraints say what is wrong
                _raise(name, t, batch, view)
            si[S_NP], si[S_ND] = npf, nd
            if batch.blocked:
                blocked.update(batch.blocked)
            if compose is not None and (npf or nd):
                ctxs = [objs[rid].prefilled + objs[rid].decoded - emit_at_prefill for rid in dec] \
                    if _residents(objs, batch) else None
                if ctxs is None:  # a request not resident: the kernel's check reports it
                    si[S_CTX] = 0
                    sf[F_TAU] = math.nan
                else:
                    sf[F_TAU] = compose([(m, objs[rid].prefilled) for rid, m in pre], ctxs)
                    si[S_CTX] = sum(ctxs)
        elif status == STATUS_BAD:
            batch, view = last
            _raise(name, float(sf[F_T]), batch, view)
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
            break
    nb, nr = int(si[S_NB]), int(si[S_NR])
    recs = None
    if record:
        recs = {"t_s": rcf[:nr, 0].copy(), "prefill_tokens": rci[:nr, 0].copy(), "decode_tokens": rci[:nr, 1].copy(),
                "requests": rci[:nr, 2].copy(), "batch_s": rcf[:nr, 1].copy(), "demand": rci[:nr, 3].copy(),
                "kv_tokens": rci[:nr, 4].copy()}
    return {"first_scheduled_s": rf[:, R_FS].copy(), "prefill_done_s": rf[:, R_PDN].copy(),
            "first_token_s": rf[:, R_FTK].copy(), "finish_s": rf[:, R_FIN].copy(),
            "backlog": (bt[:nb].copy(), bnw[:nb, 0].copy(), bnw[:nb, 1].copy()), "iterations": int(si[S_NITER]),
            "busy_s": float(sf[F_BUSY]), "mixed_iterations": int(si[S_MIXED]), "tokens_served": int(si[S_TOK]),
            "records": recs, "end_s": float(sf[F_T]), "n_blocked": len(blocked), "n_arrived": int(si[S_NA]),
            "preemptions_per_request": np.zeros(N, dtype=np.int64), "preemptions": 0, "wasted_tokens": 0,
            "swap_tokens": 0, "rejected": 0, "peak_kv_tokens": 0, "batches": None, "examined": examined}


def _residents(objs, batch) -> bool:
    return all(rid in objs for rid, _ in batch.prefill) and all(rid in objs for rid in batch.decode)


def _raise(name, t, batch, view):
    """EngineRun's :class:`PolicyError` for a batch the kernel's check flagged (``batch_violations`` decides)."""
    bad = batch_violations(batch, view)
    if not bad:  # pragma: no cover - the kernel's check flags only what batch_violations flags
        raise RuntimeError(f"fluidq select kernel: a batch at t={t:.6g} flagged but within the constraints")
    raise PolicyError(f"policy {name!r} at t={t:.6g} s: {bad[0]}")
