"""Issue 13: sweep grids and options that cannot be built are refused up front, in one line; hostile case files."""
import pytest

from fluidq.cli import main
from fluidq.errors import FluidqError, ParameterError
from fluidq.sweep import Grid, sweep
from fluidq.sweep.case import load_case

HEAD = '[sweep]\nanalysis = "check"\nstore = "r.jsonl"\n'


def _one_line_exit_2(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fluidq sweep: error:") and "internal error" not in err, err
    return err


@pytest.mark.parametrize("axis, words", [
    ("load = { start = 0.5, stop = 1.0, num = 1e12 }", ["grid.load.num", "1,000,000,000,000 values", "at most"]),
    ("load = { start = 0.5, stop = 1.0, num = 1000000000000 }", ["grid.load.num", "1,000,000,000,000"]),
    ("load = { start = 0.5, stop = 1.0, num = 9223372036854775807 }", ["grid.load.num", "9.22e+18"]),
    ("load = { start = 0.1, stop = 2.0, step = 1e-300 }", ["grid.load.step", "1.9e+300 values"]),
    ("load = [0.5]\nseed = { start = 0, stop = 9223372036854775807, step = 1 }", ["grid.seed.step", "9.22e+18"]),
    ("load = { start = 0.1, stop = 1.0, num = 4000 }\nseed = { start = 0, stop = 4000, step = 1 }",
     ["16,000,000 points", "at most 10,000,000"]),
    ("load = { start = nan, stop = 1.0, num = 3 }", ["grid.load.start", "finite"]),
    ("load = { start = 0.1, stop = inf, step = 0.1 }", ["grid.load.stop", "finite"]),
    ("load = { start = 0.1, stop = 1.0, step = nan }", ["grid.load.step", "finite"]),
    ("load = { start = 0.1, stop = 1.0, num = nan }", ["grid.load.num", "integer"]),
    ("load = { start = 0.1, stop = 1.0, num = true }", ["grid.load.num", "integer"]),
])
@pytest.mark.parametrize("status", [False, True])
def test_grids_too_large_or_not_finite_are_refused_with_their_size(tmp_path, capsys, axis, words, status):
    p = tmp_path / "case.toml"
    p.write_text(f"{HEAD}[grid]\n{axis}\n")
    err = _one_line_exit_2(capsys, ["sweep", str(p), *(["--status"] if status else ["--serial"])])
    assert all(w in err for w in words), err
    assert not (tmp_path / "r.jsonl").exists()


def test_api_grid_bounds_name_the_axis():
    with pytest.raises(ParameterError, match=r"axes.x.num.*1,000,000,000,000 values"):
        Grid(axes={"x": {"start": 0, "stop": 1, "num": 10**12}})
    with pytest.raises(ParameterError, match="points"):
        Grid(axes={"a": list(range(5000)), "b": list(range(5000))})
    ends = Grid(axes={"x": {"start": -1.7e308, "stop": 1.7e308, "num": 3}}).axes["x"]
    assert ends == (-1.7e308, 0.0, 1.7e308)  # no inf from (stop - start) overflowing
    steps = Grid(axes={"x": {"start": -1.7e308, "stop": 1.7e308, "step": 1e308}}).axes["x"]
    assert len(steps) == 4 and all(abs(v) < 1.8e308 for v in steps)


@pytest.mark.parametrize("opt", ["--workers", "--local-cluster"])
def test_huge_worker_counts_are_refused_with_the_reason(tmp_path, capsys, opt):
    p = tmp_path / "case.toml"
    p.write_text(f'{HEAD}[grid]\nload = [0.5]\n')
    err = _one_line_exit_2(capsys, ["sweep", str(p), opt, "100000000000000000000000000"])
    assert opt in err and "at most 1024" in err and "Dask cluster" in err
    err = _one_line_exit_2(capsys, ["sweep", str(p), opt, "1e26"])
    assert opt in err and "at most 1024" in err
    with pytest.raises(SystemExit) as exc:  # not a whole number: argparse's one line
        main(["sweep", str(p), opt, "nan"])
    assert exc.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "r.jsonl").exists()


def test_api_worker_bounds():
    with pytest.raises(ParameterError, match="max_workers"):
        sweep("capacity", {"b_max": [256]}, max_workers=10**26)
    from fluidq.sweep import dask_executor

    with pytest.raises(ParameterError, match="n_workers"):
        dask_executor(n_workers=10**26)


