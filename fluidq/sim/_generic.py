"""The generic kernel: ``policy.select(view)`` at every iteration, with optional KV-cache memory.

This path runs any policy (a user's object, an ordering whose keys change with time) and is the
reference the fast kernel is tested against.  Memory (``kv_capacity_tokens``) is modelled here:

* a request *holds* KV tokens for its processed prompt and its generated tokens; it holds none
  before its first prefill chunk (admission) or after it finishes;
* a batch may only add as many KV tokens as are free.  *Admission only when memory allows*: a new
  request (holding no KV) is admitted only if its whole remaining prompt fits with a headroom of
  one token per request already holding KV (a simplified version of vLLM's watermark, so that an
  admission does not force a preemption at the next decode step); admission is head-of-line in
  the policy's order, and none happens while swapped-out requests wait or after a preemption in
  the same iteration.  When a new request cannot be admitted, the policy is asked again without the
  new requests, so that it can give the budget to admitted ones.  Prefill chunks of admitted
  requests are cut to the free memory (chunking policies) or dropped (whole-prompt policies);
* when the decode tokens alone do not fit, a resident is *preempted*: the last one in the
  policy's ordering (the latest arrival under FCFS, as vLLM does) among those whose ordering
  does not refuse through the optional hook ``ordering.may_evict(request, now_s) -> bool``;
  if every candidate refuses, decode tokens are dropped from the end of the batch, and only if
  that leaves nothing to run is the last candidate evicted anyway (otherwise the engine would
  deadlock);
* ``preemption="recompute"``: the victim's KV is discarded; it must prefill its prompt plus the
  tokens it had generated (vLLM merges them into the prompt).  Its :class:`RequestState` then has
  ``prompt_tokens`` = original prompt + ``recompute_tokens`` and ``prefilled`` = 0; the discarded
  KV counts as wasted tokens.
* ``preemption="swap"``: the victim's KV moves to host memory, costing ``swap_s_per_token`` per
  token (added to the iteration's time); it returns, oldest first and before any new request is
  admitted, as soon as its KV fits, paying the same cost again.

A request whose prompt plus output exceeds the capacity can never finish; it is rejected at
arrival (counted in ``rejected``), never admitted.

Those are the default rules (``engine.memory == Memory()``).  Any other
:class:`~fluidq.engine.Memory` is *paged* (:class:`~fluidq.sim._memory.BlockPool`): a request holds
``ceil(tokens / block_size)`` blocks of the ``kv_capacity_tokens // block_size``, without headroom.
Each iteration the policy's batch is taken in two steps, as vLLM v1 does: the running requests
(holding blocks) get blocks for their next tokens, and while they do not fit the victim
(``memory.victim``: last in the policy's ordering, or most recently admitted) is preempted and the
policy asked again; then the new requests of the batch are admitted head-of-line while their
reservation fits (``memory.reservation``: the whole remaining prompt, or the chunk scheduled now).
With ``memory.prefix_caching`` a victim re-admitted takes back its own leading blocks that are
still cached (its prefill restarts after them; the tokens given back are not ``wasted``).  A
request needing more blocks than the cache has is rejected at arrival.  ``initial`` residents
count as admitted in their order.  With ``emit_at_prefill`` the iteration completing a prefill
gives the first output token (vLLM), so ``output_tokens - 1`` decode iterations follow; a batch time
with ``composition_time`` is charged from the batch's prefill chunks (with their prior context)
and the decode contexts (KV held) instead of its token count.

Cost.  ``policy.select`` reads every request in its view, so a view of the whole queue would make
each iteration cost O(queue) and an overloaded run O(horizon^2).  For a built-in
:class:`~fluidq.policies.Scheduler` whose ordering keeps arrival order (FCFS), the kernel shows the
policy only the requests it could touch: every request that has been served (or holds or held KV)
plus the ``min(b_max, k_max) + 1`` oldest waiting ones that it could admit (such a scheduler takes
waiting prompts head-of-line, each costing at least one token and one slot of the batch, so it
never reaches further).  The rest wait in a FIFO (O(1) per arrival); a waiting prompt that the
scheduler reports it can never schedule (``Batch.blocked``) is set aside once reported.  The
batches, and so the results, are the same as with the whole queue in view (the tests check it);
the count of requests shown to the policy is returned as ``examined``.  Other policies and
orderings see the whole queue (their order may depend on every request).
"""
from __future__ import annotations

