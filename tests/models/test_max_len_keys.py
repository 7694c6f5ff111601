"""A model's length from a config.json read as vLLM reads it (vllm/config, ``_get_and_verify_max_len``): the
smallest of its length keys in vLLM's order (max_position_embeddings, n_positions, max_seq_len, seq_length,
model_max_length, max_target_positions, max_sequence_length, max_seq_length, seq_len), except that a
model_max_length is taken whatever the others say (Command-R / Cohere); then the rope scaling.  Before, only
max_position_embeddings was read: a config giving its length as n_positions or seq_length had no known context.
Hand-written configs of one layout (a small Llama) with the length keys changed."""
import json

import pytest

from fluidq.errors import DataError, ParameterError
from fluidq.models import ModelFacts
from fluidq.models.context import derived_max_model_len, derived_words
from fluidq.models.facts import MAX_LEN_KEYS

BASE = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
        "num_key_value_heads": 8, "intermediate_size": 2816, "vocab_size": 32000, "torch_dtype": "bfloat16"}


def _facts(tmp_path, **keys):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**BASE, **keys}))
    return ModelFacts.from_config(p, name="hand/written")


@pytest.mark.parametrize("key", [k for k in MAX_LEN_KEYS])
def test_each_length_key_alone_is_the_length(tmp_path, key):
    m = _facts(tmp_path, **{key: 3000})
    assert (m.max_position_embeddings, m.max_len_key, derived_max_model_len(m)) == (3000, key, 3000)
    assert derived_words(m) == f"{key} 3,000"


@pytest.mark.parametrize("keys, length, key", [
    ({"max_position_embeddings": 4096, "n_positions": 2048}, 2048, "n_positions"),  # the smallest
    ({"max_position_embeddings": 2048, "seq_length": 8192}, 2048, "max_position_embeddings"),
    ({"seq_length": 32768, "max_sequence_length": 4096, "seq_len": 4096}, 4096, "max_sequence_length"),  # first
    ({"max_position_embeddings": 8192, "seq_length": None, "seq_len": 0}, 8192, "max_position_embeddings"),  # absent
    ({"max_position_embeddings": 8192, "model_max_length": 131072}, 131072, "model_max_length"),  # Command-R
    ({"max_position_embeddings": 8192, "model_max_length": 4096}, 4096, "model_max_length"),
])
def test_the_smallest_key_unless_model_max_length_as_vllm(tmp_path, keys, length, key):
    m = _facts(tmp_path, **keys)
    assert (m.max_position_embeddings, m.max_len_key) == (length, key)


def test_no_length_key_is_no_known_length(tmp_path):
    m = _facts(tmp_path)
    assert m.max_position_embeddings is None and derived_max_model_len(m) is None


def test_the_rope_scaling_applies_to_the_key_read(tmp_path):
    # a linear factor 4 on a seq_length of 2,048: 8,192 (vLLM scales whichever key gave the length)
    m = _facts(tmp_path, seq_length=2048, rope_scaling={"rope_type": "linear", "factor": 4.0})
    assert derived_max_model_len(m) == 8192 and derived_words(m) == "seq_length 2,048 x its linear rope_scaling factor 4"


def test_a_falcon_config_without_a_length_has_its_config_class_s_2048(tmp_path):
    # transformers' FalconConfig defaults max_position_embeddings to 2048 and falcon-7b's config.json omits it:
    # vLLM reads 2,048 from the class, and so does fluidq, saying so in the source
    cfg = {"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71,
           "vocab_size": 65024, "multi_query": True, "parallel_attn": True, "torch_dtype": "bfloat16"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = ModelFacts.from_config(p, name="falcon-7b")
    assert derived_max_model_len(m) == 2048 and "max_position_embeddings=2048" in m.source


def test_a_bad_length_key_is_named(tmp_path):
    with pytest.raises(DataError, match=r"key 'n_positions': '2048' is not an integer"):
        _facts(tmp_path, n_positions="2048")
    with pytest.raises(DataError, match=r"key 'seq_length': .*2\*\*40"):
        _facts(tmp_path, seq_length=2**41)
    with pytest.raises(ParameterError, match="max_len_key"):
        ModelFacts(**{**_facts(tmp_path, seq_length=2048).to_dict(), "max_len_key": "context"})


def test_the_command_line_names_the_key_it_read(tmp_path, capsys):
    # capacity --gpu --model-config: the max_model_len it reports comes from seq_length, and says so
    from fluidq.testing.cli import run_cli

    p = tmp_path / "config.json"
    p.write_text(json.dumps({**BASE, "seq_length": 4096}))
    rc, out, err = run_cli(["capacity", "--gpu", "H100", "--model-config", str(p), "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["max_model_len"]["value"] == 4096
    assert json.loads(out)["max_model_len"]["source"] == "seq_length (vLLM's default)"
    rc, out, err = run_cli(["capacity", "--gpu", "H100", "--model-config", str(p), "--prompt", "4000", "--output",
                            "97"], capsys)
    assert rc == 2 and "seq_length 4,096" in err, err
