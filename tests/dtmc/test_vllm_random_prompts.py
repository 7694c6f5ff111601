"""Vanilla vLLM's threshold with random (small-support) prompt lengths: the (queue, head length) chain."""
import pytest

import fluidq
from fluidq.dtmc.threshold import _RENEWAL_CACHE, ThresholdUnavailable, _length_key, renewal_threshold
from fluidq.sim import find_threshold

E = fluidq.Empirical


@pytest.fixture
def tiny_engine():
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=4), b_max=8)


def wl(prompt, output, rate=1.0):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def test_threshold_is_inside_the_simulation_bracket_and_below_work_conserving(tiny_engine):
    w = wl(E(values=(1, 4)), E(values=(2, 6)))
    r = fluidq.stability_threshold(tiny_engine, w, "vllm")
    assert r.method == "renewal"
    assert 0 < r.arrival_rate_per_s < r.work_conserving_rate_per_s
    s = find_threshold(tiny_engine, w, "vllm", rng=3, horizon_s=400.0, n_replications=6, rel_tol=0.05,
                       low_rate_per_s=0.6 * r.arrival_rate_per_s, high_rate_per_s=1.2 * r.arrival_rate_per_s)
    assert s.low_rate_per_s <= r.arrival_rate_per_s <= s.high_rate_per_s, s.reason


@pytest.mark.parametrize("vp,output", [(2, E(values=(1, 2, 3))), (3, fluidq.Fixed(n=4))])
def test_one_value_support_reduces_to_the_fixed_prompt_chain(tiny_engine, vp, output):
    fixed = renewal_threshold(tiny_engine, wl(vp, output), "vllm")[0]
    single = renewal_threshold(tiny_engine, wl(E(values=(vp,)), output), "vllm")[0]
    assert single == pytest.approx(fixed, rel=1e-5)


def test_paper_engine_threshold_is_below_the_fixed_mean_prompt_one():
    # same mean prompt (200 tokens): spread lengths waste budget at the head-of-line stop
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    spread = fluidq.stability_threshold(eng, wl(E(values=(100, 200, 300)), 100), "vllm")
    fixed = fluidq.stability_threshold(eng, wl(200, 100), "vllm")
    assert spread.method == fixed.method == "renewal"
    assert spread.arrival_rate_per_s < spread.work_conserving_rate_per_s
    assert spread.arrival_rate_per_s != pytest.approx(fixed.arrival_rate_per_s, rel=1e-3)


def test_check_stability_gives_real_verdicts_and_caches(tiny_engine):
    w = wl(E(values=(1, 4)), E(values=(2, 6)))
    thr = fluidq.stability_threshold(tiny_engine, w, "vllm").arrival_rate_per_s
    below = fluidq.check_stability(tiny_engine, w.with_rate(0.9 * thr), "vllm")
    above = fluidq.check_stability(tiny_engine, w.with_rate(1.1 * thr), "vllm")
    assert below.status.value == "stable" and above.status.value == "unstable"
    assert below.threshold_requests_per_s == pytest.approx(thr, rel=1e-5)
    pol = fluidq.policies.resolve_policy("vllm")
    assert (tiny_engine, _length_key(w.prompt_tokens), _length_key(w.output_tokens), pol) in _RENEWAL_CACHE
    # another Empirical support is another cache entry (Empirical objects all compare equal)
    w2 = wl(E(values=(2, 3)), E(values=(2, 6)))
    other = fluidq.stability_threshold(tiny_engine, w2, "vllm").arrival_rate_per_s
    assert fluidq.check_stability(tiny_engine, w2.with_rate(0.5), "vllm").threshold_requests_per_s == \
        pytest.approx(other, rel=1e-5)
    assert other != pytest.approx(thr, rel=1e-3)


def test_twelve_lengths_inside_the_simulation_bracket():
    # beyond the former limit of 8 lengths: prompts of 1..12 tokens on a budget of 16
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=8), b_max=16)
    w = wl(E(values=tuple(range(1, 13))), E(values=(2, 6)))
    r = fluidq.stability_threshold(eng, w, "vllm")
    assert r.method == "renewal" and len(r.details["prompt_lengths"]) == 12
    s = find_threshold(eng, w, "vllm", rng=3, horizon_s=400.0, n_replications=6, rel_tol=0.05,
                       low_rate_per_s=0.6 * r.arrival_rate_per_s, high_rate_per_s=1.2 * r.arrival_rate_per_s)
    assert s.low_rate_per_s <= r.arrival_rate_per_s <= s.high_rate_per_s, s.reason


def test_check_stability_decides_supports_beyond_eight_lengths(tiny_engine):
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = wl(E(values=tuple(range(10, 130, 10))), 50, rate=1.0)  # 12 distinct prompt lengths, 51 per batch
    thr = renewal_threshold(eng, w, "vllm")[0]
    assert fluidq.check_stability(eng, w.with_rate(0.9 * thr), "vllm").status.value == "stable"
    assert fluidq.check_stability(eng, w.with_rate(1.1 * thr), "vllm").status.value == "unstable"
    # a coarser support of the same spread: the head-of-line waste differs, so does the threshold
    coarse = renewal_threshold(eng, wl(E(values=(10, 120)), 50), "vllm")[0]
    assert coarse != pytest.approx(thr, rel=1e-3)


def test_large_supports_are_refused_above_the_stated_sizes(tiny_engine):
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = wl(E(values=tuple(range(10, 130, 10))), 50, rate=1.0)
    with pytest.raises(ThresholdUnavailable, match="limited to 4"):
        renewal_threshold(eng, w, "vllm", max_lengths=4)
    with pytest.raises(ThresholdUnavailable, match="max_outcomes=1,000"):
        renewal_threshold(eng, w, "vllm", max_outcomes=1000)
    with pytest.raises(ThresholdUnavailable, match="max_states=50"):
        renewal_threshold(eng, w, "vllm", max_states=50)
    # 100 lengths, up to 102 prompts per batch: ~2e5 batch outcomes per queue level, said and left unknown
    many = wl(E(values=tuple(range(5, 505, 5))), 100)
    with pytest.raises(ThresholdUnavailable, match="prefill-batch outcomes per queue level"):
        renewal_threshold(eng, many, "vllm")
    r = fluidq.check_stability(eng, many.with_rate(5.0), "vllm")
    assert r.status.value == "unknown"
