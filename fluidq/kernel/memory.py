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
``memory.victim``, no admission in an iteration that preempted, as in vLLM, then head-of-line admission by
``memory.reservation``, prefix caching).  Both drivers
use this one copy: the single-engine ``select()`` loop (:func:`fluidq.kernel.step.run_generic`, requests
from a list known up front) and the stations of :func:`fluidq.simulate_network` (requests from the event
loop).  ``tests/network/test_network_kv.py`` holds the two drivers equal: a one-station network gives the
single-engine run exactly (times, iterations, preemptions) for every built-in scheduler under no memory,
token KV and block KV (with and without prefix caching).

The rules' decisions are written once, here, as plain functions over integers and explicit arrays (the section
before :class:`BlockPool`: the block arithmetic ``cdiv``/``bmod`` (a shift and a mask for a power-of-two block size,
its ``bsh``), ``never_fits``, ``swap_in_fits``, ``token_take``/``token_next``, ``blocks_needed``,
``prefix_want``/``paged_take``/``paged_retry``, ``recompute``, the no-victim and never-exceed clamps, the victim's
order ``victim_key``, and the
block pool with prefix caching ``pool_alloc``/``pool_release``/``pool_reuse``).  :class:`StationMemory` calls
the scalar ones; the compiled loops inline them for the built-in FCFS schedulers: the KV stations of
:mod:`fluidq.kernel.network` call every one but ``bmod`` (jitted where used; they divide, ``bsh`` -1), :mod:`fluidq.kernel.kv` (what ``simulate`` runs)
the jitted forms in :mod:`fluidq.kernel.kvrules` of the block pool, ``cdiv``/``bmod``/``blocks_needed``,
``never_fits``, ``swap_in_fits``, the token and paged admissions, ``prefix_want``, ``recompute``, the two
decoder clamps and the victim's order ``victim_key`` (every decision: kv.py's notes).  :class:`BlockPool`
keeps its own queue (a deque of Python tuples and dicts keyed by request: on numpy arrays from Python, as the
pool functions need, every entry would cost an array access), held to the pool functions by
``tests/kernel/test_kvrules_pool.py``.  ``tests/sim/test_sim_kv_kernel.py`` holds kv.py identical to this
module (times, preemptions, records) on random engines, memories and workloads and
``tests/network/test_network_kernel_kv.py`` the network loop to the Python network path: a change to these
rules is made here (and in kv.py's loop for the decisions it writes out); numba's cache tracks only the file of
a cached function, so touch kv.py and network.py after one.

The caller owns the request objects (:class:`~fluidq.policies.base.RequestState`) and its own token
accounting; ``on_preempt(r, tokens, recomputed)`` tells it that ``r`` was preempted: with ``recomputed``,
``tokens`` more must be processed (its new prompt less what was left of the old one: the KV it held, plus
the prefill's first token whose KV was not cached yet), else it swapped out ``tokens`` KV tokens; ``on_reuse(r, tokens)`` that a
re-admitted request took back ``tokens`` cached prompt tokens.
"""
from __future__ import annotations

from collections import deque

from ..policies.base import Batch

__all__ = ["ACCEPT", "ASK_AGAIN", "LEFT_OUT", "PREEMPT", "STOP", "BlockPool", "StationMemory", "block_shift",
           "blocks_needed", "bmod", "cdiv", "decoders_within", "never_fits", "no_victim_decoders", "paged_retry",
           "paged_take", "pool_alloc", "pool_release", "pool_reuse", "prefix_want", "recompute", "swap_in_fits",
           "token_next", "token_take", "victim_key"]


# ---- the rules' decisions, as plain functions over integers and explicit arrays ------------------------------
# Written in the subset numba compiles and calling no other function (numba does not resolve a plain module-level
# function, so the ceiling division is written out): StationMemory and BlockPool call them as they are, the
# compiled network loop (fluidq.kernel.network) inlines them (``jit(fn, inline="always")`` where used), and
# fluidq.kernel.kvrules holds their jitted forms under the same names (what fluidq.kernel.kv imports).  The token
# rules (``Memory()``) and the paged rules (any other ``Memory``) are stated in StationMemory's notes below.

#: what the token rules do after a pass over the policy's batch (:func:`token_next`)
ACCEPT, ASK_AGAIN, PREEMPT = 0, 1, 2
#: :func:`token_take` and :func:`paged_take` for a chunk that does not run: head-of-line stop, left out
STOP, LEFT_OUT = -1, -2


def cdiv(x, bs, bsh):
    """``ceil(x / bs)`` for integers; ``bsh`` is ``log2(bs)`` when ``bs`` is a power of two (vLLM's 16), else -1.

    With ``bsh >= 0`` by an arithmetic shift instead of a division: the same integer for every ``x``, negative ones
    included (a shift right floors as ``//`` does).  The compiled KV loop (:mod:`fluidq.kernel.kv`) takes the shift
    (the division by a run-time block size was 7.5 % of a vLLM run, 2026-12-07); the Python path and the network
    loop pass theirs.  :func:`blocks_needed` and :func:`prefix_want` divide the same way."""
    if bsh >= 0:
        return -((-x) >> bsh)
    return -((-x) // bs)


def bmod(x, bs, bsh):
    """``x % bs`` (Python's: in ``[0, bs)``); with ``bsh >= 0`` (``bs`` is ``2 ** bsh``) a mask, the same integer
    for every ``x`` in two's complement (the KV loop's decoders' offsets in their last block)."""
    if bsh >= 0:
        return x & (bs - 1)
    return x % bs


def block_shift(bs):
    """``log2(bs)`` when the block size ``bs`` is a power of two, else -1: the ``bsh`` the rules take."""
    return bs.bit_length() - 1 if bs > 0 and bs & (bs - 1) == 0 else -1


def never_fits(paged, p, d, bs, total, kv_cap):
    """``StationMemory.rejects``: a request of ``p`` prompt and ``d`` output tokens can never fit (``total``
    blocks of ``bs`` tokens under the paged rules, ``kv_cap`` tokens under the token rules)."""
    if paged:
        return -(-(p + d) // bs) > total
    return p + d > kv_cap


def swap_in_fits(paged, held, bs, free, used, kv_cap):
    """A swapped-out request holding ``held`` KV tokens comes back (``free`` blocks, ``used`` of ``kv_cap``
    tokens)."""
    if paged:
        return -(-held // bs) <= free
    return used + held <= kv_cap


def blocks_needed(kv, m, bs, bsh, nbk):
    """The blocks a request holding ``kv`` tokens in ``nbk`` blocks needs for ``m`` more (``<= 0``: none); ``bsh``
    as :func:`cdiv`'s."""
    if bsh >= 0:
        return -((-(kv + m)) >> bsh) - nbk
    return -((-(kv + m)) // bs) - nbk


def token_take(m, need, held, room, reserve, chunked):
    """The token rules for one prefill chunk of ``m`` tokens the policy chose, of a request with ``need``
    prompt tokens left holding ``held`` KV tokens, with ``room`` tokens left and ``reserve`` tokens of headroom
    for the admitted requests: the tokens it runs (``m``, or a chunk of the room where the scheduler chunks),
    :data:`LEFT_OUT` for a running request left out of this batch, :data:`STOP` for a new request that does not
    fit (head-of-line: no request after it is admitted)."""
    avail = room if held > 0 or need + reserve <= room else 0
    if m <= avail:
        return m
    if chunked and avail > 0:
        return avail
    if held == 0:
        return STOP
    return LEFT_OUT


def token_next(dropped, hide, empty, room, reserve, nadm):
    """After a pass of the token rules (``dropped``: a new request did not fit; ``empty``: nothing runs):
    :data:`ASK_AGAIN` the policy with the admitted requests alone, :data:`ACCEPT` the batch, or
    :data:`PREEMPT` a victim and ask again.

    With no request admitted (``nadm == 0``) the policy is not asked again: a view of the admitted requests
    alone would be empty, its batch empty, and an engine whose cache holds nothing would accept that and stall
    with work waiting (two waiting prompts that do not fit the cache together; 2026-12-07, from the hostile-input
    review).  The batch as the pass trimmed it (the new requests that fit) runs instead."""
    if dropped and not hide and nadm > 0 and (empty or room > reserve):
        return ASK_AGAIN
    if not empty or nadm == 0:
        return ACCEPT
    return PREEMPT


def prefix_want(p, bs, bsh, free):
    """A request re-admitted with its own leading blocks still cached (prompt ``p``): the cached blocks it may
    take back (all but the last block of its prompt), or :data:`STOP` when its whole prompt's blocks would not
    fit (head-of-line: stop there); ``bsh`` as :func:`cdiv`'s."""
    if bsh >= 0:
        if -((-p) >> bsh) > free:
            return STOP
        return (p - 1) >> bsh
    if -((-p) // bs) > free:
        return STOP
    return (p - 1) // bs


def paged_take(p, pf, m, hit, bs, whole, free):
    """The paged rules' reservation of a new request (prompt ``p``, ``pf`` prefilled, ``m`` tokens chosen, ``hit``
    cached blocks taken back): the tokens it runs (``m`` up to its remaining prompt), or :data:`STOP` when the
    blocks of its reservation (the whole remaining prompt, or this chunk) do not fit the ``free`` blocks."""
    remaining = p - pf - hit * bs
    want = remaining if whole or m > remaining else m
    if -(-(hit * bs + want) // bs) - hit > free:
        return STOP
    return remaining if m > remaining else m


def paged_retry(stop, kept, nd, hide, nadm):
    """Ask the policy again with the admitted requests alone: a new request did not fit (``stop``), nothing
    runs, and some request is admitted."""
    return stop and kept == 0 and nd == 0 and not hide and nadm > 0


def recompute(p, rc, dc, pf):
    """A victim preempted by recomputation: its prompt becomes the original one plus its ``dc`` generated
    tokens (``p`` held ``rc`` recomputed tokens before, ``pf`` of it prefilled); return the new ``(prompt,
    tokens to recompute, tokens to process again)``, the last the new prompt less what was left of the old one
    (the KV it held, plus the prefill's first token, whose KV was not cached yet)."""
    return p - rc + dc, dc, pf - rc + dc


def victim_key(most_recent, adm, arrival):
    """The victim rule: among the requests holding KV, the one with the largest key is preempted first -- its
    admission number ``adm`` under ``most_recent`` (vLLM: the most recently admitted), else its place in arrival
    order ``arrival`` (the latest arrival; any comparable key: ``(arrival_s, rid)`` on the Python path, the request
    id in the compiled loops, whose ids are in arrival order)."""
    if most_recent:
        return adm
    return arrival


def no_victim_decoders(nd, f):
    """The decoders that run when nothing can be preempted and ``f`` tokens are free: all ``nd`` of them cut
    to ``f``, or none."""
    if nd > f > 0:
        return f
    return 0


def decoders_within(nd, f):
    """Never exceed memory: at most ``f`` (``>= 0``) decoders, prefill dropped."""
    if f < 0:
        f = 0
    return nd if nd <= f else f


def pool_alloc(qe, off, fresh, head, k, stamp, cup):
    """``BlockPool.alloc`` with prefix caching: take ``k`` free blocks, never-used ones first, then the freed ones
    in the order they were freed (handing out a block still holding a request's prefix ends that prefix there);
    return the new ``(fresh, head)``."""
    while k > 0:
        if fresh > 0:
            take = k if k < fresh else fresh
            fresh -= take
            k -= take
            continue
        e = off + head
        head += 1
        if qe[e, 3]:  # taken back by its owner since: not free
            continue
        i = qe[e, 0]
        if qe[e, 2] == stamp[i] and qe[e, 1] < cup[i]:
            cup[i] = qe[e, 1]
        k -= 1
    return fresh, head


def pool_release(qe, off, cap, head, tail, stamp, cup, qpos, qn, i, nb):
    """``BlockPool.release`` with prefix caching: request ``i`` frees its ``nb`` blocks, kept as its cached prefix
    (queued tail first); the queue's region (``cap`` entries) is compacted first when full, dropping the entries
    handed out and those taken back (the rest are free blocks used before: with room for twice the blocks, they
    and ``nb`` fit).  Return the new ``(head, tail)``."""
    g = stamp[i] + 1
    stamp[i] = g
    cup[i] = nb
    if tail + nb > cap:
        w = 0
        for h in range(head, tail):
            if qe[off + h, 3]:
                continue
            for c in range(4):
                qe[off + w, c] = qe[off + h, c]
            q = qe[off + w, 0]
            if qe[off + w, 2] == stamp[q]:
                qpos[q] = w - (qn[q] - 1 - qe[off + w, 1])
            w += 1
        head = 0
        tail = w
        if tail + nb > cap:  # (unreachable with room for twice the blocks; written past the region otherwise)
            raise RuntimeError("fluidq kernel: the queue of freed blocks overflowed")
    qpos[i] = tail
    qn[i] = nb
    for j in range(nb - 1, -1, -1):
        e = off + tail
        qe[e, 0] = i
        qe[e, 1] = j
        qe[e, 2] = g
        qe[e, 3] = 0
        tail += 1
    return head, tail


def pool_reuse(qe, off, cup, qpos, qn, i, want):
    """``BlockPool.reuse``: request ``i`` takes back up to ``want`` leading blocks of its cached prefix (its other
    freed blocks stay queued as ordinary free blocks); return how many."""
    hit = cup[i] if cup[i] < want else want
    base = off + qpos[i] + qn[i] - 1
    for j in range(hit):
        qe[base - j, 3] = 1
    cup[i] = 0
    return hit


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
    return sorted(admitted, key=lambda r: victim_key(False, 0, (r.arrival_s, r.rid)))


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
            self.bsh = block_shift(self.bs)
            self.pool = BlockPool(kv_cap // self.bs, memory.prefix_caching)
            self.nblk: dict = {}
            self.adm: dict = {}
            self.n_adm = 0
            self.most_recent = memory.victim == "most_recent"
            self.whole = memory.reservation == "whole_prompt"

    # -- arrivals and departures ------------------------------------------------------------------
    def rejects(self, p: int, d: int) -> bool:
        """Whether a request of ``p`` prompt and ``d`` output tokens can never fit (counted)."""
        paged = self.paged
        bad = never_fits(paged, p, d, self.bs if paged else 1, self.pool.total if paged else 0, self.kv_cap)
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
            k = cdiv(held, self.bs, self.bsh)
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
        r.prompt_tokens, r.recompute_tokens, again = recompute(r.prompt_tokens, r.recompute_tokens, r.decoded,
                                                               r.prefilled)
        r.prefilled = 0
        self.on_preempt(r, again, True)
        return 0.0

    def form(self, t, ask):
        """The batch to run at ``t`` and the swap seconds it adds: ``(batch or None, extra_s)``.

        ``ask(visible, t, kv_free)`` calls the policy on the requests ``visible`` and returns
        ``(view, batch)``; ``batch is None`` when no request is resident.
        """
        extra_s = 0.0
        swapped = self.swapped
        paged = self.paged
        bs = self.bs if paged else 1
        while swapped and swap_in_fits(paged, swapped[0][1], bs, self.pool.free if paged else 0, self.used,
                                       self.kv_cap):
            r, held = swapped.pop(0)
            if paged:
                k = cdiv(held, bs, self.bsh)
                self.pool.alloc(k)
                self.nblk[r.rid] = k
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
            nd = decoders_within(len(batch.decode), self.kv_cap - self.used)
            batch = Batch(prefill=(), decode=tuple(batch.decode[:nd]), blocked=batch.blocked)
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
                chunkable = self.chunkable
                for rid, m in batch.prefill:
                    r = by_id[rid]
                    x = token_take(m, r.prompt_tokens - r.prefilled, kv[rid], room, reserve, chunkable)
                    if x >= 0:
                        kept.append((rid, x))
                        room -= x
                    elif x == STOP:
                        dropped_new = True
                        break
                trimmed = Batch(prefill=tuple(kept), decode=dc, blocked=batch.blocked)
                nxt = token_next(dropped_new, hide_new, trimmed.empty, room, reserve, n_admitted)
                if nxt == ASK_AGAIN:
                    hide_new = True
                    continue
                if nxt == ACCEPT:
                    return trimmed, extra_s
            admitted = _unfinished([q for q in residents if kv[q.rid] > 0])
            cands = _victim_order(self.policy, admitted, t)[::-1]
            victim = None
            for q in cands:
                if self.may_evict is None or self.may_evict(q, t):
                    victim = q
                    break
            if victim is None:
                nd = no_victim_decoders(len(dc), kv_cap - self.used)
                if nd:
                    return Batch(prefill=(), decode=tuple(dc[:nd]), blocked=batch.blocked), extra_s
                if not cands:
                    return Batch(), extra_s
                victim = cands[0]
            extra_s += self._preempt(victim)
            n_admitted -= 1
            hide_new = True
        return batch, extra_s

    def _take(self, rid, m):
        k = blocks_needed(self.kv[rid], m, self.bs, self.bsh, self.nblk[rid])
        if k > 0:
            self.pool.alloc(k)
            self.nblk[rid] += k

    def _paged(self, t, ask):
        """The block rules (see :mod:`fluidq.kernel.step`)."""
        pool, bs, bsh, nblk, kv = self.pool, self.bs, self.bsh, self.nblk, self.kv
        extra = 0.0
        hide_new = bool(self.swapped)
        while True:
            residents = self.residents
            visible = [q for q in residents if q.rid in nblk] if hide_new else residents
            _, batch = ask(visible, t, pool.free * bs)
            need = 0
            for rid, m in batch.prefill:
                if rid in nblk:
                    need += blocks_needed(kv[rid], m, bs, bsh, nblk[rid])
            for rid in batch.decode:
                need += blocks_needed(kv[rid], 1, bs, bsh, nblk[rid])
            if need > pool.free:
                admitted = _unfinished([q for q in residents if q.rid in nblk])
                if self.most_recent:
                    victim = max(admitted, key=lambda q: victim_key(True, self.adm[q.rid], 0))
                else:
                    cands = _victim_order(self.policy, admitted, t)[::-1]
                    victim = next((q for q in cands if self.may_evict is None or self.may_evict(q, t)), cands[0])
                extra += self._preempt(victim)
                hide_new = True  # vLLM: no waiting request is admitted in an iteration that preempted
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
                    w = prefix_want(r.prompt_tokens, bs, self.bsh, pool.free)
                    if w == STOP:
                        stop = True
                        continue
                    hit = pool.reuse(rid, w)
                x = paged_take(r.prompt_tokens, r.prefilled, m, hit, bs, self.whole, pool.free)
                if x == STOP:
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
                self._take(rid, x)
                kept.append((rid, x))
            if paged_retry(stop, len(kept), len(batch.decode), hide_new, len(nblk)):
                # no new request could be admitted and nothing else was chosen (a prefill-first policy
                # offered only new prompts): ask again with the admitted requests alone, as the token
                # rules do, so that they decode and free blocks (else the engine would stall for good)
                hide_new = True
                continue
            return Batch(prefill=tuple(kept), decode=batch.decode, blocked=batch.blocked), extra
