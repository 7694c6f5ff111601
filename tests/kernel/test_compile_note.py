"""The "compiling ..." note: once per kernel and naming it (a first `fluidq report` printed one text twice,
reading as the same compile repeated)."""
import time

from fluidq.kernel import run as R


def test_one_note_per_kernel_naming_it(monkeypatch, capsys):
    monkeypatch.setattr(R, "NOTE_AFTER_S", 0.01)
    monkeypatch.setattr(R, "_noted", set())
    for kernel in ("kernel A", "kernel A", "kernel B"):
        with R.compile_note(kernel):
            time.sleep(0.2)  # slower than NOTE_AFTER_S: the note fires
    err = capsys.readouterr().err.splitlines()
    tail = (" with numba, or loading it from numba's cache (compiled once per install; a load can be slow on a busy "
            "machine) ...")
    assert [line for line in err if "compiling" in line] == [
        "fluidq: compiling kernel A" + tail, "fluidq: compiling kernel B" + tail]


def test_a_slow_cache_load_is_not_called_a_compile(monkeypatch, capsys):
    # the note fires on a timer, whatever is slow: here numba only loads from its cache (the block sleeps as a
    # load on a busy machine would); the line must not claim a compile alone (it said "compiling ... (once;
    # later runs load it from the cache)", on a run that was such a later run)
    monkeypatch.setattr(R, "NOTE_AFTER_S", 0.01)
    monkeypatch.setattr(R, "_noted", set())
    with R.compile_note("kernel L"):
        time.sleep(0.2)
    line = next(x for x in capsys.readouterr().err.splitlines() if "kernel L" in x)
    assert "or loading it from numba's cache" in line, line


def test_fast_block_prints_nothing(monkeypatch, capsys):
    monkeypatch.setattr(R, "_noted", set())
    with R.compile_note("kernel C"):
        pass
    time.sleep(0.05)
    assert "compiling" not in capsys.readouterr().err
