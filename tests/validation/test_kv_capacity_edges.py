"""Edges of the KV-bound flow-balance capacity (``predict_capacity``): block sizes above the requests, requests larger
than the cache, prompts far shorter than the outputs; and ``capacity_regimes`` with too few ticks.

Where the formula is compared with the engine it is against seeded stationary simulations (``fluidq.simulate`` of
``vllm_engine`` under a Poisson overload that does not read the formula, the served useful tokens/s over the middle
half of each replication's iterations, 5 replications of 1500 requests, 95 % Student-t interval), seeded apart
from the 14 scored engines of test_kv_preemption_capacity.py.  Measured 2026-12-06 (RTX 4090 Llama-3.1-8B model):
block 256, prompt 50, output 100: before -14.9 % (1.95 preemptions per request predicted, none simulated), after
+1.1 %; prompt 1, output 200: before -26 %, after +2.1 %; prompt 20, output 300: before -25 %, after -17.7 % (xfail).
With the victims' recompute arriving with the finishes and in whole blocks (h-short16, same day): block 256 +0.0 %,
1 / 200 -7.3 % (inside its +-3.0 % interval's 5 % margin), 20 / 300 -9.9 % (xfail): with every request the same length
the simulated finishes come in cohorts (0.39 and 0.54 iterations with prompt work per finish, against one per finish
for Poisson finishes), which the formula does not model.  2026-12-07 (h-kvtoken16): with the simulated engine's token
from each recomputation that catches up (vLLM's rule, 2fc8e60) 1 / 200 is -8.0 % (the simulation +0.7 %) and 20 / 300
-9.8 % (the simulation -0.05 %); counting that token in the formula with its own preemption count (12 and 9 per
request, against 1.24 and 1.50 simulated: the count's miss, xfail below) would give -4.3 and -8.4 %, with the
simulated count -7.6 and -9.6 %: the formula leaves it out (predict._kv_victims).  2026-12-07 (h-kvcount16): the
equal-length edges run a cycle of period m_d in cohorts, max_num_seqs binding in part of it, the victims (a cohort's
newest members) giving back about half the growth, not all of it as the renewal count has; with the simulated count and age
the formula is +0.4 / -1.4 % (validation/RESULTS.md).  2026-12-07 (h-kvjump): that cycle is what
predict._cache_binding_share models (max_num_seqs' residents age as a cohort and outgrow the cache for a share of
their decode life, 65 % and 70 % here): the capacity edges are -0.5 % and -2.1 % and pass (rerun h-fixe, 2026-12-07:
4,970 against 4,995 +- 110 and 4,464 against 4,562 +- 15 tokens/s, as validation/RESULTS.md gives; block 256 -0.0 %);
the preemption count (the renewal count, unscaled) stays an xfail."""
import numpy as np
import pytest

import fluidq.validate.predict as P
from fluidq.errors import ParameterError
from fluidq.validate import validation_dir
from fluidq.validate.deployment import deployment_engine
from fluidq.validate.runs import capacity_regimes

FOLDER = validation_dir() / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B"


@pytest.fixture(scope="module")
def model():
    if not FOLDER.is_dir():
        pytest.skip(f"{FOLDER} is not shipped here")
    return deployment_engine(FOLDER, kv_capacity_tokens=40000)[0].batch_time.model


_RUNS = {}  # seed -> the stationary run's answer (one simulation per edge for the tests that read it)


def _stationary(model, p, o, b, k, kv, block, seed, reps=5, n=1500):
    """Mean and 95 % half-width of the served useful tokens/s, and the preemptions per finished request
    (test_kv_preemption_capacity.stationary_run, the rate's resident count kept >= 1)."""
    from test_kv_preemption_capacity import stationary_run

    if seed not in _RUNS:
        _RUNS[seed] = stationary_run(model, p, o, b, k, kv, seed, block=block, reps=reps, n=n, n0_floor=True)
    return _RUNS[seed]


