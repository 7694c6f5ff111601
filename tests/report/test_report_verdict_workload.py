"""The report's verdict table judges each column at its own load (review of main 3f6ee3b): on the embedded trace
the operating point 0.7532 was simulated on a *replay* of the trace's first seconds (an effective load 0.489), with
"95 % CI [10.28, 10.28]" from 4 replications that could not differ, while the simulation section said a replay is
unrepresentative and used Poisson arrivals with the trace's lengths.  Now both sections judge the same workload,
and an interval is printed only from replications that can differ."""
import re

import numpy as np
import pytest

from fluidq.report import ReportContext, default_inputs
from fluidq.report.sections import s20_verdicts
from fluidq.report.sections.s20_verdicts import verdict_workload


def test_a_trace_is_judged_with_poisson_arrivals_at_the_rate_and_the_trace_s_lengths():
    e, w, _ = default_inputs()
    assert w.replays_trace
    v = verdict_workload(w, 1.843)
    assert not v.replays_trace and type(v.arrival).__name__ == "Poisson"
    assert v.arrival_rate_per_s == pytest.approx(1.843, rel=1e-15)
    assert v.prompt_tokens == w.prompt_tokens and v.output_tokens == w.output_tokens
    # seeded draws differ (a replay gives the same rows every time) and offer the stated load on average
    a = v.sample(np.random.default_rng(1), horizon_s=2000.0)
    b = v.sample(np.random.default_rng(2), horizon_s=2000.0)
    assert len(a[0]) != len(b[0]) or not np.array_equal(a[1], b[1])
    n = [len(v.sample(np.random.default_rng(s), horizon_s=2000.0)[0]) for s in range(8)]
    # Poisson counts: mean 3686, sd 61 per run; 8 runs' mean within 4 standard errors
    assert abs(np.mean(n) - 1.843 * 2000) < 4 * np.sqrt(1.843 * 2000 / 8)
    # a workload that is no trace keeps its own arrivals
    from fluidq import Poisson, Workload

    plain = Workload(arrival=Poisson(rate_per_s=2.0), prompt_tokens=100, output_tokens=100)
    v = verdict_workload(plain, 3.0)
    assert type(v.arrival).__name__ == "Poisson" and v.arrival_rate_per_s == 3.0
    assert (v.prompt_tokens, v.output_tokens, v.name) == (plain.prompt_tokens, plain.output_tokens, plain.name)


@pytest.fixture(scope="module")
def section(tmp_path_factory):
    e, w, prof = default_inputs()
    ctx = ReportContext(engine=e, workload=w, out_dir=tmp_path_factory.mktemp("s20"), quick=True, profile_name=prof)
    sec = s20_verdicts.render(ctx)
    return ctx, sec


def test_simulated_verdicts_are_at_the_column_s_load_with_replications_that_differ(section):
    ctx, sec = section
    ref = ctx.reference
    loads = s20_verdicts.loads_of(ref)
    grid = ctx.results["verdicts"]
    simulated = [(p, i) for p, rs in grid.items() for i, r in enumerate(rs) if r.method == "simulation"]
    assert simulated  # the default's FasterTransformer / vLLM are decided by simulation
    i08 = loads.index(round(ref.low, 12))
    assert any(i == i08 for _, i in simulated)
    for p, i in simulated:
        rep = grid[p][i].replications
        assert rep.arrival_rate_per_s == pytest.approx(ref.rate(loads[i]), rel=1e-12), (p, loads[i])
        assert len(set(map(float, rep.slopes_tokens_per_s))) == len(rep.slopes_tokens_per_s), (p, loads[i])
    assert sec.data["arrivals"] == "Poisson, trace lengths"
    text = sec.markdown
    assert "replaying the trace" not in text and "replayed window" not in text
    assert "Poisson at the column's rate" in text
    for lo, hi in re.findall(r"CI \[([-0-9.e+]+), ([-0-9.e+]+)\]", text):
        assert lo != hi, text


def test_replications_that_cannot_differ_print_no_interval():
    # a replayed trace is one sample path: the seeded runs are identical, so no interval is printed
    from fluidq.stability import decide_stability

    e, w, _ = default_inputs()
    ref = ReportContext(engine=e, workload=w, out_dir=None).reference
    pol = ref.policies["vllm"]
    r = decide_stability(e, w.with_rate(ref.rate(ref.low)), pol, n_replications=2, rng=0, budget_s=120.0)
    assert r.method == "simulation", r.reason
    assert len(set(map(float, r.replications.slopes_tokens_per_s))) == 1
    assert "CI [" not in r.reason and "no interval: the runs are identical" in r.reason
