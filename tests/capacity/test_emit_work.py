"""An engine whose prefill emits the first output token (``prefill_emits_token=True``, vLLM) runs
``d - 1`` decode iterations for ``d`` output tokens: a request is ``m_p + m_d - 1`` tokens of batch work.
Review of 2026-12-06: ``max_throughput`` divided by ``m_p + m_d`` (P=10, D=2: 278.6 req/s where the engine
serves 303.9) and the k_max region's ray was ``(lambda m_p, lambda m_d)``."""
import pytest

import fluidq as fq
E0 = fq.Engine(batch_time=fq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
E = E0.with_(prefill_emits_token=True)
P, D = 10, 2


def _w(rate=1.0, p=P, d=D):
    return fq.Workload(arrival=fq.Poisson(rate_per_s=rate), prompt_tokens=p, output_tokens=d)


def test_the_work_per_request_drops_one_decode_token():
    from fluidq.capacity import offered_tokens_per_s, request_work, tokens_per_request

    assert E0.request_work(10.0, 2.0) == (10.0, 2.0)
    assert E.request_work(10.0, 2.0) == (10.0, 1.0)
    assert E.request_work(10.0, 1.0) == (10.0, 0.0)  # d = 1: no decode iteration
    assert request_work(E, _w()) == (10.0, 1.0) and tokens_per_request(E, _w()) == 11.0
    assert tokens_per_request(E0, _w()) == 12.0
    assert offered_tokens_per_s(E, _w(3.0)) == 33.0 and offered_tokens_per_s(E0, _w(3.0)) == _w(3.0).token_rate_per_s


def test_requests_per_s_divides_by_the_work_per_request():
    old, new = fq.max_throughput(E0, _w()), fq.max_throughput(E, _w())
    assert new.tokens_per_s == old.tokens_per_s  # the token capacity is the engine's, whatever a request is
    assert old.requests_per_s == old.tokens_per_s / (P + D)
    assert new.requests_per_s == pytest.approx(new.tokens_per_s / (P + D - 1), rel=1e-15)
    assert "m_p + m_d - 1 = 11 tokens of batch work" in new.reason
    assert "prefill_emits_token" not in old.reason
    # several engines: each converts its own capacity
    mixed = fq.max_throughput([E0, E], _w())
    assert mixed.requests_per_s == pytest.approx(old.tokens_per_s / 12 + new.tokens_per_s / 11, rel=1e-12)
    assert fq.max_throughput(E, _w(), n_engines=3).requests_per_s == pytest.approx(3 * new.requests_per_s, rel=1e-12)


def test_the_k_max_region_ray_is_that_of_the_work():
    e0 = E0.with_(k_max=8)
    e = e0.with_(prefill_emits_token=True)
    w = _w(p=10, d=50)
    old, new = fq.max_throughput(e0, w), fq.max_throughput(e, w)
    assert old.method == "region" and new.method == "region"
    region = fq.stability_region(e0, prompt_tokens=10)  # prompts of 10 tokens, as in region_capacity
    lam_old, lam_new = region.max_request_rate(10.0, 50.0), region.max_request_rate(10.0, 49.0)
    assert old.tokens_per_s == pytest.approx(lam_old * 60, rel=1e-12)
    assert new.tokens_per_s == pytest.approx(lam_new * 59, rel=1e-12)
    assert new.requests_per_s == pytest.approx(lam_new, rel=1e-12)
    assert new.requests_per_s > old.requests_per_s  # 49 decode iterations per request instead of 50
