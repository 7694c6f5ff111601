"""Paged KV-cache state for the kernel: a pool of blocks, optionally keeping freed blocks' contents.

:class:`BlockPool` is the state behind :class:`fluidq.engine.Memory` with ``kind="blocks"`` (and
``kind="tokens"`` under non-default rules, as blocks of one token).  Free blocks form one queue:
never-used blocks first, then freed ones in the order they were freed (least recently freed is
handed out first).  With prefix caching a request's blocks are queued tail first when it is
preempted or finishes, so its leading blocks survive longest; :meth:`BlockPool.reuse` takes back the
leading blocks of a request that are still cached.  Handing out a block that still holds a
request's contents evicts it, and with it that request's cached prefix from that block on.
"""
from __future__ import annotations

from collections import deque

__all__ = ["BlockPool"]


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
