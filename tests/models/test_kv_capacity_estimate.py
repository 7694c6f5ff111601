"""kv_capacity_estimate: vLLM's memory planner by hand, its refusals, and the one measured capacity."""
import json
import math
from pathlib import Path

import pytest

from fluidq.errors import ParameterError
from fluidq.models import activation_reserve_bytes, kv_capacity_estimate, load_model
from fluidq.models.memory import GIB, NON_TORCH_OVERHEAD_GIB

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "validation" / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B" / "vllm_meta.json"


def test_formula_by_hand_with_a_given_reserve():
    m = load_model("Llama-3.1-8B")
    e = kv_capacity_estimate(m, gpu_memory_gib=80, gpu_memory_utilization=0.9, activation_reserve_gib=2.0)
    left = int(80 * 0.9 * GIB) - m.weight_bytes - 2 * GIB
    assert e.kv_bytes == left
    assert e.blocks == left // (131072 * 16) and e.tokens == 16 * e.blocks
    assert not e.reserve_estimated and "given" in e.reason
    assert e.reason.startswith("an estimate")


def test_default_reserve_rule_by_hand():
    m = load_model("Llama-3.1-8B")
    act = 2048 * (4 * 4096 + 3 * 14336) * 2
    logits = 256 * 128256 * 4 * 2
    assert activation_reserve_bytes(m) == act + logits + int(NON_TORCH_OVERHEAD_GIB * GIB)
    q = load_model("Qwen3-30B-A3B")  # MoE: the top-k experts' width
    assert activation_reserve_bytes(q, max_num_seqs=1) == \
        2048 * (4 * 2048 + 3 * 8 * 768) * 2 + 151936 * 8 + int(NON_TORCH_OVERHEAD_GIB * GIB)
    e = kv_capacity_estimate(m, gpu_memory_gib=80)
    assert e.reserve_bytes == activation_reserve_bytes(m) and e.reserve_estimated and "estimated" in e.reason


def test_tensor_parallel_and_block_size():
    m = load_model("Llama-3.1-70B")
    with pytest.raises(ParameterError, match="gpu_memory_gib"):
        kv_capacity_estimate(m, gpu_memory_gib=80)  # 131 GiB of weights on one GPU
    e2 = kv_capacity_estimate(m, gpu_memory_gib=80, tensor_parallel_size=2)
    e4 = kv_capacity_estimate(m, gpu_memory_gib=80, tensor_parallel_size=4)
    assert e2.kv_bytes_per_token_per_gpu == 2 * e4.kv_bytes_per_token_per_gpu
    assert e4.tokens > 2 * e2.tokens  # more memory left per GPU and half the bytes per token
    e = kv_capacity_estimate(m, gpu_memory_gib=80, tensor_parallel_size=4, block_size=32)
    assert e.tokens % 32 == 0 and e.block_size == 32


def test_more_memory_never_fewer_tokens():
    m = load_model("Qwen3-8B")
    tokens = [kv_capacity_estimate(m, gpu_memory_gib=g).tokens for g in (24, 40, 48, 80, 141)]
    assert tokens == sorted(tokens)


def test_qwen3_moe_with_expert_parallelism():
    q = load_model("Qwen3-30B-A3B-Instruct-2507")
    plain = kv_capacity_estimate(q, gpu_memory_gib=94.97, max_num_seqs=128)
    ep = kv_capacity_estimate(q, gpu_memory_gib=94.97, max_num_seqs=128, expert_parallel_size=2)
    assert ep.weight_bytes_per_gpu < plain.weight_bytes_per_gpu and ep.tokens > plain.tokens


