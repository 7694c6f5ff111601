"""The report section with simulated trajectories."""
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.report import ReportContext
from fluidq.report.sections import s30_simulation


def test_section_renders_trajectories(tmp_path):
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=25.0), prompt_tokens=129, output_tokens=112)  # 1.8x capacity
    sec = s30_simulation.render(ReportContext(engine=e, workload=w, out_dir=tmp_path, quick=True))
    assert len(sec.figures) == 2 and all(tmp_path.joinpath(f.split("/")[-1]).exists() for f in sec.figures)
    for name in s30_simulation.POLICIES:
        assert f"| {name} |" in sec.markdown
    low = sec.data["rescaled to 0.8 of capacity"]
    assert low["fastertransformer"]["final_requests_in_system"] > 3 * low["sarathi"]["final_requests_in_system"]
