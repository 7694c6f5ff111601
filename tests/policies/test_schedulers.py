"""Batch formers: work conservation by search, constraints, budgets, names."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidq import check_work_conserving
from fluidq.errors import ParameterError, UnknownNameError
from fluidq.policies import (POLICY_NAMES, QueueView, RequestState, Sarathi, Scheduler, VLLM, batch_violations,
                             resolve_policy)


@pytest.mark.parametrize("name", ["fastertransformer", "vllm"])
def test_non_work_conserving_have_counterexamples(name):
    res = check_work_conserving(name)
    assert res.work_conserving is False
    view, batch = res.counterexample, res.batch
    assert batch.tokens < min(view.b_max, view.demand)
    assert name in res.reason
    assert res.to_dict()["counterexample"]["batch"] is not None


@pytest.mark.parametrize("name", ["orca", "sarathi", "vllm-chunked"])
def test_work_conserving_find_none(name):
    res = check_work_conserving(name)
    assert res.work_conserving is True and res.counterexample is None
    assert res.states_checked > 1000
    assert res.invalid == ()


def test_user_policy_that_idles_is_caught():
    class Lazy:
        name = "lazy"

        def select(self, view):
            return Sarathi().select(QueueView(requests=view.requests[:1], now_s=view.now_s, b_max=view.b_max))

    res = check_work_conserving(Lazy())
    assert not res.work_conserving and res.policy == "lazy"


def test_unknown_policy_name():
    with pytest.raises(UnknownNameError) as e:
        resolve_policy("fifo-magic")
    assert "fifo-magic" in str(e.value) and "sarathi" in str(e.value)
    assert isinstance(e.value, KeyError)
    with pytest.raises(ParameterError):
        resolve_policy(42)


def test_aliases_resolve():
    assert resolve_policy("FT").name == "fastertransformer"
    assert resolve_policy("Sarathi-Serve").name == "sarathi"


def test_bad_scheduler_arguments():
    with pytest.raises(ParameterError, match="priority"):
        Scheduler(name="x", priority="middle", mixed=True, chunked=True)
    with pytest.raises(ParameterError, match="k_max"):
        Sarathi(k_max=0)


def test_prompt_longer_than_budget_is_reported_not_hung():
    r = RequestState(rid=0, arrival_s=0.0, prompt_tokens=10, output_tokens=1)
    view = QueueView(requests=(r,), now_s=0.0, b_max=4)
    b = VLLM().select(view)
    assert b.empty and b.blocked == (0,)
    b2 = VLLM(chunk_long_prompts=True).select(view)
    assert b2.prefill == ((0, 4),) and b2.blocked == ()


residents = st.lists(st.tuples(st.integers(1, 9), st.integers(0, 9), st.integers(1, 5), st.integers(0, 5)),
                     min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(residents, st.integers(1, 12), st.one_of(st.none(), st.integers(1, 5)), st.sampled_from(POLICY_NAMES))
def test_batches_respect_constraints(rs, b_max, k_max, name):
    reqs = []
    for i, (p, done, o, dec) in enumerate(rs):
        done = min(done, p)
        dec = min(dec, o - 1) if done == p else 0
        reqs.append(RequestState(rid=i, arrival_s=float(i), prompt_tokens=p, prefilled=done, output_tokens=o,
                                 decoded=dec))
    view = QueueView(requests=tuple(reqs), now_s=0.0, b_max=b_max, k_max=k_max)
    pol = resolve_policy(name)
    batch = pol.select(view)
    assert batch_violations(batch, view) == []
    if pol.mixed and pol.chunked and k_max is None:
        assert batch.tokens == min(b_max, view.demand)
