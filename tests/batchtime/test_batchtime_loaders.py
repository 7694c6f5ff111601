"""Loaders of measured profiles, on small synthetic files with known whole-iteration times."""
import csv
import json

import numpy as np
import pytest

from fluidq.batchtime.loaders import (MeasuredBatchTimes, load_llmservingsim, load_measured, load_sarathi_figure2,
                                      load_sarathi_table2, load_splitwise, load_vidur)
from fluidq.errors import DataError, FluidqError, ParameterError, UnknownNameError

VIDUR_OPS = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
             "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]
STATS = ["min", "max", "mean", "median", "std"]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def vidur_mlp(path, tokens=(1, 2, 4, 8, 16, 32, 64), tps=(1, 2), dup=None):
    header = [f"time_stats.{op}.{s}" for op in VIDUR_OPS for s in STATS] + [
        "n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "num_tokens",
        "num_tensor_parallel_workers"]
    rows = []
    for tp in tps:
        for b in list(tokens) + ([dup] if dup else []):
            vals = []
            for op in VIDUR_OPS:
                ms = 0.01 * b / tp if op != "emb" else 0.5  # each per-layer op: 0.01 ms per token
                vals += [ms, ms, ms, ms, 0.0]
            rows.append(vals + [32, 32, 4096, 11008, 32000, True, b, tp])
    return write_csv(path, header, rows)


def test_vidur_linear_rows(tmp_path):
    m = load_vidur(vidur_mlp(tmp_path / "mlp.csv", dup=8))
    assert isinstance(m, MeasuredBatchTimes)
    assert m.meta.model == "Llama-2-7B" and m.meta.n_layers == 32 and m.meta.tp == 1
    assert m.kv_tokens is None and set(m.phase) == {"linear"}
    # emb 0.5 ms + 32 layers x (9 ops + one extra add) x 0.01 ms/token
    expect = (0.5 + 32 * 10 * 0.01 * m.tokens) / 1e3
    assert np.allclose(m.seconds, expect)
    assert np.all(np.diff(m.tokens) > 0)  # the repeated size 8 was averaged
    assert any("repeated" in n for n in m.meta.notes)
    m2 = load_vidur(tmp_path / "mlp.csv", tp=2, n_layers=10)
    assert np.allclose(m2.seconds, (0.5 + 10 * 10 * 0.005 * m2.tokens) / 1e3)


def test_vidur_with_attention(tmp_path):
    vidur_mlp(tmp_path / "mlp.csv")
    header = ["time_stats.attn_decode.median", "time_stats.attn_prefill.median", "n_embd", "n_q_head", "n_kv_head",
              "block_size", "num_tensor_parallel_workers", "max_model_len", "batch_size", "prefill_chunk_size",
              "kv_cache_size", "is_prefill", "attention_backend"]
    rows = [["", 0.1, 4096, 32, 32, 16, 1, 4096, 1, 32, 0, True, "FA"],
            ["", 0.9, 4096, 32, 32, 16, 1, 4096, 1, 32, 64, True, "FA"],  # prior context: left out
            [0.02, "", 4096, 32, 32, 16, 1, 4096, 4, 0, 512, False, "FA"],
            [0.04, "", 4096, 32, 32, 16, 1, 4096, 4, 0, 1024, False, "FA"]]
    write_csv(tmp_path / "attention.csv", header, rows)
    m = load_measured(tmp_path)  # detects mlp.csv + attention.csv in a folder
    pre, dec = m.where("prefill"), m.where("decode")
    assert len(pre) == 1 and pre.tokens[0] == 32
    assert pre.seconds[0] == pytest.approx((0.5 + 32 * 10 * 0.01 * 32 + 32 * 0.1) / 1e3)
    assert sorted(dec.kv_tokens) == [2048, 4096]
    i = int(np.argmax(dec.kv_tokens))
    assert dec.seconds[i] == pytest.approx((0.5 + 32 * 10 * 0.01 * 4 + 32 * 0.04) / 1e3)
    x, y = m.where(("linear",)).token_series()
    assert np.all(np.diff(x) > 0)


