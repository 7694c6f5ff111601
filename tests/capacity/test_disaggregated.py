"""Disaggregated prefill/decode: hand-checked stage rates, sizing against brute force, the fluid verdict
against the tandem simulation, the co-located comparison, and bad input."""
import math

import numpy as np
import pytest

from fluidq import Engine, Poisson, Workload
from fluidq.batchtime import Affine, ContextAware
from fluidq.batchtime.comm import Link
from fluidq.capacity.disaggregated import (colocated_capacity, compare, decode_rate, disaggregated_capacity,
                                           pd_region, prefill_rate, size_pools)
from fluidq.capacity.disaggregated_sim import replicate_disaggregated, simulate_disaggregated
from fluidq.errors import ParameterError

KVB = 131072  # Llama-3.1-8B's KV bytes per token
LINK = Link(bandwidth_gbps=10.0, latency_us=5.0)


def wl(rate=1.0, p=1000, o=101):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=p, output_tokens=o)


# prefill: t(b) = 10 ms + 0.1 ms/token, b_max 2000 -> 2000 tokens in 0.21 s = 9.5238 prompts of 1000 per s
PRE = Engine(batch_time=Affine(c=0.01, a=1e-4), b_max=2000)
# decode: t(n, kv) = 20 ms + 1 us per KV token read, k_max 50 residents
DEC = Engine(batch_time=ContextAware(base=Affine(c=0.02, a=1e-12), kv_s_per_token=1e-6), b_max=2048, k_max=50)


def test_stage_rates_by_hand():
    assert prefill_rate(PRE, wl()) == pytest.approx(2000 / 0.21 / 1000, rel=1e-9)
    rate, n, lim = decode_rate(DEC, wl())
    kv_bar = 1000 + 101 / 2  # fixed lengths: E[o (p + o/2)] / E[o]
    t = 0.02 + 50e-12 + 1e-6 * 50 * kv_bar
    assert (n, lim) == (50, "k_max")
    assert rate == pytest.approx(50 / (100 * t), rel=1e-9)
    r = disaggregated_capacity(PRE, DEC, wl(), n_prefill=3, n_decode=2, link=LINK, kv_bytes_per_token=KVB)
    assert r.stages["transfer"] == pytest.approx(3 * 10e9 / (1000 * KVB), rel=1e-12)
    assert r.requests_per_s == pytest.approx(min(r.stages.values()))
    assert r.bottleneck == min(r.stages, key=r.stages.get)
    assert r.gpus == 5
    assert r.transfer_latency_s == pytest.approx(5e-6 + 1000 * KVB / 10e9)


def test_slow_link_binds_and_verdict():
    slow = Link(bandwidth_gbps=0.1, latency_us=5.0)  # 100 MB/s: 0.76 prompts of 1000 tokens per s per link
    r = disaggregated_capacity(PRE, DEC, wl(), n_prefill=2, n_decode=2, link=slow, kv_bytes_per_token=KVB, rate=2.0)
    assert r.bottleneck == "transfer"
    assert r.requests_per_s == pytest.approx(2 * 0.1e9 / (1000 * KVB))
    assert r.verdict == "unstable" and r.load > 1
    r = disaggregated_capacity(PRE, DEC, wl(), n_prefill=2, n_decode=2, link=slow, kv_bytes_per_token=KVB, rate=2.0,
                               links=4)
    assert r.verdict == "stable"


def test_kv_cache_limits_decode_residents():
    dec = Engine(batch_time=DEC.batch_time, b_max=2048, k_max=50, kv_capacity_tokens=21010)
    _, n, lim = decode_rate(dec, wl())
    assert (n, lim) == (20, "kv_cache")  # 21010 / 1050.5 = 20 residents


def brute(pre, dec, w, *, rate=None, max_engines=None):
    """Every (n_p, n_d) with n_p + n_d <= 16: the fewest engines sustaining rate, or the best per GPU."""
    best = None
    for n_p in range(1, 16):
        for n_d in range(1, 17 - n_p):
            r = disaggregated_capacity(pre, dec, w, n_prefill=n_p, n_decode=n_d, link=LINK, kv_bytes_per_token=KVB)
            if rate is not None:
                if r.requests_per_s > rate and (best is None or n_p + n_d < sum(best[1:])):
                    best = (r.requests_per_s, n_p, n_d)
            elif n_p + n_d <= max_engines:
                key = (r.requests_per_s / (n_p + n_d), -(n_p + n_d), n_p)
                if best is None or key > best[0]:
                    best = (key, n_p, n_d)
    return best[1], best[2]


