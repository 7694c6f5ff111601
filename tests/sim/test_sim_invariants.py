"""Invariants of every run: conservation, batch constraints, work conservation, Little's law, seeds."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluidq import Engine, Geometric, Poisson, Staircase, Workload
from fluidq.policies import POLICY_NAMES, resolve_policy
from fluidq.sim import replicate, simulate


def engine(b_max=64, k_max=None):
    return Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=b_max, k_max=k_max)


def workload(rate, mp=20.0, md=15.0):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=mp),
                    output_tokens=Geometric(mean_tokens=md))


common = {"name": st.sampled_from(POLICY_NAMES), "b_max": st.integers(8, 128),
              "k_max": st.one_of(st.none(), st.integers(1, 20)), "rate": st.floats(0.5, 20.0),
              "seed": st.integers(0, 2**31), "method": st.sampled_from(["fast", "generic"])}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**common)
def test_token_conservation(name, b_max, k_max, rate, seed, method):
    """Tokens served = tokens of finished requests + progress of the unfinished; backlog = the rest."""
    r = simulate(engine(b_max, k_max), workload(rate), name, horizon_s=10, rng=seed, method=method,
                 record_iterations=True)
    q = r.requests
    total = int(q["prompt_tokens"].sum() + q["output_tokens"].sum())
    assert r.tokens_served + int(r.backlog["tokens"][-1]) == total
    it = r.iterations
    assert int(it["prefill_tokens"].sum() + it["decode_tokens"].sum()) == r.tokens_served
    done = np.isfinite(q["finish_s"])
    assert r.backlog["requests"][-1] == q["arrival_s"].size - done.sum()
    assert r.tokens_served >= int(q["prompt_tokens"][done].sum() + q["output_tokens"][done].sum())
    # event order per request
    for a, b in (("arrival_s", "first_scheduled_s"), ("first_scheduled_s", "prefill_done_s"),
                 ("prefill_done_s", "first_token_s"), ("first_token_s", "finish_s")):
        ok = np.isfinite(q[b])
        assert np.all(q[a][ok] <= q[b][ok]), (a, b)
        assert np.all(np.isfinite(q[a][ok]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**common)
def test_batches_respect_constraints_and_budgets(name, b_max, k_max, rate, seed, method):
    kw = {"horizon_s": 8, "rng": seed, "record_iterations": True}
    if method == "generic":
        kw["check_batches"] = True  # raises PolicyError on any (6a)-(6d)/k_max violation
    r = simulate(engine(b_max, k_max), workload(rate), name, method=method, **kw)
    it = r.iterations
    tokens = it["prefill_tokens"] + it["decode_tokens"]
    assert np.all(tokens <= b_max) and np.all(tokens >= 1)
    if k_max is not None:
        assert np.all(it["requests"] <= k_max)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["sarathi", "orca", "vllm-chunked"]), b_max=st.integers(8, 128),
       rate=st.floats(1.0, 25.0), seed=st.integers(0, 2**31))
def test_work_conserving_never_leaves_budget_unused(name, b_max, rate, seed):
    r = simulate(engine(b_max), workload(rate), name, horizon_s=8, rng=seed, record_iterations=True)
    it = r.iterations
    tokens = it["prefill_tokens"] + it["decode_tokens"]
    np.testing.assert_array_equal(tokens, np.minimum(b_max, it["demand"]))


@pytest.mark.parametrize("name", ["fastertransformer", "vllm"])
def test_non_work_conserving_do_leave_budget_unused(name):
    r = simulate(engine(64), workload(12.0), name, horizon_s=30, rng=4, record_iterations=True)
    it = r.iterations
    tokens = it["prefill_tokens"] + it["decode_tokens"]
    assert np.any(tokens < np.minimum(64, it["demand"]))


@pytest.mark.parametrize("method", ["fast", "generic"])
def test_identical_seeds_identical_results(method):
    w = workload(8.0)
    a = simulate(engine(), w, "orca", horizon_s=20, rng=np.random.SeedSequence(7), method=method)
    b = simulate(engine(), w, "orca", horizon_s=20, rng=np.random.SeedSequence(7), method=method)
    c = simulate(engine(), w, "orca", horizon_s=20, rng=np.random.SeedSequence(8), method=method)
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k])
    np.testing.assert_array_equal(a.backlog["tokens"], b.backlog["tokens"])
    assert a.requests["arrival_s"].size != c.requests["arrival_s"].size or \
        not np.array_equal(a.requests["arrival_s"], c.requests["arrival_s"])


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_littles_law_exact_on_drained_runs(name):
    """Run until empty: the area under n(t) equals the summed sojourn times (sample-path Little)."""
    pol = resolve_policy(name)
    if not pol.chunked:  # geometric prompts exceed b_max now and then: let them be chunked
        pol = pol.with_(chunk_long_prompts=True)
    r = simulate(engine(), workload(6.0), pol, n_requests=400, rng=2)
    q = r.requests
    assert np.all(np.isfinite(q["finish_s"]))
    t = r.backlog["t_s"]
    area = float(np.sum(r.backlog["requests"][:-1] * np.diff(t)))
    assert area == pytest.approx(float(np.sum(q["finish_s"] - q["arrival_s"])), rel=1e-9)


def test_littles_law_within_ci_over_replications():
    """L = lambda W: the CI of L - lambda*W over replications contains 0 (stable Sarathi, 70 % load)."""
    from scipy import stats

    e = engine()
    w = workload(1.0)
    lam = 0.7 * (64 / e.batch_time(64)) / w.mean_tokens
    w = w.with_rate(lam)
    diffs = []
    for child in np.random.SeedSequence(3).spawn(10):
        r = simulate(e, w, "sarathi", horizon_s=400, rng=child, warmup_s=50)
        q = r.requests
        keep = (q["arrival_s"] >= 50) & (q["arrival_s"] <= 350)
        W = float(np.nanmean((q["finish_s"] - q["arrival_s"])[keep]))
        L = r.time_average("requests", start_s=50)
        diffs.append(L / (lam * W) - 1)
    d = np.asarray(diffs)
    h = stats.t.ppf(0.995, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    assert abs(d.mean()) <= h + 1e-12, (d.mean(), h)


def test_replicate_is_reproducible_and_validates():
    from fluidq.errors import ParameterError

    e, w = engine(), workload(5.0)
    a = replicate(e, w, "sarathi", n_replications=3, horizon_s=20, rng=1)
    b = replicate(e, w, "sarathi", n_replications=3, horizon_s=20, rng=1)
    np.testing.assert_array_equal(a.slopes_tokens_per_s, b.slopes_tokens_per_s)
    assert len(a.runs) == 3 and a.plot() is not None
    c = replicate(e, w, "sarathi", n_replications=3, horizon_s=20, rng=2)
    assert not np.array_equal(a.slopes_tokens_per_s, c.slopes_tokens_per_s)
    assert a.to_dict()["verdict"] in ("growing", "bounded", "inconclusive")
    with pytest.raises(ParameterError, match="n_replications"):
        replicate(e, w, "sarathi", n_replications=1)
    with pytest.raises(ParameterError, match="confidence"):
        replicate(e, w, "sarathi", confidence=1.5)