def test_vidur_bad_input(tmp_path):
    vidur_mlp(tmp_path / "mlp.csv")
    with pytest.raises(ParameterError, match="tp"):
        load_vidur(tmp_path / "mlp.csv", tp=4)
    with pytest.raises(ParameterError, match="statistic"):
        load_vidur(tmp_path / "mlp.csv", statistic="p99")
    with pytest.raises(ParameterError, match="n_layers"):
        load_vidur(tmp_path / "mlp.csv", n_layers=0)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="empty"):
        load_vidur(tmp_path / "empty.csv")
    write_csv(tmp_path / "cols.csv", ["num_tokens"], [[1]])
    with pytest.raises(DataError, match="missing column"):
        load_vidur(tmp_path / "cols.csv")
    with pytest.raises(FileNotFoundError):
        load_vidur(tmp_path / "nope.csv")


def lss_run(d, kv_cache=True):
    d.mkdir()
    ops = ["embedding", "final_layernorm", "layernorm", "qkv_proj", "rotary_emb", "o_proj", "gate_up_proj", "act_fn",
           "down_proj"]
    grid = [1, 2, 4, 8, 16, 32, 64, 128]
    write_csv(d / "profile_tp1_dense.csv", ["layer", "tokens", "time_us"],
              [[op, b, 1.0 * b] for op in ops for b in grid])  # 1 us per token per op
    write_csv(d / "profile_tp1_per_sequence.csv", ["layer", "sequences", "time_us"],
              [[op, s, 100.0 + s] for op in ("lm_head", "sampler") for s in (1, 2, 4, 8, 16)])
    rows = [[16, 0, 0, 0, 50.0], [0, 0, 4, 64, 10.0], [16, 0, 4, 64, 70.0], [16, 32, 0, 0, 99.0],
            [0, 0, 4, 0, 1.0], [128, 0, 16, 64, 5.0]]
    write_csv(d / "profile_tp1_attention.csv", ["prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us"],
              rows)
    meta = {"model": "meta-llama/Llama-3.1-8B", "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 64,
                                                                  "max_num_batched_tokens": 128},
            "hardware": {"device_name": "Test GPU"}}
    if kv_cache:
        meta["kv_cache"] = {"num_kv_tokens": 4096}
    (d / "vllm_meta.json").write_text(json.dumps(meta))
    (d / "profile_meta.yaml").write_text("gpu: Test GPU\nmodel: meta-llama/Llama-3.1-8B\nvllm_version: 0.19.0\n")
    return d


def test_llmservingsim_iteration_times(tmp_path):
    m = load_llmservingsim(lss_run(tmp_path / "run"))
    assert m.meta.n_layers == 32 and m.meta.b_max == 128 and m.meta.k_max == 64
    assert m.meta.kv_capacity_tokens == 4096 and m.meta.gpu == "Test GPU" and m.meta.model == "Llama-3.1-8B"
    L = 32

    def dense(b):  # embedding + final norm once, 8 per-layer entries (2 layer norms) per layer, 1 us/token each
        return 2 * b + L * 8 * b

    def per_seq(s):
        return 2 * (100.0 + s)

    pre = m.where("prefill")
    assert len(pre) == 1  # the chunk with prior context is left out by default
    assert pre.seconds[0] == pytest.approx((dense(16) + L * 50 + per_seq(1)) / 1e6)
    dec = m.where("decode")
    assert dec.tokens.tolist() == [4] and dec.kv_tokens.tolist() == [256]
    assert dec.seconds[0] == pytest.approx((dense(4) + L * 10 + per_seq(4)) / 1e6)
    mix = m.where("mixed")
    assert mix.tokens.tolist() == [20] and mix.kv_tokens.tolist() == [256]
    assert mix.seconds[0] == pytest.approx((dense(20) + L * 70 + per_seq(5)) / 1e6)
    assert any("dense grid" in n for n in m.meta.notes)  # 128 + 16 tokens is beyond the grid
    lin = m.where("linear")
    assert np.allclose(lin.seconds, (dense(lin.tokens) + per_seq(1)) / 1e6)
    m2 = load_llmservingsim(tmp_path / "run", include_prefill_context=True)
    assert len(m2.where("prefill")) == 2


