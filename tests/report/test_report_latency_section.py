"""Report section s50 (latency of orderings): two loads in quick mode, a verdict that reads right
(a lower mean is called a difference only when the confidence intervals separate)."""
import re
from pathlib import Path


def test_latency_section_quick_has_two_loads_and_a_meaningful_verdict(tmp_path):
    from fluidq.report import ReportContext, default_inputs
    from fluidq.report.sections import s50_latency

    e, w, _ = default_inputs()
    ctx = ReportContext(engine=e, workload=w, out_dir=tmp_path, quick=True)
    sec = s50_latency.render(ctx)
    res = ctx.results["latency"]
    assert len(res.loads) >= 2  # a latency-load line plot needs at least two loads
    assert all(Path(p).stat().st_size > 1000 for p in sec.figures)
    line = next(s for s in sec.markdown.splitlines() if s.startswith("Lowest mean latency"))
    assert "1.00x below" not in line
    best = re.search(r"\*\*([a-z-]+)\*\*", line).group(1)
    r = res.ratio("latency_per_token_mean_s", best, "fcfs", len(res.loads) - 1)
    if best == "fcfs":
        assert "no ordering beats it" in line
    elif best not in s50_latency.separated(res, "latency_per_token_mean_s", len(res.loads) - 1)["better"]:
        assert "its interval overlaps FCFS's" in line  # a lower mean that the intervals do not resolve
    else:
        pct = float(re.search(r"([0-9.]+)% below FCFS", line).group(1))
        assert abs(pct - 100 * (1 - 1 / r)) < 0.06
