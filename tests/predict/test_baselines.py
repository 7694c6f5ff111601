"""Baseline length rankers (pointwise, bucket, listwise) and tau_b over seeded splits."""
import numpy as np
import pytest

from fluidq.errors import FluidqError, ParameterError
from fluidq.predict.baselines import BASELINES, fit_baseline, tau_over_splits


def _learnable(n=400, seed=0):
    """Prompts whose wording fixes the length's scale (brief / list / essay / story), plus noise."""
    g = np.random.default_rng(seed)
    kinds = {"answer briefly": 20, "give a short list of": 80, "write an essay on": 300, "write a long story about": 900}
    topics = ["rivers", "tax law", "chess", "bread", "volcanoes", "poetry", "trains", "cats"]
    prompts, lengths = [], []
    for _ in range(n):
        k = g.choice(list(kinds))
        prompts.append(f"{k} {g.choice(topics)}")
        lengths.append(kinds[k] * g.lognormal(0, 0.3))
    return prompts, np.array(lengths)


@pytest.mark.parametrize("kind", BASELINES + ("pairwise",))
def test_each_ranker_beats_random_with_an_interval(kind):
    P, L = _learnable()
    r = tau_over_splits(P, L, kind, n_splits=5, rng=1, epochs=60)
    rnd = tau_over_splits(P, L, "random", n_splits=5, rng=1)
    assert len(r["tau_b"]) == 5 and r["half_width"] > 0
    assert r["mean"] - r["half_width"] > rnd["mean"] + rnd["half_width"]
    assert r["mean"] > 0.5          # the wording carries most of the order


def test_baseline_scores_longer_higher_and_records_its_loss():
    P, L = _learnable(200)
    rk = fit_baseline("bucket", P, L, n_buckets=4, epochs=60, rng=0)
    assert rk.info["loss"] == "bucket" and rk.info["n_buckets"] == 4
    s = rk.score(["answer briefly chess", "write a long story about chess"])
    assert s[1] > s[0]


def test_bad_parameters_are_named():
    P, L = _learnable(20)
    with pytest.raises(FluidqError, match="baseline"):
        fit_baseline("nope", P, L)
    for kw, name in (({"n_buckets": 1}, "n_buckets"), ({"list_size": 1}, "list_size"),
                     ({"list_size": 50}, "list_size"), ({"l2": -1}, "l2"), ({"epochs": 0}, "epochs")):
        with pytest.raises(ParameterError, match=name):
            fit_baseline("listwise" if "list_size" in kw else "bucket", P, L, **kw)
    with pytest.raises(ParameterError, match="lengths"):
        fit_baseline("pointwise", P, L[:5])
    with pytest.raises(ParameterError, match="n_splits"):
        tau_over_splits(P, L, "pointwise", n_splits=1)
    with pytest.raises(ParameterError, match="test_fraction"):
        tau_over_splits(P, L, "pointwise", test_fraction=1.0)
