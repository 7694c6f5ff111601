"""Recorded values of the wrong type or range are refused naming the file, key, value and expectation (review
revbad2 L1, L2): an invalid ``engine_kwargs`` value under a valid resolved one was only noted as a disagreement,
``async_scheduling: "yes"`` fell back to the version's default, ``device_total_memory_bytes: -1`` was read, and
profile_meta.yaml's ``tp_degrees: one``, ``block_size: sixteen`` or a key given twice passed without a word."""
import json

import pytest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.validate.cases import case_for_run
from fluidq.validate.runs import read_run


def _with_resolved(tmp_path, key, section, value, resolved):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    m = rv.meta(d)
    m["engine_kwargs"][key] = value
    m["resolved_config"] = {section: {key: resolved}}
    rv.set_meta(d, m)
    return read_run(d)


@pytest.mark.parametrize("key, section, value, resolved", [
    ("max_num_batched_tokens", "scheduler_config", 0.5, 2048),
    ("max_num_batched_tokens", "scheduler_config", -5, 2048),
    ("max_num_seqs", "scheduler_config", 0, 256),
    ("max_num_seqs", "scheduler_config", "256", 256),
    ("max_num_seqs", "scheduler_config", 256.7, 256),
    ("tensor_parallel_size", "parallel_config", "1", 1),
])
def test_an_invalid_engine_kwarg_under_a_valid_resolved_one_is_refused(tmp_path, key, section, value, resolved):
    run = _with_resolved(tmp_path, key, section, value, resolved)
    with pytest.raises(DataError, match=rf"vllm_meta.json: engine_kwargs.{key} = .*: expected a whole number >= 1"):
        getattr(run, key)


@pytest.mark.parametrize("where", ["engine_kwargs", "resolved"])
def test_async_scheduling_that_is_not_a_boolean_is_refused(tmp_path, where):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    m = rv.meta(d)
    if where == "engine_kwargs":
        m["engine_kwargs"]["async_scheduling"] = "yes"
    else:
        m["resolved_config"] = {"scheduler_config": {"async_scheduling": "yes"}}
    rv.set_meta(d, m)
    with pytest.raises(DataError, match=r"async_scheduling = \"yes\": expected true or false"):
        read_run(d).async_scheduling


@pytest.mark.parametrize("mem", [-1, 0, "80GB", True])
def test_a_gpu_memory_that_is_not_a_positive_number_is_refused(tmp_path, mem):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")  # records no KV cache: the memory plans it
    m = rv.meta(d)
    m.setdefault("hardware", {})["device_total_memory_bytes"] = mem
    rv.set_meta(d, m)
    with pytest.raises(DataError, match=rf"hardware.device_total_memory_bytes = {json.dumps(mem)}: expected the GPU's"):
        case_for_run(d)


@pytest.mark.parametrize("edit, words", [
    (lambda s: s.replace("tp_degrees: [1, 2]", "tp_degrees: one"), r"tp_degrees = 'one': expected"),
    (lambda s: s.replace("  block_size: 16\n", "  block_size: sixteen\n"),
     r"engine_effective.block_size = 'sixteen': expected a whole number >= 1"),
    (lambda s: s.replace("  block_size: 16\n", "  block_size: 16\n  block_size: 32\n"),
     r"the key 'block_size' again \(first on line \d+\)"),
    (lambda s: s.replace("num_attention_heads: 16", "num_attention_heads: sixteen"),
     r"engine_effective.hf_overrides.num_attention_heads = 'sixteen'"),
])
def test_profile_meta_fields_of_the_wrong_type_are_refused(tmp_path, edit, words):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    p = d / "profile_meta.yaml"
    text = p.read_text()
    changed = edit(text)
    assert changed != text
    p.write_text(changed)
    with pytest.raises(DataError, match=r"profile_meta.yaml.*" + words):
        case_for_run(d)
