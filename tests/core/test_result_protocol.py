"""The result protocol of the core layer (issue 14): one base, ``fluidq.results.Result`` -- ``status`` a
``Status`` where a result is a verdict or a search, ``inputs``, ``to_dict()``, ``to_frame()`` and
``plot()`` where a figure means something.

Every ``*Result`` class of fluidq is on the base, and so are the results listed in ``OTHER_RESULTS``; which
of them have a ``status`` (a verdict or a search) and a ``plot`` is listed here by name, each on purpose,
and every class is checked against what its entry says.  ``NOT_YET`` names the one result left off."""
import dataclasses
import importlib
import json
import pkgutil
import re

import numpy as np
import pytest

import fluidq
from fluidq.results import Result, Status, plain

#: every result class, with whether it carries a ``status`` (a verdict or a search outcome) and a ``plot``
ON_THE_BASE = {  # every *Result class
    # verdicts and thresholds
    "fluidq.results.ThresholdResult": ("status", "plot"),
    "fluidq.stability.StabilityResult": ("status", "plot"),
    "fluidq.stability.fluid.FluidStabilityResult": ("status", "plot"),
    "fluidq.stability.network.NetworkStabilityResult": ("status", "plot"),
    "fluidq.stability.simulation.ReplicationResult": ("status", "plot"),
    # chains: a solved chain says whether its truncation held (stable / unstable / inaccurate)
    "fluidq.dtmc.result.StationaryResult": ("status", "plot"),
    "fluidq.dtmc.networks.NetworkResult": ("status",),
    "fluidq.dtmc.networks.RoutedEnginesResult": ("status",),
    "fluidq.dtmc.llm_network.JSQLLMResult": (),  # mean requests per phase: no verdict
    "fluidq.dtmc.llm_rybko.LLMRybkoStolyarResult": (),
    # capacity: numbers, and the disaggregated tandem's verdict when a rate is given
    "fluidq.capacity.CapacityResult": ("plot",),
    "fluidq.capacity.curve.CapacityCurveResult": ("plot",),
    "fluidq.capacity.disaggregated.DisaggregatedResult": ("status",),
    "fluidq.capacity.disaggregated_sim.PDSimResult": ("status",),
    "fluidq.stability.policy_region.PolicyRegionsResult": ("plot",),
    # runs, fits, checks, validation
    "fluidq.sim.result.SimResult": ("plot",),
    "fluidq.sim.network.NetworkSimResult": ("plot",),
    "fluidq.batchtime.fit.FitResult": ("plot",),
    "fluidq.policies.conservation.WorkConservationResult": (),
    "fluidq.predict.evaluate.CrossModelResult": ("plot",),
    "fluidq.sweep.core.SweepResult": ("plot",),
    "fluidq.testing.policy.PolicyCheckResult": (),
    "fluidq.validate.ValidationResult": ("plot",),
    "fluidq.validate.cases.CaseResult": ("plot",),
    "fluidq.validate.replay.ReplayResult": (),
}
#: results not named ``*Result`` (a region, a mix, a path, a comparison, a summary), on the base too
OTHER_RESULTS = {
    "fluidq.capacity.region.StabilityRegion": ("plot",),
    "fluidq.capacity.mix.RegionMix": ("plot",),
    "fluidq.fluid.path.FluidPath": ("plot",),
    "fluidq.latency.LatencyComparison": ("plot",),
    "fluidq.predict.evaluate.RankingEvaluation": ("plot",),
    "fluidq.sim.result.SimSummary": (),
}
#: results not (yet) on the base.  ``*Result`` classes: none, keep it so.  SimulatedRegion's per-ray search
#: outcomes are its field ``ray_status``; its old name ``status`` still reads that tuple (existing code indexes
#: it), and the protocol's ``status`` is one ``Status``: it moves onto the base when the old name is retired.
NOT_YET = {"fluidq.stability.simulated_region.SimulatedRegion"}


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


def _is_attr(cls, name):
    fields = {f.name for f in dataclasses.fields(cls)}
    return name in fields or isinstance(getattr(cls, name, None), property)


def _cls(path):
    mod, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(mod), name)


