"""A key a built-in analysis does not read is refused up front, naming it (review 2026-12-06).

Before: ``engines = 2`` in a ``simulate`` sweep set the arrival rate from two engines' capacity and then
simulated one engine (load 0.9 became 1.8: a growing backlog, no error); ``horizon_s`` in a ``check`` sweep,
``load`` in a ``capacity`` sweep were silently ignored.
"""
import pytest

from fluidq.cli import main
from fluidq.errors import ParameterError
from fluidq.sweep import Grid, sweep
from fluidq.sweep import analyses

BASE = {"prompt_tokens": 100, "output_tokens": 100}


@pytest.mark.parametrize("analysis, key, value", [
    ("simulate", "engines", 2),
    ("region", "engines", 2),
    ("check", "engines", 2),
    ("check", "horizon_s", 10.0),
    ("region", "horizon_s", 10.0),
    ("region", "policy", "vllm"),
    ("region", "tolerance", 0.05),
    ("simulate", "tolerance", 0.05),
    ("capacity", "load", 0.9),
    ("capacity", "rate_per_s", 3.0),
    ("capacity", "policy", "vllm"),
    ("capacity", "horizon_s", 10.0),
])
@pytest.mark.parametrize("where", ["fixed", "axis"])
def test_a_key_the_analysis_would_ignore_is_refused_before_any_point(analysis, key, value, where):
    fixed = {**BASE, **({} if analysis == "capacity" or key in ("load", "rate_per_s") else {"load": 0.9})}
    if where == "fixed":
        grid = Grid(axes={"seed": [0, 1]}, fixed={**fixed, key: value})
        label = f"fixed.{key}"
    else:
        grid = Grid(axes={key: [value]}, fixed=fixed)
        label = f"grid.{key}"
    with pytest.raises(ParameterError) as exc:
        sweep(analysis, grid, executor="serial", progress=False)
    assert exc.value.name == label, str(exc.value)
    assert repr(analysis) in str(exc.value)


@pytest.mark.parametrize("fn", [analyses.simulate, analyses.region])
def test_the_analysis_functions_refuse_several_engines_when_called_directly(fn):
    with pytest.raises(ParameterError, match="engines"):
        fn({**BASE, "load": 0.9, "engines": 2, "horizon_s": 5.0} if fn is analyses.simulate
           else {**BASE, "load": 0.9, "engines": 2})


def test_the_keys_each_analysis_reads_still_run():
    rows = sweep("simulate", Grid(axes={"load": [0.5]}, fixed={**BASE, "horizon_s": 5.0, "engines": 1,
                                                                     "policy": "sarathi", "lengths": "fixed"}),
                 executor="serial", progress=False).rows
    assert rows[0]["load"] == 0.5
    rows = sweep("capacity", Grid(axes={"engines": [1, 2]}, fixed=BASE), executor="serial", progress=False).rows
    assert rows[1]["requests_per_s"] == pytest.approx(2 * rows[0]["requests_per_s"])
    rows = sweep("check", Grid(axes={"load": [0.5]}, fixed={**BASE, "tolerance": 0.05, "engines": 1}),
                 executor="serial", progress=False).rows
    assert rows[0]["status"] == "stable"
    rows = sweep("region", Grid(axes={"load": [0.5]}, fixed={**BASE, "k_max": 64}), executor="serial",
                 progress=False).rows
    assert rows[0]["inside"] is True


def test_the_cli_names_the_key_and_writes_no_store(tmp_path, capsys):
    case = tmp_path / "case.toml"
    case.write_text('[sweep]\nanalysis = "simulate"\nstore = "r.jsonl"\n[fixed]\nprompt_tokens = 100\n'
                    'output_tokens = 100\nhorizon_s = 5.0\n[grid]\nload = [0.9]\nengines = [1, 2]\n')
    assert main(["sweep", str(case), "--serial"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "grid.engines" in err and "'simulate'" in err, err
    assert not (tmp_path / "r.jsonl").exists()
