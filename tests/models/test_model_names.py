"""``--model NAME`` as users type it (issue 20): Hugging Face ids, any case, -Instruct/-Chat/-hf/-it and
context-length suffixes, Meta- prefixes, quantization suffixes; unknown names get the closest ones."""
import pytest

from fluidq.errors import UnknownNameError
from fluidq.models import load_model
from fluidq.testing.cli import assert_one_line, run_cli


@pytest.mark.parametrize("typed,name,quant", [
    ("meta-llama/Llama-3.1-70B-Instruct", "Llama-3.1-70B", None),
    ("meta-llama/Meta-Llama-3-8B-Instruct", "Llama-3-8B", None),
    ("meta-llama/Llama-2-7b-chat-hf", "Llama-2-7B", None),
    ("LLAMA-3.1-8B", "Llama-3.1-8B", None),
    ("meta-llama/Llama-3.3-70B-Instruct", "Llama-3.3-70B", None),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama-4-Scout-17B-16E", None),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B", None),
    ("mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B-v0.3", None),
    ("mistralai/Mistral-Nemo-Instruct-2407", "Mistral-Nemo-12B", None),
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B", None),
    ("Qwen/Qwen2.5-7B-Instruct-1M", "Qwen2.5-7B", None),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen3-235B-A22B", None),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B-Instruct-2507", None),
    ("google/gemma-2-9b-it", "Gemma-2-9B", None),
    ("microsoft/Phi-3-mini-128k-instruct", "Phi-3-mini", None),
    ("codellama/CodeLlama-34b-Instruct-hf", "CodeLlama-34B", None),
    ("deepseek-ai/DeepSeek-R1", "DeepSeek-V3", "fp8"),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "Llama-3.3-70B", None),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen2.5-7B-INT4", "int4"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int8", "Qwen2.5-72B-INT8", "int8"),
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "Llama-3.1-70B-FP8", "fp8"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "Llama-3.1-8B-INT4", "int4"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507-FP8", "Qwen3-30B-A3B-Instruct-2507-FP8", "fp8"),
])
def test_names_users_type(typed, name, quant):
    m = load_model(typed)
    assert m.name == name and m.quantization == quant
    if quant in ("fp8", "int8") and name != "DeepSeek-V3":
        base = load_model(typed.split("/")[-1].rsplit("-", 1)[0] if "GPTQ" not in typed else "Qwen2.5-72B")
        assert m.param_count == base.param_count and m.weight_bytes < 0.6 * base.weight_bytes


@pytest.mark.parametrize("typed,close", [("Llama-3.1-7B", "Llama-3.1-70B"), ("llama3-8b", "Llama-3-8B"),
                                         ("Qwen2-7B", "Qwen2.5-7B"), ("mistral-8x7b", "Mixtral-8x7B")])
def test_unknown_names_suggest_close_ones(typed, close):
    with pytest.raises(UnknownNameError) as exc:
        load_model(typed)
    msg = str(exc.value)
    assert "did you mean" in msg and close in msg.split("did you mean")[1] and "Llama-3.1-8B" in msg


def test_cli_resolves_hf_ids_and_suggests(capsys):
    rc, out, err = run_cli(["capacity", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA H100 80GB HBM3"],
                           capsys)
    assert rc == 0 and "Llama-3.1-8B on 1 x H100-SXM5-80GB" in out, err
    assert_one_line(["capacity", "--model", "meta-llama/Llama-3.1-7B-Instruct", "--gpu", "H100"], capsys,
                    "--model", "did you mean Llama-3.1-70B")


def test_cli_model_may_be_a_local_folder_as_in_vllm(capsys, tmp_path):
    """``vllm serve /models/x`` takes a folder; so does ``--model`` here (its config.json is read)."""
    import json

    folder = tmp_path / "Llama-3.1-8B-Instruct"
    folder.mkdir()
    cfg = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16"}
    (folder / "config.json").write_text(json.dumps(cfg))
    by_folder = run_cli(["capacity", "--model", str(folder), "--gpu", "H100", "--json"], capsys)
    by_name = run_cli(["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100", "--json"], capsys)
    assert by_folder[0] == by_name[0] == 0
    assert json.loads(by_folder[1])["tokens_per_s"] == json.loads(by_name[1])["tokens_per_s"]
