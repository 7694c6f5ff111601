"""KV-cache memory: capacity never exceeded, preemption by recompute or swap, the eviction hook."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluidq import Engine, Geometric, Poisson, Staircase, Workload
from fluidq.errors import ParameterError
from fluidq.policies import FCFS, POLICY_NAMES, Sarathi, resolve_policy
from fluidq.sim import simulate


def engine(cap, b_max=64, k_max=None):
    return Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=b_max, k_max=k_max, kv_capacity_tokens=cap)


def workload(rate=10.0, mp=30.0, md=40.0):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=mp),
                    output_tokens=Geometric(mean_tokens=md))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(POLICY_NAMES), cap=st.integers(60, 3000), mode=st.sampled_from(["recompute", "swap"]),
       rate=st.floats(2.0, 20.0), k_max=st.one_of(st.none(), st.integers(2, 20)), seed=st.integers(0, 2**31))
def test_no_batch_exceeds_kv_capacity(name, cap, mode, rate, k_max, seed):
    pol = resolve_policy(name)
    if not pol.chunked:
        pol = pol.with_(chunk_long_prompts=True)
    r = simulate(engine(cap, k_max=k_max), workload(rate), pol, horizon_s=6, rng=seed, preemption=mode,
                 swap_s_per_token=1e-5, record_iterations=True, check_batches=True)
    it = r.iterations
    assert np.all(it["kv_used"] <= cap)
    assert r.peak_kv_tokens <= cap
    q = r.requests
    big = q["prompt_tokens"] + q["output_tokens"] > cap
    assert r.rejected == int(big.sum())
    kept = int(q["prompt_tokens"][~big].sum() + q["output_tokens"][~big].sum())
    # served + still to serve = offered + work redone after recompute preemptions
    assert r.tokens_served + int(r.backlog["tokens"][-1]) == kept + r.wasted_tokens
    if mode == "swap":
        assert r.wasted_tokens == 0
    assert r.preemptions == int(q["preemptions"].sum())


def test_tight_memory_preempts_and_costs_latency():
    w = workload(rate=14.0)
    free = simulate(engine(None), w, "sarathi", horizon_s=60, rng=5)
    rec = simulate(engine(1500), w, "sarathi", horizon_s=60, rng=5)
    swp = simulate(engine(1500), w, "sarathi", horizon_s=60, rng=5, preemption="swap", swap_s_per_token=2e-5)
    assert free.preemptions == 0
    assert rec.preemptions > 0 and rec.wasted_tokens > 0 and rec.swap_tokens == 0
    assert swp.preemptions > 0 and swp.swap_tokens > 0 and swp.wasted_tokens == 0
    assert rec.metrics["ttlt_s"]["mean"] > free.metrics["ttlt_s"]["mean"]


def test_ample_memory_changes_nothing():
    w = workload(rate=12.0)
    a = simulate(engine(None), w, "orca", horizon_s=30, rng=9, record_iterations=True)
    for method in ("generic", "auto"):  # the Python path and (compiled) the kernel with memory
        b = simulate(engine(10**9), w, "orca", horizon_s=30, rng=9, record_iterations=True, method=method)
        assert a.method == "fast" and b.preemptions == 0
        for k in a.requests:
            np.testing.assert_array_equal(a.requests[k], b.requests[k])


def test_may_evict_hook_protects_requests():
    calls = []

    class Protect(FCFS):
        name = "fcfs-protect-first"

        def may_evict(self, request, now_s):
            calls.append(request.rid)
            return request.rid % 2 == 1  # even requests are never evicted while an odd one can be

    w = workload(rate=14.0)
    r = simulate(engine(800), w, Sarathi(order=Protect()), horizon_s=40, rng=3)
    assert calls, "the hook was consulted"
    pre = r.requests["preemptions"]
    assert pre[1::2].sum() > 0
    assert pre[0::2].sum() < pre[1::2].sum()


def test_recompute_view_merges_generated_tokens_into_the_prompt():
    seen = []

    class Spy:
        name = "spy"
        inner = Sarathi()

        def select(self, view):
            for r in view.requests:
                if r.recompute_tokens:
                    seen.append((r.prompt_tokens, r.recompute_tokens, r.preemptions))
            return self.inner.select(view)

    simulate(engine(700), workload(rate=14.0), Spy(), horizon_s=30, rng=1)
    assert seen and all(p > rc >= 1 and n >= 1 for p, rc, n in seen)


def test_bad_memory_options():
    w = workload()
    with pytest.raises(ParameterError, match="swap_s_per_token"):
        simulate(engine(500), w, "sarathi", horizon_s=5, preemption="swap")
    with pytest.raises(ParameterError, match="preemption"):
        simulate(engine(500), w, "sarathi", horizon_s=5, preemption="drop")
