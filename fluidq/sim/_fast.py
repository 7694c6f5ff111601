"""The event-skipping kernel for the built-in :class:`~fluidq.policies.Scheduler` with FCFS order.

Why it is fast
--------------
Under FCFS the prefill work of the waiting requests is one *stream*: prompts are served head
first, so the state of every prompt follows from one cursor ``pos`` (prefill tokens served so far)
and the cumulative prompt sizes ``cum`` (``cum[i]`` = tokens of prompts ``0..i`` in the queue).
A batch's prefill part is then found by a bisection in ``cum`` (whole prompts) or a ``min``
(chunked prefill), never by a scan of the queue.

Decode work is a *virtual clock*: the decoding requests that a batch serves are the ``s`` oldest
decoders (``S``); each of them gets one token per decode round, so a request that joins ``S``
with ``r`` tokens left at round ``G`` finishes at round ``G + r``.  A heap keyed by that round
gives the next decode completion in ``O(log n)``; the requests outside ``S`` wait in a FIFO.
The context-aware batch time needs the sum of the contexts of the served decoders, which is kept
as ``A + |S| * G``.

Between two events (an arrival, a prefill completing, a request finishing, the horizon) the
batch composition does not change, so such a *run* of iterations is advanced in one step; only
the clock is advanced iteration by iteration (one float addition each, so that times are
bit-identical with the generic path, which adds one batch time per iteration too).

The kernel gives the same per-request times and the same per-iteration records as the generic
path (``policy.select(view)`` every iteration) on the built-in schedulers: the test suite checks
this on random workloads.
"""
# The inner loop compares explicitly instead of calling min()/max(): a function call costs more
# than the comparison in CPython, and this loop runs once per event.
# ruff: noqa: FURB136, PLR1730
from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections import deque

NAN = math.nan
INF = math.inf


