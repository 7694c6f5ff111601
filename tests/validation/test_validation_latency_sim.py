"""The latency rows of the two LLMServingSim vLLM runs come from ``fluidq.simulate`` (issue 14) and stay
under their mean-absolute-error targets over the 15 latency metrics (from 18 % before the move)."""
import numpy as np
import pytest

import fluidq
from fluidq.batchtime.operators import FittedIterationModel
from fluidq.validate.replay import replay, vllm_engine

# issue 14's targets: the purpose-built replay loop this replaced was at 2.2 % / 4.3 %
TARGETS = {"rtx4090-llama3.1-8b": 2.5, "rtxpro6000-llama3.1-8b": 4.5}
# the numbers held since vLLM's async scheduling and the client's send times are modelled (issue 16,
# 2026-12-06): 2.22 % / 4.22 % (2.26 % / 4.32 % before); issue 16's target is 2 % on both, not met
HELD = {"rtx4090-llama3.1-8b": 2.25, "rtxpro6000-llama3.1-8b": 4.25}


@pytest.fixture(scope="module")
def latency_cases(data_dir):
    return {cr.case.name: cr for cr in fluidq.validate(case=list(TARGETS)).cases}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_mean_abs_error_over_the_15_latency_metrics_is_under_target(latency_cases, name):
    cr = latency_cases[name]
    (row,) = [r for r in cr.rows if r.quantity == "mean abs. error over the 15 latency metrics"]
    lat = cr.data["latency"]
    errs = [abs(100 * (lat["fluidq"][k] - lat["measured"][k]) / lat["measured"][k]) for k in lat["peer"]]
    assert len(errs) == 15 and row.predicted == pytest.approx(float(np.mean(errs)), rel=1e-12)
    assert row.predicted <= TARGETS[name], f"{name}: {row.predicted:.2f} % > {TARGETS[name]} %"
    assert row.predicted <= HELD[name], f"{name}: {row.predicted:.2f} % > the {HELD[name]} % held since issue 16"
    # the run's vLLM 0.19 scheduled asynchronously, and the replay says it models that
    assert "async scheduling on (the run's vLLM 0.19.0)" in cr.markdown
    assert "requests sent at the client's `arrival_time` stamps" in cr.markdown
    assert lat["ttft"] == "end_of_prefill"  # vLLM's TTFT: its first token comes with the prefill


def test_the_rows_are_fluidq_simulate_on_the_runs_engine(latency_cases, data_dir):
    # the replay entry point is fluidq.simulate on vllm_engine: the same numbers, iteration for iteration
    cr = latency_cases["rtx4090-llama3.1-8b"]
    rep = cr.data["latency"]["replay"]
    assert rep["requests"] == 300 and rep["preemptions"] > 0  # the KV cache binds in this run
    assert "fluidq.simulate" in cr.markdown


def test_replay_is_simulate_on_the_vllm_engine():
    model = FittedIterationModel(fluidq.Affine(c=0.01, a=1e-5))
    rng = np.random.default_rng(3)
    a = np.sort(rng.uniform(0, 2.0, 80))
    p, o = rng.integers(10, 600, 80), rng.integers(1, 60, 80)
    rep = replay(model, a, p, o, b_max=256, k_max=16, kv_capacity_tokens=3000, prefix_caching=True)
    eng = vllm_engine(model, b_max=256, k_max=16, kv_capacity_tokens=3000, prefix_caching=True)
    sim = fluidq.simulate(eng, {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}, "vllm-chunked", n_requests=80)
    np.testing.assert_array_equal(rep.first_token_s, sim.requests["prefill_done_s"])
    np.testing.assert_array_equal(rep.last_token_s, sim.requests["finish_s"])
    assert rep.preemptions == sim.preemptions > 0 and rep.iterations == sim.n_iterations
    np.testing.assert_array_equal(rep.ttft_s, sim.latencies(ttft="end_of_prefill")["ttft_s"])
    # the running trace: one row per iteration, ending at the last finish
    assert rep.running_trace.shape == (sim.n_iterations, 4)
    assert rep.running_trace[-1, 0] == pytest.approx(np.nanmax(rep.last_token_s))
    with pytest.raises(RuntimeError, match="iterations"):
        replay(model, a, p, o, b_max=256, k_max=16, kv_capacity_tokens=3000, max_iterations=10)