@pytest.mark.parametrize("rate", [3.0, 9.0, 17.5, 30.0])
def test_sizing_for_a_rate_matches_brute_force(rate):
    r = size_pools(PRE, DEC, wl(), link=LINK, kv_bytes_per_token=KVB, rate=rate)
    assert (r.n_prefill, r.n_decode) == brute(PRE, DEC, wl(), rate=rate)
    assert r.verdict == "stable"


@pytest.mark.parametrize("m", [2, 5, 9, 16])
def test_sizing_per_gpu_matches_brute_force(m):
    r = size_pools(PRE, DEC, wl(), link=LINK, kv_bytes_per_token=KVB, max_engines=m)
    bp, bd = brute(PRE, DEC, wl(), max_engines=m)
    assert r.requests_per_s_per_gpu == pytest.approx(
        disaggregated_capacity(PRE, DEC, wl(), n_prefill=bp, n_decode=bd, link=LINK,
                               kv_bytes_per_token=KVB).requests_per_s_per_gpu, rel=1e-9)
    assert (r.n_prefill, r.n_decode) == (bp, bd)


SLOW = Link(bandwidth_gbps=0.1, latency_us=5.0)


@pytest.mark.parametrize("n_p,n_d,link,want", [(3, 1, LINK, "decode"), (2, 3, LINK, "prefill"),
                                                pytest.param(2, 2, SLOW, "transfer", marks=pytest.mark.slow)])
def test_fluid_verdict_agrees_with_simulation(n_p, n_d, link, want):
    cap = disaggregated_capacity(PRE, DEC, wl(), n_prefill=n_p, n_decode=n_d, link=link, kv_bytes_per_token=KVB)
    assert cap.bottleneck == want
    horizon = 200.0 if cap.requests_per_s > 5 else 1500.0  # enough arrivals for the backlog test
    for f, verdict in ((0.9, "stable"), (1.1, "unstable")):
        served = []
        for seed in (1, 2, 3):
            s = simulate_disaggregated(PRE, DEC, wl(rate=f * cap.requests_per_s), n_prefill=n_p, n_decode=n_d,
                                       link=link, kv_bytes_per_token=KVB, horizon_s=horizon, seed=seed)
            assert s.verdict == verdict, (cap.bottleneck, f, seed, s)
            served.append(s.throughput_per_s / cap.requests_per_s)
        if verdict == "unstable":
            # overloaded, the tandem serves its capacity less the filling transient (the first completions come a
            # request's passage after t = 0: prefill, transfer, ~100 decode iterations, a few seconds of 200): the
            # 95 % t interval of the three seeds' mean served share lies in [0.92, 1] (measured 2026-12-07 over
            # seeds 1-10: 0.967 +- 0.002 s.e. for 3+1, 0.968 +- 0.0005 for 2+3); above capacity is impossible
            m, h = sum(served) / 3, 4.303 * float(np.std(served, ddof=1)) / math.sqrt(3)
            assert 0.92 <= m - h and m + h <= 1.0, (cap.bottleneck, served)


def test_region_is_the_stage_rectangle():
    r = disaggregated_capacity(PRE, DEC, wl(), n_prefill=2, n_decode=1, link=LINK, kv_bytes_per_token=KVB)
    reg = pd_region(r)
    assert reg["prefill_tokens_per_s"] == pytest.approx(1000 * min(r.stages["prefill"], r.stages["transfer"]))
    assert reg["decode_tokens_per_s"] == pytest.approx(100 * r.stages["decode"])


def test_colocated_by_hand_and_compare():
    eng = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=2048, k_max=50)
    # N = 50 (k_max < token budget 2048*100/1100 = 186); t_dec = 25 ms; chunk 1998 adds 0.1998 s per 1998 tokens
    per_req = 100 * (0.02 + 50e-4) / 50 + 1000 * 1e-4
    assert colocated_capacity(eng, wl(), n_engines=3) == pytest.approx(3 / per_req, rel=1e-9)
    c = compare(PRE, DEC, eng, wl(), gpus=8, link=LINK, kv_bytes_per_token=KVB)
    best = max(disaggregated_capacity(PRE, DEC, wl(), n_prefill=k, n_decode=8 - k, link=LINK,
                                      kv_bytes_per_token=KVB).requests_per_s for k in range(1, 8))
    assert c["disaggregated"]["requests_per_s"] == pytest.approx(best)
    assert c["winner"] == ("disaggregated" if best > c["colocated_requests_per_s"] else "co-located")
    # a decode engine that is 4x cheaper per iteration than the co-located one makes disaggregation win
    fast = Engine(batch_time=ContextAware(base=Affine(c=0.005, a=1e-12), kv_s_per_token=1e-9), b_max=2048, k_max=200)
    assert compare(PRE, fast, eng, wl(), gpus=8, link=LINK, kv_bytes_per_token=KVB)["winner"] == "disaggregated"


