"""The simulator's batch-time table at large budgets: tabulated in full up to EAGER_TAU_TOKENS, filled
lazily beyond (issue 13: a 2**24-token budget spent ~7 s per run building a list), with identical runs."""
import pytest
@pytest.mark.parametrize("policy", ["sarathi", "vllm", "fastertransformer"])
def test_a_lazily_filled_batch_time_table_gives_the_same_run(policy, monkeypatch):
    # budgets above EAGER_TAU_TOKENS fill the table as the run meets batch sizes (2**24 took ~7 s per run)
    import numpy as np

    import fluidq
    import fluidq.sim.core as core

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=14.0), prompt_tokens=fluidq.Geometric(mean_tokens=100),
                        output_tokens=fluidq.Geometric(mean_tokens=100))
    eager = fluidq.simulate(e, w, policy, horizon_s=30.0, rng=3)
    monkeypatch.setattr(core, "EAGER_TAU_TOKENS", 16)
    assert isinstance(core._tau_table(e)[0], core._LazyTau)
    lazy = fluidq.simulate(e, w, policy, horizon_s=30.0, rng=3)
    for k in ("finish_s", "first_token_s"):
        assert np.array_equal(eager.requests[k], lazy.requests[k], equal_nan=True)
    assert eager.n_iterations == lazy.n_iterations

