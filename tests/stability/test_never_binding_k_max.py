"""A k_max that can never bind (at or above the most requests a batch holds: b_max, the scheduler's own
budget, the KV cache) changes no verdict anywhere (issue 13): single-engine check, capacity, region,
fluid slope, the rate a simulation verdict compares with, network verdicts and network simulation."""
from __future__ import annotations

import numpy as np
import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.fluid.stability import backlog_slope
from fluidq.network import Network, Station, check_network_stability
from fluidq.network.examples import llm_rybko_stolyar
from fluidq.policies import resolve_policy
from fluidq.stability import saturated_rate

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)
E = Engine(batch_time=PAPER, b_max=512)
W = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
LAM = fluidq.max_throughput(E, W).requests_per_s


@pytest.mark.parametrize("k_max", [512, 10 ** 6])
@pytest.mark.parametrize("policy", ["sarathi", "orca", "vllm", "fastertransformer", "vllm-chunked"])
def test_single_engine_verdicts_and_capacities_are_unchanged(k_max, policy):
    ek = E.with_(k_max=k_max)
    for load in (0.5, 0.97, 1.0, 1.05, 1.5):
        w = W.with_rate(load * LAM)
        a, b = fluidq.check_stability(E, w, policy), fluidq.check_stability(ek, w, policy)
        assert (b.status, b.method, b.load, b.reason, b.threshold_requests_per_s) == \
            (a.status, a.method, a.load, a.reason, a.threshold_requests_per_s), (load, b.reason)
        ca, cb = fluidq.max_throughput(E, w), fluidq.max_throughput(ek, w)
        assert (cb.tokens_per_s, cb.method, cb.work_conserving_tokens_per_s) == \
            (ca.tokens_per_s, ca.method, ca.work_conserving_tokens_per_s)
        assert saturated_rate(ek, w, policy) == saturated_rate(E, w, policy)  # what replicate() compares with
        assert backlog_slope(ek, w) == backlog_slope(E, w)


def test_a_scheduler_k_max_above_its_budget_and_a_k_max_above_the_kv_cache_change_nothing():
    w = W.with_rate(0.9 * LAM)
    small = resolve_policy("sarathi").with_(b_max=256)
    assert fluidq.check_stability(E, w, small.with_(k_max=256)).reason == fluidq.check_stability(E, w, small).reason
    kv = E.with_(kv_capacity_tokens=300)
    a, b = fluidq.check_stability(kv, w, "sarathi"), fluidq.check_stability(kv.with_(k_max=300), w, "sarathi")
    assert (b.status, b.method, b.reason) == (a.status, a.method, a.reason)


def test_the_region_is_unchanged():
    r0, r1 = fluidq.stability_region(E), fluidq.stability_region(E.with_(k_max=512))
    assert np.allclose(r0.vertices, r1.vertices) and r0.capacity_tokens_per_s == r1.capacity_tokens_per_s


def test_a_scheduler_k_max_at_b_max_changes_no_network_verdict_nor_simulation():
    net = llm_rybko_stolyar(rate_per_s=1.05 * 768 / 1088)
    pk = Network(stations=[Station(name=s.name, engine=s.engine, policy=resolve_policy("sarathi").with_(k_max=768),
                                   priority=s.priority) for s in net.stations], classes=net.classes)
    a = check_network_stability(net, simulate=True, horizon_s=1000.0, replications=2, rng=2)
    b = check_network_stability(pk, simulate=True, horizon_s=1000.0, replications=2, rng=2)
    assert (b.status, b.decided_by) == (a.status, a.decided_by) == (fluidq.Status.UNSTABLE, "fluid:diverging_path")
    assert b.simulation["per_run"] == a.simulation["per_run"]


def test_stability_threshold_is_unchanged():
    a = fluidq.stability_threshold(E, W, "sarathi")
    b = fluidq.stability_threshold(E.with_(k_max=512), W, "sarathi", rng=1)
    assert (b.method, b.arrival_rate_per_s) == (a.method, a.arrival_rate_per_s)


def test_stability_threshold_with_a_never_binding_scheduler_k_max_is_unchanged():
    a = fluidq.stability_threshold(E, W, "sarathi")
    b = fluidq.stability_threshold(E, W, resolve_policy("sarathi").with_(k_max=10_000))
    assert (b.method, b.arrival_rate_per_s) == (a.method, a.arrival_rate_per_s)