def test_one_output_token_needs_no_decode():
    rate, _, _ = decode_rate(DEC, wl(o=1))
    assert math.isinf(rate)
    r = disaggregated_capacity(PRE, DEC, wl(o=1), n_prefill=1, n_decode=1, link=LINK, kv_bytes_per_token=KVB)
    assert r.bottleneck == "prefill"


@pytest.mark.parametrize("kw,name", [
    (dict(n_prefill=0), "n_prefill"), (dict(n_decode=0), "n_decode"), (dict(kv_bytes_per_token=0), "kv_bytes_per_token"),
    (dict(links=0), "links"), (dict(rate=-1.0), "rate"), (dict(link="nvlink"), "link"), (dict(prefill=None), "prefill"),
])
def test_bad_input_names_the_parameter(kw, name):
    args = dict(prefill=PRE, decode=DEC, workload=wl(), n_prefill=1, n_decode=1, link=LINK, kv_bytes_per_token=KVB)
    args.update(kw)
    with pytest.raises(ParameterError, match=name):
        disaggregated_capacity(**args)


def test_size_pools_needs_one_goal():
    with pytest.raises(ParameterError, match="rate"):
        size_pools(PRE, DEC, wl(), link=LINK, kv_bytes_per_token=KVB)
    with pytest.raises(ParameterError, match="rate"):
        size_pools(PRE, DEC, wl(), link=LINK, kv_bytes_per_token=KVB, rate=1.0, max_engines=4)


def test_prefill_memory_caps_the_batch_and_serialises_with_the_link():
    small = Engine(batch_time=PRE.batch_time, b_max=2000, kv_capacity_tokens=1500)
    assert prefill_rate(small, wl()) == pytest.approx(1500 / 0.16 / 1000, rel=1e-9)  # b <= the cache
    mid = Link(bandwidth_gbps=1.0, latency_us=5.0)
    r = disaggregated_capacity(small, DEC, wl(), n_prefill=2, n_decode=3, link=mid, kv_bytes_per_token=KVB)
    one = 1.0 / (1000 * 0.16 / 1500 + 1000 * KVB / 1e9)  # prefill and transfer take turns
    assert r.bottleneck == "prefill_memory" and r.requests_per_s == pytest.approx(2 * one, rel=1e-9)
    assert pd_region(r)["prefill_tokens_per_s"] == pytest.approx(1000 * 2 * one)
    big = Engine(batch_time=PRE.batch_time, b_max=2000, kv_capacity_tokens=2000)  # two prompts: they overlap
    assert "prefill_memory" not in disaggregated_capacity(big, DEC, wl(), n_prefill=2, n_decode=3, link=mid,
                                                          kv_bytes_per_token=KVB).stages
    tiny = Engine(batch_time=PRE.batch_time, b_max=2000, kv_capacity_tokens=999)  # not one prompt
    assert disaggregated_capacity(tiny, DEC, wl(), n_prefill=1, n_decode=1, link=mid,
                                  kv_bytes_per_token=KVB).requests_per_s == 0
    with pytest.raises(ParameterError, match="prefill"):
        size_pools(tiny, DEC, wl(), link=mid, kv_bytes_per_token=KVB, rate=1.0)


KV_DEC = Engine(batch_time=DEC.batch_time, b_max=2048, k_max=50, kv_capacity_tokens=21010)  # 20 residents
KV_PRE = Engine(batch_time=PRE.batch_time, b_max=2000, kv_capacity_tokens=1500)
MID = Link(bandwidth_gbps=1.0, latency_us=5.0)


