"""ModelFacts: validation naming the field, and the derived sizes against hand-computed numbers."""
import dataclasses

import pytest

from fluidq.errors import ParameterError, ParameterTypeError, UnknownNameError
from fluidq.models import ModelFacts, list_models, load_model

KIB = 1024


def test_llama31_8b_by_hand():
    m = load_model("Llama-3.1-8B")
    h, L, kv, d, f, V = 4096, 32, 8, 128, 14336, 128256
    attn = 2 * h * h + 2 * h * kv * d          # q, o; k, v
    per_layer = attn + 3 * h * f + 2 * h       # + SwiGLU MLP + two RMS norms
    assert m.param_count == L * per_layer + 2 * V * h + h == 8_030_261_248
    assert round(m.param_count / 1e9, 2) == 8.03
    assert m.active_param_count == m.param_count  # dense
    assert m.weight_bytes == 2 * m.param_count    # bf16
    assert m.kv_bytes_per_token() == 2 * L * kv * d * 2 == 128 * KIB
    assert m.kv_bytes_per_token(kv_bytes_per_value=1) == 64 * KIB  # an fp8 cache


def test_qwen3_30b_a3b_total_and_active_by_hand():
    m = load_model("Qwen3-30B-A3B")
    h, L, E, k, w, V, d = 2048, 48, 128, 8, 768, 151936, 128
    attn = 2 * h * 32 * d + 2 * h * 4 * d + 2 * d      # q, o, k, v, q/k norms
    common = L * (attn + 2 * h + h * E) + 2 * V * h + h  # + norms and router per layer, embeddings
    expert = 3 * h * w
    assert m.param_count == common + L * E * expert == 30_532_122_624
    assert m.active_param_count == common + L * k * expert == 3_353_032_704
    assert round(m.param_count / 1e9, 1) == 30.5
    assert 3.3 <= m.active_param_count / 1e9 < 3.4  # "3.3B activated" on the model card
    assert m.kv_bytes_per_token() == 2 * 48 * 4 * 128 * 2 == 96 * KIB


@pytest.mark.parametrize("name, total, active", [
    ("Llama-2-7B", 6_738_415_616, None),
    ("Llama-2-70B", 68_976_648_192, None),
    ("Mixtral-8x7B", 46_702_792_704, 12_879_925_248),
    ("Qwen2.5-7B", 7_615_616_512, None),  # incl. q/k/v biases; the model card says 7.61B
])
def test_known_parameter_counts(name, total, active):
    m = load_model(name)
    assert m.param_count == total
    assert m.active_param_count == (active or total)


def test_qwen25_7b_counts_qkv_biases():
    m = load_model("Qwen2.5-7B")
    no_bias = m.replace(attention_bias=False)
    assert m.param_count - no_bias.param_count == 28 * (28 + 2 * 4) * 128


def test_deepseek_v3_mla_and_fp8():
    m = load_model("DeepSeek-V3")
    assert m.is_mla and m.is_moe
    assert round(m.param_count / 1e9) == 671       # the paper's 671B (the MTP layer apart)
    assert round(m.active_param_count / 1e9) == 38  # 37.6B, the paper's "37B activated"
    assert m.kv_bytes_per_token() == 61 * (512 + 64) * 2
    assert m.kv_bytes_per_token_per_gpu(8) == m.kv_bytes_per_token()  # the latent cache is replicated
    # fp8 projection matrices: well under 2 bytes per parameter, above 1
    assert m.param_count < m.weight_bytes < 1.01 * m.param_count
    assert "MLA" in m.kv_rule


def test_kv_heads_split_then_replicated_under_tp():
    m = load_model("Llama-3.1-8B")  # 8 KV heads
    assert [m.kv_heads_per_gpu(t) for t in (1, 2, 4, 8, 16, 32)] == [8, 4, 2, 1, 1, 1]
    assert m.kv_bytes_per_token_per_gpu(2) == 64 * KIB
    assert m.kv_bytes_per_token_per_gpu(16) == m.kv_bytes_per_token_per_gpu(8) == 16 * KIB  # replicated
    q = load_model("Qwen3-30B-A3B")  # 4 KV heads
    assert q.kv_bytes_per_token_per_gpu(8) == 2 * 48 * 1 * 128 * 2
    for bad in (3, 64, 0):
        with pytest.raises(ParameterError, match="tensor_parallel_size"):
            m.kv_bytes_per_token_per_gpu(bad)


