"""Plots write files; results convert to JSON."""
from __future__ import annotations

import json

import pytest

from fluidq.fluid import fluid_path, fluid_stability
from fluidq.network import check_network_stability, simulate_network
from fluidq.network.examples import llm_rybko_stolyar, rybko_stolyar


def test_plots_write_files(tmp_path):
    net = llm_rybko_stolyar()
    p = fluid_path(net, {"A.1": 6400.0}, cycles=3)
    assert p.plot(path=tmp_path / "fluid.png").endswith("fluid.png")
    from fluidq.plotting.network import plot_fluid_path

    plot_fluid_path(p, by="class", log=True, path=tmp_path / "fluid_class.png")
    r = simulate_network(net, horizon_s=60.0, rng=1, initial={"A.1": 10})
    r.plot(path=tmp_path / "sim.png")
    from fluidq.plotting.network import plot_network_sim

    plot_network_sim(r, tokens=False, path=tmp_path / "sim_req.png")
    net.plot(path=tmp_path / "net.png")
    v = check_network_stability(rybko_stolyar(tokens_per_unit=10), simulate=True, horizon_s=50.0, replications=2, rng=1)
    v.plot(path=tmp_path / "verdict.png")
    for name in ("fluid", "fluid_class", "sim", "sim_req", "net", "verdict"):
        assert (tmp_path / f"{name}.png").stat().st_size > 2000
    ax = net.plot()  # no path: the axes come back, nothing is written
    assert hasattr(ax, "figure")


def test_results_are_json_ready():
    net = llm_rybko_stolyar()
    for obj in (fluid_path(net, {"A.1": 64.0}), fluid_stability(net),
                simulate_network(net, horizon_s=20.0, rng=2),
                check_network_stability(rybko_stolyar(tokens_per_unit=10), simulate=True, horizon_s=30.0,
                                        replications=2, rng=4)):
        d = obj.to_dict()
        json.dumps(d)
    v = fluid_stability(net).to_dict()
    assert v["status"] == "unstable" and v["certificate"] == "diverging_path"
    assert v["peak_growth"] == pytest.approx(4.135, abs=0.01)