@pytest.mark.parametrize("pre,n_p,n_d,link,want,horizon,ramp", [
    (PRE, 3, 2, LINK, "decode", 200.0, 0.036),                  # the decode KV cache limits the residents
    pytest.param(KV_PRE, 2, 3, MID, "prefill_memory", 300.0, 0.026, marks=pytest.mark.slow),
])
def test_memory_bound_verdict_agrees_with_replications(pre, n_p, n_d, link, want, horizon, ramp):
    """Each pool with its own memory: the fluid verdict against seeded replications, with 95 % intervals of
    the backlog's growth share (fluid: 0 below capacity, 1 - 1/1.1 = 0.091 at 1.1) and of the throughput.

    At 0.9 the served rate's interval holds the offered 0.9 x capacity (measured 2026-12-07, seed 1, 3 runs:
    [8.15, 9.10] around 8.78 req/s; [7.35, 7.80] around 7.57).  At 1.1 it is never above the capacity (Theorem 2 per
    pool), and below it by the ramp of a run that starts empty: ``ramp`` is that shortfall measured (3.6 % over 3 x
    200 s, 2.6 % over 3 x 300 s; the interval's upper end 2.1 % and 1.9 % below), allowed up to twice, as
    tests/capacity/test_disaggregated_case.py allows its own measured ramp."""
    cap = disaggregated_capacity(pre, KV_DEC, wl(), n_prefill=n_p, n_decode=n_d, link=link, kv_bytes_per_token=KVB)
    assert cap.bottleneck == want
    for f in (0.9, 1.1):
        r = replicate_disaggregated(pre, KV_DEC, wl(rate=f * cap.requests_per_s), n_prefill=n_p, n_decode=n_d,
                                    link=link, kv_bytes_per_token=KVB, horizon_s=horizon, replications=3, seed=1)
        lo, hi = r.growth_share_ci
        tlo, thi = r.throughput_ci
        if f < 1:
            assert r.verdict == "stable" and lo < 0 < hi, (f, r.growth_share_ci)
            assert tlo <= 0.9 * cap.requests_per_s <= thi, (r.throughput_ci, cap.requests_per_s)  # serves what arrives
        else:
            # the interval covers the fluid growth share (before: +-0.04 around it, a number without a basis)
            assert r.verdict == "unstable" and lo <= 1 - 1 / 1.1 <= hi, (f, lo, hi)
            assert tlo <= cap.requests_per_s, (r.throughput_ci, cap.requests_per_s)
            assert r.throughput_per_s >= (1 - 2 * ramp) * cap.requests_per_s, (r.throughput_per_s, cap.requests_per_s)
    if want == "decode":
        assert sum(x.preemptions for x in r.runs) > 0  # the residents' growth overflows the cache


def test_simulation_refuses_requests_that_never_fit():
    dec = Engine(batch_time=DEC.batch_time, b_max=2048, k_max=50, kv_capacity_tokens=1050)  # p + o = 1101
    s = simulate_disaggregated(PRE, dec, wl(rate=2.0), n_prefill=1, n_decode=1, link=LINK, kv_bytes_per_token=KVB,
                               horizon_s=5.0)
    assert s.rejected == s.arrived > 0 and s.completed == 0 and s.in_system_end == 0
    pre = Engine(batch_time=PRE.batch_time, b_max=2000, kv_capacity_tokens=999)
    s = simulate_disaggregated(pre, DEC, wl(rate=2.0), n_prefill=1, n_decode=1, link=LINK, kv_bytes_per_token=KVB,
                               horizon_s=5.0)
    assert s.rejected == s.arrived


@pytest.mark.parametrize("kw,name", [(dict(horizon_s=0), "horizon_s"), (dict(n_decode=0), "n_decode"),
                                     (dict(link=3), "link"), (dict(replications=1), "replications"),
                                     (dict(seed=-1), "seed")])
def test_replications_bad_input_names_the_parameter(kw, name):
    args = dict(n_prefill=1, n_decode=1, link=LINK, kv_bytes_per_token=KVB, horizon_s=1.0)
    args.update(kw)
    with pytest.raises(ParameterError, match=name):
        replicate_disaggregated(PRE, DEC, wl(), **args)


def test_a_kv_cache_that_holds_no_request_serves_none_co_located_as_disaggregated():
    """colocated_capacity clamped the residents to at least 1, so a KV cache smaller than the mean resident
    context (decode_rate's 0 req/s) still served requests co-located: disagg --gpus 4 --input-len 600000 on
    an H100 said "co-located 0.19 req/s" against 0 disaggregated, for requests no engine can hold."""
    w = wl(p=1000, o=101)
    kv_bar = 1000 + 101 / 2
    for kv, serves in ((int(kv_bar) - 1, False), (int(kv_bar) + 1, True)):
        eng = DEC.with_(kv_capacity_tokens=kv)
        assert (decode_rate(eng, w)[0] > 0) is serves
        assert (colocated_capacity(eng, w, n_engines=2) > 0) is serves, kv
