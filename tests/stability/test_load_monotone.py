"""``StabilityResult.load`` is proportional to the arrival rate: one capacity per engine, scheduler and mix.

An independent check found the load of a staircase whose ``b/t(b)`` peaks below ``b_max`` going DOWN as the
rate went up (1.07 at 1.07x ``b_max/t(b_max)``, 1.031 at 1.10x): past the peak the verdict measured it
against the peak instead of ``b_max/t(b_max)``.
"""
import numpy as np
import pytest

from fluidq import Affine, Engine, Poisson, Staircase, Status, Workload, check_stability
from fluidq.capacity import engine_capacity, full_batch_rate

PEAKED = Engine(batch_time=Staircase(c=0.018458, a=0.032149, b0=64), b_max=777)


def _w(rate, prompt=53, output=5):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def test_the_staircase_peaks_below_b_max():
    # t(b) = c + a ceil(b / 64): b / t(b) rises within each step and peaks at a step's end, the largest being the
    # last whole step below b_max, 768 = 12 x 64: 768 / (c + 12 a) = 1899.83 tokens/s; the full batch 777 (13
    # steps) gives 777 / (c + 13 a) = 1780.50
    c, a, b0, b_max = 0.018458, 0.032149, 64, 777
    peak = (b_max // b0) * b0
    assert peak == 768
    sup, full = engine_capacity(PEAKED)[0], full_batch_rate(PEAKED)[0]
    assert sup == pytest.approx(peak / (c + (peak // b0) * a), rel=1e-12)
    assert full == pytest.approx(b_max / (c + -(-b_max // b0) * a), rel=1e-12)
    assert full < sup


@pytest.mark.parametrize("engine,policy,prompt,output", [
    (PEAKED, "sarathi", 53, 5),         # work-conserving; b/t(b) peaks at 768 < b_max
    (PEAKED, "fastertransformer", 53, 5),  # not work-conserving: denominator sup b/t(b)
    (Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=200, k_max=8), "sarathi", 35, 41),  # k_max region
    (Engine(batch_time=Staircase(c=0.018458, a=0.032149, b0=64), b_max=777, kv_capacity_tokens=4000),
     "sarathi", 53, 5),                 # the KV cache binds
])
def test_load_is_proportional_to_the_rate(engine, policy, prompt, output):
    full = full_batch_rate(engine)[0] / (prompt + output)
    factors = np.linspace(0.5, 1.6, 23)
    res = [check_stability(engine, _w(f * full, prompt, output), policy) for f in factors]
    loads = np.array([r.load for r in res])
    assert np.all(np.diff(loads) > 0), loads
    # one denominator for every rate, and it is the capacity the result reports
    for r in res:
        assert r.load == pytest.approx(r.offered_tokens_per_s / r.capacity_tokens_per_s, rel=1e-12)
    caps = {round(r.capacity_tokens_per_s, 9) for r in res}
    assert len(caps) == 1, caps
    assert loads / factors == pytest.approx(np.full(len(factors), loads[0] / factors[0]), rel=1e-9)


def test_the_checkers_numbers_past_the_peak():
    full = full_batch_rate(PEAKED)[0]
    r107 = check_stability(PEAKED, _w(1.07 * full / 58))
    r110 = check_stability(PEAKED, _w(1.10 * full / 58))
    assert r107.status is r110.status is Status.UNSTABLE
    assert r107.load == pytest.approx(1.07, rel=1e-9) and r110.load == pytest.approx(1.10, rel=1e-9)
    assert r110.capacity_tokens_per_s == pytest.approx(full, rel=1e-12)
    assert "1,900" in r110.reason and "1,780" in r110.reason  # both capacities are named
