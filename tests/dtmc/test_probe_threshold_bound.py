"""A simulated threshold never exceeds the proven capacity (found by the independent probe: FasterTransformer with
``k_max=8`` on an engine not shipped gave ``stability_threshold`` 6.32 req/s, bracket up to 6.78, where
``max_throughput`` gives the k_max region's 6.167 req/s and ``check_stability`` says "unstable" for every
scheduler above it)."""
import pytest

import fluidq as fq


def test_simulated_threshold_is_cut_at_the_region_rate():
    e = fq.Engine(batch_time=fq.Affine(c=0.016180301027332998, a=5.044089546586541e-05), b_max=200, k_max=8)
    w = fq.Workload(arrival=fq.Poisson(rate_per_s=1.0), prompt_tokens=10, output_tokens=77)
    bound = fq.max_throughput(e, w).requests_per_s
    th = fq.stability_threshold(e, w, "fastertransformer", rng=1)
    assert th.method == "simulation"
    assert th.lower_per_s <= th.arrival_rate_per_s <= th.upper_per_s <= bound * (1 + 1e-12)
    assert th.upper_per_s == pytest.approx(bound)
    assert th.details["simulation_bracket_per_s"][1] > bound  # what the simulation alone said
    assert "cut to the capacity" in th.reason
    assert fq.check_stability(e, w.with_rate(bound * 1.05), "fastertransformer").status == fq.Status.UNSTABLE
