"""The FCFS event-skipping kernel, in array style: compiled by numba, or run as the same Python.

It covers the built-in :class:`~fluidq.policies.Scheduler` (prefill or decode priority, mixed or
separate batches, chunked prefill or whole prompts, ``chunk_long_prompts``, the token budget and
``k_max``) under FCFS order, context-aware batch times and the per-iteration recording grid.

State, all in flat numpy arrays and integers (no Python objects, so numba compiles it):

* the prefill *stream*: queued request ids ``pq`` and cumulative prompt tokens ``cum``; the
  cursor ``pos`` (tokens served) decides every prompt's state, a bisection in ``cum`` finds a
  batch's prefill part;
* the decoders, in the order their prefills finished (= request order under FCFS): slot ``q``
  holds request ``dq[q]``.  The served set ``S`` (the ``nS`` oldest live decoders) is every live
  slot below the boundary ``bq``; it runs on a virtual clock of decode rounds ``G``.  ``val[q]`` is
  a served decoder's finishing round, a paused one's (at or above ``bq``) tokens left, -1 once it
  finished.  Growing ``S`` moves ``bq`` up (``val += G``), shrinking it down (``val -= G``): one
  contiguous slot each, no request-indexed look-up (the KV sum ``A`` is kept only when the batch
  time or the record reads it).  Prefill-first mixed batches (Orca) shrink ``S`` at every prefill
  event and grow it back at the next; slots ``fresh`` and above never joined ``S`` (their first
  token is the next iteration's);
* a binary heap (``hf``, ``hr``) of finishing rounds by slot gives the next completion.  A decoder
  has at most one heap entry (``hin`` 1), kept while it pauses: pausing only delays a finishing
  round, so the key stays a lower bound.  A stale key is corrected when it reaches the top
  (re-keyed in place if the decoder is served, dropped if it is paused; it is pushed again when it
  rejoins), so the top is always exact.  A decoder that joins ``S`` behind a live slot ``q - 1``
  finishing no later (``val[q - 1] <= f``) gets no entry (``hin`` 2, *covered*): ``q - 1`` is served
  whenever ``q`` is, so it stays ahead and its entry (or its own cover's) bounds ``q``'s round.  When
  ``q - 1`` finishes, ``q`` gets its entry (or, paused, gets it when it rejoins).  Equal output
  lengths (Theorem 2's workload) leave one entry in the heap, under any scheduler, where Orca's
  pauses used to keep hundreds of stale ones (re-keyed or dropped at the top, 1.9 sift-downs per
  request besides the finish at 1.2 lambda*).  The boundary loops index with :func:`_ix` (unsigned).

Between two events (an arrival, a prefill or request completing, the horizon) the batch does not
change, so a run of iterations is one step; the clock still adds one batch time per iteration, so
times are bit-identical with the generic kernel (``policy.select(view)`` each iteration).

:func:`step` runs until the end or until it needs Python: ``STATUS_PROGRESS`` (the caller reports
progress), ``STATUS_TAU`` (a batch time not tabulated yet: ``si[I_TAU]`` tokens); the caller fills
in what was asked and calls again with the same state.  Growing buffers are returned.

Open segments (``cfg[C_OPEN]``, without a record): the arrivals given are a prefix of the run's.  Before an
event whose admissions could reach past the last arrival given (at the loop's top, or after a run of
iterations ending at or after it: the run is then undone, it changed only scalars) the step returns
``STATUS_MORE``; the caller may renumber the requests (drop finished ones, see
:func:`fluidq.kernel.run.run_fcfs_segments`), append the next arrivals (or clear ``C_OPEN``) and call again,
which redoes the event with the same result as a run given every arrival at once.
"""
# ruff: noqa: PLR0912, PLR0915, PLR1730, N806
from __future__ import annotations

import numpy as np

from ..policies import batch_rule
from ._jit import jit

# the batch rule's integer core, written once in fluidq/policies/batch_rule.py and inlined here (numba's cache
# does not see edits there: clear it, or touch this file, after changing them)
_fits = jit(batch_rule.fits, inline="always")
_budget_split = jit(batch_rule.budget_split, inline="always")
_decode_after_prefill = jit(batch_rule.decode_after_prefill, inline="always")

