"""The compiled loops' block pool (fluidq.kernel.kvrules.pool_*) against the Python reference BlockPool, and the
memory rules written once: kvrules' functions are fluidq.kernel.memory's plain functions jitted.

kv.py and network.py's KV stations both keep their freed blocks with prefix caching through these three
functions; the loops are held to StationMemory as a whole by tests/sim/test_sim_kv_kernel.py and
tests/network/test_network_kernel_kv.py, and this test holds the pool alone to fluidq.sim._memory.BlockPool on
random sequences of allocations, releases, prefix reuses and departures (the cached prefix of every request
after every step), in a queue region at an offset (as a network station's) and with a small region that must
be compacted.
"""
from __future__ import annotations

import numpy as np
import pytest

from fluidq.kernel import kvrules, memory
from fluidq.kernel.kvrules import blocks_needed, cdiv, paged_take, token_take, victim_key
from fluidq.sim._memory import BlockPool

RULES = ["blocks_needed", "bmod", "cdiv", "decoders_within", "never_fits", "no_victim_decoders", "paged_retry",
         "paged_take", "pool_alloc", "pool_release", "pool_reuse", "prefix_want", "recompute", "swap_in_fits",
         "token_next", "token_take", "victim_key"]


def test_kvrules_are_the_plain_rules_jitted():
    """Each compiled rule is memory.py's plain function (the one StationMemory calls), not a second copy."""
    for name in RULES:
        jitted, plain = getattr(kvrules, name), getattr(memory, name)
        assert getattr(jitted, "py_func", jitted) is plain, name


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("seed", range(12))
def test_pool_functions_are_the_block_pool(seed, compiled):
    rules = kvrules if compiled else memory  # (the plain functions too: what the Python path may call)
    pool_alloc, pool_release, pool_reuse = rules.pool_alloc, rules.pool_release, rules.pool_reuse
    rng = np.random.default_rng(seed)
    total = int(rng.integers(4, 40))
    n_req = 80
    off = int(rng.integers(0, 5))
    cap = 2 * total + int(rng.integers(0, 3))  # room for twice the blocks (what the loops keep)
    qe = np.zeros((off + cap + 2, 4), dtype=np.int64)
    stamp = np.zeros(n_req, dtype=np.int64)
    cup = np.zeros(n_req, dtype=np.int64)
    qpos = np.zeros(n_req, dtype=np.int64)
    qn = np.zeros(n_req, dtype=np.int64)
    fresh, head, tail, free = total, 0, 0, total
    ref = BlockPool(total, caching=True)
    held = {}  # request -> blocks held
    gone = set()
    for _ in range(1500):
        live = [i for i in range(n_req) if i not in gone]
        if not live:
            break
        i = int(rng.choice(live))
        if i in held:
            nb = held.pop(i)
            ref.release(i, nb)
            head, tail = pool_release(qe, off, cap, head, tail, stamp, cup, qpos, qn, i, nb)
            free += nb
            if rng.random() < 0.1:  # it finished: forgotten (its blocks are ordinary free ones), as the loops do
                ref.forget(i)
                stamp[i] = -1
                cup[i] = 0
                gone.add(i)
        else:
            hit = 0
            if ref.cached(i) > 0 and rng.random() < 0.7:
                want = int(rng.integers(0, ref.cached(i) + 2))
                hit = ref.reuse(i, want)
                assert pool_reuse(qe, off, cup, qpos, qn, i, want) == hit
                free -= hit
            k = int(rng.integers(0, free + 1)) if free else 0
            ref.alloc(k)
            fresh, head = pool_alloc(qe, off, fresh, head, k, stamp, cup)
            free -= k
            held[i] = hit + k
        assert free == ref.free
        assert fresh == ref.fresh
        for r in range(n_req):
            assert cup[r] == ref.cached(r), (r, cup[r], ref.cached(r))


def test_rule_arithmetic():
    assert [cdiv(x, 16, 4) for x in (0, 1, 16, 17)] == [0, 1, 1, 2] == [cdiv(x, 16, -1) for x in (0, 1, 16, 17)]
    assert blocks_needed(15, 1, 16, 4, 1) == 0 and blocks_needed(16, 1, 16, 4, 1) == 1
    assert blocks_needed(15, 1, 16, -1, 1) == 0 and blocks_needed(16, 1, 16, -1, 1) == 1
    # token rules: a new request needs its whole prompt plus the headroom; a running one takes the room
    assert token_take(10, 10, 0, 12, 2, False) == 10
    assert token_take(10, 10, 0, 11, 2, True) == -1  # STOP: head-of-line
    assert token_take(10, 30, 5, 4, 2, True) == 4 and token_take(10, 30, 5, 4, 2, False) == -2  # LEFT_OUT
    # paged rules: whole-prompt reservation needs the whole remaining prompt's blocks, incremental this chunk's
    assert paged_take(100, 0, 16, 0, 16, True, 6) == -1 and paged_take(100, 0, 16, 0, 16, True, 7) == 16
    assert paged_take(100, 0, 16, 0, 16, False, 1) == 16
    assert paged_take(40, 0, 64, 1, 16, True, 2) == 24  # one cached block taken back: 24 tokens left, 2 blocks
    assert paged_take(40, 0, 64, 1, 16, True, 1) == -1
    # the victim: the largest key -- the admission number under vLLM's most-recent rule, else the arrival order
    assert victim_key(True, 7, 2) == 7 and victim_key(False, 7, 2) == 2
    assert memory.victim_key(False, 0, (1.5, 3)) > memory.victim_key(False, 0, (1.5, 2))
