"""Stability verdicts a user can act on (the new-user review of `fluidq check` / `report` / `network --simulate` /
`disagg`).

* a realistic vLLM deployment got `unknown` from every scheduler at every load below 1: now an analytic argument
  decides where one is valid (a KV cache that can never bind, the k_max floor of fluidq.stability.bounds), and
  `--method auto` lets seeded replications decide the rest, labelled;
* the mechanisms behind the new analytic verdicts are checked on seeded simulations of random engines, not only
  on the shipped cases: a cache that holds min(b_max, k_max) requests at their largest p + o sees no
  preemption under overload, and an engine under a backlog serves at least the k_max floor.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import fluidq
from fluidq.cli import main
from fluidq.results import Status
from fluidq.stability.bounds import k_max_floor, k_max_floor_search, kv_never_binds

L40S = ["--gpu", "L40S", "--model", "Qwen2.5-7B", "--prompt", "2048", "--output", "256"]
H100_TP4 = ["--gpu", "H100", "--model", "Llama-3.1-70B", "--tensor-parallel-size", "4"]


def _check(capsys, *argv):
    assert main(["check", *argv, "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    return out if isinstance(out, list) else [out]


def test_l40s_is_stable_at_0_1_and_says_how(capsys):
    """The review's first case: `unknown` for all five at 0.1; the theory alone cannot decide it (the KV cache
    binds: 256 x 2304 tokens > 462,576), so the default lets simulation decide, and says so."""
    (ana,) = _check(capsys, *L40S, "--load", "0.1", "--policy", "sarathi", "--method", "analytic")
    assert ana["status"] == "unknown"
    (r,) = _check(capsys, *L40S, "--load", "0.1", "--policy", "sarathi")
    assert r["status"] == "stable"
    assert r["method"] == "simulation", r["reason"]  # the theory said unknown: labelled, interval and horizon
    assert r["reason"].startswith("decided by simulation") and "CI [" in r["reason"] and "seeded runs of" in r["reason"]
    assert r["simulation"]["verdict"] == "bounded" and r["simulation"]["horizon_s"] > 0


def test_l40s_is_unstable_at_1_3(capsys):
    for r in _check(capsys, *L40S, "--load", "1.3"):
        assert r["status"] == "unstable", (r["policy"], r["reason"])


def test_k_max_floor_decides_the_70b_deployment_analytically(capsys):
    """H100 x4, Llama-3.1-70B, 100/100 tokens: k_max=256 binds and the verdict was unknown at every load; under any
    backlog Sarathi forms batches of >= 256 tokens, each at most t(256) at 256 x 200 tokens of context: 8,139
    tokens/s, so load 0.5 (5,518 tokens/s offered) is stable, proven; 0.9 is above the floor and stays open."""
    rs = {r["policy"]: r for r in _check(capsys, *H100_TP4, "--load", "0.5", "--method", "analytic")}
    for p in ("sarathi", "vllm-chunked"):
        assert rs[p]["status"] == "stable" and rs[p]["method"] == "k_max_floor", rs[p]["reason"]
        assert "KV cache never binds" in rs[p]["reason"]
    rs = {r["policy"]: r for r in _check(capsys, *H100_TP4, "--load", "0.9", "--method", "analytic",
                                         "--policy", "sarathi")}
    assert rs["sarathi"]["status"] == "unknown" and "proves nothing here" in rs["sarathi"]["reason"]


def test_a_non_work_conserving_scheduler_far_below_the_kv_band_is_not_too_close_to_call(capsys):
    (r,) = _check(capsys, "--kv-capacity", "20000", "--prompt", "200", "--output", "200", "--load", "0.1",
                  "--policy", "vllm", "--method", "analytic")
    assert r["status"] == "unknown"
    assert "too close to call" not in r["reason"] and "not work-conserving" in r["reason"]


def _random_engine(rng, kv=None):
    c = float(rng.uniform(0.005, 0.03))
    a = float(rng.uniform(2e-5, 1e-4))
    b_max = int(rng.choice([256, 512, 1024]))
    k_max = int(rng.integers(8, 48))
    return fluidq.Engine(batch_time=fluidq.Affine(c=c, a=a), b_max=b_max, k_max=k_max, kv_capacity_tokens=kv)


@pytest.mark.parametrize("memory", ["tokens", "vllm-async"])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("policy", ["sarathi", "vllm-chunked"])
def test_a_cache_for_k_requests_at_their_largest_never_binds_under_overload(seed, policy, memory):
    """The argument of kv_never_binds, on random engines and lengths at 1.5x the k_max capacity, under the token
    rules and under vLLM's paged memory with async scheduling: no preemption and the held KV stays within the
    cache; the same engine with a third of that cache preempts (the check can fail)."""
    from fluidq.engine import VLLM

    rng = np.random.default_rng(seed)
    e = _random_engine(rng)
    if memory != "tokens":
        e = e.with_(memory=VLLM, prefill_emits_token=True, async_scheduling=True)
    p = fluidq.workload.Empirical(values=tuple(int(x) for x in rng.integers(20, 300, 3)), weights=(0.3, 0.3, 0.4))
    o = fluidq.workload.Empirical(values=tuple(int(x) for x in rng.integers(10, 200, 3)), weights=(0.5, 0.3, 0.2))
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
    lam = fluidq.max_throughput(e, w).requests_per_s
    w = w.with_rate(1.5 * lam)
    k = min(e.b_max, e.k_max)
    bs = e.memory.block_size if memory != "tokens" else 1
    cap = k * (-(-(max(p.values) + max(o.values) + (memory == "tokens")) // bs)) * bs
    ee = e.with_(kv_capacity_tokens=cap)
    ok, why = kv_never_binds(ee, w, fluidq.policies.resolve_policy(policy))
    assert ok, why
    r = fluidq.simulate(ee, w, policy, horizon_s=400 * (e.batch_time(e.b_max)), rng=seed)
    assert r.preemptions == 0 and r.peak_kv_tokens <= cap
    # "never binds" means the sample path is the one without the cache: every finish at the same instant
    free = fluidq.simulate(e.with_(kv_capacity_tokens=None), w, policy, horizon_s=400 * (e.batch_time(e.b_max)),
                           rng=seed)
    np.testing.assert_array_equal(r.requests["finish_s"], free.requests["finish_s"])
    small = e.with_(kv_capacity_tokens=cap // 3)
    assert not kv_never_binds(small, w, fluidq.policies.resolve_policy(policy))[0]
    assert fluidq.simulate(small, w, policy, horizon_s=400 * (e.batch_time(e.b_max)), rng=seed).preemptions > 0


def test_async_scheduling_without_an_engine_k_max_doubles_the_kv_holders():
    """Second reading: with asynchronous scheduling and no k_max on the engine, the requests finished in the batch
    in flight keep their KV but not a slot, so up to 2 b_max requests hold KV.  A cache for b_max requests was
    called "never binds" (STABLE at 0.9) while seeded runs grew (slope 37 tokens/s, CI [32, 42]); the argument
    now counts 2 b_max holders and does not claim it, and the cache for 2 b_max is never full."""
    from fluidq.stability.bounds import kv_never_binds

    e = fluidq.Engine(batch_time=fluidq.Affine(c=0.01, a=1e-4), b_max=8, async_scheduling=True)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=fluidq.workload.Fixed(n=1),
                        output_tokens=fluidq.workload.Fixed(n=2))
    pol = fluidq.policies.resolve_policy("sarathi")
    assert not kv_never_binds(e.with_(kv_capacity_tokens=32), w, pol)[0]
    ok, why = kv_never_binds(e.with_(kv_capacity_tokens=64), w, pol)
    assert ok and "16 requests hold KV" in why, why
    w = w.with_rate(0.9 * fluidq.max_throughput(e, w).requests_per_s)
    r = fluidq.check_stability(e.with_(kv_capacity_tokens=32), w, "sarathi", method="analytic")
    assert r.status != fluidq.Status.STABLE or "never binds" not in r.reason, r.reason
    # with the engine's own k_max the finished requests keep their slots: k_max holders
    ok, why = kv_never_binds(e.with_(k_max=8, kv_capacity_tokens=32), w, pol)
    assert ok and "8 requests hold KV" in why, why
    # and the doubled cache's sample path is the one without a cache
    a = fluidq.simulate(e.with_(kv_capacity_tokens=64), w.with_rate(1.3 * w.arrival.rate_per_s), "sarathi",
                        horizon_s=60.0, rng=3)
    b = fluidq.simulate(e, w.with_rate(1.3 * w.arrival.rate_per_s), "sarathi", horizon_s=60.0, rng=3)
    np.testing.assert_array_equal(a.requests["finish_s"], b.requests["finish_s"])


@pytest.mark.parametrize("seed", [4, 5, 6])
@pytest.mark.parametrize("policy", ["sarathi", "orca"])
def test_an_engine_under_a_backlog_serves_at_least_the_k_max_floor(seed, policy):
    """The floor of k_max_floor is a lower bound on what the scheduler serves under a backlog: on random engines
    at 1.5x the k_max region's capacity the served token rate (offered minus the backlog slope, 95% interval over
    seeded replications) is not below it."""
    rng = np.random.default_rng(seed)
    e = _random_engine(rng)
    p, o = int(rng.integers(20, 200)), int(rng.integers(10, 150))
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
    pol = fluidq.policies.resolve_policy(policy)
    floor, why = k_max_floor(e, w, pol)
    assert floor is not None, why
    lam = fluidq.max_throughput(e, w).requests_per_s
    w = w.with_rate(1.5 * lam)
    rep = fluidq.replicate(e, w, policy, n_replications=4, horizon_s=600 * e.batch_time(e.b_max), rng=seed,
                           keep_runs=False)
    offered = rep.inputs["offered_tokens_per_s"]
    served_hi = offered - rep.slope_ci[0]  # the most the runs can have served (95%)
    assert rep.verdict == "growing"
    assert served_hi >= floor, (served_hi, floor)


def test_the_floor_search_finds_a_short_batch_where_there_is_one():
    """FasterTransformer forms a prefill of one prompt while more demand waits: the search says so (and no floor
    is claimed for it)."""
    holds, _, ce = k_max_floor_search(fluidq.policies.resolve_policy("fastertransformer"))
    assert not holds and "min(b_max, k_max, demand" in ce
    assert k_max_floor_search(fluidq.policies.resolve_policy("sarathi"))[0]


def test_decide_stability_keeps_a_decided_analytic_verdict_and_spends_nothing():
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=15.0), prompt_tokens=100, output_tokens=100)
    r = fluidq.stability.decide_stability(e, w, "sarathi")
    assert r.status == Status.STABLE and r.inputs["decided_by"] == "analytic" and r.method == "closed_form"


def test_decide_stability_with_no_budget_left_says_so():
    e = fluidq.Engine(batch_time=fluidq.Affine(c=0.02, a=0.0002), b_max=1024, kv_capacity_tokens=30000)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=0.5), prompt_tokens=600, output_tokens=200)
    r = fluidq.stability.decide_stability(e, w, "vllm", budget_s=0.0)
    assert r.status == Status.UNKNOWN and "budget" in r.reason and r.inputs["decided_by"] == "none"


def test_report_summary_never_says_no_scheduler_is_proven_stable_when_simulation_found_some():
    from fluidq.report.sections.s20_verdicts import stable_words

    assert "no scheduler" not in stable_words([], ["sarathi"])
    assert stable_words([], ["sarathi"]).startswith("**sarathi** is stable by simulation")
    assert stable_words(["orca"], ["sarathi"]) == "**orca** is proven stable and **sarathi** is stable by simulation"
    assert stable_words([], []) == "**no scheduler** is proven stable"


@pytest.mark.parametrize(("argv", "flag"), [(["--sim-budget", "-1"], "--sim-budget"),
                                            (["--sim-budget", "nan"], "--sim-budget"),
                                            (["--replications", "1"], "--replications"),
                                            (["--method", "simulation", "--engines", "2"], "--method")])
def test_check_s_simulation_options_are_refused_naming_them(capsys, argv, flag):
    assert main(["check", "--rate", "5", *argv]) not in (0, None)
    err = capsys.readouterr().err
    assert f"{flag}=" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_orca_fills_the_same_cache_so_the_argument_is_not_made_for_it(seed):
    """Prefill first, Orca starts prompts while decoders wait, so nothing bounds the requests holding KV: with the
    cache that suffices for Sarathi-Serve it preempts under overload (10-28 times here), and kv_never_binds says
    no for it."""
    rng = np.random.default_rng(seed)
    e = _random_engine(rng)
    p = fluidq.workload.Empirical(values=tuple(int(x) for x in rng.integers(20, 300, 3)), weights=(0.3, 0.3, 0.4))
    o = fluidq.workload.Empirical(values=tuple(int(x) for x in rng.integers(10, 200, 3)), weights=(0.5, 0.3, 0.2))
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
    w = w.with_rate(1.5 * fluidq.max_throughput(e, w).requests_per_s)
    ee = e.with_(kv_capacity_tokens=min(e.b_max, e.k_max) * (max(p.values) + max(o.values) + 1))
    assert not kv_never_binds(ee, w, fluidq.policies.resolve_policy("orca"))[0]
    assert fluidq.simulate(ee, w, "orca", horizon_s=400 * (e.batch_time(e.b_max)), rng=seed).preemptions > 0


def test_theorem_2b_is_not_a_proof_with_a_cache_that_can_fill(capsys):
    """Llama-3.1-70B on 4 x H100 with --k-max 2048 (k_max never binds): Theorem 2(b) said Orca is stable at 0.9
    although its cache (468,944 tokens) fills under a backlog (377 preemptions in 120 s at 1.3x); Sarathi-Serve's
    cannot fill (2048 requests x 201 tokens fit), so its Theorem-2 verdict stands."""
    rs = {r["policy"]: r for r in _check(capsys, *H100_TP4, "--load", "0.9", "--k-max", "2048", "--method",
                                         "analytic", "--policy", "orca", "--policy", "sarathi")}
    assert rs["orca"]["status"] == "unknown" and "not shown never to bind" in rs["orca"]["reason"]
    assert rs["sarathi"]["status"] == "stable" and "KV cache never binds" in rs["sarathi"]["reason"]
