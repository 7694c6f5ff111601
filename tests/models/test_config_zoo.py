"""An outside check of the files-free path (issues 16 and 20, item 1 of each): published config.json files of
common open models, written in the test, read by ``ModelFacts.from_config`` and run through ``fluidq capacity
--model-config F --gpu G --tensor-parallel-size N``.  Each answers with the numbers the planner gives, or is
refused in one line saying what to change; the shipped ``--model NAME`` rows agree with the configs; malformed
files are refused naming the key; ``--gpu`` takes nvidia-smi's spellings and answers an unknown name with the
near ones first.  The configs are in ``hf_configs.py`` (written from the published files, no download)."""
import json
import re

import pytest

from fluidq.errors import DataError, ParameterError
from fluidq.models import ModelFacts, kv_capacity_estimate, load_gpu, load_model
from fluidq.models.memory import GIB
from fluidq.testing.cli import assert_one_line, run_cli

from hf_configs import CONFIGS


def write(tmp_path, cfg, name="config.json"):
    d = tmp_path / "m"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return p


def facts(tmp_path, name):
    return ModelFacts.from_config(write(tmp_path, CONFIGS[name][0]))


# ------------------------------------------------------------------------------------------------------------
# models the reader refused or read wrong before (2026-12-07)
# ------------------------------------------------------------------------------------------------------------
def test_gpt_oss_is_read_with_mxfp4_experts_and_bf16_attention(tmp_path):
    """Before: ``model_type 'gpt_oss' is not a family fluidq reads``.  The model card's claims are the check:
    gpt-oss-120b "runs on a single 80 GB GPU", gpt-oss-20b "within 16 GB of memory" -- in bf16 they would take
    218 GiB and 39 GiB."""
    small, big = facts(tmp_path, "GPT-OSS-20B"), facts(tmp_path, "GPT-OSS-120B")
    for m, layers, experts in ((small, 24, 32), (big, 36, 128)):
        assert (m.architecture, m.n_layers, m.n_experts, m.experts_per_token) == ("gpt_oss", layers, experts, 4)
        assert m.head_dim == 64 != m.hidden_size // m.n_heads and m.n_kv_heads == 8 and m.moe_intermediate_size == 2880
        assert m.quantization == "mxfp4" and not m.quantize_attention and m.dtype == "bfloat16"
        assert "torch_dtype=bfloat16" in m.source  # the config has no torch_dtype: vLLM serves it in bf16
        # the attention projections stay in bf16, the experts take 4.25 bits a weight
        assert m.attention_bytes_per_param == 2.0 and m.matrix_bytes_per_param == pytest.approx(4.25 / 8)
    assert small.weight_bytes < 16e9 < small.replace(quantization=None).weight_bytes
    e = kv_capacity_estimate(big, gpu_memory_gib=load_gpu("H100").memory_gib)  # one 80 GB GPU, utilization 0.9
    assert e.tokens > 100_000 and big.replace(quantization=None).weight_bytes > 200 * GIB
    # attention kept in bf16 is what the modules_to_not_convert say: quantizing it too would save 0.59 GiB
    assert big.weight_bytes - big.replace(quantize_attention=True).weight_bytes == pytest.approx(
        36 * (2 * 2880 * 4096 + 2 * 2880 * 512) * (2 - 4.25 / 8), rel=1e-6)


def test_gemma3_text_config_takes_its_class_defaults_and_says_so(tmp_path):
    """Before: ``key 'vocab_size': missing`` -- gemma-3-4b-it's text_config gives only the widths and layers."""
    m = facts(tmp_path, "Gemma-3-4B")
    assert (m.n_heads, m.n_kv_heads, m.head_dim, m.vocab_size) == (8, 4, 256, 262208)
    assert m.tie_word_embeddings and m.qk_norm and m.norms_per_layer == 4 and m.sliding_window == 1024
    for key in ("vocab_size=262208", "num_attention_heads=8", "num_key_value_heads=4", "head_dim=256"):
        assert key in m.source
    # only the keys its published configs omit: a missing hidden_size is still refused by name
    cfg = json.loads(json.dumps(CONFIGS["Gemma-3-4B"][0]))
    del cfg["text_config"]["hidden_size"]
    with pytest.raises(DataError, match="key 'hidden_size': missing"):
        ModelFacts.from_config(write(tmp_path, cfg))


