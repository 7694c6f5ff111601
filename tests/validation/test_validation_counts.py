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


def test_a_measured_number_reads_the_same_in_the_summary_and_the_interval_table():
    # one cell formatter (fluidq.validate.cases._fmt) for the summary table and a case's "95 % interval" table:
    # the interval table's own near-copy printed the rtxpro6000 run's 124.9 residents as 125 (three figures)
    # beside the summary's 124.9, and a missing value as "-" where the summary leaves it blank
    from fluidq.validate import summary_table
    from fluidq.validate.cases import _interval_table

    rows = [Row(case="c", source="s", quantity=q, predicted=p, measured=m, unit=u, measured_window="ticks 2-49 s",
                measured_ci=ci)
            for q, p, m, u, ci in (("residents", 127.8, 124.93, "requests", (119.04, 130.96)),
                                   ("growth", 8.32, 7.9, "req/s", (3.84, 12.0)),
                                   ("capacity", 2500.0, 2478.4, "tokens/s", (1997.2, float("nan"))),
                                   ("binding limit", "kv_cache", "kv_cache", "", None))]
    summary = [line.split(" | ")[4] for line in summary_table(rows).splitlines()[2:]]
    lines = _interval_table(rows)
    assert lines[1] == "| quantity | measured | 95 % interval | read over |"
    cells = [line.split(" | ") for line in lines[3:]]
    assert summary == ["124.9", "7.9", "2,478", "kv_cache"]
    assert [c[1].split(" ")[0] for c in cells] == summary
    assert [c[2] for c in cells] == ["119.0-131.0", "3.84-12.0", "1,997-\u2013", "none"]
    assert _interval_table([Row(case="c", source="s", quantity="q", predicted=1.0, measured=1.0)]) == []
