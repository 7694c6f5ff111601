"""Verdicts near the virtual-station boundary (issue 13): a k_max that can never bind does not withhold the
fluid verdict, a simulation without power says "unknown" (never "stable"), and the fluid reasons say what
the paths tried were (one path of several; token sharing where the stations serve FIFO)."""
from __future__ import annotations

import pytest

from fluidq.network import Network, Station, check_network_stability
from fluidq.network.examples import llm_rybko_stolyar
from fluidq.network.stability import capacity_caveats, simulation_verdict
from fluidq.results import Status

# the virtual station of the LLM Rybko-Stolyar network: hops A.2 and B.2 (544 tokens each) are never
# served together in the fluid model, so the boundary is lambda (544 + 544) = 768 tokens/s
VIRTUAL_RATE = 768 / 1088


def _with_k_max(net, k_max):
    return Network(stations=[Station(name=s.name, engine=s.engine.with_(k_max=k_max), policy=s.policy,
                                     priority=s.priority) for s in net.stations],
                   classes=net.classes, name=f"{net.name} k_max={k_max}")


@pytest.mark.parametrize("factor", [1.05, 1.1])
@pytest.mark.parametrize("k_max", [None, 768, 10_000])
def test_llm_rybko_stolyar_past_the_virtual_station_is_unstable_with_a_k_max_that_cannot_bind(factor, k_max):
    net = llm_rybko_stolyar(rate_per_s=factor * VIRTUAL_RATE)
    if k_max is not None:
        net = _with_k_max(net, k_max)
    assert capacity_caveats(net) == []
    r = check_network_stability(net)
    assert r.status == Status.UNSTABLE and r.decided_by == "fluid:diverging_path", r.reason
    assert r.fluid.growth_factor > 1


def test_the_example_takes_k_max():
    from fluidq.network.examples import LLM_RS_VIRTUAL_RATE_PER_S

    assert LLM_RS_VIRTUAL_RATE_PER_S == VIRTUAL_RATE
    net = llm_rybko_stolyar(rate_per_s=1.05 * VIRTUAL_RATE, k_max=768)
    assert all(s.engine.k_max == 768 for s in net.stations)
    r = check_network_stability(net)
    assert r.status == Status.UNSTABLE and r.decided_by == "fluid:diverging_path"


def test_a_k_max_that_can_bind_is_still_a_caveat():
    net = _with_k_max(llm_rybko_stolyar(rate_per_s=1.05 * VIRTUAL_RATE), 767)
    assert any("engine k_max=767" in c for c in capacity_caveats(net))
    assert check_network_stability(net).status == Status.UNKNOWN


@pytest.mark.parametrize("factor", [1.05, 1.1])
def test_a_3000_s_simulation_near_the_boundary_is_never_stable(factor):
    """With the fluid verdict withheld (k_max = b_max - 1 binds) the simulation decides alone: 4 runs of
    3000 s, seeds 1 and 3, never "stable" (the old flat band called 1.05x with seed 3 stable: its interval
    ends below the band but is far too wide to tell growth of 1 % of the arrival rate from zero)."""
    for seed in (1, 3):
        net = _with_k_max(llm_rybko_stolyar(rate_per_s=factor * VIRTUAL_RATE), 767)
        r = check_network_stability(net, simulate=True, horizon_s=3000.0, replications=4, rng=seed)
        band = r.simulation["band_per_s"]
        assert band == pytest.approx(0.01 * 2 * factor * VIRTUAL_RATE)
        assert r.status != Status.STABLE and r.simulation["verdict"] != "stable", (seed, r.reason)
        assert "engine k_max=767" in r.reason  # the caveat is kept beside the simulation's words
        if r.status == Status.UNKNOWN:
            assert "cannot tell growth of" in r.reason or "growth below the band is growth" in r.reason
        if factor == 1.05 and seed == 3:  # the case of the issue
            lo, hi = r.simulation["ci"]
            assert lo < 0 < hi <= band  # what the old rule read as flat
            assert r.status == Status.UNKNOWN
            assert "the test cannot tell growth of 0.01482 requests/s" in r.reason
            assert "from zero at this horizon" in r.reason


@pytest.mark.parametrize("k_max", [None, 768])
def test_the_simulation_of_the_issue_beside_the_fluid_verdict(k_max):
    """LLM Rybko-Stolyar at 1.05x, 4 runs of 3000 s (seed 3), with and without k_max = b_max: the fluid path
    diverges and decides "unstable"; the simulation, which cannot tell, is reported beside it as unknown."""
    net = llm_rybko_stolyar(rate_per_s=1.05 * VIRTUAL_RATE)
    if k_max is not None:
        net = _with_k_max(net, k_max)
    r = check_network_stability(net, simulate=True, horizon_s=3000.0, replications=4, rng=3)
    assert r.status == Status.UNSTABLE and r.decided_by == "fluid:diverging_path", r.reason
    assert r.simulation["verdict"] == "unknown" and "NOTE" not in r.reason
    assert "grows by that factor every cycle" in r.reason


