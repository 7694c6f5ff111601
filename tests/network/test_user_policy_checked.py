"""simulate_network checks the batches of a station's user policy by default, as fluidq.simulate does
(rev-bad W2: the reviewer's three invalid policies ran with violations ()); built-in schedulers stay unchecked
(and on the compiled loop)."""
from __future__ import annotations

import pytest

import fluidq
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


@pytest.mark.parametrize("mode,rule", [("over", "(6d)"), ("double", "(6b)"), ("decode-prefilling", "(6a)")])
def test_user_policy_violations_reported_by_default(mode, rule):
    res = fluidq.simulate_network(_net(Bad(mode)), horizon_s=10.0, rng=0)
    assert res.violations and any(rule in str(v) for v in res.violations)


def test_explicit_false_still_skips_the_check():
    res = fluidq.simulate_network(_net(Bad("over")), horizon_s=10.0, rng=0, check_batches=False)
    assert res.violations == ()


def test_builtin_unchecked_by_default(monkeypatch):
    import fluidq.kernel.step as step

    calls = []
    real = step.batch_violations
    monkeypatch.setattr(step, "batch_violations", lambda b, v: calls.append(1) or real(b, v))
    res = fluidq.simulate_network(_net("sarathi"), horizon_s=10.0, rng=0, method="python")
    assert res.violations == () and calls == []
    fluidq.simulate_network(_net(Bad("over")), horizon_s=10.0, rng=0, method="python")
    assert calls  # (the spy sees a user policy's checks)
