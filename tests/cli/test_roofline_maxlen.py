"""vLLM's ``--max-model-len`` in the files-free CLI (``--gpu``/``--model``) and a network's roofline station
(issues 16, 20).

vLLM refuses to start when its KV cache cannot hold one request of ``max_model_len`` tokens
(vllm/v1/core/kv_cache_utils.py, ``check_enough_kv_cache_memory``), and its default ``max_model_len`` is the
model's ``max_position_embeddings`` (131,072 for Llama-3.1).  Before: ``capacity --gpu RTX-4090 --model
llama-3.1-8b`` answered for a deployment vLLM would not start (a planned cache of about 43k tokens), silently,
and there was no ``--max-model-len`` to say what the deployment runs with.
"""
import json

import pytest

from cli_err import cli_error
from fluidq.cli import main
from fluidq.errors import FluidqError
from fluidq.models import kv_capacity_estimate, load_gpu, load_model

SMALL = ["--gpu", "RTX-4090", "--model", "llama-3.1-8b"]


def _planned(model="Llama-3.1-8B", gpu="RTX-4090", **kw):
    """The planner's cache for the CLI's defaults (2048 batched tokens, 256 sequences, utilization 0.9)."""
    return kv_capacity_estimate(load_model(model), gpu_memory_gib=load_gpu(gpu).memory_gib, **kw)