def test_weights_per_gpu():
    m = load_model("Llama-3.1-8B")
    assert m.weight_bytes_per_gpu(1) == m.weight_bytes
    norms = 2 * m.norm_params
    assert m.weight_bytes_per_gpu(2) == (m.weight_bytes - norms) // 2 + norms  # all but the norms split
    q = load_model("Qwen3-30B-A3B")
    experts = 2 * 48 * 128 * q.expert_params
    assert q.weight_bytes_per_gpu(1, expert_parallel_size=2) == q.weight_bytes - experts // 2
    assert q.weight_bytes_per_gpu(2) < q.weight_bytes_per_gpu(1, expert_parallel_size=2)
    with pytest.raises(ParameterError, match="expert_parallel_size"):
        q.weight_bytes_per_gpu(1, expert_parallel_size=3)
    with pytest.raises(ParameterError, match="expert_parallel_size"):
        m.weight_bytes_per_gpu(1, expert_parallel_size=2)


BASE = dict(name="m", n_layers=2, hidden_size=64, n_heads=4, n_kv_heads=2, head_dim=16,
            intermediate_size=128, vocab_size=100)


@pytest.mark.parametrize("change, field", [
    ({"n_layers": 0}, "n_layers"),
    ({"hidden_size": -1}, "hidden_size"),
    ({"n_kv_heads": 3}, "n_kv_heads"),
    ({"vocab_size": 2**40}, "vocab_size"),
    ({"dtype": "int4"}, "dtype"),
    ({"n_experts": 8}, "experts_per_token"),
    ({"n_experts": 4, "experts_per_token": 8, "moe_intermediate_size": 32}, "experts_per_token"),
    ({"n_dense_layers": 1}, "n_dense_layers"),
    ({"n_experts": 4, "experts_per_token": 2, "moe_intermediate_size": 32, "n_dense_layers": 2}, "n_dense_layers"),
    ({"kv_lora_rank": 8}, "qk_rope_head_dim"),
    ({"qk_rope_head_dim": 8}, "qk_rope_head_dim"),
    ({"quantization": "awq"}, "quantization"),
    ({"name": " "}, "name"),
])
def test_invalid_facts_name_the_field(change, field):
    with pytest.raises(ParameterError) as exc:
        ModelFacts(**{**BASE, **change})
    assert exc.value.name == field
    assert field in str(exc.value)


@pytest.mark.parametrize("change, field", [({"n_layers": 2.0}, "n_layers"), ({"n_layers": True}, "n_layers"),
                                           ({"tie_word_embeddings": 1}, "tie_word_embeddings")])
def test_wrong_types_name_the_field(change, field):
    with pytest.raises(ParameterTypeError, match=field):
        ModelFacts(**{**BASE, **change})


def test_frozen_and_round_trip():
    for m in list_models():
        assert ModelFacts(**m.to_dict()) == m
        with pytest.raises(dataclasses.FrozenInstanceError):
            m.n_layers = 1
        d = m.to_dict(derived=True)["derived"]
        assert d["param_count"] == m.param_count and d["kv_bytes_per_token"] == m.kv_bytes_per_token()


def test_shipped_table_names_and_provenance():
    names = {m.name for m in list_models()}
    need = {"Llama-3.1-8B", "Qwen3-30B-A3B", "Qwen3-30B-A3B-Instruct-2507", "Llama-2-7B", "Llama-2-70B",
            "CodeLlama-34B", "Llama-3-8B", "Yi-34B", "Llama-3-70B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B",
            "Qwen3-8B", "Qwen3-32B", "Mistral-7B-v0.1", "Mixtral-8x7B", "DeepSeek-V3"}
    assert need <= names
    for m in list_models():
        assert "config.json" in m.source and "Hugging Face" in m.source and "keys:" in m.source


def test_load_model_by_name():
    assert load_model("llama-3.1-8b") is load_model("Llama-3.1-8B")
    with pytest.raises(UnknownNameError) as exc:
        load_model("GPT-5")
    assert "GPT-5" in str(exc.value) and "Llama-3.1-8B" in str(exc.value)
    with pytest.raises(ParameterError, match="name"):
        load_model("")
