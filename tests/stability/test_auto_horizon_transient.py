"""The automatic horizon of ``replicate(horizon_s=None)`` (what `fluidq check` decides by) must not read the
warm-up of a stable engine near saturation as growth.

A new user's `fluidq check --model Llama-3.1-8B --gpu L40S --max-num-seqs 1 --load 0.95 --geometric` said
"unstable, decided by simulation" for every scheduler (slope 10.14 tokens/s, CI [3.0, 17.2], 4 runs of 795 s)
where 4 runs of 20,000 s give -0.19, CI [-0.99, 0.62]: a single-server queue at rho 0.95 relaxes over about
``E[S] / (1 - rho)^2``, far beyond 795 s, and its rising mean read as growth.  The engines here are M/G/1-like
(``k_max = 1``, geometric lengths); the loads are fractions of the k_max region's rate (``max_throughput``).
Measured on this engine (seeds 0-7 each, 4 replications, before the fix): the first round said "growing" at
0.9, 0.95 and 0.97 for seed 0 (3 of 24), and that was the verdict.
"""
from __future__ import annotations

import pytest

from fluidq import Engine, Poisson, Staircase, Workload, max_throughput
from fluidq.stability.simulation import replicate, transient_slope, work_variance_rate
from fluidq.workload.lengths import Geometric

ENGINE = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=128, k_max=1)
SHAPE = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=Geometric(mean_tokens=20),
                 output_tokens=Geometric(mean_tokens=20))


def _at(load):
    return SHAPE.with_rate(load * max_throughput(ENGINE, SHAPE).requests_per_s)


def _auto(load, seed):
    return replicate(ENGINE, _at(load), "sarathi", n_replications=4, horizon_s=None, rng=seed, keep_runs=False)


def test_a_stable_single_server_near_saturation_is_never_called_growing():
    firsts = []
    for load in (0.9, 0.95, 0.97):
        for seed in range(4):
            r = _auto(load, seed)
            assert r.verdict != "growing", (load, seed, r.reason)
            firsts.append(r.inputs["auto_horizon"][0]["verdict"])
    # the rule fired: some first rounds grew (the warm-up), and were not taken as the verdict
    assert "growing" in firsts


def test_the_seed_the_first_round_misread_is_confirmed_by_a_longer_round():
    r = _auto(0.95, 0)
    rounds = r.inputs["auto_horizon"]
    assert rounds[0]["verdict"] == "growing" and len(rounds) == 2
    assert rounds[1]["horizon_s"] > rounds[0]["horizon_s"]
    assert "relaxation time" in r.reason or "started empty" in r.reason
    assert r.inputs["relaxation_s"] > 0.5 * rounds[0]["horizon_s"]  # the window opened inside it


@pytest.mark.parametrize("load", [1.1, 1.2])
def test_a_clearly_overloaded_single_server_is_still_called_growing_quickly(load):
    for seed in range(4):
        r = _auto(load, seed)
        assert r.verdict == "growing", (seed, r.reason)
        rounds = r.inputs["auto_horizon"]
        # at most one round after the first, within the 10x cap every automatic round keeps
        assert len(rounds) <= 2 and rounds[-1]["horizon_s"] <= 10.0 * rounds[0]["horizon_s"] * (1 + 1e-9)
        assert r.slope_ci[0] > r.inputs["transient_slope_tokens_per_s"]


def test_the_transient_allowance_is_the_driftless_reflected_mean_slope():
    # sigma sqrt(2 t / pi) fitted over [T/2, T]: its slope is sigma sqrt(2/pi) k / sqrt(T), with k the least-squares
    # slope of sqrt(u) over [1/2, 1] (about 0.58), so it falls as T^(-1/2)
    s2 = work_variance_rate(ENGINE, _at(0.95))
    lam, p, d = _at(0.95).arrival_rate_per_s, SHAPE.prompt_tokens, SHAPE.output_tokens
    var_w = p.mean_square - p.mean ** 2 + d.mean_square - d.mean ** 2
    assert s2 == pytest.approx(lam * ((p.mean + d.mean) ** 2 + var_w), rel=1e-12)  # Poisson: lambda E[W^2]
    a, b = transient_slope(s2, 100.0), transient_slope(s2, 400.0)
    assert a == pytest.approx(2.0 * b, rel=1e-9)
    assert 0.55 < a / (s2 ** 0.5 * (2 / 3.141592653589793) ** 0.5 / 10.0) < 0.6
