"""vLLM's KV-cache groups for models with full and sliding-window layers (issues 16, 20).

vLLM's hybrid KV-cache manager (vllm/v1/core/kv_cache_utils.py, ``_get_kv_cache_groups_uniform_page_size``) puts
each attention type's layers into groups of one size -- the smaller type's layer count, or the larger's when that
is under 1.5 times the smaller -- padding the last group of a type with empty slots; the memory is cut into
``memory // (page x group_size)`` blocks shared by all groups, and it logs ``num_blocks // groups x block_size`` as
its "GPU KV cache size".  Before (2026-12-07) fluidq counted every layer once (no padding): Gemma-3-27B's 62 layers
take 70 slots in vLLM (7 groups of 10), so the planned cache was 13 % too large on an H100 (41,552 tokens, where
vLLM's rule gives 36,800).

The numbers below are worked by hand from vLLM's rules, not from fluidq's code.
"""
import pytest

from fluidq.errors import ParameterError
from fluidq.models import kv_capacity_estimate, load_gpu, load_model
from fluidq.models.memory import kv_cache_groups


@pytest.mark.parametrize("full,sliding,expected", [
    (10, 52, (10, 1, 6)),   # Gemma-3-27B: 1 full + 6 windowed groups of 10 = 70 slots, 8 padding
    (5, 29, (5, 1, 6)),     # Gemma-3-4B: 7 groups of 5 = 35 slots, 1 padding
    (8, 40, (8, 1, 5)),     # Gemma-3-12B: 6 groups of 8 = 48 slots, none
    (12, 12, (12, 1, 1)),   # GPT-OSS-20B
    (13, 12, (13, 1, 1)),   # vLLM's own example (gpt-oss-20b + eagle): 13 < 1.5 x 12, padded to (13, 13)
    (20, 30, (20, 1, 2)),   # 30 is not under 1.5 x 20: groups of 20, 10 padding slots
    (32, 0, (32, 1, 0)),    # one attention type: one group of every layer
    (0, 32, (32, 0, 1)),    # Mistral-7B-v0.1: every layer windowed, one group
])
def test_groups_as_vllm_forms_them(full, sliding, expected):
    assert kv_cache_groups(full + sliding, sliding) == expected


def test_gemma_3_27b_on_an_h100_by_hand():
    """Gemma-3-27B (62 layers: 10 full, 52 windowed of 1,024 tokens; 16 KV heads of 128, bf16) on an H100
    (79.22 GiB, utilization 0.9, the planner's reserve): 21,110,757,527 B left for the cache.
    One layer's block: 2 x 16 x 128 x 2 B x 16 tokens = 131,072 B; groups of 10 -> 1,310,720 B a pool block;
    21,110,757,527 // 1,310,720 = 16,106 blocks; 7 groups -> 16,106 // 7 = 2,300 blocks = 36,800 tokens logged.
    Every layer counted once (before): 21,110,757,527 // (62 x 131,072) = 2,597 blocks = 41,552 tokens."""
    e = kv_capacity_estimate(load_model("Gemma-3-27B"), gpu_memory_gib=load_gpu("H100").memory_gib)
    assert e.kv_bytes == 21_110_757_527  # the precondition of the hand calculation (weights and reserve)
    assert (e.group_size, e.full_groups, e.sliding_groups, e.pool_blocks) == (10, 1, 6, 16_106)
    assert e.tokens == 36_800 and e.blocks == 2_300
    assert "70 slots for 62 layers, 8 padding" in e.reason
    # 1,100-token requests: a windowed group keeps 1,024 + 16 tokens: 16,106 / (1 + 6 x 1,040 / 1,100) = 2,413.7
    assert e.tokens_at_context(1_100) == 2_413 * 16 == 38_608
    # 31,000-token requests: 16,106 / (1 + 6 x 1,040 / 31,000) = 13,407.2 blocks
    assert e.tokens_at_context(31_000) == 13_407 * 16 == 214_512
    # vLLM's start-up check: a windowed group needs ceil((1,024 - 1 + 2,048) / 16) + 1 = 193 blocks at most, the
    # full group ceil(n / 16): 16,106 - 6 x 193 = 14,948 blocks = 239,168 tokens
    assert e.longest_request() == 239_168
    gib = load_gpu("H100").memory_gib
    kv_capacity_estimate(load_model("Gemma-3-27B"), gpu_memory_gib=gib, max_model_len=239_168)
    with pytest.raises(ParameterError, match="max_model_len=239184: expected at most 239,168"):
        kv_capacity_estimate(load_model("Gemma-3-27B"), gpu_memory_gib=gib, max_model_len=239_168 + 16)


def test_models_without_padding_keep_their_cache():
    """Gemma-3-12B (8 + 40: 6 groups of 8) and GPT-OSS (equal halves) pad nothing: the logged tokens are every
    layer's, as before (H100: 131,472 and 1,254,672 tokens); Gemma-3-4B pads one slot in 35 (471,200, before
    485,072: -2.9 %)."""
    gib = load_gpu("H100").memory_gib
    for name, tokens in (("Gemma-3-12B", 131_472), ("GPT-OSS-20B", 1_254_672), ("Gemma-3-4B", 471_200)):
        m = load_model(name)
        e = kv_capacity_estimate(m, gpu_memory_gib=gib)
        assert e.tokens == tokens, name
        per_layer_block = e.kv_bytes_per_token_per_gpu * 16 // m.n_layers
        every_layer_once = e.kv_bytes // (per_layer_block * m.n_layers) * 16
        assert (e.tokens == every_layer_once) is (name != "Gemma-3-4B"), name


@pytest.mark.parametrize("name,window", [("Mistral-7B-v0.1", 4096), ("Phi-3-mini", 2047)])
def test_a_window_without_layer_types_is_every_layers(name, window):
    """vLLM sets its model-level window (``CacheConfig.sliding_window``) from the config's ``sliding_window`` when
    the model is not interleaved (vllm/engine/arg_utils.py: "Only set CacheConfig.sliding_window if the model is all
    sliding window"), and ``Attention`` falls back to it for a layer without a window of its own
    (vllm/attention/layer.py, ``per_layer_sliding_window`` None): Mistral-7B-v0.1 and Phi-3-mini, whose configs have
    a window and no ``layer_types``, are windowed in every layer -- one group, the logged tokens unchanged, a long
    request keeping window + block tokens of it."""
    m = load_model(name)
    assert (m.sliding_window, m.n_sliding_layers) == (window, m.n_layers)
    e = kv_capacity_estimate(m, gpu_memory_gib=load_gpu("H100").memory_gib)
    assert (e.group_size, e.full_groups, e.sliding_groups) == (m.n_layers, 0, 1)
    assert e.tokens_at_context(window) == e.tokens == e.pool_blocks * 16
    assert e.tokens_at_context(4 * (window + 16)) == 4 * e.tokens
    assert e.longest_request() is None
