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


def test_collective_kinds_on_a_link_are_hand_computable():
    link = Link(bandwidth_gbps=100, latency_us=5)
    # all-to-all over 4 GPUs of 1 MB each: (w-1)/w * n / bw + (w-1) * lat = 7.5 + 15 us
    assert link.collective_us(1e6, 4, kind="all_to_all") == pytest.approx(7.5 + 15.0)
    assert link.collective_us(1e6, 4, kind="all_gather") == pytest.approx(7.5 + 15.0)
    # a send of 1 MB to the next stage: n / bw + lat
    assert link.collective_us(1e6, 2, kind="send") == pytest.approx(10.0 + 5.0)
    assert link.collective_us(np.array([0.0, 2e6]), 2, kind="send").tolist() == pytest.approx([0.0, 25.0])
    assert link.collective_us(1e6, 1, kind="send") == 0.0
    with pytest.raises(ParameterError, match="kind"):
        link.collective_us(1e6, 2, kind="broadcast")


def test_measured_table_answers_all_to_all_and_send(tmp_path):
    p = tmp_path / "ar.csv"
    p.write_text("num_workers,size,time_stats.all_reduce.median\n2,1000,0.01\n2,2000,0.02\n")
    m = MeasuredAllReduce.from_vidur_csv(p)
    assert m.collective_us(1500, 2, kind="all_to_all") == pytest.approx(7.5)
    assert m.collective_us(2000, 2, kind="send") == pytest.approx(20.0)  # the two-worker all-reduce


# ------------------------------------------------------------------ the parallel terms of the iteration model
def _const_model(**kw):
    from fluidq.batchtime.operators import IterationModel

    # per layer: 10 us linear + 0 attention; once 3 us; LM head 2 us; 4 layers
    return IterationModel(name="t", n_layers=4, linear_us=lambda b: np.full(np.shape(b), 10.0),
                          once_us=lambda b: np.full(np.shape(b), 3.0),
                          per_seq_us=lambda n: np.full(np.shape(n), 2.0),
                          attn_us=lambda pc, kp, nd, kv: np.zeros(np.broadcast(pc, kp, nd, kv).shape), **kw)


def test_tensor_parallel_adds_two_all_reduces_per_layer():
    from fluidq.batchtime.operators import _tp_comm

    link = Link(bandwidth_gbps=100, latency_us=5)
    comm = _tp_comm(link, 2, 4096, 2)
    # b = 100 tokens: 100 x 4096 x 2 bytes = 819200 bytes; ring at w=2: 819200/1e5 + 10 us = 18.192 us, x2
    assert float(comm(100.0)) == pytest.approx(2 * (819200 / 1e5 + 10.0))
    m = _const_model(comm_us=comm)
    base = _const_model()
    assert float(m.decode_only(100, 0)) - float(base.decode_only(100, 0)) == pytest.approx(4 * float(comm(100.0)) * 1e-6)


def test_pipeline_period_and_bubble_are_hand_computable():
    send = lambda b: np.full(np.shape(b), 1.0)  # noqa: E731
    m = _const_model(pipeline_stages=2, send_us=send)
    # stages: [2 layers x 10 + send 1 + once 3, 2 layers x 10 + LM head 2] = [24, 22] us
    st = m.stage_us(0.0, 0.0, 8.0, 100.0)
    assert st.ravel().tolist() == pytest.approx([24.0, 22.0])
    assert float(m.decode_only(8, 100)) == pytest.approx(2 * 24.0 * 1e-6)  # pp x the slowest stage
    assert float(m.bubble_fraction(0.0, 0.0, 8.0, 100.0)) == pytest.approx(1 - 46.0 / 48.0)
    assert float(_const_model().bubble_fraction(0.0, 0.0, 8.0, 100.0)) == 0.0
    from fluidq.errors import ParameterError as PE

    with pytest.raises(PE, match="pipeline_parallel_size"):
        _const_model(pipeline_stages=5, send_us=send)  # more stages than layers
    with pytest.raises(PE, match="send_us"):
        _const_model(pipeline_stages=2)


def test_moe_experts_see_every_rank_and_the_local_share(tmp_path):
    from fluidq.batchtime.operators import _moe_model

    p = tmp_path / "moe.csv"
    # time = tokens + 10 x activated experts (bilinear, so the interpolation is exact)
    rows = ["tokens,activated_experts,time_us"] + [f"{t},{a},{t + 10 * a}" for t in (1, 64, 256) for a in (1, 8, 64)]
    p.write_text("\n".join(rows) + "\n")
    link = Link(bandwidth_gbps=100, latency_us=5)
    moe = _moe_model(p, experts=64, top_k=8, ep=2, dp=2, hidden=1000, nbytes=2, comm=link)
    b = 16.0
    T = 2 * b
    active = 32 * (1 - (1 - 8 / 64) ** T)
    a2a = 2 * ((1 / 2) * T * 1000 * 2 / 1e5 + 5.0)
    assert float(moe(b)) == pytest.approx(T / 2 + 10 * active + a2a)
    one = _moe_model(p, experts=64, top_k=8, ep=1, dp=1, hidden=1000, nbytes=2, comm=None)
    assert float(one(b)) == pytest.approx(b + 10 * 64 * (1 - (1 - 8 / 64) ** b))
    with pytest.raises(ParameterError, match="expert_parallel_size"):
        _moe_model(p, experts=64, top_k=8, ep=3, dp=1, hidden=1000, nbytes=2, comm=link)
    with pytest.raises(ParameterError, match="comm"):
        _moe_model(p, experts=64, top_k=8, ep=2, dp=1, hidden=1000, nbytes=2, comm=None)


def test_tensor_parallel_without_a_communication_model_is_refused_saying_what_to_give(tmp_path):
    import shutil

    from fluidq.batchtime.operators import lss_iteration_model
    from fluidq.validate import validation_dir

    src = validation_dir() / "data" / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B"
    with pytest.raises(ParameterError, match=r"comm.*Link.*peer_sim_config.*all_reduce.*tensor parallel size 2"):
        lss_iteration_model(src, n_layers=32, tp=2, hidden_size=4096)
    # TP2 profiles (here the TP1 tables under the TP2 names) + a link: the all-reduces are added
    d = tmp_path / "tp2"
    d.mkdir()
    for f in src.glob("profile_tp1_*"):
        shutil.copy(f, d / f.name.replace("tp1", "tp2"))
    link = Link(bandwidth_gbps=16, latency_us=20)
    m2 = lss_iteration_model(d, n_layers=32, tp=2, hidden_size=4096, comm=link)
    m1 = lss_iteration_model(src, n_layers=32)
    extra = float(m2.decode_only(64, 1000)) - float(m1.decode_only(64, 1000))
    per_layer = 2 * link.allreduce_us(64 * 4096 * 2, 2)
    assert extra == pytest.approx(32 * per_layer * 1e-6, rel=1e-9)
    assert "all-reduces" in m2.source
