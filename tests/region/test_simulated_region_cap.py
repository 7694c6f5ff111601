"""Simulated thresholds never lie outside the engine's region (no scheduler is stable there, §6)."""
from __future__ import annotations

from fluidq import Engine, Staircase
from fluidq.region import stability_region
from fluidq.region.simulated import simulated_region


def test_a_bracket_reaching_past_the_engine_region_is_capped_and_says_so():
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
    sr = simulated_region(e, "sarathi", request_shapes=[(20, 380)], rng=0)
    lam = stability_region(e).max_request_rate(20, 380)
    assert sr.high_rate_per_s[0] > lam  # the bracket's top (1.05 x the region's rate) is past the region
    assert sr.engine_scale[0] >= 1 - 1e-12 and sr.points[0][1] <= lam * 380 * (1 + 1e-12)
    assert "capped at the engine's region" in sr.status[0]
