"""Sanity of the files-free answer across scales (issue 20): properties any roofline estimate must have,
whatever its calibration -- more GPUs serve a KV-bound decode faster, larger models serve slower on the
same GPU, a MoE model's compute follows its active parameters -- and the big deployments answer (or are
refused by name) without crashing."""
import json

import pytest

from fluidq.batchtime.roofline import roofline
from fluidq.errors import ParameterError
from fluidq.models import load_model
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.validate.roofline import predict_roofline_deployment


def cap(model, gpu, tp=1, **kw):
    kw = {"max_num_seqs": 256, "max_num_batched_tokens": 8192, "input_tokens": 1000, "output_tokens": 1000, **kw}
    return predict_roofline_deployment(model, gpu, tensor_parallel_size=tp, **kw)


@pytest.mark.parametrize("model,gpu,tps", [("Llama-3.1-70B", "H100", (2, 4, 8)), ("Llama-3.1-8B", "L40S", (1, 2, 4)),
                                           ("Qwen2.5-32B", "A100", (1, 2, 4, 8))])
def test_kv_bound_decode_gains_from_tensor_parallelism(model, gpu, tps):
    """Long contexts on few GPUs: the KV cache binds, and each doubling of tp adds memory for it (the weights
    per GPU halve), so the capacity of the deployment rises."""
    res = [cap(model, gpu, tp, input_tokens=2000, output_tokens=1000) for tp in tps]
    assert res[0].binding == "kv_cache"
    assert all(b.tokens_per_s > a.tokens_per_s for a, b in zip(res, res[1:])), [r.tokens_per_s for r in res]
    kv = [r.inputs["kv_capacity_tokens"] for r in res]
    assert all(b > 2 * a for a, b in zip(kv, kv[1:]))  # more than double: the weights' share is freed too


@pytest.mark.parametrize("gpu", ["H100", "H200", "A100-80GB"])
def test_larger_models_serve_fewer_tokens_on_the_same_gpu(gpu):
    names = ["Qwen2.5-0.5B", "Llama-3.2-1B", "Llama-3.2-3B", "Llama-3.1-8B", "Qwen2.5-14B", "Qwen2.5-32B"]
    models = [load_model(n) for n in names]
    assert all(a.param_count < b.param_count for a, b in zip(models, models[1:]))
    tps = [cap(n, gpu, input_tokens=500, output_tokens=500).tokens_per_s for n in names]
    assert all(a > b for a, b in zip(tps, tps[1:])), dict(zip(names, tps))


def test_moe_compute_follows_active_parameters():
    """A long prefill is compute-bound: Qwen3-30B-A3B (3.35 B active of 30.5 B) takes about the time of a
    dense model of its active size (Qwen3-4B), a small fraction of a dense model of its total (Qwen3-32B)."""
    t = {n: float(roofline(n, "H100").prefill_only(8192)) for n in ("Qwen3-30B-A3B", "Qwen3-4B", "Qwen3-32B")}
    assert 0.5 < t["Qwen3-30B-A3B"] / t["Qwen3-4B"] < 2.0, t
    assert t["Qwen3-30B-A3B"] / t["Qwen3-32B"] < 0.2, t
    # decoding one token reads every expert's weights once the batch touches them all: memory follows the total
    small, large = (float(roofline("Qwen3-30B-A3B", "H100").decode_only(n, 0.0)) for n in (1, 256))
    assert large > 5 * small


def test_quantized_weights_decode_faster():
    base = roofline("Llama-3.1-70B", "H100", 4)
    fp8 = roofline("meta-llama/Llama-3.1-70B-Instruct-FP8", "H100", 4)
    awq = roofline("Llama-3.1-70B-Instruct-AWQ", "H100", 4)
    one = [float(r.decode_only(1, 1000.0)) for r in (base, fp8, awq)]  # weight-read-bound
    assert one[0] > one[1] > one[2]


def test_answer_says_it_is_a_roofline_estimate_with_its_error(capsys):
    rc, out, err = run_cli(["capacity", "--model", "Llama-3.1-8B", "--gpu", "L4"], capsys)
    assert rc == 0, err
    est = next(x for x in out.splitlines() if x.startswith("estimate"))
    assert "roofline estimate" in est and "MAPE" in est and "%" in est and "docs/reference/roofline.md" in est
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-8B", "--gpu", "L4", "--json"], capsys)
    assert json.loads(out)["inputs"]["estimate"].startswith("a roofline estimate")


@pytest.mark.parametrize("model,gpu,tp", [("Llama-3.1-70B", "H100", 4), ("Llama-3.1-70B", "H100", 8),
                                          ("Llama-3.1-405B", "H200", 8), ("Llama-3.1-405B-FP8", "H100", 8),
                                          ("DeepSeek-V3", "H200", 8), ("Qwen3-235B-A22B", "H100", 8)])
def test_big_deployments_answer_on_every_command(capsys, tmp_path, model, gpu, tp):
    dep = ["--model", model, "--gpu", gpu, "--tensor-parallel-size", str(tp), "--max-num-seqs", "256",
           "--max-num-batched-tokens", "8192"]
    rc, out, err = run_cli(["capacity", *dep, "--input-len", "2000", "--output-len", "500", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert d["tokens_per_s"] > 0 and d["binding"] in ("kv_cache", "k_max", "token_budget")
    for argv in (["check", "--rate", "1"], ["simulate", "--load", "0.5", "--horizon", "20"], ["region"]):
        rc, out, err = run_cli([*argv, *dep], capsys)
        assert rc == 0, (argv, err)


@pytest.mark.parametrize("model,gpu,tp,needle", [
    ("Llama-3.1-405B", "H100", 8, "weights 94.50 GiB per GPU"),
    ("DeepSeek-V3", "H100", 8, "the weights do not fit"),
    ("Llama-3.1-70B", "L4", 2, "--tensor-parallel-size 2"),
])
def test_models_that_do_not_fit_are_refused_with_the_planner_numbers(capsys, model, gpu, tp, needle):
    for command in ("capacity", "check", "simulate", "region"):
        assert_one_line([command, "--model", model, "--gpu", gpu, "--tensor-parallel-size", str(tp)], capsys,
                        "--gpu", "usable", needle)


@pytest.mark.parametrize("model,tp,needle", [("Llama-3.1-70B", 3, "divisor of n_heads=64"),
                                             ("Qwen2.5-7B", 8, "divisor of n_heads=28"),
                                             ("Phi-3-medium", 4, "divisor of n_kv_heads=10"),
                                             ("Llama-3.1-8B", 6, "sizes that split it: 1, 2, 4, 8, 16, 32")])
def test_tensor_parallel_sizes_that_do_not_split_the_model_are_refused(capsys, model, tp, needle):
    assert_one_line(["capacity", "--model", model, "--gpu", "H100", "--tensor-parallel-size", str(tp)], capsys,
                    "--tensor-parallel-size", needle)


def test_mlp_width_must_split_too():
    m = load_model("Llama-3.1-8B").replace(intermediate_size=14338)  # 2 x 7169: tp 4 splits the heads, not the MLP
    assert m.tensor_parallel_sizes(8) == [1, 2]
    moe = load_model("Qwen3-30B-A3B").replace(moe_intermediate_size=772)
    with pytest.raises(ParameterError, match="tensor_parallel_size=8: expected a divisor of moe_intermediate_size=772"):
        moe.kv_heads_per_gpu(8)
