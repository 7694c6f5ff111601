"""The finite-support chain (decode vector of remaining output tokens) of fluidq.dtmc.finite."""
import numpy as np
import pytest

import fluidq
from fluidq.dtmc import build_dtmc
from fluidq.dtmc.finite import build_finite_dtmc
from fluidq.errors import ParameterError

E = fluidq.Empirical


@pytest.fixture
def tiny_engine():
    """b_max = 8 in blocks of 4 tokens: decode vectors stay few."""
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=4), b_max=8)


def wl(rate, prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


@pytest.mark.parametrize("policy,prompt,output", [
    ("sarathi", 2, E(values=(1, 3), weights=(2, 1))),
    ("sarathi", fluidq.Geometric(mean_tokens=3), E(values=(1, 2, 3))),
    ("fastertransformer", 2, fluidq.Fixed(n=2)),
    ("vllm-chunked", 3, E(values=(2, 5))),
    ("vllm", 2, E(values=(1, 2, 3))),
    ("fastertransformer", E(values=(1, 4)), E(values=(1, 2))),
    ("sarathi", E(values=(2, 5), weights=(3, 1)), fluidq.Fixed(n=1)),
])
def test_stationary_distribution_and_throughput(tiny_engine, policy, prompt, output):
    lam = 2.5
    ch = build_dtmc(tiny_engine, wl(lam, prompt, output), policy, max_prefill=8, max_decode=8)
    assert ch.caps["max_output"] == max(output.support()[0])
    rows = np.asarray(ch.P.sum(axis=1)).ravel()
    assert np.allclose(rows, 1.0)
    r = ch.solve()
    assert r.pi.min() >= 0 and abs(r.pi.sum() - 1.0) < 1e-12
    assert r.lost_mass < 1e-4, r.reason
    assert r.throughput_requests_per_s == pytest.approx(lam, rel=1e-4)
    mp, md = r.chain.inputs["m_p"], r.chain.inputs["m_d"]
    assert r.throughput_tokens_per_s == pytest.approx(lam * (mp + md), rel=1e-4)
    # the decode vector is consistent with the decode count coordinate
    C = ch.inputs["decode_vectors"]
    assert np.array_equal(C[ch.space["decode"]].sum(axis=1), ch.space["n_d"])


@pytest.mark.parametrize("policy,prompt", [("sarathi", 3), ("sarathi", fluidq.Geometric(mean_tokens=3)),
                                           ("fastertransformer", 2), ("vllm", 2), ("orca", 3)])
def test_one_token_outputs_agree_with_the_memoryless_chain(tiny_engine, policy, prompt):
    # Fixed(1) is both Geometric(mean 1) and finite support: the two builders must agree
    w = wl(3.0, prompt, fluidq.Fixed(n=1))
    a = build_dtmc(tiny_engine, w, policy, max_prefill=30, max_decode=8).solve()
    if policy == "orca":
        # prefill-priority mixed: a partial prefill leaves decode fewer slots than decoders
        with pytest.raises(ParameterError, match="oldest"):
            build_finite_dtmc(tiny_engine, w, policy, max_prefill=30, max_decode=8)
        return
    b = build_finite_dtmc(tiny_engine, w, policy, max_prefill=30, max_decode=8).solve()
    for name in ("mean_requests", "mean_prefill", "mean_decode", "mean_unprocessed_tokens",
                 "throughput_requests_per_s", "mean_batch_s"):
        assert getattr(b, name) == pytest.approx(getattr(a, name), rel=1e-8, abs=1e-10), name
    assert a.requests_quantiles == b.requests_quantiles


@pytest.mark.parametrize("policy,prompt", [("sarathi", 3), ("sarathi", fluidq.Geometric(mean_tokens=3)),
                                           ("fastertransformer", 3), ("vllm", 3), ("orca", 3)])
def test_geometric_outputs_agree_with_the_memoryless_chain(tiny_engine, policy, prompt):
    # the finite builder with geometric outputs (decode vector = n_d, binomial completions, partial
    # decode allowed) is the memoryless chain again
    w = wl(6.0, prompt, fluidq.Geometric(mean_tokens=3))
    a = build_dtmc(tiny_engine, w, policy, max_prefill=12, max_decode=25).solve()
    b = build_finite_dtmc(tiny_engine, w, policy, max_prefill=12, max_decode=25).solve()
    for name in ("mean_requests", "mean_decode", "mean_unprocessed_tokens", "throughput_tokens_per_s"):
        assert getattr(b, name) == pytest.approx(getattr(a, name), rel=1e-8), name


def test_empirical_prompts_with_geometric_outputs_agree_with_simulation(tiny_engine):
    # vLLM takes whole prompts head-of-line: the head's revealed length is in the state
    w = wl(6.0, E(values=(1, 5)), fluidq.Geometric(mean_tokens=3))
    r = build_dtmc(tiny_engine, w, "vllm", max_prefill=20, max_decode=30).solve()
    assert r.status.value == "stable", r.reason
    assert r.throughput_requests_per_s == pytest.approx(6.0, rel=1e-6)
    rep = fluidq.replicate(tiny_engine, w, "vllm", n_replications=16, horizon_s=2000.0, rng=20261202,
                           confidence=0.99, start_frac=0.1, keep_runs=False)
    lo, hi = rep.mean_requests_ci
    assert lo <= r.mean_requests <= hi, (r.mean_requests, rep.mean_requests_ci)


def test_single_value_empirical_equals_fixed(tiny_engine):
    a = build_dtmc(tiny_engine, wl(2.0, 2, fluidq.Fixed(n=3)), "sarathi", max_prefill=25).solve()
    b = build_dtmc(tiny_engine, wl(2.0, 2, E(values=(3,))), "sarathi", max_prefill=25).solve()
    assert b.mean_requests == pytest.approx(a.mean_requests, rel=1e-10)


@pytest.mark.parametrize("policy", ["sarathi", "fastertransformer", "vllm", "vllm-chunked"])
def test_single_value_empirical_prompt_equals_fixed(tiny_engine, policy):
    # the head's known remaining tokens replace the fixed-prompt progress: same chain in law
    out = E(values=(1, 3))
    a = build_dtmc(tiny_engine, wl(4.0, 3, out), policy, max_prefill=12, max_decode=8).solve()
    b = build_dtmc(tiny_engine, wl(4.0, E(values=(3,)), out), policy, max_prefill=12, max_decode=8).solve()
    for name in ("mean_requests", "mean_prefill", "mean_unprocessed_tokens", "throughput_tokens_per_s"):
        assert getattr(b, name) == pytest.approx(getattr(a, name), rel=1e-9), name


def test_longer_outputs_mean_more_requests(tiny_engine):
    # same load in tokens would differ; here only the output support grows: more time in decode
    short = build_dtmc(tiny_engine, wl(2.0, 2, E(values=(1, 2))), "sarathi", max_prefill=25).solve()
    long_ = build_dtmc(tiny_engine, wl(2.0, 2, E(values=(4, 5))), "sarathi", max_prefill=6).solve()
    assert long_.mean_decode > short.mean_decode


@pytest.mark.parametrize("policy,rate,prompt,output,prefill_cap", [
    ("fastertransformer", 10.0, 2, E(values=(1, 5)), 25),
    ("sarathi", 10.0, E(values=(2, 6)), E(values=(1, 3)), 18),
    ("fastertransformer", 7.0, E(values=(1, 5)), E(values=(1, 3)), 30),
])
def test_mean_requests_agree_with_simulation(tiny_engine, policy, rate, prompt, output, prefill_cap):
    w = wl(rate, prompt, output)
    r = build_dtmc(tiny_engine, w, policy, max_prefill=prefill_cap).solve()
    assert r.status.value == "stable", r.reason
    rep = fluidq.replicate(tiny_engine, w, policy, n_replications=16, horizon_s=2000.0, rng=20261202,
                           confidence=0.99, start_frac=0.1, keep_runs=False)
    lo, hi = rep.mean_requests_ci
    assert lo <= r.mean_requests <= hi, (r.mean_requests, rep.mean_requests_ci)
    if policy == "fastertransformer" and prompt == 2:
        # the support matters: a geometric output of the same mean predicts far more requests
        wg = wl(rate, prompt, fluidq.Geometric(mean_tokens=output.mean))
        g = build_dtmc(tiny_engine, wg, policy, max_prefill=prefill_cap, max_decode=60).solve()
        assert g.mean_requests > hi, (g.mean_requests, rep.mean_requests_ci)


def test_bad_input_is_refused_with_a_reason(tiny_engine):
    w = wl(2.0, 2, E(values=(1, 40)))
    with pytest.raises(ParameterError, match="max_output"):
        build_dtmc(tiny_engine, w, "sarathi")
    with pytest.raises(ParameterError, match="max_states"):
        build_dtmc(tiny_engine, wl(2.0, 2, E(values=(1, 9))), "sarathi", max_states=1000)
    with pytest.raises(ParameterError, match="oldest b"):
        build_dtmc(tiny_engine, wl(2.0, 2, E(values=(1, 2))), "vllm", max_decode=9)
    with pytest.raises(ParameterError, match="Fixed or Empirical prompt length"):
        build_dtmc(tiny_engine, wl(2.0, fluidq.Geometric(mean_tokens=3), E(values=(1, 2))), "vllm")
    with pytest.raises(ParameterError, match="Fixed or Empirical"):
        build_finite_dtmc(tiny_engine, wl(2.0, 2, fluidq.LogNormal(mu=1.0, sigma=0.5)), "sarathi")
    with pytest.raises(ParameterError, match="max_prompt"):
        build_dtmc(tiny_engine, wl(2.0, E(values=(1, 40)), E(values=(1, 2))), "sarathi")
    with pytest.raises(ParameterError, match="does not chunk"):
        build_dtmc(tiny_engine, wl(2.0, E(values=(1, 9)), E(values=(1, 2))), "vllm")
    with pytest.raises(ParameterError, match="prompt_tokens"):
        build_dtmc(tiny_engine, wl(2.0, fluidq.LogNormal(mu=1.0, sigma=0.5), E(values=(1, 2))), "sarathi")


def test_overload_is_unstable_not_a_number(tiny_engine):
    r = build_dtmc(tiny_engine, wl(200.0, 2, E(values=(1, 3))), "sarathi", max_prefill=10).solve()
    assert r.status.value == "unstable" and r.mean_requests is None


@pytest.mark.parametrize("policy,prompt,output", [
    ("sarathi", 1, fluidq.Fixed(n=2)),
    ("fastertransformer", 1, E(values=(1, 3), weights=(1, 2))),
    ("sarathi", E(values=(1, 2)), E(values=(1, 3), weights=(1, 2))),
])
def test_one_token_budget_is_an_mg1_queue(policy, prompt, output):
    # b_max = 1: one request at a time, FIFO, service (prompt + output) batches of t(1) seconds,
    # and an idle engine starts at the arrival -- the M/G/1 queue of Pollaczek-Khinchine
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=1), b_max=1)
    lam = 4.0
    r = build_dtmc(eng, wl(lam, prompt, output), policy, max_prefill=60).solve()
    assert r.status.value == "stable", r.reason
    t1 = float(eng.batch_time(1))
    pv, pp = fluidq.workload.as_length("prompt", prompt).support()
    ov, op = output.support()
    S = (np.add.outer(np.asarray(pv), np.asarray(ov)) * t1).ravel()
    w = np.outer(pp, op).ravel()
    ES, ES2 = float(w @ S), float(w @ S ** 2)
    rho = lam * ES
    assert rho < 1
    assert r.mean_requests == pytest.approx(rho + lam ** 2 * ES2 / (2 * (1 - rho)), rel=1e-8)
