"""Under vLLM's async scheduling the KV kernel (``simulate``'s fast path, :mod:`fluidq.kernel.kv`) gives exactly the
generic ``select()`` loop's run (:class:`fluidq.kernel.step.EngineRun`, the reference): every per-request array, on
random engines -- token rules and vLLM's blocks (most recently admitted or last-in-order victim, prefix caching,
swap, incremental reservation), block sizes, ``k_max``, a first token emitted with the prefill or not, context-aware
batch times -- under every built-in scheduler, with caches that bind.

A request that finished in the batch in flight holds its blocks until its output is read, and is no preemption
victim (``memory._unfinished``).  The kernel's most-recently-admitted victim (its admission stack) used to take
such a request when it was the latest admission, preempting a finished request: 5 of the first 40 cases here
differed from the generic run (first scheduled, prefill done, first token, finish and preemptions) before that
was mended (2026-12-06).
"""
import numpy as np
import pytest

from fluidq import ContextAware, Engine, Staircase
from fluidq.engine import VLLM, Memory
from fluidq.sim import simulate

POLICIES = ("vllm-chunked", "sarathi", "orca", "vllm", "fastertransformer")
KINDS = ("tokens", "vllm", "vllm", "prefix", "prefix", "vllm-last", "swap", "incremental")
ARRAYS = ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s", "preemptions")


def _case(seed):
    """A random async engine with a KV cache that binds, a built-in scheduler and a workload."""
    rng = np.random.default_rng(seed)
    bs = int(rng.choice([1, 4, 16]))
    kind = str(rng.choice(KINDS))
    mem = {"tokens": Memory(), "vllm": VLLM.with_(block_size=bs),
           "vllm-last": VLLM.with_(block_size=bs, victim="last_in_order"),
           "prefix": VLLM.with_(block_size=bs, prefix_caching=True),
           "swap": VLLM.with_(block_size=bs, preemption="swap"),
           "incremental": VLLM.with_(block_size=bs, reservation="incremental")}[kind]
    n = int(rng.integers(60, 160))
    p = rng.integers(1, int(rng.choice([40, 200])), n)
    o = rng.integers(1, int(rng.choice([8, 30, 80])), n)
    cap = int(max(p + o) + rng.integers(0, 300)) // bs * bs + bs
    bt = Staircase(c=0.01, a=0.02, b0=16)
    if rng.random() < 0.3:
        bt = ContextAware(base=bt, kv_s_per_token=2e-6)
    eng = Engine(batch_time=bt, b_max=int(rng.choice([64, 256, 1024])),
                 k_max=None if rng.random() < 0.4 else int(rng.integers(2, 24)), kv_capacity_tokens=cap, memory=mem,
                 prefill_emits_token=bool(rng.random() < 0.5), async_scheduling=True)
    rate = float(rng.uniform(1.0, 4.0)) * 40.0 / float(np.mean(o) + 1)
    a = np.sort(rng.uniform(0.0, n / rate, n))
    w = {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}
    kw = {"horizon_s": float(1.5 * a[-1] + 2.0)}  # (incremental reservation may preempt in a cycle on both paths)
    if kind == "swap":
        kw["swap_s_per_token"] = 1e-6
    return eng, w, POLICIES[int(rng.integers(0, len(POLICIES)))], kw


@pytest.mark.parametrize("block", range(4))
def test_async_kernel_equals_generic_on_random_engines(block):
    """40 random engines (4 blocks of 10): every per-request array equal (``==``, NaN where unserved), and the
    run's counts."""
    preempting = 0
    for seed in range(10 * block, 10 * block + 10):
        eng, w, pol, kw = _case(seed)
        a = simulate(eng, w, pol, **kw)
        b = simulate(eng, w, pol, method="generic", **kw)
        assert (a.method, b.method) == ("fast", "generic"), seed
        for k in ARRAYS:
            np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=f"seed {seed}: {k}")
        for k in ("n_iterations", "tokens_served", "preemptions", "wasted_tokens", "swap_tokens", "rejected",
                  "peak_kv_tokens", "end_s"):
            assert getattr(a, k) == getattr(b, k), (seed, k)
        preempting += b.preemptions > 0
    assert preempting >= 5, preempting  # the caches bind: most runs preempt
