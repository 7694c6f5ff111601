"""Issue 13: a sweep store never eats a user's file, a running sweep's lines, or intact chunks."""
import json
import os
import subprocess
import sys
import warnings

import pytest

from fluidq.cli import main
from fluidq.errors import DataError, FluidqError
from fluidq.sweep import Grid, read_store, sweep
from fluidq.sweep.store import ResultStore, StoreWarning

GRID = {"b_max": [128, 256, 512, 1024, 2048, 4096]}
CASE = '[sweep]\nanalysis = "capacity"\nchunk_size = 2\n{store}[grid]\nb_max = [128, 256, 512, 1024, 2048, 4096]\n'


def _run(store, **kw):
    return sweep("capacity", GRID, executor="serial", chunk_size=2, store=store, progress=False, **kw)


# -- 1. a file that is not this sweep's store is refused and left byte for byte ------------------------

@pytest.mark.parametrize("content", [
    b'{"a":1}',                     # a user's JSON file without a trailing newline
    b'{"a":1}\n',
    b"notes\nmore notes",
    b"\n",
    b" ",
    b'{"format":"fluidq-sweep/1"}',  # looks like ours, but is no header of this sweep
    b"\x1f\x8b\x08\x00binary",
])
def test_a_file_that_is_not_a_store_is_refused_and_untouched(tmp_path, content):
    p = tmp_path / "mine.json"
    p.write_bytes(content)
    with pytest.raises(FluidqError, match="not a fluidq sweep store|another sweep"):
        _run(p)
    assert p.read_bytes() == content
    assert not (tmp_path / "mine.json.damaged").exists() and not (tmp_path / "mine.json.lock").exists()


