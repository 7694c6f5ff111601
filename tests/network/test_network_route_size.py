"""Long routes (issue 13): a 2,000-hop network route is answered, with and without simulation, and sizes that
cannot be run are refused before any simulation with the size they would have.  How long these take (within
seconds, building a route linear in its hops) is measured by benchmarks/bench_route_size.py, not here."""
from __future__ import annotations

import pytest

from fluidq.errors import ParameterError
from fluidq.network import Hop, Network, RequestClass, Station, check_network_stability
from fluidq.network.examples import llm_rybko_stolyar
from fluidq.network.model import MAX_HOPS
from fluidq.network.stability import (
    AUTO_BATCH_BUDGET,
    AUTO_EXTEND_BATCHES,
    AUTO_EXTEND_VISITS,
    MAX_REPLICATIONS,
    min_route_s,
    simulation_size,
)
from fluidq.results import Status

# the route, written once for this test and benchmarks/bench_route_size.py (tests/network/long_route.py)
from long_route import E, long_route, long_route_case


@pytest.mark.parametrize("priority", [False, True])
def test_a_2000_hop_route_is_judged(priority):
    net = long_route(2000, priority=priority)
    r = check_network_stability(net)
    assert net.loads() == pytest.approx({"E1": 0.25, "E2": 0.25})
    if priority:  # each station serves its hops in route order: the buffers order, and that proves it stable
        assert r.status == Status.STABLE and "buffers can be ordered" in r.reason
    else:  # no priority-layer order, and 2,000 buffers are too many for the fluid-path search: no proof
        assert r.status == Status.UNKNOWN and "fluid-path search skipped: 2000 buffers" in r.reason


def test_a_2000_hop_route_from_a_case_file_through_the_cli(tmp_path, capsys):
    from fluidq.cli import main

    from fluidq.network.toml import load_network

    case = long_route_case(tmp_path, 2000)
    net = load_network(case)  # the route long_route builds: 2,000 hops, each engine at load 0.25
    assert len(net.hops) == 2000 and net.loads() == pytest.approx({"E1": 0.25, "E2": 0.25})
    assert main(["network", str(case)]) == 0
    assert "verdict: unknown" in capsys.readouterr().out


def test_a_long_route_is_built():
    # duplicate checks by list.count were quadratic (30,000 hops took about 20 s): bench_route_size.py times it
    net = long_route(30_000)
    assert len(net.hops) == 30_000 and net.loads()["E1"] == pytest.approx(0.25)


def test_more_hops_than_the_limit_are_refused_with_the_count(monkeypatch):
    import fluidq.network.model as model

    assert MAX_HOPS == 100_000
    monkeypatch.setattr(model, "MAX_HOPS", 50)  # the same check, on a route cheap to build
    hops = [Hop(engine="E1", prompt_tokens=1, output_tokens=0) for _ in range(51)]
    with pytest.raises(ParameterError, match="routes of at most 50 hops in all.*would have 51 hops"):
        Network(stations=[Station(name="E1", engine=E)],
                classes=[RequestClass(name="A", rate_per_s=1e-6, route=hops)])


def test_simulating_a_2000_hop_route_says_why_it_cannot_tell():
    """The growth test asks for a 6e5 s horizon (1 % of an arrival rate of 0.0096/s); the first round (within its
    work budget) is shorter than a request's passage through its 2,000 hops (22,000 s), so the rounds after it
    extend up to the automatic cap (5e6 hop visits a round: 65,104 s) and stop there, saying how long the runs the
    evidence asks for are: "unknown", never "unstable"."""
    net = long_route(2000)
    assert min_route_s(net) == pytest.approx(2000 * (1 + 10))
    r = check_network_stability(net, simulate=True, rng=1)
    assert r.status == Status.UNKNOWN and r.simulation["verdict"] == "unknown"
    h = r.simulation["horizon_s"]
    size = simulation_size(net, h, 4)
    assert size["visits"] <= AUTO_EXTEND_VISITS * 1.001 and size["batches"] <= AUTO_EXTEND_BATCHES
    assert h > min_route_s(net) and size["batches"] > AUTO_BATCH_BUDGET  # past the filling, past the first budget
    assert f"the automatic horizon stops at {h:.4g} s" in r.reason and "are what the evidence asks for" in r.reason


def _no_simulation(monkeypatch):
    """Make every entry of the network simulator raise: a refusal must come before any of them runs."""
    import fluidq.sim.network as sn

    def ran(*a, **kw):
        raise AssertionError("the network simulator ran before the size was refused")

    for name in ("simulate_network", "replicate_network", "_run", "_run_kernel"):
        monkeypatch.setattr(sn, name, ran)


def test_a_given_horizon_too_large_to_simulate_is_refused_before_work(monkeypatch):
    net = llm_rybko_stolyar()
    _no_simulation(monkeypatch)
    with pytest.raises(ParameterError, match="horizon_s.*batches"):
        check_network_stability(net, simulate=True, horizon_s=1e12)
    with pytest.raises(ParameterError, match="replications"):
        check_network_stability(net, simulate=True, replications=MAX_REPLICATIONS + 1)
    size = simulation_size(net, 1e12, 4)
    assert size["batches"] == pytest.approx(4 * (1e12 * 2 + 2))  # one 1 s batch per second per engine


def test_min_route_time_of_the_llm_rybko_stolyar_network():
    # each hop: its prompt in one batch (<= 768 tokens), then 32 decode batches, one second each
    assert min_route_s(llm_rybko_stolyar()) == pytest.approx(2 * 33.0)


def test_simulation_growth_refuses_sizes_before_work(monkeypatch):
    from fluidq.network.stability import simulation_growth

    net = llm_rybko_stolyar()
    _no_simulation(monkeypatch)
    with pytest.raises(ParameterError, match="horizon_s"):
        simulation_growth(net, horizon_s=1e12)
    with pytest.raises(ParameterError, match="replications"):
        simulation_growth(net, horizon_s=10.0, replications=10 ** 9)


@pytest.mark.parametrize("kw, name", [({"horizon_s": 1e-300}, "horizon_s"), ({"rng": -1}, "rng"),
                                      ({"rng": "x"}, "rng")])
def test_bad_simulation_inputs_are_refused_naming_them(kw, name):
    # a horizon shorter than a batch gave numpy's LinAlgError from the slope fit; a bad rng a ValueError
    with pytest.raises(ParameterError, match=name):
        check_network_stability(llm_rybko_stolyar(), simulate=True, **kw)


def test_a_simulation_that_saw_no_traffic_is_not_called_stable():
    # four identical empty runs (no arrival in 200 s at 2e-6 req/s) were "flat on this horizon": stable
    net = llm_rybko_stolyar(rate_per_s=1e-6, k_max=767)  # k_max binds: the simulation alone decides
    r = check_network_stability(net, simulate=True, horizon_s=200.0, rng=1)
    assert r.status == Status.UNKNOWN and r.simulation["verdict"] == "unknown"
    assert "too little traffic to call it stable" in r.reason
