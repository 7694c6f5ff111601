"""Named workload families from the shipped data."""
import numpy as np
import pytest

from fluidq.errors import FluidqError, ParameterError
from fluidq.latency.families import FAMILIES, TOKENS_PER_WORD, workload_family
from fluidq.predict import load_lengths


def test_families_have_their_lengths():
    for f in FAMILIES:
        w = workload_family(f, 2.0)
        assert w.arrival.rate_per_s == 2.0 and w.output_tokens.mean >= 1
    chat = workload_family("chat")
    ds = load_lengths("alpaca_eval")
    pooled = np.concatenate([ds.of(m)[np.isfinite(ds.of(m)) & (ds.of(m) > 0)] for m in ds.models])
    assert chat.output_tokens.mean == pytest.approx(np.maximum(1, np.round(pooled * TOKENS_PER_WORD)).mean())
    g = np.random.default_rng(0)
    r = workload_family("reasoning").output_tokens.sample(g, 20000)
    c = workload_family("chat").output_tokens.sample(g, 20000)
    assert np.percentile(r, 99) / np.median(r) > 2 * np.percentile(c, 99) / np.median(c)   # the heavy tail


def test_bad_family_and_rate():
    with pytest.raises(FluidqError, match="workload family"):
        workload_family("nope")
    with pytest.raises(ParameterError, match="rate_per_s"):
        workload_family("chat", 0)
