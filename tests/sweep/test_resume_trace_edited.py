"""A resumed sweep refuses its store when a trace file was edited since (audit 2026-12-07, robust6 finding 3).

Before: the store's fingerprint held only the trace's path, so a sweep resumed after the trace file was edited
reused the results computed from the old trace, silently.  Now the header keeps each trace file's sha256 (and
the fluidq version): an edited trace is refused naming the trace and the store, nothing deleted; a store of
another version, or one written before the hashes (no ``trace_sha256``), is resumed with a warning.
"""
import json
import warnings

import pytest

from fluidq.cli import main
from fluidq.sweep import read_store, sweep
from fluidq.sweep.store import StoreMismatchError, StoreWarning


def _trace(path, scale=1):
    rows = "".join(f"{0.5 * i},{100 * scale + 7 * (i % 5)},{50 + 3 * (i % 7)}\n" for i in range(60))
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + rows)
    return str(path)


def test_an_edited_trace_refuses_the_store_and_leaves_it(tmp_path):
    t = _trace(tmp_path / "t.csv")
    store = tmp_path / "s.jsonl"
    first = sweep("capacity", {"trace": [t], "b_max": [256, 512]}, store=store, executor="serial")
    before = store.read_bytes()
    header = json.loads(before.splitlines()[0])
    assert set(header["trace_sha256"]) == {t} and len(header["trace_sha256"][t]) == 64
    again = sweep("capacity", {"trace": [t], "b_max": [256, 512]}, store=store, executor="serial")
    assert again.n_resumed == 2 and again.rows == first.rows  # the same trace: resumed
    _trace(tmp_path / "t.csv", scale=9)  # edited in place, same path
    with pytest.raises(StoreMismatchError) as ei:
        sweep("capacity", {"trace": [t], "b_max": [256, 512]}, store=store, executor="serial")
    msg = str(ei.value)
    assert t in msg and str(store) in msg and "changed" in msg, msg
    assert store.read_bytes() == before  # nothing deleted or written


def test_the_cli_names_the_store_and_the_trace(tmp_path, capsys):
    t = _trace(tmp_path / "t.csv")
    case = tmp_path / "c.toml"
    case.write_text('[sweep]\nanalysis = "capacity"\nstore = "s.jsonl"\n[grid]\ntrace = ["t.csv"]\n'
                    'b_max = [256]\n')
    assert main(["sweep", str(case), "--serial"]) == 0
    _trace(tmp_path / "t.csv", scale=3)
    capsys.readouterr()
    assert main(["sweep", str(case), "--status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["traces_changed"] == [str((tmp_path / "t.csv").resolve())] and st["n_done"] == 0
    assert main(["sweep", str(case), "--serial"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sweep.store" in err and "t.csv" in err and "changed" in err, err


def _rewrite_header(store, **changes):
    lines = store.read_bytes().split(b"\n")
    h = json.loads(lines[0])
    for k, v in changes.items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    lines[0] = json.dumps(h, separators=(",", ":")).encode()
    store.write_bytes(b"\n".join(lines))


def test_an_old_store_without_hashes_is_resumed_with_a_warning(tmp_path):
    t = _trace(tmp_path / "t.csv")
    store = tmp_path / "s.jsonl"
    sweep("capacity", {"trace": [t], "b_max": [256]}, store=store, executor="serial")
    _rewrite_header(store, trace_sha256=None, fluidq_version=None)  # as written before 2026-12-07
    with pytest.warns(StoreWarning) as rec:
        res = sweep("capacity", {"trace": [t], "b_max": [256]}, store=store, executor="serial")
    assert res.n_resumed == 1
    said = " ".join(str(w.message) for w in rec)
    assert "no content hash" in said and t in said and "no version" in said, said


def test_another_version_is_resumed_with_a_warning(tmp_path):
    store = tmp_path / "s.jsonl"
    sweep("check", {"load": [0.5, 1.2], "policy": ["sarathi"]}, store=store, executor="serial")
    assert read_store(store)[0]["fluidq_version"]
    _rewrite_header(store, fluidq_version="0.0.1")
    with pytest.warns(StoreWarning, match="fluidq 0.0.1"):
        res = sweep("check", {"load": [0.5, 1.2], "policy": ["sarathi"]}, store=store, executor="serial")
    assert res.n_resumed == 2
    with warnings.catch_warnings():  # its own version: no warning
        warnings.simplefilter("error", StoreWarning)
        other = tmp_path / "o.jsonl"
        sweep("check", {"load": [0.5]}, store=other, executor="serial")
        sweep("check", {"load": [0.5]}, store=other, executor="serial")
