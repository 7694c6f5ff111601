"""`read_run`: an optional stamp (``arrival_time``, ``scheduled_ts``, ``request_id``) is used for every request or
for none.  Before, one non-finite ``arrival_time`` (line 3 set to Infinity in a copy of RTX4090_Llama-3.1-8B) made
``sent_s`` None for all 300 requests and `validate --run` replayed from ``queued_ts`` without a word (8 pass / 12
miss became 9 / 11, its notes still citing arrival_time stamps); ``scheduled_ts`` and the id numbering fell back
the same way.  Now a bad value where the field is present elsewhere is a DataError naming file, line and field; a
field absent from every line falls back, and ``ServingRun.sources`` says which stamps were used."""
import json
import shutil

import pytest

from fluidq.errors import DataError
from fluidq.validate import validation_dir
from fluidq.validate.cases import _plain_path
from fluidq.validate.runs import read_run

RUN = validation_dir() / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B"


def _copy(tmp_path, edit):
    d = tmp_path / "run"
    shutil.copytree(_plain_path(RUN), d)
    p = d / "vllm_requests.jsonl"
    rows = [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    edit(rows)
    # json.dumps writes Infinity / NaN as Python's json does (what a buggy writer produces)
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def _set(i, key, value):
    def edit(rows):
        if value is _POP:
            rows[i].pop(key)
        else:
            rows[i][key] = value
    return edit


_POP = object()


def test_the_shipped_run_uses_every_stamp(tmp_path):
    run = read_run(_copy(tmp_path, lambda rows: None))
    assert run.sent_s is not None and run.scheduled_s is not None and run.request_index is not None
    assert run.sources == {"sent": "arrival_time", "scheduled": "scheduled_ts",
                           "order": "the numbers the request ids end in"}


@pytest.mark.parametrize("key, value, shown", [
    ("arrival_time", float("inf"), "arrival_time = Infinity"),
    ("arrival_time", float("nan"), "arrival_time = NaN"),
    ("arrival_time", "soon", 'arrival_time = "soon"'),
    ("arrival_time", None, "arrival_time = null"),
    ("arrival_time", _POP, "arrival_time missing"),
    ("scheduled_ts", float("inf"), "scheduled_ts = Infinity"),
    ("scheduled_ts", _POP, "scheduled_ts missing"),
    ("scheduled_ts", True, "scheduled_ts = true"),
])
def test_one_bad_stamp_is_refused_naming_file_line_and_field(tmp_path, key, value, shown):
    d = _copy(tmp_path, _set(2, key, value))
    with pytest.raises(DataError) as ei:
        read_run(d)
    msg = str(ei.value)
    assert "vllm_requests.jsonl, line 3: " + shown in msg and "299 other requests" in msg, msg


@pytest.mark.parametrize("value, shown", [(_POP, "request_id missing"), (None, "request_id = null")])
def test_one_missing_request_id_is_refused(tmp_path, value, shown):
    """(A null id was said 'missing' before the ids and the stamps shared one all-or-none check.)"""
    with pytest.raises(DataError) as ei:
        read_run(_copy(tmp_path, _set(4, "request_id", value)))
    msg = str(ei.value)
    assert "vllm_requests.jsonl, line 5: " + shown + ": expected an id" in msg and "299 other requests" in msg, msg


@pytest.mark.parametrize("key, fallback", [("arrival_time", "queued_ts"), ("scheduled_ts", "first_token_ts")])
def test_a_stamp_absent_from_every_line_falls_back_and_says_so(tmp_path, key, fallback):
    def edit(rows):
        for r in rows:
            r.pop(key)
    run = read_run(_copy(tmp_path, edit))
    which = {"arrival_time": "sent", "scheduled_ts": "scheduled"}[key]
    assert run.sources[which].startswith(fallback) and key in run.sources[which]
    assert (run.sent_s if key == "arrival_time" else run.scheduled_s) is None


def test_ids_that_do_not_number_the_requests_say_so(tmp_path):
    run = read_run(_copy(tmp_path, _set(7, "request_id", "bench-x")))
    assert run.request_index is None
    assert "line 8" in run.sources["order"] and "bench-x" in run.sources["order"]

    def twice(rows):
        rows[9]["request_id"] = "other-1"
    run = read_run(_copy(tmp_path / "b", twice))
    assert run.request_index is None and "2 end in 1" in run.sources["order"]
