"""The network description: validation, topology and traffic equations."""
from __future__ import annotations

import math

import pytest

from fluidq import Affine, ContextAware, Engine, PiecewiseLinear, Staircase
from fluidq.errors import FluidqError, ParameterError, TopologyError
from fluidq.network import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station
from fluidq.network.examples import llm_rybko_stolyar, lu_kumar, rybko_stolyar

E = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=768)


def one(route, **kw):
    return Network(stations=[Station(name="E1", engine=E), Station(name="E2", engine=E)],
                   classes=[RequestClass(name="A", rate_per_s=1.0, route=route)], **kw)


# ---- bad input ---------------------------------------------------------------------------------

def test_unknown_engine_is_named():
    with pytest.raises(TopologyError, match=r"hop 'A.2' names unknown engine 'E9'"):
        one([Hop(engine="E1", prompt_tokens=8, output_tokens=8), Hop(engine="E9", prompt_tokens=8, output_tokens=8)])


def test_choice_probabilities_must_sum_to_one():
    with pytest.raises(ParameterError, match="summing to 1") as ei:
        Choice(options=[(0.5, [Hop(engine="E1", prompt_tokens=8, output_tokens=8)]), (0.4, [])])
    assert isinstance(ei.value, ValueError) and "0.9" in str(ei.value)


def test_router_probabilities_must_sum_to_one():
    with pytest.raises(ParameterError, match="probabilities"):
        Router(name="r", engines=("E1", "E2"), policy="random", probabilities=(0.7, 0.7))
    with pytest.raises(ParameterError, match="one per engine"):
        Router(name="r", engines=("E1", "E2"), policy="random", probabilities=(1.0,))


def test_join_without_fork():
    with pytest.raises(TopologyError, match="join 'f' with no fork"):
        one([Hop(engine="E1", prompt_tokens=8, output_tokens=8), Join(name="f")])


def test_fork_never_joined():
    with pytest.raises(TopologyError, match="never joined"):
        one([Fork(name="f", branches=[[Hop(engine="E1", prompt_tokens=8, output_tokens=8)]])])


def test_join_inside_a_branch_is_not_its_own_fork():
    with pytest.raises(TopologyError, match="join 'f' with no fork"):
        one([Fork(name="f", branches=[[Hop(engine="E1", prompt_tokens=8, output_tokens=8), Join(name="f")]]),
             Join(name="f")])


def test_claimed_dag_with_cycle_names_the_cycle():
    with pytest.raises(TopologyError, match=r"claimed to be a DAG but has the cycle E\d -> E\d -> E\d"):
        one([Hop(engine="E1", prompt_tokens=8, output_tokens=8), Hop(engine="E2", prompt_tokens=8, output_tokens=8),
             Hop(engine="E1", prompt_tokens=8, output_tokens=8)], claim="dag")


def test_priority_must_name_a_hop_on_that_station():
    with pytest.raises(TopologyError, match="runs on 'E1'"):
        Network(stations=[Station(name="E1", engine=E), Station(name="E2", engine=E, priority=["A.1"])],
                classes=[RequestClass(name="A", rate_per_s=1.0, route=[Hop(engine="E1", prompt_tokens=8, output_tokens=8)])])
    with pytest.raises(TopologyError, match="unknown hop 'nope'"):
        Network(stations=[Station(name="E1", engine=E, priority=["nope"])],
                classes=[RequestClass(name="A", rate_per_s=1.0, route=[Hop(engine="E1", prompt_tokens=8, output_tokens=8)])])


@pytest.mark.parametrize("make", [
    lambda: Station(name="E1", engine="not an engine"),
    lambda: Hop(engine="E1", prompt_tokens=0, output_tokens=8),
    lambda: Hop(engine="E1", prompt_tokens=8, output_tokens=-1),
    lambda: RequestClass(name="A", route=[]),
    lambda: RequestClass(name="A", rate_per_s=-1.0, route=[Hop(engine="E1", prompt_tokens=8, output_tokens=8)]),
    lambda: Router(name="r", engines=("E1",), policy="round-robin"),
    lambda: Router(name="r", engines=("E1",), count="bytes"),
    lambda: Network(stations=[Station(name="E1", engine=E), Station(name="E1", engine=E)],
                    classes=[RequestClass(name="A", rate_per_s=1.0, route=[Hop(engine="E1", prompt_tokens=8, output_tokens=8)])]),
    lambda: Network(stations=[Station(name="E1", engine=E)], routers=[Router(name="r", engines=("E1", "E5"))],
                    classes=[RequestClass(name="A", rate_per_s=1.0, route=[Hop(engine="r", prompt_tokens=8, output_tokens=8)])]),
])
def test_bad_descriptions_raise_fluidq_errors(make):
    with pytest.raises(FluidqError):
        make()


