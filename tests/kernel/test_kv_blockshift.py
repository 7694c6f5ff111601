"""The KV kernel's block arithmetic by shift and mask gives what division gives.

``kv._advance`` divides by the block size (``cdiv``, ``%``, ``blocks_needed``, ``prefix_want``) at every admission,
preemption and decoder move; with a power-of-two block size (vLLM's 16) ``cfg[C_BSH]`` holds its log2 and the rules
(``fluidq.kernel.memory``'s ``cdiv`` / ``bmod`` / ``blocks_needed`` / ``prefix_want``, their shift argument ``bsh``)
shift and mask instead, else (``C_BSH`` -1) they divide as before.  So:

* the rules with the shift equal them dividing and the plain division, on every integer tried, negative ones
  included (the kernel takes ``-G % bs``), compiled and not, and ``run_fcfs_kv`` sets ``C_BSH`` to the log2 exactly
  for powers of two (``memory.block_shift`` the same);
* seeded vLLM runs with a binding cache give the same results, records included, with the shift (the normal
  path) and with ``C_BSH`` forced to -1 (the division path, same compiled code);
* a block size that is not a power of two takes the division path and the run equals the generic ``select()``
  path (the Python reference), request for request.
"""
import numpy as np
import pytest

from fluidq import Engine, Geometric, Poisson, Staircase, Workload
from fluidq.engine import VLLM
from fluidq.sim import simulate

import kv_seeded  # tests/kernel/kv_seeded.py


@pytest.mark.parametrize("compiled", [True, False])
def test_shift_and_mask_equal_division(compiled):
    # the rules' block arithmetic (memory.py, what kv.py calls jitted from kvrules): cdiv, bmod, blocks_needed and
    # prefix_want with the shift give what they give dividing, on every integer tried
    from fluidq.kernel import kvrules, memory

    R = kvrules if compiled else memory
    xs = np.arange(-300, 301, dtype=np.int64).tolist() + [2**40 + 5, -(2**40) - 3, 2**62 - 1]
    for sh in range(7):
        bs = 1 << sh
        assert memory.block_shift(bs) == sh
        for x in xs:
            assert R.cdiv(x, bs, sh) == R.cdiv(x, bs, -1) == -((-x) // bs), (x, bs)
            assert R.bmod(x, bs, sh) == R.bmod(x, bs, -1) == x % bs, (x, bs)
        for kv in range(0, 70, 3):
            for m in (0, 1, 5, 16, 33):
                for nbk in (0, 1, 3):
                    assert R.blocks_needed(kv, m, bs, sh, nbk) == R.blocks_needed(kv, m, bs, -1, nbk) == \
                        -(-(kv + m) // bs) - nbk
        for p in range(1, 80):
            for free in (0, 1, 2, 5, 40):
                want = memory.STOP if -(-p // bs) > free else (p - 1) // bs
                assert R.prefix_want(p, bs, sh, free) == R.prefix_want(p, bs, -1, free) == want, (p, bs, free)
    for bs in (3, 5, 6, 12, 24):  # not a power of two: the division itself
        assert memory.block_shift(bs) == -1
        for x in xs:
            assert R.cdiv(x, bs, -1) == -((-x) // bs)
            assert R.bmod(x, bs, -1) == x % bs


def _run(bs, force_div, seed, monkeypatch, record=True):
    from fluidq.kernel import kv as K

    seen = []

    def transform(args):
        cfg = args[4]
        seen.append(int(cfg[K.C_BSH]))
        if force_div:
            cfg[K.C_BSH] = -1
        return args

    out = kv_seeded.run(monkeypatch, transform, seed, rate=(60, 100), kv_caps=(600, 1200), block_size=bs,
                        record=record)
    return out, seen


@pytest.mark.parametrize("bs", [1, 2, 3, 6, 16, 24, 32])
def test_the_log2_is_set_for_powers_of_two_only(bs, monkeypatch):
    _, seen = _run(bs, False, 0, monkeypatch, record=False)
    # (the last call is the run's: an earlier one may be ensure_compiled_kv's warm-up with its own block size)
    assert seen and seen[-1] == (bs.bit_length() - 1 if bs & (bs - 1) == 0 else -1)


@pytest.mark.parametrize("bs", [4, 16])
@pytest.mark.parametrize("seed", range(4))
def test_shift_path_equals_division_path(bs, seed, monkeypatch):
    a, seen_a = _run(bs, False, seed, monkeypatch)
    b, _ = _run(bs, True, seed, monkeypatch)
    assert seen_a[-1] == bs.bit_length() - 1  # the first run shifted
    assert a["preemptions"] > 0  # the cache binds: admissions, preemptions and block moves all ran
    kv_seeded.assert_same(a, b)


@pytest.mark.parametrize("bs", [6, 12])
def test_other_block_sizes_divide_and_equal_the_generic_path(bs):
    eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=128, kv_capacity_tokens=2000,
                 memory=VLLM.with_(block_size=bs))
    w = Workload(arrival=Poisson(rate_per_s=55.0), prompt_tokens=Geometric(mean_tokens=40.0),
                 output_tokens=Geometric(mean_tokens=40.0))
    a = simulate(eng, w, "sarathi", n_requests=3000, rng=bs, method="fast")
    b = simulate(eng, w, "sarathi", n_requests=3000, rng=bs, method="generic")
    assert a.method == "fast" and b.method == "generic"
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
    for k in ("n_iterations", "tokens_served", "preemptions", "wasted_tokens", "peak_kv_tokens", "examined"):
        assert getattr(a, k) == getattr(b, k), k
    assert a.preemptions > 50  # the cache binds
