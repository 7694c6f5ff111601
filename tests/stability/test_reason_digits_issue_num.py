"""Verdict reasons print every tokens/s figure as fluidq check's header does: 4 significant digits with
thousands separators (``3,343``), the same number the same way everywhere; a simulation verdict states
its slope and interval once (review of the human output)."""
import re

from fluidq.profiles import load_profile
from fluidq.stability import check_stability
from fluidq.stability.growth import growth_test
from fluidq.workload import Poisson, Workload


def _engine():
    return load_profile("paper-codellama34b-a100").engine()


def _assert_rounded(reason):
    for num in re.findall(r"-?\d[\d,]*\.\d+", reason):
        assert len(num.replace("-", "").replace(",", "").replace(".", "").lstrip("0")) <= 4, (num, reason)
    # no integer part of 4+ digits without separators (decimals such as the load 0.4786 are not one)
    assert not re.search(r"(?<![\d.,])\d{4,}(?![\d,]*\.\d)", reason), reason
    assert "e+" not in reason, reason


def test_check_stability_tokens_per_s_have_separators():
    eng = _engine()
    for rate, pol in [(8, "sarathi"), (17.0, "sarathi"), (16.7, "sarathi"), (40, "orca")]:
        r = check_stability(eng, Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=100, output_tokens=100),
                            pol)
        assert "3343" not in r.reason and "3,343 tokens/s" in r.reason, r.reason
        _assert_rounded(r.reason)


def test_unstable_reason_offered_load_has_separators():
    eng = _engine()
    r = check_stability(eng, Workload(arrival=Poisson(rate_per_s=40), prompt_tokens=100, output_tokens=100),
                            "sarathi")
    assert "offered load 8,000 tokens/s" in r.reason, r.reason


def test_growth_reason_band_at_four_digits():
    r = growth_test([30.0, -20.0, 40.0, -10.0], band=32.0, horizon_s=30.0, unit="tokens")
    assert "32.00 tokens/s" in r.reason and "needs <= 16.00/s" in r.reason, r.reason
    assert r.finding.startswith("the test cannot tell"), r.finding


def test_simulation_reason_states_the_slope_once_at_four_digits():
    from fluidq.stability.simulation import replicate

    eng = _engine()
    w = Workload(arrival=Poisson(rate_per_s=16), prompt_tokens=100, output_tokens=100)
    res = replicate(eng, w, "sarathi", n_replications=4, horizon_s=20.0)
    reason = res.reason
    assert reason.count("CI [") == 1, reason
    assert "grow at" not in reason, reason
    assert "offered 3,200 tokens/s" in reason and "3,200.0" not in reason, reason
    assert "offered - 3,343 tokens/s" in reason, reason
    _assert_rounded(reason)
