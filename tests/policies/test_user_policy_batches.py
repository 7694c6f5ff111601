"""A user policy's batch, as ordinary Python writes it, never hangs a run and never gives a silent wrong answer
(rev-bad H2): generator expressions are read once into tuples, a batch of zero tokens is a PolicyError (check
on or off), and a policy that schedules nothing while work waits and nothing arrives later ends the run with a
PolicyError, not a spin."""
from __future__ import annotations

import contextlib
import signal

import pytest

import fluidq
from fluidq import Engine, Staircase
from fluidq.kernel.step import PolicyError
from fluidq.policies import Batch
from fluidq.workload import Poisson, Workload

ENG = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
WL = Workload(arrival=Poisson(rate_per_s=2.0), prompt_tokens=100, output_tokens=10)


@contextlib.contextmanager
def deadline(seconds=20):
    """Fail (instead of hanging the suite) if the block runs longer than ``seconds``: the generic loop is
    plain Python, so the alarm's exception interrupts it."""
    def boom(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: a hang")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True, scope="module")
def _kernel_ready():
    """Compile (or load from numba's cache) the select() kernel before any deadline starts: a first compile in a
    fresh worker takes ~12 CPU-s, and the alarm cannot interrupt compiled code anyway."""
    fluidq.simulate(ENG, WL, policy=Gen(), rng=0, n_requests=3)


def _pre_dec(view):
    pre = tuple((r.rid, r.prefill_left) for r in view.requests if r.in_prefill)[:1]
    dec = tuple(r.rid for r in view.requests if not r.in_prefill and r.decode_left > 0)
    return pre, dec


class Gen:
    name = "gen"

    def select(self, view):
        pre, dec = _pre_dec(view)
        return Batch(prefill=(x for x in pre), decode=(d for d in dec))


class DecodeFirst:  # the reviewer's hang_min.py
    name = "decode-first"

    def select(self, view):
        dec = tuple(r.rid for r in view.requests if not r.in_prefill and r.decode_left > 0)[:view.b_max]
        pre = [r for r in view.requests if r.in_prefill][:1] if not dec else []
        return Batch(prefill=((r.rid, min(r.prefill_left, view.b_max)) for r in pre), decode=dec)


class Zero:
    name = "zero"

    def select(self, view):
        pre, dec = _pre_dec(view)
        return Batch(prefill=tuple((rid, 0) for rid, _ in pre), decode=dec)


class Idle:
    name = "idle"

    def select(self, view):
        return Batch()


def test_batch_reads_iterables_into_tuples():
    b = Batch(prefill=((i, 3) for i in range(2)), decode=[5, 6], blocked=iter([7]))
    assert b.prefill == ((0, 3), (1, 3)) and b.decode == (5, 6) and b.blocked == (7,)
    assert b.tokens == 8 and b.tokens == 8  # read twice: the same
    assert Batch(prefill=(x for x in ())).empty
    t = ((1, 2),)
    assert Batch(prefill=t).prefill is t  # a tuple is kept as it is


@pytest.mark.parametrize("policy", [Gen(), DecodeFirst()])
@pytest.mark.parametrize("check", [True, False])
def test_generator_batches_run_like_tuples(policy, check):
    with deadline():
        res = fluidq.simulate(ENG, WL, policy=policy, horizon_s=20.0, rng=0, check_batches=check)
    assert res.tokens_served > 0
    done = res.requests["finish_s"] == res.requests["finish_s"]
    assert done.sum() > 0
    # every finished request was served its whole prompt and output
    assert res.tokens_served >= int((res.requests["prompt_tokens"][done] + res.requests["output_tokens"][done]).sum())


@pytest.mark.parametrize("method", ["auto", "generic"])  # the select() kernel (kernel/select.py) and EngineRun
@pytest.mark.parametrize("check", [True, False])
@pytest.mark.parametrize("kw", [dict(horizon_s=20.0), dict(n_requests=10)])
def test_zero_token_batch_is_a_policy_error(check, kw, method):
    with deadline(), pytest.raises(PolicyError, match="'zero'"):
        fluidq.simulate(ENG, WL, policy=Zero(), rng=0, check_batches=check, method=method, **kw)


@pytest.mark.parametrize("method", ["auto", "generic"])  # the select() kernel (kernel/select.py) and EngineRun
@pytest.mark.parametrize("check", [True, False])
def test_idle_policy_with_work_waiting_ends_with_an_error(check, method):
    with deadline(), pytest.raises(PolicyError, match="'idle'.*nothing") as err:
        fluidq.simulate(ENG, WL, policy=Idle(), rng=0, check_batches=check, n_requests=10, method=method)
    assert "10 requests wait with work left" in str(err.value)


class Returns:
    """A policy returning ``what(view)``: the reviewer's pol.py cases (rev-bad U2)."""

    def __init__(self, name, what):
        self.name, self.what = name, what

    def select(self, view):
        return self.what(view)


def _first_prefill(view):
    return next(r for r in view.requests if r.in_prefill)


BAD_RETURNS = [
    Returns("returns-none", lambda v: None),
    Returns("returns-list", lambda v: []),
    Returns("float-rid", lambda v: Batch(prefill=((float(_first_prefill(v).rid), 1),))),
    Returns("nan-tokens", lambda v: Batch(prefill=((_first_prefill(v).rid, float("nan")),))),
    Returns("float-tokens", lambda v: Batch(prefill=((_first_prefill(v).rid, 1.5),))),
    Returns("not-pairs", lambda v: Batch(prefill=(_first_prefill(v).rid,))),
]


@pytest.mark.parametrize("policy", BAD_RETURNS, ids=lambda p: p.name)
def test_simulate_names_the_policy_and_what_it_returned(policy):
    with deadline(), pytest.raises(PolicyError, match=repr(policy.name)):
        fluidq.simulate(ENG, WL, policy=policy, rng=0, n_requests=5)


@pytest.mark.parametrize("policy", BAD_RETURNS, ids=lambda p: p.name)
def test_check_stability_names_the_policy(policy):
    with deadline(), pytest.raises(PolicyError, match=repr(policy.name)):
        fluidq.check_stability(ENG, WL, policy)
