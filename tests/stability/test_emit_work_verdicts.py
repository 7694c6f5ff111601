"""Verdicts for an engine whose prefill emits the first output token (``prefill_emits_token=True``, vLLM):
a request of P prompt and D output tokens is P + D - 1 tokens of batch work.  Review of 2026-12-06: with
P=10, D=2 at 1.05x the (P + D) capacity, ``check_stability`` said "no scheduler is stable" and
``fluid_stability`` UNSTABLE, while ``replicate``'s growth CI was (-9.3, 16.8) tokens/s against a predicted 280."""
import pytest

import fluidq as fq
from fluidq import Status, fluid_stability
from fluidq.network import Hop, Network, RequestClass, Station

E0 = fq.Engine(batch_time=fq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
E = E0.with_(prefill_emits_token=True)
P, D = 10, 2
CAP = 512 / (0.01128 + 4 * 0.03547)  # b_max/t(b_max): 3,342.9 tokens/s of batch work
OLD = CAP / (P + D)  # req/s at the (P + D) count
NEW = CAP / (P + D - 1)  # req/s at the engine's work per request


def _w(rate):
    return fq.Workload(arrival=fq.Poisson(rate_per_s=rate), prompt_tokens=P, output_tokens=D)


def _net(engine, rate):
    return Network(stations=[Station(name="S", engine=engine)],
                   classes=[RequestClass(name="A", rate_per_s=rate,
                                         route=[Hop(engine="S", prompt_tokens=P, output_tokens=D)])])


def test_the_old_capacity_plus_five_percent_is_not_overload():
    r = fq.check_stability(E, _w(1.05 * OLD), "sarathi")
    assert r.status is Status.STABLE, r.reason
    assert r.load == pytest.approx(1.05 * (P + D - 1) / (P + D), rel=1e-12)  # 0.9625
    assert r.offered_tokens_per_s == pytest.approx(1.05 * OLD * (P + D - 1), rel=1e-12)
    # the paper's engine (every output token a decode iteration) at that rate stays unstable
    assert fq.check_stability(E0, _w(1.05 * OLD), "sarathi").status is Status.UNSTABLE
    f = fluid_stability(_net(E, 1.05 * OLD))
    assert f.status is Status.STABLE
    assert f.loads["S"] == pytest.approx(fluid_stability(_net(E0, 1.05 * OLD)).loads["S"] * (P + D - 1) / (P + D),
                                         rel=1e-12)
    rep = fq.replicate(E, _w(1.05 * OLD), "sarathi", n_replications=4, horizon_s=100.0, rng=1)
    assert rep.predicted_slope_tokens_per_s == 0.0
    assert rep.verdict == "bounded" and rep.slope_ci[0] <= 0 <= rep.slope_ci[1]


def test_the_new_capacity_plus_five_percent_is_overload_and_grows():
    r = fq.check_stability(E, _w(1.05 * NEW), "sarathi")
    assert r.status is Status.UNSTABLE and r.load == pytest.approx(1.05, rel=1e-12)
    f = fluid_stability(_net(E, 1.05 * NEW))
    assert f.status is Status.UNSTABLE and f.loads["S"] == pytest.approx(1.05, rel=1e-12)
    rep = fq.replicate(E, _w(1.05 * NEW), "sarathi", n_replications=4, horizon_s=100.0, rng=1)
    assert rep.predicted_slope_tokens_per_s == pytest.approx(0.05 * CAP, rel=1e-9)  # 167 tokens/s of work
    assert rep.verdict == "growing" and rep.slope_ci[0] > 0.5 * rep.predicted_slope_tokens_per_s


def test_backlog_slope_counts_the_work():
    from fluidq.stability.fluid import backlog_slope

    assert backlog_slope(E, _w(1.05 * OLD)) == 0.0
    assert backlog_slope(E, _w(1.05 * NEW)) == pytest.approx(0.05 * CAP, rel=1e-9)
    assert backlog_slope(E0, _w(1.05 * OLD)) == pytest.approx(0.05 * CAP, rel=1e-9)


def test_the_threshold_divides_by_the_work_and_the_chains_refuse_the_engine():
    t = fq.stability_threshold(E, _w(1.0), "sarathi")
    assert t.arrival_rate_per_s == pytest.approx(NEW, rel=1e-12)
    assert fq.stability_threshold(E0, _w(1.0), "sarathi").arrival_rate_per_s == pytest.approx(OLD, rel=1e-12)
    with pytest.raises(fq.errors.ParameterError, match="prefill_emits_token"):
        fq.build_dtmc(E, fq.Workload(arrival=fq.Poisson(rate_per_s=1.0), prompt_tokens=fq.Geometric(mean_tokens=10),
                                     output_tokens=fq.Geometric(mean_tokens=2)), "sarathi")
