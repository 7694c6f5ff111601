"""``fluidq validate`` summary: every row counted (info rows too), misses named with their source."""
import fluidq.validate as V
from fluidq.cli import main
from fluidq.validate import Row, ValidationResult


def _result():
    rows = (Row(case="fits", source="A100 / 7B", quantity="held-out MAPE, context-aware t(b, kv)", predicted=9.0,
                measured=None, unit="%", target="<= 5 %", status="miss"),
            Row(case="fits", source="H100 / 70B", quantity="held-out MAPE, context-aware t(b, kv)", predicted=7.0,
                measured=None, unit="%", target="<= 5 %", status="miss"),
            Row(case="cap", source="run", quantity="capacity", predicted=1.0, measured=1.0, status="pass"),
            Row(case="cap", source="run", quantity="binding limit", predicted="kv", measured="kv", status="info"),
            Row(case="gpu", source="harness", quantity="capacity", predicted=None, measured=None, status="skip"))
    return ValidationResult(rows=rows, cases=(), files={"markdown": "x.md"})


def test_counts_add_up_to_the_rows():
    res = _result()
    assert res.passed + res.missed + res.informational + res.skipped == len(res.rows)
    assert res.counts_text() == "5 rows: 1 pass, 2 miss, 1 info (no target), 1 skipped"
    assert res.to_dict()["informational"] == 1


def test_cli_misses_name_the_source(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)  # (the command writes its folder into the working directory)
    monkeypatch.setattr(V, "validate", lambda *a, **k: _result())
    assert main(["validate", "--fast"]) == 0
    out = capsys.readouterr().out
    assert "1 info (no target)" in out
    misses = [s for s in out.splitlines() if s.strip().startswith("MISS")]
    assert len(misses) == 2 and len(set(misses)) == 2
    assert "[A100 / 7B]" in misses[0] and "[H100 / 70B]" in misses[1]
