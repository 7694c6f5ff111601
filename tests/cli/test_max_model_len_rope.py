"""vLLM's derived ``max_model_len``: ``max_position_embeddings`` scaled by the config's ``rope_scaling`` (issues 16,
20, second reading).

vLLM (vllm/config, ``_get_and_verify_max_len``) multiplies the length by ``rope_scaling.factor`` for every rope
type but su/longrope/llama3, takes ``original_max_position_embeddings x factor`` for yarn, and leaves Gemma-3's
(already scaled) alone.  Before, fluidq capped ``--max-model-len`` at ``max_position_embeddings``: Qwen2.5-7B with
the yarn factor 4 its model card gives for 128k contexts (32,768 positions) and ``--max-model-len 131072`` was
refused where vLLM starts.  Also: ``capacity``'s answer lines keep their order with the max-model-len note.
"""
import json

import pytest

from fluidq.cli import main
from fluidq.engine import roofline_engine
from fluidq.errors import DataError, ParameterError
from fluidq.models import ModelFacts
from fluidq.models.context import check_max_model_len, derived_max_model_len

from hf_configs import QWEN2_7B as QWEN  # tests/models/hf_configs.py
YARN = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def _facts(tmp_path, rope=None, name="cfg.json", **over):
    cfg = {**QWEN, **over}
    if rope is not None:
        cfg["rope_scaling"] = rope
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p, ModelFacts.from_config(p)


