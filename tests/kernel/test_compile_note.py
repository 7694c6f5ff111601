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
    assert [line for line in err if "compiling" in line] == [
        "fluidq: compiling kernel A with numba (once; later runs load it from the cache) ...",
        "fluidq: compiling kernel B with numba (once; later runs load it from the cache) ..."]


def test_fast_block_prints_nothing(monkeypatch, capsys):
    monkeypatch.setattr(R, "_noted", set())
    with R.compile_note("kernel C"):
        pass
    time.sleep(0.05)
    assert "compiling" not in capsys.readouterr().err
