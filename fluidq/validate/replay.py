"""Replay a measured run's own arrivals through a model of the engine, iteration by iteration.

The engine model follows the vLLM v1 scheduler as configured in the measured runs (chunked
prefill on, FCFS, decode first):

1. every running request gets its next work, in admission order: the next prompt chunk if its
   prefill is unfinished, else one decode token, while the token budget ``b_max``
   (``max_num_batched_tokens``) lasts;
2. KV-cache blocks (``block_size`` tokens) are allocated for the tokens each request will hold;
   when a running request cannot get a block, the most recently admitted running request is
   preempted: its blocks are freed and it returns to the head of the queue, to recompute its
   prompt and generated tokens as a prefill later (vLLM's recompute preemption);
3. waiting requests are admitted FCFS while budget, ``k_max`` (``max_num_seqs``) and free blocks
   allow (vLLM 0.19 reserves the whole remaining prompt at admission); the last one admitted may
   get a partial chunk;
4. with prefix caching on (as in the RTX 4090 run), freed blocks keep their contents until they
   are reused: free blocks are handed out least recently freed first, a request's blocks are freed
   tail first, and a preempted request that is admitted again reuses the leading blocks of its own
   that are still cached (at least its last token is recomputed).

The batch's time is the :class:`~fluidq.validate.iteration.IterationModel`'s, from the operator
profiles measured on the run's GPU.  A request's first token is emitted at the end of the
iteration that completes its prefill, its last at the end of the iteration that produces its
``output_tokens``-th token.  Not modelled: prefix sharing between different requests, CPU-side scheduling overhead,
asynchronous scheduling, CUDA-graph padding.

This is a purpose-built replay for validation; the general iteration-level simulator of fluidq is
``fluidq.simulate``.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .._validate import integer
from ..errors import ParameterError

__all__ = ["ReplayResult", "replay"]


@dataclass(frozen=True, kw_only=True, eq=False)
class ReplayResult:
    """Per-request times of a replay (seconds on the run's clock) and engine counters."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    last_token_s: np.ndarray
    output_tokens: np.ndarray
    iterations: int
    preemptions: int
    running_trace: np.ndarray  # (time_s, running, waiting, useful_tokens) per iteration

    @property
    def ttft_s(self):
        return self.first_token_s - self.arrival_s

    @property
    def latency_s(self):
        return self.last_token_s - self.arrival_s

    @property
    def tpot_s(self):
        return (self.last_token_s - self.first_token_s) / np.maximum(self.output_tokens - 1, 1)

    def served_tokens_per_s(self, start_s: float, end_s: float) -> float:
        """Useful tokens (prompt tokens computed the first time, output tokens emitted) per second over
        the iterations ending in ``(start_s, end_s]``; recomputation after a preemption is not counted."""
        tr = self.running_trace
        if tr.size == 0 or end_s <= start_s:
            return float("nan")
        m = (tr[:, 0] > start_s) & (tr[:, 0] <= end_s)
        return float(tr[m, 3].sum() / (end_s - start_s))

    def to_dict(self):
        return {"iterations": self.iterations, "preemptions": self.preemptions, "requests": int(len(self.arrival_s))}


class _BlockPool:
    """KV blocks: a free queue handed out oldest-freed first, with cached contents kept until reuse."""

    def __init__(self, total: int, n_requests: int, caching: bool):
        self.free = total
        self.fresh = total  # never-used blocks at the head of the free queue
        self.queue: deque = deque()  # (request, block index) of freed, still-cached blocks
        self.caching = caching
        self.cached_upto = np.zeros(n_requests, dtype=np.int64)  # leading blocks of a request still cached
        self.stamp = np.zeros(n_requests, dtype=np.int64)  # generation, to skip stale queue entries
        self.taken = set()

    def alloc(self, k: int) -> None:
        self.free -= k
        while k > 0:
            if self.fresh > 0:
                take = min(k, self.fresh)
                self.fresh -= take
                k -= take
                continue
            i, j, g = self.queue.popleft()
            if (i, j, g) in self.taken:  # reused by its owner since: not free
                self.taken.discard((i, j, g))
                continue
            if g == self.stamp[i] and j < self.cached_upto[i]:
                self.cached_upto[i] = j  # evicted: the owner's cached prefix ends here
            k -= 1

    def release(self, i: int, nblocks: int) -> None:
        self.free += nblocks
        self.stamp[i] += 1
        if not self.caching:
            self.fresh += nblocks
            self.cached_upto[i] = 0
            return
        self.cached_upto[i] = nblocks
        g = self.stamp[i]
        for j in range(nblocks - 1, -1, -1):  # tail first: the prefix survives longest
            self.queue.append((i, j, g))

    def reuse(self, i: int, nblocks: int) -> int:
        """Take back up to ``nblocks`` leading cached blocks of request ``i``; return how many.
        Its other freed blocks stay in the queue as ordinary free blocks."""
        hit = int(min(self.cached_upto[i], nblocks))
        g = self.stamp[i]
        for j in range(hit):
            self.taken.add((i, j, g))
        self.free -= hit
        self.cached_upto[i] = 0
        return hit


def replay(model, arrival_s, input_tokens, output_tokens, *, b_max: int, k_max: int,
           kv_capacity_tokens: int | None, block_size: int = 16, prefix_caching: bool = False,
           max_iterations: int = 2_000_000) -> ReplayResult:
    """Run the arrivals through the scheduler model above and return per-request times.

    Parameters
    ----------
    model : IterationModel
        Seconds per iteration from the batch composition.
    arrival_s, input_tokens, output_tokens : array_like
        The requests, sorted by arrival.
    b_max, k_max : int
        ``max_num_batched_tokens`` and ``max_num_seqs``.
    kv_capacity_tokens : int or None
        KV cache in tokens (``None``: unlimited).
    block_size : int
        KV block size in tokens.
    prefix_caching : bool
        Keep freed blocks' contents until reused (vLLM ``enable_prefix_caching``).
    """
    a = np.asarray(arrival_s, dtype=float)
    p = np.asarray(input_tokens, dtype=np.int64)
    o = np.asarray(output_tokens, dtype=np.int64)
    if not (a.shape == p.shape == o.shape) or a.ndim != 1 or a.size == 0:
        raise ParameterError("arrival_s", a.shape, "three 1-D arrays of equal, non-zero length")
    if np.any(np.diff(a) < 0):
        raise ParameterError("arrival_s", "unsorted", "arrival times sorted ascending")
    if np.any(p < 1) or np.any(o < 1):
        raise ParameterError("input_tokens/output_tokens", "values < 1", "at least one token each")
    b_max = integer("b_max", b_max, minimum=1)
    k_max = integer("k_max", k_max, minimum=1)
    block_size = integer("block_size", block_size, minimum=1)
    total_blocks = None if kv_capacity_tokens is None else int(kv_capacity_tokens) // block_size
    n = a.size
    pool = _BlockPool(total_blocks, n, bool(prefix_caching)) if total_blocks is not None else None
    computed = np.zeros(n, dtype=np.int64)  # tokens whose KV is in cache
    target = p.copy()  # tokens to (re)compute before decoding: prompt (+ generated after preemption)
    generated = np.zeros(n, dtype=np.int64)
    hwm = np.zeros(n, dtype=np.int64)  # prompt tokens ever computed (recomputation is not useful work)
    blocks = np.zeros(n, dtype=np.int64)
    first = np.full(n, np.nan)
    last = np.full(n, np.nan)
    waiting: deque[int] = deque()
    running: list[int] = []
    t = 0.0
    nxt = 0
    iters = 0
    preempt = 0
    trace = []

    def need_blocks(i, new_tokens):
        return -(-(computed[i] + new_tokens) // block_size) - blocks[i]

    def fits(nb):
        return pool is None or nb <= pool.free

    def take(i, nb):
        if pool is not None and nb > 0:
            pool.alloc(nb)
        blocks[i] += nb

    while nxt < n or waiting or running:
        while nxt < n and a[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        if not waiting and not running:
            t = a[nxt]
            continue
        budget = b_max
        sched = []  # (request, new tokens)
        # 1. running requests, admission order; preempt from the back when blocks run out
        k = 0
        while k < len(running) and budget > 0:
            i = running[k]
            new = min(target[i] - computed[i], budget) if computed[i] < target[i] else 1
            nb = need_blocks(i, new)
            while not fits(nb):
                victim = running.pop()
                pool.release(victim, int(blocks[victim]))
                blocks[victim] = 0
                computed[victim] = 0
                target[victim] = p[victim] + generated[victim]
                waiting.appendleft(victim)
                preempt += 1
                budget += sum(x for j, x in sched if j == victim)
                sched = [(j, x) for j, x in sched if j != victim]
                if victim == i:
                    nb = None
                    break
            if nb is None:
                break
            take(i, nb)
            sched.append((i, new))
            budget -= new
            k += 1
        # 2. admit waiting requests FCFS
        while waiting and budget > 0 and len(running) < k_max:
            i = waiting[0]
            if pool is not None and blocks[i] == 0 and pool.cached_upto[i] > 0:
                # a preempted request's own blocks that are still cached (at least one token recomputed)
                full = int((target[i] - 1) // block_size)
                cached = int(min(pool.cached_upto[i], full))
                # its cached blocks are among the free ones: the whole request must fit in ``free``
                if not fits(need_blocks(i, target[i])):
                    break
                hit = pool.reuse(i, cached)
                blocks[i] = hit
                computed[i] = hit * block_size
            # vLLM 0.19 ``scheduler_reserve_full_isl``: admit only if the whole prompt fits now
            if not fits(need_blocks(i, target[i] - computed[i])):
                break
            new = min(target[i] - computed[i], budget)
            waiting.popleft()
            running.append(i)
            take(i, need_blocks(i, new))
            sched.append((i, new))
            budget -= new
        if not sched:
            if nxt < n:
                t = max(t, a[nxt])
                continue
            raise RuntimeError("replay: no request can be scheduled (KV cache smaller than one request)")
        chunks, ctx = [], []
        for i, new in sched:
            if computed[i] < target[i]:
                chunks.append((new, computed[i]))
            else:
                ctx.append(computed[i])
        t += model.time(chunks, ctx)
        iters += 1
        done = []
        useful = 0
        for i, new in sched:
            was_prefill = computed[i] < target[i]
            if was_prefill:
                top = min(computed[i] + new, p[i])
                if top > hwm[i]:
                    useful += int(top - hwm[i])
                    hwm[i] = top
            else:
                useful += 1
            computed[i] += new
            if was_prefill:
                if computed[i] >= target[i]:
                    if generated[i] == 0:
                        generated[i] = 1
                        first[i] = t
                        useful += 1
            else:
                generated[i] += 1
            if generated[i] >= o[i] and computed[i] >= target[i]:
                last[i] = t
                done.append(i)
        for i in done:
            running.remove(i)
            if pool is not None:
                pool.release(i, int(blocks[i]))
            blocks[i] = 0
        trace.append((t, len(running), len(waiting), useful))
        if iters >= max_iterations:
            raise RuntimeError(f"replay: more than {max_iterations} iterations")
    return ReplayResult(arrival_s=a, first_token_s=first, last_token_s=last, output_tokens=o, iterations=iters,
                        preemptions=preempt, running_trace=np.asarray(trace))
