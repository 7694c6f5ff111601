"""`read_run`: an optional stamp (``arrival_time``, ``scheduled_ts``, ``request_id``) is used for every request or
for none.  Before, one non-finite ``arrival_time`` (line 3 set to Infinity in a copy of RTX4090_Llama-3.1-8B) made
``sent_s`` None for all 300 requests and `validate --run` replayed from ``queued_ts`` without a word (8 pass / 12
miss became 9 / 11, its notes still citing arrival_time stamps); ``scheduled_ts`` and the id numbering fell back
the same way.  Now a bad value where the field is present elsewhere is a DataError naming file, line and field; a
field absent from every line falls back, and ``ServingRun.sources`` says which stamps were used."""
import json
import shutil

import numpy as np
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


def _rows(d):
    return [json.loads(line) for line in (d / "vllm_requests.jsonl").read_text().splitlines() if line.strip()]


def test_the_shipped_run_uses_every_stamp(tmp_path):
    d = _copy(tmp_path, lambda rows: None)
    run = read_run(d)
    assert run.sent_s is not None and run.scheduled_s is not None and run.request_index is not None
    assert run.sources == {"sent": "arrival_time", "scheduled": "scheduled_ts",
                           "order": "the numbers the request ids end in"}
    # sent_s by hand from the JSONL (every shipped request is kept): the client's arrival_time moved onto the
    # engine's clock by the smallest queued_ts - arrival_time, from the first queued_ts
    rows = sorted(_rows(d), key=lambda r: r["queued_ts"])
    assert len(rows) == len(run.sent_s) == 300 and not run.dropped
    a = np.array([r["arrival_time"] for r in rows])
    q = np.array([r["queued_ts"] for r in rows])
    sent = a + np.min(q - a) - q[0]
    # at least 0: one request was sent 1.8 ms before the first queued_ts (another was handed over quicker)
    assert np.sum(sent < 0) == 1 and sent.min() == pytest.approx(-1.84e-3, abs=1e-5)
    np.testing.assert_allclose(run.sent_s, np.maximum(sent, 0.0), rtol=0, atol=1e-6)
    np.testing.assert_allclose(run.arrival_s, q - q[0], rtol=0, atol=1e-9)
    # no request is read by the engine before it was sent, and the quickest hand-over is the offset: exactly 0
    assert np.min(run.arrival_s - run.sent_s) == pytest.approx(0.0, abs=1e-6)
    assert np.all(run.arrival_s - run.sent_s >= -1e-6)


def test_an_epoch_clock_timeseries_lands_on_the_run_s_clock_at_the_send_stamps(tmp_path):
    """A timeseries stamped in epoch seconds (the client's clock, as ``arrival_time``) is put on the run's clock by
    the first send stamp: here tick k is written at min(arrival_time) + 2.5 + k s (k = 1, 2, ...), so it must read
    3.5, 4.5, ... -- the fall-back (the first tick minus one step) would read 1.0, 2.0, ... instead."""
    d = _copy(tmp_path, lambda rows: None)
    a0 = min(r["arrival_time"] for r in _rows(d))
    p = d / "vllm_timeseries.csv"
    lines = p.read_text().splitlines()
    assert lines[0].split(",")[0] == "t"
    t = np.array([float(ln.split(",")[0]) for ln in lines[1:] if ln.strip()])
    assert t[0] == 1.0 and np.all(np.diff(t) == 1.0)  # the shipped ticks: 1, 2, ... s since the run began
    out = [lines[0]] + [f"{a0 + 2.5 + float(ln.split(',', 1)[0])!r},{ln.split(',', 1)[1]}" for ln in lines[1:]
                        if ln.strip()]
    p.write_text("\n".join(out) + "\n")
    run = read_run(d)
    assert run.timeseries["t"][0] == pytest.approx(3.5, abs=1e-5)
    np.testing.assert_allclose(run.timeseries["t"], t + 2.5, rtol=0, atol=1e-5)


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
