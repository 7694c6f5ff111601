"""fluidq.network is a description (issue 14): the traffic equations behind its methods live in the
analyses (fluidq.fluid.compile for the flow model, fluidq.capacity.network for capacities, loads, the
bottleneck and the best split), and the methods and to_dict() give what they gave before the move.

data/to_dict_before_move.json was recorded from the checkout before the move (7281bfc), where
fluidq/network/model.py computed all of it itself.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import fluidq
from fluidq import Affine, Engine
from fluidq.capacity import network as capnet
from fluidq.fluid import compile as fcompile
from fluidq.network import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station, load_network
from fluidq.network import examples as ex
from fluidq.network import model

BEFORE = json.loads((Path(__file__).parent / "data" / "to_dict_before_move.json").read_text())
CASES = Path(fluidq.__file__).parent / "network" / "cases"


def _shared():
    e = Engine(batch_time=Affine(c=0.01, a=1e-4), b_max=512)
    e2 = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=768)
    return Network(
        stations=[Station(name="E1", engine=e), Station(name="E2", engine=e2), Station(name="E3", engine=e)],
        routers=[Router(name="J", engines=["E1", "E2"]),
                 Router(name="K", engines=["E2", "E3"], policy="random", probabilities=[0.3, 0.7])],
        classes=[RequestClass(name="A", rate_per_s=5.0,
                              route=[Hop(engine="J", prompt_tokens=100, output_tokens=50),
                                     Hop(engine="E1", prompt_tokens=20, output_tokens=5)]),
                 RequestClass(name="B", rate_per_s=3.0,
                              route=[Choice(options=[(0.5, [Hop(engine="K", prompt_tokens=30, output_tokens=10)]),
                                                     (0.5, [])]),
                                     Fork(name="f", branches=[[Hop(engine="E3", prompt_tokens=10, output_tokens=3)]]),
                                     Hop(engine="E2", prompt_tokens=5, output_tokens=5), Join(name="f")])])


def _pooled():
    e = Engine(batch_time=Affine(c=0.01, a=1e-4), b_max=512)
    return Network(stations=[Station(name="E1", engine=e, priority=("A.2",)),
                             Station(name="E2", engine=e, priority=("A.2",))],
                   routers=[Router(name="J", engines=["E1", "E2"])],
                   classes=[RequestClass(name="A", rate_per_s=2.0,
                                         route=[Hop(engine="J", prompt_tokens=100, output_tokens=50),
                                                Hop(engine="J", prompt_tokens=20, output_tokens=5)])])


NETWORKS = {"shared": _shared, "pooled": _pooled, "llmrs": ex.llm_rybko_stolyar,
            "fork_join.toml": lambda: load_network(CASES / "fork_join.toml"),
            "plan_code_review.toml": lambda: load_network(CASES / "plan_code_review.toml")}


@pytest.mark.parametrize("key", sorted(NETWORKS))
def test_to_dict_and_describe_are_what_they_were_before_the_move(key):
    net = NETWORKS[key]()
    assert json.dumps(net.to_dict()) == BEFORE[key]["to_dict"]
    assert net.describe() == BEFORE[key]["describe"]


def test_the_best_split_case_is_really_exercised():
    net = _shared()
    assert net.shared_jsq_routers() == ("J",)
    best = net.best_split_loads()
    assert best["shares"] and best["max_load"] < max(net.loads().values())


@pytest.mark.parametrize("key", sorted(NETWORKS))
def test_the_methods_are_the_analyses(key):
    net = NETWORKS[key]()
    assert isinstance(net.flow, fcompile.FlowModel)
    fresh = fcompile.compile_network(net)
    assert net.flow.buffers == fresh.buffers and net.flow.points == fresh.points
    assert net.flow.capacity.tolist() == fresh.capacity.tolist()
    assert net.loads() == capnet.station_loads(net)
    assert net.visit_rates() == capnet.visit_rates(net)
    assert net.point_loads() == capnet.point_loads(net)
    assert net.bottleneck == capnet.bottleneck(net)
    assert net.best_split_loads() == capnet.best_split_loads(net)
    scaled = net.at_load(0.5)
    assert scaled.to_dict() == capnet.at_load(net, 0.5).to_dict()
    assert scaled.bottleneck[1] == pytest.approx(0.5, rel=1e-12)
    for s in net.stations:
        b = s.engine.b_max
        assert s.capacity_tokens_per_s == capnet.station_capacity_tokens_per_s(s) == b / float(s.engine.batch_time(b))


@pytest.mark.parametrize("key", sorted(NETWORKS))
def test_shared_jsq_routers_read_from_the_topology_match_the_pooled_points_of_the_compile(key):
    net = NETWORKS[key]()
    jsq = {r.name for r in net.routers if r.policy == "jsq"}
    assert jsq - set(net.shared_jsq_routers()) == set(net.flow.pooled)


def test_the_old_names_of_the_flow_model_still_work():
    assert model.FlowModel is fcompile.FlowModel
    assert model.Buffer is fcompile.Buffer
    assert model.MAX_TOKEN_RATE == fcompile.MAX_TOKEN_RATE == 1e24
    with pytest.raises(AttributeError, match="no_such_name"):
        model.no_such_name  # noqa: B018