def _ok(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc in (0, None), (rc, out, err)
    return out


_err = cli_error  # tests/cli/cli_err.py


def test_the_default_context_that_does_not_fit_is_said_not_silent(capsys):
    tokens = _planned().tokens
    assert tokens < 131_072  # the case: the RTX 4090's cache holds far less than Llama-3.1's context
    out = _ok(["capacity", *SMALL], capsys)
    line = [ln for ln in out.splitlines() if ln.startswith("max-model-len")]
    assert len(line) == 1, out
    assert "would refuse to start" in line[0] and "131,072" in line[0], line
    assert f"--max-model-len <= {tokens:,}" in line[0], line
    d = json.loads(_ok(["capacity", *SMALL, "--json"], capsys))["max_model_len"]
    assert d["vllm_starts"] is False and d["value"] == 131_072 and d["assumed_at_most"] == tokens
    assert d["source"].startswith("max_position_embeddings") and "would refuse" in d["note"]


def test_a_default_that_fits_carries_no_note(capsys):
    out = _ok(["capacity", "--gpu", "H100", "--model", "llama-3.1-8b"], capsys)
    assert "max-model-len" not in out and "would refuse" not in out, out
    d = json.loads(_ok(["capacity", "--gpu", "H100", "--model", "llama-3.1-8b", "--json"], capsys))["max_model_len"]
    assert d["vllm_starts"] is True and d["note"] is None and d["assumed_at_most"] is None
    assert d["longest_request_cached_tokens"] == _planned(gpu="H100").tokens >= 131_072


def test_an_explicit_max_model_len_beyond_the_cache_is_refused_naming_the_flag(capsys):
    tokens = _planned().tokens
    # vLLM's rule in whole blocks: the cache's tokens start, one token more does not
    d = json.loads(_ok(["capacity", *SMALL, "--max-model-len", str(tokens), "--json"], capsys))["max_model_len"]
    assert d["vllm_starts"] is True and d["value"] == tokens and d["source"] == "--max-model-len"
    err = _err(["capacity", *SMALL, "--max-model-len", str(tokens + 1)], capsys)
    assert f"--max-model-len {tokens + 1:,}" in err and "refuses to start" in err, err
    assert f"at most {tokens:,} tokens" in err and "--gpu-memory-utilization" in err, err
    assert "--tensor-parallel-size 2" in err and "GPU with more memory" in err, err
    # a utilization is suggested only where one (up to 0.98) holds the request: not Llama-3.1's full context
    err = _err(["capacity", *SMALL, "--max-model-len", "131072"], capsys)
    assert "--gpu-memory-utilization" not in err and "--tensor-parallel-size 2" in err, err
    # the same refusal on every command that takes --gpu
    for cmd in (["check", "--load", "0.5", "--method", "analytic"], ["region"], ["simulate", "--requests", "50"]):
        err = _err(cmd + [*SMALL, "--max-model-len", "100000"], capsys)
        assert "--max-model-len 100,000" in err and f"{tokens:,}" in err, (cmd, err)


def test_a_given_kv_capacity_is_the_cache_checked(capsys):
    err = _err(["capacity", *SMALL, "--max-model-len", "4097", "--kv-capacity", "4100"], capsys)
    assert "(--kv-capacity)" in err and "at most 4,096 tokens" in err and "larger --kv-capacity" in err, err
    _ok(["capacity", *SMALL, "--max-model-len", "4096", "--kv-capacity", "4100"], capsys)


def test_a_fitting_max_model_len_is_the_context_limit(capsys, tmp_path):
    # without it the request is accepted (Llama-3.1's context is 131,072); with it, refused naming it
    _ok(["capacity", *SMALL, "--prompt", "8000", "--output", "500"], capsys)
    err = _err(["capacity", *SMALL, "--max-model-len", "8192", "--prompt", "8000", "--output", "500"], capsys)
    assert "--prompt=8000" in err and "at most 8,192 tokens, --max-model-len" in err, err
    out = _ok(["capacity", *SMALL, "--max-model-len", "8192", "--prompt", "8000", "--output", "192"], capsys)
    assert "would refuse" not in out, out
    for cmd in (["check", "--load", "0.5", "--method", "analytic"], ["region"]):
        err = _err(cmd + [*SMALL, "--max-model-len", "8192", "--prompt", "8000", "--output", "500"], capsys)
        assert "at most 8,192 tokens, --max-model-len" in err, (cmd, err)
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,500,100\n0.5,9000,10\n1.0,300,50\n")
    err = _err(["capacity", *SMALL, "--max-model-len", "8192", "--trace", str(trace)], capsys)
    assert "--trace=" in err and "1 of its 3 requests are longer" in err and "raise --max-model-len" in err, err


def test_beyond_the_models_positions_and_without_gpu_refused(capsys):
    err = _err(["capacity", *SMALL, "--max-model-len", "200000"], capsys)
    assert "--max-model-len=200000" in err and "131,072" in err and "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in err, err
    err = _err(["capacity", "--max-model-len", "4096"], capsys)
    assert "--max-model-len is read only with --gpu" in err, err
    err = _err(["region", "--max-model-len", "4096"], capsys)
    assert "--max-model-len is read only with --gpu" in err, err


@pytest.mark.parametrize("cmd, key", [(["check", "--load", "0.5", "--method", "analytic"], ("inputs",)),
                                      (["region", "--prompt", "100", "--output", "100"], ()),
                                      (["simulate", "--requests", "50", "--policy", "vllm"], ()),
                                      (["latency", "--horizon", "10", "--replications", "2", "--loads", "0.5",
                                        "--orderings", "fcfs"], ("inputs",))])
def test_every_gpu_command_says_it(cmd, key, capsys):
    out = _ok(cmd + SMALL, capsys)
    assert "would refuse to start" in out and "max-model-len" in out, out
    d = json.loads(_ok(cmd + SMALL + ["--json"], capsys))
    d = d[0] if isinstance(d, list) else d
    for k in key:
        d = d[k]
    assert d["max_model_len"]["vllm_starts"] is False and d["max_model_len"]["assumed_at_most"] == _planned().tokens
    d = json.loads(_ok(cmd + SMALL + ["--max-model-len", "16384", "--json"], capsys))
    d = d[0] if isinstance(d, list) else d
    for k in key:
        d = d[k]
    assert d["max_model_len"] == {**d["max_model_len"], "value": 16384, "vllm_starts": True, "note": None}


def test_sliding_window_layers_hold_a_longer_request_than_the_logged_tokens():
    """vLLM's check counts a windowed layer at min(window - 1 + max_num_batched_tokens, n) tokens plus a block
    (SlidingWindowSpec.max_memory_usage_bytes): Gemma-3-27B on an H100 starts at 131,072 although its logged cache
    is far smaller; the planner refuses one block past the longest request and accepts the longest."""
    est = _planned("gemma-3-27b", "H100")
    longest = est.longest_request()
    assert est.tokens < 131_072 <= longest
    # the rule by hand (vLLM's groups, tests/models/test_kv_cache_groups.py): 16,106 pool blocks for 1 full + 6
    # windowed groups of 10 layers; a windowed group needs ceil((1,024 - 1 + 2,048) / 16) + 1 = 193 blocks, the full
    # group ceil(n / 16): 16,106 - 6 x 193 = 14,948 blocks = 239,168 tokens
    m = load_model("gemma-3-27b")
    bs = est.block_size
    assert est.pool_blocks == 16_106 and longest == 14_948 * 16 == 239_168
    gib = load_gpu("H100").memory_gib
    kv_capacity_estimate(m, gpu_memory_gib=gib, max_model_len=longest)
    with pytest.raises(FluidqError, match="max_model_len"):
        kv_capacity_estimate(m, gpu_memory_gib=gib, max_model_len=longest + bs)
    # without windowed layers: the logged tokens
    assert _planned().longest_request() == _planned().tokens


def test_a_network_roofline_station_takes_max_model_len():
    from fluidq.network.toml import network_from_dict

    def case(bt, prompt=1000):
        return {"name": "r", "engines": {"E": {"batch_time": bt}},
                "classes": [{"name": "A", "rate_per_s": 1.0,
                             "route": [{"engine": "E", "prompt": prompt, "output": 200}]}]}

    bt = {"kind": "roofline", "model": "Llama-3.1-8B", "gpu": "RTX-4090"}
    tokens = _planned().tokens
    network_from_dict(case({**bt, "max_model_len": tokens}))
    with pytest.raises(FluidqError, match="max_model_len") as e:
        network_from_dict(case({**bt, "max_model_len": tokens + 1}))
    assert f"{tokens:,}" in str(e.value)
    with pytest.raises(FluidqError, match="max_model_len"):
        network_from_dict(case({**bt, "max_model_len": 200_000}))
    network_from_dict(case(bt, prompt=3000))  # the model's context: a 3,200-token hop runs
    with pytest.raises(FluidqError, match="max_model_len") as e:
        network_from_dict(case({**bt, "max_model_len": 2048}, prompt=3000))
    assert "2,048" in str(e.value) and "3,200" in str(e.value)