@pytest.mark.parametrize("factor", [1.05, 1.1])
def test_the_automatic_horizon_near_the_boundary_is_never_stable(factor):
    net = _with_k_max(llm_rybko_stolyar(rate_per_s=factor * VIRTUAL_RATE), 767)
    r = check_network_stability(net, simulate=True, rng=3)
    assert r.status != Status.STABLE and r.simulation["verdict"] != "stable", r.reason
    assert r.simulation["horizon_s"] >= 3000.0


def test_the_old_flat_band_no_longer_reads_a_wide_interval_as_stable():
    # LLM Rybko-Stolyar at 1.05x with k_max = 767, 4 runs of 3000 s (seed 3): [-0.0111, 0.0142] with the
    # band 0.0148 requests/s was called stable; its half-width is far above the band's half
    assert simulation_verdict(-0.0111, 0.0142, 0.0148) == Status.UNKNOWN
    assert simulation_verdict(-0.004, 0.004, 0.0148) == Status.STABLE


def test_default_horizon_is_chosen_from_the_band():
    from fluidq.network.stability import _default_horizon

    net = llm_rybko_stolyar(rate_per_s=1.05 * VIRTUAL_RATE)
    assert _default_horizon(net, 0.01) == pytest.approx(3000.0)  # max(3000 one-second batches, 20/0.01)
    assert _default_horizon(net, 1e-4) == pytest.approx(20 / 1e-4)


def test_diverging_path_beside_a_fifo_station_says_the_paths_share_tokens():
    net = Network.classical(
        stations=["S1", "S2", "S3"],
        routes={"A": [("S1", "1"), ("S2", "2")], "B": [("S2", "3"), ("S1", "4")],
                "C": [("S3", "5"), ("S2", "6"), ("S3", "7")]},
        rate_per_s=1.0, mean_times={"1": 0.1, "2": 0.6, "3": 0.1, "4": 0.6, "5": 0.2, "6": 0.05, "7": 0.2},
        priority={"S1": ["4", "1"], "S2": ["2", "3", "6"]})
    r = check_network_stability(net)
    assert r.status == Status.UNSTABLE and r.decided_by == "fluid:diverging_path"
    assert "weighted token sharing" in r.reason and "not FIFO" in r.reason and "'S3'" in r.reason


def test_unknown_fluid_verdict_of_fifo_stations_says_what_was_tried():
    from fluidq.network.examples import rybko_stolyar

    r = check_network_stability(rybko_stolyar(priority=None))
    assert r.status == Status.UNKNOWN and "weighted token sharing" in r.reason and "not FIFO" in r.reason


def test_non_unique_paths_are_called_one_path():
    from fluidq.fluid.stability import _path_caveats
    from fluidq.network.examples import rybko_stolyar

    fm = rybko_stolyar().flow
    words = _path_caveats(fm, True, diverging=True)
    assert "not unique" in words and "this diverging path is one fluid path" in words
    assert _path_caveats(fm, False, diverging=True) == ""  # strict priorities everywhere: nothing to add


def test_lu_kumar_diverging_path_is_called_one_of_several():
    """Lu-Kumar from fluid in class 1 has a causal allocation that diverges and another that drains (the
    phase start-up settles on the causal one, so only enumerating every structure of the mode finds it)."""
    from fluidq.network.examples import lu_kumar, rybko_stolyar

    r = check_network_stability(lu_kumar())
    assert r.status == Status.UNSTABLE and r.decided_by == "fluid:diverging_path" and r.fluid.non_unique
    assert "fluid paths are not unique here" in r.reason
    assert "this diverging path is one fluid path, and another from the same state may drain" in r.reason
    rs = check_network_stability(rybko_stolyar())  # its phases have one consistent allocation each
    assert rs.status == Status.UNSTABLE and not rs.fluid.non_unique and "not unique" not in rs.reason