def test_a_config_without_a_dtype_key_is_served_in_bf16_as_vllm_does(tmp_path):
    """vLLM reads a config without torch_dtype as float32, which ``--dtype auto`` serves in bf16; before, such a
    config was refused (``key 'torch_dtype': missing``)."""
    cfg = {k: v for k, v in CONFIGS["Llama-3.1-8B"][0].items() if k != "torch_dtype"}
    m = ModelFacts.from_config(write(tmp_path, cfg))
    assert m.dtype == "bfloat16" and "torch_dtype=bfloat16" in m.source
    assert ModelFacts.from_config(write(tmp_path, cfg), dtype="float16").dtype == "float16"
    with pytest.raises(DataError, match="'torch_dtype'"):
        ModelFacts.from_config(write(tmp_path, {**cfg, "torch_dtype": "int3"}))


@pytest.mark.parametrize("name,quant,attention", [
    ("Llama-3.1-8B-Instruct-AWQ-INT4", "int4", True), ("Qwen2.5-7B-Instruct-GPTQ-Int4", "int4", True),
    ("Llama-3.1-70B-Instruct-FP8", "fp8", True), ("Qwen3-30B-A3B-FP8", "fp8", True),
    ("GPT-OSS-20B", "mxfp4", False)])
def test_quantized_checkpoints_and_their_bytes(tmp_path, name, quant, attention):
    m = facts(tmp_path, name)
    assert m.quantization == quant and m.quantize_attention is attention
    dense = m.replace(quantization=None)
    assert m.param_count == dense.param_count and m.kv_bytes_per_token() == dense.kv_bytes_per_token()
    assert m.weight_bytes < 0.6 * dense.weight_bytes  # int4/mxfp4 about a quarter of the matrices, fp8 a half
    # the one GPU of a 70B FP8 checkpoint: it fits an H100 at TP 1 where bf16 needs two
    if name == "Llama-3.1-70B-Instruct-FP8":
        assert kv_capacity_estimate(m, gpu_memory_gib=79.22).tokens > 0
        with pytest.raises(ParameterError, match="fits from --tensor-parallel-size 2"):
            kv_capacity_estimate(dense, gpu_memory_gib=79.22)


# ------------------------------------------------------------------------------------------------------------
# the shipped --model NAME rows agree with the configs
# ------------------------------------------------------------------------------------------------------------
SAME = {"Llama-2-7B": "Llama-2-7B", "Llama-2-70B": "Llama-2-70B", "Llama-3.1-8B": "Llama-3.1-8B",
        "Llama-3.1-70B": "Llama-3.1-70B", "Llama-3.1-405B": "Llama-3.1-405B", "Llama-3.2-1B": "Llama-3.2-1B",
        "Llama-3.2-3B": "Llama-3.2-3B", "Llama-4-Scout-17B-16E": "Llama-4-Scout-17B-16E",
        "Mistral-7B-v0.3": "Mistral-7B-v0.3", "Mixtral-8x7B": "Mixtral-8x7B", "Mixtral-8x22B": "Mixtral-8x22B",
        "Qwen2.5-7B": "Qwen2.5-7B", "Qwen2.5-72B": "Qwen2.5-72B", "Qwen3-8B": "Qwen3-8B", "Qwen3-32B": "Qwen3-32B",
        "Qwen3-30B-A3B": "Qwen3-30B-A3B", "Qwen3-235B-A22B": "Qwen3-235B-A22B", "DeepSeek-V2-Lite": "DeepSeek-V2-Lite",
        "DeepSeek-V3": "DeepSeek-V3", "Gemma-2-9B": "Gemma-2-9B", "Gemma-3-27B": "Gemma-3-27B",
        "Gemma-3-4B": "Gemma-3-4B", "Phi-3-mini-4k": "Phi-3-mini", "Phi-3-medium-4k": "Phi-3-medium",
        "GPT-OSS-20B": "GPT-OSS-20B", "GPT-OSS-120B": "GPT-OSS-120B", "Qwen2.5-VL-7B-text_config": "Qwen2.5-7B"}
