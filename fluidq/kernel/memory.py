"""KV-cache state and rules for one engine on the Python path: the memory rules, written once.

Moved here from ``fluidq.sim._admission`` and ``fluidq.sim._memory`` (2026-12-06; those paths re-export
these objects): they import only the policies' :class:`~fluidq.policies.base.Batch`, so they belong to the
kernel layer, next to the loop that drives them (:mod:`fluidq.kernel.step`).

:class:`BlockPool` is the paged state behind :class:`fluidq.engine.Memory` with ``kind="blocks"`` (and
``kind="tokens"`` under non-default rules, as blocks of one token).  Free blocks form one queue:
never-used blocks first, then freed ones in the order they were freed (least recently freed is
handed out first).  With prefix caching a request's blocks are queued tail first when it is
preempted or finishes, so its leading blocks survive longest; :meth:`BlockPool.reuse` takes back the
leading blocks of a request that are still cached.  Handing out a block that still holds a
request's contents evicts it, and with it that request's cached prefix from that block on.

:class:`StationMemory` holds one engine's KV state (tokens held per resident, swapped-out requests, the
:class:`BlockPool`) and applies, batch by batch, the rules the notes of :mod:`fluidq.kernel.step` state:
rejection at arrival of a request that can never fit, swap-ins first, the token rules (whole remaining
prompt plus one token of headroom per resident, head-of-line admission, the policy asked again without new
requests, the victim last in the policy's ordering honouring ``may_evict``) and, for any other
:class:`~fluidq.engine.Memory`, the paged rules (running requests' blocks first, the victim by
``memory.victim``, then head-of-line admission by ``memory.reservation``, prefix caching).  Both drivers
use this one copy: the single-engine ``select()`` loop (:func:`fluidq.kernel.step.run_generic`, requests
from a list known up front) and the stations of :func:`fluidq.simulate_network` (requests from the event
loop).  ``tests/network/test_network_kv.py`` holds the two drivers equal: a one-station network gives the
single-engine run exactly (times, iterations, preemptions) for every built-in scheduler under no memory,
token KV and block KV (with and without prefix caching).

The compiled loops restate the token and paged rules (recompute and swap, prefix caching) in array form for
the built-in FCFS schedulers: :mod:`fluidq.kernel.kvrules` (the decisions and the block pool), which the KV
stations of :mod:`fluidq.kernel.network` call, and :mod:`fluidq.kernel.kv` (what ``simulate`` runs), which
calls its block pool and writes the decisions out in its loop (calls cost it up to 6 %).
``tests/sim/test_sim_kv_kernel.py`` holds the kernel identical to this one (times, preemptions, records) on
random engines, memories and workloads, ``tests/network/test_network_kernel_kv.py`` the network loop to the
Python network path and ``tests/kernel/test_kvrules_pool.py`` the compiled pool to :class:`BlockPool`: a
change to these rules must be made here, in ``kvrules`` and in kv.py's loop.

The caller owns the request objects (:class:`~fluidq.policies.base.RequestState`) and its own token
accounting; ``on_preempt(r, held, recomputed)`` tells it that ``r`` lost ``held`` KV tokens (with
``recomputed`` they must be prefilled again; else they were swapped out), ``on_reuse(r, tokens)`` that a
re-admitted request took back ``tokens`` cached prompt tokens.
"""
from __future__ import annotations

from collections import deque

from ..policies.base import Batch

__all__ = ["BlockPool", "StationMemory"]


