"""The report's simulation section predicts the backlog slope from the basis its loads are fractions of (h-fixa).

Before, ``s30_simulation`` read ``max_throughput`` (the batch the mean footprints allow) under the label "Theorem 2"
while its loads were fractions of the load basis; where the KV cache binds the basis is the KV rules' capacity, below
``max_throughput``, so a load called above capacity got a predicted slope of 0 (``max(0, offered - max_throughput)``).
"""
import pytest

from fluidq import Affine, Engine, Poisson, Workload
from fluidq.capacity import max_throughput, offered_tokens_per_s
from fluidq.report import ReportContext
from fluidq.report.sections import s30_simulation
from fluidq.report.sections.s20_verdicts import verdict_workload

# KV-bound (tests/report/test_report_load_basis.py's engine): max_throughput 3.944 req/s, the KV rules 3.422
ENGINE = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024, kv_capacity_tokens=30_000)


def _w(rate):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=600, output_tokens=200)


def test_the_prediction_reads_the_load_basis_where_the_cache_binds(tmp_path):
    ctx = ReportContext(engine=ENGINE, workload=_w(2.9), out_dir=tmp_path, quick=True)
    ref = ctx.reference
    assert ref.basis_name == "kv_rules"
    mt = max_throughput(ENGINE, _w(2.9))
    assert ref.tokens_per_s < 0.9 * (mt.work_conserving_tokens_per_s or mt.tokens_per_s)  # the two differ here
    sec = s30_simulation.render(ctx)
    windows = sec.data["windows"]
    for label, win in windows.items():
        offered = offered_tokens_per_s(ENGINE, verdict_workload(_w(2.9), win["rate_per_s"]))
        assert win["predicted_growth_tokens_per_s"] == pytest.approx(max(0.0, offered - ref.tokens_per_s), rel=1e-12)
        assert win["prediction_basis"] == "kv_rules" and win["prediction_capacity_tokens_per_s"] == ref.tokens_per_s
        # the old key, kept one release as an alias (docs/how-to/report.md): the same number
        assert win["theorem2_slope_tokens_per_s"] == win["predicted_growth_tokens_per_s"]
    # a load above 1 of the basis is predicted to grow (it was 0 against max_throughput at loads up to its 1.15)
    above = [w for w in windows.values() if w["load"] > 1]
    assert above and all(w["predicted_growth_tokens_per_s"] > 0 for w in above), windows
    assert "(the load basis, " in sec.markdown and "the capacity under the KV cache's rules, whole-prompt admission and recompute preemptions" in sec.markdown
    assert "at the stated rate (Theorem 2)" not in sec.markdown


def test_max_throughput_basis_keeps_theorem_2(tmp_path):
    e = ENGINE.with_(kv_capacity_tokens=None)
    ctx = ReportContext(engine=e, workload=_w(2.9), out_dir=tmp_path, quick=True)
    assert ctx.reference.basis_name == "max_throughput"
    sec = s30_simulation.render(ctx)
    cap = ctx.reference.capacity
    for win in sec.data["windows"].values():
        offered = offered_tokens_per_s(e, verdict_workload(_w(2.9), win["rate_per_s"]))
        full = cap.work_conserving_tokens_per_s or cap.tokens_per_s
        assert win["predicted_growth_tokens_per_s"] == pytest.approx(max(0.0, offered - full), rel=1e-12)
        assert win["prediction_basis"] == "max_throughput" and win["prediction_capacity_tokens_per_s"] == full
        assert win["theorem2_slope_tokens_per_s"] == win["predicted_growth_tokens_per_s"]  # the alias
    assert "at the stated rate (Theorem 2)" in sec.markdown
