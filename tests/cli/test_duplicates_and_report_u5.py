"""rev-bad U5: a policy given twice is refused as `latency --loads 0.5,0.5` refuses a load given twice (check,
simulate, a sweep grid's axis); an interrupted `report --out NEW` leaves no NEW/ holding only its marker."""
from __future__ import annotations

import pytest

from fluidq.cli import main
from fluidq.errors import ParameterError
from fluidq.sweep import sweep


@pytest.mark.parametrize("cmd", [["check", "--load", "0.9"], ["simulate", "--load", "0.5", "--horizon", "10"]])
def test_policy_twice_refused(capsys, cmd):
    assert main([*cmd, "--policy", "sarathi", "--policy", "SARATHI"]) == 2
    err = capsys.readouterr().err
    assert "--policy" in err and "given twice" in err


@pytest.mark.parametrize("axis,values", [("load", [0.5, 0.5]), ("policy", ["sarathi", "SARATHI"]),
                                         ("load", [0.5, 1 / 2])])
def test_sweep_axis_value_twice_refused(axis, values):
    grid = {"load": [0.5], "policy": ["sarathi"], axis: values}
    with pytest.raises(ParameterError, match=rf"grid\.{axis}.*given twice"):
        sweep("check", grid, executor="serial", progress=False)


def test_interrupted_report_removes_the_folder_it_made(monkeypatch, tmp_path, capsys):
    import fluidq.report as report

    def stop(out, *a, **k):  # build_report makes the folder, then is interrupted before writing
        import os

        os.makedirs(out, exist_ok=True)
        raise KeyboardInterrupt
    monkeypatch.setattr(report, "build_report", stop)
    new = tmp_path / "NEW"
    assert main(["report", "--quick", "--out", str(new)]) == 130
    assert not new.exists()
    old = tmp_path / "OLD"
    old.mkdir()
    assert main(["report", "--quick", "--out", str(old)]) == 130
    assert old.is_dir()  # a folder the user made stays

    def partial(out, *a, **k):  # something written: kept (and marked as fluidq's, to be written over)
        import os

        os.makedirs(out, exist_ok=True)
        (new / "report.md").write_text("# cut short")
        raise KeyboardInterrupt
    monkeypatch.setattr(report, "build_report", partial)
    assert main(["report", "--quick", "--out", str(new)]) == 130
    assert (new / "report.md").exists() and (new / ".fluidq-report").exists()