__all__ = ["STATUS_DONE", "STATUS_MORE", "STATUS_PROGRESS", "STATUS_TAU", "step"]

STATUS_DONE, STATUS_PROGRESS, STATUS_TAU = 0, 1, 2
# (open segments, cfg[C_OPEN]) the arrivals given may not be all: the caller adds the next ones, then calls again
STATUS_MORE = 3
K_NONE = 1 << 62  # "no decode completion bounds this run"

# cfg (int64): the scheduler and run options
C_BMAX, C_KCAP, C_MIXED, C_CHUNKED, C_CHUNK_LONG, C_PREFILL_FIRST, C_RECORD, C_REPORT = range(8)
C_OPEN = 8  # more arrivals follow those given (a segmented run without a record; see run.run_fcfs_segments)
# si (int64): the integer state
(I_NA, I_NSYS, I_WORK, I_NPQ, I_PH, I_PSCAN, I_POS, I_TOT, I_BLOCKED_TOK, I_NBLOCKED, I_G, I_NS, I_A,
 I_NDEC, I_BQ, I_UT, I_FRESH, I_NH, I_NB, I_NR, I_NITER, I_MIXED, I_TOKS, I_RESUME, I_TAU) = range(25)
I_COVERED = 25  # decoders that joined S covered (no heap entry): a count, read by the tests only
N_SI = 26
# sf (float64): the clock, busy time, next progress report; cf: horizon, kv seconds per token
F_T, F_BUSY, F_NEXT = range(3)


def _grow_list(a, need):
    """Uncompiled: ``a`` (a list) extended to at least ``need`` slots, doubling."""
    n = len(a) * 2 + 16
    while n < need:
        n *= 2
    return a + [a[0] if a else 0] * (n - len(a))


@jit(python=_grow_list)
def _grow_f(a, need):
    """``a`` copied into a float array of at least ``need`` slots, doubling."""
    n = len(a) * 2 + 16
    while n < need:
        n *= 2
    b = np.empty(n, np.float64)
    b[:len(a)] = a
    return b


@jit(python=_grow_list)
def _grow_i(a, need):
    """``a`` copied into an integer array of at least ``need`` slots, doubling."""
    n = len(a) * 2 + 16
    while n < need:
        n *= 2
    b = np.empty(n, np.int64)
    b[:len(a)] = a
    return b


# The binary heap (_hpush, _hpop, _hrekey) of this loop and of kv.step, one copy: numba inlines it into
# kv.step's IR (a call there cost time: the sift-down was a fifth of kv's time); this loop calls it through
# the separately compiled _h*_call below (inlined here too, the Theorem-2 runs of bench_kernel took 4-5 %
# more CPU time, FasterTransformer's 32 %; 2026-12-06, shared machine).  No allocation: no reference counting.
# numba's cache tracks only the file of a cached function: after editing these, remove kv.step's cached code
# (fluidq/kernel/__pycache__/kv.step-*) or touch kv.py, or kv.step keeps the old heap.
@jit(inline="always", _nrt=False)
def _hpush(hf, hr, nh, f, r):
    """Push (f, r) onto the min-heap of the first ``nh`` slots (room is there); return the new size."""
    i = nh
    while i > 0:
        p = (i - 1) >> 1
        if hf[p] <= f:
            break
        hf[i] = hf[p]
        hr[i] = hr[p]
        i = p
    hf[i] = f
    hr[i] = r
    return nh + 1


@jit(inline="always", _nrt=False)
def _hpop(hf, hr, nh):
    """Drop the top of the heap of ``nh`` entries; return the new size (the last entry sifts down from
    the top)."""
    nh -= 1
    if nh > 0:
        _hrekey(hf, hr, nh, hf[nh], hr[nh])
    return nh


