"""The report sizes on the load basis of ``check --load`` and says so; it warns when its own simulations contradict
its sizing; ``report --gpu`` checks its trace against the model's context (user6a, finding 4).

Before: :func:`fluidq.report.reference.reference` read ``lambda*`` from ``fluidq.max_throughput`` alone, which
where the KV cache binds is the batch the mean footprints allow and lies 5-46 % above where seeded simulations
saturate (validation/RESULTS.md, "the load basis where the KV cache binds"); ``fluidq report --gpu A10G --model
Gemma-2-9B --quick`` sized 22 engines on lambda* 0.3291 req/s while every verdict cell of the same report was
unstable by simulation, and accepted the azure-conv trace, whose request 5443 (14,089 tokens) exceeds the model's
8,192 (``capacity --trace`` refuses it).
"""
import dataclasses

import pytest

from fluidq import Affine, Engine, Poisson, Workload
from fluidq.capacity import max_throughput
from fluidq.cli import main
from fluidq.dtmc.load_basis import load_basis
from fluidq.report import ReportContext
from fluidq.report.reference import reference

# KV-bound: 30,000 tokens hold 30,000 / 700 = 43 requests of mean context 600 + 100; (validation/RESULTS.md's
# "affine 600/200 kv30k": max_throughput 3.944 req/s, the KV rules 3.422, simulated saturation 3.629 [3.569, 3.689])
ENGINE = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024, kv_capacity_tokens=30_000)


def _w(rate):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=600, output_tokens=200)


def test_lambda_star_is_check_s_load_basis():
    w = _w(2.9)
    lb, cap = load_basis(ENGINE, w), max_throughput(ENGINE, w)
    assert lb.basis == "kv_rules" and lb.requests_per_s < 0.9 * cap.requests_per_s  # the two differ here
    ref = reference(ENGINE, w)
    assert ref.requests_per_s == lb.requests_per_s and ref.tokens_per_s == lb.tokens_per_s
    assert ref.capacity.requests_per_s == cap.requests_per_s  # max_throughput kept for the capacity table
    # 2.9 req/s: load 0.847 of the KV rules' lambda* (2 engines at most 0.8 each); 0.735 of max_throughput's (1)
    assert ref.offered_load == pytest.approx(2.9 / lb.requests_per_s, rel=1e-12)
    assert ref.n_engines == 2
    assert "the KV cache binds" in ref.capacity_note and "fluidq check" in ref.capacity_note
    assert ref.to_dict()["load_basis"] == "kv_rules"


def test_no_kv_cache_keeps_max_throughput():
    e = ENGINE.with_(kv_capacity_tokens=None)
    ref = reference(e, _w(2.9))
    assert ref.basis_name == "max_throughput"
    assert ref.requests_per_s == max_throughput(e, _w(2.9)).requests_per_s


def _verdicts(monkeypatch, tmp_path, unstable):
    """s20 with every verdict the analytic one, but those of ``unstable`` schedulers at every load replaced by an
    unstable verdict decided by simulation."""
    import fluidq.stability as st
    from fluidq.report.sections import s20_verdicts

    def fake(engine, workload, policy, **kw):
        r = st.check_stability(engine, workload, policy)
        if policy.name in unstable:
            return dataclasses.replace(r, status=st.Status.UNSTABLE, method="simulation")
        return r

    monkeypatch.setattr(st, "decide_stability", fake)
    ctx = ReportContext(engine=ENGINE, workload=_w(2.9), out_dir=tmp_path, quick=True)
    return s20_verdicts.render(ctx)


def test_a_contradicting_simulation_is_a_warning(monkeypatch, tmp_path):
    sec = _verdicts(monkeypatch, tmp_path, {"sarathi", "orca"})
    first = sec.markdown.split("\n", 1)[0]
    assert first.startswith("**Warning: this report's own simulations contradict its sizing.**")
    assert "seeded simulation found **orca, sarathi** unstable" in first or \
        "seeded simulation found **sarathi, orca** unstable" in first, first
    assert "2 engines" in first and "kv_rules" in first
    assert set(sec.data["sizing_contradicted_by_simulation"]) == {"sarathi", "orca"}


def test_no_contradiction_no_warning(monkeypatch, tmp_path):
    sec = _verdicts(monkeypatch, tmp_path, set())
    assert "Warning" not in sec.markdown and sec.data["sizing_contradicted_by_simulation"] == []


def test_report_gpu_checks_the_trace_against_the_context(tmp_path, capsys):
    rc = main(["report", "--gpu", "A10G", "--model", "Gemma-2-9B", "--quick", "--out", str(tmp_path / "R")])
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert "request 5443, has 14,050 + 39 = 14,089 tokens" in err and "8,192" in err, err
    assert not (tmp_path / "R" / "report.md").exists()


def test_requests_longer_than_the_cache_are_named(tmp_path):
    """A trace with requests longer than the KV cache (Gemma-2-9B on an A10G holds 4,272 tokens; azure-code has
    1,186 of its 8,819 requests longer): they never finish, every verdict is unstable at any load; the warning
    says why."""
    from fluidq.report.sections.s20_verdicts import _too_long

    csv = tmp_path / "t.csv"
    csv.write_text("arrival_s,prompt_tokens,output_tokens\n0,600,200\n1,29000,1001\n2,600,200\n3,30001,5\n")
    w = Workload.from_trace(str(csv))
    words = _too_long(ENGINE, w)
    assert "2 of the trace's 4 requests have a prompt + output longer than the KV cache's 30,000 tokens" in words
    assert _too_long(ENGINE.with_(kv_capacity_tokens=40_000), w) == ""
    assert _too_long(ENGINE, _w(1.0)) == ""  # no trace


def test_the_capacity_table_says_whose_row_is_whose(tmp_path):
    """The capacity section's 'capacity' row is max_throughput's; where lambda* is the KV rules', it says so."""
    from fluidq.report.sections import s10_capacity

    ctx = ReportContext(engine=ENGINE, workload=_w(2.9), out_dir=tmp_path, quick=True)
    md = s10_capacity.render(ctx).markdown
    assert "| capacity (Theorem 2 at the batch the mean footprints allow) |" in md
    ref = ctx.reference
    assert f"| maximum request rate `lambda*` (the report's reference capacity) | " in md
    assert ("the capacity under the KV cache's rules, whole-prompt admission and recompute preemptions, the load basis "
            "of `fluidq check --load`") in md
    plain = ReportContext(engine=ENGINE.with_(kv_capacity_tokens=None), workload=_w(2.9), out_dir=tmp_path,
                          quick=True)
    assert "| capacity | " in s10_capacity.render(plain).markdown
    assert ref.basis_name == "kv_rules"
