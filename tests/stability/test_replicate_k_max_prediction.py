"""replicate's predicted slope when k_max binds: what the scheduler can serve, stated as a bound.

An independent check found the prediction using the k_max region's rate, which a region-aware scheduler
serves but Sarathi-Serve does not (it forms other batches under a backlog), so the prediction check failed
at 1.1x with the verdicts right.
"""
import pytest

from fluidq import Engine, Poisson, Staircase, Workload, max_throughput, replicate
from fluidq.policies import resolve_policy
from fluidq.stability.region import cached_policy_region

E = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, k_max=16)
P, D = 300, 20


def test_sarathi_under_k_max_is_predicted_from_its_own_batches_and_called_a_bound():
    w1 = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=P, output_tokens=D)
    region = max_throughput(E, w1).tokens_per_s  # 3,085 tokens/s
    w = w1.with_rate(1.1 * region / (P + D))
    pr = cached_policy_region(E, resolve_policy("sarathi"), P)
    own = pr.scale_of((w.arrival_rate_per_s * P, w.arrival_rate_per_s * D)) * w.token_rate_per_s  # 2,539
    assert own < 0.9 * region
    r = replicate(E, w, "sarathi", n_replications=4, horizon_s=300.0, rng=7)
    assert r.inputs["capacity_is_bound"] is True
    assert r.inputs["capacity_tokens_per_s"] == pytest.approx(own, rel=1e-9)
    assert r.predicted_slope_tokens_per_s == pytest.approx(w.token_rate_per_s - own, rel=1e-9)
    assert "lower bound" in r.reason
    # the simulated slope is at least the predicted lower bound (the region's rate predicted 309 tokens/s,
    # below the whole interval)
    assert r.slope_ci[1] >= r.predicted_slope_tokens_per_s
    assert r.slope_ci[0] > w.token_rate_per_s - region


def test_without_a_binding_k_max_the_prediction_is_the_capacity():
    e = E.with_(k_max=None)
    w = Workload(arrival=Poisson(rate_per_s=1.1 * max_throughput(e).tokens_per_s / (P + D)), prompt_tokens=P,
                 output_tokens=D)
    r = replicate(e, w, "sarathi", n_replications=2, horizon_s=100.0, rng=1)
    assert r.inputs["capacity_is_bound"] is False and "lower bound" not in r.reason