import math

from collections import deque

from ..errors import FluidqError, ParameterError
from ..policies.base import Batch, QueueView, RequestState, batch_violations
from ._memory import BlockPool

NAN = math.nan
INF = math.inf


class PolicyError(FluidqError, RuntimeError):
    """A policy returned a batch that breaks the batch constraints (6a)-(6d) or k_max."""


def _victim_order(policy, admitted, now):
    order = getattr(policy, "order", None)
    if order is not None and hasattr(order, "order"):
        return list(order.order(admitted, now))
    return sorted(admitted, key=lambda r: (r.arrival_s, r.rid))


def _may_evict_hook(policy):
    for obj in (getattr(policy, "order", None), policy):
        f = getattr(obj, "may_evict", None)
        if callable(f):
            return f
    return None


def run_generic(arr, P, D, *, policy, b_max, k_max, tau_b, ks, horizon, record, check, kv_cap=None,
                preemption="recompute", swap_s_per_token=0.0, record_batches=False, initial=(),
                progress=None, window=False, memory=None, compose=None, emit_at_prefill=False):
    """Simulate; return a dict of plain lists.

    ``window=True`` (only for a built-in FCFS :class:`~fluidq.policies.Scheduler`, without ``initial``
    residents or batch records) shows the policy the served requests and the oldest waiting ones it
    could admit, not the whole queue (see the module's notes); the results are the same.

    ``memory`` (a :class:`fluidq.engine.Memory` other than the default token rules, with ``kv_cap``)
    pages the KV cache in blocks (see the module's notes); ``compose(prefill_chunks, decode_contexts)``
    replaces ``tau_b`` by the batch's composition; ``emit_at_prefill`` makes the iteration completing a
    prefill give the first output token.
    """
    n = len(arr)
    n0 = len(initial)
    N = n0 + n
    fs = [NAN] * N
    pdn = [NAN] * N
    ftk = [NAN] * N
    fin = [NAN] * N
    npre = [0] * N
    chunkable = bool(getattr(policy, "chunked", False))
    may_evict = _may_evict_hook(policy)
    residents: list = []
    by_id: dict = {}
    kv: dict = {}
    swapped: list = []   # swapped-out RequestStates, oldest first
    used = 0
    n_admitted = 0  # residents holding KV tokens
    rejected = 0
    preemptions = 0
    wasted = 0
    swap_tokens = 0
    peak_kv = 0
    batches = [] if record_batches else None
    blocked_ids: set = set()
    paged = kv_cap is not None and memory is not None and not memory.default_rules
    if paged:
        bs = memory.block_size
        pool = BlockPool(kv_cap // bs, memory.prefix_caching)
        nblk: dict = {}  # blocks held per request
        adm: dict = {}  # admission sequence per request (victim "most_recent")
        hwm: dict = {}  # prompt tokens ever computed per request (recomputation is not useful work)
        n_adm = 0
        most_recent = memory.victim == "most_recent"
        whole = memory.reservation == "whole_prompt"
    rec = {"t_s": [], "prefill_tokens": [], "decode_tokens": [], "requests": [], "batch_s": [],
           "demand": [], "kv_tokens": []} if record else None
    if record and kv_cap is not None:
        rec["kv_used"] = []
    if record and paged:
        rec.update(resident=[], waiting=[], useful_tokens=[])
    work = 0
    examined = 0  # requests shown to the policy, summed over select calls (the kernel's cost)
    pending: deque = deque()  # with window: waiting requests not yet shown to the policy, in arrival order
    n_fresh = 0  # with window: requests in view never served that the policy could admit
    n_parked = 0  # with window: waiting requests reported blocked (never schedulable), set aside
    hidden_demand = 0  # prompt tokens of the pending and parked requests
    if window:
        b_eff, k_eff = policy.budgets(QueueView(requests=(), now_s=0.0, b_max=b_max, k_max=k_max))
        w_size = int(min(b_eff, k_eff)) + 1
        # a prompt that a non-chunking scheduler can never fit does not count towards the window
        never_fits = INF if (policy.chunked or policy.chunk_long_prompts) else b_eff
    for j, r0 in enumerate(initial):
        r = RequestState(rid=j, arrival_s=float(r0.arrival_s), prompt_tokens=int(r0.prompt_tokens),
                         output_tokens=int(r0.output_tokens), prefilled=int(r0.prefilled), decoded=int(r0.decoded),
                         score=r0.score)
        residents.append(r)
        by_id[j] = r
        kv[j] = r.prefilled + r.decoded
        used += kv[j]
        work += r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded
        if paged and kv[j] > 0:
            k = -(-kv[j] // bs)
            if k > pool.free:
                raise ParameterError("initial", f"<{n0} residents>", f"residents whose KV fits in the "
                                     f"{pool.total} blocks of {bs} tokens of the cache")
            pool.alloc(k)
            nblk[j] = k
            adm[j] = n_adm
            n_adm += 1
    t = 0.0
    na = 0
    bt, bn, bw = [], [], []
    n_iter = 0
    busy = 0.0
    mixed_iters = 0
    tok_served = 0
    next_report = 0.0

    def preempt(r, now):
        nonlocal used, preemptions, wasted, swap_tokens, residents, work
        held = kv[r.rid]
        used -= held
        kv[r.rid] = 0
        if paged:
            pool.release(r.rid, nblk.pop(r.rid, 0))
        preemptions += 1
        npre[r.rid] += 1
        r.preemptions += 1
        if preemption == "swap":
            swap_tokens += held
            residents = [q for q in residents if q.rid != r.rid]
            swapped.append((r, held))
            return held * swap_s_per_token
        wasted += held
        work += held  # the discarded prompt and generated tokens must be prefilled again
        base = r.prompt_tokens - r.recompute_tokens
        r.recompute_tokens = r.decoded
        r.prompt_tokens = base + r.decoded
        r.prefilled = 0
        return 0.0

    def admit_arrivals(t):
        """Admit every arrival up to time ``t``, recording the backlog at each arrival's own time."""
        nonlocal na, rejected, work, hidden_demand
        while na < n and arr[na] <= t:
            i = na
            na += 1
            rid = n0 + i
            if kv_cap is not None and (P[i] + D[i] > kv_cap if not paged else
                                       -(-(P[i] + D[i]) // bs) > pool.total):
                rejected += 1
                continue
            r = RequestState(rid=rid, arrival_s=float(arr[i]), prompt_tokens=int(P[i]), output_tokens=int(D[i]))
            if window:
                pending.append(r)
                hidden_demand += r.prompt_tokens
            else:
                residents.append(r)
            by_id[rid] = r
            kv[rid] = 0
            work += P[i] + D[i]
            bt.append(arr[i])
            bn.append(len(residents) + len(swapped) + len(pending) + n_parked)
            bw.append(work)

    def show_waiting():
        """Move waiting requests into view until it holds ``w_size`` the policy could admit."""
        nonlocal n_fresh, hidden_demand
        while pending and n_fresh < w_size:
            r = pending.popleft()
            residents.append(r)
            hidden_demand -= r.prompt_tokens
            if r.prompt_tokens <= never_fits:
                n_fresh += 1

    def ask(visible, t, kv_free):
        """``policy.select`` on the requests in ``visible``; checks the batch, sets blocked ones aside."""
        nonlocal examined, n_parked, hidden_demand, n_fresh, residents
        view = QueueView(requests=tuple(visible), now_s=t, b_max=b_max, k_max=k_max, kv_free_tokens=kv_free)
        examined += len(visible)
        batch = policy.select(view)
        if check:
            bad = batch_violations(batch, view)
            if bad:
                raise PolicyError(f"policy {getattr(policy, 'name', policy)!r} at t={t:.6g} s: {bad[0]}")
        if batch.blocked:
            blocked_ids.update(batch.blocked)
            if window:  # never schedulable: reported once, then set aside (still in the system)
                gone = {rid for rid in batch.blocked if fs[rid] != fs[rid]}
                if gone:
                    for q in residents:
                        if q.rid in gone:
                            n_parked += 1
                            hidden_demand += q.prompt_tokens
                            if q.prompt_tokens <= never_fits:  # pragma: no cover - it blocks only those
                                n_fresh -= 1
                    residents = [q for q in residents if q.rid not in gone]
        return view, batch

    def take(rid, m):
        """Blocks for ``m`` more KV tokens of resident ``rid`` (the pool has them)."""
        k = -(-(kv[rid] + m) // bs) - nblk[rid]
        if k > 0:
            pool.alloc(k)
            nblk[rid] += k

    def paged_batch(t):
        """The batch under the block memory: running requests (holding blocks) first get blocks for
        their next tokens, preempting victims until they fit; then new requests are admitted, head
        of line in the policy's order, while their reservation fits.  Returns (view, batch, unseen,
        seconds of swaps)."""
        nonlocal n_adm, used, work, wasted
        extra = 0.0
        hide_new = bool(swapped)
        while True:
            visible = [q for q in residents if q.rid in nblk] if hide_new else residents
            unseen = 0 if hide_new else hidden_demand
            view, batch = ask(visible, t, pool.free * bs)
            need = 0
            for rid, m in batch.prefill:
                if rid in nblk:
                    need += -(-(kv[rid] + m) // bs) - nblk[rid]
            for rid in batch.decode:
                need += -(-(kv[rid] + 1) // bs) - nblk[rid]
            if need > pool.free:
                admitted = [q for q in residents if q.rid in nblk]
                if most_recent:
                    victim = max(admitted, key=lambda q: adm[q.rid])
                else:
                    cands = _victim_order(policy, admitted, t)[::-1]
                    victim = next((q for q in cands if may_evict is None or may_evict(q, t)), cands[0])
                extra += preempt(victim, t)
                continue
            running = {rid for rid, _ in batch.prefill if rid in nblk}
            for rid, m in batch.prefill:
                if rid in running:
                    take(rid, m)
            for rid in batch.decode:
                take(rid, 1)
            kept = []
            stop = False
            for rid, m in batch.prefill:
                if rid in running:
                    kept.append((rid, m))
                    continue
                if stop:
                    continue
                r = by_id[rid]
                hit = 0
                if pool.caching and pool.cached(rid) > 0:
                    # a preempted request's own leading blocks still cached (it recomputes its last token
                    # at least); they are among the free blocks, so the whole request must fit in them
                    if -(-r.prompt_tokens // bs) > pool.free:
                        stop = True
                        continue
                    hit = pool.reuse(rid, min(pool.cached(rid), (r.prompt_tokens - 1) // bs))
                remaining = r.prompt_tokens - r.prefilled - hit * bs
                want = remaining if whole else min(m, remaining)
                if -(-(hit * bs + want) // bs) - hit > pool.free:
                    stop = True  # head of line: later new requests wait too
                    continue
                nblk[rid] = hit
                if hit:
                    kv[rid] = hit * bs
                    used += hit * bs
                    r.prefilled = hit * bs
                    work -= hit * bs
                    wasted -= hit * bs  # discarded at the preemption, but not computed again
                adm[rid] = n_adm
                n_adm += 1
                m = min(m, remaining)
                take(rid, m)
                kept.append((rid, m))
            if stop and not kept and not batch.decode and not hide_new and nblk:
                # no new request could be admitted and nothing else was chosen (a prefill-first policy
                # offered only new prompts): ask again with the admitted requests alone, as the token
                # rules do, so that they decode and free blocks (else the engine would stall for good)
                hide_new = True
                continue
            return view, Batch(prefill=tuple(kept), decode=batch.decode, blocked=batch.blocked), unseen, extra

    while True:
        admit_arrivals(t)
        bt.append(t)
        bn.append(len(residents) + len(swapped) + len(pending) + n_parked)
        bw.append(work)
        if t >= horizon:
            break
        if progress is not None and t >= next_report:
            progress(t, na)
            next_report = t + 1.0 + 0.02 * t
        extra_s = 0.0
        # swap-ins first, oldest first, while their KV fits
        while swapped and (used + swapped[0][1] <= kv_cap if not paged else -(-swapped[0][1] // bs) <= pool.free):
            r, held = swapped.pop(0)
            if paged:
                pool.alloc(-(-held // bs))
                nblk[r.rid] = -(-held // bs)
            used += held
            kv[r.rid] = held
            swap_tokens += held
            extra_s += held * swap_s_per_token
            residents.append(r)
            residents.sort(key=lambda q: (q.arrival_s, q.rid))
        if window:
            show_waiting()
        if not residents:
            if na >= n:
                break
            t = min(horizon, arr[na])
            continue
        if kv_cap is not None:
            n_admitted = sum(1 for q in residents if kv[q.rid] > 0)
        batch = None
        # new requests (holding no KV) are not admitted while swapped-out ones wait, after a preemption
        # in this iteration, or when the head of the admission queue does not fit
        if paged:
            view, batch, unseen, swap_s = paged_batch(t)
            extra_s += swap_s
        else:
            hide_new = bool(swapped)
            for _attempt in range(2 * len(residents) + 8):
                visible = [q for q in residents if kv[q.rid] > 0] if hide_new else residents
                unseen = 0 if hide_new else hidden_demand  # demand of the waiting requests not in view
                view, batch = ask(visible, t, None if kv_cap is None else kv_cap - used)
                if kv_cap is None:
                    break
                dc = batch.decode
                room = kv_cap - used - len(dc)
                if room >= 0:
                    # headroom: one token per request already holding KV, so that admitting new work
                    # does not force a preemption at the next decode step (vLLM's watermark, simplified)
                    reserve = n_admitted
                    kept = []
                    dropped_new = False
                    for rid, m in batch.prefill:
                        if kv[rid] == 0:  # admission: the whole remaining prompt must fit, plus the headroom
                            r = by_id[rid]
                            avail = room if r.prompt_tokens - r.prefilled + reserve <= room else 0
                        else:
                            avail = room
                        if m <= avail:
                            kept.append((rid, m))
                            room -= m
                        elif chunkable and avail > 0:
                            kept.append((rid, avail))
                            room -= avail
                        elif kv[rid] == 0:
                            dropped_new = True
                            break  # admission is head-of-line: later new requests wait too
                    trimmed = Batch(prefill=tuple(kept), decode=dc, blocked=batch.blocked)
                    if dropped_new and not hide_new and (trimmed.empty or room > reserve):
                        hide_new = True
                        continue  # ask again without the requests that cannot be admitted now
                    if not trimmed.empty:
                        batch = trimmed
                        break
                    if n_admitted == 0:
                        batch = trimmed
                        break
                    # nothing can run although requests hold memory: preempt one
                admitted = [q for q in residents if kv[q.rid] > 0]
                cands = _victim_order(policy, admitted, t)[::-1]
                victim = None
                for q in cands:
                    if may_evict is None or may_evict(q, t):
                        victim = q
                        break
                if victim is None:
                    free = kv_cap - used
                    if len(dc) > free > 0:
                        batch = Batch(prefill=(), decode=tuple(dc[:free]), blocked=batch.blocked)
                        break
                    if not cands:
                        batch = Batch()
                        break
                    victim = cands[0]
                extra_s += preempt(victim, t)
                n_admitted -= 1
                hide_new = True
        if not paged and kv_cap is not None and batch is not None and batch.tokens > kv_cap - used:  # never exceed memory
            free = max(0, kv_cap - used)
            batch = Batch(prefill=(), decode=tuple(batch.decode[:free]), blocked=batch.blocked)
        if batch is None or batch.empty:
            if extra_s > 0:
                t += extra_s
                busy += extra_s
                continue
            if na >= n:
                break
            t = min(horizon, arr[na])
            continue
        tokens = batch.tokens
        if compose is not None:  # the batch's composition: prefill chunks with prior context, decode contexts
            if kv_cap is not None:
                ctxs = [kv[rid] for rid in batch.decode]
                tau = compose([(m, kv[rid]) for rid, m in batch.prefill], ctxs)
            else:
                ctxs = [by_id[rid].prefilled + by_id[rid].decoded - emit_at_prefill for rid in batch.decode]
                tau = compose([(m, by_id[rid].prefilled) for rid, m in batch.prefill], ctxs)
            kvr = sum(ctxs)
        elif ks:
            kvr = 0
            for rid in batch.decode:
                kvr += kv[rid] if kv_cap is not None else by_id[rid].prefilled + by_id[rid].decoded
            tau = tau_b[tokens] + ks * kvr
        else:
            kvr = 0
            tau = tau_b[tokens]
        if record:
            rec["t_s"].append(t)
            rec["prefill_tokens"].append(batch.prefill_tokens)
            rec["decode_tokens"].append(batch.decode_tokens)
            rec["requests"].append(batch.n_requests)
            rec["batch_s"].append(tau + extra_s)
            rec["demand"].append(view.demand + unseen)
            if not ks and compose is None:
                kvr = sum(by_id[rid].prefilled + by_id[rid].decoded - by_id[rid].recompute_tokens
                          for rid in batch.decode)
            rec["kv_tokens"].append(kvr)
        if record_batches:
            batches.append(batch)
        t0 = t
        t += tau
        if extra_s:
            t += extra_s
        n_iter += 1
        busy += tau + extra_s
        tok_served += tokens
        admit_arrivals(t)
        work -= tokens
        if batch.prefill and batch.decode:
            mixed_iters += 1
        done = False
        useful = 0
        for rid, m in batch.prefill:
            r = by_id[rid]
            if record and paged:  # prompt tokens computed for the first time
                top = min(r.prefilled + m, r.prompt_tokens - r.recompute_tokens)
                if top > hwm.get(rid, 0):
                    useful += top - hwm.get(rid, 0)
                    hwm[rid] = top
            if fs[rid] != fs[rid]:
                fs[rid] = t0
                if window and rid >= n0:
                    n_fresh -= 1
            r.prefilled += m
            if r.first_scheduled_s != r.first_scheduled_s:
                r.first_scheduled_s = t0
            if kv_cap is not None:
                kv[rid] += m
                used += m
            if r.prefilled >= r.prompt_tokens and pdn[rid] != pdn[rid]:
                pdn[rid] = t
                if emit_at_prefill and r.decoded == 0:  # the prefill's iteration gives the first token
                    r.decoded = 1
                    ftk[rid] = t
                    work -= 1
                    useful += 1
            if r.prefilled >= r.prompt_tokens and r.decoded >= r.output_tokens:
                done = True
                fin[rid] = t
        for rid in batch.decode:
            r = by_id[rid]
            r.decoded += 1
            if kv_cap is not None:
                kv[rid] += 1
                used += 1
            if r.decoded == 1:
                ftk[rid] = t
            if r.decoded >= r.output_tokens:
                fin[rid] = t
                done = True
        if kv_cap is not None:
            peak_kv = max(peak_kv, used)
            if record:
                rec["kv_used"].append(used)
        if done:
            keep = []
            for r in residents:
                if r.decoded >= r.output_tokens and r.prefilled >= r.prompt_tokens:
                    if kv_cap is not None:
                        used -= kv.pop(r.rid)
                    if paged:
                        pool.release(r.rid, nblk.pop(r.rid))
                        pool.forget(r.rid)
                    by_id.pop(r.rid, None)
                else:
                    keep.append(r)
            residents = keep
        if record and paged:
            rec["resident"].append(len(nblk))
            rec["waiting"].append(len(residents) - len(nblk) + len(swapped) + len(pending) + n_parked)
            rec["useful_tokens"].append(useful + len(batch.decode))
    return {"first_scheduled_s": fs, "prefill_done_s": pdn, "first_token_s": ftk, "finish_s": fin,
            "backlog": (bt, bn, bw), "iterations": n_iter, "busy_s": busy, "mixed_iterations": mixed_iters,
            "tokens_served": tok_served, "records": rec, "end_s": t, "n_blocked": len(blocked_ids), "n_arrived": na,
            "preemptions_per_request": npre, "preemptions": preemptions, "wasted_tokens": wasted,
            "swap_tokens": swap_tokens, "rejected": rejected, "peak_kv_tokens": peak_kv, "batches": batches,
            "examined": examined}