def _within(model, p, o, b, k, kv, block, seed, tol=0.05):
    p, o = np.asarray(p), np.asarray(o)
    fl = P.predict_capacity(model, p, o, b_max=b, k_max=k, kv_capacity_tokens=kv, block_size=block)
    mean, half, pre = _stationary(model, p, o, b, k, kv, block, seed)
    ok = (1 - tol) * (mean - half) <= fl.tokens_per_s <= (1 + tol) * (mean + half)
    return ok, (fl.tokens_per_s, mean, half, pre, fl.reason)


# ------------------------------------------------------------------------------------------- 1. block size
def test_no_preemption_when_every_output_stays_in_its_prompts_last_block():
    # ceil((p + o) / B) == ceil(p / B) for every request: no resident ever needs a new block
    r, _ = P._kv_victims(np.full(50, 50.0), 99.0, 77.0, block_size=256, outputs=np.full(50, 100.0))[:2]
    assert r == 0.0
    # with block 1 the token formula of the renewal argument is kept (see test_kv_preemption_capacity.py)
    r1, _ = P._kv_victims(np.full(50, 50.0), 99.0, 77.0, block_size=1, outputs=np.full(50, 100.0))[:2]
    assert r1 > 0


def test_block_larger_than_the_requests_matches_the_simulation(model):
    # measured 2026-12-06: the simulation preempts nothing; the formula was -14.9 % before (1.95 preemptions per
    # request), +1.1 % after; 2026-12-07 (h-fixe): 4,864 against 4,866 +- 4 tokens/s, -0.0 %
    ok, info = _within(model, np.full(50, 50), np.full(50, 100), 2048, 256, 20000, 256, seed=901)
    assert info[3] == 0.0 and "0.00 recompute preemptions" in info[4]
    assert ok, info


# ---------------------------------------------------------------------------------- 2. requests over the cache
def test_no_request_fits_the_cache_is_an_error_naming_it(model):
    with pytest.raises(ParameterError, match="kv_capacity_tokens"):
        P.predict_capacity(model, np.full(50, 2000), np.full(50, 100), b_max=2048, k_max=256,
                           kv_capacity_tokens=1500)


def test_a_few_requests_over_the_cache_are_left_out_and_said_so(model):
    p, o = np.r_[np.full(49, 300), [5000]], np.full(50, 100)
    fl = P.predict_capacity(model, p, o, b_max=2048, k_max=256, kv_capacity_tokens=4000)
    fit = P.predict_capacity(model, p[:49], o[:49], b_max=2048, k_max=256, kv_capacity_tokens=4000)
    # the slack is the fitting requests' (before: 746 tokens from the one 5000-token prompt, 150 without it)
    assert fl.limits["kv_cache"] == pytest.approx(fit.limits["kv_cache"])
    assert fl.tokens_per_s == pytest.approx(fit.tokens_per_s)
    assert "1 of 50 requests (2.0 %) do not fit" in fl.reason


# ------------------------------------------------------------------------------------- 3. prompts << outputs
def test_recompute_never_exceeds_the_growth_it_relieves():
    # the victims free at most the growth between finishes (gb blocks) plus one victim's blocks
    for p, o, n in [(1, 200, 183.0), (20, 300, 168.0), (10, 2000, 50.0), (500, 200, 32.0)]:
        for B in (1, 16, 32):
            r, a = P._kv_victims(np.full(20, float(p)), o - 1.0, n, block_size=B, outputs=np.full(20, float(o)))[:2]
            gb = np.ceil((p + o) / B) - np.ceil(p / B)
            assert r * np.ceil((p + a) / B) <= gb + np.ceil((p + a) / B) + 1e-9, (p, o, B, r)


def test_one_token_prompts_long_outputs_match_the_simulation(model):
    # measured 2026-12-06: sim 1.2 preemptions per request; formula 96 before (-26 %), +2.1 % after; -7.3 % with the
    # recompute arriving with the finishes (h-short16) of a +-3.0 % interval: the lower edge is -7.8 %; -8.0 % with the
    # recomputation's token in the simulation (h-kvtoken16, an xfail until h-kvjump).  2026-12-07 (h-kvjump): the
    # cache binds for the share of max_num_seqs' cohort's decode life in which it outgrows it (65 % here: the
    # cycle of h-kvcount16 with max_num_seqs binding in part of it), not always: 4,970 against 4,995 +- 110 (-0.5 %;
    # rerun 2026-12-07, h-fixe)
    ok, info = _within(model, np.full(50, 1), np.full(50, 200), 2048, 256, 20000, 16, seed=902)
    assert ok, info


