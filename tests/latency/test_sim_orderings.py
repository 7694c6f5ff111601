"""Orderings inside the simulator: memory, MEMGUARD's preemption bound, starvation, throughput at 0.95."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fluidq
from fluidq.latency import POLICY_KEYS, standard_policies
from fluidq.policies.latency import PARS, SRPT, GammaBoost, MemGuard
from fluidq.policies.unified import UniBoost, Unified
from fluidq.sim import replicate

STAIR = fluidq.Staircase(c=0.01128, a=0.03547, b0=128)


def _requests(seed, n=200, rate=3.0, max_out=1500):
    g = np.random.default_rng(seed)
    a = np.cumsum(g.exponential(1 / rate, n))
    p = g.integers(10, 300, n)
    d = np.clip(np.round(g.lognormal(4.5, 1.0, n)), 1, max_out).astype(np.int64)
    return {"arrival_s": a, "prompt_tokens": p, "output_tokens": d}


@pytest.mark.parametrize("key", ["fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost", "uniboost-nomemguard"])
def test_no_batch_exceeds_kv_capacity_under_any_ordering(key):
    eng = fluidq.Engine(batch_time=STAIR, b_max=256, kv_capacity_tokens=3000)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=3.0), prompt_tokens=100, output_tokens=100)
    pol = standard_policies(eng, w, keys=[key])[key]
    r = fluidq.simulate(eng, _requests(1, n=120), pol, n_requests=120, record_iterations=True)
    assert r.n_finished == 120
    assert r.iterations["kv_used"].max() <= 3000
    assert r.peak_kv_tokens <= 3000


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([16, 32, 64]), st.integers(2500, 6000))
def test_memguard_bounds_preemptions_per_request_in_the_simulator(seed, k, kv):
    eng = fluidq.Engine(batch_time=STAIR, b_max=256, kv_capacity_tokens=kv)
    reqs = _requests(seed, n=120)
    pol = UniBoost(gamma_per_s=1.0, k_tokens=k)
    r = fluidq.simulate(eng, reqs, pol, n_requests=120)
    L = r.requests["prompt_tokens"] + r.requests["output_tokens"]
    bound = np.where(L >= k, np.floor(np.log2(L / k)) + 1, 0)
    assert np.all(r.requests["preemptions"] <= bound)
    assert r.n_finished == 120


def test_without_memguard_the_log_bound_is_not_automatic():
    """The bound is MEMGUARD's doing: the same former without the guard breaks it on some request."""
    eng = fluidq.Engine(batch_time=STAIR, b_max=256, kv_capacity_tokens=2500)
    over = {True: 0, False: 0}
    for seed in range(3):
        reqs = _requests(seed, n=150)
        for mg in (True, False):
            r = fluidq.simulate(eng, reqs, UniBoost(gamma_per_s=1.0, memguard=mg), n_requests=150)
            L = r.requests["prompt_tokens"] + r.requests["output_tokens"]
            bound = np.where(L >= 32, np.floor(np.log2(L / 32)) + 1, 0)
            over[mg] += int(np.sum(r.requests["preemptions"] > bound))
    assert over[True] == 0
    assert over[False] > 0


class _TopRecorder:
    """Wraps a scheduler; records at every batch the top of its ordering among requests in prefill and
    whether that request got prefill tokens in the batch."""

    def __init__(self, inner):
        self.inner, self.name, self.tops = inner, inner.name, []

    def select(self, view):
        waiting = [r for r in self.inner.order.order(view.requests, view.now_s) if r.prefilled < r.prompt_tokens]
        batch = self.inner.select(view)
        if waiting:
            self.tops.append((view.now_s, waiting[0].rid, any(rid == waiting[0].rid for rid, _ in batch.prefill)))
        return batch


