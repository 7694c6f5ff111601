"""DISTBOOST (fluidq's reconstruction) and the MEMGUARD / gamma-Ada parameters of the comparison."""
import math

import numpy as np
import pytest

import fluidq
from fluidq.errors import ParameterError
from fluidq.latency import reasoning_workload, standard_policies
from fluidq.policies.base import RequestState
from fluidq.policies.distboost import DistBoost

ENG = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=60_000)


def test_expected_remaining_by_hand():
    d = DistBoost(output_lengths=(10, 20, 30, 100))
    assert d.expected_remaining(0) == pytest.approx(40.0)          # the mean
    assert d.expected_remaining(10) == pytest.approx(50 - 10)      # (20+30+100)/3 - 10
    assert d.expected_remaining(30) == pytest.approx(70.0)         # only 100 left: heavy-tail effect
    assert d.expected_remaining(100) == 1.0                        # beyond the support
    young = RequestState(rid=0, arrival_s=0.0, prompt_tokens=5, output_tokens=999, prefilled=5, decoded=10)
    old = RequestState(rid=1, arrival_s=0.0, prompt_tokens=5, output_tokens=31, prefilled=5, decoded=30)
    assert [r.rid for r in d.order([old, young], 1.0)] == [0, 1]   # the old one is expected to run long
    assert "reconstruction" in d.describe()


def test_parameters_validated():
    for bad in ((), (0, 5), (1, math.nan), ("a",)):
        with pytest.raises(ParameterError, match="output_lengths"):
            DistBoost(output_lengths=bad)
    w = reasoning_workload(mean_output=100, max_output=1000)
    with pytest.raises(ParameterError, match="k_tokens"):
        standard_policies(ENG, w, keys=["uniboost"], k_tokens=0)
    with pytest.raises(ParameterError, match="update_every"):
        standard_policies(ENG, w, keys=["uniboost-ada"], update_every=0)
    p = standard_policies(ENG, w, keys=["uniboost", "uniboost-ada", "distboost"], k_tokens=64, update_every=7)
    assert p["uniboost"].order.k_tokens == 64
    assert p["uniboost-ada"].order.base.update_every == 7 and p["uniboost-ada"].order.k_tokens == 64
    assert isinstance(p["distboost"].order, DistBoost)
    with pytest.raises(ParameterError, match="workload"):
        standard_policies(ENG, None, keys=["distboost"])


def test_distboost_runs_and_drains():
    from fluidq.latency import burst_comparison

    w = reasoning_workload(mean_output=100, max_output=1000)
    r = burst_comparison(ENG, w, keys := ["fcfs", "distboost"], n_requests=150, n_replications=3, rng=2)
    assert r.policies == tuple(keys)
    assert all(r.values[p]["finished_fraction"][0][0] == 1.0 for p in keys)
    assert np.isfinite(r.values["distboost"]["latency_per_token_mean_s"][0][0])
