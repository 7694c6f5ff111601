"""The result protocol of the core layer (issue 14): one base, ``fluidq.results.Result`` -- ``status`` a
``Status`` where a result is a verdict or a search, ``inputs``, ``to_dict()``, ``to_frame()`` and
``plot()`` where a figure means something.

Every ``*Result`` class of fluidq is on the base, and so are the results listed in ``OTHER_RESULTS``; which
of them have a ``status`` (a verdict or a search) and a ``plot`` is listed here by name, each on purpose,
and every class is checked against what its entry says.  ``NOT_YET`` names results left off (none since
SimulatedRegion moved on, 2026-12-06: keep it so)."""
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
    "fluidq.validate.case_rows.CaseResult": ("plot",),
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
    # the per-ray search outcomes are ``ray_status``; ``status`` is the least resolved ray's, one Status
    "fluidq.stability.simulated_region.SimulatedRegion": ("status",),
}
#: results not (yet) on the base: none, keep it so (a class listed here fails the test once it is on the base)
NOT_YET: set = set()


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


def _region(*rays):
    from fluidq.stability.simulated_region import SimulatedRegion

    n = len(rays)
    z = np.zeros(n)
    return SimulatedRegion(label="p", request_shapes=np.ones((n, 2), dtype=int), low_rate_per_s=z, high_rate_per_s=z,
                           points=np.zeros((n, 2)), engine_scale=z, ray_status=tuple(rays), inputs={"horizon_s": 1.0})


CAP = " (bracket capped at the engine's region)"


def _capped(outcome):
    from fluidq.stability.simulated_region import RayStatus

    return RayStatus(outcome, capped=True)


@pytest.mark.parametrize("rays, status", [
    ((Status.RESOLVED,), Status.RESOLVED),
    ((Status.RESOLVED, _capped("resolved")), Status.RESOLVED),  # a capped bracket is resolved
    ((Status.RESOLVED, _capped("inconclusive"), Status.RESOLVED), Status.INCONCLUSIVE),
    ((Status.INCONCLUSIVE, Status.UNBRACKETED, _capped(Status.RESOLVED)), Status.UNBRACKETED),
    (("unbracketed", "inconclusive"), Status.UNBRACKETED),
])
def test_a_simulated_region_status_is_its_least_resolved_ray(rays, status):
    sr = _region(*rays)
    assert sr.status is status and isinstance(sr, Result)
    # the per-ray outcomes stay apart, and the JSON keeps them under "status" (fluidq region --simulate)
    d = sr.to_dict()
    assert d["status"] == [str(r) for r in rays] and sr.ray_status == tuple(rays)
    assert json.loads(json.dumps(d))["status"] == d["status"]
    assert [r.endswith(CAP) for r in d["status"]] == [r.capped for r in sr.ray_status]
    assert sr.to_frame()["label"][0] == "p"


def test_a_region_status_is_read_from_its_rays_outcomes_not_their_text():
    """The region's status comes from each ray's ``outcome``; a ray given as free text is refused, naming
    ``ray_status``, rather than parsed (the status was the text before its first " (")."""
    from fluidq.errors import ParameterError

    assert [(r.outcome, r.capped) for r in _region(_capped("inconclusive"), "resolved").ray_status] == \
        [(Status.INCONCLUSIVE, True), (Status.RESOLVED, False)]
    for bad in ("inconclusive" + CAP, "resolved (my note)", "stable", 3):
        with pytest.raises(ParameterError, match="ray_status"):
            _region(Status.RESOLVED, bad)


