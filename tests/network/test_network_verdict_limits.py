"""Verdicts where the idealised model (capacity ``b_max / t(b_max)``, fixed splits) does not describe the
network: engines with ``k_max``, a context-aware batch time or a KV-cache limit, and JSQ routers that
share an engine with other traffic.  Only an overload at the upper-bound capacities (at the best split)
may be claimed; the rest is "unknown" unless simulation decides."""
from __future__ import annotations

import pytest

from fluidq import Affine, Engine, Staircase
from fluidq.batchtime.models import ContextAware
from fluidq.network import (
    Hop,
    Network,
    RequestClass,
    Router,
    Station,
    check_network_stability,
)
from fluidq.network.stability import capacity_caveats, simulation_verdict
from fluidq.results import Status

STAIR = Staircase(c=0.01128, a=0.03547, b0=128)


def _one(engine, rate, prompt=100, output=100):
    return Network(stations=[Station(name="E", engine=engine)], classes=[RequestClass(
        name="c", rate_per_s=rate, route=[Hop(engine="E", prompt_tokens=prompt, output_tokens=output)])])


def test_k_max_withholds_the_stable_claim_and_simulation_decides():
    import fluidq

    eng = Engine(batch_time=STAIR, b_max=512, k_max=8)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=10.0), prompt_tokens=100, output_tokens=100)
    cap = fluidq.max_throughput(eng, w)
    below = check_network_stability(_one(eng, 0.6 * cap.requests_per_s))  # below the k_max capacity: no claim
    assert below.status == Status.UNKNOWN and below.decided_by is None
    assert "k_max=8" in below.reason and "upper bound" in below.reason
    net = _one(eng, 10.0)  # load 0.6 at b_max/t(b_max), but above the k_max capacity (about 1.7 req/s)
    assert net.loads()["E"] < 1 and cap.requests_per_s < 10.0
    r = check_network_stability(net)  # loaded against the k_max capacity (was "unknown" before 2026-12-06)
    assert r.status == Status.UNSTABLE and r.decided_by == "load"
    assert "k_max=8" in r.reason and "k_max capacity" in r.reason
    s = check_network_stability(net, simulate=True, horizon_s=150.0, replications=3, rng=1)
    assert s.status == Status.UNSTABLE and s.decided_by == "load" and s.simulation["verdict"] == "unstable"


def test_k_max_still_proves_an_overload():
    r = check_network_stability(_one(Engine(batch_time=STAIR, b_max=512, k_max=8), 40.0))
    assert r.status == Status.UNSTABLE and r.decided_by == "load" and "k_max=8" in r.reason


def test_context_aware_batch_time_and_kv_limit_are_caveats():
    ca = Engine(batch_time=ContextAware(base=STAIR, kv_s_per_token=2e-6), b_max=512)
    r = check_network_stability(_one(ca, 2.735, 1000, 100))
    assert r.status == Status.UNKNOWN and "context-aware" in r.reason
    kv = Engine(batch_time=STAIR, b_max=512, kv_capacity_tokens=1000)
    r = check_network_stability(_one(kv, 5.0))
    assert r.status == Status.UNKNOWN and "kv_capacity_tokens=1000" in r.reason and r.simulation is None
    tiny = Engine(batch_time=STAIR, b_max=512, kv_capacity_tokens=150)  # a 200-token request never fits
    r = check_network_stability(_one(tiny, 5.0))
    assert r.status == Status.UNSTABLE and "can never be served" in r.reason and "(150)" in r.reason
    plain = _one(Engine(batch_time=STAIR, b_max=512), 5.0)
    assert capacity_caveats(plain) == [] and check_network_stability(plain).status == Status.STABLE


def _shared_jsq(scale=1.0):
    e = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=512)  # 10,240 tokens/s each
    return Network(stations=[Station(name="E1", engine=e), Station(name="E2", engine=e)],
                   routers=[Router(name="pool", engines=("E1", "E2"), policy="jsq")],
                   classes=[RequestClass(name="direct", rate_per_s=38.4 * scale,
                                         route=[Hop(engine="E1", prompt_tokens=100, output_tokens=100)]),
                            RequestClass(name="pooled", rate_per_s=40.96 * scale,
                                         route=[Hop(engine="pool", prompt_tokens=100, output_tokens=100)])])


def test_best_split_of_a_shared_jsq_router_is_the_balancing_linear_program():
    net = _shared_jsq()
    assert net.shared_jsq_routers() == ("pool",)
    even = net.loads()
    assert even["E1"] == pytest.approx(1.15) and even["E2"] == pytest.approx(0.4)
    best = net.best_split_loads()
    total = (38.4 + 40.96) * 200 / 10240  # all the work over one engine's capacity; balanced, half each
    assert best["loads"]["E1"] == pytest.approx(total / 2) == pytest.approx(best["loads"]["E2"])
    assert best["max_load"] == pytest.approx(0.775)
    shares = best["shares"]["pooled.1"]
    assert sum(shares.values()) == pytest.approx(40.96) and min(shares.values()) >= 0


