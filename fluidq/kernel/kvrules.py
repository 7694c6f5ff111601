"""The KV-cache memory rules of the compiled loops, written once: what :class:`fluidq.kernel.memory.StationMemory`
decides (and :class:`fluidq.kernel.memory.BlockPool` keeps), as small functions over integers and explicit arrays.

numba inlines them (``inline="always"``, no reference counting: nothing here allocates).  The KV stations of
:mod:`fluidq.kernel.network` call all of them; :mod:`fluidq.kernel.kv` (one engine, iteration by iteration)
calls the block pool (``pool_*``), ``cdiv``, ``never_fits`` and ``swap_in_fits`` and writes the other decisions
out in its loop: calling them there cost up to 6 % per request (see kv.py's notes; commit f9bb483 is kv.py on
these functions, bit for bit the same runs).  What differs between the loops stays in them: how they hold the
residents (kv.py's ordered lists and virtual decode clock, network.py's linked lists per station), the order in
which they visit them and how they find the victim.  ``tests/sim/test_sim_kv_kernel.py`` holds kv.py to the
generic path's ``StationMemory`` and ``tests/network/test_network_kernel_kv.py`` network.py to the Python network
path's, on random engines, memories (token and block KV, reservation, victim rule, recompute or swap, prefix
caching) and workloads.

numba's cache tracks only the file of a cached function: after editing this module, clear the cache (or touch
kv.py and network.py), or the loops keep the old rules.

The token rules (``Memory()``): a new request is admitted when its whole remaining prompt plus one token of
headroom per admitted request fits (head-of-line), a running one takes what room is left (a chunk where the
scheduler chunks).  The paged rules (any other ``Memory``): blocks of ``bs`` tokens, the running requests'
blocks first, then new requests head-of-line while their reservation fits (the whole remaining prompt, or this
batch's chunk), a re-admitted request taking back its own leading blocks still cached (prefix caching).

The pool of freed blocks with prefix caching (``BlockPool``): never-used blocks first (``fresh``), then the
freed ones in the order they were freed, one queue entry per block ``qe[off + h] = (request, block index,
generation, taken back)`` between ``head`` and ``tail``; ``stamp[i]`` is request ``i``'s generation (its
entries of older generations are stale), ``cup[i]`` its leading blocks still cached, ``qpos[i]``/``qn[i]``
where its last release sits in the queue (relative to ``off``) and how many blocks it released.
"""
# ruff: noqa: PLR0913
from __future__ import annotations

from ._jit import jit

__all__ = ["ACCEPT", "ASK_AGAIN", "LEFT_OUT", "PREEMPT", "STOP", "blocks_needed", "cdiv", "decoders_within",
           "never_fits", "no_victim_decoders", "paged_retry", "paged_take", "pool_alloc", "pool_release", "pool_reuse",
           "prefix_want", "recompute", "swap_in_fits", "token_next", "token_take"]

_rule = jit(inline="always", _nrt=False)

#: what the token rules do after a pass over the policy's batch (:func:`token_next`)
ACCEPT, ASK_AGAIN, PREEMPT = 0, 1, 2
#: :func:`token_take` and :func:`paged_take` for a chunk that does not run: head-of-line stop, left out
STOP, LEFT_OUT = -1, -2


@_rule
def cdiv(x, bs):
    """``ceil(x / bs)`` for integers."""
    return -((-x) // bs)


@_rule
def never_fits(paged, p, d, bs, total, kv_cap):
    """``StationMemory.rejects``: a request of ``p`` prompt and ``d`` output tokens can never fit (``total``
    blocks of ``bs`` tokens under the paged rules, ``kv_cap`` tokens under the token rules)."""
    if paged:
        return cdiv(p + d, bs) > total
    return p + d > kv_cap


@_rule
def swap_in_fits(paged, held, bs, free, used, kv_cap):
    """A swapped-out request holding ``held`` KV tokens comes back (``free`` blocks, ``used`` of ``kv_cap``
    tokens)."""
    if paged:
        return cdiv(held, bs) <= free
    return used + held <= kv_cap


@_rule
def blocks_needed(kv, m, bs, nbk):
    """The blocks a request holding ``kv`` tokens in ``nbk`` blocks needs for ``m`` more (``<= 0``: none)."""
    return cdiv(kv + m, bs) - nbk


@_rule
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


@_rule
def token_next(dropped, hide, empty, room, reserve, nadm):
    """After a pass of the token rules (``dropped``: a new request did not fit; ``empty``: nothing runs):
    :data:`ASK_AGAIN` the policy with the admitted requests alone, :data:`ACCEPT` the batch, or
    :data:`PREEMPT` a victim and ask again."""
    if dropped and not hide and (empty or room > reserve):
        return ASK_AGAIN
    if not empty or nadm == 0:
        return ACCEPT
    return PREEMPT


@_rule
def prefix_want(p, bs, free):
    """A request re-admitted with its own leading blocks still cached (prompt ``p``): the cached blocks it may
    take back (all but the last block of its prompt), or :data:`STOP` when its whole prompt's blocks would not
    fit (head-of-line: stop there)."""
    if cdiv(p, bs) > free:
        return STOP
    return (p - 1) // bs


@_rule
def paged_take(p, pf, m, hit, bs, whole, free):
    """The paged rules' reservation of a new request (prompt ``p``, ``pf`` prefilled, ``m`` tokens chosen, ``hit``
    cached blocks taken back): the tokens it runs (``m`` up to its remaining prompt), or :data:`STOP` when the
    blocks of its reservation (the whole remaining prompt, or this chunk) do not fit the ``free`` blocks."""
    remaining = p - pf - hit * bs
    want = remaining if whole or m > remaining else m
    if cdiv(hit * bs + want, bs) - hit > free:
        return STOP
    return remaining if m > remaining else m


@_rule
def paged_retry(stop, kept, nd, hide, nadm):
    """Ask the policy again with the admitted requests alone: a new request did not fit (``stop``), nothing
    runs, and some request is admitted."""
    return stop and kept == 0 and nd == 0 and not hide and nadm > 0


@_rule
def recompute(p, rc, dc):
    """A victim preempted by recomputation: its prompt becomes the original one plus its ``dc`` generated
    tokens (``p`` held ``rc`` recomputed tokens before); return the new ``(prompt, tokens to recompute)``."""
    return p - rc + dc, dc


@_rule
def no_victim_decoders(nd, f):
    """The decoders that run when nothing can be preempted and ``f`` tokens are free: all ``nd`` of them cut
    to ``f``, or none."""
    if nd > f > 0:
        return f
    return 0


@_rule
def decoders_within(nd, f):
    """Never exceed memory: at most ``f`` (``>= 0``) decoders, prefill dropped."""
    if f < 0:
        f = 0
    return nd if nd <= f else f


@_rule
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


@_rule
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


@_rule
def pool_reuse(qe, off, cup, qpos, qn, i, want):
    """``BlockPool.reuse``: request ``i`` takes back up to ``want`` leading blocks of its cached prefix (its other
    freed blocks stay queued as ordinary free blocks); return how many."""
    hit = cup[i] if cup[i] < want else want
    base = off + qpos[i] + qn[i] - 1
    for j in range(hit):
        qe[base - j, 3] = 1
    cup[i] = 0
    return hit