def test_a_status_is_a_str_for_every_result():
    """A Status is a ``str`` (``Status.STABLE == "stable"``) for every result: indexing and iterating it were
    refused for all of them (2026-12-06) to catch one class's old use (``SimulatedRegion.status`` was the
    per-ray tuple, now ``ray_status``)."""
    assert Status.STABLE[:3] == "sta" and list(Status.INCONCLUSIVE)[:2] == ["i", "n"]
    sr = _region(Status.RESOLVED, Status.INCONCLUSIVE)
    assert sr.status[0] == "i" and [str(r) for r in sr.ray_status] == ["resolved", "inconclusive"]
    # what a verdict is used for is unchanged
    s = sr.status
    assert s == "inconclusive" and str(s) == s.value == "inconclusive" and f"{s}" == "inconclusive"
    assert json.dumps({"s": s}) == '{"s": "inconclusive"}' and "conclusive" in s and bool(s)
    assert Status(s) is s and {s: 1}["inconclusive"] == 1 and list(Status)[0] is Status.STABLE


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
    net, pd_args = _network_and_tandem(e, w)
    yield fluidq.simulate_network(net, horizon_s=5.0, rng=2)
    from fluidq.capacity.disaggregated_sim import simulate_disaggregated

    yield simulate_disaggregated(e, e, w, horizon_s=5.0, seed=1, **pd_args)
    yield _region(Status.RESOLVED, Status.INCONCLUSIVE)


def _network_and_tandem(e, w):
    from fluidq.batchtime.comm import Link
    from fluidq.network import Hop, Network, RequestClass, Station

    net = Network(stations=[Station(name="P", engine=e, policy="vllm"), Station(name="D", engine=e)],
                  classes=[RequestClass(name="A", rate_per_s=2.0, route=[Hop(engine="P", prompt_tokens=100, output_tokens=1),
                                                                         Hop(engine="D", prompt_tokens=1, output_tokens=20)])])
    return net, {"n_prefill": 1, "n_decode": 2, "link": Link(bandwidth_gbps=10.0, latency_us=5.0),
                 "kv_bytes_per_token": 1e5}


@pytest.mark.parametrize("method", ["python", "auto"])
def test_a_network_run_says_what_it_ran(method):
    """NetworkSimResult.inputs: the network as its to_dict() (stations with engines and policies), the horizon
    and the seed -- from either loop (the Python path and the compiled one build the result apart)."""
    from fluidq import Engine, Poisson, Staircase, Workload

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256)
    net, _ = _network_and_tandem(e, Workload(arrival=Poisson(rate_per_s=2.0), prompt_tokens=100, output_tokens=20))
    r = fluidq.simulate_network(net, horizon_s=5.0, rng=7, method=method)
    inp = json.loads(json.dumps(r.inputs, allow_nan=False))
    assert inp == {"network": json.loads(json.dumps(net.to_dict())), "horizon_s": 5.0, "seed": r.seed}
    assert [s["policy"] for s in inp["network"]["stations"]] == ["vllm", "sarathi"]
    assert inp["network"]["stations"][0]["engine"] == e.to_dict()
    assert "inputs" not in r.to_dict() and "network" not in r.to_dict()  # the run's JSON is as before


def test_a_tandem_run_and_a_work_conservation_search_say_what_they_ran():
    from fluidq import Engine, Poisson, Staircase, Workload
    from fluidq.capacity.disaggregated_sim import simulate_disaggregated

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=20_000)
    d = e.with_(b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=2.0), prompt_tokens=100, output_tokens=20)
    _, pd_args = _network_and_tandem(e, w)
    r = simulate_disaggregated(e, d, w, horizon_s=5.0, seed=3, links=2, **pd_args)
    inp = json.loads(json.dumps(r.inputs, allow_nan=False))
    assert inp == {"prefill": e.to_dict(), "decode": d.to_dict(), "n_prefill": 1, "n_decode": 2,
                   "link": {"bandwidth_gbps": 10.0, "latency_us": 5.0, "name": "link"}, "links": 2,
                   "kv_bytes_per_token": 1e5, "workload": json.loads(json.dumps(w.to_dict())), "horizon_s": 5.0,
                   "seed": 3}
    assert set(r.to_dict()) == {f.name for f in dataclasses.fields(r)} - {"inputs"} | {"growth_share"}

    wc = fluidq.check_work_conserving("vllm", b_max_values=(2, 5), max_requests=2)
    assert wc.inputs["policy"] == "vllm" and wc.inputs["b_max_values"] == [2, 5] and wc.inputs["max_requests"] == 2
    assert "priority='prefill'" in wc.inputs["policy_repr"] and "inputs" not in wc.to_dict()
    json.dumps(wc.inputs, allow_nan=False)
    hand = type(wc)("p", True, None, None, 0, "by hand")
    assert hand.inputs == {"policy": "p"}


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