@pytest.mark.parametrize("text, words", [
    ("sweep = 3\n[grid]\nload = [0.5]\n", ["[sweep] must be a table"]),
    ('fixed = "x"\n[sweep]\nanalysis = "check"\n[grid]\nload = [0.5]\n', ["[fixed] must be a table"]),
    ('grid = [1]\n[sweep]\nanalysis = "check"\n', ["[grid] must be a table"]),
    ('[sweep]\nanalysis = "check"\nstore = 3\n[grid]\nload = [0.5]\n', ["sweep.store", "path"]),
    ('[sweep]\nanalysis = "check"\nseed = "x"\n[grid]\nload = [0.5]\n', ["sweep.seed", "integer"]),
    ('[sweep]\nanalysis = "check"\nchunk_size = 0.5\n[grid]\nload = [0.5]\n', ["sweep.chunk_size"]),
    ('[sweep]\nanalysis = "check"\ncommon_seeds = "load"\n[grid]\nload = [0.5]\n', ["sweep.common_seeds"]),
    ('[sweep]\nanalysis = "check"\ncommon_seeds = ["nope"]\n[grid]\nload = [0.5]\n', ["'nope'", "not an axis"]),
    ('[sweep]\nanalysis = ["check"]\n[grid]\nload = [0.5]\n', ["sweep.analysis"]),
    ('[sweep]\nanalysis = "check"\n[grid]\nload = "abc"\n', ["grid.load", "list of values"]),
    ('[sweep]\nanalysis = "check"\n[grid]\nload = [[0.5]]\n', ["grid.load", "JSON"]),
    ('[sweep]\nanalysis = "check"\n[fixed]\ntrace = "/dev/zero"\n[grid]\nload = [0.5]\n', ["fixed.trace", "FIFO"]),
])
def test_hostile_case_files_get_one_line(tmp_path, capsys, text, words):
    p = tmp_path / "case.toml"
    p.write_text(text)
    err = _one_line_exit_2(capsys, ["sweep", str(p), "--serial", "--no-progress"])
    assert all(w in err for w in words), err


@pytest.mark.parametrize("raw", [b"\x00\x01\x02[sweep]", b"\xff\xfe[sweep]\n", b"\x1f\x8b\x08\x00\x00"])
def test_a_binary_case_file_is_one_line(tmp_path, capsys, raw):
    p = tmp_path / "case.toml"
    p.write_bytes(raw)
    err = _one_line_exit_2(capsys, ["sweep", str(p), "--serial"])
    assert "case file" in err or "case.toml" in err


def test_a_csv_that_is_the_store_is_refused(tmp_path, capsys):
    p = tmp_path / "case.toml"
    p.write_text(f'{HEAD}[grid]\nload = [0.5]\n')
    assert main(["sweep", str(p), "--serial"]) == 0
    store = tmp_path / "r.jsonl"
    before = store.read_bytes()
    capsys.readouterr()
    err = _one_line_exit_2(capsys, ["sweep", str(p), "--serial", "--csv", str(store)])
    assert "--csv" in err and store.read_bytes() == before


def test_a_symlink_loop_store_is_one_line(tmp_path, capsys):
    p = tmp_path / "case.toml"
    p.write_text(f'{HEAD}[grid]\nload = [0.5]\n')
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    _one_line_exit_2(capsys, ["sweep", str(p), "--serial", "--store", str(tmp_path / "loop")])
    p.write_text(f'[sweep]\nanalysis = "check"\nstore = "loop"\n[grid]\nload = [0.5]\n')
    _one_line_exit_2(capsys, ["sweep", str(p), "--serial"])


def test_the_human_summary_prints_no_nan_or_inf():
    from types import SimpleNamespace

    from fluidq.cli.commands.sweep import _summary

    rows = [{"status": float("nan")}, {"status": None}, {"status": "inf"}, {"status": "stable"},
            {"error": float("inf")}]
    res = SimpleNamespace(analysis="check", n_points=5, n_computed=5, n_resumed=0, executor="serial",
                          elapsed_s=float("nan"), store=None, rows=rows)
    text = _summary(res)
    low = text.lower()
    assert "nan" not in low and "inf" not in low and "\u2013" in text and "stable 1" in text


def test_load_case_raises_fluidq_errors_only(tmp_path):
    p = tmp_path / "x.toml"
    p.write_text('[sweep]\nanalysis = "check"\nerrors = 5\n[grid]\nload = [0.5]\n')
    with pytest.raises(FluidqError, match="sweep.errors"):
        load_case(p)


def test_a_huge_grid_load_names_the_load_and_the_error_is_the_only_line(tmp_path, capsys):
    # issue 13: load = [1e308] named rate_per_s=inf; the "no store given" note made the error two lines
    from fluidq.cli import main

    case = tmp_path / "big.toml"
    case.write_text('[sweep]\nanalysis = "check"\n[fixed]\nprompt_tokens = 100\noutput_tokens = 100\n'
                    '[grid]\nload = [1e308]\npolicy = ["sarathi"]\n')
    for extra in (["--serial"], ["--dask", "nan://x:1"]):
        try:
            rc = main(["sweep", str(case), "--no-progress", *extra])
        except SystemExit as exc:
            rc = exc.code
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1, err
    try:
        main(["sweep", str(case), "--no-progress", "--serial"])
    except SystemExit:
        pass
    err = capsys.readouterr().err
    assert "load=1e+308" in err and "rate_per_s" not in err, err
