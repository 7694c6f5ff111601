"""``fluidq models``: list, show, kv; JSON output; every bad input one line, exit 2, the option named."""
import json

import pytest

from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.models import kv_capacity_estimate, list_models, load_model

from hf_configs import LLAMA_8B  # tests/models/hf_configs.py

CFG = LLAMA_8B


run = run_cli


one_line = assert_one_line


@pytest.fixture
def config(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(CFG))
    return str(p)


def test_list_table_and_json(capsys):
    rc, out, _ = run(["models"], capsys)
    assert rc == 0 and "Llama-3.1-8B" in out and "Qwen3-30B-A3B" in out
    rc, out, _ = run(["models", "list", "--json"], capsys)
    rows = json.loads(out)
    assert rc == 0 and [r["name"] for r in rows] == [m.name for m in list_models()]
    assert rows[0]["derived"]["param_count"] == list_models()[0].param_count


def test_show_name_and_config(capsys, config):
    rc, out, _ = run(["models", "show", "Qwen3-30B-A3B"], capsys)
    assert rc == 0 and "30,532,122,624" in out and "active parameters" in out and "3,353,032,704" in out
    rc, out, _ = run(["models", "show", "--config", config, "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["n_kv_heads"] == 8 and d["derived"]["kv_bytes_per_token"] == 131072
    assert d["derived"]["param_count"] == load_model("Llama-3.1-8B").param_count


def test_kv_json_matches_the_library(capsys, config):
    argv = ["models", "kv", "--config", config, "--gpu-memory-gib", "80", "--gpu-memory-utilization", "0.85",
            "--tensor-parallel-size", "2", "--block-size", "32", "--json"]
    rc, out, _ = run(argv, capsys)
    d = json.loads(out)
    e = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=80, gpu_memory_utilization=0.85,
                             tensor_parallel_size=2, block_size=32)
    assert rc == 0 and d["tokens"] == e.tokens and d["blocks"] == e.blocks and d["tokens"] % 32 == 0
    assert d["reason"].startswith("an estimate") and d["reserve_estimated"] is True
    rc, out, _ = run(["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80"], capsys)
    assert rc == 0 and "tokens" in out and "estimate" in out


@pytest.mark.parametrize("argv, words", [
    (["models", "show"], ["NAME", "--config"]),
    (["models", "kv", "--gpu-memory-gib", "80"], ["NAME", "--config"]),
    (["models", "show", "GPT-5"], ["unknown model", "GPT-5", "Llama-3.1-8B"]),
    (["models", "show", "Llama-3.1-8B", "--config", "x.json"], ["NAME", "--config"]),
    (["models", "list", "Llama-3.1-8B"], ["NAME", "list"]),
    (["models", "list", "--config", "x.json"], ["--config", "list"]),
    (["models", "show", "Llama-3.1-8B", "--gpu-memory-gib", "80"], ["--gpu-memory-gib", "ignored"]),
    (["models", "list", "--block-size", "16"], ["--block-size", "ignored"]),
    (["models", "kv", "Llama-3.1-8B"], ["--gpu-memory-gib"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "8"], ["--gpu-memory-gib", "weights do not fit"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "nan"], ["--gpu-memory-gib"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--gpu-memory-utilization", "0"],
     ["--gpu-memory-utilization", "(0, 1]"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--gpu-memory-utilization", "2"],
     ["--gpu-memory-utilization"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--tensor-parallel-size", "3"],
     ["--tensor-parallel-size", "n_heads"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--tensor-parallel-size", "1.5"],
     ["--tensor-parallel-size"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--block-size", "0"], ["--block-size"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--expert-parallel-size", "2"],
     ["--expert-parallel-size", "dense"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--activation-reserve-gib", "-1"],
     ["--activation-reserve-gib"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--max-num-batched-tokens", "0"],
     ["--max-num-batched-tokens"]),
    (["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--max-num-seqs", "-5"], ["--max-num-seqs"]),
    (["models", "frobnicate"], ["invalid choice"]),
])
def test_bad_input_is_one_line(argv, words, capsys):
    one_line(argv, capsys, *words)


def test_bad_config_files_are_one_line(tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_text("{oops")
    one_line(["models", "show", "--config", str(p)], capsys, "--config", "not valid JSON")
    p.write_text(json.dumps({**CFG, "model_type": "gpt2"}))
    one_line(["models", "kv", "--config", str(p), "--gpu-memory-gib", "80"], capsys, "'model_type'", "gpt2")
    p.write_text(json.dumps({k: v for k, v in CFG.items() if k != "vocab_size"}))
    one_line(["models", "show", "--config", str(p)], capsys, "'vocab_size'", str(p))
    one_line(["models", "show", "--config", str(tmp_path / "nope.json")], capsys, "--config", "no such file")
    one_line(["models", "show", "--config", ""], capsys, "--config")
    (tmp_path / "empty").mkdir()  # a folder is read through its config.json; one without any is refused
    one_line(["models", "show", "--config", str(tmp_path / "empty")], capsys, "--config", "folder")


def test_kv_cache_dtype_and_max_model_len(capsys):
    base = ["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--json"]
    rc, out, _ = run(base + ["--kv-cache-dtype", "fp8"], capsys)
    assert rc == 0 and json.loads(out)["kv_bytes_per_token_per_gpu"] == 65536
    one_line(["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "23.52", "--max-model-len", "131072"], capsys,
             "--max-model-len", "refuses")
    one_line(["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--kv-cache-dtype", "int4"], capsys,
             "--kv-cache-dtype")


def test_dtype_option(capsys, config):
    rc, out, _ = run(["models", "show", "Llama-2-7B", "--dtype", "bfloat16", "--json"], capsys)
    assert rc == 0 and json.loads(out)["dtype"] == "bfloat16"
    rc, out, _ = run(["models", "show", "--config", config, "--dtype", "float32", "--json"], capsys)
    assert rc == 0 and json.loads(out)["derived"]["kv_bytes_per_token"] == 2 * 131072
    one_line(["models", "list", "--dtype", "float16"], capsys, "--dtype", "ignored")
    one_line(["models", "show", "Llama-2-7B", "--dtype", "int8"], capsys, "--dtype")
