"""The longest request a cache holds when every layer is windowed (user6a, finding 1).

Phi-3-mini-128k's config has ``sliding_window`` 262,144 on all 32 layers (no ``layer_types``: vLLM windows every
layer, one KV-cache group), longrope, ``max_position_embeddings`` 131,072.  vLLM's start-up check
(vllm/v1/core/kv_cache_utils.py, ``check_enough_kv_cache_memory``) counts a windowed group's need as
``SlidingWindowSpec.max_memory_usage_bytes``: ``ceil(min(window - 1 + max_num_batched_tokens, max_model_len) /
block_size) + 1`` blocks.  Before: when that did not fit, ``longest_request`` returned 0 ("holds one request of at
most 0 tokens" in ``capacity --gpu L40S`` and ``this answer assumes --max-model-len <= 0``) although any
``max_model_len`` up to ``(pool // groups - 1) x block_size`` passes vLLM's check.

The numbers below are worked by hand from vLLM's rule, not from fluidq's code.
"""
import json

import pytest

from fluidq.cli import main
from fluidq.errors import ParameterError
from fluidq.models import ModelFacts, kv_capacity_estimate, load_gpu

PHI3_128K = {"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "num_hidden_layers": 32,
             "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192,
             "vocab_size": 32064, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
             "sliding_window": 262144,
             "rope_scaling": {"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]},
             "torch_dtype": "bfloat16", "hidden_act": "silu", "rms_norm_eps": 1e-5, "tie_word_embeddings": False}


@pytest.fixture()
def phi3(tmp_path):
    path = tmp_path / "phi3.json"
    path.write_text(json.dumps(PHI3_128K))
    return path


def test_phi3_128k_on_an_l40s_by_hand(phi3):
    """L40S (the GPU table's memory), utilization 0.9, the planner's reserve: a pool of 5,483 blocks of 16, one
    group of all 32 layers.  131,072 tokens need min(262,143 + 2,048, 131,072) / 16 + 1 = 8,193 blocks: no.  The
    longest n: ceil(n / 16) + 1 <= 5,483, n = 5,482 x 16 = 87,712 tokens (16 under the logged 87,728: vLLM's one
    block for a window that may not start at a block's edge)."""
    m = ModelFacts.from_config(phi3)
    assert (m.n_layers, m.n_sliding_layers, m.sliding_window) == (32, 32, 262_144)
    e = kv_capacity_estimate(m, gpu_memory_gib=load_gpu("L40S").memory_gib)
    assert (e.pool_blocks, e.full_groups, e.sliding_groups, e.tokens) == (5_483, 0, 1, 87_728)
    assert e.longest_request() == 87_712
    gib = load_gpu("L40S").memory_gib
    kv_capacity_estimate(m, gpu_memory_gib=gib, max_model_len=87_712)
    with pytest.raises(ParameterError, match="expected at most 87,712"):
        kv_capacity_estimate(m, gpu_memory_gib=gib, max_model_len=87_713)


def test_a_window_that_fits_still_has_no_limit(phi3):
    """Every layer windowed and the window's blocks fit the pool (an H200: 141 GB): no length is too long."""
    m = ModelFacts.from_config(phi3)
    e = kv_capacity_estimate(m, gpu_memory_gib=load_gpu("H200").memory_gib)
    assert e.pool_blocks >= 131_072 // 16 + 1
    assert e.longest_request() is None


def test_capacity_names_the_longest_request(phi3, capsys):
    rc = main(["capacity", "--model-config", str(phi3), "--gpu", "L40S", "--prompt", "1000", "--output", "200"])
    out, err = capsys.readouterr()
    assert rc in (0, None), (out, err)
    assert "at most 0 tokens" not in out
    assert "holds one request of at most 87,712 tokens" in out and "--max-model-len <= 87,712" in out