def test_a_diverging_path_too_large_to_check_for_others_says_so():
    from fluidq.fluid.stability import MAX_UNIQUENESS_BUFFERS

    n = MAX_UNIQUENESS_BUFFERS  # light feedforward traffic on a third station: buffers 4 + n
    routes = {"A": [("S1", "1"), ("S2", "2")], "B": [("S2", "3"), ("S1", "4")],
              "C": [("S3", f"c{i}") for i in range(n)]}
    times = {"1": 0.1, "2": 0.6, "3": 0.1, "4": 0.6, **{f"c{i}": 0.05 for i in range(n)}}
    net = Network.classical(stations=["S1", "S2", "S3"], routes=routes, rate_per_s=1.0, mean_times=times,
                            priority={"S1": ["4", "1"], "S2": ["2", "3"],
                                      "S3": [f"c{i}" for i in range(n - 1, -1, -1)]})
    r = check_network_stability(net)
    assert r.status == Status.UNSTABLE and r.decided_by == "fluid:diverging_path", r.reason
    assert f"whether other fluid paths exist was not checked ({n + 4} buffers > {n})" in r.reason
    assert "this diverging path is one fluid path" in r.reason


def test_a_flat_simulation_does_not_overrule_a_diverging_idealised_model():
    """At 1.02x of the virtual station the drift is below 1 % of the arrival rate: the growth test (seed 3,
    4 x 3000 s) sees no growth of the band, which does not exclude slower growth; with the idealised fluid
    model diverging (k_max = b_max - 1 withholds it) the verdict stays unknown."""
    net = _with_k_max(llm_rybko_stolyar(rate_per_s=1.02 * VIRTUAL_RATE), 767)
    r = check_network_stability(net, simulate=True, horizon_s=3000.0, replications=4, rng=3)
    assert r.simulation["verdict"] == "stable" and r.fluid.status == Status.UNSTABLE
    assert r.status == Status.UNKNOWN and r.decided_by is None
    assert "the idealised fluid model above diverges" in r.reason and "is not excluded" in r.reason


def test_a_lyapunov_certificate_beside_fifo_stations_says_it_covers_fifo():
    from fluidq.network.examples import rybko_stolyar

    r = check_network_stability(rybko_stolyar(priority=None, rate_per_s=0.5))
    assert r.status == Status.STABLE and r.decided_by == "fluid:lyapunov"
    assert "covers FIFO as the stations serve them" in r.reason and "weighted tokens" in r.reason
    strict = check_network_stability(rybko_stolyar(priority="exit", rate_per_s=0.5))
    assert "FIFO" not in strict.reason


def test_a_diverging_path_with_too_many_structures_to_check_says_so():
    # twelve hops shared FIFO at a third station: 2^12 cut structures a mode, past the solving budget
    from fluidq.fluid.stability import MAX_UNIQUENESS_STRUCTURES

    routes = {"A": [("S1", "1"), ("S2", "2")], "B": [("S2", "3"), ("S1", "4")],
              "C": [("S3", f"c{i}") for i in range(12)]}
    times = {"1": 0.1, "2": 0.6, "3": 0.1, "4": 0.6, **{f"c{i}": 0.05 for i in range(12)}}
    net = Network.classical(stations=["S1", "S2", "S3"], routes=routes, rate_per_s=1.0, mean_times=times,
                            priority={"S1": ["4", "1"], "S2": ["2", "3"]})
    r = check_network_stability(net)
    assert r.status == Status.UNSTABLE and r.decided_by == "fluid:diverging_path"
    assert (f"whether other fluid paths exist was not checked (more than {MAX_UNIQUENESS_STRUCTURES} cut "
            "structures to solve): this diverging path is one fluid path") in r.reason
    assert "weighted token sharing" in r.reason  # and what the paths did at the FIFO station


def test_the_cli_on_the_issue_case_file_with_k_max_at_b_max(tmp_path, capsys):
    """`fluidq network CASE --simulate` on the shipped LLM Rybko-Stolyar case at 1.05x with k_max = 768 on
    both engines (what the issue ran): unstable, decided by the fluid path, not "stable"."""
    import json

    from fluidq.cli import main
    from fluidq.network.toml import CASES_DIR

    text = (CASES_DIR / "llm_rybko_stolyar.toml").read_text()
    text = text.replace("\nb_max = 768\n", "\nb_max = 768\nk_max = 768\n")
    text = text.replace("rate_per_s = 1.1368421052631579", f"rate_per_s = {1.05 * VIRTUAL_RATE!r}")
    assert text.count("k_max = 768") == 2 and text.count(repr(1.05 * VIRTUAL_RATE)) == 2
    case = tmp_path / "rs.toml"
    case.write_text(text)
    assert main(["network", str(case), "--simulate", "--horizon", "3000", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "unstable" and out["decided_by"] == "fluid:diverging_path"
    assert out["simulation"]["verdict"] != "stable"