def test_short_prompts_long_outputs_match_the_simulation(model):
    # measured 2026-12-06: -9.9 % (was -25 %, then -17.7 %), an xfail: equal-length requests finish in cohorts;
    # 2026-12-07 (h-kvtoken16) -9.8 % against 4,562 +- 15 tokens/s.  2026-12-07 (h-kvjump): the cache binds for 70 % of
    # max_num_seqs' cohort's decode life (the preemptions of a full cache that share of the time): 4,464 against
    # 4,562 +- 15, -2.1 % (rerun 2026-12-07, h-fixe)
    ok, info = _within(model, np.full(50, 20), np.full(50, 300), 2048, 256, 30000, 16, seed=903)
    assert ok, info


@pytest.mark.xfail(reason="measured 2026-12-07 (h-kvtoken16): the renewal count takes young victims of 1-2 blocks, "
                          "12 and 9 preemptions per request at 1 / 200 and 20 / 300, against 1.24 and 1.50 "
                          "simulated (re-admitted victims carrying tens of generated tokens); the recomputed tokens "
                          "(block conservation) are near, the count is not, which is why the formula leaves out the "
                          "token each recomputation gives (it would be counted 10 x and 6 x over).  Measured "
                          "2026-12-07 (h-kvcount16, instrumented, one replication): the equal-length requests run a "
                          "cycle of period m_d in cohorts; the victims are a cohort's newest members, preempted in "
                          "bursts at a block boundary (52 / 76 generated tokens, 3.7 / 6.3 blocks, half preempted "
                          "before), giving back 0.44 / 0.54 of the growth, not all of it as the renewal count has "
                          "(vLLM serves the residents' growth before admissions, and a finisher's blocks are only "
                          "1.2 / 2.0 iterations' growth here); not derived (validation/RESULTS.md)",
                   strict=True)
@pytest.mark.parametrize("p, o, kv, seed", [(1, 200, 20000, 902), (20, 300, 30000, 903)])
def test_the_preemption_count_of_short_prompts_matches_the_simulation(model, p, o, kv, seed):
    # the same seeded simulation as the capacity edges above (one run per edge); within 50 % of the simulated count
    p, o = np.full(50, p), np.full(50, o)
    fl = P.predict_capacity(model, p, o, b_max=2048, k_max=256, kv_capacity_tokens=kv, block_size=16)
    r = P._kv_victims(p, o.mean() - 1.0, fl.residents, block_size=16, outputs=o)[0]
    sim_r = _stationary(model, p, o, 2048, 256, kv, 16, seed)[2]
    assert 0.5 * sim_r <= r <= 1.5 * sim_r, (r, sim_r)


# ------------------------------------------------------------------------------------------ 4. regimes' index
def test_capacity_regimes_index_exists_when_a_regime_has_too_few_ticks():
    ts = {"t": np.arange(1.0, 5), "prompt_throughput": np.full(4, 100.0), "gen_throughput": np.full(4, 300.0),
          "running": np.array([5.0, 8.0, 8.0, 3.0]), "waiting": np.array([0.0, 1.0, 1.0, 0.0]),
          "kv_cache_pct": np.zeros(4)}
    reg = capacity_regimes(ts, max_num_seqs=8, min_stretch_s=2)  # 2 ticks at max_num_seqs: saturated, too short
    assert reg["steady"]["ticks"] == 2 and np.isnan(reg["steady"]["tokens_per_s"])
    assert reg["steady"]["index"] == () and reg["ramp"]["index"] == ()
    never = capacity_regimes({**ts, "waiting": np.zeros(4)}, max_num_seqs=8)
    assert never["steady"]["index"] == ()
