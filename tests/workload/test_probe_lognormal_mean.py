"""``LogNormal.from_mean`` refuses a mean below one token (found by the independent probe: ``from_mean(0.5, 1.0)``
gave a distribution of mean 1.17 tokens, and a network TOML hop ``{ dist = "lognormal", mean = 0.5 }`` was read
that way, where ``{ dist = "geometric", mean = 0.5 }`` is refused)."""
import pytest

import fluidq as fq
from fluidq.errors import FluidqError, ParameterError
from fluidq.network.toml import network_from_dict


@pytest.mark.parametrize("mean", [0.5, 0.999, 1e-9])
def test_from_mean_below_one_token(mean):
    with pytest.raises(ParameterError, match="mean_tokens"):
        fq.LogNormal.from_mean(mean, 1.0)


def test_from_mean_at_and_above_one_token():
    assert fq.LogNormal.from_mean(1.0, 0.5).mean >= 1.0
    # E[ceil X] = E[X] + 1/2 for a law this wide and smooth (the fractional part is near uniform; the exact
    # sum gives 200.5 + 8e-9 at sigma = 1); the mean is computed, not sampled, so the band can be narrow
    for sigma in (0.5, 1.0):
        assert fq.LogNormal.from_mean(200.0, sigma).mean == pytest.approx(200.5, abs=1e-3)


def test_toml_lognormal_mean_below_one_is_refused_like_geometric():
    def net(length):
        return {"engines": {"E": {"batch_time": {"kind": "affine", "c": 0.01, "a": 1e-4}, "b_max": 64}},
                "classes": [{"name": "A", "rate_per_s": 1.0,
                             "route": [{"engine": "E", "prompt": length, "output": 4}]}]}
    for length in ({"dist": "geometric", "mean": 0.5}, {"dist": "lognormal", "mean": 0.5, "sigma": 1.0}):
        with pytest.raises(FluidqError, match="mean_tokens"):
            network_from_dict(net(length))
