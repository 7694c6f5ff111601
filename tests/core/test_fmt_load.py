"""``fmt_load`` never prints a load other than 1 as "1": load 1 is where stable turns unstable, and 4
significant digits rounded 0.99996 to "1.000" (review 2026-12-06)."""
import math

import numpy as np
import pytest

from fluidq.results import fmt_load


def _reads(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.parametrize("x", [0.99996, 0.999951, 0.9999999, 1 - 1e-12, np.nextafter(1.0, 0.0), np.float64(0.99996),
                               1.00004, 1.0000001, 1 + 1e-12, np.nextafter(1.0, 2.0)])
def test_a_load_on_either_side_of_1_reads_on_its_side(x):
    text = fmt_load(x)
    assert _reads(text) != 1, text
    assert (_reads(text) < 1) == (x < 1), text
    assert _reads(text) == pytest.approx(float(x), rel=1e-4), text


def test_the_four_meaningful_digits_are_kept_elsewhere():
    assert [fmt_load(x) for x in (0.7532, 0.9996, 1.126, 1, 1.0, 12345.6, 3e-6)] == \
        ["0.7532", "0.9996", "1.126", "1.000", "1.000", "12,346", "3e-06"]
    assert fmt_load(0.99996) == "0.99996" and fmt_load(1.00004) == "1.00004"
    for bad in (float("nan"), math.inf, None):
        assert fmt_load(bad) == "\u2013"