def test_shared_jsq_router_is_unknown_below_and_unstable_above_the_best_split():
    r = check_network_stability(_shared_jsq())
    assert r.status == Status.UNKNOWN and "shares an engine" in r.reason  # was a false "unstable"
    r = check_network_stability(_shared_jsq(scale=1.5))
    assert r.status == Status.UNSTABLE and r.decided_by == "load" and "best split" in r.reason


def test_shared_jsq_router_at_a_balanceable_load_does_not_grow_in_simulation():
    r = check_network_stability(_shared_jsq(), simulate=True, horizon_s=120.0, replications=3, rng=2)
    assert r.simulation["verdict"] != "unstable"


@pytest.mark.parametrize("lo, hi, expected", [(0.02, 0.05, Status.UNSTABLE), (-0.004, 0.002, Status.STABLE),
                                              (-0.2, -0.1, Status.STABLE), (-0.001, 0.03, Status.UNKNOWN),
                                              (0.005, 0.03, Status.UNKNOWN),
                                              # too wide to tell growth of the band (0.01) from zero
                                              (-0.05, 0.002, Status.UNKNOWN),
                                              # significant growth below the band is growth, not flat
                                              (0.001, 0.008, Status.UNKNOWN)])
def test_simulation_verdict_counts_a_drift_down_as_not_growing(lo, hi, expected):
    assert simulation_verdict(lo, hi, 0.01) == expected


def test_descriptions_name_what_is_wrong():
    from fluidq.errors import ParameterError
    from fluidq.network import Choice

    e = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=64)
    with pytest.raises(ParameterError, match="priority"):
        Station(name="E", engine=e, priority=5)
    with pytest.raises(ParameterError, match="at least one hop"):
        RequestClass(name="c", rate_per_s=1.0, route=[Choice(options=[(1.0, [])])])
    skip = RequestClass(name="c", rate_per_s=1.0, route=[Choice(options=[
        (0.5, []), (0.5, [Hop(engine="E", prompt_tokens=3, output_tokens=2)])])])  # an empty option may skip
    assert len(skip.route) == 1
    with pytest.raises(ParameterError, match="finite"):
        Hop(engine="E", prompt_tokens=float("inf"), output_tokens=2)
    with pytest.raises(ParameterError, match="name"):
        Network(name=5, stations=[Station(name="E", engine=e)], classes=[skip])


def test_at_load_of_a_network_without_load_is_a_clear_error():
    from fluidq.errors import TopologyError
    from fluidq.network import Choice

    e = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=64)
    net = Network(stations=[Station(name="E", engine=e)], classes=[RequestClass(name="c", rate_per_s=1.0, route=[
        Choice(options=[(0.0, [Hop(engine="E", prompt_tokens=3, output_tokens=2)]), (1.0, [])])])])
    with pytest.raises(TopologyError, match="no engine carries any load"):
        net.at_load(0.5)


def test_a_kv_limited_station_is_simulated_under_its_memory_rules():
    # 1000 KV tokens hold 5 requests of 200 tokens: about 5 / (100 x 47 ms) = 1.06 req/s, a quarter of the
    # b_max/t(b_max) bound.  The simulation runs the station's memory (it used to be skipped with "no
    # simulation") and finds the growth the idealised loads (0.3) cannot see
    kv = Engine(batch_time=STAIR, b_max=512, kv_capacity_tokens=1000)
    r = check_network_stability(_one(kv, 5.0), simulate=True, horizon_s=50.0, replications=3, rng=1)
    assert r.simulation is not None and "no simulation" not in r.reason
    assert r.status == Status.UNSTABLE and r.decided_by == "simulation"
    lo, hi = r.simulation["ci"]
    assert 1.0 < lo <= hi < 5.0  # (about 3.9/s in the long run: arrivals less what 5 residents serve)
    # without its cache the same station is stable: the memory rules made the difference
    plain = check_network_stability(_one(Engine(batch_time=STAIR, b_max=512), 5.0), simulate=True, horizon_s=50.0,
                                    replications=3, rng=1)
    assert plain.simulation["ci"][1] < 1.0 and plain.status != Status.UNSTABLE


def test_a_swapping_station_needs_its_swap_cost_in_the_verdict_too():
    from fluidq.engine import Memory
    from fluidq.errors import ParameterError

    kv = Engine(batch_time=STAIR, b_max=512, kv_capacity_tokens=1000, memory=Memory(kind="blocks", preemption="swap"))
    with pytest.raises(ParameterError, match="swap_s_per_token"):
        check_network_stability(_one(kv, 5.0), simulate=True, horizon_s=50.0, replications=2, rng=1)
    r = check_network_stability(_one(kv, 5.0), simulate=True, horizon_s=50.0, replications=3, rng=1,
                                swap_s_per_token=1e-6)
    assert r.simulation is not None and r.simulation["growth_per_s"] > 1.0
    assert sum(run.preemptions["E"] for run in r.runs) > 0  # block KV: growing requests preempt (swapped out)
