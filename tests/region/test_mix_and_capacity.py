"""region_mix (LP time-sharing), margin, policy regions and the k_max-aware capacity/verdicts."""
import math

import numpy as np
import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.policies.region_aware import RegionAware
from fluidq.region import policy_region, region_mix, stability_region

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)
E1024 = Engine(batch_time=PAPER, b_max=1024, k_max=100)
C = (29 / 0.04675, 99 / 0.04675)


def wl(rate, mp, md):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=mp, output_tokens=md)


def test_mix_at_vertex_c_is_the_128_token_batch():
    m = region_mix(E1024, C)
    assert m.feasible
    assert [tuple(s) for s in m.shapes] == [(29, 99)]
    assert m.time_fractions[0] == pytest.approx(1.0, abs=1e-6)
    assert m.batches_per_s[0] == pytest.approx(1 / 0.04675, rel=1e-6)
    assert m.served_tokens_per_s == pytest.approx(C, rel=1e-6)


def test_mix_serves_the_target_on_a_facet():
    r = stability_region(E1024)
    q = 0.5 * (r.vertices[2] + r.vertices[3])  # between (925, 99) at b=1024 and C
    m = region_mix(r, 0.9 * q)
    assert m.feasible and m.scale == pytest.approx(1 / 0.9, rel=1e-6)
    assert m.utilization == pytest.approx(0.9, rel=1e-6)
    assert np.all(np.array(m.served_tokens_per_s) >= 0.9 * q * (1 - 1e-6))
    assert {tuple(s) for s in m.shapes} == {(925, 99), (29, 99)}
    assert m.batch_fractions.sum() == pytest.approx(1.0)


def test_mix_infeasible_reports_shortfall():
    m = region_mix(E1024, (2000.0, 2000.0))
    assert not m.feasible and m.scale < 1
    short = np.array(m.shortfall_tokens_per_s)
    assert np.all(short >= 0) and short.sum() > 0
    # adding the shortfall back is not needed: target - shortfall is servable
    r = stability_region(E1024)
    assert r.contains(np.maximum(np.array([2000.0, 2000.0]) - short, 0) * (1 - 1e-6))
    assert "outside" in m.reason
    import json

    json.dumps(m.to_dict())


def test_mix_origin():
    m = region_mix(E1024, (0.0, 0.0))
    assert m.feasible and math.isinf(m.scale) and len(m.shapes) == 0


def test_contains_agrees_with_lp():
    r = stability_region(Engine(batch_time=PAPER, b_max=512, k_max=60))
    rng = np.random.default_rng(11)
    pts = rng.uniform(0, 1.3, size=(40, 2)) * r.vertices.max(axis=0)
    for p in pts:
        mg = r.margin(p)
        if abs(mg.scale - 1) > 1e-6:
            assert r.contains(p) == mg.inside
        assert mg.scale == pytest.approx(r.scale_of(p), rel=1e-6)
        assert (mg.distance_tokens_per_s > 0) == (mg.scale > 1)


def test_policy_regions_at_vertex_c():
    assert not policy_region(E1024, "sarathi").contains(C)
    assert policy_region(E1024, fluidq.Sarathi(b_max=128)).contains(C)
    assert not policy_region(E1024, "orca").contains(C)
    assert not policy_region(E1024, "fastertransformer").contains(C)
    ra = RegionAware(engine=E1024, target_tokens_per_s=C)
    assert policy_region(E1024, ra).contains(C)


def test_policy_region_inside_engine_region():
    r = stability_region(E1024)
    for pol in ("sarathi", "orca", "fastertransformer", "vllm", fluidq.Sarathi(b_max=256), RegionAware(engine=E1024)):
        pr = policy_region(E1024, pol)
        assert np.all(r.contains(pr.vertices)), pol


def test_sarathi_without_k_max_reaches_the_whole_region():
    e = Engine(batch_time=PAPER, b_max=512)
    pr, r = policy_region(e, "sarathi"), stability_region(e)
    assert pr.area == pytest.approx(r.area, rel=1e-9)


# ---- capacity and verdicts ---------------------------------------------------------------------
def test_max_throughput_region_when_k_max_binds():
    res = fluidq.max_throughput(E1024, wl(1.0, 290, 990))
    assert res.method == "region"
    assert res.requests_per_s == pytest.approx(1 / 0.4675, rel=1e-9)
    assert "k_max=100 binds" in res.reason and "29 prefill + 99 decode" in res.reason
    assert res.tokens_per_s < fluidq.max_throughput(E1024).tokens_per_s


def test_max_throughput_unchanged_when_k_max_does_not_bind():
    base = fluidq.max_throughput(E1024.with_(k_max=None), wl(1.0, 1000, 50))
    res = fluidq.max_throughput(E1024, wl(1.0, 1000, 50))
    assert res.method == "closed_form" and res.tokens_per_s == pytest.approx(base.tokens_per_s)


def test_max_throughput_equals_region_scale_property():
    rng = np.random.default_rng(5)
    for _ in range(20):
        mp, md = int(rng.integers(1, 2000)), int(rng.integers(1, 2000))
        k = int(rng.integers(1, 300))
        e = Engine(batch_time=PAPER, b_max=int(rng.choice([128, 512, 1024, 2048])), k_max=k)
        res = fluidq.max_throughput(e, wl(1.0, mp, md))
        lam = stability_region(e, prompt_tokens=mp).max_request_rate(mp, md)  # fixed prompts of mp tokens
        plain = fluidq.max_throughput(e.with_(k_max=None), wl(1.0, mp, md)).requests_per_s
        assert res.requests_per_s == pytest.approx(min(lam, plain), rel=1e-9)