def test_llmservingsim_bad_input(tmp_path):
    d = lss_run(tmp_path / "run", kv_cache=False)
    assert load_llmservingsim(d).meta.kv_capacity_tokens is None
    with pytest.raises(FileNotFoundError):
        load_llmservingsim(d, tp=2)
    (d / "vllm_meta.json").write_text("{not json")
    with pytest.raises(DataError, match="JSON"):
        load_llmservingsim(d)
    (d / "vllm_meta.json").write_text(json.dumps({"model": "acme/unknown-model"}))
    (d / "profile_meta.yaml").write_text("")
    with pytest.raises(ParameterError, match="n_layers"):
        load_llmservingsim(d)
    assert load_llmservingsim(d, n_layers=2).meta.n_layers == 2
    with pytest.raises(ParameterError, match="run_dir"):
        load_llmservingsim(d / "profile_tp1_dense.csv")


SPLIT_HEADER = ["model", "hardware", "prompt_size", "batch_size", "token_size", "peak_power", "average_power",
                "prompt_time", "token_time", "e2e_time", "tensor_parallel"]


def test_splitwise(tmp_path):
    rows = [["llama2-70b", "a100-80gb", 512, 2, 128, 1, 1, 200.0, 40.0, 0, 8],
            ["llama2-70b", "a100-80gb", 1024, 1, 256, 1, 1, 180.0, 38.0, 0, 8],
            ["llama2-70b", "h100-80gb-pcap", 512, 2, 128, 1, 1, 260.0, 30.0, 0, 8],
            ["llama2-70b", "a100-80gb", 512, 2, 128, 1, 1, 120.0, 30.0, 0, 4]]
    p = write_csv(tmp_path / "perf_model.csv", SPLIT_HEADER, rows)
    m = load_splitwise(p)
    assert m.meta.model == "Llama-2-70B" and m.meta.tp == 8 and len(m) == 4
    pre, dec = m.where("prefill"), m.where("decode")
    assert sorted(pre.tokens) == [1024, 1024] and sorted(pre.seconds) == [0.18, 0.2]
    assert sorted(dec.tokens) == [1, 2]
    assert sorted(dec.kv_tokens) == [1024 + 128, 2 * (512 + 64)]
    pc = load_splitwise(p, hardware="h100-80gb-pcap")
    assert any("derived" in n for n in pc.meta.notes)
    with pytest.raises(UnknownNameError):
        load_splitwise(p, model="gpt-5")
    with pytest.raises(UnknownNameError):
        load_splitwise(p, hardware="tpu")
    with pytest.raises(ParameterError, match="tp"):
        load_splitwise(p, tp=2)


def test_sarathi(tmp_path):
    head = ["", "batch_num_tokens", "batch_num_decode_tokens", "batch_num_prefill_tokens", "operation", "Batch Id",
            "batch_size", "batch_execution_time", "inter_batch_delay", "operation_time_per_token"]
    write_csv(tmp_path / "figure-2_decode.csv", head, [[0, 1, 1, 0, "x", 0, 1, 0.05, 0, 50.0],
                                                       [1, 4, 4, 0, "x", 0, 4, 0.06, 0, 15.0]])
    write_csv(tmp_path / "figure-2_prefill.csv", head, [[0, 128, 0, 128, "x", 0, 1, 0.08, 0, 0.625],
                                                        [1, 256, 0, 256, "x", 0, 1, 0.07, 0, 0.2734]])
    m = load_sarathi_figure2(tmp_path)
    assert m.meta.model == "Yi-34B" and m.meta.tp == 2
    assert np.allclose(sorted(m.seconds), [0.05, 0.06, 0.07, 0.08])  # already seconds
    assert any("not increasing" in n for n in m.meta.notes)
    h2 = ["batch_num_prefill_tokens", "batch_num_decode_tokens", "batch_size", "Batch Id", "batch_num_tokens",
          "batch_execution_time", "inter_batch_delay", "per_token_time", "linear", "attention"]
    write_csv(tmp_path / "table-2_results.csv", h2, [[0, 4, 4, 0, 4, 68.0, 0, 17.0, 0, 0],
                                                     [1021, 3, 4, 0, 1024, 217.6, 0, 0.2125, 0, 0],
                                                     [1024, 0, 1, 0, 1024, 217.2, 0, 0.2121, 0, 0]])
    t = load_sarathi_table2(tmp_path)
    assert t.phase.tolist() == ["decode", "mixed", "prefill"]
    assert t.seconds.tolist() == pytest.approx([0.068, 0.2176, 0.2172])  # ms -> s


