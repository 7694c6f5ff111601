"""The KV kernel with a composition batch time, a first token emitted with the prefill and vLLM's async
scheduling (issue 15: the validation's engine, ``fluidq.validate.replay.vllm_engine``) gives exactly the generic
``select()`` loop's run: every request's times (``==``: the kernel evaluates the iteration model with the same
arithmetic, :mod:`fluidq.kernel.compose`, and the sums it reads are integers), the backlog series, the iteration
records, iterations, preemptions, wasted and swapped tokens, the KV peak and the requests examined -- on random
workloads, schedulers, block sizes, memories (token rules, vLLM's blocks, prefix caching, swap), ``k_max`` and
caches that bind.  A request that finished in the batch in flight (async scheduling: it holds its KV until
its output is read) is never a preemption victim, in either path: the generic rules used to preempt one and then
raise ``KeyError`` releasing it, and the kernel used to hand such runs back; every run here now runs in the
kernel, and the test fails if one falls back or the generic path fails.  Run uncompiled (``NUMBA_DISABLE_JIT=1``, in a child
process) the kernel gives the same arrays.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__)
DATA = HERE.resolve().parents[2] / "validation" / "data"
POLICIES = ("vllm-chunked", "sarathi", "orca", "vllm", "fastertransformer")


def _models():
    from fluidq.batchtime.operators import lss_iteration_model, vidur_iteration_model

    v7 = DATA / "vidur" / "a100" / "meta-llama" / "Llama-2-7b-hf"
    return [lss_iteration_model(DATA / "llmservingsim" / "RTX4090_Llama-3.1-8B", n_layers=32),
            vidur_iteration_model(v7 / "mlp.csv.gz", v7 / "attention_subset.csv.gz", n_layers=32, per_seq_us=3.0,
                                  decode_batching_overhead=0.1)]


def _case(seed, models):
    """A random engine (composition batch time, memory, budgets, emit, async), scheduler and workload."""
    from fluidq import Engine
    from fluidq.batchtime.composition import Composition
    from fluidq.engine import VLLM, Memory

    rng = np.random.default_rng(seed)
    bs = int(rng.choice([1, 4, 16]))
    kind = rng.choice(["tokens", "vllm", "vllm-last", "prefix", "swap", "incremental"])
    mem = {"tokens": Memory(), "vllm": VLLM.with_(block_size=bs), "vllm-last": VLLM.with_(block_size=bs,
                                                                                             victim="last_in_order"),
           "prefix": VLLM.with_(block_size=bs, prefix_caching=True),
           "swap": VLLM.with_(block_size=bs, preemption="swap"),
           "incremental": VLLM.with_(block_size=bs, reservation="incremental")}[kind]
    b_max = int(rng.choice([64, 256, 1024]))
    n = int(rng.integers(40, 120))
    p = rng.integers(1, int(rng.choice([40, 300, 900])), n)
    o = rng.integers(1, int(rng.choice([5, 40, 200])), n)
    cap = int(max(p + o) + rng.integers(0, 600)) // bs * bs + bs
    eng = Engine(batch_time=Composition(model=models[int(rng.integers(0, len(models)))]), b_max=b_max,
                 k_max=None if rng.random() < 0.3 else int(rng.integers(2, 40)), kv_capacity_tokens=cap, memory=mem,
                 prefill_emits_token=bool(rng.random() < 0.7), async_scheduling=bool(rng.random() < 0.7))
    rate = float(rng.uniform(0.5, 3.0)) * 40.0 / float(np.mean(o) + 1)
    a = np.sort(rng.uniform(0.0, n / rate, n))
    w = {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}
    kw = {"swap_s_per_token": 1e-6} if kind == "swap" else {}
    # a horizon: a small cache with incremental reservation can preempt in a cycle for ever (both paths do)
    kw["horizon_s"] = float(1.5 * a[-1] + 2.0)
    return eng, w, POLICIES[int(rng.integers(0, len(POLICIES)))], n, kw


def _run(eng, w, pol, n, kw, method):
    from fluidq.sim import simulate

    return simulate(eng, w, pol, method=method, record_iterations=True, **kw)


SEEDS = range(36)


@pytest.fixture(scope="module")
def models():
    if not (DATA / "llmservingsim").is_dir():
        pytest.skip("validation/data is not present (not a source checkout)")
    return _models()


def test_kernel_equals_generic_on_random_composition_engines(models):
    ran = preempting = asynchronous = 0
    for seed in SEEDS:
        eng, w, pol, n, kw = _case(seed, models)
        b = _run(eng, w, pol, n, kw, "generic")
        a = _run(eng, w, pol, n, kw, "auto")
        assert (a.method, b.method) == ("fast", "generic"), seed
        ran += 1
        preempting += a.preemptions > 0
        asynchronous += eng.async_scheduling
        for k in b.requests:
            np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=f"seed {seed}: {k}")
        for k in b.backlog:
            np.testing.assert_array_equal(a.backlog[k], b.backlog[k], err_msg=f"seed {seed}: backlog {k}")
        assert set(a.iterations) == set(b.iterations), seed
        for k in b.iterations:
            np.testing.assert_array_equal(a.iterations[k], b.iterations[k], err_msg=f"seed {seed}: records {k}")
        for k in ("n_iterations", "tokens_served", "preemptions", "wasted_tokens", "swap_tokens", "peak_kv_tokens",
                  "rejected", "blocked", "examined", "end_s", "busy_fraction", "mixed_batch_fraction"):
            assert getattr(a, k) == getattr(b, k), (seed, k)
        assert np.isfinite(a.requests["finish_s"]).sum() > 0
    # the kernel ran most cases, with preemptions and async scheduling among them
    assert ran == len(SEEDS) and preempting >= 6 and asynchronous >= 10, (ran, preempting, asynchronous)


def test_the_validation_engine_runs_in_the_kernel(models):
    """``vllm_engine`` (Composition, vLLM blocks with prefix caching, first token with the prefill, async) is
    routed to the kernel; ``method="generic"`` still forces the Python loop."""
    from fluidq.sim import fast_path_applies, simulate
    from fluidq.validate.replay import vllm_engine
    from fluidq.policies import resolve_policy

    eng = vllm_engine(models[0], b_max=512, k_max=16, kv_capacity_tokens=6000, prefix_caching=True,
                      async_scheduling=True)
    assert fast_path_applies(resolve_policy("vllm-chunked"), eng)[0]
    rng = np.random.default_rng(5)
    a = np.sort(rng.uniform(0, 4.0, 120))
    w = {"arrival_s": a, "prompt_tokens": rng.integers(10, 900, 120), "output_tokens": rng.integers(1, 120, 120)}
    f = simulate(eng, w, "vllm-chunked", n_requests=120)
    g = simulate(eng, w, "vllm-chunked", n_requests=120, method="generic")
    assert (f.method, g.method) == ("fast", "generic") and f.preemptions == g.preemptions > 0
    np.testing.assert_array_equal(f.requests["finish_s"], g.requests["finish_s"])
    np.testing.assert_array_equal(f.requests["first_token_s"], g.requests["first_token_s"])


def test_models_without_a_table_stay_generic(models):
    from fluidq import Affine, Engine
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import FittedIterationModel
    from fluidq.engine import VLLM
    from fluidq.policies import resolve_policy
    from fluidq.sim import fast_path_applies

    pol = resolve_policy("sarathi")
    fitted = Engine(batch_time=Composition(model=FittedIterationModel(Affine(c=0.01, a=1e-5))), b_max=256,
                    kv_capacity_tokens=4000, memory=VLLM)
    ok, why = fast_path_applies(pol, fitted)
    assert not ok and "kernel table" in why
    assert not fast_path_applies(pol, fitted.with_(kv_capacity_tokens=None))[0]
    # (issue 15: without a cache, a composition with a table and async scheduling run in the kernel with memory,
    # a cache that never binds: tests/sim/test_sim_nokv_kernel.py)
    no_cache = Engine(batch_time=Composition(model=models[0]), b_max=256)
    assert fast_path_applies(pol, no_cache)[0]
    assert fast_path_applies(pol, Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=256, async_scheduling=True))[0]


def _arrays():
    models = _models()
    res = {}
    for seed in range(0, len(SEEDS), 3):
        eng, w, pol, n, kw = _case(seed, models)
        r = _run(eng, w, pol, n, kw, "fast")  # ("fast": uncompiled, "auto" would choose the generic path)
        for k, v in r.requests.items():
            res[f"{seed}/{k}"] = np.asarray(v)
        for k, v in r.backlog.items():
            res[f"{seed}/backlog/{k}"] = np.asarray(v)
        res[f"{seed}/counts"] = np.array([r.n_iterations, r.preemptions, r.wasted_tokens, r.peak_kv_tokens,
                                          r.examined])
    return res


def test_compiled_and_uncompiled_kernel_agree(models, uncompiled_agrees):
    uncompiled_agrees(HERE, _arrays())


if __name__ == "__main__":
    from fluidq.kernel import compiled

    print(f"compiled={compiled()}")
    np.savez(sys.argv[1], **_arrays())
