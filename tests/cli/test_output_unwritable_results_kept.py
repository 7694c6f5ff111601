"""An output path that cannot be written is said before the work, and a write that fails after it loses no
result (audit 2026-12-07, robust6 finding 1).

Before: ``output_file`` checked only that the parent folder existed, so ``simulate ... --plot /ro/s.png`` ran
its whole simulation and then failed on the figure; the figure was written before the results were printed,
so nothing was printed (``--json`` stdout empty).  ``pars --save`` named a temporary file, ``sweep --csv``
said "error: File too large" naming no file.
"""
import errno
import json
import os

import numpy as np
import pytest

from fluidq.cli import CliError
from fluidq.cli.common import output_file
from fluidq.testing.cli import run_cli as run


def _fit_csv(tmp_path):
    b = np.arange(16, 1025, 16)
    y = 0.01128 + 0.03547 * np.ceil(b / 128)
    p = tmp_path / "m.csv"
    p.write_text("tokens,seconds\n" + "".join(f"{x},{v}\n" for x, v in zip(b, y)))
    return str(p)


@pytest.fixture
def no_create(monkeypatch, tmp_path):
    """A folder in which no file can be created (as ``chattr +i`` or a read-only mount makes one): a real
    read-only folder when not root, else every temporary file created in it refused."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0:
        os.chmod(ro, 0o555)
        yield ro
        os.chmod(ro, 0o755)
        return
    import tempfile

    real = tempfile.mkstemp

    def mkstemp(*a, dir=None, **k):
        if dir is not None and os.path.realpath(dir) == os.path.realpath(ro):
            raise PermissionError(errno.EACCES, "Permission denied", os.path.join(str(dir), "x"))
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    yield ro


@pytest.mark.parametrize("option, kw", [("--plot", {}), ("--csv", {"figure": False, "suffixes": (".csv",)}),
                                        ("--save", {"figure": False, "suffixes": (".npz",), "what": "ranker file"})])
def test_output_file_probes_the_folder(no_create, option, kw):
    name = {"--plot": "s.png", "--csv": "t.csv", "--save": "r.npz"}[option]
    with pytest.raises(CliError) as ei:
        output_file(option, str(no_create / name), **kw)
    msg = str(ei.value)
    assert msg.startswith(f"{option} {no_create / name}:") and "cannot write" in msg and "permission denied" in msg
    assert list(no_create.iterdir()) == []  # the probe leaves nothing


def test_a_writable_folder_is_left_as_it_was(tmp_path):
    assert output_file("--plot", str(tmp_path / "s.png")) == str(tmp_path / "s.png")
    assert list(tmp_path.iterdir()) == []


def test_sys_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    import tempfile

    try:
        fd, t = tempfile.mkstemp(dir="/sys")
    except OSError:
        pass
    else:  # pragma: no cover - a machine whose /sys takes files
        os.close(fd)
        os.unlink(t)
        pytest.skip("/sys takes files here")
    import fluidq.cli.commands.fit as fit

    def boom(*a, **k):
        raise AssertionError("the fit ran before --plot was checked")

    monkeypatch.setattr(fit, "fit_csv", boom)
    rc, out, err = run(["fit", _fit_csv(tmp_path), "--plot", "/sys/fit.png"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "--plot /sys/fit.png" in err, err


def test_simulate_unwritable_plot_refused_before_the_simulation(no_create, capsys, monkeypatch):
    import fluidq.sim as sim

    def boom(*a, **k):
        raise AssertionError("the simulation started before --plot was checked")

    for name in ("simulate", "replicate"):
        monkeypatch.setattr(sim, name, boom)
    rc, out, err = run(["simulate", "--rate", "5", "--horizon", "200", "--replications", "4",
                        "--plot", str(no_create / "s.png")], capsys)
    assert rc == 2 and out == "" and f"--plot {no_create / 's.png'}" in err and "cannot write" in err, err


@pytest.fixture
def efbig(monkeypatch):
    """Every output file refused by the file system when written, after the checks (a file too large)."""
    import fluidq._io as io

    def refuse(path, data, **k):
        raise OSError(errno.EFBIG, "File too large", str(path) + ".tmp123")

    monkeypatch.setattr(io, "atomic_write", refuse)


def _late(err, option, path):
    assert "Traceback" not in err and "internal error" not in err, err
    err = err.strip().splitlines()[-1]  # (a line before it may be numba's compile notice)
    assert err.startswith("fluidq ") and ": error: " in err, err
    assert f"{option}" in err and str(path) in err and "File too large" in err and ".tmp123" not in err, err
    assert "results were printed" in err, err


def test_simulate_prints_its_results_when_the_plot_fails(tmp_path, efbig, capsys):
    p = tmp_path / "s.png"
    rc, out, err = run(["simulate", "--rate", "5", "--horizon", "20", "--json", "--plot", str(p)], capsys)
    assert rc == 2
    d = json.loads(out)  # the results, whole
    assert d["policies"] and d["plot"] is None
    _late(err, "--plot", p)
    assert not p.exists()
    rc, out, err = run(["simulate", "--rate", "5", "--horizon", "20", "--plot", str(p)], capsys)
    assert rc == 2 and "TTFT" in out and "plot written" not in out
    _late(err, "--plot", p)


def test_fit_prints_its_results_when_the_plot_fails(tmp_path, efbig, capsys):
    p = tmp_path / "f.png"
    rc, out, err = run(["fit", _fit_csv(tmp_path), "--plot", str(p)], capsys)
    assert rc == 2 and "staircase" in out and "plot" not in out.split("held out")[-1]
    _late(err, "--plot", p)


def test_sweep_csv_too_large_names_the_option_and_file(tmp_path, efbig, capsys):
    case = tmp_path / "case.toml"
    case.write_text('[sweep]\nanalysis = "capacity"\n[fixed]\nprompt_tokens = 100\noutput_tokens = 100\n'
                    '[grid]\nb_max = [256, 512]\n')
    t = tmp_path / "t.csv"
    rc, out, err = run(["sweep", str(case), "--serial", "--csv", str(t)], capsys)
    assert rc == 2 and out.strip()  # the summary is printed
    _late(err, "--csv", t)


def test_ranker_save_names_the_file_not_a_temporary_one(tmp_path, efbig):
    from fluidq.errors import DataError
    from fluidq.predict import LengthRanker

    rng = np.random.default_rng(0)
    prompts = [" ".join(rng.choice(["a", "bb", "ccc", "dddd"], 5)) for _ in range(40)]
    rk = LengthRanker.fit(prompts, rng.integers(1, 100, 40).astype(float), rng=0)
    with pytest.raises(DataError) as ei:
        rk.save(tmp_path / "r.npz")
    assert str(tmp_path / "r.npz") in str(ei.value) and ".tmp123" not in str(ei.value)