SHAPES = ("architecture", "n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim", "intermediate_size",
          "vocab_size", "n_experts", "experts_per_token", "moe_intermediate_size", "n_shared_experts", "n_dense_layers",
          "dtype", "quantization", "quantize_attention", "tie_word_embeddings", "attention_bias", "qk_norm",
          "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "norms_per_layer",
          "sliding_window", "n_sliding_layers")


@pytest.mark.parametrize("config,row", sorted(SAME.items()))
def test_the_shipped_row_has_the_configs_shapes(tmp_path, config, row):
    m, t = facts(tmp_path, config), load_model(row)
    skip = {"architecture"} if config.startswith("Qwen2.5-VL") else set()  # qwen2_5_vl_text reads as qwen2
    diff = {f: (getattr(m, f), getattr(t, f)) for f in SHAPES if f not in skip and getattr(m, f) != getattr(t, f)}
    assert not diff, (config, row, diff)
    assert m.param_count == t.param_count and m.weight_bytes == t.weight_bytes
    assert m.kv_bytes_per_token() == t.kv_bytes_per_token() == CONFIGS[config][3]


# ------------------------------------------------------------------------------------------------------------
# malformed files: one line naming --model-config and the key
# ------------------------------------------------------------------------------------------------------------
BASE = CONFIGS["Llama-3.1-8B"][0]
MALFORMED = [
    ({k: v for k, v in BASE.items() if k != "hidden_size"}, "key 'hidden_size': missing"),
    ({**BASE, "num_hidden_layers": -32}, "key 'num_hidden_layers': -32: expected an integer >= 1"),
    ({**BASE, "num_attention_heads": "32"}, "key 'num_attention_heads': '32' is not an integer"),
    ({**BASE, "hidden_size": 4096.0}, "key 'hidden_size': 4096.0 is not an integer"),
    ({**BASE, "num_key_value_heads": 3}, "key 'num_key_value_heads'"),
    ({**BASE, "torch_dtype": 16}, "key 'torch_dtype': 16 is not a string"),
    ({**BASE, "model_type": "mamba"}, "key 'model_type': 'mamba' is not a family"),
    ({**BASE, "quantization_config": {"quant_method": "bitsandbytes"}}, "key 'quantization_config'"),
    ({"model_type": "gemma3", "text_config": "x"}, "key 'text_config'"),
    ('{"model_type": llama', "not valid JSON"),
    ("", "not valid JSON"),
    ("[1, 2]", "a JSON list, not the object of a config.json"),
]


@pytest.mark.parametrize("cfg,words", MALFORMED)
def test_malformed_configs_are_one_line_naming_the_key(tmp_path, capsys, cfg, words):
    p = write(tmp_path, cfg)
    assert_one_line(["capacity", "--model-config", str(p), "--gpu", "H100"], capsys, "--model-config", words)


