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
    # `fluidq check --gpu --engines 3` puts a rate's load against the same engines' lambda*: capacity's region line
    cap = _cap(capsys, "--engines", "3")
    rc, out, err = run_cli(["check", "--gpu", "h100", "--model", "llama-3.1-8b", "--prompt", "1000", "--output", "200",
                            "--engines", "3", "--rate", "50"], capsys)
    assert rc == 0, err
    load = float(re.search(r"load (\d+\.\d+)", out).group(1))
    # (m_p + m_d - 1 = 1199 tokens a request: the prefill emits the first token)
    assert load == pytest.approx(50 * 1199 / cap["stability_region"]["tokens_per_s"], abs=1e-4)


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


def test_gpu_kv_cache_dtype_fp8_doubles_a_bf16_model_s_cache(capsys):
    import json

    from fluidq.models import kv_capacity_estimate, load_model

    auto = _cap(capsys)
    fp8 = _cap(capsys, "--kv-cache-dtype", "fp8")
    ref = kv_capacity_estimate(load_model("llama-3.1-8b"), gpu_memory_gib=79.22, kv_bytes_per_value=1)
    kv_a, kv_f = auto["inputs"]["kv_capacity_tokens"], fp8["inputs"]["kv_capacity_tokens"]
    assert kv_f == ref.tokens or abs(kv_f - ref.tokens) <= 16 * 4  # the table's memory, whole blocks
    assert 1.9 < kv_f / kv_a <= 2.0 and fp8["inputs"]["kv_cache_dtype"] == "fp8"
    # where the cache binds, the capacity follows it (Llama-3.1-70B on 4 x H100, 8000 + 1000 tokens)
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-70b", "--tensor-parallel-size", "4",
                            "--prompt", "8000", "--output", "1000", "--json"], capsys)
    a = json.loads(out)
    rc, out, err = run_cli(["capacity", "--gpu", "h100", "--model", "llama-3.1-70b", "--tensor-parallel-size", "4",
                            "--prompt", "8000", "--output", "1000", "--kv-cache-dtype", "fp8", "--json"], capsys)
    f = json.loads(out)
    assert a["binding"] == "kv_cache" and f["tokens_per_s"] > a["tokens_per_s"]
    assert f["limits"]["kv_cache"] > 1.9 * a["limits"]["kv_cache"]


def test_profile_dir_kv_cache_dtype_fp8(capsys):
    import json

    out = {}
    for dt in ("auto", "fp8"):
        rc, o, err = run_cli(["capacity", "--profile-dir", LLAMA, "--kv-cache-dtype", dt, "--json"], capsys)
        assert rc == 0, err
        out[dt] = json.loads(o)["inputs"]
    assert 1.9 < out["fp8"]["kv_capacity_tokens"] / out["auto"]["kv_capacity_tokens"] <= 2.0
    assert out["fp8"]["kv_cache_dtype"] == "fp8"


def test_kv_cache_dtype_needs_gpu_or_profile_dir(capsys):
    rc, out, err = run_cli(["capacity", "--kv-cache-dtype", "fp8"], capsys)
    assert rc != 0 and "--kv-cache-dtype" in err and "--profile-dir or --gpu" in err, err