def test_random_prompts_use_the_reconstructed_rule():
    e = Engine(batch_time=PAPER, b_max=1024, k_max=100)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=fluidq.Geometric(mean_tokens=30.0),
                 output_tokens=300)
    res = fluidq.max_throughput(e, w)
    assert res.requests_per_s == pytest.approx(stability_region(e).max_request_rate(30.0, 300.0), rel=1e-9)
    fixed = fluidq.max_throughput(e, wl(1.0, 30, 300))
    assert fixed.requests_per_s <= res.requests_per_s * (1 + 1e-12)
    assert "prompts of 30 tokens" in fixed.reason or fixed.method == "closed_form"


def test_two_engines_add_region_capacities():
    res = fluidq.max_throughput(E1024, wl(1.0, 290, 990), n_engines=2)
    assert res.method == "region" and res.requests_per_s == pytest.approx(2 / 0.4675, rel=1e-9)


def test_verdicts_under_k_max():
    w = wl(0.95 / 0.4675, 290, 990)
    v = fluidq.check_stability(E1024, w, "sarathi")
    assert v.status == "unstable" and v.method == "region" and "under backlog" in v.reason
    assert fluidq.check_stability(E1024, w, fluidq.Sarathi(b_max=128)).status == "unknown"
    v = fluidq.check_stability(E1024, w, RegionAware.for_workload(E1024, w))
    assert v.status == "unknown" and v.method == "region" and "simulate" in v.reason
    hi = fluidq.check_stability(E1024, w.with_rate(1.1 / 0.4675), "sarathi")
    assert hi.status == "unstable" and "stability region" in hi.reason and hi.load == pytest.approx(1.1)
    assert fluidq.check_stability(E1024, w.with_rate(1 / 0.4675), "sarathi").status == "critical"


def test_verdicts_without_k_max_unchanged():
    e = E1024.with_(k_max=None)
    v = fluidq.check_stability(e, wl(2.0, 290, 990), "sarathi")
    assert v.method == "closed_form" and "Theorem 2(b)" in v.reason


# ---- the region-aware scheduler as a policy -------------------------------------------------------
def test_region_aware_passes_check_policy():
    from fluidq.testing import check_policy

    for pol in (RegionAware(engine=E1024), RegionAware(engine=E1024, target_tokens_per_s=(1000.0, 1000.0),
                                                       prompt_tokens=300)):
        res = check_policy(pol)
        assert res.ok, res.problems


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fluidq.policies import QueueView, RequestState, batch_violations  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(reqs=st.lists(st.tuples(st.integers(1, 900), st.integers(1, 50), st.booleans(), st.integers(0, 899)),
                     min_size=1, max_size=160),
       target=st.sampled_from([None, (620.0, 2117.0), (1500.0, 1300.0), (3000.0, 100.0)]))
def test_region_aware_batches_valid_and_make_progress(reqs, target):
    pol = RegionAware(engine=E1024, target_tokens_per_s=target, prompt_tokens=300)
    res = []
    for i, (p, d, started, pre) in enumerate(reqs):
        res.append(RequestState(rid=i, arrival_s=float(i), prompt_tokens=p, output_tokens=d,
                                prefilled=p if started else min(pre, p - 1)))
    view = QueueView(requests=tuple(res), now_s=0.0, b_max=E1024.b_max, k_max=E1024.k_max)
    batch = pol.select(view)
    assert batch_violations(batch, view) == []
    assert not batch.empty  # work waits, so something is scheduled
    assert batch.tokens <= max(x + y for x, y in pol.shapes)


# ---- what schedulers actually sustain, by simulation ----------------------------------------------
def test_simulated_region_inside_the_outer_estimates(tmp_path):
    from fluidq.region.simulated import simulated_region

    shapes = [(290, 990), (300, 196)]
    sr = simulated_region(E1024, "sarathi", request_shapes=shapes, horizon_s=150.0, rng=1)
    assert sr.ray_status == ("resolved", "resolved")
    engine_r = stability_region(E1024)
    outer = policy_region(E1024, "sarathi")
    for (mp, md), lo, hi in zip(sr.request_shapes, sr.low_rate_per_s, sr.high_rate_per_s):
        # the highest rate judged bounded is inside the engine region and (within the slope tolerance
        # of the verdict) inside the region of the batches Sarathi forms under backlog
        assert engine_r.scale_of((lo * mp, lo * md)) >= 1
        assert outer.scale_of((lo * mp, lo * md)) >= 0.97
    # at vertex C's direction Sarathi-1024 sustains clearly less than the engine's region
    assert sr.engine_scale[0] > 1.1
    import json

    json.dumps(sr.to_dict())
    out = stability_region(E1024).plot(path=tmp_path / "s.png", others={"sarathi-1024": outer},
                                       simulated={"sarathi-1024": sr})
    assert (tmp_path / "s.png").stat().st_size > 1000


@pytest.mark.parametrize("rate", [10.0, 14.0])
def test_region_verdict_words_agree_with_the_number(rate):
    """The reason's 'load ... relative to that region's boundary' says inside iff it is below 1."""
    import re

    from fluidq import check_stability

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, k_max=100)
    w = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=100, output_tokens=100)
    for pol in ("sarathi", "orca"):
        v = check_stability(e, w, pol)
        m = re.search(r"load ([0-9.]+) relative to that (?:region's )?boundary", v.reason)
        assert m, v.reason
        there = float(m.group(1))
        head = v.reason.split(" relative to")[0]
        if there > 1:
            assert "outside" in head and "and inside the region of the batches" not in head, v.reason
        else:
            assert "inside the region of the batches" in head or "just inside" in head, v.reason
        if there > 1.0 + 0.02 + 1e-3:
            assert v.status.value == "unstable"
