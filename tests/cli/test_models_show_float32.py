"""``models show`` of a float32 config says the config's float32 where it prints dtype bfloat16 (user6a, 6b).

vLLM's ``--dtype auto`` serves a float32 checkpoint in 16 bits, and fluidq takes it as bfloat16 (its weights and
KV bytes follow); before, ``models show --config`` of a config with ``torch_dtype: float32`` printed ``dtype
bfloat16`` and nothing else, so the user could not tell the file said float32.
"""
import json

from fluidq.cli import main

CONFIG = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 2048}


def _show(tmp_path, capsys, dtype, *extra):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, "torch_dtype": dtype}))
    rc = main(["models", "show", "--config", str(path), *extra])
    out, err = capsys.readouterr()
    assert rc in (0, None), err
    return {ln[:25].strip(): ln[25:] for ln in out.splitlines()}


def test_float32_is_said(tmp_path, capsys):
    rows = _show(tmp_path, capsys, "float32")
    assert rows["dtype"].startswith("bfloat16 (the config.json says float32: vLLM's --dtype auto serves it in "
                                    "bfloat16; --dtype float32 keeps it)"), rows["dtype"]
    assert "torch_dtype float32 in the file" in rows["source"]


def test_other_formats_and_an_override_say_nothing_more(tmp_path, capsys):
    assert _show(tmp_path, capsys, "bfloat16")["dtype"] == "bfloat16"
    assert _show(tmp_path, capsys, "float16")["dtype"] == "float16"
    rows = _show(tmp_path, capsys, "float32", "--dtype", "float32")
    assert rows["dtype"] == "float32" and "float32 in the file" not in rows["source"]
