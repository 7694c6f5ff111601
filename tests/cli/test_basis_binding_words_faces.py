"""The last faces of the ``kv_rules`` load basis that called ``max_throughput`` the batch the KV cache allows from
mean footprints where ``max_num_seqs`` binds (h-words2).

h-words made ``fluidq capacity``, ``check`` and the report's reference capacity say which limit binds
(tests/cli/test_basis_binding_words.py); ``fluidq latency``'s capacity line, ``fluidq simulate --load``'s workload
line, the report's capacity section and :func:`fluidq.check_stability`'s reason still said "b/t(b) at the batch the
cache allows from mean footprints" / "Theorem 2 at the batch the mean footprints allow" (or quoted the 17 KV-bound
engines' band) on an engine where ``max_num_seqs`` binds (``--gpu H100-SXM5-80GB --model Llama-3.1-8B``: its cache
holds 256 residents at their full contexts).  Here each face runs on engines in each regime, the regime read from
the arithmetic of the cache and ``k_max (p + o)`` (not from the code under test), and must use the words of
:mod:`fluidq.dtmc.load_basis` (``K_MAX_BINDS``, ``KV_CACHE_BINDS_PART``) and the band measured for the case.
Small horizons and one replication: the words, not the numbers, are under test.
"""
import json
import sys
from pathlib import Path

import pytest

from fluidq import Engine, Geometric, Poisson, Staircase, Workload, check_stability
from fluidq.capacity import max_throughput
from fluidq.dtmc.load_basis import K_MAX_BINDS, KV_CACHE_BINDS_PART, load_basis
from fluidq.stability.measured import SATURATION_PER_BASIS, SATURATION_WHERE_K_MAX_BINDS
from fluidq.testing.cli import run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the regime's arithmetic and the staircase engine's flags (k_max 32 at 1000 + 200 tokens), written once
from test_basis_binding_words import _regime, _stair as _stair_flags  # noqa: E402

MEAN_FP = "mean footprints"
K_MAX_WORDS = "max_num_seqs binds"
KV_WORDS = "the KV cache binds"
P, O, K_MAX = 1000, 200, 32  # (the lengths and k_max of _stair_flags)


def _stair_engine(kv):
    return Engine(batch_time=Staircase(c=0.010, a=0.05e-3, b0=128), b_max=2048, k_max=K_MAX, kv_capacity_tokens=kv)


def _w(rate=1.0):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=P, output_tokens=O)


STAIR = {20000: "kv_cache", 37000: "part", 60000: "k_max"}
#: the brief's engine: vLLM's planner gives Llama-3.1-8B on an H100 a cache that holds 256 x 200 tokens many times
GPU = ["--gpu", "H100-SXM5-80GB", "--model", "Llama-3.1-8B"]


def _check_words(text, regime):
    """The words a face must say (and not say) in each regime."""
    if regime == "k_max":
        assert K_MAX_WORDS in text and K_MAX_BINDS in text, text
        assert KV_WORDS not in text and MEAN_FP not in text and "KV-bound engines" not in text, text
    elif regime == "part":
        assert KV_CACHE_BINDS_PART in text and K_MAX_WORDS not in text and "allows from mean footprints" not in text, text
    else:
        assert MEAN_FP in text and K_MAX_WORDS not in text and KV_CACHE_BINDS_PART not in text, text


@pytest.mark.parametrize("kv", sorted(STAIR))
def test_regimes_are_what_their_names_say(kv):
    assert _regime(K_MAX, P, O, kv) == STAIR[kv]
    lb = load_basis(_stair_engine(kv), _w())
    assert lb.basis == "kv_rules"
    assert lb.capacity.binding == ("k_max" if STAIR[kv] == "k_max" else "kv_cache")


def _latency_capacity_line(argv, capsys):
    rc, out, err = run_cli(["latency", *argv, "--loads", "0.5", "--horizon", "2", "--replications", "1",
                            "--orderings", "fcfs"], capsys)
    assert rc == 0, out + err
    return next(ln for ln in out.splitlines() if ln.startswith("workload"))


@pytest.mark.parametrize("kv", sorted(STAIR))
def test_latency_capacity_line(kv, capsys):
    line = _latency_capacity_line(_stair_flags(kv), capsys)
    _check_words(line, STAIR[kv])
    if STAIR[kv] == "k_max":
        assert SATURATION_WHERE_K_MAX_BINDS["kv_rules"].within_words() in line, line


def test_latency_capacity_line_gpu(capsys):
    line = _latency_capacity_line(GPU, capsys)
    _check_words(line, "k_max")


