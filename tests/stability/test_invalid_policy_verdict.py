"""A policy whose batches break (6a)-(6d)/k_max is not a valid policy: check_work_conserving says so
(work_conserving False, with the state and the batch), check_stability refuses it with a PolicyError --
never "work-conserving" and STABLE (rev-bad W1)."""
from __future__ import annotations

import pytest

from fluidq import Engine, Poisson, Staircase, check_stability, check_work_conserving
from fluidq.kernel.step import PolicyError
from fluidq.policies import Batch
from fluidq.workload import Workload

ENG = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
WL = Workload(arrival=Poisson(rate_per_s=5), prompt_tokens=100, output_tokens=100)


class Over:
    """Prefills every whole prompt, beyond b_max (6d)."""
    name = "over"

    def select(self, v):
        dec = tuple(r.rid for r in v.requests if not r.in_prefill and r.decode_left > 0)
        return Batch(prefill=tuple((r.rid, r.prefill_left) for r in v.requests if r.in_prefill), decode=dec)


class DecodePrefilling:
    """Gives a decode token to requests still in prefill (6a)."""
    name = "decode-prefilling"

    def select(self, v):
        return Batch(decode=tuple(r.rid for r in v.requests if r.demand > 0)[:v.b_max])


@pytest.mark.parametrize("policy,rule", [(Over(), "(6d)"), (DecodePrefilling(), "(6a)")])
def test_work_conservation_search_calls_it_invalid(policy, rule):
    res = check_work_conserving(policy)
    assert res.work_conserving is False
    assert "not a valid policy" in res.reason and rule in res.reason
    assert res.invalid and rule in res.invalid[0] and res.counterexample is not None and res.batch is not None


@pytest.mark.parametrize("policy,rule", [(Over(), "(6d)"), (DecodePrefilling(), "(6a)")])
def test_stability_refuses_an_invalid_policy(policy, rule):
    with pytest.raises(PolicyError, match=rf"{policy.name!r}.*not a valid policy.*{rule[1:3]}"):
        check_stability(ENG, WL, policy)


def test_builtin_still_valid_and_work_conserving():
    res = check_work_conserving("sarathi")
    assert res.work_conserving and res.invalid == ()
