"""fluidq.testing.check_policy: built-ins pass, broken policies are caught with a reason."""
import pytest
from hypothesis import given, settings

from fluidq.policies import (
    POLICY_NAMES,
    Batch,
    Sarathi,
    batch_violations,
)
from fluidq.testing import check_policy
from fluidq.testing.strategies import engines, queue_views, schedulers, workloads


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_builtins_pass(name):
    res = check_policy(name, n_states=150)
    assert res.ok, res.problems
    assert res.simulated and res.states_checked == 150
    assert res.work_conserving is (name in ("orca", "sarathi", "vllm-chunked"))
    res.raise_if_failed()
    assert res.to_dict()["ok"] is True


class Greedy:
    """Puts every decoding request and every prompt in the batch: breaks (6d)."""
    name = "greedy"

    def select(self, view):
        return Batch(prefill=tuple((r.rid, r.prefill_left) for r in view.requests if r.in_prefill),
                     decode=tuple(r.rid for r in view.requests if not r.in_prefill and r.decode_left > 0))


class Mutator:
    name = "mutator"

    def select(self, view):
        for r in view.requests:
            r.score = 1.0
        return Sarathi().select(view)


class Flaky:
    name = "flaky"
    n = 0

    def select(self, view):
        self.n += 1
        b = Sarathi().select(view)
        return b if self.n % 2 else Batch(decode=b.decode)


@pytest.mark.parametrize("pol, words", [(Greedy(), "b_max"), (Mutator(), "modified"), (Flaky(), "deterministic")])
def test_broken_policies_are_caught(pol, words):
    res = check_policy(pol, n_states=200)
    assert not res.ok
    assert any(words in p for p in res.problems), res.problems
    with pytest.raises(AssertionError, match=pol.name):
        res.raise_if_failed()


def test_a_user_policy_that_conforms_runs_everywhere():
    class DecodeOnlyWhenBusy:
        name = "my-policy"

        def select(self, view):
            return Sarathi().select(view)

    res = check_policy(DecodeOnlyWhenBusy(), n_states=80)
    assert res.ok and res.work_conserving


@settings(max_examples=80, deadline=None)
@given(view=queue_views(), sched=schedulers())
def test_strategies_feed_the_batch_formers(view, sched):
    assert batch_violations(sched.select(view), view) == []


@settings(max_examples=10, deadline=None)
@given(e=engines(), w=workloads())
def test_engine_and_workload_strategies_build_valid_objects(e, w):
    assert e.b_max % e.batch_time.b0 == 0 and w.mean_tokens >= 2
