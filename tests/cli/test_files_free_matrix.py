"""``fluidq capacity --model NAME|--model-config --gpu NAME --tensor-parallel-size N`` over models x GPUs x TP
(issue 20 item 2: deployments without files): every combination either answers -- a finite capacity with the
roofline-estimate note -- or is refused in one line naming the parameter (weights that do not fit say how much
memory they need; a TP size that does not split the heads lists the sizes that do).  No traceback, no internal
error.  The whole matrix (44 models x 19 GPUs x TP 1, 2, 4, 8 = 3,344 runs) was checked by a script on 2026-12-06:
2,633 answers, 711 refusals (595 weights that do not fit, 2 with no room for one KV block, 114 TP sizes that do
not split the heads), 0 failures; this test keeps a subset that covers every model and every GPU."""
import json
import math
import re

import pytest

from fluidq.testing.cli import run_cli

GPUS_FOR_EVERY_MODEL = ("L4", "H100-SXM5-80GB", "MI300X")
MODELS_FOR_EVERY_GPU = ("Llama-3.1-8B", "DeepSeek-V3")
TPS = (1, 2, 4, 8)
REFUSALS = (
    # weights (or weights + reserve) larger than the GPU: the usable memory and the weights per GPU, in GiB
    r"--gpu='[\w.-]+ with --tensor-parallel-size \d': expected a deployment that fits: the weights (do not fit|and "
    r"reserve leave less than one KV block) \([\d.]+ GiB x 0\.9 = [\d.]+ GiB usable; weights [\d.]+ GiB per GPU",
    # a TP size that does not split the heads: the sizes that do
    r"--tensor-parallel-size=\d: expected a (divisor|multiple) of n_(kv_)?heads=\d+.*sizes that split it: [\d, ]+",
)


def _names(capsys, command):
    rc, out, _ = run_cli([command, "--json"] if command == "gpus" else ["models", "list", "--json"], capsys)
    assert rc == 0
    return [x["name"] for x in json.loads(out)]


def _check(capsys, argv):
    """One run: an answer with its roofline note, or a one-line refusal of a known kind; returns which."""
    rc, out, err = run_cli(["capacity", *argv, "--input-len", "1000", "--output-len", "200", "--json"], capsys)
    if rc == 0:
        d = json.loads(out)
        for k in ("tokens_per_s", "requests_per_s"):
            assert isinstance(d[k], float) and math.isfinite(d[k]) and d[k] > 0, (argv, k, d[k])
        assert d["binding"] in ("k_max", "kv_cache", "token_budget"), (argv, d["binding"])
        assert "roofline estimate" in d["inputs"]["estimate"] and d["inputs"]["kv_capacity_tokens"] >= 16, argv
        return "answer"
    assert rc == 2 and err.count("\n") == 1 and "internal error" not in err and "Traceback" not in err, (argv, err)
    assert any(re.search(p, err) for p in REFUSALS), (argv, err)
    return "refused"


def _model_names():
    from fluidq.models import list_models

    return [m.name for m in list_models()]


@pytest.mark.parametrize("model", _model_names())
def test_every_model_answers_or_is_refused_by_name(model, capsys):
    seen = {_check(capsys, ["--model", model, "--gpu", g, "--tensor-parallel-size", str(tp)])
            for g in GPUS_FOR_EVERY_MODEL for tp in TPS}
    # every model of the table fits some GPU of the subset at some TP (Llama-3.1-405B: 8 x MI300X)
    assert "answer" in seen, model


def test_every_gpu_answers_or_is_refused_by_name(capsys):
    gpus = _names(capsys, "gpus")
    assert len(gpus) >= 19
    for g in gpus:
        seen = {_check(capsys, ["--model", m, "--gpu", g, "--tensor-parallel-size", str(tp)])
                for m in MODELS_FOR_EVERY_GPU for tp in TPS}
        assert "answer" in seen, g  # Llama-3.1-8B fits every GPU of the table


def test_the_refusals_say_what_memory_is_needed(capsys):
    # Llama-3.1-70B in bf16 (131 GiB of weights) on one 80 GB H100 does not fit; on 2 it does
    rc, out, err = run_cli(["capacity", "--model", "Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "1"],
                           capsys)
    assert rc == 2 and re.search(r"79.22 GiB x 0.9 = 71.30 GiB usable; weights 131.\d\d GiB per GPU", err), err
    assert "it fits from --tensor-parallel-size 2;" in err  # and the size that fits, which answers
    assert "an FP8 checkpoint of the model takes 67.67 GiB per GPU and fits at this size)" in err  # or FP8 weights
    rc, out, err = run_cli(["capacity", "--model", "Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "2"],
                           capsys)
    assert rc == 0, err
    # 20,000 sequences: the sampler's logits (20,000 x 128,256 x 8 B) leave no room on an L4, which more GPUs
    # would not change; the refusal says what sizes the reserve (a budget of as many tokens: vLLM refuses a smaller
    # one; its activations take 2.21 GiB where the default 2,048 tokens' took 0.23: 19.84 -> 21.82 GiB)
    rc, out, err = run_cli(["capacity", "--model", "Llama-3.1-8B", "--gpu", "L4", "--max-num-seqs", "20000",
                            "--max-num-batched-tokens", "20000"], capsys)
    assert rc == 2 and "reserve 21.82 GiB" in err and "the reserve grows with --max-num-seqs (20000" in err, err
    assert "it fits from" not in err


@pytest.mark.parametrize("tp", TPS)
def test_a_model_in_no_table_is_answered_from_its_config(tp, tmp_path, capsys):
    dense = {"model_type": "llama", "num_hidden_layers": 12, "hidden_size": 2048, "num_attention_heads": 16,
             "num_key_value_heads": 4, "intermediate_size": 5632, "vocab_size": 50000, "torch_dtype": "bfloat16"}
    moe = {"model_type": "mixtral", "num_hidden_layers": 16, "hidden_size": 3072, "num_attention_heads": 24,
           "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 32000, "num_local_experts": 8,
           "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}
    for name, doc in (("dense", dense), ("moe", moe)):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc))
        assert _check(capsys, ["--model-config", str(p), "--gpu", "H100", "--tensor-parallel-size", str(tp)]) == "answer"
