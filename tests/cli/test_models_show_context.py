"""``fluidq models show`` prints the context vLLM derives (max_position_embeddings scaled by rope_scaling), the
length capacity and --max-model-len use: it printed max_position_embeddings unscaled (review of main 3f6ee3b: a
yarn config of 32,768 positions x 4 showed "max context 32768" where capacity takes 131,072)."""
import json

import pytest

from fluidq.models import ModelFacts
from fluidq.models.context import derived_max_model_len
from fluidq.testing.cli import run_cli

from hf_configs import QWEN2_7B as QWEN  # tests/models/hf_configs.py


def _row(out):
    return next(ln for ln in out.splitlines() if ln.startswith("max context"))


@pytest.mark.parametrize("rope, expected, words", [
    ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 131072,
     "original_max_position_embeddings 32,768 x its yarn rope_scaling factor 4; max_position_embeddings 32,768"),
    ({"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8192}, 16384,
     "original_max_position_embeddings 8,192 x its yarn rope_scaling factor 2; max_position_embeddings 32,768"),
    ({"rope_type": "linear", "factor": 2.0}, 65536, "max_position_embeddings 32,768 x its linear rope_scaling factor 2"),
    (None, 32768, "max_position_embeddings;"),
])
def test_show_prints_the_derived_context_and_what_it_comes_from(tmp_path, capsys, rope, expected, words):
    cfg = dict(QWEN)
    if rope is not None:
        cfg["rope_scaling"] = rope
    p = tmp_path / "cfg.json"
    p.write_text(json.dumps(cfg))
    assert derived_max_model_len(ModelFacts.from_config(p)) == expected  # the length capacity and the checks use
    rc, out, err = run_cli(["models", "show", "--config", str(p)], capsys)
    assert rc in (0, None), err
    row = _row(out)
    assert row.split()[2] == f"{expected:,}", row
    assert words in row, row
    rc, out, err = run_cli(["models", "show", "--config", str(p), "--json"], capsys)
    d = json.loads(out)
    assert d["derived"]["max_model_len"] == expected and d["max_position_embeddings"] == 32768


def test_show_names_the_length_key_vllm_read(tmp_path, capsys):
    # a config whose length is seq_length (no max_position_embeddings): the row names seq_length, as capacity's
    # --max-model-len line does (it named max_position_embeddings before)
    cfg = {k: v for k, v in QWEN.items() if k != "max_position_embeddings"} | {"seq_length": 8192}
    p = tmp_path / "cfg.json"
    p.write_text(json.dumps(cfg))
    rc, out, err = run_cli(["models", "show", "--config", str(p)], capsys)
    assert rc in (0, None), err
    row = _row(out)
    assert row.split()[2] == "8,192" and "(seq_length;" in row and "max_position_embeddings" not in row, row
