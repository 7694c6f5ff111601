"""The KV-cache memory rules of the compiled loops: the jitted forms of :mod:`fluidq.kernel.memory`'s rule functions.

The rules are written once, as plain functions over integers and explicit arrays in :mod:`fluidq.kernel.memory` (what
:class:`~fluidq.kernel.memory.StationMemory` decides and :class:`~fluidq.kernel.memory.BlockPool` keeps): the Python
path calls them as they are, :mod:`fluidq.kernel.network` jits them where it uses them (``jit(fn, inline="always")``,
as the batch rule's functions are), and this module holds each one jitted (inlined, no reference counting: nothing
here allocates) under its own name, for :mod:`fluidq.kernel.kv` (one engine, iteration by iteration), which calls the
block pool (``pool_*``), the block arithmetic (``cdiv``, ``bmod``, ``blocks_needed``, with the block size's shift
``bsh``), ``never_fits``, ``swap_in_fits``, ``token_take``/``token_next``, ``paged_take``/``paged_retry``,
``prefix_want``, ``recompute``, the decoder clamps ``no_victim_decoders`` / ``decoders_within`` and the victim's order
``victim_key`` (all of them since 2026-12-07, branch h-rules15b: kv.py's notes say how its walks use the last). One
function here is not one of memory's: :func:`token_pass`, the token rules' pass over a batch's prefill chunks
(``token_take`` per chunk, as ``StationMemory._tokens`` loops over its batch), written once for the compiled loops
that each had a copy (network.py, network_kv, kv.py's ``_kv_loop``, the select loop's ``_select_phases``; 2026-12-07,
h-dedup): it calls another rule, which a plain function of :mod:`fluidq.kernel.memory` jitted as it is cannot. What
differs between the loops stays in them: how they hold the residents (kv.py's ordered lists and virtual decode clock,
network.py's linked lists per station), the order in which they visit them and how they find the victim (the request
with the largest ``victim_key``).
``tests/sim/test_sim_kv_kernel.py`` holds kv.py to the generic path's ``StationMemory`` and
``tests/network/test_network_kernel_kv.py`` network.py to the Python network path's, on random engines, memories
(token and block KV, reservation, victim rule, recompute or swap, prefix caching) and workloads;
``tests/kernel/test_kvrules_pool.py`` the pool functions, compiled and not, to ``BlockPool``.

numba's cache tracks only the file of a cached function: after editing the rules in :mod:`fluidq.kernel.memory`,
clear the cache (or touch kv.py and network.py), or the loops keep the old rules.

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
from __future__ import annotations

from . import memory as _rules
from ._jit import jit
from .memory import ACCEPT, ASK_AGAIN, LEFT_OUT, PREEMPT, STOP

__all__ = ["ACCEPT", "ASK_AGAIN", "LEFT_OUT", "PREEMPT", "STOP", "blocks_needed", "bmod", "cdiv", "decoders_within",
           "never_fits", "no_victim_decoders", "paged_retry", "paged_take", "pool_alloc", "pool_release", "pool_reuse",
           "prefix_want", "recompute", "swap_in_fits", "token_next", "token_pass", "token_take", "victim_key"]

_rule = jit(inline="always", _nrt=False)

blocks_needed = _rule(_rules.blocks_needed)
bmod = _rule(_rules.bmod)
cdiv = _rule(_rules.cdiv)
decoders_within = _rule(_rules.decoders_within)
never_fits = _rule(_rules.never_fits)
no_victim_decoders = _rule(_rules.no_victim_decoders)
paged_retry = _rule(_rules.paged_retry)
paged_take = _rule(_rules.paged_take)
pool_alloc = _rule(_rules.pool_alloc)
pool_release = _rule(_rules.pool_release)
pool_reuse = _rule(_rules.pool_reuse)
prefix_want = _rule(_rules.prefix_want)
recompute = _rule(_rules.recompute)
swap_in_fits = _rule(_rules.swap_in_fits)
token_next = _rule(_rules.token_next)
token_take = _rule(_rules.token_take)
victim_key = _rule(_rules.victim_key)


@_rule
def token_pass(n, ids, ms, out_ids, out_ms, p, pf, kv, room, reserve, chunked):
    """The token rules' pass over a batch's ``n`` prefill chunks in the policy's order (request ``ids[j]``, ``ms[j]``
    tokens): :func:`token_take` of each against the ``room`` left, the kept chunks written from 0 into
    ``out_ids``/``out_ms`` (which may be ``ids``/``ms`` themselves: a write never overtakes the read), until a new
    request is dropped; ``p``, ``pf``, ``kv``: the requests' prompt, prefilled and KV tokens, by id.  Returns (chunks
    kept, room left, whether one was dropped) for :func:`token_next`.  ``StationMemory._tokens``' loop over its
    ``Batch``, written once for the compiled loops (2026-12-07, h-dedup; each had its copy): network.py's native KV
    pass, network_kv's pass, the KV kernel's iteration (``_kv_loop``) and the select loop's ``PH_FORM``
    (``_select_phases``)."""
    kept = 0
    dropped = False
    for j in range(n):
        rid = ids[j]
        x = token_take(ms[j], p[rid] - pf[rid], kv[rid], room, reserve, chunked)
        if x >= 0:
            out_ids[kept] = rid
            out_ms[kept] = x
            kept += 1
            room -= x
        elif x == STOP:
            dropped = True
            break
    return kept, room, dropped
