"""Data-parallel MoE capacity (issues 16, 20, a new user's review): the DP ranks of a MoE model step in lockstep,
and each has its own ``max_num_batched_tokens`` and ``max_num_seqs`` (vLLM), so the group's fluid capacity is
that of ``dp`` ranks' budgets -- it must not fall as ranks are added, its binding limit is the smallest limit it
prints, and it agrees with the lockstep simulation (``method="simulate"``, :class:`LockstepRanks`) within the
margin measured here.  Before 2026-12-07 the fluid group had one rank's token budget: at prompts 1000 / outputs
200, ``fluidq capacity`` gave 11,137 / 13,278 / 9,792 tokens/s at DP 1 / 2 / 4 (the last two "token_budget")."""
import numpy as np
import pytest

from fluidq.validate import validation_dir
from fluidq.validate.deployment import predict_deployment

QWEN = validation_dir() / "data" / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"


def _lengths():
    rng = np.random.default_rng(3)  # a held-out workload: not the shipped run's lengths
    return rng.integers(500, 1500, 400), rng.integers(100, 300, 400)


def _kw(p, o, dp, ks):
    return dict(input_tokens=p, output_tokens=o, data_parallel_size=dp, enable_expert_parallel=dp > 1,
                max_num_seqs=ks)


@pytest.mark.parametrize("lengths", ["1000/200", "random"])
@pytest.mark.parametrize("ks", [64, 128, 256, 512])
def test_capacity_does_not_fall_as_data_parallel_ranks_are_added(ks, lengths):
    p, o = (1000, 200) if lengths == "1000/200" else _lengths()
    caps = []
    for dp in (1, 2, 4):
        r = predict_deployment(QWEN, **_kw(p, o, dp, ks))
        # the binding limit is the smallest of the limits the answer prints
        assert r.binding == min(r.limits, key=r.limits.get), (dp, r.binding, r.limits)
        caps.append(r.tokens_per_s)
    assert caps[0] <= caps[1] <= caps[2], caps


def test_the_group_reason_names_every_rank_s_budget():
    r = predict_deployment(QWEN, input_tokens=3000, output_tokens=100, data_parallel_size=4,
                           enable_expert_parallel=True, max_num_seqs=256)
    assert r.binding == "token_budget"
    assert "b_max = 8192 (4 ranks x 2048)" in r.reason
    assert r.limits["token_budget"] == pytest.approx(4 * 2048 * 99 / 3099)


# fluid / simulated - 1 on the random-length workload above (2000 requests at 2.5 x the fluid capacity, 4 seeded
# replications, seed 7; measured 2026-12-07, shared 2-vCPU VM): max_num_seqs 64: +2.9 % (DP2), +5.0 % (DP4);
# 256: +4.4 %, +10.7 %.  The formula spreads an iteration's prompt chunks evenly over up to dp ranks; the simulation
# places whole chunks on the least loaded rank, whose slowest rank holds more than the mean share.
MARGIN = 0.12


@pytest.mark.parametrize("dp", [2, 4])
@pytest.mark.parametrize("ks", [64, 256])
def test_fluid_agrees_with_the_lockstep_simulation(dp, ks):
    p, o = _lengths()
    f = predict_deployment(QWEN, **_kw(p, o, dp, ks))
    s = predict_deployment(QWEN, **_kw(p, o, dp, ks), method="simulate", arrival_rate=2.5 * f.requests_per_s,
                           n_requests=2000, replications=4, seed=7)
    lo, hi = s.ci
    # the fluid answer within MARGIN of the simulation's 95 % interval
    assert lo * (1 - MARGIN) <= f.tokens_per_s <= hi * (1 + MARGIN), (f.tokens_per_s, s.ci)


def test_fixed_lengths_form_cohorts_the_fluid_formula_does_not_see():
    # every request 1000 / 200 tokens: requests admitted together finish together, and the cohorts fill the
    # four ranks at once -- the simulation serves 21,548 tokens/s (95 % CI 19,786-23,310) against 13,919 with the
    # random lengths above; the fluid formula, Poisson finishes, gives 14,666 (-31.9 %; measured 2026-12-07)
    f = predict_deployment(QWEN, **_kw(1000, 200, 4, 64))
    s = predict_deployment(QWEN, **_kw(1000, 200, 4, 64), method="simulate", arrival_rate=2.5 * f.requests_per_s,
                           n_requests=2000, replications=4, seed=7)
    err = f.tokens_per_s / s.tokens_per_s - 1
    # a known miss: it must stay the recorded one (a band of the simulation's own +-8 % interval), and a formula
    # that comes within MARGIN fails here so the record gets updated
    assert err == pytest.approx(-0.319, abs=0.08), err
    pytest.xfail(f"fluid {err:+.1%} of the simulation with equal lengths (-31.9 % measured 2026-12-07): the "
                 "formula's finishes are Poisson, the engine's come in cohorts")