def test_a_folder_or_a_missing_file(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert_one_line(["capacity", "--model-config", str(tmp_path / "empty"), "--gpu", "H100"], capsys,
                    "--model-config", "a folder")
    assert_one_line(["capacity", "--model-config", str(tmp_path / "no.json"), "--gpu", "H100"], capsys,
                    "--model-config", "no such file")
    # a model folder holding a config.json is read (vLLM's --model takes one)
    cfg = CONFIGS["Qwen3-8B"][0]
    p = write(tmp_path, cfg)
    rc, out, err = run_cli(["capacity", "--model-config", str(p.parent), "--gpu", "H100", "--json"], capsys)
    assert rc == 0, err
    # ... and it is Qwen3-8B that was read: 36 layers and 8,190,735,360 parameters by hand from the config (untied
    # embedding and LM head; q, k, v, o; per-head q/k norms; a gated MLP; two norms a layer and the final one)
    facts = ModelFacts.from_config(p)
    h, L, kvh, hd, ff, v = (cfg[k] for k in ("hidden_size", "num_hidden_layers", "num_key_value_heads", "head_dim",
                                             "intermediate_size", "vocab_size"))
    per_layer = 2 * h * cfg["num_attention_heads"] * hd + 2 * h * kvh * hd + 2 * hd + 3 * h * ff
    assert facts.n_layers == L == 36
    assert facts.param_count == 2 * v * h + L * per_layer + (2 * L + 1) * h == 8_190_735_360
    assert facts.kv_bytes_per_token() == 2 * L * kvh * hd * 2  # K and V, bf16
    # the answer's KV cache is the planner's for those facts on an H100 -- and for the shipped Qwen3-8B row
    inp = json.loads(out)["inputs"]
    kw = dict(gpu_memory_gib=load_gpu("H100").memory_gib, max_num_batched_tokens=inp["max_num_batched_tokens"],
              max_num_seqs=inp["max_num_seqs"], block_size=inp["block_size"])
    assert inp["kv_capacity_tokens"] == kv_capacity_estimate(facts, **kw).tokens
    assert inp["kv_capacity_tokens"] == kv_capacity_estimate(load_model("Qwen3-8B"), **kw).tokens


# ------------------------------------------------------------------------------------------------------------
# every config through the CLI: the planner's numbers, or a refusal saying what to change
# ------------------------------------------------------------------------------------------------------------
GPUS = ("H100", "L4", "MI300X")
TPS = (1, 2, 4, 8)
FITS_FROM = re.compile(r"it fits from --tensor-parallel-size (\d+)")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_config_through_the_cli(tmp_path, capsys, name):
    """Each answer's KV cache is the planner's for that GPU and TP (and the memory it leaves adds up); each
    refusal for memory names the tensor-parallel size from which it fits, and that size answers, the valid
    sizes between do not."""
    p = write(tmp_path, CONFIGS[name][0])
    m = ModelFacts.from_config(p)
    answered = 0
    for g in GPUS:
        gpu = load_gpu(g)
        for tp in TPS:
            rc, out, err = run_cli(["capacity", "--model-config", str(p), "--gpu", g, "--tensor-parallel-size",
                                    str(tp), "--input-len", "1000", "--output-len", "200", "--json"], capsys)
            assert rc in (0, 2) and "internal error" not in err and "Traceback" not in err, (name, g, tp, err)
            if rc == 0:
                answered += 1
                kv = json.loads(out)["inputs"]["kv_capacity_tokens"]
                e = kv_capacity_estimate(m, gpu_memory_gib=gpu.memory_gib, tensor_parallel_size=tp)
                assert kv == e.tokens_at_context(1000 + 200 / 2), (name, g, tp)  # e.tokens without windows
                assert kv == e.tokens or m.n_sliding_layers and m.sliding_window + 16 < 1100
                # vLLM's pool: blocks of one page (a layer's 16 tokens) in each of group_size layer slots
                pool_block = e.kv_bytes_per_token_per_gpu * 16 // m.n_layers * e.group_size
                used = e.weight_bytes_per_gpu + e.reserve_bytes + e.pool_blocks * pool_block
                assert used <= 0.9 * gpu.memory_gib * GIB < used + pool_block + 1
                groups = e.full_groups + e.sliding_groups
                assert e.tokens == e.pool_blocks // groups * 16 and e.group_size * groups >= m.n_layers
                continue
            assert err.count("\n") == 1, err
            if "--tensor-parallel-size=" in err:  # a size that does not split the heads: the sizes that do
                assert "sizes that split it" in err and tp not in m.tensor_parallel_sizes(64)
                continue
            assert "expected a deployment that fits" in err and "larger GPU" in err, err
            hit = FITS_FROM.search(err)
            ok = [t for t in m.tensor_parallel_sizes(64) if t > tp]
            fits = [t for t in ok if _fits(m, gpu, t)]
            assert (int(hit.group(1)) if hit else None) == (fits[0] if fits else None), (name, g, tp, err)
    assert answered or m.weight_bytes > 3 * 0.9 * 191.5 * GIB, name  # each fits somewhere but the largest


def _fits(m, gpu, tp):
    try:
        kv_capacity_estimate(m, gpu_memory_gib=gpu.memory_gib, tensor_parallel_size=tp)
        return True
    except ParameterError:
        return False


def test_the_hint_is_the_planners_own_answer():
    """The tensor-parallel size a refusal suggests is the smallest one the same calculation accepts, with the
    given reserve too (before, the hint repeated the calculation beside it)."""
    m = load_model("Llama-3.1-70B")
    for reserve in (None, 0.0, 5.0):
        with pytest.raises(ParameterError) as exc:
            kv_capacity_estimate(m, gpu_memory_gib=39.39, activation_reserve_gib=reserve)
        t = int(FITS_FROM.search(exc.value.hint).group(1))
        kv_capacity_estimate(m, gpu_memory_gib=39.39, tensor_parallel_size=t, activation_reserve_gib=reserve)
        for smaller in (s for s in m.tensor_parallel_sizes(64) if 1 < s < t):
            with pytest.raises(ParameterError):
                kv_capacity_estimate(m, gpu_memory_gib=39.39, tensor_parallel_size=smaller,
                                     activation_reserve_gib=reserve)


LENGTHS = ["--input-len", "1000", "--output-len", "200"]


@pytest.mark.parametrize("command", [
    ["check", "--load", "0.9", "--policy", "sarathi", *LENGTHS],
    ["simulate", "--load", "0.9", "--horizon", "60", "--policy", "sarathi", *LENGTHS], ["region", *LENGTHS],
    pytest.param(["report", "--quick", "--out", "{tmp}/report"], marks=pytest.mark.slow)])  # 27 s
def test_other_commands_take_a_config(tmp_path, capsys, command):
    p = write(tmp_path, CONFIGS["GPT-OSS-20B"][0], name="gpt-oss-20b.json")
    rc, out, err = run_cli([command[0], "--model-config", str(p), "--gpu", "H100", "--tensor-parallel-size", "2",
                            *(c.replace("{tmp}", str(tmp_path)) for c in command[1:])], capsys)
    assert rc == 0 and out.strip() and "internal error" not in err, (command, out, err)
    if command[0] != "report":
        assert "gpt-oss-20b on 2 x H100-SXM5-80GB" in out, out


# ------------------------------------------------------------------------------------------------------------
# --gpu names
# ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("typed,name", [
    ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"), ("NVIDIA H100 PCIe", "H100-PCIe-80GB"),
    ("NVIDIA H100 NVL", "H100-NVL-94GB"), ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"), ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
    ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"), ("NVIDIA GeForce RTX 4090", "RTX-4090"),
    ("NVIDIA L40S", "L40S"), ("NVIDIA L4", "L4"), ("NVIDIA A10G", "A10G"), ("NVIDIA RTX A6000", "RTX-A6000"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"), ("NVIDIA H200", "H200-SXM-141GB"),
    ("NVIDIA H200 NVL", "H200-NVL-141GB"), ("NVIDIA B200", "B200-SXM-180GB"), ("AMD Instinct MI300X", "MI300X"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-Blackwell"), ("h100", "H100-SXM5-80GB"),
    ("rtx_4090", "RTX-4090"), ("a100-40gb", "A100-SXM4-40GB")])
def test_nvidia_smi_spellings(typed, name):
    assert load_gpu(typed).name == name


@pytest.mark.parametrize("typed,near", [("NVIDIA H800", "H100-SXM5-80GB"), ("NVIDIA L40", "L40S"),
                                        ("4090", "RTX-4090"), ("MI325X", "MI300X")])
def test_an_unknown_gpu_names_the_near_ones_first(capsys, typed, near):
    err = assert_one_line(["capacity", "--model", "Llama-3.1-8B", "--gpu", typed], capsys, "--gpu", near)
    assert err.index("did you mean") < err.index("known:") and near in err.split("did you mean")[1].split("?")[0]


def test_the_roofline_reads_gpt_oss_attention_in_bf16():
    """The roofline batch time reads each matrix in its own format: GPT-OSS's attention in bf16, not at the
    experts' 4.25 bits (before: every matrix at the quantized width, 0.41 ms too fast a batch of one on an
    H100, 37 % of its linear time)."""
    from fluidq.batchtime.roofline import Roofline

    m, gpu = load_model("GPT-OSS-20B"), load_gpu("H100")
    kept, quantized = Roofline(model=m, gpu=gpu), Roofline(model=m.replace(quantize_attention=True), gpu=gpu)
    extra = 24 * (2 * 2880 * 4096 + 2 * 2880 * 512) * (2 - 4.25 / 8)  # the attention weights' extra bytes
    bandwidth = gpu.memory_bandwidth * kept.memory_efficiency
    assert kept.breakdown(1)["linear"] - quantized.breakdown(1)["linear"] == pytest.approx(extra / bandwidth, rel=1e-9)


@pytest.mark.parametrize("name,window,sliding", [
    ("GPT-OSS-20B", 128, 12), ("GPT-OSS-120B", 128, 18), ("Gemma-2-9B", 4096, 21), ("Gemma-3-4B", 1024, 29),
    ("Gemma-3-27B", 1024, 52), ("Mistral-7B-v0.1", 4096, 32), ("Qwen2.5-7B", None, 0), ("Llama-3.1-8B", None, 0)])
def test_sliding_window_layers_are_counted(tmp_path, name, window, sliding):
    """GPT-OSS from its layer_types, Gemma-2 every other layer, Gemma-3 five in six, Mistral-7B-v0.1 all; Qwen2.5
    declares a window it does not use (use_sliding_window false)."""
    m = facts(tmp_path, name)
    assert (m.sliding_window, m.n_sliding_layers) == (window, sliding)
    assert ("sliding window" in m.kv_rule) is bool(sliding)


def test_kv_tokens_at_a_context_longer_than_the_window():
    """The planner's tokens are vLLM's logged "GPU KV cache size"; with vLLM's hybrid allocator a request longer
    than the window holds its windowed groups' last window + block only.  GPT-OSS-120B on one H100, by hand: 8 KV
    heads of 64 in bf16, a layer's block 2 x 8 x 64 x 2 B x 16 = 32,768 B; 18 full + 18 windowed layers: 2 groups
    of 18 (no padding), a pool block 18 x 32,768 = 589,824 B; 10,249,233,431 B // 589,824 = 17,376 pool blocks,
    17,376 // 2 = 8,688 blocks = 139,008 tokens logged.  1,200-token requests (the window keeps 128 + 16):
    17,376 / (1 + 144 / 1,200) = 15,514.3 blocks = 248,224 tokens (1.79 times); 10**7-token ones 17,375 blocks
    (2 times); a model without windowed layers, or requests within the window, the logged tokens."""
    e = kv_capacity_estimate(load_model("GPT-OSS-120B"), gpu_memory_gib=load_gpu("H100").memory_gib)
    assert e.kv_bytes == 10_249_233_431  # the precondition of the hand calculation (weights and reserve)
    assert e.tokens == 139_008
    assert e.tokens_at_context(100) == e.tokens_at_context(144) == e.tokens  # within window + block: no saving
    assert e.tokens_at_context(1200) == 15_514 * 16 == 248_224
    assert e.tokens_at_context(10**7) == 17_375 * 16
    dense = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=79.22)
    assert dense.tokens_at_context(10**6) == dense.tokens
    with pytest.raises(ParameterError, match="context_tokens"):
        e.tokens_at_context(0)


