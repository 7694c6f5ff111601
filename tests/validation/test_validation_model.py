"""Iteration model, capacity prediction and replay: exact checks on constructed cases, and
cross-checks against the independent batch-time loaders."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fluidq import Affine, ContextAware, PiecewiseLinear
from fluidq.batchtime import loaders
from fluidq.validate.cases import _plain_path
from fluidq.batchtime.operators import FittedIterationModel, lss_iteration_model, vidur_iteration_model
from fluidq.validate.predict import predict_capacity
from fluidq.validate.replay import replay


def test_lss_model_agrees_with_the_independent_loader(data_dir):
    # fluidq.batchtime.loaders rebuilds the same whole-iteration times by another route
    d = data_dir / "llmservingsim" / "RTX4090_Llama-3.1-8B"
    m = lss_iteration_model(d, n_layers=32)
    mb = loaders.load_llmservingsim(_plain_path(d), n_layers=32)
    for ph, fn in (("prefill", lambda b, kv: m.prefill_only(b)),
                   ("decode", lambda b, kv: m.decode_only(b, kv / b))):
        sub = mb.where(ph)
        pred = np.array([float(fn(b, kv)) for b, kv in zip(sub.tokens, sub.kv_tokens)])
        rel = np.abs(pred - sub.seconds) / sub.seconds
        assert np.median(rel) < 0.01, ph
        assert rel.max() < 0.05, ph


def test_vidur_model_agrees_with_the_independent_loader(data_dir):
    v = data_dir / "vidur" / "a100" / "meta-llama" / "Llama-2-7b-hf"
    m = vidur_iteration_model(v / "mlp.csv.gz", v / "attention_subset.csv.gz", n_layers=32)
    mb = loaders.load_vidur(_plain_path(v / "mlp.csv.gz"), tp=1, n_layers=32,
                            attention_path=_plain_path(v / "attention_subset.csv.gz")).where("linear")
    pred = np.asarray(m.n_layers * m.linear_us(mb.tokens) + m.once_us(mb.tokens)) * 1e-6
    assert np.allclose(pred, mb.seconds, rtol=0.02)


def test_decode_time_grows_with_sequences_and_context(data_dir):
    m = lss_iteration_model(data_dir / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B", n_layers=32)
    # non-decreasing up to the profile's own noise (1 %), and clearly growing over the range
    n = np.array([1, 8, 32, 128, 256])
    for kv in (64, 1024, 4096):
        t = m.decode_only(n, kv)
        assert np.all(np.diff(t) > -0.01 * t[:-1]) and t[-1] > 1.3 * t[0]
    t = m.decode_only(64, np.array([64, 512, 2048, 8192]))
    assert np.all(np.diff(t) > 0) and t[-1] > 2 * t[0]


@settings(max_examples=30, deadline=None)
@given(c=st.floats(1e-3, 0.05), a=st.floats(1e-6, 1e-4), mp=st.integers(1, 2000), md=st.integers(2, 2000),
       b_max=st.sampled_from([256, 512, 2048]))
def test_token_bound_capacity_is_theorem_2(c, a, mp, md, b_max):
    # affine t(b), no k_max, no KV limit: the fluid capacity is b_max/t(b_max) tokens/s of batch
    # work, i.e. (m_p + m_d)/(m_p + m_d - 1) * b_max/t(b_max) served tokens/s (the first output
    # token comes with the prefill and takes no batch slot)
    assume(b_max * (md - 1) / (mp + md - 1) >= 1)  # at least one request decodes per batch
    model = FittedIterationModel(Affine(c=c, a=a))
    pred = predict_capacity(model, [mp] * 3, [md] * 3, b_max=b_max, k_max=None, kv_capacity_tokens=None)
    assert pred.binding == "token_budget"
    expect = (mp + md) / (mp + md - 1) * b_max / (c + a * b_max)
    assert pred.tokens_per_s == pytest.approx(expect, rel=1e-9)


def test_binding_limit_is_the_smallest():
    model = FittedIterationModel(ContextAware(base=Affine(c=0.01, a=1e-5), kv_s_per_token=1e-8))
    p, o = np.full(10, 500), np.full(10, 201)
    assert predict_capacity(model, p, o, b_max=2048, k_max=8, kv_capacity_tokens=None).binding == "k_max"
    r = predict_capacity(model, p, o, b_max=2048, k_max=256, kv_capacity_tokens=20000)
    # in 16-token blocks (h-fix16): the cache's 1250 blocks less the free room left below the waiting head's prompt
    # (E[pb^2] / 2 E[pb] = 16 blocks for fixed 32-block prompts: vLLM admits a request only when its whole prompt
    # fits), over the blocks a resident holds in its decode iterations (contexts 501 .. 700)
    held = np.ceil(np.arange(501, 701) / 16).mean()
    assert r.binding == "kv_cache" and r.residents == pytest.approx((1250 - 16) / held)
    # more KV cannot lower the capacity
    r2 = predict_capacity(model, p, o, b_max=2048, k_max=256, kv_capacity_tokens=40000)
    assert r2.tokens_per_s > r.tokens_per_s


def test_replay_of_a_lone_request_is_exact():
    t = PiecewiseLinear(c=0.02, a=1e-4, b0=64)
    model = FittedIterationModel(t)
    rep = replay(model, [0.0], [100], [3], b_max=512, k_max=8, kv_capacity_tokens=None)
    assert rep.first_token_s[0] == pytest.approx(t(100))
    assert rep.last_token_s[0] == pytest.approx(t(100) + 2 * t(1))
    assert rep.iterations == 3 and rep.preemptions == 0


def test_replay_chunks_long_prompts_and_finishes_everything_under_kv_pressure():
    model = FittedIterationModel(Affine(c=0.01, a=1e-5))
    rng = np.random.default_rng(7)
    n = 60
    a = np.sort(rng.uniform(0, 1.0, n))
    p = rng.integers(10, 700, n)
    o = rng.integers(1, 80, n)
    rep = replay(model, a, p, o, b_max=256, k_max=16, kv_capacity_tokens=2048, block_size=16)
    assert np.all(np.isfinite(rep.last_token_s))
    assert np.all(rep.first_token_s >= a) and np.all(rep.last_token_s >= rep.first_token_s)
    assert rep.preemptions > 0  # the cache is too small for 16 residents of these lengths
    # an unlimited cache serves the same arrivals no slower
    free = replay(model, a, p, o, b_max=256, k_max=16, kv_capacity_tokens=None)
    assert free.preemptions == 0 and free.latency_s.mean() <= rep.latency_s.mean() + 1e-12
    # prefix caching lets a preempted request reuse its surviving blocks: everything still finishes,
    # with no more prefill work than recomputing from scratch
    pc = replay(model, a, p, o, b_max=256, k_max=16, kv_capacity_tokens=2048, block_size=16, prefix_caching=True)
    assert np.all(np.isfinite(pc.last_token_s)) and pc.preemptions > 0
    assert pc.latency_s.mean() <= rep.latency_s.mean() * 1.05


def test_replay_rejects_bad_input():
    model = FittedIterationModel(Affine(c=0.01, a=1e-5))
    with pytest.raises(ValueError, match="sorted"):
        replay(model, [1.0, 0.0], [5, 5], [2, 2], b_max=16, k_max=2, kv_capacity_tokens=None)
    with pytest.raises(ValueError, match="b_max"):
        replay(model, [0.0], [5], [2], b_max=0, k_max=2, kv_capacity_tokens=None)


def test_every_vidur_operator_is_used_or_refused_by_name(data_dir, tmp_path):
    # issue 16 item 3, Vidur's tables: the attention profile's reshapes around the kernel are added to each row's
    # kernel time (the legacy A100 table measures attn_output_reshape, 2-44 us a layer), and an operator fluidq
    # does not know is refused by name, never dropped
    import csv
    import gzip

    from fluidq.errors import DataError

    v = data_dir / "vidur"
    mlp = v / "a100" / "meta-llama" / "Llama-2-70b-hf" / "mlp.csv.gz"
    att = v / "legacy_e2d00e9_a100" / "attention.csv.gz"
    with gzip.open(att, "rt") as f:
        rows = list(csv.DictReader(f))
    col = "time_stats.attn_output_reshape.median"
    assert any(float(r[col] or 0) > 0 for r in rows)

    def write(name, rows, fields):
        p = tmp_path / name
        with open(p, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        return p

    fields = list(rows[0])
    zero = write("att0.csv", [{**r, col: "0"} for r in rows], fields)
    m = vidur_iteration_model(mlp, att, n_layers=80, tp=2, all_reduce_csv=v / "a100" / "network" /
                              "all_reduce_pairwise_nvlink.csv.gz")
    m0 = vidur_iteration_model(mlp, zero, n_layers=80, tp=2, all_reduce_csv=v / "a100" / "network" /
                               "all_reduce_pairwise_nvlink.csv.gz")
    assert "attn_output_reshape" in m.source  # counted (in the zeroed table too, adding 0)
    # a prefill chunk of 512 with no prior context: the measured reshape (ms a layer) x 80 layers more
    ms = np.mean([float(r[col]) for r in rows if r["is_prefill"] == "True" and r["num_tensor_parallel_workers"] == "2"
                  and float(r["prefill_chunk_size"]) == 512 and float(r["kv_cache_size"]) == 0])
    assert float(m.prefill_only(512)) - float(m0.prefill_only(512)) == pytest.approx(80 * ms * 1e-3, rel=1e-6)
    assert float(m.decode_only(64, 1024)) > float(m0.decode_only(64, 1024))
    # an unknown operator, in either table, is named
    odd = write("att_odd.csv", [{**r, "time_stats.attn_softcap.median": "0.001"} for r in rows[:50]],
                fields + ["time_stats.attn_softcap.median"])
    with pytest.raises(DataError, match="attn_softcap"):
        vidur_iteration_model(mlp, odd, n_layers=80, tp=2, all_reduce_csv=v / "a100" / "network" /
                              "all_reduce_pairwise_nvlink.csv.gz")
    with gzip.open(mlp, "rt") as f:
        mrows = list(csv.DictReader(f))
    odd_mlp = write("mlp_odd.csv", [{**r, "time_stats.mlp_gate.median": "0.01"} for r in mrows],
                    list(mrows[0]) + ["time_stats.mlp_gate.median"])
    with pytest.raises(DataError, match="mlp_gate"):
        vidur_iteration_model(odd_mlp, att, n_layers=80, tp=2, all_reduce_csv=v / "a100" / "network" /
                              "all_reduce_pairwise_nvlink.csv.gz")
