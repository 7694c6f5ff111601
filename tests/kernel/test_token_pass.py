"""kvrules.token_pass -- the token rules' pass over a batch's prefill chunks, written once for the compiled loops
(network.py's native KV pass, network_kv's pass, kv.py's _kv_loop, the select loop's _select_phases; 2026-12-07,
h-dedup) -- against StationMemory._tokens' own loop over its Batch (memory.token_take per chunk, the kept chunks
listed, stopping at the first new request that does not fit), compiled and as plain Python, writing the kept chunks
in place (network.py, _kv_loop) and into a second buffer (network_kv, _select_phases).  The loops as a whole are
held to the Python paths by tests/network/test_network_kernel_kv.py, test_network_select_kv.py,
tests/sim/test_sim_kv_kernel.py and the select-loop tests; this one holds the shared pass alone, on random batches
where running and new requests, chunking, a tight room and a reserve all occur.
"""
from __future__ import annotations

import numpy as np
import pytest

from fluidq.kernel import kvrules, memory


def _reference(pairs, p, pf, kv, room, reserve, chunked):
    """StationMemory._tokens' pass over ``batch.prefill`` (the Python path's loop, memory.token_take)."""
    kept = []
    dropped = False
    for rid, m in pairs:
        x = memory.token_take(m, p[rid] - pf[rid], kv[rid], room, reserve, chunked)
        if x >= 0:
            kept.append((rid, x))
            room -= x
        elif x == memory.STOP:
            dropped = True
            break
    return kept, room, dropped


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_token_pass_is_station_memorys_loop(seed, compiled):
    fn = kvrules.token_pass if compiled else getattr(kvrules.token_pass, "py_func", kvrules.token_pass)
    rng = np.random.default_rng(seed)
    seen = {"stop": 0, "left_out": 0, "chunk": 0}
    for _ in range(300):
        n_req = int(rng.integers(2, 40))
        p = rng.integers(1, 300, n_req + 1)
        pf = np.array([int(rng.integers(0, x)) for x in p])  # a prompt left to prefill
        kv = np.where(rng.random(n_req + 1) < 0.5, pf + rng.integers(0, 5, n_req + 1), 0)  # running: holds KV
        n = int(rng.integers(0, n_req))
        ids = rng.permutation(np.arange(1, n_req + 1))[:n].astype(np.int64)
        ms = np.array([int(rng.integers(1, p[i] - pf[i] + 1)) for i in ids], dtype=np.int64)
        room = int(rng.integers(0, 600))
        reserve = int(rng.integers(0, 40))
        chunked = bool(rng.random() < 0.5)
        want = _reference(list(zip(ids.tolist(), ms.tolist())), p, pf, kv, room, reserve, chunked)
        seen["stop"] += want[2]
        seen["left_out"] += len(want[0]) < n and not want[2]
        seen["chunk"] += any(x < m for (_, x), m in zip(want[0], ms.tolist()))
        # into a second buffer (the policy's batch kept as it was)
        out_t, out_k = np.full(n + 1, -7, np.int64), np.full(n + 1, -7, np.int64)
        i0, m0 = ids.copy(), ms.copy()
        k, left, dropped = fn(n, ids, ms, out_t, out_k, p, pf, kv, room, reserve, chunked)
        assert (int(k), int(left), bool(dropped)) == (len(want[0]), want[1], want[2])
        assert list(zip(out_t[:k].tolist(), out_k[:k].tolist())) == want[0]
        assert (ids == i0).all() and (ms == m0).all() and (out_t[k:] == -7).all()
        # in place (the kept chunks compacted to the front of the batch itself)
        k, left, dropped = fn(n, ids, ms, ids, ms, p, pf, kv, room, reserve, chunked)
        assert (int(k), int(left), bool(dropped)) == (len(want[0]), want[1], want[2])
        assert list(zip(ids[:k].tolist(), ms[:k].tolist())) == want[0]
    assert all(seen.values()), seen  # (each branch of the rule occurred)
