"""An empirical length law's mean is the correctly rounded sum of its values' shares, the same on every CPU.

``np.dot`` sums in an order (and with fused multiply-adds) chosen by the BLAS kernel for the CPU at hand: the mean of
200, 210, ..., 250 read 224.99999999999997 on one machine, and ``fluidq region --trace`` printed "m_p=225.0" there
(tests/cli/test_cliprobe_reasons.py failed on that machine only).  ``math.fsum`` rounds the sum once.
"""
from fractions import Fraction

import numpy as np
import pytest

from fluidq.cli.common import fmt_tokens
from fluidq.workload.lengths import Empirical


@pytest.mark.parametrize("values", [(200, 210, 220, 230, 240, 250), (50, 55, 60, 65, 70, 75)])
def test_the_mean_of_equally_weighted_counts_is_their_exact_mean(values):
    e = Empirical(values=values)
    assert e.mean == float(Fraction(sum(values), len(values)))
    assert e.mean_square == float(Fraction(sum(v * v for v in values), len(values)))


def test_the_mean_is_the_correctly_rounded_sum_of_the_shares():
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(2, 40))
        e = Empirical(values=tuple(int(x) for x in rng.integers(1, 20_000, n)),
                      weights=tuple(float(x) for x in rng.random(n) + 0.01))
        exact = sum(Fraction(v) * Fraction(w) for v, w in zip(e.values, e.weights))
        # fsum of the rounded products: within half an ulp of their exact sum, plus the products' own roundings
        assert abs(Fraction(e.mean) - exact) <= Fraction(np.spacing(e.mean)) * (1 + len(e.values)) / 2


def test_a_mean_within_float_noise_of_a_whole_number_prints_as_one():
    assert fmt_tokens(224.99999999999997) == "225" and fmt_tokens(1154.0000000000002) == "1,154"
    assert fmt_tokens(62.5) == "62.50" and fmt_tokens(211.126) == "211.1" and fmt_tokens(100.0) == "100"
    assert fmt_tokens(224.9999) == "225.0"  # a real fraction is not rounded away
