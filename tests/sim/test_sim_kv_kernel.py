"""The compiled kernel with KV memory (fluidq.kernel.kv) gives what the generic select()-per-iteration path gives.

Random schedulers, memory models (the default token rules; paged rules with any block size, whole-prompt or
incremental reservation, most-recent or last-in-order victims, prefix caching), recompute or swap preemption,
cache sizes that bind, context-aware batch times, the first token with the prefill, and workloads: per-request times and preemption counts, the backlog
series, every per-iteration record and the run's counters must be identical.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluidq import ContextAware, Engine, Geometric, Poisson, Staircase, Workload
from fluidq.engine import VLLM, Memory
from fluidq.kernel import compiled
from fluidq.policies import FCFS, POLICY_NAMES, Sarathi, resolve_policy
from fluidq.sim import fast_path_applies, simulate

from sim_compare import assert_same  # tests/sim/sim_compare.py: compiled run == generic run
from sim_strategies import schedulers  # tests/sim/sim_strategies.py


def both(eng, w, pol, **kw):
    a = simulate(eng, w, pol, method="fast", **kw)
    b = simulate(eng, w, pol, method="generic", check_batches=True, **kw)
    return a, b


@pytest.mark.parametrize("name", POLICY_NAMES)
@pytest.mark.parametrize("memory", [Memory(), VLLM, Memory(kind="tokens", victim="most_recent"),
                                    VLLM.with_(preemption="swap"), VLLM.with_(prefix_caching=True)], ids=str)
def test_builtins_agree_with_memory_that_binds(name, memory):
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, kv_capacity_tokens=6000,
                 memory=memory)
    w = Workload(arrival=Poisson(rate_per_s=14.0), prompt_tokens=Geometric(mean_tokens=120),
                 output_tokens=Geometric(mean_tokens=100))
    kw = {"swap_s_per_token": 2e-6} if memory.preemption == "swap" else {}
    a, b = both(eng, w, name, horizon_s=60, rng=3, record_iterations=True, **kw)
    assert_same(a, b, record=True)
    if name != "fastertransformer":
        assert a.preemptions > 0  # the cache binds
        assert (a.swap_tokens > 0) == (memory.preemption == "swap")


def test_vllm_engine_agrees_without_a_horizon():
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=3000, memory=VLLM,
                 prefill_emits_token=True)
    w = Workload(arrival=Poisson(rate_per_s=20.0), prompt_tokens=Geometric(mean_tokens=150),
                 output_tokens=Geometric(mean_tokens=60))
    a, b = both(eng, w, "vllm-chunked", n_requests=400, rng=8, record_iterations=True)
    assert_same(a, b, record=True)
    assert a.n_finished == 400 - a.rejected and a.preemptions > 0


def test_prefix_caching_with_one_token_blocks_agrees_over_a_long_run():
    # every freed block is a queue entry: the kernel compacts its freed-block queue many times (it never grows
    # it inside an iteration, see kernel.kv._release), and the heap and record buffers grow between iterations
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=1500,
                 memory=VLLM.with_(prefix_caching=True, block_size=1))
    w = Workload(arrival=Poisson(rate_per_s=12.0), prompt_tokens=Geometric(mean_tokens=120),
                 output_tokens=Geometric(mean_tokens=60))
    a, b = both(eng, w, "vllm-chunked", n_requests=600, rng=5, record_iterations=True)
    assert_same(a, b, record=True)
    assert a.preemptions > 50


memories = st.one_of(
    st.just(Memory()),
    st.builds(lambda kind, bs, res, vic, pc: Memory(kind=kind, block_size=bs if kind == "blocks" else 1,
                                                    reservation=res, victim=vic, prefix_caching=pc and kind == "blocks"),
              st.sampled_from(["tokens", "blocks"]), st.integers(1, 16), st.sampled_from(["whole_prompt", "incremental"]),
              st.sampled_from(["last_in_order", "most_recent"]), st.booleans()))


@settings(max_examples=120 if compiled() else 25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pol=schedulers, mem=memories, b_max=st.integers(8, 96), k_max=st.one_of(st.none(), st.integers(1, 16)),
       cap=st.integers(20, 800), rate=st.floats(0.5, 12.0), mp=st.floats(1.0, 40.0), md=st.floats(1.0, 30.0),
       ctx=st.booleans(), emit=st.booleans(), seed=st.integers(0, 2**31), rec=st.booleans(),
       swap=st.one_of(st.none(), st.sampled_from([0.0, 1e-5, 1e-3])))
def test_random_engines_and_memories_agree(pol, mem, b_max, k_max, cap, rate, mp, md, ctx, emit, seed, rec, swap):
    bt = Staircase(c=0.01, a=0.02, b0=16)
    if ctx:
        bt = ContextAware(base=bt, kv_s_per_token=2e-6)
    eng = Engine(batch_time=bt, b_max=b_max, k_max=k_max, kv_capacity_tokens=cap, memory=mem,
                 prefill_emits_token=emit)
    w = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=mp),
                 output_tokens=Geometric(mean_tokens=md))
    kw = {} if swap is None or mem.prefix_caching else {"preemption": "swap", "swap_s_per_token": swap}
    assert fast_path_applies(pol, eng, kw.get("preemption"))[0]
    a, b = both(eng, w, pol, horizon_s=8, rng=seed, record_iterations=rec, **kw)
    assert_same(a, b, record=rec)


def test_auto_routes_memory_to_the_kernel_and_the_rest_to_the_generic_path():
    base = dict(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, kv_capacity_tokens=500)
    w = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=20, output_tokens=20)
    sar = resolve_policy("sarathi")
    for mem, kw in ((Memory(), {}), (VLLM, {}), (Memory(), {"preemption": "swap", "swap_s_per_token": 1e-6})):
        eng = Engine(memory=mem, **base)
        assert fast_path_applies(sar, eng, kw.get("preemption"))[0]
        r = simulate(eng, w, "sarathi", horizon_s=5, rng=1, **kw)
        assert r.method == ("fast" if compiled() else "generic")
    class Guarded(FCFS):  # an ordering that may refuse a victim: the generic path asks it
        def may_evict(self, request, now_s):
            return True

    guarded = Sarathi(order=Guarded())
    eng = Engine(memory=VLLM.with_(prefix_caching=True), **base)
    assert fast_path_applies(sar, eng)[0] and not fast_path_applies(guarded, eng)[0]
    assert simulate(eng, w, guarded, horizon_s=5, rng=1).method == "generic"


def test_huge_blocks_keep_the_generic_path():
    from fluidq.sim.core import KV_KERNEL_MAX_BLOCK

    eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, kv_capacity_tokens=10 * KV_KERNEL_MAX_BLOCK,
                 memory=Memory(kind="blocks", block_size=2 * KV_KERNEL_MAX_BLOCK))
    ok, why = fast_path_applies(resolve_policy("sarathi"), eng)
    assert not ok and "blocks" in why


def test_progress_reports_do_not_change_a_run_with_memory():
    # the kernel stops to report progress and resumes where it stopped (the batch is formed after the report)
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=3000, memory=VLLM)
    w = Workload(arrival=Poisson(rate_per_s=20.0), prompt_tokens=Geometric(mean_tokens=150),
                 output_tokens=Geometric(mean_tokens=60))
    seen = []
    a = simulate(eng, w, "vllm-chunked", horizon_s=30, rng=2, record_iterations=True,
                 progress=lambda t, n: seen.append((t, n)))
    b = simulate(eng, w, "vllm-chunked", horizon_s=30, rng=2, record_iterations=True)
    assert len(seen) > 10 and a.preemptions > 0
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
    for k in a.iterations:
        np.testing.assert_array_equal(a.iterations[k], b.iterations[k], err_msg=k)
    c = simulate(eng, w, "vllm-chunked", horizon_s=30, rng=2, record_iterations=True, method="generic")
    if a.method == "fast":
        assert_same(a, c, record=True)
