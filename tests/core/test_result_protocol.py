"""The result protocol of the core layer (issue 14): one base, ``fluidq.results.Result`` -- ``status`` a
``Status``, ``inputs``, ``to_dict()``, ``to_frame()`` and ``plot()`` where a figure means something.

The verdicts and thresholds follow it.  The other results of the analyses do not yet; they are listed
here by name so that the list only shrinks: a result moved onto the base must leave the list, and a new
``*Result`` class must either use the base or be added to the list on purpose."""
import dataclasses
import importlib
import pkgutil
import re

import pytest

import fluidq
from fluidq.results import Result, Status

ON_THE_BASE = {
    "fluidq.results.ThresholdResult",
    "fluidq.stability.StabilityResult",
    "fluidq.stability.fluid.FluidStabilityResult",
    "fluidq.stability.network.NetworkStabilityResult",
    "fluidq.stability.simulation.ReplicationResult",
    "fluidq.capacity.curve.CapacityCurveResult",
    "fluidq.stability.policy_region.PolicyRegionsResult",
}
#: results on the base that are no verdict and no search: they have no ``status`` (a curve, regions)
WITHOUT_STATUS = {
    "fluidq.capacity.curve.CapacityCurveResult",
    "fluidq.stability.policy_region.PolicyRegionsResult",
}
#: results of the analyses not (yet) on the base: outside the stability/results area of the change that
#: introduced it (sim, dtmc, capacity, validate... each its own owner).  Shrink it; do not grow it.
NOT_YET = {
    "fluidq.batchtime.fit.FitResult",
    "fluidq.capacity.CapacityResult",
    "fluidq.capacity.disaggregated.DisaggregatedResult",
    "fluidq.capacity.disaggregated_sim.PDSimResult",
    "fluidq.dtmc.llm_network.JSQLLMResult",
    "fluidq.dtmc.llm_rybko.LLMRybkoStolyarResult",
    "fluidq.dtmc.networks.NetworkResult",
    "fluidq.dtmc.networks.RoutedEnginesResult",
    "fluidq.dtmc.result.StationaryResult",
    "fluidq.policies.conservation.WorkConservationResult",
    "fluidq.predict.evaluate.CrossModelResult",
    "fluidq.sim.network.NetworkSimResult",
    "fluidq.sim.result.SimResult",
    "fluidq.sweep.core.SweepResult",
    "fluidq.testing.policy.PolicyCheckResult",
    "fluidq.validate.ValidationResult",
    "fluidq.validate.cases.CaseResult",
    "fluidq.validate.replay.ReplayResult",
}


def _result_classes():
    found = {}
    for mod in pkgutil.walk_packages(fluidq.__path__, "fluidq."):
        if mod.name == "fluidq.__main__" or mod.name.startswith(("fluidq.cli", "fluidq.plotting", "fluidq.report")):
            continue
        m = importlib.import_module(mod.name)
        for name, obj in vars(m).items():
            if isinstance(obj, type) and re.fullmatch(r"[A-Z]\w*Result", name) and obj.__module__ == m.__name__:
                found[f"{m.__name__}.{name}"] = obj
    return found


@pytest.fixture(scope="module")
def classes():
    return _result_classes()


def test_the_verdicts_and_thresholds_are_on_the_base(classes):
    for path in ON_THE_BASE:
        cls = classes[path]
        assert issubclass(cls, Result), path
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, path
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert "inputs" in fields, path
        if path not in WITHOUT_STATUS:
            assert "status" in fields or isinstance(getattr(cls, "status", None), property), path
        for meth in ("to_dict", "to_frame", "plot"):
            assert callable(getattr(cls, meth, None)), (path, meth)


def test_the_list_of_results_not_on_the_base_only_shrinks(classes):
    on_base = {p for p, c in classes.items() if issubclass(c, Result)}
    assert on_base == ON_THE_BASE
    off = {p for p, c in classes.items() if not issubclass(c, Result)}
    assert not off - NOT_YET, f"a new result class off the base (use fluidq.results.Result): {sorted(off - NOT_YET)}"
    assert not NOT_YET - off, f"on the base or gone now: remove from NOT_YET {sorted(NOT_YET - off)}"


def test_the_base_adds_no_fields_and_its_frame_is_one_row():
    assert not dataclasses.is_dataclass(Result) and Result.__slots__ == ()
    r = fluidq.results.ThresholdResult(1.0, 0.5, 1.5, "dtmc", "p", 2.0, "why", status="inconclusive",
                                       details={"curve": [1, 2]}, inputs={"a": 1})
    f = r.to_frame()
    assert list(f.index) == [0] and f["status"][0] == Status.INCONCLUSIVE.value
    assert "details" not in f.columns and "inputs" not in f.columns  # scalars only
