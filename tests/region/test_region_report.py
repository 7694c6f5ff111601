"""The report section: region plot with the workload's operating point."""
import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.report import ReportContext
from fluidq.report.sections import s40_region

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)


@pytest.mark.parametrize("k_max", [100, None])
def test_region_section(tmp_path, k_max):
    e = Engine(batch_time=PAPER, b_max=1024, k_max=k_max)
    w = Workload(arrival=Poisson(rate_per_s=1.5), prompt_tokens=290, output_tokens=990)
    sec = s40_region.render(ReportContext(engine=e, workload=w, out_dir=tmp_path, quick=k_max is None))
    assert sec.figures and (tmp_path / "stability_region.png").stat().st_size > 1000
    assert sec.data["operating_point"] == pytest.approx([1.5 * 290, 1.5 * 990])
    if k_max == 100:
        assert sec.data["k_max_binds"] and sec.data["max_request_rate_per_s"] == pytest.approx(1 / 0.4675)
        assert "(29, 99)" in sec.markdown
        assert sec.data["load"] == pytest.approx(1.5 * 0.4675)
        assert len(sec.data["simulated"]["sarathi-1024"]["points_tokens_per_s"]) == 5  # full report simulates
    else:
        assert sec.data["illustrative_k_max"] and "Theorem 2" in sec.markdown
