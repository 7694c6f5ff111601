"""One entry point for every verdict (issue 14): ``check_stability(engine | network, ..., method=)``.

``method="auto"`` is the analytic verdict, ``method="simulation"`` lets seeded replications decide (an
engine through ``fluidq.replicate``, a network through ``check_network_stability(simulate=True)``); bad
methods and stray arguments are refused naming them; ``fluidq.stability.stability_threshold`` is the one
threshold entry point; no module of ``fluidq.stability`` dispatches on a class-name string.
"""
import ast
import json
from pathlib import Path

import pytest

import fluidq
from fluidq.errors import ParameterError
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.results import Result, Status
from fluidq.stability import CHECK_METHODS, StabilityResult
from fluidq.stability.network import NetworkStabilityResult

ENGINE = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.02, b0=4), b_max=8)  # b_max/t(b_max) = 160 tokens/s
W = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=2, output_tokens=fluidq.Fixed(n=2))


def _net(rate):
    return Network(stations=[Station(name="E", engine=ENGINE)], classes=[RequestClass(
        name="c", rate_per_s=rate, route=[Hop(engine="E", prompt_tokens=2, output_tokens=2)])])


def test_the_methods_are_named():
    assert CHECK_METHODS == ("auto", "analytic", "simulation")
    auto = fluidq.check_stability(ENGINE, W.with_rate(12.0), "sarathi")
    assert auto == fluidq.check_stability(ENGINE, W.with_rate(12.0), "sarathi", method="auto")
    assert auto == fluidq.check_stability(ENGINE, W.with_rate(12.0), "sarathi", method="analytic")
    assert auto.method == "closed_form" and auto.replications is None and "simulation" not in auto.to_dict()


@pytest.mark.parametrize(("rate", "want"), [(12.0, Status.STABLE), (60.0, Status.UNSTABLE)])
def test_simulation_decides_an_engine_and_reports_the_analytic_load(rate, want):
    r = fluidq.check_stability(ENGINE, W.with_rate(rate), "sarathi", method="simulation", horizon_s=60.0,
                               n_replications=4, rng=1)
    auto = fluidq.check_stability(ENGINE, W.with_rate(rate), "sarathi")
    assert isinstance(r, StabilityResult) and r.method == "simulation"
    assert r.status is want is auto.status  # load 0.3 / 1.5: simulation and Theorem 2 agree
    assert r.load == auto.load and r.capacity_tokens_per_s == auto.capacity_tokens_per_s
    assert r.replications.n_replications == 4 and r.replications.horizon_s == 60.0
    assert r.replications.status is r.status and r.reason.startswith("simulation: ")
    d = json.loads(json.dumps(r.to_dict()))
    assert d["method"] == "simulation" and d["simulation"]["n_replications"] == 4


def test_simulation_of_a_network_is_check_network_stability_with_simulate():
    r = fluidq.check_stability(_net(60.0), method="simulation", horizon_s=60.0, replications=3, rng=2)
    assert isinstance(r, NetworkStabilityResult) and r.simulation is not None and r.inputs["simulate"] is True
    assert r.status is Status.UNSTABLE
    plain = fluidq.check_stability(_net(60.0))
    assert plain.simulation is None and plain.status is Status.UNSTABLE and plain.decided_by == "load"


def test_bad_methods_and_stray_arguments_are_refused_naming_them():
    with pytest.raises(ParameterError, match="method"):
        fluidq.check_stability(ENGINE, W, "sarathi", method="dtmc")
    with pytest.raises(ParameterError, match="method"):
        fluidq.check_stability(_net(1.0), method=None)
    with pytest.raises(ParameterError, match="horizon_s"):  # was silently ignored for an engine
        fluidq.check_stability(ENGINE, W, "sarathi", horizon_s=10.0)
    with pytest.raises(ParameterError, match="simulate"):
        fluidq.check_stability(_net(1.0), method="simulation", simulate=False)
    with pytest.raises(ParameterError, match="n_engines"):
        fluidq.check_stability(ENGINE, W, "sarathi", method="simulation", n_engines=2)
    with pytest.raises(ParameterError, match="engine"):
        fluidq.check_stability("engine", W, "sarathi")


def test_one_threshold_entry_point():
    from fluidq.dtmc.threshold import stability_threshold
    from fluidq.stability import stability_threshold as via_stability

    assert via_stability is stability_threshold is fluidq.stability_threshold


def test_verdicts_follow_the_result_protocol():
    for r in (fluidq.check_stability(ENGINE, W.with_rate(12.0), "sarathi"), fluidq.check_stability(_net(1.0)),
              fluidq.check_stability(_net(1.0)).fluid):
        assert isinstance(r, Result) and isinstance(r.status, Status) and isinstance(r.inputs, dict)
        json.dumps(r.to_dict())
        json.dumps(r.inputs)
        frame = r.to_frame()
        assert len(frame) == 1 and frame["status"][0] == r.status.value
    net = fluidq.check_stability(_net(1.0))
    assert net.inputs["network"]["stations"][0]["name"] == "E" and net.fluid.inputs["tolerance"] == 0.02


def _compares_a_class_name(node) -> bool:
    names = [n for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr in ("__name__", "__qualname__")]
    return any(isinstance(getattr(n, "value", None), (ast.Call, ast.Attribute)) for n in names)


def test_no_dispatch_on_class_name_strings_in_stability():
    # issue 14: stability/__init__.py used to branch on type(x).__name__ == "..."; verdicts dispatch on types
    root = Path(fluidq.__file__).parent / "stability"
    hits = []
    for f in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.Compare, ast.If, ast.IfExp, ast.Match)) and _compares_a_class_name(
                    node.test if isinstance(node, (ast.If, ast.IfExp)) else node):
                hits.append(f"{f.name}:{node.lineno}")
    assert hits == []
