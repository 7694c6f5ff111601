"""The numpy mass functions of the renewal thresholds against scipy.stats (the reference)."""
import numpy as np
import pytest
from scipy import stats

from fluidq.dtmc._pmf import binom_pmf, poisson_pmf


@pytest.mark.parametrize("mu", [0.0, 1e-6, 0.3, 4.0, 57.5, 900.0])
def test_poisson_matches_scipy(mu):
    k = np.arange(0, 2000)
    ref = stats.poisson.pmf(k, mu)
    got = poisson_pmf(k, mu)
    big = ref > 1e-250
    np.testing.assert_allclose(got[big], ref[big], rtol=1e-11)
    assert np.all(np.abs(got[~big]) < 1e-240)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 7, 64, 512, 3000])
def test_binomial_matches_scipy_broadcast(k):
    n = np.arange(0, k + 1)
    p = np.array([0.0, 1e-9, 0.01, 0.37, 0.5, 0.999, 1.0])
    ref = stats.binom.pmf(n[None, :], k, p[:, None])
    got = binom_pmf(n[None, :], k, p[:, None])
    assert got.shape == ref.shape
    big = ref > 1e-250
    np.testing.assert_allclose(got[big], ref[big], rtol=1e-10)
    assert np.all(np.abs(got[~big]) < 1e-240)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)


def test_degenerate_probabilities_put_all_mass_on_one_point():
    assert list(binom_pmf(np.arange(4), 3, 0.0)) == [1.0, 0.0, 0.0, 0.0]
    assert list(binom_pmf(np.arange(4), 3, 1.0)) == [0.0, 0.0, 0.0, 1.0]
    assert list(poisson_pmf(np.arange(3), 0.0)) == [1.0, 0.0, 0.0]
