"""PARS pair construction and the margin ranking loss match their definitions."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fluidq.errors import DataError, FluidqError, ParameterError
from fluidq.predict import make_pairs, margin_ranking_loss, pair_kept


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 500), min_size=2, max_size=40), st.floats(0.0, 0.9), st.integers(0, 2**31))
def test_every_kept_pair_passes_the_relative_filter(lengths, delta, seed):
    L = np.asarray(lengths, float)
    try:
        ps = make_pairs(L, delta=delta, rng=seed)
    except DataError:
        # only allowed when really no pair of distinct prompts passes
        i, j = np.triu_indices(L.size, 1)
        assert not pair_kept(L[i], L[j], delta).any()
        return
    rel = np.abs(L[ps.a] - L[ps.b]) / np.maximum(L[ps.a], L[ps.b])
    assert np.all(rel >= delta)
    assert np.all(ps.a != ps.b)
    assert np.all(ps.y == np.where(L[ps.a] > L[ps.b], 1.0, -1.0))
    counts = np.bincount(ps.a, minlength=L.size)
    assert counts.max() <= 10
    assert ps.attempts <= 100 * L.size


def test_ten_pairs_per_prompt_when_partners_are_easy():
    L = np.geomspace(1, 1e6, 200)    # consecutive lengths differ by > 6 %, most pairs by far more
    ps = make_pairs(L, rng=0)
    assert np.all(np.bincount(ps.a, minlength=L.size) == 10)


def test_seeded_sampling_is_reproducible_and_seed_dependent():
    L = np.random.default_rng(1).integers(1, 1000, 300)
    p1, p2, p3 = make_pairs(L, rng=7), make_pairs(L, rng=7), make_pairs(L, rng=8)
    assert np.array_equal(p1.a, p2.a) and np.array_equal(p1.b, p2.b)
    assert not np.array_equal(p1.b, p3.b)


def test_attempt_cap_limits_draws():
    # one long prompt among equals: anchors of equal length can only pair with it
    L = np.r_[np.full(50, 100.0), 1000.0]
    ps = make_pairs(L, max_attempts=5, pairs_per_prompt=10, rng=0)
    assert np.bincount(ps.a, minlength=L.size).max() <= 5
    assert ps.attempts <= 5 * L.size


def test_all_equal_lengths_raise_a_clear_error():
    with pytest.raises(DataError, match="no training pair survives"):
        make_pairs(np.full(20, 42.0), rng=0)


def test_empty_and_bad_inputs():
    with pytest.raises(ParameterError):
        make_pairs([], rng=0)
    with pytest.raises(ParameterError):
        make_pairs([1.0], rng=0)
    with pytest.raises(ParameterError, match="delta"):
        make_pairs([1, 2, 3], delta=1.0)
    with pytest.raises(FluidqError):
        make_pairs([1, -2, 3])


def test_margin_ranking_loss_definition():
    rng = np.random.default_rng(3)
    sa, sb = rng.normal(size=100), rng.normal(size=100)
    y = rng.choice([-1.0, 1.0], size=100)
    per = margin_ranking_loss(sa, sb, y, 1.0, reduce=False)
    for k in range(100):
        assert per[k] == pytest.approx(max(0.0, -y[k] * (sa[k] - sb[k]) + 1.0))
    assert margin_ranking_loss(sa, sb, y) == pytest.approx(per.mean())
    # a correctly ordered pair beyond the margin costs nothing
    assert margin_ranking_loss([3.0], [1.0], [1.0]) == 0.0
    assert margin_ranking_loss([1.0], [1.0], [1.0]) == 1.0
