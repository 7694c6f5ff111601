"""Latency-aware orderings: b_gamma numerics, gamma limits, the M/M/1 identity, PARS, MEMGUARD, gamma-Ada."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fluidq
from fluidq.errors import FluidqError, ParameterError
from fluidq.policies.base import RequestState
from fluidq.policies.latency import (LAS, PARS, SJF, SRPT, GammaAda, GammaBoost, MemGuard, b_gamma,
                                     resolve_ordering, solve_gamma)
from fluidq.policies.unified import UniBoost, Unified


def R(rid, arrival, prompt=10, out=10, prefilled=0, decoded=0, score=None):
    return RequestState(rid=rid, arrival_s=float(arrival), prompt_tokens=prompt, output_tokens=out,
                        prefilled=prefilled, decoded=decoded, score=score)


# ----------------------------------------------------------------------------- b_gamma
def test_b_gamma_matches_the_definition_and_keeps_digits():
    g = 7.0
    for w in (1e-5, 1e-3, 0.05, 0.3, 2.0):
        exact = math.log(1.0 / (1.0 - math.exp(-g * w))) / g
        assert b_gamma(w, g) == pytest.approx(exact, rel=1e-12)
    # small work: b ~ -log(gamma w)/gamma; the naive 1 - e^{-x} form loses digits, expm1 does not
    w = 1e-5
    x = g * w
    series = (-math.log(x) + x / 2 - x * x / 24) / g   # -log(1 - e^{-x}) = -log x + x/2 - x^2/24 + ...
    assert b_gamma(w, g) == pytest.approx(series, rel=1e-12)
    # large work: b ~ e^{-x}/gamma, no catastrophic log(1 - tiny)
    assert b_gamma(5.0, g) == pytest.approx(math.exp(-35.0) / g, rel=1e-9)
    assert b_gamma(1e4, g) == 0.0


def test_b_gamma_is_capped_at_and_below_zero_work():
    cap = b_gamma(1e-6, 3.0)
    assert math.isfinite(cap)
    assert b_gamma(0.0, 3.0) == cap
    assert b_gamma(-1.0, 3.0) == cap
    arr = b_gamma(np.array([-1.0, 0.0, 1e-3, 1.0]), 3.0)
    assert arr[0] == arr[1] == cap and np.all(np.diff(arr) <= 0)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 1e3), st.floats(1e-6, 10.0), st.floats(1e-6, 10.0))
def test_b_gamma_is_non_increasing_in_work(g, w1, w2):
    lo, hi = min(w1, w2), max(w1, w2)
    assert b_gamma(lo, g) >= b_gamma(hi, g)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_gamma_must_be_positive_and_finite(bad):
    with pytest.raises(FluidqError):
        b_gamma(1.0, bad)
    with pytest.raises(FluidqError):
        GammaBoost(gamma_per_s=bad)


def _residents(rng, n=30):
    return [R(i, arrival=i * 0.01, prompt=int(rng.integers(1, 50)), out=int(rng.integers(1, 500)),
              prefilled=0, decoded=0) for i in range(n)]


def test_large_gamma_is_fcfs_order():
    rng = np.random.default_rng(0)
    rs = _residents(rng)
    for r in rs:                                   # give them different attained work
        r.prefilled = r.prompt_tokens
        r.decoded = int(rng.integers(0, r.output_tokens))
    got = [r.rid for r in GammaBoost(gamma_per_s=1e6).order(rs, 1.0)]
    assert got == sorted(got, key=lambda i: rs[i].arrival_s)


def test_small_gamma_is_las_order():
    rng = np.random.default_rng(1)
    rs = _residents(rng)
    for r in rs:
        r.prefilled = r.prompt_tokens
        r.decoded = int(rng.integers(0, r.output_tokens))
    gb = GammaBoost(gamma_per_s=1e-4, effective_work=False)
    works = [gb.work_tokens(r) for r in gb.order(rs, 1.0)]
    assert works == sorted(works)
    # and a short job with the same arrival beats a long one for any gamma
    a, b = R(0, 0.0, prefilled=10, decoded=1), R(1, 0.0, prefilled=10, decoded=9)
    for g in (0.1, 10.0, 1000.0):
        assert GammaBoost(gamma_per_s=g).order([b, a], 0.0)[0].rid == 0


# ----------------------------------------------------------------------------- M/G/1 gamma
@pytest.mark.parametrize("lam,mu", [(0.5, 1.0), (3.0, 4.0), (0.1, 10.0), (9.5, 10.0)])
def test_mm1_identity_gamma_is_mu_minus_lambda(lam, mu):
    g = solve_gamma(lam, lambda x: mu / (mu - x) if x < mu else math.inf)
    assert g == pytest.approx(mu - lam, rel=1e-8)


def test_gamma_from_samples_matches_the_mgf():
    rng = np.random.default_rng(0)
    mu, lam = 2.0, 1.2
    s = rng.exponential(1 / mu, 200_000)
    g = solve_gamma(lam, s)
    # samples truncate the MGF's pole: the root is close to mu - lambda for a light load of the tail
    assert g == pytest.approx(mu - lam, rel=0.05)
    det = solve_gamma(0.5, np.full(10, 1.0))            # M/D/1: gamma = 0.5 (e^gamma - 1)
    assert det == pytest.approx(0.5 * math.expm1(det), rel=1e-9)
    with pytest.raises(ParameterError, match="load"):
        solve_gamma(1.0, np.full(10, 1.0))


# ----------------------------------------------------------------------------- oracles, PARS
def test_oracle_orderings():
    rs = [R(0, 0.0, out=50), R(1, 1.0, out=5, prefilled=3), R(2, 2.0, out=20, prefilled=10, decoded=15)]
    assert [r.rid for r in SJF().order(rs, 3.0)] == [1, 2, 0]
    assert [r.rid for r in SRPT().order(rs, 3.0)] == [2, 1, 0]     # remaining 5+0, 7+5, 10+50
    assert [r.rid for r in LAS().order(rs, 3.0)] == [0, 1, 2]
    assert SJF().static and not SRPT().static and not LAS().static
    # LAS counts prefill tokens as attained service: 10 prefilled outranks 2 decoded (decoded alone says 0 < 2)
    rs = [R(0, 0.0, prefilled=10), R(1, 1.0, prefilled=0, decoded=2)]
    assert [r.rid for r in LAS().order(rs, 2.0)] == [1, 0]


_state = st.builds(lambda rid, arr, p, o, pf, dc: R(rid, arr, prompt=p, out=o, prefilled=min(pf, p),
                                                      decoded=min(dc, o)),
                   st.integers(0, 5), st.sampled_from([0.0, 1.0, 2.0]), st.integers(1, 30), st.integers(1, 30),
                   st.integers(0, 30), st.integers(0, 30))


@settings(max_examples=200, deadline=None)
@given(st.lists(_state, min_size=1, max_size=8))
def test_fast_orders_agree_with_their_keys(rs):
    # order() of SJF / SRPT / LAS is written out for speed; it must sort as key() then arrival, id does
    for pol in (SJF(), SRPT(), LAS()):
        want = sorted(rs, key=lambda r: (pol.key(r, 3.0), r.arrival_s, r.rid))
        got = pol.order(list(rs), 3.0)
        assert [(pol.key(r, 3.0), r.arrival_s, r.rid) for r in got] == \
            [(pol.key(r, 3.0), r.arrival_s, r.rid) for r in want], pol.name


def test_pars_sorts_by_score_and_ages():
    rs = [R(0, 0.0, score=5.0), R(1, 50.0, score=1.0), R(2, 60.0, score=3.0)]
    p = PARS(threshold_s=120.0)
    assert [r.rid for r in p.order(rs, 100.0)] == [1, 2, 0]
    assert [r.rid for r in p.order(rs, 125.0)] == [0, 1, 2]        # request 0 waited >= 120 s
    assert [r.rid for r in p.order(rs, 200.0)] == [0, 1, 2]        # all aged: arrival order
    assert PARS(threshold_s=None).static and not p.static
    with pytest.raises(ParameterError, match="score"):
        p.order([R(0, 0.0)], 0.0)
    assert [r.rid for r in PARS(missing_score="last").order([R(0, 0.0), R(1, 1.0, score=9.0)], 2.0)] == [1, 0]
    with pytest.raises(ParameterError):
        PARS(threshold_s=0.0)


def test_pars_idle_steps_rule():
    p = PARS(threshold_s=None, idle_steps=3)
    hi, lo = R(0, 0.0, score=9.0), R(1, 0.0, score=0.0)
    for k in range(3):                                            # three steps, hi never served
        assert p.order([hi, lo], float(k))[0].rid == 1
        lo.prefilled += 1
    assert p.order([hi, lo], 3.0)[0].rid == 0                     # idle for 3 steps: promoted
    assert p.order([lo], 3.0)[0].rid == 1                         # same time, a subset: no step
    hi.prefilled += 1
    assert p.order([hi, lo], 4.0)[0].rid == 1                     # served again: back to its score


def test_orderings_keep_sarathi_and_unified_work_conserving():
    for o in (SJF(), SRPT(), LAS(), PARS(missing_score="last", idle_steps=2), GammaBoost(margin_s=0.01),
              MemGuard(), GammaAda()):
        for pol in (fluidq.Sarathi(order=o), fluidq.Orca(order=o), Unified(order=o)):
            res = fluidq.check_work_conserving(pol, max_requests=3)
            assert res.work_conserving, (o.name, pol.name, res.reason)
            assert not res.invalid


def test_unified_serves_one_priority_space():
    # a new short prompt overtakes decode tokens of long-running requests under gamma-Boost
    old = [R(i, 0.0, prompt=10, out=1000, prefilled=10, decoded=500) for i in range(3)]
    new = R(9, 1.0, prompt=2, out=2)
    view = fluidq.policies.QueueView(requests=tuple(old + [new]), now_s=1.0, b_max=2)
    b = Unified(order=GammaBoost(gamma_per_s=1.0)).select(view)
    assert b.prefill == ((9, 2),) and b.decode == ()
    b2 = fluidq.Sarathi(order=GammaBoost(gamma_per_s=1.0)).select(view)
    assert b2.prefill == ()                                       # decode-first starves the newcomer


def test_hysteresis_margin_protects_running_requests():
    run = R(0, 0.0, prompt=10, out=100, prefilled=10, decoded=40)
    new = R(1, 0.001, prompt=10, out=100)
    g = 50.0
    assert GammaBoost(gamma_per_s=g).order([run, new], 1.0)[0].rid == 1
    assert GammaBoost(gamma_per_s=g, margin_s=1.0).order([run, new], 1.0)[0].rid == 0


# ----------------------------------------------------------------------------- MEMGUARD
def test_memguard_levels_and_thresholds():
    m = MemGuard(k_tokens=16)
    assert [m.level(x) for x in (0, 15, 16, 31, 32, 63, 64, 1000)] == [-1, -1, 0, 0, 1, 1, 2, 5]
    assert m.next_threshold(0) == 16 and m.next_threshold(16) == 32 and m.next_threshold(100) == 128
    assert m.quantized(100) == 64 and m.quantized(5) == 5


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64), st.integers(1, 3000), st.integers(1, 3000), st.integers(0, 2**31),
       st.booleans())
def test_memguard_bounds_evictions_by_log_length(k, prompt, out, seed, explicit):
    """An adversary tries to evict after every token; MEMGUARD allows floor(log2(L/k)) + 1 at most."""
    rng = np.random.default_rng(seed)
    m = MemGuard(k_tokens=k)
    r = R(0, 0.0, prompt=prompt, out=out)
    r.recompute_tokens = 0
    t, ev = 0.0, 0
    while r.decoded < r.output_tokens:
        t += 1.0
        m.order([r], t)
        if rng.random() < 0.7 and m.may_evict(r, t):
            if explicit:
                m.on_evict(r, t)
            ev += 1
            base = r.prompt_tokens - r.recompute_tokens          # recompute, as fluidq.sim does it
            r.recompute_tokens = r.decoded
            r.prompt_tokens = base + r.decoded
            r.prefilled = 0
            continue
        if r.prefilled < r.prompt_tokens:
            r.prefilled = min(r.prompt_tokens, r.prefilled + int(rng.integers(1, 64)))
        else:
            r.decoded += 1
    bound = math.floor(math.log2((prompt + out) / k)) + 1 if prompt + out >= k else 0
    assert ev <= bound
    assert m.evictions(0) == ev


def test_memguard_quantizes_the_base_priority():
    m = MemGuard(base=GammaBoost(gamma_per_s=1.0, effective_work=False), k_tokens=16)
    a = R(0, 0.0, prompt=1, prefilled=1, decoded=20)      # 21 tokens -> level 16
    b = R(1, 0.0, prompt=1, prefilled=1, decoded=30)      # 31 tokens -> level 16 as well: tie by rid
    assert [r.rid for r in m.order([b, a], 1.0)] == [0, 1]
    b.decoded = 40                                        # 41 -> level 32
    assert [r.rid for r in m.order([b, a], 2.0)] == [0, 1]


# ----------------------------------------------------------------------------- gamma-Ada
def test_gamma_ada_estimators():
    slope = GammaAda(estimator="slope")
    assert slope.target(1.0, 1.0 + math.log(5.0) / 20.0) == pytest.approx(20.0)
    ratio = GammaAda(estimator="ratio", gamma_max=200.0)
    assert ratio.target(2.0, 2.0) == pytest.approx(200.0)
    assert ratio.target(2.0, 3.0) == pytest.approx(200.0 / 3.0)
    with pytest.raises(ParameterError):
        GammaAda(estimator="bogus")
    with pytest.raises(ParameterError):
        GammaAda(beta=1.5)


@pytest.mark.parametrize("estimator", ["slope", "ratio"])
def test_gamma_ada_moves_gamma_with_smoothing_and_clamp(estimator):
    ada = GammaAda(estimator=estimator, min_samples=100, update_every=100, beta=0.3)
    rng = np.random.default_rng(0)
    for x in rng.exponential(1.0, 100):       # exponential tail of rate 1: slope target ln5/(t99 - t95) ~ 1
        ada.observe(float(x))
    t95, t99 = np.percentile(list(ada._ada["samples"]), [95, 99])
    want = min(max(0.7 * 200.0 + 0.3 * ada.target(t95, t99), 1.0), 200.0)
    assert ada.gamma == pytest.approx(want)
    for _ in range(30):                       # keeps moving towards the target, stays in [1, 200]
        for x in rng.exponential(1.0, 100):
            ada.observe(float(x))
    assert 1.0 <= ada.gamma <= 200.0
    assert abs(ada.gamma - ada.target(*np.percentile(list(ada._ada["samples"]), [95, 99]))) < 10.0


def test_gamma_ada_infers_completions_from_the_queue():
    ada = GammaAda(min_samples=1, update_every=1)
    r = R(0, 0.0, prompt=1, out=1)
    ada.order([r], 0.0)
    r.prefilled, r.decoded = 1, 1
    ada.order([], 2.0)
    assert list(ada._ada["samples"]) == [2.0]


def test_resolve_ordering_names():
    assert resolve_ordering("gamma_boost").name == "gamma-boost"
    assert resolve_ordering("pars", threshold_s=10.0).threshold_s == 10.0
    with pytest.raises(FluidqError):
        resolve_ordering("nope")
    assert UniBoost().order.name == "memguard"
    assert UniBoost(memguard=False, adaptive=True).order.name == "gamma-ada"


@pytest.mark.parametrize("make", [
    lambda: UniBoost(), lambda: UniBoost(adaptive=True), lambda: Unified(order=SRPT()),
    lambda: fluidq.Sarathi(order=PARS(missing_score="last", idle_steps=3)), lambda: fluidq.Orca(order=GammaBoost()),
    lambda: fluidq.Sarathi(order=MemGuard(base=LAS())), lambda: fluidq.Sarathi(order=SJF())],
    ids=["uniboost", "uniboost-ada", "unified-srpt", "sarathi-pars-idle", "orca-gamma", "sarathi-memguard-las",
         "sarathi-sjf"])
def test_latency_policies_pass_the_public_policy_check(make):
    from fluidq.testing.policy import check_policy

    res = check_policy(make(), n_states=80)
    assert res.ok, res.problems
    assert res.work_conserving
