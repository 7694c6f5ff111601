"""One entry point for every verdict (issue 14): ``check_stability(engine | network, ..., method=)``.

``method="analytic"`` (the default) is the analytic verdict, ``method="auto"`` lets seeded replications decide
only where it is unknown (as ``fluidq check --method auto``), ``method="simulation"`` lets them decide (an
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
    ana = fluidq.check_stability(ENGINE, W.with_rate(12.0), "sarathi")
    assert ana == fluidq.check_stability(ENGINE, W.with_rate(12.0), "sarathi", method="analytic")
    assert ana.method == "closed_form" and ana.replications is None and "simulation" not in ana.to_dict()
    # where the analysis decides, "auto" is its verdict, labelled as decided by it
    auto = fluidq.check_stability(ENGINE, W.with_rate(12.0), "sarathi", method="auto")
    assert auto.status is ana.status and auto.reason == ana.reason and auto.inputs["decided_by"] == "analytic"


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


# an engine whose KV cache binds, at 0.78 of the capacity's fluid estimate: the analysis proves nothing (unknown)
KV_ENGINE = fluidq.Engine(batch_time=fluidq.Affine(c=0.02, a=2e-4), b_max=1024, kv_capacity_tokens=30_000)
KV_ARGV = ["--model", "affine", "--c-ms", "20", "--a-ms", "0.2", "--b-max", "1024", "--kv-capacity", "30000",
           "--prompt", "600", "--output", "200"]


def test_auto_is_one_method_on_both_faces(capsys):
    """The library's method="auto" and ``fluidq check --method auto`` (the command line's default) give the same
    verdict where the analysis is inconclusive: both let the same seeded replications decide (until 2026-12-07 the
    library's "auto" stayed analytic, unknown, while the command line simulated)."""
    from fluidq.cli import main

    w1 = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)
    rate = float(f"{0.78 * fluidq.max_throughput(KV_ENGINE, w1).work_conserving_tokens_per_s / 800:.6g}")
    w = w1.with_rate(rate)
    ana = fluidq.check_stability(KV_ENGINE, w, "sarathi")
    assert ana.status is Status.UNKNOWN
    lib = fluidq.check_stability(KV_ENGINE, w, "sarathi", method="auto")
    assert lib.status is not Status.UNKNOWN and lib.method == "simulation"
    assert lib.inputs["decided_by"] == "simulation" and lib.reason.startswith("decided by simulation")
    assert main(["check", *KV_ARGV, "--rate", repr(rate), "--policy", "sarathi", "--method", "auto",
                 "--json"]) in (0, None)
    cli = json.loads(capsys.readouterr().out)
    assert (cli["status"], cli["method"]) == (lib.status.value, lib.method)
    assert cli["simulation"]["slope_tokens_per_s"] == lib.replications.slope_tokens_per_s  # the same seeded runs


def test_auto_on_a_network_simulates_only_where_the_analysis_is_open():
    decided = fluidq.check_stability(_net(60.0), method="auto", horizon_s=60.0, replications=3, rng=2)
    assert decided.status is Status.UNSTABLE and decided.decided_by == "load" and decided.simulation is None
    with pytest.raises(ParameterError, match="simulate"):
        fluidq.check_stability(_net(1.0), method="auto", simulate=True)
    with pytest.raises(ParameterError, match="horizon_s"):  # an engine's auto takes decide_stability's arguments
        fluidq.check_stability(ENGINE, W, "sarathi", method="auto", horizon_s=10.0)