@pytest.mark.parametrize("kw, name", [
    ({"gpu_memory_utilization": 0}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": 1.01}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": float("nan")}, "gpu_memory_utilization"),
    ({"gpu_memory_gib": -1}, "gpu_memory_gib"),
    ({"gpu_memory_gib": float("inf")}, "gpu_memory_gib"),
    ({"gpu_memory_gib": 16}, "gpu_memory_gib"),  # the weights do not fit
    ({"gpu_memory_gib": 80, "activation_reserve_gib": 70}, "gpu_memory_gib"),  # nothing left for one block
    ({"tensor_parallel_size": 3}, "tensor_parallel_size"),
    ({"tensor_parallel_size": 0}, "tensor_parallel_size"),
    ({"block_size": 0}, "block_size"),
    ({"activation_reserve_gib": -1}, "activation_reserve_gib"),
    ({"max_num_batched_tokens": 0}, "max_num_batched_tokens"),
    ({"kv_bytes_per_value": 0}, "kv_bytes_per_value"),
])
def test_refusals_name_the_parameter(kw, name):
    kw = {"gpu_memory_gib": 80, **kw}
    with pytest.raises(ParameterError) as exc:
        kv_capacity_estimate(load_model("Llama-3.1-8B"), **kw)
    assert exc.value.name == name


def test_model_must_be_model_facts():
    with pytest.raises(ParameterError, match="model"):
        kv_capacity_estimate("Llama-3.1-8B", gpu_memory_gib=80)


@pytest.mark.skipif(not RUN.exists(), reason="validation/data not present")
def test_against_the_measured_rtx4090_run():
    """vLLM 0.19.0 on an RTX 4090 recorded 2,588 blocks (41,408 tokens); the estimate is 3.6 % above.

    The difference is vLLM's measured reserve (about 1.15 GiB besides the weights) against the rule's
    0.97 GiB; no constant is fitted to this run, so the test pins the honest gap, not a match.
    """
    meta = json.loads(RUN.read_text())
    kv, kw, hw = meta["kv_cache"], meta["engine_kwargs"], meta["hardware"]
    e = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=hw["device_total_memory_bytes"] / GIB,
                             gpu_memory_utilization=kv["gpu_memory_utilization"], block_size=kv["block_size"],
                             tensor_parallel_size=kw["tensor_parallel_size"],
                             max_num_batched_tokens=kw["max_num_batched_tokens"], max_num_seqs=kw["max_num_seqs"])
    measured = kv["num_kv_tokens"]
    assert measured == kv["num_gpu_blocks"] * kv["block_size"] == 41408
    err = (e.tokens - measured) / measured
    assert e.tokens == 42880 and math.isclose(err, 0.0355, abs_tol=5e-4)
    # what vLLM reserved besides the weights, from its own numbers
    vllm_reserve = e.usable_bytes - e.weight_bytes_per_gpu - measured * e.kv_bytes_per_token_per_gpu
    assert 1.1 < vllm_reserve / GIB < 1.2 and 0.95 < e.reserve_bytes / GIB < 1.0


def test_max_model_len_refused_like_vllm():
    m = load_model("Llama-3.1-8B")
    e = kv_capacity_estimate(m, gpu_memory_gib=23.52, max_model_len=32768)  # the RTX 4090 run's setting
    assert e.tokens > 32768 and e.inputs["max_model_len"] == 32768
    with pytest.raises(ParameterError) as exc:
        kv_capacity_estimate(m, gpu_memory_gib=23.52, max_model_len=131072)
    assert exc.value.name == "max_model_len" and "refuses" in str(exc.value)


def test_fp8_cache_holds_twice_the_tokens():
    m = load_model("Llama-3.1-8B")
    e16 = kv_capacity_estimate(m, gpu_memory_gib=80)
    e8 = kv_capacity_estimate(m, gpu_memory_gib=80, kv_bytes_per_value=1)
    assert e8.kv_bytes_per_token_per_gpu * 2 == e16.kv_bytes_per_token_per_gpu
    assert abs(e8.tokens - 2 * e16.tokens) <= 16


def test_to_dict_and_frame():
    e = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=80)
    d = e.to_dict()
    assert d["tokens"] == e.tokens and d["method"] == "estimate" and d["inputs"]["gpu_memory_gib"] == 80
    pd = pytest.importorskip("pandas")
    frame = e.to_frame()
    assert isinstance(frame, pd.DataFrame) and frame["tokens"].iloc[0] == e.tokens
