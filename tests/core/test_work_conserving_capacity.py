"""Work-conserving schedulers serve ``b_max / t(b_max)``, not ``sup_b b/t(b)``.

Theorem 2 of Li, Dai, Peng (arXiv:2504.07347) is stated with ``b_max / t(b_max)``; under its Assumption 1
(``b0 | b_max``) that is also ``sup_b b/t(b)``.  When ``b/t(b)`` peaks at a smaller batch (a staircase whose
``b0`` does not divide ``b_max``, a piecewise-linear form), a work-conserving scheduler still fills its
batches to ``b_max`` under a backlog, so between the two rates it is unstable although a scheduler that
sized its batches could be stable.  Also: a KV cache smaller than every request, a batch-size limit that
does not lower the engine's capacity but does the policy's, and the saturation rate of schedulers that
are not work-conserving.
"""
from __future__ import annotations

import numpy as np
import pytest

import fluidq
from fluidq import Engine, PiecewiseLinear, Staircase
from fluidq.results import Status

B0_100 = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=100), b_max=512)


def W(rate, p=100, o=100):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=p, output_tokens=o)


def test_capacity_reports_both_rates():
    bt = B0_100.batch_time
    cap = fluidq.max_throughput(B0_100)
    assert cap.batch_tokens == 500 and cap.tokens_per_s == pytest.approx(500 / float(bt(500)))
    assert cap.work_conserving_tokens_per_s == pytest.approx(512 / float(bt(512)))
    assert cap.work_conserving_tokens_per_s < 0.9 * cap.tokens_per_s
    assert "work-conserving schedulers fill batches to 512" in cap.reason
    paper = fluidq.max_throughput(Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512))
    assert paper.work_conserving_tokens_per_s == paper.tokens_per_s  # b0 | b_max: one number (3342.909)


def test_sarathi_between_the_two_rates_is_unstable_and_simulation_agrees():
    cap = fluidq.max_throughput(B0_100)
    w = W(0.95 * cap.tokens_per_s / 200)  # 2518 tokens/s: below sup b/t(b), above b_max/t(b_max)
    r = fluidq.check_stability(B0_100, w, "sarathi")
    assert r.status == Status.UNSTABLE and r.load > 1
    assert r.capacity_tokens_per_s == pytest.approx(cap.work_conserving_tokens_per_s)
    assert "fills every batch to b_max" in r.reason
    low = fluidq.check_stability(B0_100, W(0.8 * cap.work_conserving_tokens_per_s / 200), "sarathi")
    assert low.status == Status.STABLE
    rep = fluidq.replicate(B0_100, w, "sarathi", n_replications=6, horizon_s=400.0, rng=3)
    predicted = w.token_rate_per_s - cap.work_conserving_tokens_per_s  # about 233 tokens/s
    assert rep.predicted_slope_tokens_per_s == pytest.approx(predicted)
    assert rep.verdict == "growing" and rep.slope_ci[0] <= predicted <= rep.slope_ci[1]


def test_piecewise_linear_verdict_uses_the_full_batch():
    e = Engine(batch_time=PiecewiseLinear(c=0.01128, a=0.0003, b0=128), b_max=512)
    full = 512 / float(e.batch_time(512))
    r = fluidq.check_stability(e, W(1.2 * full / 200), "sarathi")
    assert r.status == Status.UNSTABLE and r.capacity_tokens_per_s == pytest.approx(full)


def test_no_request_fits_the_kv_cache():
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, kv_capacity_tokens=199)
    cap = fluidq.max_throughput(e, W(0.05))
    assert cap.tokens_per_s == 0 and cap.requests_per_s == 0 and "no request fits the KV cache" in cap.reason
    r = fluidq.check_stability(e, W(0.05), "sarathi")
    assert r.status == Status.UNSTABLE and "no request fits" in r.reason


