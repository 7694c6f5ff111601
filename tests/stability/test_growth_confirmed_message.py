"""Growth confirmed (the interval above zero) but not past the band: the reason says what the numbers say -- the
point estimate and its interval against the band -- never "grows by less than" the band when the point estimate
is above it (rev-indep finding 6: a slope of 2,498 tokens/s, CI [338.6, 4,658], was said to grow "by less than
473.4 tokens/s")."""
import re

from fluidq.stability.growth import _n, growth_test
from fluidq.results import Status


def _num(s):
    return float(s.replace(",", ""))


def test_point_estimate_above_the_band_is_said_so():
    r = growth_test([1500.0, 2500.0, 3500.0], band=473.4, horizon_s=600.0, unit="tokens")
    assert r.status is Status.UNKNOWN and r.ci[0] > 0 and r.ci[0] < 473.4 < r.mean
    assert "by less than" not in r.reason, r.reason
    assert "the backlog grows" in r.reason
    m = re.search(r"the point estimate ([\d,.]+)/s is ([\d.]+) x the growth to detect, ([\d,.]+) tokens/s", r.reason)
    assert m, r.reason
    assert _num(m.group(1)) == round(r.mean) and _num(m.group(3)) == 473.4
    assert abs(float(m.group(2)) - r.mean / 473.4) < 0.05 * r.mean / 473.4
    assert f"lower end {_n(r.ci[0])}/s is below it" in r.reason and "not confirmed" in r.reason, r.reason
    assert "verdict is unknown" in r.reason


def test_point_estimate_below_the_band_is_said_so():
    r = growth_test([0.004, 0.006, 0.005, 0.007], band=0.01, horizon_s=100.0)
    assert r.status is Status.UNKNOWN and 0 < r.ci[0] and r.mean < 0.01
    assert "is below the growth to detect" in r.reason and " x the growth to detect" not in r.reason, r.reason