def run_fast(arr, P, D, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks,
             horizon, record, progress=None):
    """Simulate; return a dict of plain lists (see :func:`fluidq.sim._engine.simulate`)."""
    n = len(arr)
    fs = [NAN] * n   # first scheduled (start of the first iteration that serves it)
    pdn = [NAN] * n  # prefill done (end of the iteration that completes its prefill)
    ftk = [NAN] * n  # first token (end of the iteration that gives its first decode token)
    fin = [NAN] * n  # finish (end of the iteration that gives its last decode token)

    pq: list = []    # prefill queue (rids, FCFS); entries before ph are done
    cum: list = []   # cumulative prompt tokens in pq
    ph = 0           # head of pq
    pscan = 0        # entries of pq before pscan have been scheduled at least once
    pos = 0          # prefill tokens served from the stream
    tot = 0          # prefill tokens that entered the stream
    blocked_tok = 0  # prompt tokens of requests that can never be scheduled
    n_blocked = 0

    G = 0            # decode rounds
    sfin = [-1] * n  # rid -> finishing round while in S, else -1
    fheap: list = []  # (finish round, rid) of S (lazy deletion)
    mheap: list = []  # -rid of S, for shrinking S (only needed for prefill-first mixed batches)
    need_shrink = mixed and prefill_first
    uns = deque()    # decoders outside S, oldest first: (rid, tokens left)
    nS = 0
    A = 0            # sum over S of (P + D - finish round): context sum = A + nS*G
    ndec = 0

    t = 0.0
    na = 0
    n_sys = 0
    work = 0
    bt, bn, bw = [], [], []
    rec = {"t_s": [], "prefill_tokens": [], "decode_tokens": [], "requests": [], "batch_s": [],
           "demand": [], "kv_tokens": []} if record else None
    n_iter = 0
    busy = 0.0
    mixed_iters = 0
    tok_served = 0
    next_report = 0.0

    bt_ap, bn_ap, bw_ap = bt.append, bn.append, bw.append
    pq_ap, cum_ap = pq.append, cum.append
    hpush, hpop = heapq.heappush, heapq.heappop
    uns_pop, uns_ap = uns.popleft, uns.append

    cap_d = b_max if b_max < k_cap else k_cap

    def take_prefill(budget, slots):
        """(tokens, prompts touched) of the prefill part, given the budget and free slots."""
        if budget < 1 or slots < 1 or ph >= len(pq):
            return 0, 0
        if chunked:
            last = min(ph + slots, len(pq)) - 1
            x = min(budget, cum[last] - pos)
            j = bisect_left(cum, pos + x, ph, last + 1)
            return x, j - ph + 1
        head = cum[ph] - pos
        if head > budget:
            if chunk_long and head > b_max:
                return budget, 1
            return 0, 0
        lim = min(ph + slots, len(pq))
        j = bisect_right(cum, pos + budget, ph, lim)
        x = cum[j - 1] - pos
        touched = j - ph
        left = budget - x
        if chunk_long and left >= 1 and touched < slots and j < len(pq) and P[pq[j]] > b_max:
            x += left
            touched += 1
        return x, touched

    while True:
        while na < n and arr[na] <= t:
            i = na
            na += 1
            n_sys += 1
            p = P[i]
            work += p + D[i]
            bt_ap(arr[i])
            bn_ap(n_sys)
            bw_ap(work)
            if not chunked and not chunk_long and p > b_max:
                blocked_tok += p
                n_blocked += 1
                continue
            tot += p
            pq_ap(i)
            cum_ap(tot)
        bt_ap(t)
        bn_ap(n_sys)
        bw_ap(work)
        if t >= horizon:
            break
        if progress is not None and t >= next_report:
            progress(t, na)
            next_report = t + 1.0 + 0.02 * t
        has_pf = ph < len(pq)
        if ndec == 0 and not has_pf:
            if na >= n:
                break
            t = arr[na] if arr[na] < horizon else horizon
            continue
        if mixed:
            if prefill_first:
                x, touched = take_prefill(b_max, k_cap)
                sd = min(ndec, b_max - x, k_cap - touched)
            else:
                sd = ndec if ndec < cap_d else cap_d
                if chunked:  # inlined take_prefill (the Sarathi path)
                    budget = b_max - sd
                    slots = k_cap - sd
                    npq = len(pq)
                    if budget < 1 or slots < 1 or ph >= npq:
                        x = touched = 0
                    else:
                        last = ph + slots - 1 if ph + slots < npq else npq - 1
                        x = cum[last] - pos
                        if budget < x:
                            x = budget
                        touched = bisect_left(cum, pos + x, ph, last + 1) - ph + 1
                else:
                    x, touched = take_prefill(b_max - sd, k_cap - sd)
        elif prefill_first:
            x, touched = take_prefill(b_max, k_cap)
            sd = 0 if touched else min(ndec, b_max, k_cap)
        elif ndec:
            sd, x, touched = min(ndec, b_max, k_cap), 0, 0
        else:
            sd = 0
            x, touched = take_prefill(b_max, k_cap)
        if x == 0 and sd == 0:  # nothing schedulable: wait for an arrival
            if na >= n:
                break
            t = arr[na] if arr[na] < horizon else horizon
            continue
        fresh = None
        if sd:
            while nS < sd:
                rid, r = uns_pop()
                f = G + r
                sfin[rid] = f
                hpush(fheap, (f, rid))
                if need_shrink:
                    hpush(mheap, -rid)
                A += P[rid] + D[rid] - f
                nS += 1
                if r == D[rid]:
                    if fresh is None:
                        fresh = [rid]
                    else:
                        fresh.append(rid)
            while nS > sd:
                rid = -hpop(mheap)
                f = sfin[rid]
                if f < 0:
                    continue
                sfin[rid] = -1
                A -= P[rid] + D[rid] - f
                nS -= 1
                uns.appendleft((rid, f - G))
            while fheap[0][0] != sfin[fheap[0][1]]:
                hpop(fheap)
            k = fheap[0][0] - G
        else:
            k = INF
        if x:
            head = cum[ph] - pos
            # chunked prefill: the head alone takes x tokens per iteration until its rest fits; a
            # whole-prompt former that chunks a long prompt changes shape once the rest is <= b_max
            kp = (head - 1) // x if chunked and head > x else 1
            if kp < k:
                k = kp
        tokens = x + sd
        kv_run = A + nS * G
        tau = tau_b[tokens] + ks * kv_run if ks and sd else tau_b[tokens]
        nxt = arr[na] if na < n else INF
        t0 = t
        if record:
            dem0 = tot - pos + blocked_tok + ndec
            kv0 = A + nS * G if sd else 0
        j = 0
        while True:
            if record:
                rec["t_s"].append(t)
                rec["prefill_tokens"].append(x)
                rec["decode_tokens"].append(sd)
                rec["requests"].append(touched + sd)
                rec["batch_s"].append(tau)
                rec["demand"].append(dem0 - j * x)
                rec["kv_tokens"].append(kv0 + j * sd)
            t += tau
            busy += tau
            j += 1
            if j == 1:
                t1 = t
            if ks and sd:  # contexts grow by one token per served decoder and iteration
                tau = tau_b[tokens] + ks * (kv_run + j * sd)
            if j >= k or t >= nxt or t >= horizon:
                break
        n_iter += j
        tok_served += j * tokens
        work -= (j - 1) * tokens
        # arrivals during the last iteration, recorded at their own times (n(t) is exact for Little's law)
        while na < n and arr[na] <= t:
            i = na
            na += 1
            n_sys += 1
            p = P[i]
            work += p + D[i]
            bt_ap(arr[i])
            bn_ap(n_sys)
            bw_ap(work)
            if not chunked and not chunk_long and p > b_max:
                blocked_tok += p
                n_blocked += 1
                continue
            tot += p
            pq_ap(i)
            cum_ap(tot)
        work -= tokens
        if sd and x:
            mixed_iters += j
        if sd:
            G += j
            if fresh is not None:
                for rid in fresh:
                    ftk[rid] = t1
            while fheap and fheap[0][0] <= G:
                f, rid = hpop(fheap)
                if sfin[rid] != f:
                    continue
                sfin[rid] = -1
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
            while ph < len(pq) and cum[ph] <= pos:
                rid = pq[ph]
                ph += 1
                pdn[rid] = t
                uns_ap((rid, D[rid]))
                ndec += 1
            if ph > 4096 and ph * 2 > len(pq):  # compact the stream
                pq = pq[ph:]
                cum = cum[ph:]
                pq_ap, cum_ap = pq.append, cum.append
                pscan -= ph
                ph = 0
    return {"first_scheduled_s": fs, "prefill_done_s": pdn, "first_token_s": ftk, "finish_s": fin,
            "backlog": (bt, bn, bw), "iterations": n_iter, "busy_s": busy, "mixed_iterations": mixed_iters,
            "tokens_served": tok_served, "records": rec, "end_s": t, "n_blocked": n_blocked,
            "n_arrived": na}