# ---- topology and traffic ---------------------------------------------------------------------

def test_rybko_stolyar_topology_and_loads():
    rs = rybko_stolyar()
    assert not rs.is_dag
    assert sorted(rs.cycles()[0]) == ["S1", "S2"]
    assert rs.loads() == pytest.approx({"S1": 0.7, "S2": 0.7})
    with pytest.raises(TopologyError, match="not a DAG"):
        rs.require_dag()
    lk = lu_kumar()
    assert not lk.is_dag and lk.loads() == pytest.approx({"S1": 0.7, "S2": 0.7})


def test_llm_rybko_stolyar_both_engines_at_90_percent():
    net = llm_rybko_stolyar()
    assert net.loads() == pytest.approx({"E1": 0.9, "E2": 0.9})
    assert net.bottleneck[1] == pytest.approx(0.9)


def test_traffic_equations_with_choice_fork_and_router():
    net = Network(stations=[Station(name="E1", engine=E), Station(name="E2", engine=E), Station(name="E3", engine=E)],
                  routers=[Router(name="r", engines=("E2", "E3"), policy="random", probabilities=(0.25, 0.75))],
                  classes=[RequestClass(name="A", rate_per_s=2.0, route=[
                      Hop(engine="E1", prompt_tokens=100, output_tokens=28, name="first"),
                      Choice(options=[(0.5, [Hop(engine="E2", prompt_tokens=64, output_tokens=0, name="maybe")]),
                                      (0.5, [])]),
                      Fork(name="f", branches=[[Hop(engine="r", prompt_tokens=50, output_tokens=14, name="par")]]),
                      Hop(engine="E1", prompt_tokens=10, output_tokens=6, name="main"),
                      Join(name="f")])])
    vr = net.visit_rates()
    assert vr == pytest.approx({"first": 2.0, "maybe": 1.0, "par": 2.0, "main": 2.0})
    loads = net.loads()
    assert loads["E1"] == pytest.approx(2.0 * (128 + 16) / 768)
    assert loads["E2"] == pytest.approx((1.0 * 64 + 0.25 * 2.0 * 64) / 768)
    assert loads["E3"] == pytest.approx(0.75 * 2.0 * 64 / 768)
    assert net.is_dag is False  # E1 -> E1 (main after first) is a self-loop
    assert ["E1"] in net.cycles()


def test_at_load_scales_the_bottleneck():
    net = llm_rybko_stolyar().at_load(0.5)
    assert net.bottleneck[1] == pytest.approx(0.5)
    assert net.classes[0].rate_per_s == pytest.approx(0.5 * 768 / 608)


def test_jsq_router_is_a_pooled_point(small):
    net = small["jsq"]().at_load(0.9)
    pl = net.point_loads()
    assert pl["pool"] == pytest.approx(0.9)
    assert net.loads()["E1"] == pytest.approx(0.9)
    cap = net.station("E1").capacity_tokens_per_s
    assert net.classes[0].rate_per_s == pytest.approx(0.9 * 2 * cap / 104)


def test_graph_edges_carry_classes():
    g = rybko_stolyar().graph
    assert g["S1"]["S2"]["classes"] == ["A"] and g["S2"]["S1"]["classes"] == ["B"]


def test_to_dict_is_plain():
    import json

    d = llm_rybko_stolyar().to_dict()
    json.dumps(d)
    assert d["loads"]["E1"] == pytest.approx(0.9) and not d["is_dag"] and not math.isnan(d["bottleneck"][1])


@pytest.mark.parametrize("engine", [
    Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512),
    Engine(batch_time=PiecewiseLinear(c=0.01128, a=0.0003, b0=128), b_max=512),
    Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=2048, k_max=64, kv_capacity_tokens=50_000),
    Engine(batch_time=ContextAware(base=Staircase(c=0.01, a=0.03, b0=128), kv_s_per_token=1e-7), b_max=1000),
], ids=["staircase", "peaked", "kv", "context-aware"])
def test_station_capacity_is_the_full_batch_rate(engine):
    # the description computes b_max / t(b_max) itself (it imports no analysis): the same number as
    # the capacity analysis's full_batch_rate without a workload
    from fluidq.capacity import full_batch_rate

    assert Station(name="E", engine=engine).capacity_tokens_per_s == full_batch_rate(engine)[0]