def test_a_refusal_for_memory_names_the_fp8_checkpoint():
    """Llama-3.1-405B in bf16 needs 16 H100s; its FP8 checkpoint (RedHatAI's, Meta's own) runs on the usual 8: the
    refusal says so (before: only more TP or a larger GPU)."""
    m = load_model("Llama-3.1-405B")
    with pytest.raises(ParameterError) as exc:
        kv_capacity_estimate(m, gpu_memory_gib=79.22, tensor_parallel_size=8)
    hint = exc.value.hint
    assert "fits from --tensor-parallel-size 16" in hint and "an FP8 checkpoint of the model takes" in hint
    assert "fits at this size" in hint
    kv_capacity_estimate(m.replace(quantization="fp8"), gpu_memory_gib=79.22, tensor_parallel_size=8)
    with pytest.raises(ParameterError) as exc:  # on 4 GPUs FP8 does not fit either: not said to
        kv_capacity_estimate(m, gpu_memory_gib=79.22, tensor_parallel_size=4)
    assert "FP8 checkpoint" in exc.value.hint and "fits at this size" not in exc.value.hint


def test_the_cli_plans_a_windowed_models_cache_at_the_workloads_context(capsys):
    """GPT-OSS-120B on one H100 at 1,000 + 200 tokens: before, the cache was the 139,008 tokens vLLM logs and bound
    at 16.8 req/s; vLLM's hybrid allocator holds 1.77 times that at a mean context of 1,100 (its windowed half keeps
    144 tokens a request), which the answer now takes and says.  A model without windows, or a --kv-capacity, is
    unchanged."""
    from fluidq.engine import roofline_engine

    args = ["--gpu", "H100", "--input-len", "1000", "--output-len", "200", "--json"]
    rc, out, err = run_cli(["capacity", "--model", "gpt-oss-120b", *args], capsys)
    i = json.loads(out)["inputs"]
    e = kv_capacity_estimate(load_model("GPT-OSS-120B"), gpu_memory_gib=load_gpu("H100").memory_gib)
    assert rc == 0 and i["kv_capacity_tokens"] == e.tokens_at_context(1100) > 1.7 * e.tokens, err
    assert f"where vLLM logs {e.tokens:,}" in i["kv_source"] and "hybrid KV-cache allocator" in i["kv_source"]
    eng = roofline_engine("GPT-OSS-120B", "H100", context_tokens=1100)
    assert eng.kv_capacity_tokens == i["kv_capacity_tokens"]
    assert roofline_engine("GPT-OSS-120B", "H100").kv_capacity_tokens == e.tokens  # no context: the logged tokens
    rc, out, _ = run_cli(["capacity", "--model", "gpt-oss-120b", *args, "--kv-capacity", "139008"], capsys)
    assert json.loads(out)["inputs"]["kv_capacity_tokens"] == 139008
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-8B", *args], capsys)
    i = json.loads(out)["inputs"]
    assert i["kv_capacity_tokens"] == kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=79.22).tokens
    assert "hybrid" not in i["kv_source"]
    rc, out, _ = run_cli(["check", "--model", "gpt-oss-120b", *args[:-1], "--load", "0.5", "--policy", "sarathi"],
                         capsys)
    assert rc == 0 and f"KV cache {e.tokens_at_context(1100):,} tokens at a mean context of 1100" in out
