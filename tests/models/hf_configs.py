"""config.json files of published open models, written for the tests from the models' public Hugging Face
configs (the shape keys only, plus a few keys the reader must ignore), with the parameter counts the model
cards publish and the KV bytes per token their shapes give.

Each entry: ``name -> (config, published_total_params, published_active_params or None, kv_bytes_per_token)``.
Falcon publishes only its nominal sizes (7B, 40B; :data:`LOOSE` holds them to 5 %).
Published counts are the model card's or the Hugging Face page's (safetensors) figure; a multimodal model's
is that of its text model (the vision encoder is not counted by fluidq, said in docs/how-to/model-facts.md).
"""

_COMMON = {"architectures": ["X"], "bos_token_id": 1, "eos_token_id": 2, "rms_norm_eps": 1e-5,
           "transformers_version": "4.45.0", "use_cache": True, "rope_theta": 10000.0}


def _llama(L, h, heads, kv, inter, vocab, *, dtype="bfloat16", tie=False, head_dim=None, mpe=131072, **extra):
    c = {**_COMMON, "model_type": "llama", "num_hidden_layers": L, "hidden_size": h, "num_attention_heads": heads,
         "num_key_value_heads": kv, "intermediate_size": inter, "vocab_size": vocab, "torch_dtype": dtype,
         "tie_word_embeddings": tie, "max_position_embeddings": mpe, "hidden_act": "silu"}
    if head_dim:
        c["head_dim"] = head_dim
    c.update(extra)
    return c


