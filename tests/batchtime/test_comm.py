"""Collective-communication cost models (fluidq.batchtime.comm)."""
import numpy as np
import pytest

from fluidq.batchtime.comm import Link, MeasuredAllReduce, ring_allreduce_us
from fluidq.errors import ParameterError


def test_ring_allreduce_is_the_ring_formula():
    # 2 workers, 1 MB at 100 GB/s, 5 us: 2*(1/2)*1e6/1e5 us + 2*1*5 us = 10 + 10
    assert ring_allreduce_us(1e6, 2, bandwidth_gbps=100, latency_us=5) == pytest.approx(20.0)
    # 8 workers: 2*7/8*1e6/1e5 + 14*5
    assert ring_allreduce_us(1e6, 8, bandwidth_gbps=100, latency_us=5) == pytest.approx(17.5 + 70.0)
    assert ring_allreduce_us(1e6, 1, bandwidth_gbps=100, latency_us=5) == 0.0
    v = ring_allreduce_us(np.array([0.0, 1e6]), 2, bandwidth_gbps=100, latency_us=5)
    assert v.tolist() == pytest.approx([0.0, 20.0])


@pytest.mark.parametrize("kw, name", [({"bandwidth_gbps": 0, "latency_us": 1}, "bandwidth_gbps"),
                                      ({"bandwidth_gbps": float("nan"), "latency_us": 1}, "bandwidth_gbps"),
                                      ({"bandwidth_gbps": 1, "latency_us": -1}, "latency_us")])
def test_link_refuses_bad_values(kw, name):
    with pytest.raises(ParameterError, match=name):
        Link(**kw)


def test_measured_table_interpolates_and_extends(tmp_path):
    p = tmp_path / "ar.csv"
    p.write_text("num_workers,size,time_stats.all_reduce.median\n2,1000,0.01\n2,2000,0.02\n4,1000,0.03\n")
    m = MeasuredAllReduce.from_vidur_csv(p)
    assert m.allreduce_us(1500, 2) == pytest.approx(15.0)
    assert m.allreduce_us(3000, 2) == pytest.approx(30.0)  # continues at the last slope
    assert m.allreduce_us(1500, 1) == 0.0
    with pytest.raises(ParameterError, match="workers"):
        m.allreduce_us(1000, 8)
    assert m.collective_us(1500, 2, kind="all_gather") == pytest.approx(7.5)


def test_peer_sim_config(tmp_path):
    p = tmp_path / "peer.json"
    p.write_text('{"nodes": [{"link_bw": 32, "link_latency": 1000}]}')
    link = Link.from_peer_sim_config(p)
    assert link.bandwidth_gbps == 32 and link.latency_us == pytest.approx(1.0)
