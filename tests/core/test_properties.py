"""Invariants of the capacity (Theorem 2 of arXiv:2504.07347) stated as property tests."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidq import Affine, Engine, PiecewiseLinear, Poisson, Staircase, Tabulated, Workload, max_throughput

ms = st.floats(0.5, 50.0)


@st.composite
def batch_times(draw):
    kind = draw(st.sampled_from(["staircase", "pwl", "affine", "tabulated"]))
    if kind == "staircase":
        return Staircase(c=draw(ms) / 1e3, a=draw(ms) / 1e3, b0=draw(st.integers(1, 512)))
    if kind == "pwl":
        return PiecewiseLinear(c=draw(ms) / 1e3, a=draw(st.floats(1e-3, 0.5)) / 1e3, b0=draw(st.integers(0, 1024)))
    if kind == "affine":
        return Affine(c=draw(ms) / 1e3, a=draw(st.floats(1e-3, 0.5)) / 1e3)
    steps = draw(st.lists(st.floats(0.01, 5.0), min_size=3, max_size=8))
    return Tabulated(tokens=np.linspace(1, 2048, len(steps) + 1), seconds=np.cumsum([0.005] + steps) / 1e3)


def brute_force(bt, b_max):
    b = np.arange(1, b_max + 1, dtype=float)
    r = b / np.asarray(bt(b))
    return float(r.max())


@settings(max_examples=60, deadline=None)
@given(bt=batch_times(), b1=st.integers(1, 1024), extra=st.integers(0, 1024))
def test_capacity_non_decreasing_in_b_max(bt, b1, extra):
    c1 = max_throughput(Engine(batch_time=bt, b_max=b1)).tokens_per_s
    c2 = max_throughput(Engine(batch_time=bt, b_max=b1 + extra)).tokens_per_s
    assert c2 >= c1 * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(bt=batch_times(), b_max=st.integers(1, 2048))
def test_capacity_is_the_sup_over_all_batch_sizes(bt, b_max):
    r = max_throughput(Engine(batch_time=bt, b_max=b_max))
    assert np.isclose(r.tokens_per_s, brute_force(bt, b_max), rtol=1e-12)
    assert 1 <= r.batch_tokens <= b_max


@settings(max_examples=40, deadline=None)
@given(bts=st.lists(batch_times(), min_size=1, max_size=4), b_max=st.integers(1, 2048), k=st.integers(1, 6),
       mp=st.integers(1, 500), md=st.integers(1, 500))
def test_capacity_non_decreasing_in_the_number_of_engines(bts, b_max, k, mp, md):
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=mp, output_tokens=md)
    e = Engine(batch_time=bts[0], b_max=b_max)
    caps = [max_throughput(e, w, n_engines=n).requests_per_s for n in range(1, k + 2)]
    assert all(b >= a for a, b in zip(caps, caps[1:]))
    assert np.isclose(caps[-1], (k + 1) * caps[0])
    engines = [Engine(batch_time=bt, b_max=b_max) for bt in bts]  # heterogeneous: adding one never hurts
    het = [max_throughput(engines[:i], w).tokens_per_s for i in range(1, len(engines) + 1)]
    assert all(b >= a for a, b in zip(het, het[1:]))


@settings(max_examples=60, deadline=None)
@given(c=ms, a=ms, b0=st.integers(1, 256), m=st.integers(1, 16))
def test_staircase_sup_at_b_max_when_b0_divides_it(c, a, b0, m):
    bt = Staircase(c=c / 1e3, a=a / 1e3, b0=b0)
    r = max_throughput(Engine(batch_time=bt, b_max=m * b0))
    assert np.isclose(r.tokens_per_s, (m * b0) / bt(m * b0), rtol=1e-12)
    assert np.isclose(r.tokens_per_s, brute_force(bt, m * b0), rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(c=ms, a=st.floats(0.01, 1.0), b0=st.integers(1, 512), over=st.integers(1, 1024))
def test_piecewise_linear_sup_not_always_at_b_max(c, a, b0, over):
    # t = c + a*max(0, b - b0): beyond b0, b/t(b) falls iff c < a*b0, and then the sup is at b0
    bt = PiecewiseLinear(c=c / 1e3, a=a / 1e3, b0=b0)
    b_max = b0 + over
    r = max_throughput(Engine(batch_time=bt, b_max=b_max))
    assert np.isclose(r.tokens_per_s, brute_force(bt, b_max), rtol=1e-12)
    if c < a * b0:
        assert r.batch_tokens == b0 < b_max
    elif c > a * b0:
        assert r.batch_tokens == b_max


def test_a_piecewise_linear_example_peaks_before_b_max():
    bt = PiecewiseLinear(c=0.01, a=0.001, b0=128)  # c < a*b0
    r = max_throughput(Engine(batch_time=bt, b_max=512))
    assert r.batch_tokens == 128 and r.tokens_per_s > 512 / bt(512)
