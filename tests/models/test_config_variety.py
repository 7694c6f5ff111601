"""config.json variety (issue 20): published configs of 46 open models and checkpoints, written to files, read by
``ModelFacts.from_config``: parameter counts within 2 % of the published sizes, KV bytes per token exact (GQA
counts KV heads, MLA the compressed latent), and a deployment of each through the files-free path."""
import json

import pytest

from fluidq.errors import DataError
from fluidq.models import ModelFacts, kv_capacity_estimate, load_gpu

from hf_configs import ACTIVE_WITHOUT_EMBEDDING, CONFIGS, LOOSE


def write(tmp_path, cfg, name="config.json"):
    d = tmp_path / "m"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(json.dumps(cfg))
    return p


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_published_sizes_and_kv_bytes(tmp_path, name):
    cfg, total, active, kv = CONFIGS[name]
    m = ModelFacts.from_config(write(tmp_path, cfg))
    tol = LOOSE.get(name, 0.02)
    assert m.param_count == pytest.approx(total, rel=tol), (name, m.param_count)
    if active is not None:
        ours = m.active_param_count - (m.vocab_size * m.hidden_size if name in ACTIVE_WITHOUT_EMBEDDING else 0)
        assert m.is_moe and ours == pytest.approx(active, rel=0.02), (name, m.active_param_count)
        assert m.active_param_count < 0.5 * m.param_count
    else:
        assert not m.is_moe and m.active_param_count == m.param_count
    assert m.kv_bytes_per_token() == kv, name
    assert m.bytes_per_value == 2  # a float32 config (Gemma-2-9B) is served in 16 bits, as vLLM's --dtype auto does


def test_mla_caches_the_latent_not_the_heads(tmp_path):
    m = ModelFacts.from_config(write(tmp_path, CONFIGS["DeepSeek-V3"][0]))
    full_heads = 2 * m.n_layers * m.n_heads * m.head_dim * m.bytes_per_value
    assert m.kv_bytes_per_token() == 61 * (512 + 64) * 2 and m.kv_bytes_per_token() * 50 < full_heads
    # replicated on every tensor-parallel GPU: the per-GPU cache does not shrink with tp
    assert m.kv_bytes_per_token_per_gpu(8) == m.kv_bytes_per_token()
    assert m.n_dense_layers == 3 and m.n_shared_experts == 1 and m.quantization == "fp8"


def test_gqa_per_gpu_kv_counts_kv_heads(tmp_path):
    m = ModelFacts.from_config(write(tmp_path, CONFIGS["Llama-3.1-70B"][0]))
    assert [m.kv_bytes_per_token_per_gpu(tp) for tp in (1, 2, 4, 8)] == [327680 // tp for tp in (1, 2, 4, 8)]
    assert m.kv_bytes_per_token_per_gpu(16) == 327680 // 8  # 8 KV heads on 16 GPUs: one replicated head each


def test_gemma2_head_dim_norms_and_tied_head(tmp_path):
    m = ModelFacts.from_config(write(tmp_path, CONFIGS["Gemma-2-9B"][0]))
    assert m.head_dim == 256 != m.hidden_size // m.n_heads and m.tie_word_embeddings and m.norms_per_layer == 4
    assert m.sliding_window == 4096 and m.dtype == "bfloat16"


def test_classic_layouts(tmp_path):
    neox = ModelFacts.from_config(write(tmp_path, CONFIGS["GPT-NeoX-20B"][0]))
    assert not neox.gated_mlp and neox.linear_bias and neox.norm_bias and neox.dtype == "float16"
    opt = ModelFacts.from_config(write(tmp_path, CONFIGS["OPT-13B"][0]))
    assert opt.position_embeddings == 2050 and opt.tie_word_embeddings
    f7 = ModelFacts.from_config(write(tmp_path, CONFIGS["Falcon-7B"][0]))
    assert f7.n_kv_heads == 1 and f7.norms_per_layer == 1  # multi-query, one shared norm
    f40 = ModelFacts.from_config(write(tmp_path, CONFIGS["Falcon-40B"][0]))
    assert f40.n_kv_heads == 8 and f40.n_layers == 60 and f40.norms_per_layer == 2  # n_layer / n_head names


def test_text_config_nesting(tmp_path):
    scout = ModelFacts.from_config(write(tmp_path, CONFIGS["Llama-4-Scout-17B-16E"][0]))
    assert scout.architecture == "llama4_text" and scout.n_experts == 16 and scout.n_shared_experts == 1
    assert scout.dtype == "bfloat16"  # from the top level
    # Maverick: experts on every other layer, the others a dense MLP of intermediate_size_mlp
    mav = json.loads(json.dumps(CONFIGS["Llama-4-Scout-17B-16E"][0]))
    mav["text_config"].update(num_local_experts=128, interleave_moe_layer_step=2)
    m = ModelFacts.from_config(write(tmp_path, mav))
    assert m.n_dense_layers == 24 and m.intermediate_size == 16384
    assert m.param_count == pytest.approx(400e9, rel=0.02) and m.active_param_count == pytest.approx(17e9, rel=0.03)
    # a wrapper whose text model is plain Llama (LLaVA-style), the dtype only at the top
    llava = {"model_type": "llava", "torch_dtype": "float16", "vision_config": {"model_type": "clip_vision_model"},
             "text_config": {k: v for k, v in CONFIGS["Llama-2-7B"][0].items() if k not in ("torch_dtype", "model_type")}}
    m = ModelFacts.from_config(write(tmp_path, llava))
    assert m.param_count == pytest.approx(6.74e9, rel=0.01) and m.dtype == "float16"
    with pytest.raises(DataError, match="'text_config'"):
        ModelFacts.from_config(write(tmp_path, {"model_type": "llava", "text_config": [1]}))


@pytest.mark.parametrize("qc,want,per_param", [
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}, "int4", 0.52),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}, "int4", 0.52),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "int8", 1.0),
    ({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}, "fp8", 1.0),
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8", 1.0),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}}, "ignore": ["lm_head"]}, "fp8", 1.0),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128}}}}, "int4", 0.52),
])
def test_quantized_checkpoints(tmp_path, qc, want, per_param):
    cfg = {**CONFIGS["Llama-3.1-70B"][0], "quantization_config": qc}
    m = ModelFacts.from_config(write(tmp_path, cfg))
    base = ModelFacts.from_config(write(tmp_path, CONFIGS["Llama-3.1-70B"][0]))
    assert m.quantization == want and m.param_count == base.param_count
    assert m.matrix_bytes_per_param == pytest.approx(per_param, abs=0.01)
    # the embedding and LM head (2.1 B parameters) stay in bf16
    head = base.embedding_params * 2
    assert m.weight_bytes == pytest.approx(head + (base.param_count - base.embedding_params) * per_param, rel=0.01)
    assert m.kv_bytes_per_token() == base.kv_bytes_per_token()  # the cache stays in the dtype