@jit(inline="always", _nrt=False)
def _hrekey(hf, hr, nh, f, r):
    """Give the top of the heap of ``nh`` entries the larger key ``f`` (for ``r``) and sift it down."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= nh:
            break
        if c + 1 < nh and hf[c + 1] < hf[c]:
            c += 1
        if hf[c] >= f:
            break
        hf[i] = hf[c]
        hr[i] = hr[c]
        i = c
    hf[i] = f
    hr[i] = r


@jit(_nrt=False)
def _hpush_call(hf, hr, nh, f, r):
    """:func:`_hpush`, as a call (this loop's)."""
    return _hpush(hf, hr, nh, f, r)


@jit(_nrt=False)
def _hpop_call(hf, hr, nh):
    """:func:`_hpop`, as a call (this loop's)."""
    return _hpop(hf, hr, nh)


@jit(_nrt=False)
def _hrekey_call(hf, hr, nh, f, r):
    """:func:`_hrekey`, as a call (this loop's)."""
    _hrekey(hf, hr, nh, f, r)


def _ix_py(q):
    return q


@jit(inline="always", python=_ix_py)
def _ix(q):
    """``q`` as an unsigned index: numba then skips the negative-index wrap-around (``q >= 0`` here)."""
    return np.uint64(q)


@jit
def _bisect_left(a, x, lo, hi):
    while lo < hi:
        m = (lo + hi) >> 1
        if a[m] < x:
            lo = m + 1
        else:
            hi = m
    return lo


@jit
def _bisect_right(a, x, lo, hi):
    while lo < hi:
        m = (lo + hi) >> 1
        if x < a[m]:
            hi = m
        else:
            lo = m + 1
    return lo


@jit
def _take_prefill(pq, cum, P, ph, npq, pos, budget, slots, b_max, chunked, chunk_long):
    """(tokens, prompts touched) of a batch's prefill part, given the budget and free slots."""
    if budget < 1 or slots < 1 or ph >= npq:
        return 0, 0
    if chunked:
        last = (ph + slots if ph + slots < npq else npq) - 1
        x = cum[last] - pos
        if budget < x:
            x = budget
        return x, _bisect_left(cum, pos + x, ph, last + 1) - ph + 1
    head = cum[ph] - pos
    if not _fits(head, budget):
        if chunk_long and head > b_max:
            return budget, 1
        return 0, 0
    lim = ph + slots if ph + slots < npq else npq
    j = _bisect_right(cum, pos + budget, ph, lim)
    x = cum[j - 1] - pos
    touched = j - ph
    left = budget - x
    if chunk_long and left >= 1 and touched < slots and j < npq and P[pq[j]] > b_max:
        x += left
        touched += 1
    return x, touched


@jit
def _admit(arr, P, D, upto, na, n, n_sys, work, tot, blocked_tok, n_blocked, npq, nb, pq, cum, bt, bn, bw,
           b_max, whole):
    """Admit the arrivals at times <= ``upto`` (room for their backlog rows is there)."""
    while na < n and arr[na] <= upto:
        i = na
        na += 1
        n_sys += 1
        p = P[i]
        work += p + D[i]
        bt[nb] = arr[i]
        bn[nb] = n_sys
        bw[nb] = work
        nb += 1
        if whole and p > b_max:  # can never be scheduled
            blocked_tok += p
            n_blocked += 1
            continue
        tot += p
        pq[npq] = i
        cum[npq] = tot
        npq += 1
    return na, n_sys, work, tot, blocked_tok, n_blocked, npq, nb


@jit
def _iterate(t, busy, tau0, ks, kv_run, sd, ctx, k, nxt, horizon):
    """A run of identical iterations without a record: (clock, busy time, iterations, the first one's end).

    The clock adds one batch time per iteration (as the generic kernel does, so times are bit-identical);
    the run ends after ``k`` iterations or the first that ends at or after ``nxt`` or the horizon.  Its
    own function, so that the compiled loop holds only scalars (the caller's loop also carries the
    record buffers, whose reference counts numba would update every iteration)."""
    tau_j = tau0 + ks * kv_run if ctx else tau0
    t1 = t
    j = 0
    while True:
        t += tau_j
        busy += tau_j
        j += 1
        if j == 1:
            t1 = t
        if ctx:  # contexts grow by one token per served decoder and iteration
            tau_j = tau0 + ks * (kv_run + j * sd)
        if j >= k or t >= nxt or t >= horizon:
            break
    return t, busy, j, t1


@jit(_nrt=False)
def _iterate_rec(t, busy, tau0, ks, kv_run, sd, ctx, k, nxt, horizon, j, t1, x, nq, dem0, kv0, nr, rt, rx, rs, rq, rb,
                 rd, rk):
    """:func:`_iterate` from its ``j``-th iteration, writing one record row per iteration until the run ends
    or the record buffers are full: (clock, busy time, iterations, the first one's end, rows, whether the run
    ended).  Compiled without reference counting, so that the row loop does not count the buffers'.

    Its clock step repeats :func:`_iterate`'s on purpose: shared as an ``inline="always"`` helper, the recorded
    FasterTransformer runs of bench_kernel's workload took 6-25 % more CPU time (n=200k, best of 8 alternating
    processes, 2026-12-06, shared machine), the unrecorded ones none."""
    tau_j = tau0 + ks * (kv_run + j * sd) if ctx else tau0
    while nr < len(rt):
        rt[nr] = t
        rx[nr] = x
        rs[nr] = sd
        rq[nr] = nq
        rb[nr] = tau_j
        rd[nr] = dem0 - j * x
        rk[nr] = kv0 + j * sd
        nr += 1
        t += tau_j
        busy += tau_j
        j += 1
        if j == 1:
            t1 = t
        if ctx:  # contexts grow by one token per served decoder and iteration
            tau_j = tau0 + ks * (kv_run + j * sd)
        if j >= k or t >= nxt or t >= horizon:
            return t, busy, j, t1, nr, True
    return t, busy, j, t1, nr, False


@jit
def step(arr, P, D, tau, cfg, cf, si, sf, fs, pdn, ftk, fin, pq, cum, dq, val, hin,
         hf, hr, bt, bn, bw, rt, rx, rs, rq, rb, rd, rk):
    """Advance the simulation (see the module docstring); return (status, the growing buffers)."""
    n = len(arr)
    b_max = cfg[C_BMAX]
    k_cap = cfg[C_KCAP]
    mixed = cfg[C_MIXED] != 0
    chunked = cfg[C_CHUNKED] != 0
    chunk_long = cfg[C_CHUNK_LONG] != 0
    prefill_first = cfg[C_PREFILL_FIRST] != 0
    record = cfg[C_RECORD] != 0
    report = cfg[C_REPORT] != 0
    open_ = cfg[C_OPEN] != 0
    horizon = cf[0]
    ks = cf[1]
    whole = not chunked and not chunk_long
    need_a = ks != 0.0 or record  # the decoders' KV sum A is read by the batch time or the record

    na = si[I_NA]
    n_sys = si[I_NSYS]
    work = si[I_WORK]
    npq = si[I_NPQ]
    ph = si[I_PH]
    pscan = si[I_PSCAN]
    pos = si[I_POS]
    tot = si[I_TOT]
    blocked_tok = si[I_BLOCKED_TOK]
    n_blocked = si[I_NBLOCKED]
    G = si[I_G]
    nS = si[I_NS]
    A = si[I_A]
    ndec = si[I_NDEC]
    bq = si[I_BQ]
    ut = si[I_UT]
    fresh = si[I_FRESH]
    nh = si[I_NH]
    nb = si[I_NB]
    nr = si[I_NR]
    n_iter = si[I_NITER]
    mixed_iters = si[I_MIXED]
    tok_served = si[I_TOKS]
    resume = si[I_RESUME] != 0
    covered = si[I_COVERED]
    t = sf[F_T]
    busy = sf[F_BUSY]
    next_report = sf[F_NEXT]
    status = STATUS_DONE
    # (open segments) arrivals may follow the last one given: an event at or after it asks for them first
    stop_at = np.inf
    if open_:
        stop_at = arr[n - 1] if n > 0 else -np.inf

    while True:
        if not resume:
            if t >= stop_at:  # arrivals up to t may follow those given
                status = STATUS_MORE
                break
            if len(bt) < nb + (n - na) + 2:  # room for every arrival row and this event's row
                need = nb + (n - na) + 2
                bt = _grow_f(bt, need)
                bn = _grow_i(bn, need)
                bw = _grow_i(bw, need)
            na, n_sys, work, tot, blocked_tok, n_blocked, npq, nb = _admit(
                arr, P, D, t, na, n, n_sys, work, tot, blocked_tok, n_blocked, npq, nb, pq, cum, bt, bn, bw,
                b_max, whole)
            bt[nb] = t
            bn[nb] = n_sys
            bw[nb] = work
            nb += 1
            if t >= horizon:
                break
            if report and t >= next_report:
                status = STATUS_PROGRESS
                break
        resume = False
        has_pf = ph < npq
        if ndec == 0 and not has_pf:
            if na >= n:
                break
            t = arr[na] if arr[na] < horizon else horizon
            continue
        D0, B, S = _budget_split(prefill_first, mixed, b_max, npq - ph, ndec, k_cap)
        if D0 < 0:  # prefill first: decode takes what prefill leaves
            x, touched = _take_prefill(pq, cum, P, ph, npq, pos, B, S, b_max, chunked, chunk_long)
            sd = _decode_after_prefill(mixed, ndec, b_max, k_cap, x, touched)
        elif B >= 1 and S >= 1:
            x, touched = _take_prefill(pq, cum, P, ph, npq, pos, B, S, b_max, chunked, chunk_long)
            sd = D0
        else:  # decode only
            x = 0
            touched = 0
            sd = D0
        if x == 0 and sd == 0:  # nothing schedulable: wait for an arrival
            if na >= n:
                break
            t = arr[na] if arr[na] < horizon else horizon
            continue
        tokens = x + sd
        if tau[tokens] != tau[tokens]:  # NaN: not tabulated; the caller fills it in, we redo this event
            si[I_TAU] = tokens
            status = STATUS_TAU
            resume = True
            break
        if sd:
            if nh + sd - nS > len(hf):  # room for every push below (no reallocation in the loop)
                hf = _grow_i(hf, nh + sd - nS)
                hr = _grow_i(hr, nh + sd - nS)
            while nS < sd:  # the oldest paused decoders join S
                u = _ix(bq)
                v = val[u]
                if v < 0:  # finished (while served, before S last shrank past it)
                    bq += 1
                    continue
                f = G + v
                val[u] = f
                if hin[u] == 0:  # a decoder that paused keeps its entry (a lower bound of f)
                    if bq > 0 and 0 <= val[bq - 1] <= f:  # covered by the next older decoder (served)
                        hin[u] = 2
                        covered += 1
                    else:
                        hin[u] = 1
                        nh = _hpush_call(hf, hr, nh, f, bq)
                if need_a:
                    rid = dq[u]
                    A += P[rid] + D[rid] - f
                bq += 1
                nS += 1
            while nS > sd:  # the youngest members of S pause
                bq -= 1
                u = _ix(bq)
                f = val[u]
                if f < 0:
                    continue
                val[u] = f - G
                if need_a:
                    rid = dq[u]
                    A -= P[rid] + D[rid] - f
                nS -= 1
            while True:  # a stale top: re-key a served decoder, drop a paused one
                q = hr[0]
                if q >= bq:
                    hin[q] = 0
                    nh = _hpop_call(hf, hr, nh)
                elif val[q] != hf[0]:
                    _hrekey_call(hf, hr, nh, val[q], q)
                else:
                    break
            k = hf[0] - G
        else:
            k = K_NONE
        if x:
            head = cum[ph] - pos
            # chunked prefill: the head alone takes x tokens per iteration until its rest fits; a
            # whole-prompt former that chunks a long prompt changes shape once the rest is <= b_max
            kp = (head - 1) // x if chunked and head > x else 1
            if kp < k:
                k = kp
        kv_run = A + nS * G
        tau0 = tau[tokens]
        ctx = ks != 0.0 and sd != 0
        nxt = arr[na] if na < n else np.inf
        t0 = t
        if not record:
            busy0 = busy
            t, busy, j, t1 = _iterate(t, busy, tau0, ks, kv_run, sd, ctx, k, nxt, horizon)
            if t >= stop_at:  # arrivals during the run may follow those given: undo it, redo it after more
                t, busy = t0, busy0
                status = STATUS_MORE
                resume = True
                break
        else:  # the same run, one record row per iteration, the buffers grown whenever they are full
            dem0 = tot - pos + blocked_tok + ndec
            kv0 = kv_run if sd else 0
            t1 = t
            j = 0
            while True:
                if nr == len(rt):
                    rt = _grow_f(rt, nr + 1)
                    rb = _grow_f(rb, nr + 1)
                    rx = _grow_i(rx, nr + 1)
                    rs = _grow_i(rs, nr + 1)
                    rq = _grow_i(rq, nr + 1)
                    rd = _grow_i(rd, nr + 1)
                    rk = _grow_i(rk, nr + 1)
                t, busy, j, t1, nr, done = _iterate_rec(t, busy, tau0, ks, kv_run, sd, ctx, k, nxt, horizon, j, t1,
                                                        x, touched + sd, dem0, kv0, nr, rt, rx, rs, rq, rb, rd, rk)
                if done:
                    break
        n_iter += j
        tok_served += j * tokens
        work -= (j - 1) * tokens
        # arrivals during the last iteration, recorded at their own times (n(t) is exact for Little's law)
        na, n_sys, work, tot, blocked_tok, n_blocked, npq, nb = _admit(
            arr, P, D, t, na, n, n_sys, work, tot, blocked_tok, n_blocked, npq, nb, pq, cum, bt, bn, bw,
            b_max, whole)
        work -= tokens
        if sd and x:
            mixed_iters += j
        if sd:
            G += j
            for q in range(fresh, bq):  # first decode token of the requests that joined S fresh
                ftk[dq[q]] = t1
            if bq > fresh:
                fresh = bq
            while nh > 0 and hf[0] <= G:
                f = hf[0]
                q = hr[0]
                if q < bq and val[q] > f:  # served, but paused since this key was set
                    _hrekey_call(hf, hr, nh, val[q], q)
                    continue
                hin[q] = 0
                nh = _hpop_call(hf, hr, nh)
                if q >= bq:  # paused
                    continue
                val[q] = -1
                if q + 1 < ut and hin[q + 1] == 2:  # the decoder it covered needs its own entry
                    if q + 1 < bq:
                        hin[q + 1] = 1
                        nh = _hpush_call(hf, hr, nh, val[q + 1], q + 1)
                    else:
                        hin[q + 1] = 0
                rid = dq[q]
                if need_a:
                    A -= P[rid] + D[rid] - f
                nS -= 1
                ndec -= 1
                n_sys -= 1
                fin[rid] = t
        if x:
            hi = ph + touched if j == 1 else ph + 1
            while pscan < hi:
                fs[pq[pscan]] = t0
                pscan += 1
            pos += j * x
            while ph < npq and cum[ph] <= pos:
                rid = pq[ph]
                ph += 1
                pdn[rid] = t
                dq[ut] = rid
                val[ut] = D[rid]
                ut += 1
                ndec += 1

    si[I_NA] = na
    si[I_NSYS] = n_sys
    si[I_WORK] = work
    si[I_NPQ] = npq
    si[I_PH] = ph
    si[I_PSCAN] = pscan
    si[I_POS] = pos
    si[I_TOT] = tot
    si[I_BLOCKED_TOK] = blocked_tok
    si[I_NBLOCKED] = n_blocked
    si[I_G] = G
    si[I_NS] = nS
    si[I_A] = A
    si[I_NDEC] = ndec
    si[I_BQ] = bq
    si[I_UT] = ut
    si[I_FRESH] = fresh
    si[I_NH] = nh
    si[I_NB] = nb
    si[I_NR] = nr
    si[I_NITER] = n_iter
    si[I_MIXED] = mixed_iters
    si[I_TOKS] = tok_served
    si[I_RESUME] = 1 if resume or status == STATUS_PROGRESS else 0
    si[I_COVERED] = covered
    sf[F_T] = t
    sf[F_BUSY] = busy
    return status, hf, hr, bt, bn, bw, rt, rx, rs, rq, rb, rd, rk
