"""The kernel's ``select()`` loop: ``policy.select(view)`` at every iteration, with optional KV-cache memory.

This path runs any policy (a user's object, an ordering whose keys change with time) and is the
reference the compiled loops (:mod:`fluidq.kernel.fcfs`, :mod:`fluidq.kernel.kv`) are tested against.
It moved here from ``fluidq.sim._generic`` (2026-12-06, issue 14; that path re-exports
:func:`run_generic` and :class:`PolicyError`): it imports only the errors and the policies, so it belongs
to the kernel layer, and :func:`fluidq.simulate` drives it.  One iteration is :func:`run_generic`'s inner
``step()`` (admit what the scheduler sees, ask the policy through the memory rules, charge the batch's
time, advance its requests, release the finished ones); the run is ``while step(): pass``.  The step is
a closure over the run's state (its queues, memory and counters are locals of :func:`run_generic`, which
keeps the hot path on fast local reads), not yet a function of an explicit state that one event clock
could call for every station of a network (``fluidq.sim.network`` has its own loop).

Memory (``kv_capacity_tokens``) follows these rules, applied by
:class:`fluidq.kernel.memory.StationMemory` (their one written copy, which the stations of a network
drive too):

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
:class:`~fluidq.engine.Memory` is *paged* (:class:`~fluidq.kernel.memory.BlockPool`): a request holds
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

Async scheduling (``async_scheduling``, vLLM's ``--async-scheduling``, on by default since vLLM
0.14): the engine schedules batch ``k + 1`` while batch ``k`` runs and reads batch ``k``'s outputs
only after that.  So the batch starting at ``t`` sees the arrivals up to the start of the batch
before it (a request arriving during batch ``k`` runs in batch ``k + 2``), and a request that
finishes in batch ``k`` keeps its ``k_max`` slot and its KV through batch ``k + 1`` (it is given no
token there).  When nothing is scheduled for the next batch the engine reads every output and
arrival at once.  Decodes continue without a gap (the next token is fed on the device).

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
from ..policies.base import QueueView, RequestState, batch_violations
from .memory import StationMemory, _may_evict_hook, _victim_order  # noqa: F401 (re-exported)

NAN = math.nan
INF = math.inf


class PolicyError(FluidqError, RuntimeError):
    """A policy returned a batch that breaks the batch constraints (6a)-(6d) or k_max."""


class _Residents:
    """The resident list of a run without memory (with memory, :class:`StationMemory` owns it)."""

    def __init__(self):
        self.residents: list = []


def run_generic(arr, P, D, *, policy, b_max, k_max, tau_b, ks, horizon, record, check, kv_cap=None,
                preemption="recompute", swap_s_per_token=0.0, record_batches=False, initial=(),
                progress=None, window=False, memory=None, compose=None, emit_at_prefill=False,
                async_scheduling=False):
    """Simulate; return a dict of plain lists.

    ``window=True`` (only for a built-in FCFS :class:`~fluidq.policies.Scheduler`, without ``initial``
    residents or batch records) shows the policy the served requests and the oldest waiting ones it
    could admit, not the whole queue (see the module's notes); the results are the same.

    With ``kv_cap``, the memory rules are those of :class:`fluidq.kernel.memory.StationMemory` (the
    one written copy, which the network stations drive too): the token rules, or with a ``memory``
    other than the default, the paged ones (see the module's notes).  ``compose(prefill_chunks,
    decode_contexts)`` replaces ``tau_b`` by the batch's composition; ``emit_at_prefill`` makes the
    iteration completing a prefill give the first output token.  ``async_scheduling`` forms each batch
    while the previous one runs (see the module's notes).
    """
    n = len(arr)
    n0 = len(initial)
    N = n0 + n
    fs = [NAN] * N
    pdn = [NAN] * N
    ftk = [NAN] * N
    fin = [NAN] * N
    npre = [0] * N
    by_id: dict = {}
    batches = [] if record_batches else None
    blocked_ids: set = set()
    work = 0

    def on_preempt(r, held, recomputed):
        nonlocal work
        npre[r.rid] += 1
        if recomputed:
            work += held  # the discarded prompt and generated tokens must be prefilled again

    def on_reuse(r, tokens):
        nonlocal work
        work -= tokens  # cached prompt tokens taken back: not computed again

    mem = None if kv_cap is None else StationMemory(policy, kv_cap, memory, preemption, swap_s_per_token,
                                                    on_preempt, on_reuse)
    hold = _Residents() if mem is None else mem
    no_swapped: list = []
    swapped = no_swapped if mem is None else mem.swapped  # (mem.swapped is never rebound)
    paged = mem is not None and mem.paged
    if paged:
        hwm: dict = {}  # prompt tokens ever computed per request (recomputation is not useful work)
    rec = {"t_s": [], "prefill_tokens": [], "decode_tokens": [], "requests": [], "batch_s": [],
           "demand": [], "kv_tokens": []} if record else None
    if record and kv_cap is not None:
        rec["kv_used"] = []
    if record and paged:
        rec.update(resident=[], waiting=[], useful_tokens=[])
    examined = 0  # requests shown to the policy, summed over select calls (the kernel's cost)
    pending: deque = deque()  # with window: waiting requests not yet shown to the policy, in arrival order
    n_fresh = 0  # with window: requests in view never served that the policy could admit
    n_parked = 0  # with window: waiting requests reported blocked (never schedulable), set aside
    hidden_demand = 0  # prompt tokens of the pending and parked requests
    last_view = None  # the view of the last select call, and the demand it did not show
    last_unseen = 0
    if window:
        b_eff, k_eff = policy.budgets(QueueView(requests=(), now_s=0.0, b_max=b_max, k_max=k_max))
        w_size = int(min(b_eff, k_eff)) + 1
        # a prompt that a non-chunking scheduler can never fit does not count towards the window
        never_fits = INF if (policy.chunked or policy.chunk_long_prompts) else b_eff
    for j, r0 in enumerate(initial):
        r = RequestState(rid=j, arrival_s=float(r0.arrival_s), prompt_tokens=int(r0.prompt_tokens),
                         output_tokens=int(r0.output_tokens), prefilled=int(r0.prefilled), decoded=int(r0.decoded),
                         score=r0.score)
        by_id[j] = r
        work += r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded
        if mem is None:
            hold.residents.append(r)
        elif not mem.hold(r, r.prefilled + r.decoded):
            raise ParameterError("initial", f"<{n0} residents>", f"residents whose KV fits in the "
                                 f"{mem.pool.total} blocks of {mem.bs} tokens of the cache")
    t = 0.0
    na = 0
    bt, bn, bw = [], [], []
    n_iter = 0
    busy = 0.0
    mixed_iters = 0
    tok_served = 0
    next_report = 0.0

    def admit_arrivals(t):
        """Admit every arrival up to time ``t``, recording the backlog at each arrival's own time."""
        nonlocal na, work, hidden_demand
        while na < n and arr[na] <= t:
            i = na
            na += 1
            rid = n0 + i
            if mem is not None and mem.rejects(P[i], D[i]):
                continue
            r = RequestState(rid=rid, arrival_s=float(arr[i]), prompt_tokens=int(P[i]), output_tokens=int(D[i]))
            if window:
                pending.append(r)
                hidden_demand += r.prompt_tokens
            if mem is not None:
                mem.add(r, resident=not window)
            elif not window:
                hold.residents.append(r)
            by_id[rid] = r
            work += P[i] + D[i]
            bt.append(arr[i])
            bn.append(len(hold.residents) + len(swapped) + len(pending) + n_parked)
            bw.append(work)

    def show_waiting():
        """Move waiting requests into view until it holds ``w_size`` the policy could admit."""
        nonlocal n_fresh, hidden_demand
        while pending and n_fresh < w_size:
            r = pending.popleft()
            hold.residents.append(r)
            hidden_demand -= r.prompt_tokens
            if r.prompt_tokens <= never_fits:
                n_fresh += 1

    def ask(visible, t, kv_free):
        """``policy.select`` on the requests in ``visible``; checks the batch, sets blocked ones aside.
        A view of every resident (``visible is hold.residents``) leaves unseen only the window's
        hidden demand; a view narrowed by the memory rules shows none of it."""
        nonlocal examined, n_parked, hidden_demand, n_fresh, last_view, last_unseen
        last_unseen = hidden_demand if visible is hold.residents else 0
        view = QueueView(requests=tuple(visible), now_s=t, b_max=b_max, k_max=k_max, kv_free_tokens=kv_free)
        last_view = view
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
                    for q in hold.residents:
                        if q.rid in gone:
                            n_parked += 1
                            hidden_demand += q.prompt_tokens
                            if q.prompt_tokens <= never_fits:  # pragma: no cover - it blocks only those
                                n_fresh -= 1
                    hold.residents = [q for q in hold.residents if q.rid not in gone]
        return view, batch

    # async scheduling (vLLM's --async-scheduling): the batch about to run was scheduled while the
    # previous one ran, so it sees the arrivals up to that batch's start (t_seen) and the requests
    # finished in it (lag_fin) still hold their slots and KV blocks
    k_max0 = k_max
    lag_fin: list = []
    t_seen = None

    def release(fin):
        """Take the finished requests ``fin`` out of the engine (their KV is freed)."""
        if mem is not None:
            mem.after_batch(fin)  # releases their KV (and notes the peak)
        elif fin:
            gone = {r.rid for r in fin}
            hold.residents = [r for r in hold.residents if r.rid not in gone]
        for r in fin:
            by_id.pop(r.rid, None)

    def step():
        """One iteration of the engine at time ``t`` -- the kernel's ``step``: admit the arrivals the
        scheduler can see, form the batch (``policy.select`` through :func:`ask`, with the memory rules of
        :class:`~fluidq.kernel.memory.StationMemory` when there is a KV cache), charge its time, advance
        every request in it and release the finished ones.  An idle engine jumps to the next arrival
        instead; a memory pass that only swaps in charges the swap time.  Returns ``False`` when the run
        is over (the horizon is reached, or nothing is left to arrive or run), else ``True``."""
        nonlocal t, t_seen, k_max, lag_fin, work, n_iter, busy, tok_served, mixed_iters, next_report, n_fresh
        admit_arrivals(t if t_seen is None else t_seen)
        bt.append(t)
        bn.append(len(hold.residents) + len(swapped) + len(pending) + n_parked)
        bw.append(work)
        if t >= horizon:
            return False
        if progress is not None and t >= next_report:
            progress(t, na)
            next_report = t + 1.0 + 0.02 * t
        if window:
            show_waiting()
        if not hold.residents and not swapped:
            if na >= n:
                return False
            t = max(t, min(horizon, arr[na]))
            t_seen = None
            return True
        if async_scheduling and k_max0 is not None:
            # requests finished in the batch in flight still hold their max_num_seqs slots
            k_max = k_max0 - len(lag_fin)
            if k_max < 1:  # every slot is held by a finished request: read the outputs first
                k_max = k_max0
                release(lag_fin)
                lag_fin = []
                t_seen = None
                return True
        if mem is None:
            view, batch = ask(hold.residents, t, None)
            extra_s = 0.0
        else:
            # swap-ins, admission and preemption by the memory rules (one written copy)
            batch, extra_s = mem.form(t, ask)
            view = last_view
        unseen = last_unseen
        if batch is None or batch.empty:
            if async_scheduling and (lag_fin or t_seen is not None):
                # nothing in flight: the engine sees every output and arrival now
                release(lag_fin)
                lag_fin = []
                t_seen = None
                return True
            if extra_s > 0:
                t += extra_s
                busy += extra_s
                return True
            if na >= n:
                return False
            t = min(horizon, arr[na])
            return True
        tokens = batch.tokens
        if compose is not None:  # the batch's composition: prefill chunks with prior context, decode contexts
            if mem is not None:
                kv = mem.kv
                ctxs = [kv[rid] for rid in batch.decode]
                tau = compose([(m, kv[rid]) for rid, m in batch.prefill], ctxs)
            else:
                ctxs = [by_id[rid].prefilled + by_id[rid].decoded - emit_at_prefill for rid in batch.decode]
                tau = compose([(m, by_id[rid].prefilled) for rid, m in batch.prefill], ctxs)
            kvr = sum(ctxs)
        elif ks:
            kvr = 0
            for rid in batch.decode:
                kvr += mem.kv[rid] if mem is not None else by_id[rid].prefilled + by_id[rid].decoded
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
        if async_scheduling:
            admit_arrivals(t0)  # the next batch was scheduled while this one ran
            t_seen = t0
        else:
            admit_arrivals(t)
        work -= tokens
        if batch.prefill and batch.decode:
            mixed_iters += 1
        done = False
        useful = 0
        grown = 0
        if mem is not None:
            kvd = mem.kv
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
            if mem is not None:
                kvd[rid] += m  # (StationMemory.grow, inlined: this loop is the kernel's hot path)
                grown += m
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
            if mem is not None:
                kvd[rid] += 1
                grown += 1
            if r.decoded == 1:
                ftk[rid] = t
            if r.decoded >= r.output_tokens:
                fin[rid] = t
                done = True
        if mem is not None:
            mem.used += grown
            if record:
                rec["kv_used"].append(mem.used)
        finished = [r for r in hold.residents if r.decoded >= r.output_tokens and r.prefilled >= r.prompt_tokens] \
            if done else []
        if async_scheduling:
            # the batch after this one was scheduled before this one's outputs were read: requests
            # finished here hold their slot and KV through it (vLLM's async scheduling)
            lag_ids = {r.rid for r in lag_fin}
            release(lag_fin)
            lag_fin = [r for r in finished if r.rid not in lag_ids]
        else:
            release(finished)
        if record and paged:
            rec["resident"].append(len(mem.nblk))
            rec["waiting"].append(len(hold.residents) - len(mem.nblk) + len(swapped) + len(pending) + n_parked)
            rec["useful_tokens"].append(useful + len(batch.decode))
        return True

    while step():
        pass

    m_ = mem
    return {"first_scheduled_s": fs, "prefill_done_s": pdn, "first_token_s": ftk, "finish_s": fin,
            "backlog": (bt, bn, bw), "iterations": n_iter, "busy_s": busy, "mixed_iterations": mixed_iters,
            "tokens_served": tok_served, "records": rec, "end_s": t, "n_blocked": len(blocked_ids), "n_arrived": na,
            "preemptions_per_request": npre, "preemptions": 0 if m_ is None else m_.preemptions,
            "wasted_tokens": 0 if m_ is None else m_.wasted, "swap_tokens": 0 if m_ is None else m_.swap_tokens,
            "rejected": 0 if m_ is None else m_.rejected, "peak_kv_tokens": 0 if m_ is None else m_.peak,
            "batches": batches, "examined": examined}