@pytest.mark.parametrize("path", sorted(ON_THE_BASE | OTHER_RESULTS))
def test_every_result_follows_the_protocol(path):
    cls = _cls(path)
    has = {**ON_THE_BASE, **OTHER_RESULTS}[path]
    assert issubclass(cls, Result), path
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, path
    assert _is_attr(cls, "inputs"), path
    assert _is_attr(cls, "status") is ("status" in has), (path, "status")
    if "status" in has and "status" in {f.name for f in dataclasses.fields(cls)}:
        assert dataclasses.fields(cls)[[f.name for f in dataclasses.fields(cls)].index("status")].type \
            in (Status, "Status"), path
    for meth in ("to_dict", "to_frame"):
        assert callable(getattr(cls, meth, None)), (path, meth)
    assert "to_dict" in vars(cls), f"{path} writes its own to_dict (the base's is a fallback)"
    assert callable(getattr(cls, "plot", None)) is ("plot" in has), (path, "plot")


def test_every_result_is_on_the_base_and_listed(classes):
    off = sorted(p for p, c in classes.items() if not issubclass(c, Result))
    assert off == [], f"a result class off the base (use fluidq.results.Result): {off}"
    assert not any(issubclass(_cls(p), Result) for p in NOT_YET), "on the base now: remove it from NOT_YET"
    assert set(classes) == set(ON_THE_BASE), (f"unlisted: {sorted(set(classes) - set(ON_THE_BASE))}; "
                                              f"gone: {sorted(set(ON_THE_BASE) - set(classes))}")


def test_the_result_left_off_keeps_its_per_ray_outcomes_apart_from_status():
    """SimulatedRegion: the per-ray outcomes are the field ``ray_status``; ``status`` is only the old name's
    property (a tuple, which is why the class is off the base: the protocol's ``status`` is one Status)."""
    cls = _cls("fluidq.stability.simulated_region.SimulatedRegion")
    fields = {f.name: f.type for f in dataclasses.fields(cls)}
    assert "ray_status" in fields and "status" not in fields
    assert isinstance(vars(cls)["status"], property) and not issubclass(cls, Result)


def test_the_base_adds_no_fields_and_its_frame_is_one_row():
    assert not dataclasses.is_dataclass(Result) and Result.__slots__ == ()
    r = fluidq.results.ThresholdResult(1.0, 0.5, 1.5, "dtmc", "p", 2.0, "why", status="inconclusive",
                                       details={"curve": [1, 2]}, inputs={"a": 1})
    f = r.to_frame()
    assert list(f.index) == [0] and f["status"][0] == Status.INCONCLUSIVE.value
    assert "details" not in f.columns and "inputs" not in f.columns  # scalars only


def _instances():
    """Real results of the moved classes, each from a small computation."""
    from fluidq import Engine, Poisson, Staircase, Workload
    from fluidq.batchtime.fit import fit_batch_time
    from fluidq.capacity.disaggregated import disaggregated_capacity
    from fluidq.dtmc import build_dtmc
    from fluidq.testing import check_policy

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256)
    w = Workload(arrival=Poisson(rate_per_s=2.0), prompt_tokens=100, output_tokens=20)
    b = np.arange(16, 600, 16)
    yield fluidq.max_throughput(e, w)
    yield fluidq.simulate(e, w, horizon_s=5.0, rng=1)
    yield fit_batch_time(b, 0.01 + 3e-5 * b, kind="affine")
    yield fluidq.check_work_conserving("sarathi")
    yield check_policy("sarathi", simulate=False)
    small = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=8), b_max=16)
    yield build_dtmc(small, Workload(arrival=Poisson(rate_per_s=3.0), prompt_tokens=4,
                                     output_tokens=fluidq.Geometric(mean_tokens=5)), "vllm",
                     max_prefill=10, max_decode=20).solve()
    from fluidq.batchtime.comm import Link

    yield disaggregated_capacity(e, e, w, n_prefill=1, n_decode=1, rate=2.0, link=Link(bandwidth_gbps=10.0, latency_us=5.0),
                                 kv_bytes_per_token=1e5)
    yield fluidq.capacity.capacity_vs_bmax(e, w, b_max_values=[128, 256])
    region = fluidq.stability_region(e.with_(k_max=8))
    yield region
    yield fluidq.region_mix(e.with_(k_max=8), (50.0, 100.0))


@pytest.fixture(scope="module")
def instances():
    return list(_instances())


def test_real_results_have_json_inputs_a_status_and_a_frame(instances):
    for r in instances:
        name = type(r).__name__
        json.dumps(plain(r.inputs), allow_nan=False)
        status = getattr(r, "status", None)
        assert status is None or isinstance(status, Status), name
        f = r.to_frame()
        assert len(f) >= 1 and len(f.columns) >= 1, name
        if "to_frame" not in vars(type(r)):  # the base's frame: one row of to_dict's scalars
            d = r.to_dict()
            assert list(f.index) == [0] and all(f[c][0] == d[c] or d[c] is None for c in f.columns), name
