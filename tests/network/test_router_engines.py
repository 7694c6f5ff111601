"""A hop on a router runs on the router's engines, a hop on a station on that station: one lookup
(``Network.engines_of``) for the stability analyses and the case file's context check, which each rebuilt the
router table (five copies in fluidq/stability/network.py, one each in fluidq/network/toml.py and
fluidq/capacity/network.py).  Numbers worked by hand, independent of the lookup."""
import pytest

from fluidq import Affine, Engine
from fluidq.network import Hop, Network, RequestClass, Router, Station
from fluidq.network.stability import _hops_that_never_fit, min_route_s, simulation_size


def _net(*, kv2=100, policy="jsq", rate=0.01):
    e1 = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=512, kv_capacity_tokens=100)
    e2 = Engine(batch_time=Affine(c=0.5, a=0.0), b_max=768, kv_capacity_tokens=kv2)
    e3 = Engine(batch_time=Affine(c=2.0, a=0.0), b_max=64)
    kw = {"probabilities": [0.5, 0.5]} if policy == "random" else {}
    return Network(stations=[Station(name="E1", engine=e1), Station(name="E2", engine=e2),
                             Station(name="E3", engine=e3)],
                   routers=[Router(name="J", engines=["E1", "E2"], policy=policy, **kw)],
                   classes=[RequestClass(name="A", rate_per_s=rate, route=[
                       Hop(engine="J", prompt_tokens=120, output_tokens=30, name="pooled"),
                       Hop(engine="E3", prompt_tokens=10, output_tokens=5, name="direct")])])


def test_a_router_is_its_engines_and_a_station_itself():
    net = _net()
    assert net.engines_of("J") == ("E1", "E2") and net.engines_of("E3") == ("E3",)


def test_a_hop_that_fits_no_engine_of_its_router_is_named_with_each_cache():
    # 120 + 30 = 150 KV tokens against caches of 100 and 100: fits neither; a cache of 1,000 on E2 takes it
    (msg,) = _hops_that_never_fit(_net())
    assert msg.startswith("hop 'pooled' needs at least 150 KV tokens") and "'E1' (100), 'E2' (100)" in msg
    assert _hops_that_never_fit(_net(kv2=1000)) == []


def test_the_shortest_route_reads_the_router_s_fastest_engine():
    # pooled hop: ceil(120 / 768) + 30 = 31 iterations of t(1) = 0.5 s (E2, the faster, with the larger b_max);
    # direct hop: ceil(10 / 64) + 5 = 6 iterations of 2 s
    assert min_route_s(_net(kv2=1000)) == pytest.approx(31 * 0.5 + 6 * 2.0)


def test_a_pooled_router_offers_its_tokens_to_each_engine():
    # a batch bound per engine of min(1 / t(1), offered tokens/s); the pooled point's 0.01 x 150 = 1.5 tokens/s
    # are offered to each of E1 (at most 1 batch/s) and E2 (2 batches/s), E3 gets 0.01 x 15 (0.5 batches/s)
    size = simulation_size(_net(kv2=1000), horizon_s=100.0)
    assert size["batches_per_s"] == pytest.approx(min(1.0, 1.5) + min(2.0, 1.5) + min(0.5, 0.15))
