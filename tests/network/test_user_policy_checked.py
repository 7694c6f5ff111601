"""simulate_network checks the batches of a station's user policy by default, as fluidq.simulate does
(rev-bad W2: the reviewer's three invalid policies ran with violations ()); built-in schedulers stay unchecked
(and on the compiled loop)."""
from __future__ import annotations

import re

import pytest

import fluidq
from fluidq.errors import PolicyError
from fluidq import Engine, Staircase
from fluidq.network import Network
from fluidq.network.model import Hop, RequestClass, Station
from fluidq.policies import Batch

ENG = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)


class Bad:
    def __init__(self, mode):
        self.mode = mode
        self.name = f"bad-{mode}"

    def select(self, v):
        pre = tuple((r.rid, r.prefill_left) for r in v.requests if r.in_prefill)[:1]
        dec = tuple(r.rid for r in v.requests if not r.in_prefill and r.decode_left > 0)
        if self.mode == "over":
            pre = tuple((r.rid, r.prefill_left) for r in v.requests if r.in_prefill)
        if self.mode == "double":
            pre = tuple((rid, 2 * n) for rid, n in pre)
        if self.mode == "decode-prefilling":
            dec = tuple(r.rid for r in v.requests if r.decode_left > 0)
        return Batch(prefill=pre, decode=dec)


def _net(policy):
    return Network(stations=[Station(name="A", engine=ENG, policy=policy)],
                   classes=[RequestClass(name="x", rate_per_s=3.0,
                                         route=[Hop(engine="A", prompt_tokens=600, output_tokens=10)])])


@pytest.mark.parametrize("method", ["auto", "python"])
@pytest.mark.parametrize("mode,rule", [("over", "(6d)"), ("double", "(6b)"), ("decode-prefilling", "(6a)")])
def test_user_policy_violations_raise_by_default(mode, rule, method):
    """(2026-12-07: listed in ``violations`` before, and the run went on with the batch.)"""
    with pytest.raises(PolicyError, match=r"^station 'A': policy 'bad-" + mode + r"' at t=[0-9.]+ s: " +
                       re.escape(rule)):
        fluidq.simulate_network(_net(Bad(mode)), horizon_s=10.0, rng=0, method=method)


@pytest.mark.parametrize("method", ["auto", "python"])
def test_explicit_false_skips_only_the_budgets(method):
    res = fluidq.simulate_network(_net(Bad("over")), horizon_s=10.0, rng=0, check_batches=False, method=method)
    assert res.violations == () and sum(res.completed.values()) > 0
    with pytest.raises(PolicyError, match=r"\(6b\)"):  # (no engine can run it: refused with the check off too)
        fluidq.simulate_network(_net(Bad("double")), horizon_s=10.0, rng=0, check_batches=False, method=method)


def test_builtin_unchecked_by_default(monkeypatch):
    import fluidq.kernel.step as step

    calls = []
    real = step.batch_violations
    monkeypatch.setattr(step, "batch_violations", lambda b, v: calls.append(1) or real(b, v))
    res = fluidq.simulate_network(_net("sarathi"), horizon_s=10.0, rng=0, method="python")
    assert res.violations == () and calls == []
    with pytest.raises(PolicyError):
        fluidq.simulate_network(_net(Bad("over")), horizon_s=10.0, rng=0, method="python")
    assert calls  # (the spy sees a user policy's checks)
