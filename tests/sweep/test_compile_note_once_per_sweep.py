"""The numba "compiling ..." note is said once per sweep, not once per worker process (issue 15 tidy): each pool
worker compiles (or loads) the kernel itself, and each printed the note, so a 4-worker sweep said it four times."""
import time

from fluidq.kernel import run as R
from fluidq.sweep import sweep


def slow_first_compile(point, rng):
    """A stand-in for a worker's first kernel call: a compile slower than the note's threshold, once per process."""
    R.NOTE_AFTER_S = 0.01
    with R.compile_note("kernel T"):
        time.sleep(0.2)
    time.sleep(0.2)  # each chunk takes long enough that both workers get one
    import os

    return {"pid": os.getpid()}


def test_a_process_sweep_says_the_note_once(capfd):
    res = sweep(slow_first_compile, [{"i": i} for i in range(6)], executor="processes", max_workers=2,
                chunk_size=1, progress=False)
    assert sorted(r["i"] for r in res.rows) == list(range(6))
    assert len({r["pid"] for r in res.rows}) == 2  # both workers compiled
    err = capfd.readouterr().err
    assert err.count("fluidq: compiling kernel T with numba") == 1, err


def test_without_a_shared_folder_each_process_says_it(monkeypatch, capsys):
    # the single-process rule is unchanged: once per kernel in this process
    monkeypatch.delenv(R.NOTE_SHARED_ENV, raising=False)
    monkeypatch.setattr(R, "_noted", set())
    R._note("kernel U")
    R._note("kernel U")
    assert capsys.readouterr().err.count("compiling kernel U") == 1


def test_the_first_process_to_mark_the_folder_says_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(R.NOTE_SHARED_ENV, str(tmp_path))
    monkeypatch.setattr(R, "_noted", set())
    R._note("kernel V")
    monkeypatch.setattr(R, "_noted", set())  # another process: its own set, the same folder
    R._note("kernel V")
    assert capsys.readouterr().err.count("compiling kernel V") == 1