_ROPE31 = {"rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0}

CONFIGS = {
    # Llama 2: no num_key_value_heads in the 7B/13B configs (multi-head attention), float16
    "Llama-2-7B": ({k: v for k, v in _llama(32, 4096, 32, 32, 11008, 32000, dtype="float16", mpe=4096).items()
                    if k != "num_key_value_heads"}, 6.74e9, None, 524288),
    "Llama-2-13B": (_llama(40, 5120, 40, 40, 13824, 32000, dtype="float16", mpe=4096), 13.02e9, None, 819200),
    "Llama-2-70B": (_llama(80, 8192, 64, 8, 28672, 32000, dtype="float16", mpe=4096), 68.98e9, None, 327680),
    "Llama-3-8B": (_llama(32, 4096, 32, 8, 14336, 128256, mpe=8192), 8.03e9, None, 131072),
    "Llama-3-70B": (_llama(80, 8192, 64, 8, 28672, 128256, mpe=8192), 70.55e9, None, 327680),
    "Llama-3.1-8B": (_llama(32, 4096, 32, 8, 14336, 128256, **_ROPE31), 8.03e9, None, 131072),
    "Llama-3.1-70B": (_llama(80, 8192, 64, 8, 28672, 128256, **_ROPE31), 70.55e9, None, 327680),
    "Llama-3.1-405B": (_llama(126, 16384, 128, 8, 53248, 128256, **_ROPE31), 405.85e9, None, 516096),
    # Llama 3.2 small models tie the LM head to the embedding, and give head_dim
    "Llama-3.2-1B": (_llama(16, 2048, 32, 8, 8192, 128256, tie=True, head_dim=64, **_ROPE31), 1.24e9, None, 32768),
    "Llama-3.2-3B": (_llama(28, 3072, 24, 8, 8192, 128256, tie=True, head_dim=128, **_ROPE31), 3.21e9, None, 114688),
    "Mistral-7B-v0.1": ({**_llama(32, 4096, 32, 8, 14336, 32000, mpe=32768), "model_type": "mistral",
                         "sliding_window": 4096}, 7.24e9, None, 131072),
    "Mistral-7B-Instruct-v0.3": ({**_llama(32, 4096, 32, 8, 14336, 32768, mpe=32768), "model_type": "mistral",
                                  "sliding_window": None, "head_dim": None}, 7.25e9, None, 131072),
    "Mixtral-8x7B": ({**_llama(32, 4096, 32, 8, 14336, 32000, mpe=32768), "model_type": "mixtral",
                      "num_local_experts": 8, "num_experts_per_tok": 2, "router_aux_loss_coef": 0.02},
                     46.70e9, 12.88e9, 131072),
    "Mixtral-8x22B": ({**_llama(56, 6144, 48, 8, 16384, 32768, mpe=65536), "model_type": "mixtral",
                       "num_local_experts": 8, "num_experts_per_tok": 2}, 140.6e9, 39.2e9, 229376),
    # Qwen2/2.5: q/k/v biases (not a config key), sliding window declared but off
    "Qwen2.5-7B": ({**_llama(28, 3584, 28, 4, 18944, 152064, mpe=32768), "model_type": "qwen2",
                    "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 28},
                   7.62e9, None, 57344),
    "Qwen2.5-14B": ({**_llama(48, 5120, 40, 8, 13824, 152064, mpe=32768), "model_type": "qwen2",
                     "use_sliding_window": False}, 14.77e9, None, 196608),
    "Qwen2.5-32B": ({**_llama(64, 5120, 40, 8, 27648, 152064, mpe=32768), "model_type": "qwen2",
                     "use_sliding_window": False}, 32.76e9, None, 262144),
    "Qwen2.5-72B": ({**_llama(80, 8192, 64, 8, 29568, 152064, mpe=32768), "model_type": "qwen2",
                     "use_sliding_window": False}, 72.71e9, None, 327680),
    "Qwen3-8B": ({**_llama(36, 4096, 32, 8, 12288, 151936, head_dim=128, mpe=40960), "model_type": "qwen3",
                  "attention_bias": False}, 8.19e9, None, 147456),
    "Qwen3-32B": ({**_llama(64, 5120, 64, 8, 25600, 151936, head_dim=128, mpe=40960), "model_type": "qwen3"},
                  32.76e9, None, 262144),
    "Qwen3-30B-A3B": ({**_llama(48, 2048, 32, 4, 6144, 151936, head_dim=128, mpe=40960), "model_type": "qwen3_moe",
                       "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                       "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True},
                      30.53e9, 3.35e9, 98304),
    "Qwen3-235B-A22B": ({**_llama(94, 4096, 64, 4, 12288, 151936, head_dim=128, mpe=40960),
                         "model_type": "qwen3_moe", "num_experts": 128, "num_experts_per_tok": 8,
                         "moe_intermediate_size": 1536, "decoder_sparse_step": 1, "mlp_only_layers": []},
                        235.09e9, 22.14e9, 192512),
    # Qwen2-MoE: one shared expert of its own width (20480 = 8 routed widths)
    "Qwen2-57B-A14B": ({**_llama(28, 3584, 28, 4, 18944, 151936, mpe=32768), "model_type": "qwen2_moe",
                        "num_experts": 64, "num_experts_per_tok": 8, "moe_intermediate_size": 2560,
                        "shared_expert_intermediate_size": 20480, "decoder_sparse_step": 1, "mlp_only_layers": []},
                       57.41e9, 14.2e9, 57344),
    "Qwen1.5-MoE-A2.7B": ({**_llama(24, 2048, 16, 16, 5632, 151936, mpe=8192), "model_type": "qwen2_moe",
                           "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
                           "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1},
                          14.32e9, 2.7e9, 196608),
    # DeepSeek MLA: the cache is the compressed latent (kv_lora_rank + qk_rope_head_dim per layer)
    "DeepSeek-V2-Lite": ({**_llama(27, 2048, 16, 16, 10944, 102400, mpe=163840), "model_type": "deepseek_v2",
                          "q_lora_rank": None, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                          "v_head_dim": 128, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
                          "moe_intermediate_size": 1408, "first_k_dense_replace": 1, "moe_layer_freq": 1,
                          "topk_method": "greedy", "n_group": 1, "topk_group": 1},
                         15.71e9, 2.66e9, 31104),
    "DeepSeek-V3": ({**_llama(61, 7168, 128, 128, 18432, 129280, mpe=163840), "model_type": "deepseek_v3",
                     "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                     "v_head_dim": 128, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
                     "moe_intermediate_size": 2048, "first_k_dense_replace": 3, "moe_layer_freq": 1,
                     "num_nextn_predict_layers": 1,
                     "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                             "weight_block_size": [128, 128]}},
                    671.0e9, 37.5e9, 70272),
    # Gemma 2: head_dim is not hidden/heads, four norms per layer, tied embedding (no key), sliding window
    "Gemma-2-9B": ({**_COMMON, "model_type": "gemma2", "num_hidden_layers": 42, "hidden_size": 3584,
                    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336,
                    "vocab_size": 256000, "torch_dtype": "float32", "sliding_window": 4096,
                    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
                    "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 256},
                   9.24e9, None, 344064),  # float32 config, served in 16 bits (vLLM's --dtype auto)
    "Gemma-2-27B": ({**_COMMON, "model_type": "gemma2", "num_hidden_layers": 46, "hidden_size": 4608,
                     "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 36864,
                     "vocab_size": 256000, "torch_dtype": "bfloat16", "sliding_window": 4096,
                     "max_position_embeddings": 8192}, 27.23e9, None, 376832),
    "Phi-3-mini-4k": ({**_llama(32, 3072, 32, 32, 8192, 32064, mpe=4096), "model_type": "phi3",
                       "embd_pdrop": 0.0, "original_max_position_embeddings": 4096, "sliding_window": 2047},
                      3.82e9, None, 393216),
    "Phi-3-medium-4k": ({**_llama(40, 5120, 40, 10, 17920, 32064, mpe=4096), "model_type": "phi3"},
                        13.96e9, None, 204800),
    # the classic layouts: LayerNorms with biases, an MLP without a gate, projection biases
    "GPT-NeoX-20B": ({"model_type": "gpt_neox", "num_hidden_layers": 44, "hidden_size": 6144,
                      "num_attention_heads": 64, "intermediate_size": 24576, "vocab_size": 50432,
                      "torch_dtype": "float16", "rotary_pct": 0.25, "use_parallel_residual": True,
                      "max_position_embeddings": 2048, "tie_word_embeddings": False}, 20.55e9, None, 1081344),
    "OPT-13B": ({"model_type": "opt", "num_hidden_layers": 40, "hidden_size": 5120, "num_attention_heads": 40,
                 "ffn_dim": 20480, "vocab_size": 50272, "torch_dtype": "float16", "max_position_embeddings": 2048,
                 "word_embed_proj_dim": 5120, "do_layer_norm_before": True, "activation_function": "relu"},
                12.85e9, None, 819200),
    "Falcon-7B": ({"model_type": "falcon", "num_hidden_layers": 32, "hidden_size": 4544, "num_attention_heads": 71,
                   "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False, "bias": False,
                   "vocab_size": 65024, "torch_dtype": "bfloat16", "alibi": False}, 7.0e9, None, 8192),
    "Falcon-40B": ({"model_type": "falcon", "n_layer": 60, "hidden_size": 8192, "n_head": 128, "n_head_kv": 8,
                    "new_decoder_architecture": True, "parallel_attn": True, "bias": False, "vocab_size": 65024,
                    "torch_dtype": "bfloat16"}, 40.0e9, None, 122880),  # head_dim 64
    # multimodal wrappers: the text model under text_config, the dtype at the top level
    "Llama-4-Scout-17B-16E": ({"model_type": "llama4", "torch_dtype": "bfloat16", "vision_config": {"hidden_size": 1408},
                               "text_config": {"model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120,
                                               "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
                                               "intermediate_size": 8192, "intermediate_size_mlp": 16384,
                                               "num_local_experts": 16, "num_experts_per_tok": 1,
                                               "interleave_moe_layer_step": 1, "vocab_size": 202048,
                                               "max_position_embeddings": 10485760, "attention_chunk_size": 8192}},
                              108.6e9, 17.2e9, 196608),
    "Gemma-3-27B": ({"model_type": "gemma3", "torch_dtype": "bfloat16", "vision_config": {"model_type": "siglip_vision_model"},
                     "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 62, "hidden_size": 5376,
                                     "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
                                     "intermediate_size": 21504, "vocab_size": 262208, "sliding_window": 1024,
                                     "max_position_embeddings": 131072, "query_pre_attn_scalar": 168}},
                    27.0e9, None, 2 * 62 * 16 * 128 * 2),  # 27.4 B with its 0.4 B vision encoder
    "Qwen2.5-VL-7B": ({"model_type": "qwen2_5_vl", "torch_dtype": "bfloat16", "vision_config": {"depth": 32},
                       "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                       "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 128000,
                       "tie_word_embeddings": False}, 7.62e9, None, 57344),
}



def _gpt_oss(layers, experts):
    """openai/gpt-oss-20b and -120b: 2880 wide, 64 query heads of 64 (not 2880 / 64), 8 KV heads, every layer
    a MoE of 2880-wide experts (4 per token), sliding-window (128) attention on every other layer, attention
    sinks, the experts in MXFP4 and the rest in bf16 (``modules_to_not_convert``), no ``torch_dtype`` key."""
    return {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
            "attention_dropout": 0.0, "eos_token_id": 200002, "pad_token_id": 199999, "experts_per_token": 4,
            "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880, "initial_context_length": 4096,
            "initializer_range": 0.02, "intermediate_size": 2880,
            "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)],
            "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4,
            "num_hidden_layers": layers, "num_key_value_heads": 8, "num_local_experts": experts,
            "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 150000,
            "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                             "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
            "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0, "tie_word_embeddings": False,
            "transformers_version": "4.55.0.dev0", "use_cache": True, "vocab_size": 201088,
            "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                               "model.embed_tokens", "lm_head"],
                                    "quant_method": "mxfp4"}}


_CT_FP8 = {"config_groups": {"group_0": {
    "input_activations": {"dynamic": True, "num_bits": 8, "strategy": "token", "symmetric": True, "type": "float"},
    "output_activations": None, "targets": ["Linear"],
    "weights": {"dynamic": False, "num_bits": 8, "observer": "minmax", "strategy": "channel", "symmetric": True,
                "type": "float"}}}, "format": "float-quantized", "global_compression_ratio": 1.24, "ignore": ["lm_head"],
    "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"}

CONFIGS.update({
    "GPT-OSS-20B": (_gpt_oss(24, 32), 20.91e9, 3.61e9, 2 * 24 * 8 * 64 * 2),
    "GPT-OSS-120B": (_gpt_oss(36, 128), 116.83e9, 5.13e9, 2 * 36 * 8 * 64 * 2),
    # google/gemma-3-4b-it: text_config gives only the widths and the layers; the heads, head_dim and vocabulary
    # are Gemma3TextConfig's defaults (8, 4, 256, 262208).  4.3 B with its 0.42 B SigLIP encoder
    "Gemma-3-4B": ({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                    "torch_dtype": "bfloat16", "boi_token_index": 255999, "eoi_token_index": 256000,
                    "image_token_index": 262144, "mm_tokens_per_image": 256,
                    "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                                    "sliding_window": 1024},
                    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 896}},
                   3.88e9, None, 2 * 34 * 4 * 256 * 2),
    # Qwen2.5-VL as newer transformers write it: the text model nested under text_config, "dtype" not "torch_dtype"
    "Qwen2.5-VL-7B-text_config": ({"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
                                   "dtype": "bfloat16", "image_token_id": 151655, "video_token_id": 151656,
                                   "vision_config": {"depth": 32, "hidden_size": 1280, "out_hidden_size": 3584},
                                   "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 3584,
                                                   "num_hidden_layers": 28, "num_attention_heads": 28,
                                                   "num_key_value_heads": 4, "intermediate_size": 18944,
                                                   "vocab_size": 152064, "max_position_embeddings": 128000,
                                                   "rope_scaling": {"mrope_section": [16, 24, 24], "rope_type": "default"},
                                                   "sliding_window": 32768, "use_sliding_window": False,
                                                   "max_window_layers": 28, "tie_word_embeddings": False},
                                   "tie_word_embeddings": False, "transformers_version": "4.56.0"},
                                  7.62e9, None, 57344),
    "Mistral-7B-v0.3": ({**CONFIGS["Mistral-7B-Instruct-v0.3"][0], "_name_or_path": "mistralai/Mistral-7B-v0.3"},
                        7.25e9, None, 131072),
    # quantized checkpoints (the parameter count is the model's; the bytes are checked in test_config_zoo.py)
    "Llama-3.1-8B-Instruct-AWQ-INT4": ({**CONFIGS["Llama-3.1-8B"][0], "torch_dtype": "float16", "quantization_config": {
        "bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq", "version": "gemm",
        "zero_point": True}}, 8.03e9, None, 131072),
    "Qwen2.5-7B-Instruct-GPTQ-Int4": ({**CONFIGS["Qwen2.5-7B"][0], "torch_dtype": "float16", "quantization_config": {
        "bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": False, "static_groups": False, "sym": True,
        "true_sequential": True, "model_name_or_path": None, "model_file_base_name": "model",
        "quant_method": "gptq"}}, 7.62e9, None, 57344),
    "Llama-3.1-70B-Instruct-FP8": ({**{k: v for k, v in CONFIGS["Llama-3.1-70B"][0].items() if k != "torch_dtype"},
                                    "dtype": "bfloat16", "quantization_config": _CT_FP8}, 70.55e9, None, 327680),
    "Qwen3-30B-A3B-FP8": ({**CONFIGS["Qwen3-30B-A3B"][0], "quantization_config": {
        "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}},
        30.53e9, 3.35e9, 98304),
})

#: entries whose published active count leaves the embedding out (OpenAI's gpt-oss model card counts the
#: unembedding, not the embedding table, among the active parameters)
ACTIVE_WITHOUT_EMBEDDING = {"GPT-OSS-20B", "GPT-OSS-120B"}

#: entries whose published size is only nominal: relative tolerance of the parameter count
LOOSE = {"Falcon-7B": 0.05, "Falcon-40B": 0.05}


# ---- the minimal configs the CLI and validation tests write (the shape keys a reader needs and nothing else; each
# was copied in 2-4 test files before, tests/models/test_models_cli.py, tests/cli/test_roofline_cli.py,
# tests/cli/test_parameters_as_flags.py, tests/validation/test_run_model_config.py, tests/cli/test_models_show_context.py,
# tests/cli/test_max_model_len_rope.py).  Imported by name: tests/conftest.py puts tests/models on sys.path.

#: Llama-3.1-8B's shapes (no rope_scaling, untied embeddings by the reader's default)
LLAMA_8B = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16",
            "max_position_embeddings": 131072}

#: Qwen2.5-7B's shapes, 32,768 positions without rope_scaling (the tests add their own)
QWEN2_7B = {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584, "num_attention_heads": 28,
            "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064, "torch_dtype": "bfloat16",
            "max_position_embeddings": 32768, "tie_word_embeddings": False}
