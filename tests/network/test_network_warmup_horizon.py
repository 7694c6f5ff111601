"""`fluidq network --simulate` sized its automatic runs from t(b_max) at zero context and 4 x the least route
time from t(1) (review 2026-12-06): on a fork-join agent (tests/network/data/fj_agent.toml: a 2048/256 plan on
a 70B planner, three 1024/128 tool calls on 7B engines, a 3000/300 answer; k_max 256) at load 0.2 it ran 4 x
246 s and said "unstable (decided by simulation)" (growth 0.039/s, CI [0.024, 0.055]), while 3000 s runs
were flat.  Seeded runs (32 x 246 s, seed 11) give a mean slope of 0.006 +- 0.008/s after the first quarter,
sd 0.047 per run: the 246 s runs had no power to tell 1 % growth (0.0044/s) from zero, and four of them
happened to agree.  Now the horizon covers 20 route sojourns at the offered loads (route_sojourn_s: 25 s
here, 34 s measured) and the first three sojourns are discarded."""
from pathlib import Path

import pytest

from fluidq.network.toml import load_network
from fluidq.results import Status
from fluidq.stability.network import WARMUP_SOJOURNS, check_network_stability, min_route_s, route_sojourn_s

CASE = Path(__file__).parent / "data" / "fj_agent.toml"


def test_the_sojourn_estimate_reads_the_decodes():
    net = load_network(CASE).at_load(0.2)
    # the least route time counts t(1) per iteration; the sojourn the batch the load implies
    assert route_sojourn_s(net) > min_route_s(net)
    # the estimate is 25.4 s (min_route_s 17.5 s); the simulated mean sojourn 34.5 s over 16 x 800 s runs
    assert 15.0 < route_sojourn_s(net) < 60.0


def test_the_fork_join_agent_at_0_2_is_not_called_unstable():
    r = check_network_stability(load_network(CASE).at_load(0.2), simulate=True, rng=0)
    assert r.status != Status.UNSTABLE, r.reason
    assert r.simulation["horizon_s"] >= WARMUP_SOJOURNS * route_sojourn_s(load_network(CASE).at_load(0.2)) * 0.99


@pytest.mark.parametrize("load", [1.3])
def test_an_overloaded_agent_still_grows_in_simulation(load):
    r = check_network_stability(load_network(CASE).at_load(load), simulate=True, rng=0)
    assert r.status == Status.UNSTABLE
    assert r.simulation["verdict"] == "unstable", r.reason
