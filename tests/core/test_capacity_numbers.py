"""Reference §7 capacity numbers (paper constants: c=11.28 ms, a=35.47 ms, b0=128)."""
import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload, max_throughput

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)


def shape(mp, md):
    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=mp, output_tokens=md)


def test_batch_time_at_512():
    assert PAPER(512) == pytest.approx(0.15316, rel=1e-12)


def test_capacity_512():
    r = max_throughput(Engine(batch_time=PAPER, b_max=512))
    assert r.tokens_per_s / 1e3 == pytest.approx(3.342909, abs=5e-7)
    assert r.batch_tokens == 512


def test_lambda_star_100_100():
    r = max_throughput(Engine(batch_time=PAPER, b_max=512), shape(100, 100))
    assert r.requests_per_s / 1e3 == pytest.approx(0.0167145, abs=5e-8)


def test_lambda_star_129_112():
    r = max_throughput(Engine(batch_time=PAPER, b_max=512), shape(129, 112))
    assert round(r.requests_per_s, 2) == 13.87


def test_two_engines_jsq():
    e = Engine(batch_time=PAPER, b_max=512)
    r = max_throughput(e, shape(100, 100), n_engines=2)
    assert r.requests_per_s / 1e3 == pytest.approx(0.0334291, abs=5e-8)
    assert max_throughput([e, e], shape(100, 100)).tokens_per_s == pytest.approx(r.tokens_per_s)


def test_capacity_1024():
    r = max_throughput(Engine(batch_time=PAPER, b_max=1024))
    assert PAPER(1024) == pytest.approx(0.29504)
    assert r.tokens_per_s / 1e3 == pytest.approx(1024 / 295.04, abs=5e-7)
    assert r.tokens_per_s / 1e3 == pytest.approx(3.470716, abs=5e-7)


def test_verdicts_at_the_boundary():
    e = Engine(batch_time=PAPER, b_max=512)
    lam = max_throughput(e, shape(100, 100)).requests_per_s
    assert fluidq.check_stability(e, shape(100, 100).with_rate(0.9 * lam), "sarathi").status == "stable"
    assert fluidq.check_stability(e, shape(100, 100).with_rate(1.1 * lam), "sarathi").status == "unstable"
    assert fluidq.check_stability(e, shape(100, 100).with_rate(lam), "orca").status == "critical"
    r = fluidq.check_stability(e, shape(100, 100).with_rate(1.1 * lam), "vllm")
    assert r.status == "unstable" and r.load == pytest.approx(1.1)


def test_kv_cache_bounds_the_batch():
    # 100 + 100 tokens per request: a full 512-token batch needs 256 decoding requests, each
    # holding 100 + E[o^2]/(2 m_d) = 150 KV tokens on average; 15,000 KV tokens hold only 100
    e = Engine(batch_time=PAPER, b_max=512)
    w = shape(100, 100)
    free = max_throughput(e, w)
    tight = max_throughput(e.with_(kv_capacity_tokens=15_000), w)
    # 100 decoding requests and, in flow balance, 100 prefill tokens: batches of at most 200
    # tokens, where the staircase's best b/t(b) is at the step end 128
    assert "at most 200 tokens" in tight.reason
    assert tight.batch_tokens == 128
    assert tight.tokens_per_s == pytest.approx(128 / PAPER(128))
    assert tight.tokens_per_s < free.tokens_per_s and "KV cache" in tight.reason
    roomy = max_throughput(e.with_(kv_capacity_tokens=10**6), w)
    assert roomy.tokens_per_s == pytest.approx(free.tokens_per_s)


def test_resident_context_is_length_biased():
    from fluidq.capacity import mean_resident_context

    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=10, output_tokens=fluidq.Geometric(mean_tokens=20))
    # m_p + E[o^2]/(2 m_d) with E[o^2] = (2 - p)/p^2, p = 1/20
    assert mean_resident_context(w) == pytest.approx(10 + (2 - 0.05) / 0.05**2 / 40)


def test_two_engines_verdict_and_non_work_conserving_near_one():
    e = Engine(batch_time=PAPER, b_max=512)
    w = shape(100, 100).with_rate(30.0)  # one engine: load 1.79; two behind JSQ: 0.897
    assert fluidq.check_stability(e, w, "sarathi").status == "unstable"
    two = fluidq.check_stability(e, w, "sarathi", n_engines=2)
    assert two.status == "stable" and two.load == pytest.approx(30 * 200 / (2 * 3342.909), rel=1e-5)
    # vanilla vLLM's own threshold (below the Theorem-2 bound) decides near load 1, not "critical"
    r = fluidq.check_stability(e, shape(129, 112).with_rate(14.0), "vllm")
    assert r.status == "unstable" and r.threshold_requests_per_s < 13.87
