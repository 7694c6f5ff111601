"""A key given twice in a run's JSON files is refused, naming the file, line and key (review revbad2 M4).

JSON readers keep the last value of a duplicated key without a word: a ``vllm_meta.json`` whose
``max_num_seqs`` is written twice (a hand edit, two tools writing one file) or a request line whose
``output_toks`` is, read as another run.  The --trace JSONL reader refused this already; ``read_run`` now uses
its helper (:func:`fluidq.workload.traces.json_record`) for both files.
"""
import json

import pytest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.validate.runs import read_run
from fluidq.workload.traces import json_record


def test_a_request_line_with_a_key_twice_is_refused(tmp_path):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    lines = (d / "vllm_requests.jsonl").read_text().splitlines()
    lines[4] = lines[4].replace('"output_toks": ', '"output_toks": 1, "output_toks": ', 1)
    assert lines[4].count('"output_toks"') == 2
    (d / "vllm_requests.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"vllm_requests.jsonl, line 5: key \"output_toks\" twice"):
        read_run(d)


def test_a_meta_key_twice_is_refused_naming_its_lines(tmp_path):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    m = rv.meta(d)
    text = json.dumps(m, indent=1)
    # engine_kwargs' max_num_seqs written twice, the second value another one
    text = text.replace('"max_num_seqs": ', '"max_num_seqs": 64,\n  "max_num_seqs": ', 1)
    (d / "vllm_meta.json").write_text(text)
    with pytest.raises(DataError) as e:
        read_run(d)
    msg = str(e.value)
    assert "vllm_meta.json" in msg and 'key "max_num_seqs" twice' in msg and "line" in msg, msg
    at = [n + 1 for n, ln in enumerate(text.splitlines()) if '"max_num_seqs":' in ln]
    assert all(str(n) in msg for n in at[:2])


def test_the_helper_finds_a_key_twice_at_any_depth_and_only_then():
    assert json_record('{"a": {"b": 1, "b": 2}}', "x")[1] == "b"
    assert json_record('{"a": 1, "b": {"a": 2}}', "x")[1] is None  # one key in two objects: fine
    assert json_record('{"timestamp": 1, "x": 2, "x": 3}', "x", names=("timestamp",))[1] is None
    assert json_record('{"timestamp": 1, "timestamp": 2}', "x", names=("timestamp",))[1] == "timestamp"