def _simulate_workload_line(argv, capsys):
    rc, out, err = run_cli(["simulate", *argv, "--load", "0.5", "--horizon", "2"], capsys)
    assert rc == 0, out + err
    return next(ln for ln in out.splitlines() if ln.startswith("workload"))


@pytest.mark.parametrize("kv", sorted(STAIR))
def test_simulate_basis_note(kv, capsys):
    _check_words(_simulate_workload_line(_stair_flags(kv), capsys), STAIR[kv])


def test_simulate_basis_note_gpu(capsys):
    rc, js, err = run_cli(["capacity", *GPU, "--json"], capsys)
    assert rc == 0, js + err
    d = json.loads(js)
    assert _regime(256, 100, 100, d["inputs"]["kv_capacity_tokens"]) == "k_max"  # the brief's case, as named
    _check_words(_simulate_workload_line(GPU, capsys), "k_max")


@pytest.mark.parametrize("kv", sorted(STAIR))
def test_report_capacity_section(kv, tmp_path):
    from fluidq.report import ReportContext
    from fluidq.report.sections import s10_capacity

    ctx = ReportContext(engine=_stair_engine(kv), workload=_w(5.0), out_dir=tmp_path, quick=True)
    md = s10_capacity.render(ctx).markdown
    assert ctx.reference.basis_name == "kv_rules"
    row = next(ln for ln in md.splitlines() if ln.startswith("| capacity"))
    lam = next(ln for ln in md.splitlines() if ln.startswith("| maximum request rate"))
    _check_words(row + lam, STAIR[kv])
    if STAIR[kv] != "kv_cache":
        assert "bound over every scheduler" in row, row


@pytest.mark.parametrize("kv", sorted(STAIR))
def test_check_stability_reason(kv):
    """At fixed lengths a cache that holds k_max residents at their full contexts never binds for sarathi (the verdict
    is the engine's without memory), so the k_max case is read at geometric lengths of the same means, whose full
    contexts are unbounded (the basis' binding is still ``"k_max"``: 60,000 tokens hold 32 x 1,200 mean contexts)."""
    e = _stair_engine(kv)
    w = _w() if STAIR[kv] != "k_max" else Workload(arrival=Poisson(rate_per_s=1.0),
                                                   prompt_tokens=Geometric(mean_tokens=P),
                                                   output_tokens=Geometric(mean_tokens=O))
    lb = load_basis(e, w)
    assert lb.capacity.binding == ("k_max" if STAIR[kv] == "k_max" else "kv_cache")
    res = check_stability(e, w.with_rate(0.9 * lb.requests_per_s), "sarathi")
    assert res.inputs.get("load_basis") == "kv_rules"
    reason = res.reason
    if STAIR[kv] == "k_max":
        band = SATURATION_WHERE_K_MAX_BINDS["kv_rules"]
        assert K_MAX_BINDS in reason and band.within_words() in reason and band.source in reason, reason
        assert SATURATION_PER_BASIS["kv_rules"].saturate_words() not in reason, reason
        assert "KV-bound engines" not in reason and KV_WORDS not in reason, reason
    elif STAIR[kv] == "part":
        assert KV_CACHE_BINDS_PART in reason and K_MAX_WORDS not in reason, reason
        assert SATURATION_PER_BASIS["kv_rules"].saturate_words() in reason, reason
    else:
        assert KV_WORDS in reason and K_MAX_WORDS not in reason and KV_CACHE_BINDS_PART not in reason, reason
        assert SATURATION_PER_BASIS["kv_rules"].saturate_words() in reason, reason


def test_work_conserving_label_where_the_region_sets_it():
    """Where k_max binds along the mix and the stability region sets max_throughput's work-conserving figure, its
    label is the region's, not b_max/t(b_max) (fluidq.dtmc.saturation reads it)."""
    from fluidq.dtmc.saturation import saturation

    e = _stair_engine(None)
    cap = max_throughput(e, _w())
    full = 2048 / e.batch_time(2048)
    assert cap.method == "region" and cap.work_conserving_tokens_per_s < full * (1 - 1e-6)  # the region sets it
    assert "b_max/t(b_max)" not in cap.work_conserving_basis and "stability region" in cap.work_conserving_basis
    how = saturation(e, _w(), "sarathi").how
    assert "stability region" in how and "b_max/t(b_max)" not in how, how
    plain = Engine(batch_time=Staircase(c=0.010, a=0.05e-3, b0=128), b_max=2048)
    assert max_throughput(plain, _w()).work_conserving_basis == "b_max/t(b_max)"
