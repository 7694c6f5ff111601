"""find_threshold: brackets Theorem 2's lambda* for a work-conserving policy, a lower one for FT."""
import math

import pytest

from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.errors import ParameterError
from fluidq.sim import find_threshold

E = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64)
W = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=20, output_tokens=15)


def test_sarathi_bracket_contains_lambda_star():
    r = find_threshold(E, W, "sarathi", rng=1, horizon_s=100.0, n_replications=6, rel_tol=0.05)
    lam = r.fluid_rate_per_s
    # the bracket is for the rate where the slope crosses 1 % of the load, i.e. lambda*/(1 - 0.01)
    assert r.low_rate_per_s <= lam / 0.99 * 1.001 and r.high_rate_per_s >= lam * 0.999, r.reason
    assert r.low_rate_per_s > 0 and math.isfinite(r.high_rate_per_s)
    assert r.low_rate_per_s <= r.arrival_rate_per_s <= r.high_rate_per_s
    assert 0 < r.confidence < 1 and r.status in ("resolved", "inconclusive")
    d = r.to_dict()
    assert d["arrival_rate_per_s"] == pytest.approx(0.5 * (d["low_rate_per_s"] + d["high_rate_per_s"]))


def test_fastertransformer_threshold_is_far_below_lambda_star(tmp_path):
    r = find_threshold(E, W, "fastertransformer", rng=2, horizon_s=100.0, n_replications=6)
    assert math.isfinite(r.high_rate_per_s) and r.high_rate_per_s < 0.6 * r.fluid_rate_per_s, r.reason
    assert r.plot(path=tmp_path / "th.png").endswith("th.png")


def test_bad_brackets():
    with pytest.raises(ParameterError, match="low_rate_per_s"):
        find_threshold(E, W, "sarathi", low_rate_per_s=5.0, high_rate_per_s=4.0)
    with pytest.raises(ParameterError, match="confidence"):
        find_threshold(E, W, "sarathi", confidence=0.0)