def test_cli_store_option_and_case_store_refuse_a_users_file(tmp_path, capsys):
    user = tmp_path / "data.json"
    user.write_bytes(b'{"a":1}')
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(store=""))
    assert main(["sweep", str(case), "--serial", "--store", str(user)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a fluidq sweep store" in err and "left as it is" in err
    # named as the user gave it: the flag (not the Python name store=...)
    assert f"error: --store {user}: not a fluidq sweep store" in err and "store='" not in err
    assert main(["sweep", str(case), "--status", "--store", str(user)]) == 2
    err = capsys.readouterr().err
    assert f"error: --store {user}: " in err and "not a fluidq sweep store" in err
    assert user.read_bytes() == b'{"a":1}'
    case.write_text(CASE.format(store='store = "data.json"\n'))
    assert main(["sweep", str(case), "--serial"]) == 2
    err = capsys.readouterr().err
    assert "not a fluidq sweep store" in err and "sweep.store = " in err and str(case) in err
    assert user.read_bytes() == b'{"a":1}'


def test_a_store_error_keeps_its_path_and_reason_through_pickling(tmp_path):
    import pickle

    from fluidq.sweep.store import StoreError, StoreMismatchError

    p = tmp_path / "mine.json"
    p.write_bytes(b"notes\n")
    with pytest.raises(StoreError) as info:
        _run(p)
    exc = info.value
    assert isinstance(exc, DataError) and exc.path == p and str(exc) == f"store={str(p)!r}: {exc.reason}"
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is StoreError and str(back) == str(exc) and back.reason == exc.reason
    assert issubclass(StoreMismatchError, StoreError) and issubclass(StoreMismatchError, ValueError)


def test_a_zero_byte_file_becomes_a_store(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"")
    assert _run(p).n_computed == 6 and len(read_store(p)[1]) == 6


def test_a_users_lock_file_is_neither_written_nor_removed(tmp_path):
    p = tmp_path / "s.jsonl"
    lock = tmp_path / "s.jsonl.lock"
    lock.write_bytes(b"my lock notes")
    _run(p)
    assert lock.read_bytes() == b"my lock notes"
    _run(p)
    assert lock.read_bytes() == b"my lock notes"
    os.unlink(lock)
    _run(p)
    assert not lock.exists()  # fluidq's own (empty) lock file is removed on close


# -- 2. the lock is taken before anything is read, cut or written ---------------------------------------

def test_a_second_sweep_on_a_locked_store_is_refused_without_touching_it(tmp_path):
    p = tmp_path / "s.jsonl"
    _run(p)
    full = p.read_bytes()
    lines = full.split(b"\n")
    p.write_bytes(b"\n".join(lines[:3]) + b"\n")  # header + 2 chunks: an unfinished sweep
    header = json.loads(lines[0])
    running = ResultStore.open(p, header)  # the running sweep holds the lock ...
    try:
        with open(p, "ab") as fh:          # ... and is in the middle of writing its next chunk
            fh.write(lines[3][:25])
        before = p.read_bytes()
        with pytest.raises(DataError, match="another sweep is writing"):
            _run(p)
        assert p.read_bytes() == before     # its torn line was not cut
        assert not (tmp_path / "s.jsonl.damaged").exists()
        with open(p, "ab") as fh:           # the running sweep finishes its line
            fh.write(lines[3][25:] + b"\n")
    finally:
        running.close()
    res = _run(p)
    assert res.n_resumed == 6 and res.n_computed == 0  # nothing vanished, nothing computed twice


# -- 3. a damaged line in the middle costs its own chunk only, with a word --------------------------------

@pytest.mark.parametrize("damage", [
    lambda ln: ln[:10] + b"\x00\xff" + ln[12:],         # not JSON any more
    lambda ln: ln.replace(b'"indices":[2,3]', b'"indices":[2,99]'),  # an index outside the grid
    lambda ln: b'{"hello": "world"}',                  # valid JSON, not a chunk
])
def test_a_damaged_middle_line_costs_only_its_points_and_is_reported(tmp_path, damage):
    p = tmp_path / "s.jsonl"
    first = _run(p)
    lines = p.read_bytes().split(b"\n")
    assert lines[2].startswith(b'{"indices":[2,3]')
    lines[2] = damage(lines[2])
    p.write_bytes(b"\n".join(lines))
    damaged = p.read_bytes()
    with pytest.warns(StoreWarning, match=r"line 3 is damaged.*every other chunk is kept") as rec:
        res = _run(p)
    assert res.n_resumed == 4 and res.n_computed == 2  # chunks 1 and 3 kept; only points 2-3 again
    assert res.rows == first.rows
    msg = str(rec[0].message)
    assert "(2-3) are computed again" in msg
    assert p.read_bytes().startswith(damaged)  # nothing cut or rewritten: the damaged bytes stay
    with pytest.warns(StoreWarning, match="line 3 is damaged"):
        header, rows = read_store(p)
    assert [r["index"] for r in rows] == list(range(6))


def test_cli_status_and_run_say_which_line_is_damaged(tmp_path, capsys):
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(store='store = "s.jsonl"\n'))
    assert main(["sweep", str(case), "--serial"]) == 0
    p = tmp_path / "s.jsonl"
    lines = p.read_bytes().split(b"\n")
    lines[2] = b"#" + lines[2]
    p.write_bytes(b"\n".join(lines))
    capsys.readouterr()
    assert main(["sweep", str(case), "--status", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["n_done"] == 4
    assert "fluidq sweep: warning:" in out.err and "line 3" in out.err and "2-3" in out.err
    assert main(["sweep", str(case), "--serial"]) == 0
    out = capsys.readouterr()
    assert "2 computed, 4 from the store" in out.out and "line 3 is damaged" in out.err


def test_a_torn_last_line_is_set_aside_not_dropped(tmp_path):
    p = tmp_path / "s.jsonl"
    _run(p)
    lines = p.read_bytes().split(b"\n")
    torn = lines[3][:30]
    p.write_bytes(b"\n".join(lines[:3]) + b"\n" + torn)
    with pytest.warns(StoreWarning, match="torn"):
        res = _run(p)
    assert res.n_resumed == 4 and res.n_computed == 2
    assert (tmp_path / "s.jsonl.damaged").read_bytes() == torn + b"\n"
    for ln in p.read_bytes().split(b"\n")[:-1]:
        json.loads(ln)


def test_a_last_line_missing_only_its_newline_is_kept(tmp_path):
    p = tmp_path / "s.jsonl"
    _run(p)
    p.write_bytes(p.read_bytes()[:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        res = _run(p)
    assert res.n_resumed == 6 and res.n_computed == 0


# -- 4. FIFOs, devices and folders never block ----------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("which", ["store", "case", "status"])
def test_a_fifo_as_store_or_case_file_is_refused_without_blocking(tmp_path, which):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(store=""))
    args = {"store": [str(case), "--serial", "--store", str(fifo)],
            "case": [str(fifo), "--serial"],
            "status": [str(case), "--status", "--store", str(fifo)]}[which]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "fluidq", "sweep", *args], capture_output=True, text=True,
                          timeout=30, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "FIFO" in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("path", ["/dev/null", "."])
def test_a_device_or_folder_store_is_refused(tmp_path, path):
    with pytest.raises(DataError, match="not a regular file"):
        _run(path if path != "." else tmp_path)


def test_read_store_skips_damage_but_keeps_reading(tmp_path):
    p = tmp_path / "s.jsonl"
    _run(p)
    lines = p.read_bytes().split(b"\n")
    lines[1] = b"{"
    p.write_bytes(b"\n".join(lines))
    with pytest.warns(StoreWarning):
        _, rows = read_store(p)
    assert [r["index"] for r in rows] == [2, 3, 4, 5]  # the old reader stopped at line 2: no rows at all


def test_grid_store_roundtrip_with_an_explicit_grid(tmp_path):
    g = Grid(points=[{"b_max": 256}, {"b_max": 512}])
    p = tmp_path / "s.jsonl"
    a = sweep("capacity", g, executor="serial", store=p)
    b = sweep("capacity", g, executor="serial", store=p)
    assert a.rows == b.rows and b.n_resumed == 2
