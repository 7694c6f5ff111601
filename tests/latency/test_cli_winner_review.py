"""`fluidq latency --metric M` names the ordering with the lowest value per load; when the 95 % intervals of
the others overlap it, the line says so (review 2026-12-06: 'lowest P99 TTLT: gamma-boost (62.64)' was printed
beside fcfs 62.79 +- 36, uniboost 62.74 +- 37)."""
import re

from fluidq.cli import main


def test_a_winner_inside_the_others_intervals_is_not_announced_as_separated(capsys):
    assert main(["latency", "--trace", "azure-conv", "--orderings", "fcfs,gamma-boost", "--metric", "ttlt_p99_s",
                 "--loads", "0.5", "--horizon", "60", "--replications", "2"]) in (0, None)
    out = capsys.readouterr().out
    rows = {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^\| (fcfs|gamma-boost) \| [^|]+\| [^|]+\| ([\d.e+-]+) ± ([\d.e+-]+) \|", out, re.M)}
    (a, ha), (b, hb) = rows["fcfs"], rows["gamma-boost"]
    assert abs(a - b) < ha + hb  # the runs this test makes: the intervals overlap
    line = next(x for x in out.splitlines() if x.startswith("lowest P99 TTLT"))
    assert "overlap" in line and "--replications" in line, line
