"""The faces and the other analyses convert rates with the engine's work per request too: an engine whose
prefill emits the first token does ``m_p + m_d - 1`` tokens of batch work per request (h-emit's helper
``fluidq.capacity.tokens_per_request``).  Before, the capacity curve, the latency loads, ``fluidq check``'s
offered load and ``fluidq capacity --rate`` divided by ``m_p + m_d``."""
import pytest

import fluidq as fq

E0 = fq.Engine(batch_time=fq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
E = E0.with_(prefill_emits_token=True)


def _w(rate=5.0, p=10, d=2):
    return fq.Workload(arrival=fq.Poisson(rate_per_s=rate), prompt_tokens=p, output_tokens=d)


def test_capacity_curve_offers_the_engines_work():
    assert fq.capacity.capacity_vs_bmax(E, _w(), b_max_values=[256, 512]).offered_tokens_per_s == 5.0 * 11
    assert fq.capacity.capacity_vs_bmax(E0, _w(), b_max_values=[256, 512]).offered_tokens_per_s == 5.0 * 12


def test_latency_loads_are_fractions_of_the_engines_request_capacity():
    from fluidq.latency import _load_rates

    tok, req, rates = _load_rates(E, _w(), (0.5, 0.9))
    tok0, req0, _ = _load_rates(E0, _w(), (0.5, 0.9))
    assert tok == tok0
    assert req == pytest.approx(tok / 11, rel=1e-15) and req0 == pytest.approx(tok / 12, rel=1e-15)
    assert rates == pytest.approx((0.5 * tok / 11, 0.9 * tok / 11), rel=1e-15)

