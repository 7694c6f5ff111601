"""The shared growth test of every simulation verdict (issue 13): "stable" only with the power to tell
growth of the band from zero, significant growth below the band never read as flat, and a k_max that
can never bind changes no single-engine verdict."""
from __future__ import annotations

import pytest

from fluidq import Engine, Poisson, Staircase, Workload, check_stability, max_throughput
from fluidq.policies import resolve_policy
from fluidq.results import Status
from fluidq.stability import binding_k_max, max_requests_per_batch
from fluidq.stability.growth import decide, growth_test, powered_horizon

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)


@pytest.mark.parametrize("lo, hi, expected", [
    (0.02, 0.05, Status.UNSTABLE),      # all above the band: grows
    (-0.2, -0.1, Status.STABLE),        # all below zero: drains
    (-0.004, 0.004, Status.STABLE),     # holds zero, half-width 0.004 <= band/2
    (-0.05, 0.002, Status.UNKNOWN),     # below the band but far too wide to tell 0.01 from zero
    (-0.0111, 0.0142, Status.UNKNOWN),  # the old rule called this flat (hi <= band)
    (0.001, 0.008, Status.UNKNOWN),     # significant growth below the band: growth, not flat
    (-0.001, 0.03, Status.UNKNOWN),
])
def test_decide(lo, hi, expected):
    assert decide(lo, hi, 0.01) == expected


def test_unknown_says_what_it_cannot_tell_and_how_long_would_do():
    t = growth_test([-0.3, 0.2, 0.1, -0.1], band=0.01, horizon_s=100.0, band_words="1% of the arrival rate")
    assert t.status == Status.UNKNOWN and not t.powered
    assert "cannot tell growth of 0.01000 requests/s (1% of the arrival rate) from zero at this horizon" in t.reason
    assert t.needed_horizon_s == pytest.approx(powered_horizon(100.0, t.half_width, 0.01)) and t.needed_horizon_s > 100
    below = growth_test([0.004, 0.005, 0.0045, 0.0048], band=0.01, horizon_s=100.0)
    assert below.status == Status.UNKNOWN and "not flat" in below.reason
    flat = growth_test([-0.001, 0.001, 0.0005, -0.0004], band=0.01, horizon_s=100.0)
    assert flat.status == Status.STABLE and flat.powered and "slower growth is not excluded" in flat.reason
    import json

    json.dumps(flat.to_dict())


def test_identical_and_missing_slopes():
    assert growth_test([0.2, 0.2], band=27.0, horizon_s=300.0, unit="tokens").status == Status.STABLE
    assert growth_test([30.0, 30.0], band=27.0, horizon_s=300.0).status == Status.UNSTABLE
    assert growth_test([20.0, 20.0], band=27.0, horizon_s=300.0).status == Status.UNKNOWN
    nan = growth_test([float("nan"), 0.1], band=0.01, horizon_s=1.0)
    assert nan.status == Status.UNKNOWN and "no growth slope" in nan.reason


def test_single_engine_replicate_needs_power_to_say_bounded():
    """Load 0.9, 4 runs of 100 s: the interval [-99.7, 28.9] tokens/s ends below the 30.1 tokens/s band,
    which the old rule read as bounded; it cannot tell growth of 30.1 tokens/s from zero."""
    from fluidq.sim.stability import replicate

    e = Engine(batch_time=PAPER, b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    w = w.with_rate(0.9 * max_throughput(e, w).requests_per_s)
    r = replicate(e, w, "sarathi", n_replications=4, horizon_s=100.0, rng=11, keep_runs=False)
    assert r.slope_ci[1] < r.tolerance_tokens_per_s  # the interval ends below the band ...
    assert r.verdict == "inconclusive" and r.status == Status.UNKNOWN  # ... but is too wide to say bounded
    assert "cannot tell growth of" in r.reason
    assert r.inputs["needed_horizon_s"] > 100.0  # the horizon the test says would have the power


def test_k_max_that_can_never_bind():
    e = Engine(batch_time=PAPER, b_max=512)
    assert max_requests_per_batch(e) == 512 and binding_k_max(e.with_(k_max=512)) is None
    assert binding_k_max(e.with_(k_max=511)) == 511
    assert binding_k_max(e.with_(k_max=400, kv_capacity_tokens=300)) is None  # at most 300 residents
    pol = resolve_policy("sarathi").with_(b_max=256, k_max=300)
    assert max_requests_per_batch(e, pol) == 256 and binding_k_max(e, pol) is None
    w = Workload(arrival=Poisson(rate_per_s=15.0), prompt_tokens=100, output_tokens=100)
    plain = check_stability(e, w, resolve_policy("sarathi").with_(b_max=256))
    r = check_stability(e, w, pol)  # the scheduler's k_max=300 is above its own 256-token budget
    assert (r.status, r.method, r.load) == (plain.status, plain.method, plain.load)
    assert r.status == Status.STABLE


def test_replicate_chooses_its_horizon_from_the_growth_to_detect():
    """horizon_s=None: a first round of 3000 full batches (459.5 s here), and where its interval is too wide
    to tell growth of 1 % of the load from zero, one round at the horizon the test asks for."""
    from fluidq.sim.stability import replicate

    e = Engine(batch_time=PAPER, b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    lam = max_throughput(e, w).requests_per_s
    h1 = 3000 * float(PAPER(512))
    r = replicate(e, w.with_rate(0.97 * lam), "sarathi", n_replications=4, horizon_s=None, rng=11, keep_runs=False)
    rounds = r.inputs["auto_horizon"]
    assert rounds[0]["horizon_s"] == pytest.approx(h1) and r.reason.startswith("automatic horizon")
    assert rounds[0]["verdict"] == "inconclusive" and h1 < rounds[1]["horizon_s"] <= 10 * h1
    assert r.horizon_s == rounds[-1]["horizon_s"] and r.verdict != "growing"
    up = replicate(e, w.with_rate(1.03 * lam), "sarathi", n_replications=4, horizon_s=None, rng=11, keep_runs=False)
    assert up.verdict == "growing"
