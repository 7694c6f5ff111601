"""Every stability threshold returns the one ThresholdResult (status a core Status), and
check_stability dispatches on the type of what it is given (an Engine or a Network)."""
import json
import math

import pytest

import fluidq
from fluidq.dtmc import ThresholdResult as DtmcThreshold
from fluidq.errors import ParameterError
from fluidq.results import Status, ThresholdResult
from fluidq.sim import ThresholdResult as SimThreshold

ENGINE = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.02, b0=4), b_max=8)
W = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=2, output_tokens=fluidq.Fixed(n=2))


def test_old_names_are_the_one_class():
    assert DtmcThreshold is ThresholdResult and SimThreshold is ThresholdResult
    assert fluidq.ThresholdResult is ThresholdResult if hasattr(fluidq, "ThresholdResult") else True


@pytest.mark.parametrize("policy, method", [("sarathi", "closed_form"), ("fastertransformer", "renewal"),
                                            ("fastertransformer", "dtmc")])
def test_numerical_thresholds_are_one_class_with_a_status(policy, method):
    r = fluidq.stability_threshold(ENGINE, W, policy, method, **({"max_prefill": 20} if method == "dtmc" else {}))
    assert type(r) is ThresholdResult and isinstance(r.status, Status)
    assert r.status is Status.RESOLVED and r.method == method
    assert r.lower_per_s <= r.arrival_rate_per_s <= r.upper_per_s
    d = json.loads(json.dumps(r.to_dict()))
    assert d["status"] == "resolved" and d["method"] == method and "inputs" in d
    assert r.confidence is None and "steps" not in d


def test_simulation_threshold_is_the_same_class_with_its_old_names():
    r = fluidq.find_threshold(ENGINE, W, "sarathi", rng=3, horizon_s=60.0, n_replications=4, rel_tol=0.2,
                              max_steps=6)
    assert type(r) is ThresholdResult and isinstance(r.status, Status)
    assert r.status in (Status.RESOLVED, Status.INCONCLUSIVE, Status.UNBRACKETED)
    assert r.status == r.status.value  # str-valued: comparisons with the old strings still hold
    assert r.method == "simulation" and 0 <= r.confidence < 1 and len(r.steps) >= 1
    assert (r.low_rate_per_s, r.high_rate_per_s) == (r.lower_per_s, r.upper_per_s)
    assert r.fluid_rate_per_s == r.work_conserving_rate_per_s
    if math.isfinite(r.upper_per_s):
        assert r.arrival_rate_per_s == pytest.approx(0.5 * (r.lower_per_s + r.upper_per_s))
    d = r.to_dict()
    assert d["status"] == r.status.value and len(d["steps"]) == len(r.steps)


def test_a_status_string_is_turned_into_the_enum_and_a_bad_one_refused():
    r = ThresholdResult(1.0, 0.5, 1.5, "dtmc", "p", 2.0, "why", status="inconclusive")
    assert r.status is Status.INCONCLUSIVE and r.error_bound_per_s == 0.5 and r.fraction_of_capacity == 0.5
    with pytest.raises(ValueError):
        ThresholdResult(1.0, 0.5, 1.5, "dtmc", "p", 2.0, "why", status="nearly")


def test_check_stability_dispatches_on_type():
    st = fluidq.check_stability(ENGINE, W.with_rate(0.1), "sarathi")
    assert st.status is Status.STABLE
    with pytest.raises(ParameterError, match="engine"):
        fluidq.check_stability(object(), W, "sarathi")