def _starvation_run(threshold_s, seed, n=4000):
    """Short prompts (low scores) at 85 % of the prefill capacity, rarer long ones (high scores)."""
    g = np.random.default_rng(seed)
    eng = fluidq.Engine(batch_time=fluidq.Affine(c=0.01, a=0.0001), b_max=64)
    tb = float(eng.batch_time(64))
    cap = 64 / tb
    lam_s, lam_l = 0.85 * cap / 31, 0.10 * cap / 61
    a = np.cumsum(g.exponential(1 / (lam_s + lam_l), n))
    long_ = g.random(n) < lam_l / (lam_s + lam_l)
    p = np.where(long_, 60, 30)
    scores = np.where(long_, 10.0, 0.0) + g.uniform(0, 1, n)
    pol = _TopRecorder(fluidq.Sarathi(order=PARS(threshold_s=threshold_s, scores=scores)))
    r = fluidq.simulate(eng, {"arrival_s": a, "prompt_tokens": p, "output_tokens": np.ones(n, np.int64)}, pol,
                        n_requests=n)
    return r, pol.tops, a, long_, tb


@pytest.mark.parametrize("seed", [0, 1])
def test_aging_bounds_the_wait_by_threshold_plus_one_service_time(seed):
    thr = 0.1
    r, tops, a, long_, tb = _starvation_run(thr, seed)
    fs = r.requests["first_scheduled_s"]
    assert np.all(np.isfinite(fs))
    # (1) once a request is top of the ordering it is served in that very batch (within one service
    #     time: every prompt here fits one batch next to the few decode tokens)
    assert tops and all(served for _, _, served in tops)
    # (2) so the wait is at most the threshold, one batch to reach the next iteration, and one service
    #     time for each older request that had aged before it and was still waiting (FCFS among aged)
    promo = a + thr
    for i in np.flatnonzero(fs - a > thr + tb):
        ahead = int(np.sum((a[:i] < a[i]) & (fs[:i] > promo[i])))
        assert fs[i] - a[i] <= thr + tb + (ahead + 1) * tb + 1e-9, (i, fs[i] - a[i], ahead)
    # without aging the long requests wait far longer than with it
    r0, _, _, _, _ = _starvation_run(None, seed)
    w_age = (fs - a)[long_].max()
    w_none = (r0.requests["first_scheduled_s"] - a)[long_].max()
    assert w_none > 3 * w_age


def test_gamma_boost_and_pars_run_on_any_work_conserving_former():
    eng = fluidq.Engine(batch_time=STAIR, b_max=256)
    reqs = _requests(3, n=100)
    scores = np.log(reqs["output_tokens"])
    for pol in (fluidq.Sarathi(order=PARS(scores=scores)), fluidq.Orca(order=PARS(scores=scores)),
                fluidq.VLLMChunked(order=GammaBoost()), Unified(order=SRPT()), fluidq.Orca(order=MemGuard())):
        r = fluidq.simulate(eng, reqs, pol, n_requests=100)
        assert r.n_finished == 100


def _throughput_check(keys, n_replications, horizon_s):
    eng = fluidq.Engine(batch_time=STAIR, b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=fluidq.Geometric(mean_tokens=100),
                        output_tokens=fluidq.Geometric(mean_tokens=100))
    lam = fluidq.max_throughput(eng, w).requests_per_s
    pols = standard_policies(eng, w, keys=keys)
    for k, pol in pols.items():
        res = replicate(eng, w.with_rate(0.95 * lam), pol, n_replications=n_replications, horizon_s=horizon_s,
                        rng=11, keep_runs=False)
        # stable: the backlog-slope interval reaches below the tolerance (not "growing")
        assert res.verdict != "growing", (k, res.slope_ci)
        assert res.slope_ci[0] < res.tolerance_tokens_per_s
        over = replicate(eng, w.with_rate(1.1 * lam), pol, n_replications=n_replications, horizon_s=horizon_s,
                         rng=11, keep_runs=False)
        assert over.verdict == "growing", (k, over.slope_ci)


def test_orderings_stay_stable_at_095_of_capacity_fast():
    _throughput_check(["fcfs", "sjf", "gamma-boost"], n_replications=3, horizon_s=120.0)


@pytest.mark.slow
def test_orderings_stay_stable_at_095_of_capacity_all():
    _throughput_check(list(POLICY_KEYS), n_replications=6, horizon_s=400.0)