def test_load_measured_refuses_unknown(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DataError):
        load_measured(tmp_path / "x.csv")
    with pytest.raises(DataError):
        load_measured(tmp_path)
    with pytest.raises(ParameterError):
        load_measured(3)


def test_measured_object_validates_and_is_frozen(tmp_path):
    m = load_vidur(vidur_mlp(tmp_path / "mlp.csv"))
    with pytest.raises(ValueError):
        m.tokens[0] = 5
    with pytest.raises(ParameterError, match="phase"):
        m.where("warmup")
    with pytest.raises(DataError):
        m.where("decode")
    d = m.to_dict()
    assert d["meta"]["source"] == "microsoft/vidur" and len(d["tokens"]) == len(m)
    with pytest.raises(FluidqError):
        MeasuredBatchTimes(tokens=[1.0], seconds=[-1.0], kv_tokens=None, phase=["linear"], meta=m.meta)


def test_llmservingsim_uses_every_operator_or_refuses_it_by_name(tmp_path):
    # issue 16: an operator in the profile (Qwen3's qk_norm) was dropped silently
    base = load_llmservingsim(lss_run(tmp_path / "run"))
    d = lss_run(tmp_path / "qk")
    rows = (d / "profile_tp1_dense.csv").read_text().splitlines()
    extra = [f"qk_norm,{b},{0.5 * b}" for b in [1, 2, 4, 8, 16, 32, 64, 128]]
    (d / "profile_tp1_dense.csv").write_text("\n".join(rows + extra) + "\n")
    m = load_llmservingsim(d)
    lin, lin0 = m.where("linear"), base.where("linear")
    assert np.allclose(lin.seconds - lin0.seconds, 32 * 0.5 * lin.tokens / 1e6)  # once per layer, 32 layers
    e = lss_run(tmp_path / "odd")
    (e / "profile_tp1_dense.csv").write_text((e / "profile_tp1_dense.csv").read_text()
                                             + "".join(f"mystery_op,{b},1.0\n" for b in [1, 2, 4, 8, 16, 32, 64, 128]))
    with pytest.raises(DataError, match="unknown operator.*'mystery_op'"):
        load_llmservingsim(e)


def test_the_validation_iteration_model_uses_the_same_operator_table(tmp_path):
    # the replay's iteration model read the same profiles with its own list and dropped what it did not know
    from fluidq.batchtime.operators import lss_iteration_model

    e = lss_run(tmp_path / "odd")
    (e / "profile_tp1_dense.csv").write_text((e / "profile_tp1_dense.csv").read_text()
                                             + "".join(f"mystery_op,{b},1.0\n" for b in [1, 2, 4, 8, 16, 32, 64, 128]))
    with pytest.raises(DataError, match="unknown operator.*'mystery_op'"):
        lss_iteration_model(e, n_layers=32)
    base = lss_iteration_model(lss_run(tmp_path / "run"), n_layers=32)
    d = lss_run(tmp_path / "qk")
    (d / "profile_tp1_dense.csv").write_text((d / "profile_tp1_dense.csv").read_text()
                                             + "".join(f"qk_norm,{b},{0.5 * b}\n" for b in [1, 2, 4, 8, 16, 32, 64, 128]))
    qk = lss_iteration_model(d, n_layers=32)
    assert qk.linear_us(64.0) == pytest.approx(base.linear_us(64.0) + 0.5 * 64)  # per layer, once