class BlockPool:
    """``total`` KV blocks; ``free`` of them unallocated (cached or never used)."""

    def __init__(self, total: int, caching: bool):
        self.total = total
        self.free = total
        self.fresh = total  # never-used blocks at the head of the free queue
        self.queue: deque = deque()  # (request, block index, generation) of freed, still-cached blocks
        self.caching = caching
        self.cached_upto: dict = {}  # request -> leading blocks of it still cached
        self.stamp: dict = {}  # request -> generation of its last release (skips stale queue entries)
        self.taken: set = set()  # queue entries taken back by their owner (no longer free)

    def alloc(self, k: int) -> None:
        """Take ``k <= free`` blocks off the free queue (evicting cached contents as needed)."""
        self.free -= k
        while k > 0:
            if self.fresh > 0:
                take = min(k, self.fresh)
                self.fresh -= take
                k -= take
                continue
            entry = self.queue.popleft()
            if entry in self.taken:  # reused by its owner since: not free
                self.taken.discard(entry)
                continue
            i, j, g = entry
            if g == self.stamp.get(i) and j < self.cached_upto.get(i, 0):
                self.cached_upto[i] = j  # evicted: the owner's cached prefix ends here
            k -= 1

    def release(self, i, nblocks: int) -> None:
        """Free the ``nblocks`` blocks of request ``i`` (kept as its cached prefix with caching)."""
        self.free += nblocks
        g = self.stamp.get(i, 0) + 1
        self.stamp[i] = g
        if not self.caching:
            self.fresh += nblocks
            return
        self.cached_upto[i] = nblocks
        for j in range(nblocks - 1, -1, -1):  # tail first: the prefix survives longest
            self.queue.append((i, j, g))

    def cached(self, i) -> int:
        """Leading blocks of request ``i`` still cached."""
        return self.cached_upto.get(i, 0)

    def reuse(self, i, nblocks: int) -> int:
        """Take back up to ``nblocks`` leading cached blocks of request ``i``; return how many.
        Its other freed blocks stay in the queue as ordinary free blocks."""
        hit = int(min(self.cached_upto.get(i, 0), nblocks))
        g = self.stamp.get(i, 0)
        for j in range(hit):
            self.taken.add((i, j, g))
        self.free -= hit
        self.cached_upto[i] = 0
        return hit

    def forget(self, i) -> None:
        """Request ``i`` left the system: its cached blocks are ordinary free blocks."""
        self.cached_upto.pop(i, None)
        self.stamp.pop(i, None)


def _unfinished(admitted):
    """The requests of ``admitted`` that may be preempted: not those that finished in the batch in flight and
    still hold their KV until their output is read (async scheduling, :class:`fluidq.kernel.step.EngineRun`):
    their blocks are freed when that output is read, and preempting them would recompute a finished request."""
    return [q for q in admitted if q.decoded < q.output_tokens or q.prefilled < q.prompt_tokens]


def _victim_order(policy, admitted, now):
    """The admitted requests in the policy's ordering (arrival order without one); the victim is last."""
    order = getattr(policy, "order", None)
    if order is not None and hasattr(order, "order"):
        return list(order.order(admitted, now))
    return sorted(admitted, key=lambda r: (r.arrival_s, r.rid))


def _may_evict_hook(policy):
    """The ordering's (or policy's) optional ``may_evict(request, now_s) -> bool``, or ``None``."""
    for obj in (getattr(policy, "order", None), policy):
        f = getattr(obj, "may_evict", None)
        if callable(f):
            return f
    return None


