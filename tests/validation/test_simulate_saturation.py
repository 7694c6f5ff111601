"""simulate_capacity reads a capacity only from a saturated engine (issues 16, 20, a new user's review): at DP4
the default offered 1.5 x a fluid guess that was too low, and "capacity" came out as the offered rate (14,615
tokens/s, 12.18 req/s served = offered) while --rate 30 gave 24,784.  Checked on an engine whose capacity is
exact (every iteration takes T) with a fluid guess made deliberately low."""
from dataclasses import replace

import numpy as np
import pytest

from fluidq.validate.predict import MAX_RAISES, SATURATED_SHARE, predict_capacity, simulate_capacity

from constant_engine import Constant, T  # tests/validation/constant_engine.py

P, O, K = np.full(200, 100), np.full(200, 50), 16
EXACT = K * (100 + 50) / (50 * T)  # k_max residents, o iterations each (tests/validation/test_simulate_capacity.py)
KW = dict(b_max=2048, k_max=K, kv_capacity_tokens=10 ** 7, n_requests=600, replications=3, seed=7)


@pytest.mark.parametrize("low", [2.0, 4.0, 8.0])
def test_a_low_fluid_guess_is_raised_until_the_engine_saturates(low):
    fluid = predict_capacity(Constant(), P, O, b_max=2048, k_max=K, kv_capacity_tokens=None)
    low_guess = replace(fluid, requests_per_s=fluid.requests_per_s / low, tokens_per_s=fluid.tokens_per_s / low)
    res = simulate_capacity(Constant(), P, O, fluid=low_guess, **KW)
    assert res.inputs["saturated"]
    assert len(res.inputs["offered_rates"]) > 1 and "raised" in res.reason
    # offered 1.5 / low x the capacity at first: 0.75, 0.375, 0.19 -- the served rate was the offered rate.  The
    # exact capacity lies inside the 95 % t-interval of the 3 seeded replications (the basis, not a tolerance:
    # measured 4,752.8 [4,653.3, 4,852.2] tokens/s against 4,800, the same for each low guess, seed 7, 2026-12-07);
    # and that interval lies above what the first offered rate could serve (a capacity read off an unsaturated
    # engine is the offered rate)
    lo, hi = res.ci
    assert lo <= EXACT <= hi, (res.ci, EXACT)
    assert lo > res.inputs["offered_rates"][0] * (100 + 50), (res.ci, res.inputs["offered_rates"])
    assert res.ci[1] < SATURATED_SHARE * res.inputs["arrival_rate"] * (100 + 50)


def test_a_right_fluid_guess_is_not_raised():
    res = simulate_capacity(Constant(), P, O, **KW)
    assert res.inputs["saturated"] and res.inputs["offered_rates"] == (res.inputs["arrival_rate"],)
    assert "raised" not in res.reason and "NOT SATURATED" not in res.reason


def test_a_given_rate_below_the_capacity_is_said_not_to_saturate():
    rate = 0.8 * EXACT / 150  # a benchmark's rate below the capacity: not raised, but said
    res = simulate_capacity(Constant(), P, O, arrival_rate=rate, **KW)
    assert res.inputs["offered_rates"] == (rate,)
    assert res.inputs["saturated"] is False and "NOT SATURATED" in res.reason
    assert res.tokens_per_s < 0.9 * EXACT


def test_past_the_cap_the_answer_says_it_did_not_saturate():
    fluid = predict_capacity(Constant(), P, O, b_max=2048, k_max=K, kv_capacity_tokens=None)
    tiny = replace(fluid, requests_per_s=fluid.requests_per_s / 100)  # 8 x 1.5 / 100 of the capacity at most
    # (no escape hatch: with seed 7 the replications reach the binding limit at 0.48 ... 3.84 req/s, 0.12 of the
    # capacity, and the answer must say it did not saturate; a RuntimeError here is a failure)
    res = simulate_capacity(Constant(), P, O, fluid=tiny, **KW)
    assert res.inputs["offered_rates"] == pytest.approx(tuple(1.5 * tiny.requests_per_s * 2 ** i
                                                              for i in range(MAX_RAISES + 1)), rel=1e-12)
    assert res.inputs["saturated"] is False and "NOT SATURATED" in res.reason


def test_the_dp4_lockstep_engine_with_the_old_low_fluid_guess():
    # the review's case: Qwen3-30B-A3B, RTX PRO 6000, DP4 + EP, prompts 1000 / outputs 200; the fluid guess of
    # 9,792 tokens/s it had before the lockstep group got every rank's budget, 1.5 x that offered
    from pathlib import Path

    from fluidq.validate import deployment as dep
    from fluidq.validate import validation_dir

    folder = Path(validation_dir()) / "data" / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"
    parts = dep._deployment_parts(folder, tp=1, pp=1, dp=4, enable_expert_parallel=True, k_max=256, b_max=2048,
                                  block=16, model=None, comm=None, link_bandwidth_gbps=None, link_latency_us=None,
                                  all_reduce_csv=None, kv_capacity_tokens=None, gpu_memory_gib=None,
                                  gpu_memory_utilization=0.9)
    ranks, kv = dep.LockstepRanks(parts["model"], 4), 4 * parts["kv"]
    p, o = np.array([1000.0]), np.array([200.0])
    kw = dict(b_max=4 * 2048, k_max=4 * 256, kv_capacity_tokens=kv, block_size=16, n_requests=2000,
              replications=4, seed=11)
    good = predict_capacity(dep._Lockstep(parts["model"], 4), p, o, b_max=4 * 2048, k_max=4 * 256,
                            kv_capacity_tokens=kv, block_size=16)
    old = replace(good, tokens_per_s=9792.0, requests_per_s=9792.0 / 1200)
    res = simulate_capacity(ranks, p, o, fluid=old, **kw)
    deep = simulate_capacity(ranks, p, o, arrival_rate=2.5 * good.requests_per_s, fluid=good, **kw)
    assert res.inputs["saturated"] and len(res.inputs["offered_rates"]) > 1
    # the same engine offered 2.5 x its fluid capacity: the two intervals overlap (before: the offered 14,688)
    assert res.ci[0] <= deep.ci[1] and deep.ci[0] <= res.ci[1], (res.ci, deep.ci)


def test_the_capacity_command_says_when_a_given_rate_did_not_saturate(capsys):
    from fluidq.testing.cli import run_cli
    from fluidq.validate import validation_dir

    folder = validation_dir() / "data" / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"
    rc, out, err = run_cli(["capacity", "--profile-dir", str(folder), "--prompt", "1000", "--output", "200",
                            "--method", "simulate", "--rate", "2", "--replications", "2"], capsys)
    assert rc == 0, err
    cap = next(ln for ln in out.splitlines() if ln.startswith("capacity "))
    assert "NOT SATURATED" in cap and "lower bound" in cap
