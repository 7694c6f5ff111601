"""A station whose scheduler has a budget of its own below the engine's b_max serves full batches of that
budget, so its fluid capacity is ``budget / t(budget)`` (as for the single-engine verdict,
tests/stability/test_scheduler_budget.py).  Review of 2026-12-06: ``fluid_stability`` called a one-station
network STABLE (load 0.228 against the engine's 512/t(512)) at 1.5x the capacity of Sarathi's 64-token batches,
where ``check_stability`` says UNSTABLE and a seeded simulation grows by 14.4-15.9 requests/s."""
import pytest

import fluidq as fq
from fluidq import Status, fluid_stability
from fluidq.network import Hop, Network, RequestClass, Station, check_network_stability
from fluidq.policies import Sarathi
from fluidq.stability.network import simulation_growth

E = fq.Engine(batch_time=fq.Affine(c=0.02, a=1e-5), b_max=512)
POL = Sarathi(b_max=64)
P, D = 50, 50
CAP = 64 / (0.02 + 64e-5)  # 3,100.8 tokens/s; the engine's 512/t(512) is 20,382


def _net(factor):
    rate = factor * CAP / (P + D)
    return Network(stations=[Station(name="S", engine=E, policy=POL)],
                   classes=[RequestClass(name="A", rate_per_s=rate,
                                         route=[Hop(engine="S", prompt_tokens=P, output_tokens=D)])])


def test_the_station_capacity_is_that_of_its_scheduler_budget():
    assert Station(name="S", engine=E, policy=POL).capacity_tokens_per_s == pytest.approx(CAP, rel=1e-12)
    assert Station(name="S", engine=E).capacity_tokens_per_s == pytest.approx(512 / (0.02 + 512e-5), rel=1e-12)
    assert Station(name="S", engine=E, policy=Sarathi(b_max=1024)).capacity_tokens_per_s == \
        Station(name="S", engine=E).capacity_tokens_per_s  # a budget above the engine's changes nothing


def test_overload_at_the_budget_is_unstable_as_simulated():
    net = _net(1.5)
    r = fluid_stability(net)
    assert r.status is Status.UNSTABLE and r.certificate == "load"
    assert r.loads["S"] == pytest.approx(1.5, rel=1e-9)
    w = fq.Workload(arrival=fq.Poisson(rate_per_s=net.classes[0].rate_per_s), prompt_tokens=P, output_tokens=D)
    assert fq.check_stability(E, w, POL).status is Status.UNSTABLE  # the single-engine verdict agrees
    assert check_network_stability(net).status is Status.UNSTABLE
    g = simulation_growth(net, horizon_s=200.0, replications=4, rng=1)
    lam = net.classes[0].rate_per_s
    assert g["verdict"] == "unstable" and g["ci"][0] > 0.25 * lam  # fluid: (1 - 1/1.5) lam = 0.33 lam


def test_below_the_budget_capacity_is_stable_as_simulated():
    net = _net(0.8)
    r = fluid_stability(net)
    assert r.status is Status.STABLE and r.loads["S"] == pytest.approx(0.8, rel=1e-9)
    g = simulation_growth(net, horizon_s=200.0, replications=4, rng=1)
    assert g["verdict"] == "stable" and g["ci"][0] <= 0 <= g["ci"][1]