@pytest.mark.parametrize("rope, expected", [
    (None, 32768),
    (YARN, 131072),  # original_max_position_embeddings x factor
    ({"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8192}, 16384),  # not mpe x factor
    ({"type": "linear", "factor": 2.0}, 65536),
    ({"rope_type": "dynamic", "factor": 1.5}, 49152),
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, 32768),  # not multiplied
    ({"rope_type": "longrope", "factor": 4.0, "short_factor": [1], "long_factor": [1]}, 32768),
    ({"type": "su", "short_factor": [1], "long_factor": [1]}, 32768),
    ({"rope_type": "default", "mrope_section": [16, 24, 24]}, 32768),  # no factor: 1
])
def test_the_derived_length_follows_vllms_rule(tmp_path, rope, expected):
    _, m = _facts(tmp_path, rope)
    assert derived_max_model_len(m) == expected
    assert check_max_model_len(m, expected) == expected
    with pytest.raises(ParameterError) as e:
        check_max_model_len(m, expected + 1)
    assert e.value.name == "max_model_len" and f"{expected:,}" in str(e.value)


def test_gemma3_is_not_scaled_again(tmp_path):
    _, g = _facts(tmp_path, {"rope_type": "linear", "factor": 8.0}, model_type="gemma3_text", head_dim=256,
                  max_position_embeddings=131072, sliding_window=1024)
    assert "gemma3" in g.architecture and derived_max_model_len(g) == 131072
    _, q = _facts(tmp_path, {"rope_type": "linear", "factor": 8.0}, name="q.json", max_position_embeddings=131072)
    assert derived_max_model_len(q) == 8 * 131072  # the same scaling on another family is applied


@pytest.mark.parametrize("rope, words", [
    ({"rope_type": "yarn", "factor": 4.0}, "original_max_position_embeddings"),
    ({"rope_type": "linear", "factor": 0}, "factor"),
    ({"factor": 2.0}, "rope_type"),
    ("yarn", "not an object"),
    ({"type": "yarn", "rope_type": "linear", "factor": 2.0, "original_max_position_embeddings": 4}, "differ"),
])
def test_a_malformed_rope_scaling_is_refused(tmp_path, rope, words):
    with pytest.raises(DataError) as e:
        _facts(tmp_path, rope)
    assert "rope_scaling" in str(e.value) and words in str(e.value)


def test_the_engine_takes_the_scaled_length(tmp_path):
    _, m = _facts(tmp_path, YARN)
    eng = roofline_engine(m, "H200", max_model_len=131072, kv_capacity_tokens=200_000)
    assert eng.kv_capacity_tokens == 200_000
    with pytest.raises(ParameterError) as e:
        roofline_engine(m, "H200", max_model_len=131073, kv_capacity_tokens=200_000)
    assert e.value.name == "max_model_len" and "yarn" in str(e.value) and "131,072" in str(e.value)
    with pytest.raises(ParameterError) as e:  # the cache check: whole blocks of 16
        roofline_engine(m, "H200", max_model_len=131072, kv_capacity_tokens=131_071)
    assert e.value.name == "max_model_len" and "131,056" in str(e.value)


def _run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_cli_accepts_vllms_scaled_max_model_len(tmp_path, capsys):
    p, _ = _facts(tmp_path, YARN)
    base = ["capacity", "--gpu", "H100", "--model-config", str(p), "--kv-capacity", "300000"]
    rc, out, err = _run([*base, "--max-model-len", "131072", "--json"], capsys)
    assert rc in (0, None), err
    assert json.loads(out)["max_model_len"]["value"] == 131072
    rc, out, err = _run([*base, "--max-model-len", "131073"], capsys)
    assert rc == 2 and "--max-model-len" in err and "131,072" in err and "yarn" in err, err
    rc, out, err = _run([*base, "--prompt", "100000", "--output", "20000"], capsys)  # the default: the scaled length
    assert rc in (0, None), err
    p2, _ = _facts(tmp_path, name="plain.json")
    rc, out, err = _run(["capacity", "--gpu", "H100", "--model-config", str(p2), "--max-model-len", "131072"], capsys)
    assert rc == 2 and "--max-model-len" in err and "32,768" in err, err


@pytest.mark.parametrize("rate", [None, "5"])
def test_capacity_lines_keep_their_order_with_and_without_the_note(capsys, rate):
    extra = [] if rate is None else ["--rate", rate]
    orders = {}
    for gpu in ("H100", "RTX-4090"):  # Llama-3.1-8B's 131,072 fits an H100's cache, not an RTX 4090's: the note
        rc, out, err = _run(["capacity", "--gpu", gpu, "--model", "llama-3.1-8b", *extra], capsys)
        assert rc in (0, None), err
        lines = [ln for ln in out.splitlines() if ln and not ln.startswith(" ")]
        # the load basis line is printed where the basis is not max_throughput, right after the region line: on both
        # (the cache binds on the RTX 4090; on the H100 max_num_seqs binds and the basis stays the flow balance under
        # the cache's rules, h-basis 2026-12-07; before, only on the RTX 4090: h-docs4)
        basis = [i for i, ln in enumerate(lines) if ln.startswith("load basis")]
        assert len(basis) == 1, out
        assert lines[basis[0] - 1].startswith("region"), out
        orders[gpu] = [ln.split()[0] for ln in lines if not ln.startswith("load basis")]
    assert "max-model-len" not in orders["H100"] and "max-model-len" in orders["RTX-4090"]
    note = orders["RTX-4090"].index("max-model-len")
    assert orders["RTX-4090"][note - 1] == "KV" and orders["RTX-4090"][note + 1] == "capacity"
    assert [w for w in orders["RTX-4090"] if w != "max-model-len"] == orders["H100"]
    after = orders["H100"][orders["H100"].index("capacity") + 1:]
    assert after[: 2 if rate else 1] == (["load", "region"] if rate else ["region"])


def test_the_facts_keep_rope_scaling_through_their_dict(tmp_path):
    _, m = _facts(tmp_path, YARN)
    assert m.rope_scaling == ("yarn", 4.0, 32768)
    again = ModelFacts(**json.loads(json.dumps(m.to_dict())))  # a JSON list comes back as the tuple
    assert again == m and derived_max_model_len(again) == 131072
    with pytest.raises(ParameterError) as e:
        m.replace(rope_scaling=("yarn", -1.0, None))
    assert e.value.name == "rope_scaling"


def test_the_engines_block_size_counts_the_given_cache(tmp_path):
    _, m = _facts(tmp_path, YARN)
    roofline_engine(m, "H200", max_model_len=4112, kv_capacity_tokens=4120)  # 16-token blocks: 4,112 fit
    with pytest.raises(ParameterError) as e:  # 32-token blocks: 4,120 is 4,096 in whole blocks
        roofline_engine(m, "H200", max_model_len=4112, kv_capacity_tokens=4120, block_size=32)
    assert e.value.name == "max_model_len" and "4,096" in str(e.value) and "blocks of 32" in str(e.value)
    with pytest.raises(ParameterError) as e:
        roofline_engine(m, "H200", block_size=0)
    assert e.value.name == "block_size"
