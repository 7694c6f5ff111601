"""``fluidq network --simulate`` with the automatic horizon: where the first round (within its work budget of
200,000 batches) leaves the growth test without the power to decide, rounds of at least twice the horizon follow up
to the cap (AUTO_EXTEND_BATCHES / AUTO_EXTEND_VISITS a round), and where the cap stops them the verdict says how
long the runs the evidence asks for are.  Measured before the extension (seed 0, 4 runs): the fork-join of two
Splitwise Llama-2-70B stations at 0.7 and 0.9 req/s (mix capacity 0.85 req/s) both ended "unknown" after one
747 s round, and explicit horizons of 7,000 s and 3,000 s decide them stable and unstable."""
import pytest

from fluidq.network.toml import load_network, network_from_dict
from fluidq.results import Status
from fluidq.stability.network import (
    AUTO_BATCH_BUDGET,
    AUTO_EXTEND_BATCHES,
    check_network_stability,
    simulation_size,
)

PROFILE = "splitwise-llama2-70b-h100-tp8"


def _fork_join(rate):
    return network_from_dict({"name": "fj", "engines": {"planner": {"profile": PROFILE}, "worker": {"profile": PROFILE}},
                              "classes": [{"name": "agent", "rate_per_s": rate, "route": [
                                  {"engine": "planner", "prompt": 2048, "output": 256, "name": "plan"},
                                  {"fork": "f", "branches": [
                                      [{"engine": "worker", "prompt": 1024, "output": 128, "name": "w"}],
                                      [{"engine": "planner", "prompt": 3000, "output": 300, "name": "p2"}]]},
                                  {"join": "f"}]}]})


@pytest.mark.parametrize("rate, verdict", [(0.7, Status.STABLE), (0.9, Status.UNSTABLE)])
def test_the_automatic_horizon_extends_until_the_simulation_decides(rate, verdict):
    net = _fork_join(rate)
    r = check_network_stability(net, simulate=True, rng=0)
    assert r.status == verdict and r.decided_by == "simulation", r.reason
    size = simulation_size(net, r.simulation["horizon_s"], 4)
    assert AUTO_BATCH_BUDGET < size["batches"] <= AUTO_EXTEND_BATCHES * 1.001  # extended, within the cap


def test_a_shipped_case_the_first_round_left_open_is_checked():
    r = check_network_stability(load_network("plan_code_review"), simulate=True, rng=0)
    assert r.status == Status.STABLE and r.simulation["verdict"] == "stable", r.reason


def test_where_the_cap_stops_it_the_verdict_says_what_would_decide(capsys):
    net = _fork_join(0.7)
    first = check_network_stability(net, simulate=True, rng=0, max_horizon_s=1.0)  # the cap: the first round
    assert first.status == Status.UNKNOWN and first.simulation["horizon_s"] < 1000
    h = first.simulation["horizon_s"]
    assert f"the automatic horizon stops at {h:.4g} s" in first.reason and "max_horizon_s=" in first.reason
    assert "are what the evidence asks for to decide (give horizon_s to run longer)" in first.reason


def test_the_looks_of_the_sequential_test_are_stated():
    """The automatic extension stops at the first round that decides: a sequential test of at most
    ``max_looks = 1 + ceil(log2(cap / first horizon))`` looks at 95 %, each stated in the result."""
    import math

    net = _fork_join(0.9)
    r = check_network_stability(net, simulate=True, rng=0)
    looks, k = r.simulation["looks"], r.simulation["max_looks"]
    assert 2 <= looks <= k, (looks, k)  # the first round left it open (the module's docstring)
    first = check_network_stability(net, simulate=True, rng=0, max_horizon_s=1.0)
    assert first.simulation["looks"] == first.simulation["max_looks"] == 1  # the cap at the first round
    h0 = first.simulation["horizon_s"]
    cap = r.simulation["horizon_s"] if looks == k else None
    assert k >= 1 + math.ceil(math.log2(r.simulation["horizon_s"] / h0) - 1e-9)  # k bounds the doublings run
    if cap is not None:
        assert k == 1 + math.ceil(math.log2(cap / h0) - 1e-12)
    given = check_network_stability(net, simulate=True, rng=0, horizon_s=h0)
    assert given.simulation["looks"] == given.simulation["max_looks"] == 1  # a given horizon: one look