def test_k_max_that_does_not_lower_the_capacity_still_gets_the_policy_region():
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=128, k_max=100)
    w = W(2.03, 290, 990)
    assert fluidq.max_throughput(e, w).method == "closed_form"  # k_max does not bind for the engine
    r = fluidq.check_stability(e, w, "orca")
    assert r.status == Status.UNSTABLE and "outside the region of the batches orca forms" in r.reason


def test_n_engines_with_k_max_judge_each_engine_on_its_share():
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
    one = fluidq.check_stability(e, W(1.5, 290, 990), "sarathi")
    two = fluidq.check_stability(e, W(3.0, 290, 990), "sarathi", n_engines=2)
    assert two.status == one.status and two.load == pytest.approx(one.load)


def test_dtmc_above_the_policy_threshold_is_unstable_without_stationary_metrics():
    from fluidq.dtmc import build_dtmc
    from fluidq.workload import Geometric

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=64)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=30.0), prompt_tokens=16,
                        output_tokens=Geometric(mean_tokens=20))
    thr = fluidq.stability_threshold(e, w, "vllm").arrival_rate_per_s
    assert thr < 30.0 < fluidq.max_throughput(e, w).requests_per_s  # above vLLM's own threshold only
    res = build_dtmc(e, w, "vllm", max_prefill=20, max_decode=60).solve()
    assert res.status == Status.UNSTABLE and res.mean_requests is None and res.throughput_requests_per_s is None
    assert "what vllm serves under a backlog" in res.reason and res.lost_mass is not None


def test_fluid_prediction_of_a_policy_that_is_not_work_conserving_uses_its_threshold():
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = W(0.9 * 3342.90937581614 / 200)
    thr = fluidq.stability_threshold(e, w, "vllm").arrival_rate_per_s
    rep = fluidq.replicate(e, w, "vllm", n_replications=3, horizon_s=120.0, rng=5)
    assert rep.predicted_slope_tokens_per_s == pytest.approx(w.token_rate_per_s - thr * 200, rel=1e-9)
    assert rep.predicted_slope_tokens_per_s > 100  # was 0: the work-conserving bound


def test_network_station_serves_full_batches():
    from fluidq.network import Hop, Network, RequestClass, Station

    st = Station(name="E", engine=B0_100)
    assert st.capacity_tokens_per_s == pytest.approx(512 / float(B0_100.batch_time(512)))
    net = Network(stations=[st], classes=[RequestClass(name="c", rate_per_s=12.0, route=[
        Hop(engine="E", prompt_tokens=100, output_tokens=100)])])
    assert net.loads()["E"] == pytest.approx(12.0 * 200 / st.capacity_tokens_per_s)
    assert np.isclose(net.loads()["E"], 1.0504, atol=1e-3)


def test_every_face_uses_the_full_batch_rate_for_work_conserving_schedulers():
    from fluidq.fluid import backlog_slope

    cap = fluidq.max_throughput(B0_100)
    w = W(0.95 * cap.tokens_per_s / 200)
    full = cap.work_conserving_tokens_per_s
    th = fluidq.stability_threshold(B0_100, w, "sarathi")
    assert th.arrival_rate_per_s == pytest.approx(full / 200) and th.method == "closed_form"
    assert backlog_slope(B0_100, w) == pytest.approx(w.token_rate_per_s - full)  # was 0 (the sup)
    two = fluidq.max_throughput(B0_100, n_engines=2)
    assert two.work_conserving_tokens_per_s == pytest.approx(2 * full)
    assert f"{2 * full:,.4g}" in two.reason


def test_check_cli_header_load_does_not_depend_on_the_policies(capsys):
    from fluidq.cli import main

    outs = []
    for pol in ("sarathi", "vllm"):
        assert main(["check", "--b0", "100", "--b-max", "512", "--load", "0.9", "--policy", pol]) == 0
        outs.append(capsys.readouterr().out.splitlines()[0])
    assert outs[0] == outs[1] and "b_max/t(b_max)" in outs[0]
