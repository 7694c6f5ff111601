"""``fluidq capacity``'s parallel flags (issues 16, 20, a new user's review): an error names the flag the user
typed, not the library's parameter (``parameters_as_flags``)."""
import re

import pytest

from fluidq.testing.cli import run_cli
from fluidq.validate import validation_dir

LSS = validation_dir() / "data" / "llmservingsim"
LLAMA = str(LSS / "RTXPRO6000_Llama-3.1-8B")


@pytest.mark.parametrize("argv,flag", [
    (["--data-parallel-size", "0"], "--data-parallel-size=0"),
    (["--pipeline-parallel-size", "0"], "--pipeline-parallel-size=0"),
    (["--enable-expert-parallel"], "--enable-expert-parallel"),
    (["--method", "simulate", "--replications", "1"], "--replications=1"),
])
def test_profile_dir_errors_name_the_flag(capsys, argv, flag):
    rc, out, err = run_cli(["capacity", "--profile-dir", LLAMA, *argv], capsys)
    assert rc != 0
    assert flag in err, err
    for name in ("data_parallel_size", "pipeline_parallel_size", "enable_expert_parallel", "replications"):
        assert not re.search(rf"(?<![-\w]){name}=", err), err


def test_expert_parallel_on_a_dense_model_says_why(capsys):
    rc, out, err = run_cli(["capacity", "--profile-dir", LLAMA, "--enable-expert-parallel"], capsys)
    assert rc != 0 and "dense" in err and "Llama-3.1-8B" in err, err


# ------------------------------------------------------------------ --gpu: engines, data parallel, pipeline, KV dtype
def _cap(capsys, *argv):
    import json

    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-8b", "--prompt", "1000", "--output",
                            "200", *argv, "--json"], capsys)
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.parametrize("flag", ["--engines", "--data-parallel-size"])
def test_gpu_capacity_of_identical_engines_is_the_sum(capsys, flag):
    one = _cap(capsys)
    three = _cap(capsys, flag, "3")
    assert three["tokens_per_s"] == pytest.approx(3 * one["tokens_per_s"], rel=1e-12)
    assert three["requests_per_s"] == pytest.approx(3 * one["requests_per_s"], rel=1e-12)
    assert three["binding"] == one["binding"]
    assert all(three["limits"][k] == pytest.approx(3 * v, rel=1e-12) for k, v in one["limits"].items())
    assert three["stability_region"]["tokens_per_s"] == pytest.approx(3 * one["stability_region"]["tokens_per_s"],
                                                                      rel=1e-9)
    assert three["inputs"]["n_engines"] == 3 and three["inputs"]["kv_capacity_tokens"] == one["inputs"]["kv_capacity_tokens"]


def test_gpu_engines_as_check_counts_them(capsys):
    # `fluidq check --gpu --engines 3` puts a rate's load against the same engines' lambda*: capacity's load basis
    # (the flow balance under the cache's rules where max_num_seqs binds, h-basis; the region line before)
    cap = _cap(capsys, "--engines", "3")
    rc, out, err = run_cli(["check", "--gpu", "h100", "--model", "llama-3.1-8b", "--prompt", "1000", "--output", "200",
                            "--engines", "3", "--rate", "50"], capsys)
    assert rc == 0, err
    load = float(re.search(r"load (\d+\.\d+)", out).group(1))
    assert cap["load_basis"] == "kv_rules"
    assert load == pytest.approx(50 / cap["load_basis_requests_per_s"], abs=1e-4)


def test_gpu_text_answer_says_the_engines(capsys):
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-8b", "--engines", "2",
                            "--data-parallel-size", "2"], capsys)
    assert rc == 0, err
    assert "4 identical engines (2 servers x DP2)" in out and "each of the 4 engines:" in out


def test_gpu_refuses_pipeline_parallel_naming_what_is_missing(capsys):
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-8b", "--pipeline-parallel-size", "2"],
                           capsys)
    assert rc != 0 and "--pipeline-parallel-size=2" in err and "no pipeline stages" in err and "--profile-dir" in err


def test_gpu_refuses_data_parallel_of_a_moe_model(capsys):
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "Qwen3-30B-A3B-Instruct-2507",
                            "--data-parallel-size", "2"], capsys)
    assert rc != 0 and "--data-parallel-size=2" in err and "lockstep" in err and "--engines" in err, err