class StationMemory:
    """KV state and rules of one engine with ``kv_cap`` tokens of cache under ``memory``."""

    def __init__(self, policy, kv_cap, memory, preemption, swap_s_per_token, on_preempt, on_reuse):
        self.policy = policy
        self.kv_cap = kv_cap
        self.chunkable = bool(getattr(policy, "chunked", False))
        self.may_evict = _may_evict_hook(policy)
        self.preemption = preemption
        self.swap_s = swap_s_per_token
        self.on_preempt = on_preempt
        self.on_reuse = on_reuse
        self.residents: list = []  # in arrival order (swapped-out ones are out of it)
        self.kv: dict = {}
        self.req: dict = {}  # rid -> request, for every request added and not yet released
        self.swapped: list = []  # (request, tokens held), oldest first
        self.used = 0
        self.preemptions = 0
        self.rejected = 0
        self.wasted = 0
        self.swap_tokens = 0
        self.peak = 0
        self.paged = memory is not None and not memory.default_rules
        if self.paged:
            self.bs = memory.block_size
            self.pool = BlockPool(kv_cap // self.bs, memory.prefix_caching)
            self.nblk: dict = {}
            self.adm: dict = {}
            self.n_adm = 0
            self.most_recent = memory.victim == "most_recent"
            self.whole = memory.reservation == "whole_prompt"

    # -- arrivals and departures ------------------------------------------------------------------
    def rejects(self, p: int, d: int) -> bool:
        """Whether a request of ``p`` prompt and ``d`` output tokens can never fit (counted)."""
        bad = (p + d > self.kv_cap) if not self.paged else -(-(p + d) // self.bs) > self.pool.total
        if bad:
            self.rejected += 1
        return bad

    def add(self, r, resident: bool = True) -> None:
        """A new request holding no KV; ``resident=False``: the caller puts it among the residents
        later (the generic kernel's window of waiting requests)."""
        if resident:
            self.residents.append(r)
        self.kv[r.rid] = 0
        self.req[r.rid] = r

    def hold(self, r, held: int) -> bool:
        """Add ``r`` as a resident already holding ``held`` KV tokens (a run's initial state), admitted in
        this order; ``False`` when the paged cache has no blocks left for it."""
        self.residents.append(r)
        self.kv[r.rid] = held
        self.req[r.rid] = r
        self.used += held
        if self.paged and held > 0:
            k = -(-held // self.bs)
            if k > self.pool.free:
                return False
            self.pool.alloc(k)
            self.nblk[r.rid] = k
            self.adm[r.rid] = self.n_adm
            self.n_adm += 1
        return True

    def grow(self, rid, m: int) -> None:
        """``m`` more KV tokens computed for ``rid`` (its blocks were taken when the batch was formed)."""
        self.kv[rid] += m
        self.used += m

    def after_batch(self, finished) -> None:
        """Release the requests of ``finished`` (their hop is done) and note the peak."""
        if self.used > self.peak:
            self.peak = self.used
        if not finished:
            return
        gone = {r.rid for r in finished}
        for rid in gone:
            self.used -= self.kv.pop(rid)
            del self.req[rid]
            if self.paged:
                self.pool.release(rid, self.nblk.pop(rid))
                self.pool.forget(rid)
        self.residents = [q for q in self.residents if q.rid not in gone]

    # -- one batch --------------------------------------------------------------------------------
    def _preempt(self, r) -> float:
        held = self.kv[r.rid]
        self.used -= held
        self.kv[r.rid] = 0
        if self.paged:
            self.pool.release(r.rid, self.nblk.pop(r.rid, 0))
        self.preemptions += 1
        r.preemptions += 1
        if self.preemption == "swap":
            self.swap_tokens += held
            self.residents = [q for q in self.residents if q.rid != r.rid]
            self.swapped.append((r, held))
            self.on_preempt(r, held, False)
            return held * self.swap_s
        self.wasted += held
        base = r.prompt_tokens - r.recompute_tokens
        r.recompute_tokens = r.decoded
        r.prompt_tokens = base + r.decoded
        r.prefilled = 0
        self.on_preempt(r, held, True)
        return 0.0

    def form(self, t, ask):
        """The batch to run at ``t`` and the swap seconds it adds: ``(batch or None, extra_s)``.

        ``ask(visible, t, kv_free)`` calls the policy on the requests ``visible`` and returns
        ``(view, batch)``; ``batch is None`` when no request is resident.
        """
        extra_s = 0.0
        swapped = self.swapped
        paged = self.paged
        while swapped and (self.used + swapped[0][1] <= self.kv_cap if not paged
                           else -(-swapped[0][1] // self.bs) <= self.pool.free):
            r, held = swapped.pop(0)
            if paged:
                self.pool.alloc(-(-held // self.bs))
                self.nblk[r.rid] = -(-held // self.bs)
            self.used += held
            self.kv[r.rid] = held
            self.swap_tokens += held
            extra_s += held * self.swap_s
            self.residents.append(r)
            self.residents.sort(key=lambda q: (q.arrival_s, q.rid))
        if not self.residents:
            return None, extra_s
        if paged:
            batch, swap_s = self._paged(t, ask)
            return batch, extra_s + swap_s
        batch, swap_s = self._tokens(t, ask)
        extra_s += swap_s
        if batch is not None and batch.tokens > self.kv_cap - self.used:  # never exceed memory
            free = max(0, self.kv_cap - self.used)
            batch = Batch(prefill=(), decode=tuple(batch.decode[:free]), blocked=batch.blocked)
        return batch, extra_s

    def _tokens(self, t, ask):
        """The default token rules (see :mod:`fluidq.kernel.step`)."""
        kv, kv_cap = self.kv, self.kv_cap
        residents = self.residents
        n_admitted = sum(1 for q in residents if kv[q.rid] > 0)
        hide_new = bool(self.swapped)
        extra_s = 0.0
        batch = None
        for _attempt in range(2 * len(residents) + 8):
            residents = self.residents
            visible = [q for q in residents if kv[q.rid] > 0] if hide_new else residents
            _, batch = ask(visible, t, kv_cap - self.used)
            dc = batch.decode
            room = kv_cap - self.used - len(dc)
            if room >= 0:
                reserve = n_admitted
                kept = []
                dropped_new = False
                by_id = self.req
                for rid, m in batch.prefill:
                    if kv[rid] == 0:
                        r = by_id[rid]
                        avail = room if r.prompt_tokens - r.prefilled + reserve <= room else 0
                    else:
                        avail = room
                    if m <= avail:
                        kept.append((rid, m))
                        room -= m
                    elif self.chunkable and avail > 0:
                        kept.append((rid, avail))
                        room -= avail
                    elif kv[rid] == 0:
                        dropped_new = True
                        break
                trimmed = Batch(prefill=tuple(kept), decode=dc, blocked=batch.blocked)
                if dropped_new and not hide_new and (trimmed.empty or room > reserve):
                    hide_new = True
                    continue
                if not trimmed.empty or n_admitted == 0:
                    return trimmed, extra_s
            admitted = _unfinished([q for q in residents if kv[q.rid] > 0])
            cands = _victim_order(self.policy, admitted, t)[::-1]
            victim = None
            for q in cands:
                if self.may_evict is None or self.may_evict(q, t):
                    victim = q
                    break
            if victim is None:
                free = kv_cap - self.used
                if len(dc) > free > 0:
                    return Batch(prefill=(), decode=tuple(dc[:free]), blocked=batch.blocked), extra_s
                if not cands:
                    return Batch(), extra_s
                victim = cands[0]
            extra_s += self._preempt(victim)
            n_admitted -= 1
            hide_new = True
        return batch, extra_s

    def _take(self, rid, m):
        k = -(-(self.kv[rid] + m) // self.bs) - self.nblk[rid]
        if k > 0:
            self.pool.alloc(k)
            self.nblk[rid] += k

    def _paged(self, t, ask):
        """The block rules (see :mod:`fluidq.kernel.step`)."""
        pool, bs, nblk, kv = self.pool, self.bs, self.nblk, self.kv
        extra = 0.0
        hide_new = bool(self.swapped)
        while True:
            residents = self.residents
            visible = [q for q in residents if q.rid in nblk] if hide_new else residents
            _, batch = ask(visible, t, pool.free * bs)
            need = 0
            for rid, m in batch.prefill:
                if rid in nblk:
                    need += -(-(kv[rid] + m) // bs) - nblk[rid]
            for rid in batch.decode:
                need += -(-(kv[rid] + 1) // bs) - nblk[rid]
            if need > pool.free:
                admitted = _unfinished([q for q in residents if q.rid in nblk])
                if self.most_recent:
                    victim = max(admitted, key=lambda q: self.adm[q.rid])
                else:
                    cands = _victim_order(self.policy, admitted, t)[::-1]
                    victim = next((q for q in cands if self.may_evict is None or self.may_evict(q, t)), cands[0])
                extra += self._preempt(victim)
                continue
            running = {rid for rid, _ in batch.prefill if rid in nblk}
            for rid, m in batch.prefill:
                if rid in running:
                    self._take(rid, m)
            for rid in batch.decode:
                self._take(rid, 1)
            kept = []
            stop = False
            by_id = self.req
            for rid, m in batch.prefill:
                if rid in running:
                    kept.append((rid, m))
                    continue
                if stop:
                    continue
                r = by_id[rid]
                hit = 0
                if pool.caching and pool.cached(rid) > 0:
                    if -(-r.prompt_tokens // bs) > pool.free:
                        stop = True
                        continue
                    hit = pool.reuse(rid, min(pool.cached(rid), (r.prompt_tokens - 1) // bs))
                remaining = r.prompt_tokens - r.prefilled - hit * bs
                want = remaining if self.whole else min(m, remaining)
                if -(-(hit * bs + want) // bs) - hit > pool.free:
                    stop = True
                    continue
                nblk[rid] = hit
                if hit:
                    kv[rid] = hit * bs
                    self.used += hit * bs
                    r.prefilled = hit * bs
                    self.wasted -= hit * bs
                    self.on_reuse(r, hit * bs)
                self.adm[rid] = self.n_adm
                self.n_adm += 1
                m = min(m, remaining)
                self._take(rid, m)
                kept.append((rid, m))
            if stop and not kept and not batch.decode and not hide_new and nblk:
                # no new request could be admitted and nothing else was chosen (a prefill-first policy
                # offered only new prompts): ask again with the admitted requests alone, as the token
                # rules do, so that they decode and free blocks (else the engine would stall for good)
                hide_new = True
                continue
            return Batch(prefill=tuple(kept), decode=batch.decode, blocked=batch.blocked), extra
