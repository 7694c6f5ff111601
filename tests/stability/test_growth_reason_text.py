"""The growth test's reason reads as a sentence with rounded numbers (review of the CLI output): the
horizon a powered test needs ends the sentence ("runs of about 6,000 s would be needed"), rates carry
4 significant digits, not float noise."""
import re

from fluidq.stability.growth import growth_test


def test_inconclusive_reason_finishes_its_sentence_and_rounds():
    r = growth_test([-13.88, 66.2, 26.16, 40.0, 10.0], band=0.1, horizon_s=100.0)
    assert r.status.value == "unknown"
    assert re.search(r"runs of about [\d,]+ s would be needed to tell$", r.reason), r.reason
    assert "would)" not in r.reason and not r.reason.endswith("would")
    # every number with a decimal point has at most 4 significant digits
    for num in re.findall(r"-?\d[\d,]*\.\d+", r.reason):
        assert len(num.replace("-", "").replace(",", "").replace(".", "").lstrip("0")) <= 4, (num, r.reason)


def test_needed_horizon_is_about_two_digits():
    from fluidq.stability.growth import _about

    assert _about(5970.3) == "6,000" and _about(131.2) == "130" and _about(2.34) == "2.3"