@pytest.mark.parametrize("flag", ["--data-parallel-size", "--engines"])
def test_gpu_refuses_zero_engines(capsys, flag):
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-8b", flag, "0"], capsys)
    assert rc != 0 and f"{flag}=0" in err, err


def _fp8_doubles(auto_tokens, fp8_tokens, block_size):
    """vLLM's planner (fluidq.models.kv_capacity_estimate): blocks = floor(bytes left / (bytes per token x block)), the
    bytes left (memory x utilization - weights - reserve) the same for both caches.  A bf16 model's KV values take 2
    bytes, fp8's 1: floor(2 x left / (B x block)) is twice floor(left / (B x block)) or one block more."""
    assert fp8_tokens - 2 * auto_tokens in (0, block_size), (auto_tokens, fp8_tokens, block_size)


def test_gpu_kv_cache_dtype_fp8_doubles_a_bf16_model_s_cache(capsys):
    import json

    from fluidq.models import kv_capacity_estimate, load_gpu, load_model

    auto = _cap(capsys)
    fp8 = _cap(capsys, "--kv-cache-dtype", "fp8")
    inp = fp8["inputs"]
    # the planner on the GPU table's memory (H100: 79.22 GiB, vLLM's memory-profiling log, fluidq/models/gpus.json)
    # and the budgets the answer states: the cache the answer uses, exactly
    ref = kv_capacity_estimate(load_model(inp["model"]), gpu_memory_gib=load_gpu(inp["gpu"]).memory_gib,
                               max_num_batched_tokens=inp["max_num_batched_tokens"],
                               max_num_seqs=inp["max_num_seqs"], block_size=inp["block_size"], kv_bytes_per_value=1)
    kv_a, kv_f = auto["inputs"]["kv_capacity_tokens"], inp["kv_capacity_tokens"]
    assert kv_f == ref.tokens and inp["kv_cache_dtype"] == "fp8" and auto["inputs"]["kv_cache_dtype"] == "auto"
    _fp8_doubles(kv_a, kv_f, inp["block_size"])
    # where the cache binds, the capacity follows it (Llama-3.1-70B on 4 x H100, 8000 + 1000 tokens)
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-70b", "--tensor-parallel-size", "4",
                            "--prompt", "8000", "--output", "1000", "--json"], capsys)
    a = json.loads(out)
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-70b", "--tensor-parallel-size", "4",
                            "--prompt", "8000", "--output", "1000", "--kv-cache-dtype", "fp8", "--json"], capsys)
    f = json.loads(out)
    _fp8_doubles(a["inputs"]["kv_capacity_tokens"], f["inputs"]["kv_capacity_tokens"], f["inputs"]["block_size"])
    assert a["binding"] == "kv_cache" and f["tokens_per_s"] > a["tokens_per_s"]
    # the residents the cache holds under vLLM's rules (predict_capacity's flow balance, its docstring's renewal
    # argument): whole-prompt admission leaves a room free below the prompt that stopped the admissions, uniform on
    # [0, p): p / 2 = 4000 tokens on average for fixed 8000-token prompts; each resident holds its mean decode context
    # m_p + m_d / 2 = 8500 tokens, in whole blocks (rounding up).  So kv - 8000 <= N x 8500 <= kv - 4000 for both
    # caches, which makes the fp8 cache's residents about twice bf16's (measured 2026-12-07: N = 57.29 and 115.05,
    # 4,435 and 4,867 tokens not held)
    for d in (a, f):
        kv, n = d["inputs"]["kv_capacity_tokens"], d["limits"]["kv_cache"]
        assert kv - 8000 <= n * 8500 <= kv - 4000, (kv, n)


def test_profile_dir_kv_cache_dtype_fp8(capsys):
    import json

    out = {}
    for dt in ("auto", "fp8"):
        rc, o, err = run_cli(["capacity", "--profile-dir", LLAMA, "--kv-cache-dtype", dt, "--json"], capsys)
        assert rc == 0, err
        out[dt] = json.loads(o)["inputs"]
    _fp8_doubles(out["auto"]["kv_capacity_tokens"], out["fp8"]["kv_capacity_tokens"], out["fp8"]["block_size"])
    assert out["fp8"]["kv_cache_dtype"] == "fp8"


def test_kv_cache_dtype_needs_gpu_or_profile_dir(capsys):
    rc, out, err = run_cli(["capacity", "--kv-cache-dtype", "fp8"], capsys)
    assert rc != 0 and "--kv-cache-dtype" in err and "--profile-dir or --gpu" in err, err
