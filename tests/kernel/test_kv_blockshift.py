"""The KV kernel's block arithmetic by shift and mask gives what division gives.

``kv._advance`` divides by the block size (``cdiv``, ``%``) at every admission, preemption and decoder move; with a
power-of-two block size (vLLM's 16) ``cfg[C_BSH]`` holds its log2 and ``_bdiv`` / ``_bmod`` shift and mask instead,
else (``C_BSH`` -1) they divide as before.  So:

* the two helpers equal ``kvrules.cdiv`` and Python's ``%`` on every integer tried, negative ones included (the
  kernel takes ``-G % bs``), compiled and not, and ``run_fcfs_kv`` sets ``C_BSH`` to the log2 exactly for powers
  of two;
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


def test_shift_and_mask_equal_division():
    from fluidq.kernel import kv as K
    from fluidq.kernel.kvrules import cdiv

    xs = np.arange(-300, 301, dtype=np.int64).tolist() + [2**40 + 5, -(2**40) - 3, 2**62 - 1]
    for sh in range(7):
        bs = 1 << sh
        for x in xs:
            assert K._bdiv(x, bs, sh) == cdiv(x, bs) == -((-x) // bs), (x, bs)
            assert K._bmod(x, bs, sh) == x % bs, (x, bs)
    for bs in (3, 5, 6, 12, 24):  # not a power of two: the division itself
        for x in xs:
            assert K._bdiv(x, bs, -1) == -((-x) // bs)
            assert K._bmod(x, bs, -1) == x % bs


def _run(bs, force_div, seed, monkeypatch, record=True):
    from fluidq.kernel import kv as K
    from fluidq.kernel import run_fcfs_kv

    step = K.__dict__.get("_step_unwrapped_bsh", K.step)
    seen = []

    def wrapped(*args):
        cfg = args[4]
        seen.append(int(cfg[K.C_BSH]))
        if force_div:
            cfg[K.C_BSH] = -1
        return step(*args)

    monkeypatch.setattr(K, "step", wrapped)
    monkeypatch.setattr(K, "_step_unwrapped_bsh", step, raising=False)
    rng = np.random.default_rng(seed)
    n = 3000
    arr = np.cumsum(rng.exponential(1.0 / float(rng.uniform(60, 100)), n))
    P = rng.geometric(1.0 / float(rng.uniform(15, 60)), n).astype(np.int64)
    D = rng.geometric(1.0 / float(rng.uniform(15, 60)), n).astype(np.int64)
    b_max = int(rng.integers(48, 256))
    tau = 0.01 + 0.0002 * np.arange(b_max + 1, dtype=float)
    out = run_fcfs_kv(arr, P, D, b_max=b_max, k_cap=int(rng.integers(16, 1 << 20)), mixed=True, chunked=True,
                      chunk_long=False, prefill_first=False, tau_b=tau, ks=float(rng.choice([0.0, 1e-5])),
                      horizon=float("inf"), record=record, kv_cap=int(rng.choice([600, 1200])), block_size=bs,
                      paged=True, whole_prompt=bool(rng.integers(2)), most_recent=True,
                      emit_at_prefill=bool(rng.integers(2)))
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
    for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s", "preemptions_per_request"):
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    for x, y in zip(a["backlog"], b["backlog"]):
        np.testing.assert_array_equal(x, y)
    for k, v in a["records"].items():
        np.testing.assert_array_equal(v, b["records"][k], err_msg=k)
    for k in ("iterations", "busy_s", "tokens_served", "preemptions", "wasted_tokens", "peak_kv_tokens", "examined"):
        assert a[k] == b[k], k


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
