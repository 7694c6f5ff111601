"""The event-skipping kernel and the generic select()-per-iteration kernel give identical results."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluidq import ContextAware, Engine, Geometric, Poisson, Staircase, Workload
from fluidq.engine import VLLM
from fluidq.policies import POLICY_NAMES, resolve_policy
from fluidq.sim import fast_path_applies, simulate

from sim_strategies import schedulers  # tests/sim/sim_strategies.py

PAPER = {"c": 0.01128, "a": 0.03547, "b0": 128}


@pytest.fixture
def paper_engine():
    return Engine(batch_time=Staircase(**PAPER), b_max=512)




def assert_same(a, b):
    assert a.method == "fast" and b.method == "generic"
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
    for k in a.iterations or ():  # None without a record
        if k in b.iterations:
            np.testing.assert_array_equal(a.iterations[k], b.iterations[k], err_msg=k)
    assert a.n_iterations == b.n_iterations
    assert a.tokens_served == b.tokens_served
    assert a.busy_fraction == b.busy_fraction
    assert a.mixed_batch_fraction == b.mixed_batch_fraction


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_builtins_agree_on_paper_setup(name, paper_engine):
    w = Workload(arrival=Poisson(rate_per_s=14.0), prompt_tokens=Geometric(mean_tokens=120),
                 output_tokens=Geometric(mean_tokens=100))
    a = simulate(paper_engine, w, name, horizon_s=60, rng=3, record_iterations=True)
    b = simulate(paper_engine, w, name, horizon_s=60, rng=3, record_iterations=True, method="generic")
    assert_same(a, b)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pol=schedulers, b_max=st.integers(8, 96), k_max=st.one_of(st.none(), st.integers(1, 16)),
       rate=st.floats(0.5, 12.0), mp=st.floats(1.0, 40.0), md=st.floats(1.0, 30.0), ctx=st.booleans(),
       seed=st.integers(0, 2**31), rec=st.booleans())
def test_random_schedulers_agree(pol, b_max, k_max, rate, mp, md, ctx, seed, rec):
    bt = Staircase(c=0.01, a=0.02, b0=16)
    if ctx:
        bt = ContextAware(base=bt, kv_s_per_token=2e-6)
    eng = Engine(batch_time=bt, b_max=b_max, k_max=k_max)
    w = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=mp),
                 output_tokens=Geometric(mean_tokens=md))
    assert fast_path_applies(pol, eng)[0]
    # without a record (and without context-aware times) the kernel skips the decoders' KV sum
    a = simulate(eng, w, pol, horizon_s=8, rng=seed, record_iterations=rec)
    b = simulate(eng, w, pol, horizon_s=8, rng=seed, record_iterations=True, method="generic", check_batches=True)
    assert_same(a, b)


def test_fast_path_refuses_what_it_cannot_run(paper_engine):
    from fluidq.errors import ParameterError
    from fluidq.policies import KeyOrdering, Sarathi
    from fluidq.policies.base import RequestState

    class Longest(KeyOrdering):
        name = "longest-prompt"
        static = True

        def key(self, r, now_s):
            return -r.prompt_tokens

    w = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=50, output_tokens=50)
    assert not fast_path_applies(Sarathi(order=Longest()), paper_engine)[0]
    kv = paper_engine.with_(kv_capacity_tokens=10_000)
    assert fast_path_applies(resolve_policy("sarathi"), kv)[0]  # the kernel with memory (tests/sim/test_sim_kv_kernel.py)
    assert fast_path_applies(resolve_policy("sarathi"), kv.with_(memory=VLLM.with_(prefix_caching=True)))[0]
    # an ordering the compiled FCFS loops lack runs on the select() loop (fluidq.kernel.select) under "fast" (it
    # was refused before 2026-12-07), with the same results as the reference and method "fast"
    f = simulate(paper_engine, w, Sarathi(order=Longest()), horizon_s=5, rng=1, method="fast")
    g = simulate(paper_engine, w, Sarathi(order=Longest()), horizon_s=5, rng=1, method="generic")
    assert (f.method, g.method) == ("fast", "generic") and f.n_finished > 0
    for k in g.requests:
        np.testing.assert_array_equal(f.requests[k], g.requests[k], err_msg=k)
    assert (f.n_iterations, f.busy_fraction) == (g.n_iterations, g.busy_fraction)
    # what neither loop runs is still refused: a resident at t=0 that has already finished (EngineRun only)
    done = RequestState(rid=0, arrival_s=0.0, prompt_tokens=5, output_tokens=2, prefilled=5, decoded=2)
    with pytest.raises(ParameterError, match="method"):
        simulate(paper_engine, w, Sarathi(order=Longest()), horizon_s=5, method="fast", initial=[done])
    r = simulate(paper_engine, w, Sarathi(order=Longest()), horizon_s=5, rng=1, initial=[done])
    assert r.method == "generic"
