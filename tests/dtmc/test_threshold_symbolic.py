"""Symbolic drift, closed-form and renewal thresholds, check_stability verdicts."""
import pytest
import sympy as sp

import fluidq
from fluidq.dtmc import build_dtmc
from fluidq.dtmc.symbolic import (
    fastertransformer_region_drift,
    fastertransformer_threshold_expr,
    work_conserving_certificate,
)
from fluidq.results import Status

G = fluidq.Geometric
PAPER = {"c": 0.01128, "a": 0.03547, "b0": 128}


def wl(rate, prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def test_symbolic_certificate_is_theorem_2_exactly():
    cert = work_conserving_certificate()
    S = cert.symbols
    t_bmax = S["c"] + S["a"] * S["b_max"] / S["b0"]
    want = S["b_max"] / (t_bmax * (S["m_p"] + S["m_d"]))
    assert sp.simplify(cert.threshold - want) == 0
    assert sp.simplify(cert.drift - (S["lambda"] * t_bmax * (S["m_p"] + S["m_d"]) - S["b_max"])) == 0
    # the condition is lambda < threshold
    assert isinstance(cert.condition, sp.StrictLessThan) and cert.condition.lhs == S["lambda"]


def test_certificate_matches_the_closed_form_number(paper_engine):
    cert = work_conserving_certificate()
    S = cert.symbols
    val = cert.threshold.subs({S["c"]: 0.01128, S["a"]: 0.03547, S["b0"]: 128, S["b_max"]: 512,
                               S["m_p"]: 100, S["m_d"]: 100})
    r = fluidq.stability_threshold(paper_engine, wl(1.0, 100, 100), "sarathi")
    assert float(val) == pytest.approx(r.arrival_rate_per_s, rel=1e-12)
    assert r.method == "closed_form"


@pytest.mark.parametrize("lengths", [(100, 100), (129, 112)])
def test_ft_and_vllm_are_strictly_below_work_conserving(paper_engine, lengths):
    w = wl(1.0, *lengths)
    wc = fluidq.stability_threshold(paper_engine, w, "sarathi").arrival_rate_per_s
    ft = fluidq.stability_threshold(paper_engine, w, "fastertransformer")
    vl = fluidq.stability_threshold(paper_engine, w, "vllm")
    assert ft.method == vl.method == "renewal"
    assert 0 < ft.upper_per_s < wc and 0 < vl.upper_per_s < wc
    assert vl.error_bound_per_s < 1e-6 * wc
    # FT's renewal number equals its sympy closed form
    expr, S = fastertransformer_threshold_expr(*lengths)
    val = expr.subs({S["c"]: PAPER["c"], S["a"]: PAPER["a"], S["b0"]: 128, S["b_max"]: 512})
    assert float(val) == pytest.approx(ft.arrival_rate_per_s, rel=1e-12)


def test_ft_decode_region_drift_is_positive_where_it_wastes_capacity():
    drift, n, S = fastertransformer_region_drift()
    subs = {S["c"]: PAPER["c"], S["a"]: PAPER["a"], S["b0"]: 128, S["m_p"]: 100, S["m_d"]: 100,
            S["lambda"]: 8.0}  # about half of Theorem 2's threshold (16.7 req/s)
    assert float(drift.subs(subs).subs(n, 5)) > 0      # five requests decoding: the batch is short
    assert float(drift.subs(subs).subs(n, 512)) < 0    # a full decode batch drains


def test_ft_renewal_with_geometric_outputs_matches_its_chain(small_engine):
    # fixed prompts, geometric outputs: the renewal threshold separates stable from unstable chains
    w = wl(1.0, 4, G(mean_tokens=6))
    thr = fluidq.stability_threshold(small_engine, w, "fastertransformer")
    lo = build_dtmc(small_engine, w.with_rate(0.6 * thr.arrival_rate_per_s), "fastertransformer",
                    max_prefill=80, max_decode=16).solve()
    hi = build_dtmc(small_engine, w.with_rate(1.3 * thr.arrival_rate_per_s), "fastertransformer",
                    max_prefill=80, max_decode=16).solve()
    assert lo.status == Status.STABLE
    # above the threshold: unstable (no stationary metrics), and the truncated chain loses mass at its caps
    assert hi.status == Status.UNSTABLE and hi.mean_requests is None
    assert hi.lost_mass > 100 * max(lo.lost_mass, 1e-12)


def test_vllm_renewal_separates_stable_and_unstable_chains(small_engine):
    w = wl(1.0, 4, G(mean_tokens=12))
    res = fluidq.stability_threshold(small_engine, w, "vllm")
    thr, wc = res.arrival_rate_per_s, res.work_conserving_rate_per_s
    assert thr < 0.95 * wc
    lo = build_dtmc(small_engine, w.with_rate(0.6 * thr), "vllm", max_prefill=20, max_decode=120).solve()
    # between vLLM's threshold and Theorem 2's: a work-conserving scheduler would be stable here
    hi = build_dtmc(small_engine, w.with_rate(0.5 * (thr + wc)), "vllm", max_prefill=20, max_decode=120).solve()
    assert lo.status == Status.STABLE
    # above the threshold: unstable (no stationary metrics), and the truncated chain loses mass at its caps
    assert hi.status == Status.UNSTABLE and hi.mean_requests is None
    assert hi.lost_mass > 100 * max(lo.lost_mass, 1e-12)


def test_check_stability_gives_real_verdicts_for_non_work_conserving(paper_engine):
    w = wl(1.0, 129, 112)
    vl = fluidq.stability_threshold(paper_engine, w, "vllm").arrival_rate_per_s
    ft = fluidq.stability_threshold(paper_engine, w, "fastertransformer").arrival_rate_per_s
    r = fluidq.check_stability(paper_engine, w.with_rate(0.5 * vl), "vllm")
    assert r.status == Status.STABLE and r.method == "renewal"
    assert r.threshold_requests_per_s == pytest.approx(vl)
    r = fluidq.check_stability(paper_engine, w.with_rate(1.2 * vl), "vllm")
    assert r.status == Status.UNSTABLE
    r = fluidq.check_stability(paper_engine, w.with_rate(10.0), "fastertransformer")
    assert r.status == Status.UNSTABLE and r.threshold_requests_per_s == pytest.approx(ft)
    # geometric prompts: some exceed b_max and whole-prompt schedulers never take them -> unstable
    wg = wl(5.0, G(mean_tokens=100), 100)
    r = fluidq.check_stability(paper_engine, wg, "vllm")
    assert r.status == Status.UNSTABLE and "never schedules" in r.reason
    assert fluidq.stability_threshold(paper_engine, wg, "vllm").arrival_rate_per_s == 0.0
    # ... unless long prompts are chunked: then no renewal formula, the verdict stays unknown
    r = fluidq.check_stability(paper_engine, wg, fluidq.VLLM(chunk_long_prompts=True))
    assert r.status == Status.UNKNOWN and "simulation" in r.reason


def test_threshold_bad_input(paper_engine):
    with pytest.raises(fluidq.FluidqError):
        fluidq.stability_threshold(paper_engine, wl(1.0, 100, 100), "sarathi", method="magic")
    with pytest.raises(fluidq.FluidqError):
        fluidq.stability_threshold(paper_engine, wl(1.0, 100, 100), "fastertransformer", method="closed_form")
    r = fluidq.stability_threshold(paper_engine, wl(1.0, 600, 100), "vllm", method="renewal")
    assert r.arrival_rate_per_s == 0.0 and "never schedules" in r.reason
    with pytest.raises(fluidq.FluidqError, match="chunk"):
        fluidq.stability_threshold(paper_engine, wl(1.0, 600, 100), fluidq.VLLM(chunk_long_prompts=True),
                                   method="renewal")
    d = fluidq.stability_threshold(paper_engine, wl(1.0, 100, 100), "vllm").to_dict()
    assert d["method"] == "renewal" and d["arrival_rate_per_s"] > 0


def test_dtmc_bisection_brackets_the_renewal_threshold(small_engine):
    w = wl(1.0, 4, G(mean_tokens=6))
    ren = fluidq.stability_threshold(small_engine, w, "fastertransformer")
    dt = fluidq.stability_threshold(small_engine, w, "fastertransformer", method="dtmc", rtol=0.1,
                                    max_prefill=40, max_decode=30)
    assert dt.method == "dtmc"
    assert dt.lower_per_s <= ren.arrival_rate_per_s <= dt.upper_per_s
    assert dt.arrival_rate_per_s > 0.6 * ren.arrival_rate_per_s  # truncation bias, but not wild


def test_ft_random_prompt_renewal_reduces_to_the_fixed_formula(paper_engine):
    one = wl(1.0, fluidq.Empirical(values=(129,)), 112)
    fixed = wl(1.0, 129, 112)
    a = fluidq.stability_threshold(paper_engine, one, "fastertransformer").arrival_rate_per_s
    b = fluidq.stability_threshold(paper_engine, fixed, "fastertransformer").arrival_rate_per_s
    assert a == pytest.approx(b, rel=1e-12)
    # check_stability uses it: an empirical prompt mix gets a real verdict
    mix = wl(5.0, fluidq.Empirical(values=(50, 100, 200)), 100)
    r = fluidq.check_stability(paper_engine, mix, "fastertransformer")
    assert r.status == Status.UNSTABLE and r.method == "renewal"


def test_vllm_prefill_region_drift_is_positive_for_a_lone_prompt():
    from fluidq.dtmc.symbolic import vllm_region_drift

    drift, (m, vp), S = vllm_region_drift()
    subs = {S["c"]: PAPER["c"], S["a"]: PAPER["a"], S["b0"]: 128, S["m_p"]: 100, S["m_d"]: 100,
            S["lambda"]: 13.0, vp: 100}  # 78 % of Theorem 2's threshold
    assert float(drift.subs(subs).subs(m, 1)) > 0   # one prompt of 100 tokens: a short batch
    assert float(drift.subs(subs).subs(m, 5)) < 0   # five prompts: a nearly full batch drains
