"""Burst arrivals (all at t=0, drained) and SLO attainment on hand-made latencies."""
import math

import numpy as np
import pytest

import fluidq
from fluidq.errors import ParameterError
from fluidq.latency import burst_comparison, reasoning_workload, standard_policies
from fluidq.latency.slo import slo_attainment, tightest_slo

ENG = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=60_000)


def test_slo_attainment_hand_made():
    lat = [0.1, 0.2, 0.3, 0.4, math.nan]          # the NaN one did not finish: it misses every SLO
    assert slo_attainment(lat, 0.25) == pytest.approx(2 / 5)
    assert slo_attainment(lat, 0.4) == pytest.approx(4 / 5)   # inclusive
    assert slo_attainment(lat, 10.0) == pytest.approx(4 / 5)
    x = np.arange(1, 101) / 100.0                     # 0.01 ... 1.00
    assert tightest_slo(x, 0.9) == pytest.approx(0.90)
    assert tightest_slo(x, 0.99) == pytest.approx(0.99)
    assert slo_attainment(x, tightest_slo(x, 0.9)) >= 0.9
    assert slo_attainment(x, tightest_slo(x, 0.9) - 1e-9) < 0.9   # and it is the tightest
    assert tightest_slo(lat, 0.9) == math.inf          # only 80% finished
    assert math.isnan(slo_attainment([], 1.0))
    for bad in (0, -1, math.nan):
        with pytest.raises(ParameterError, match="slo_s"):
            slo_attainment(lat, bad)
    with pytest.raises(ParameterError, match="fraction"):
        tightest_slo(lat, 1.5)
    with pytest.raises(ParameterError, match="latencies"):
        slo_attainment([-1.0], 1.0)


def test_burst_all_arrive_at_zero_and_drain():
    from fluidq.latency import _simulate_one

    w = reasoning_workload(mean_output=200, max_output=2000)
    reqs = {"arrival_s": np.zeros(300), "prompt_tokens": np.full(300, 50), "output_tokens": np.arange(1, 301)}
    res = _simulate_one(ENG, reqs, fluidq.Sarathi(), np.random.default_rng(0), None, "recompute", None, 0.0)
    assert np.all(res.requests["arrival_s"] == 0)
    assert np.all(np.isfinite(res.requests["finish_s"]))          # drained
    pols = standard_policies(ENG, w, keys=["fcfs", "srpt"])
    r = burst_comparison(ENG, w, pols, n_requests=300, n_replications=5, rng=1, slo_per_token_s=0.3)
    assert r.inputs["burst"] == 300 and "burst of 300" in r.table(0)
    for p in r.policies:
        assert r.values[p]["finished_fraction"][0][0] == 1.0
        assert r.values[p]["makespan_s"][0][0] > 0
        assert 0 <= r.values[p]["slo_attainment_per_token"][0][0] <= 1
    # SRPT (oracle lengths) beats FCFS on mean latency per token in a burst, beyond the interval
    (f, fh), (s, sh) = r.values["fcfs"]["latency_per_token_mean_s"][0], r.values["srpt"]["latency_per_token_mean_s"][0]
    assert s + sh < f - fh
    with pytest.raises(ParameterError, match="n_requests"):
        burst_comparison(ENG, w, pols, n_requests=0)
    with pytest.raises(ParameterError, match="slo_ttlt_s"):
        burst_comparison(ENG, w, pols, n_requests=10, slo_ttlt_s=-1)


def test_drain_leaves_no_arrival_unfinished():
    from fluidq.latency import compare_orderings

    w = reasoning_workload(mean_output=200, max_output=2000)
    cut = compare_orderings(ENG, w, ["fcfs"], loads=(0.9,), horizon_s=60, n_replications=2, rng=0)
    full = compare_orderings(ENG, w, ["fcfs"], loads=(0.9,), horizon_s=60, n_replications=2, rng=0, drain=True)
    assert cut.values["fcfs"]["finished_fraction"][0][0] < 1
    assert full.values["fcfs"]["finished_fraction"][0][0] == 1.0
    assert math.isfinite(full.values["fcfs"]["slo_per_token_99_s"][0][0])
    # the drained run's tail includes the long requests the cut run lost
    assert full.values["fcfs"]["ttlt_p99_s"][0][0] > cut.values["fcfs"]["ttlt_p99_s"][0][0]


def test_censored_requests_are_misses_only_when_they_already_waited_too_long():
    # (until 2026-12-07 an undecided request was left out of the fraction, so that 2 / 4 and 3 / 3 were read
    # here: an overloaded run whose unfinished requests all had small bounds read 1; now undecided means bounds)
    import math

    from fluidq.latency.slo import slo_attainment_bounds, tightest_slo_lower

    lat = [0.1, 0.2, 0.3, float("nan"), float("nan")]  # two unfinished at the end of the run
    bounds = [0.0, 0.0, 0.0, 0.05, 0.9]  # one arrived just before the end, one waited 0.9 s per token
    # at 0.25: 2 met, the old one missed, the young one undecided: between 2 / 5 and 3 / 5, no single number
    assert slo_attainment_bounds(lat, 0.25, bounds) == pytest.approx((2 / 5, 3 / 5))
    assert math.isnan(slo_attainment(lat, 0.25, bounds))
    assert slo_attainment(lat, 0.25) == pytest.approx(2 / 5)  # without bounds every unfinished one misses
    assert slo_attainment_bounds(lat, 1.0, bounds) == pytest.approx((3 / 5, 1.0))
    assert slo_attainment(lat, 0.01, bounds) == 0.0  # every request decided: a number
    # tightest: every unfinished one a miss gives the upper bound; their waits allow as little as the lower one
    assert tightest_slo(lat, 0.6, bounds) == pytest.approx(0.3) and tightest_slo_lower(lat, 0.6, bounds) == 0.2
    assert math.isinf(tightest_slo(lat, 0.75, bounds)) and tightest_slo_lower(lat, 0.75, bounds) == 0.3
    assert tightest_slo_lower(lat, 1.0, bounds) == 0.9  # the old one meets any SLO above its 0.9
    assert tightest_slo([0.1, 0.2, 0.3, 0.4], 0.99, [0, 0, 0, 0]) == pytest.approx(0.4)
    with pytest.raises(ParameterError, match="lower_bounds"):
        slo_attainment(lat, 0.25, bounds[:2])
    # a bound of an unfinished request must be a number >= 0 (NaN or -1 would silently read as "undecided")
    for bad in (float("nan"), -1.0):
        with pytest.raises(ParameterError, match="lower_bounds"):
            slo_attainment_bounds(lat, 0.25, [0.0, 0.0, 0.0, bad, 0.9])
        with pytest.raises(ParameterError, match="lower_bounds"):
            tightest_slo_lower(lat, 0.6, [0.0, 0.0, 0.0, 0.05, bad])
