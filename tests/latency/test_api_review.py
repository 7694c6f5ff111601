"""fluidq.latency's public calls refuse a confidence outside (0, 1) and a bare number for ``loads`` with an error
naming them (review 2026-12-06: confidence=1.5 gave NaN intervals silently; loads=0.5 raised a bare TypeError
"'float' object is not iterable")."""
import math

import pytest

import fluidq
from fluidq.errors import FluidqError, ParameterError
from fluidq.latency import burst_comparison, compare_orderings

ENG = fluidq.Engine(batch_time=fluidq.Affine(c=0.01, a=1e-4), b_max=256)
W = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=20,
                    output_tokens=fluidq.Geometric(mean_tokens=20))


@pytest.mark.parametrize("confidence", [1.5, 0.0, 1.0, -0.1, math.nan, True])
@pytest.mark.parametrize("call", ["compare", "burst"])
def test_confidence_outside_the_open_unit_interval_is_refused(confidence, call):
    with pytest.raises(FluidqError) as exc:
        if call == "compare":
            compare_orderings(ENG, W, ["fcfs"], loads=(0.5,), horizon_s=5, n_replications=2, confidence=confidence)
        else:
            burst_comparison(ENG, W, ["fcfs"], n_requests=5, n_replications=2, confidence=confidence)
    assert "confidence" in str(exc.value)


def test_a_bare_number_for_loads_is_refused_naming_loads():
    with pytest.raises(FluidqError) as exc:
        compare_orderings(ENG, W, ["fcfs"], loads=0.5, horizon_s=5, n_replications=2)
    assert "loads" in str(exc.value) and "(0.5,)" in str(exc.value)


def test_ratio_interval_refuses_a_bad_confidence_too():
    res = compare_orderings(ENG, W, ["fcfs", "sjf"], loads=(0.5,), horizon_s=5, n_replications=2)
    with pytest.raises(ParameterError, match="confidence"):
        res.ratio_interval("ttlt_mean_s", "sjf", confidence=2)
