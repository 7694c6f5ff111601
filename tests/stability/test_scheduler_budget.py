"""A scheduler's own budget below the engine's caps every batch it forms (Scheduler.budgets), so the
single-engine verdict is about batches of that budget; a k_max the smaller budget keeps from binding
changes nothing (issue 13, verdicts near a boundary)."""
from __future__ import annotations

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.policies import resolve_policy
from fluidq.results import Status
from fluidq.stability import effective_engine, saturated_rate

E = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
W = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=10, output_tokens=500)
SMALL = resolve_policy("sarathi").with_(b_max=64)


def test_a_scheduler_budget_below_the_engine_is_the_capacity():
    # 2,550 tokens/s offered; batches of at most 64 tokens serve 64/t(64) = 1,369 tokens/s (was "stable"
    # against the engine's 3,343)
    r = fluidq.check_stability(E, W, SMALL)
    ref = fluidq.check_stability(E.with_(b_max=64), W, "sarathi")
    assert r.status == Status.UNSTABLE and (r.load, r.capacity_tokens_per_s) == (ref.load, ref.capacity_tokens_per_s)
    assert "the scheduler's own budget b_max=64" in r.reason
    assert saturated_rate(E, W, SMALL) == saturated_rate(E.with_(b_max=64), W, "sarathi")
    assert fluidq.check_stability(E, W.with_rate(1.0), SMALL).status == Status.STABLE


def test_an_engine_k_max_the_scheduler_budget_keeps_from_binding_changes_nothing():
    assert effective_engine(E.with_(k_max=100), SMALL) == E.with_(b_max=64)
    for rate in (1.0, 3.0):
        w = W.with_rate(rate)
        a, b = fluidq.check_stability(E, w, SMALL), fluidq.check_stability(E.with_(k_max=100), w, SMALL)
        assert (b.status, b.method, b.reason) == (a.status, a.method, a.reason)


def test_a_scheduler_k_max_is_the_batch_size_limit():
    pol = resolve_policy("sarathi").with_(k_max=100)
    assert effective_engine(E, pol).k_max == 100
    assert effective_engine(E.with_(k_max=50), pol).k_max == 50
