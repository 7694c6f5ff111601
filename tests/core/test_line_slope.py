"""results.line_slope: the one least-squares slope every result's backlog growth is fitted with."""
import math
import warnings

import numpy as np
import pytest

from fluidq.results import line_slope


def test_a_line_and_noise():
    t = np.linspace(3.0, 10.0, 200)
    assert line_slope(t, 2.5 * t - 7.0) == pytest.approx(2.5, rel=1e-12)
    rng = np.random.default_rng(0)
    y = 4.0 * t + rng.normal(0, 3.0, t.size)
    assert line_slope(t, y) == pytest.approx(np.polyfit(t, y, 1)[0], rel=1e-9)


def test_a_flat_backlog_has_slope_zero_exactly():
    assert line_slope(np.linspace(0.0, 5.0, 50), np.full(50, 7)) == 0.0


def test_a_window_far_from_zero_keeps_its_slope():
    t = 1.7e9 + np.linspace(0.0, 60.0, 61)  # epoch seconds (a served run's timestamps)
    assert line_slope(t, 12.0 * (t - t[0])) == pytest.approx(12.0, rel=1e-9)


@pytest.mark.parametrize("t, y", [([], []), ([1.0], [2.0]), ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]),
                                  (np.linspace(0.0, 1e-300, 400), np.arange(400.0)),
                                  ([0.0, math.inf], [1.0, 2.0]), ([0.0, 1.0], [1.0, math.nan])])
def test_no_slope_is_nan_without_a_warning(t, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(line_slope(t, y))
