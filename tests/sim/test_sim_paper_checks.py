"""The paper's stability checks by simulation (reference §4 and §7)."""
import numpy as np
import pytest

from fluidq import Engine, Periodic, Poisson, Staircase, Workload, max_throughput
from fluidq.policies import VLLM, FasterTransformer, Orca, Sarathi
from fluidq.sim import replicate, simulate

PAPER = {"c": 0.01128, "a": 0.03547, "b0": 128}


def paper(b_max=512, k_max=None):
    return Engine(batch_time=Staircase(**PAPER), b_max=b_max, k_max=k_max)


@pytest.mark.parametrize("load, slope_tokens_per_ms", [(0.9, 0.0), (1.1, 0.33429), (1.2, 0.66858)])
def test_theorem2_boundary_sarathi(load, slope_tokens_per_ms):
    """(100, 100), b_max = 512: bounded below lambda*, fluid slope lambda(m_p+m_d) - capacity above it."""
    e = paper()
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    lam_star = max_throughput(e, w).requests_per_s
    # "bounded" needs the power to tell growth of the tolerance from zero: 200 s is too short for that at 99 %
    res = replicate(e, w.with_rate(load * lam_star), "sarathi", n_replications=8,
                    horizon_s=300 if load < 1 else 200, rng=2024, confidence=0.99, keep_runs=False)
    assert res.predicted_slope_tokens_per_s == pytest.approx(slope_tokens_per_ms * 1e3, rel=1e-4)
    lo, hi = res.slope_ci
    assert lo <= slope_tokens_per_ms * 1e3 <= hi, res.reason
    assert res.fluid_in_ci
    assert res.verdict == ("bounded" if load < 1 else "growing"), res.reason


def test_work_conserving_vs_not_129_112():
    """Deterministic (129, 112), Poisson 0.75 lambda*, b_max = 512, 90 s: Sarathi and Orca bounded,
    FasterTransformer and vanilla vLLM growing (a public reproduction: FT ~940, vLLM ~560 in system)."""
    e = paper()
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=129, output_tokens=112)
    w = w.with_rate(0.75 * max_throughput(e, w).requests_per_s)
    final = {}
    for name in ("sarathi", "orca", "fastertransformer", "vllm"):
        # over 90 s the fitted slope of a stationary backlog scatters by tens of tokens/s, so the
        # bounded/growing line sits at 5 % of the offered load (FT grows at ~70 %, vLLM at ~12 %)
        res = replicate(e, w, name, n_replications=10, horizon_s=90, rng=7, confidence=0.99, tolerance=0.05,
                        start_frac=0.3)
        want = "bounded" if name in ("sarathi", "orca") else "growing"
        assert res.verdict == want, (name, res.reason)
        final[name] = np.mean([r.backlog["requests"][-1] for r in res.runs])
    assert final["fastertransformer"] > final["vllm"] > 3 * final["sarathi"]


@pytest.mark.parametrize("policy, b_max, bounded", [
    (Sarathi(), 128, True), (Sarathi(), 1024, False), (Orca(), 128, False), (Orca(), 1024, False),
    (FasterTransformer(chunk_long_prompts=True), 1024, False), (VLLM(), 1024, False)])
def test_vertex_c_only_small_budget_sarathi_is_bounded(policy, b_max, bounded):
    """k_max = 100, one (290, 990) request every 0.4675 s = vertex C of the region (reference §4)."""
    e = paper(b_max, k_max=100)
    w = Workload(arrival=Periodic(rate_per_s=1 / 0.4675), prompt_tokens=290, output_tokens=990)
    res = replicate(e, w, policy, n_replications=2, horizon_s=500, rng=0, keep_runs=True)
    assert res.verdict == ("bounded" if bounded else "growing"), res.reason
    if bounded:  # at the vertex every batch is 128 tokens: 99 decode + 29 prefill
        r = simulate(e, w, policy, horizon_s=200, record_iterations=True)
        it = r.iterations
        late = it["t_s"] > 150
        assert np.all(it["prefill_tokens"][late] + it["decode_tokens"][late] == 128)
