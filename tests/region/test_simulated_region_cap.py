"""Simulated thresholds never lie outside the engine's region (no scheduler is stable there, §6)."""
from __future__ import annotations

from fluidq import Engine, Staircase
from fluidq.region import stability_region
from fluidq.region.simulated import simulated_region
from fluidq.results import Status


def test_a_bracket_reaching_past_the_engine_region_is_capped_and_says_so():
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
    sr = simulated_region(e, "sarathi", request_shapes=[(20, 380)], rng=0)
    lam = stability_region(e).max_request_rate(20, 380)
    assert sr.high_rate_per_s[0] > lam  # the bracket's top (1.05 x the region's rate) is past the region
    assert sr.engine_scale[0] >= 1 - 1e-12 and sr.points[0][1] <= lam * 380 * (1 + 1e-12)
    assert "capped at the engine's region" in sr.ray_status[0]
    # one Status (the protocol's: a capped bracket is still resolved), and the JSON keeps the per-ray outcomes
    # under its key "status" (fluidq region --simulate)
    assert sr.status is Status(sr.ray_status[0].split(" (")[0]) and sr.to_dict()["status"] == list(sr.ray_status)


def test_a_vertex_given_to_three_decimals_is_on_the_boundary_in_words():
    from fluidq import region_mix

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
    m = region_mix(e, (620.321, 2117.647))  # vertex C = (29, 99) / 46.75 ms, rounded up in the 4th digit
    assert "on the boundary within rounding" in m.reason and "short by 0 prefill and 0.000" not in m.reason
    far = region_mix(e, (700.0, 2200.0))
    assert far.reason.startswith("outside the stability region")