@pytest.mark.parametrize("qc,needle", [
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "modelopt"),
    ({"quant_method": "gptq", "bits": 3}, "3 bits"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float"}}}},
     "type 'float'"),
    ({"quant_method": "compressed-tensors"}, "config_groups"),
])
def test_unsized_quantizations_are_refused_naming_the_key(tmp_path, qc, needle):
    with pytest.raises(DataError, match="quantization_config") as exc:
        ModelFacts.from_config(write(tmp_path, {**CONFIGS["Llama-3.1-8B"][0], "quantization_config": qc}))
    assert needle in str(exc.value)


@pytest.mark.parametrize("drop,key", [
    ("num_hidden_layers", "num_hidden_layers"), ("hidden_size", "hidden_size"), ("vocab_size", "vocab_size"),
    ("intermediate_size", "intermediate_size"), ("num_attention_heads", "num_attention_heads"),
])
def test_missing_required_keys_named(tmp_path, drop, key):
    cfg = {k: v for k, v in CONFIGS["Qwen2.5-7B"][0].items() if k != drop}
    with pytest.raises(DataError, match=f"key '{key}'"):
        ModelFacts.from_config(write(tmp_path, cfg))


def test_missing_optional_keys_take_the_defaults(tmp_path):
    """num_key_value_heads, head_dim, tie_word_embeddings, max_position_embeddings, sliding_window: absent or null."""
    cfg = {k: v for k, v in CONFIGS["Llama-3-8B"][0].items()
           if k not in ("num_key_value_heads", "tie_word_embeddings", "max_position_embeddings", "rope_scaling")}
    cfg.update(head_dim=None, sliding_window=None)
    m = ModelFacts.from_config(write(tmp_path, cfg))
    assert m.n_kv_heads == m.n_heads == 32 and m.head_dim == 128 and not m.tie_word_embeddings
    assert m.max_position_embeddings is None and m.sliding_window is None


def test_dtype_key_of_newer_transformers(tmp_path):
    cfg = {k: v for k, v in CONFIGS["Qwen3-8B"][0].items() if k != "torch_dtype"}
    m = ModelFacts.from_config(write(tmp_path, {**cfg, "dtype": "bfloat16"}))
    assert m.dtype == "bfloat16"
    with pytest.raises(DataError, match="'dtype'"):
        ModelFacts.from_config(write(tmp_path, {**cfg, "dtype": "int3"}))


def test_unknown_family_lists_the_known(tmp_path):
    with pytest.raises(DataError, match="model_type") as exc:
        ModelFacts.from_config(write(tmp_path, {**CONFIGS["Llama-3-8B"][0], "model_type": "mamba"}))
    assert "llama" in str(exc.value) and "gpt_neox" in str(exc.value)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_config_gets_a_kv_cache_somewhere(tmp_path, name):
    """Each model is planned by vLLM's memory rule on a GPU count that holds it (the smallest tp of 1, 2, 4, 8
    that its heads allow on an H200), or refused by name when none does."""
    m = ModelFacts.from_config(write(tmp_path, CONFIGS[name][0]))
    gpu = load_gpu("H200")
    ok = []
    for tp in (1, 2, 4, 8):
        try:
            e = kv_capacity_estimate(m, gpu_memory_gib=gpu.memory_gib, tensor_parallel_size=tp)
        except Exception as exc:  # noqa: BLE001 -- checked below: only named refusals
            assert getattr(exc, "name", None) in ("gpu_memory_gib", "tensor_parallel_size"), exc
            continue
        ok.append(tp)
        assert e.tokens >= 16 and e.weight_bytes_per_gpu < gpu.memory_gib * 2**30
    assert ok or m.weight_bytes > 8 * 0.9 * gpu.memory_gib * 2**30, name


def test_a_model_folder_reads_its_config_json(tmp_path):
    p = write(tmp_path, CONFIGS["Qwen2-57B-A14B"][0])
    m = ModelFacts.from_config(p.parent)  # the snapshot folder, as `huggingface-cli download` leaves it
    assert m.name == "m" and m.n_shared_experts == 8 and m.attention_bias
    with pytest.raises(DataError, match="--model-config"):
        ModelFacts.from_config(tmp_path, option="--model-config")  # a folder without one
