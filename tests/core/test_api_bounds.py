"""Huge, tiny and overflowing numbers at the public Python boundary (issue 13): each is a ParameterError
naming the parameter, raised before any work (no OverflowError, LinAlgError, numpy warning or hang);
the largest value allowed still works."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fluidq
from fluidq import (
    Affine,
    Engine,
    Gamma,
    Geometric,
    LogNormal,
    PiecewiseLinear,
    Poisson,
    Staircase,
    Tabulated,
    Workload,
    max_throughput,
)
from fluidq.dtmc.build import build_dtmc
from fluidq.errors import ParameterError
from fluidq.network.sim import replicate_network, simulate_network
from fluidq.region import region_mix, stability_region
from fluidq.results import Status


def engine(**kw):
    return Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, **kw)


def workload(rate=5.0, prompt=100, output=100):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def _net():
    from fluidq.network import Hop, Network, RequestClass, Station

    e = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256)
    return Network(stations=[Station(name="E", engine=e)],
                   classes=[RequestClass(name="A", rate_per_s=10.0, route=[Hop(engine="E", prompt_tokens=50,
                                                                              output_tokens=20)])])


def _simulated_region(**kw):
    from fluidq.region.simulated import simulated_region

    return simulated_region(engine(), "sarathi", **kw)


def _threshold(policy="sarathi", lengths=None, **kw):
    from fluidq.dtmc.threshold import stability_threshold

    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=Geometric(mean_tokens=100))
    return stability_threshold(engine(), w, policy, **kw)


def _dtmc(**kw):
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=16, output_tokens=Geometric(mean_tokens=20))
    return build_dtmc(engine(), w, "sarathi", max_prefill=4, max_decode=10, **kw)


# (call, the parameter the ParameterError must name)
REFUSED = [
    (lambda: max_throughput(engine(), workload(), n_engines=2**64 + 1), "n_engines"),
    (lambda: max_throughput(engine(), workload(), n_engines=10**6 + 1), "n_engines"),
    (lambda: max_throughput(engine(), workload(), n_engines=1e308), "n_engines"),
    (lambda: LogNormal(mu=1e308, sigma=1.0), "mu"),
    (lambda: LogNormal(mu=-1e308, sigma=1.0), "mu"),
    (lambda: LogNormal(mu=23, sigma=100001), "sigma"),
    (lambda: Geometric(mean_tokens=1e308), "mean_tokens"),
    (lambda: Staircase(c=float("nan"), a=0.01, b0=128), "c"),
    (lambda: Staircase(c=1e308, a=0.01, b0=128), "c"),
    (lambda: Staircase(c=0.01, a=float("inf"), b0=128), "a"),
    (lambda: Staircase(c=0.01, a=0.01, b0=2**64), "b0"),
    (lambda: Staircase(c=0.0, a=1e-300, b0=1), "a"),
    (lambda: Affine(c=0.0, a=1e-300), "a"),
    (lambda: Affine(c=1e308, a=0.01), "c"),
    (lambda: PiecewiseLinear(c=0.01, a=0.01, b0=1e308), "b0"),
    (lambda: Tabulated(tokens=[1, 2, 3], seconds=[1e308, 1e308, 1e308]), "seconds"),
    (lambda: Tabulated(tokens=[1, 2, 3], seconds=[1e-320, 2e-320, 3e-320]), "seconds"),
    (lambda: Tabulated(tokens=[1, 2, 2**70], seconds=[0.1, 0.2, 0.3]), "tokens"),
    (lambda: Tabulated(tokens=[0, 1e-300, 2], seconds=[1e-12, 1e6, 1e6]), "tokens"),  # PCHIP overflowed
    (lambda: stability_region(Engine(batch_time=Tabulated(tokens=[1, 2**24], seconds=[1e-3, 1e2]), b_max=2**24,
                                     k_max=1000)), "b_max"),   # every total 1..2**24 a candidate: minutes
    (lambda: stability_region(engine(k_max=100).with_(b_max=2**24), prompt_tokens=100), "b_max"),
    (lambda: Engine(batch_time=Affine(c=0.01, a=0.001), b_max=2**64), "b_max"),
    (lambda: Engine(batch_time=Affine(c=0.01, a=0.001), b_max=1e308), "b_max"),
    (lambda: engine(k_max=2**64), "k_max"),
    (lambda: engine(kv_capacity_tokens=2**64), "kv_capacity_tokens"),
    (lambda: engine(kv_capacity_tokens=float("nan")), "kv_capacity_tokens"),
    (lambda: Poisson(rate_per_s=1e308), "rate_per_s"),
    (lambda: Poisson(rate_per_s=1e-320), "rate_per_s"),
    (lambda: Gamma(rate_per_s=1.0, cv=1e308), "cv"),
    (lambda: Gamma(rate_per_s=1.0, cv=1e-320), "cv"),
    (lambda: workload(rate=1e308), "rate_per_s"),
    (lambda: workload(prompt=2**64), "prompt_tokens"),
    (lambda: workload(prompt=1e308), "prompt_tokens"),
    (lambda: Poisson(rate_per_s=1.0).times(np.random.default_rng(0), n=2**64), "n"),
    (lambda: Poisson(rate_per_s=1.0).times(np.random.default_rng(0), horizon_s=1e308), "horizon_s"),
    (lambda: Poisson(rate_per_s=1.0).times(-1, n=3), "rng"),       # an AttributeError on int.exponential
    (lambda: Poisson(rate_per_s=1.0).times(1.5, n=3), "rng"),
    (lambda: fluidq.check_stability(engine(), workload(), "sarathi", n_engines=2**64), "n_engines"),
    # stability_threshold: its own inputs
    (lambda: _threshold(rtol=float("nan")), "rtol"),
    (lambda: _threshold("vllm", method="dtmc", rtol=1e-320), "rtol"),   # hung: a bisection to 1e-320
    (lambda: _threshold("vllm", method="dtmc", rtol=1e308), "rtol"),
    (lambda: _threshold("vllm", method="dtmc", max_prefill=2**64), "max_prefill"),
    (lambda: _threshold("vllm", method="simulation", horizon_s=1e-320), "horizon_s"),
    (lambda: _threshold("vllm", method="simulation", n_replications=2**64), "n_replications"),
    # DTMC builders: a boundary mass below what the chain resolves grew the caps without end
    (lambda: _dtmc(tolerance=1e-320), "tolerance"),
    (lambda: _dtmc(kernel_tol=1e-320), "kernel_tol"),
    (lambda: _dtmc(kernel_tol=0.5), "kernel_tol"),
    # regions: points and simulated sizes
    (lambda: stability_region(engine()).margin((1e308, 1e308)), "point"),
    (lambda: region_mix(stability_region(engine()), (1e-13, 1e-13)), "point"),
    (lambda: stability_region(engine()).max_request_rate(1e-320, 1e-320), "point"),
    (lambda: _simulated_region(n_rays=2**64), "n_rays"),
    (lambda: _simulated_region(n_rays=33), "n_rays"),
    (lambda: _simulated_region(request_tokens=2**64), "request_tokens"),
    (lambda: _simulated_region(request_shapes=[(2**64, 1)]), "request_shapes"),
    (lambda: _simulated_region(request_shapes=[(1e308, 1)]), "request_shapes"),
    (lambda: _simulated_region(request_shapes=[(10, 10)] * 33), "request_shapes"),
    (lambda: _simulated_region(horizon_s=1e308), "horizon_s"),
    (lambda: _simulated_region(horizon_s=1e-320), "horizon_s"),
    (lambda: _simulated_region(n_replications=2**64), "n_replications"),
    (lambda: _simulated_region(n_rays=32, horizon_s=3000.0, n_replications=8), "horizon_s"),  # 1e8 arrivals
    # the network simulator: horizons and replications
    (lambda: simulate_network(_net(), horizon_s=1e-300), "horizon_s"),
    (lambda: simulate_network(_net(), horizon_s=1e300), "horizon_s"),
    (lambda: replicate_network(_net(), horizon_s=1.0, replications=2**64), "replications"),
    (lambda: replicate_network(_net(), horizon_s=1e6, replications=20), "replications"),
]


@pytest.mark.parametrize("call, name", REFUSED, ids=[f"{i}-{r[1]}" for i, r in enumerate(REFUSED)])
def test_refused_naming_the_parameter(call, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow/invalid-value warning on the way either
        with pytest.raises(ParameterError) as ei:
            call()
    assert name in ei.value.name, (name, str(ei.value))
    assert "\n" not in str(ei.value)


def test_edges_are_accepted():
    assert max_throughput(engine(), workload(), n_engines=10**6).tokens_per_s > 0
    assert 0 < LogNormal(mu=20, sigma=1.0).mean < 2**30
    Staircase(c=1e6, a=1e-12, b0=2**24)
    Engine(batch_time=Affine(c=0.01, a=0.001), b_max=2**24, k_max=2**24, kv_capacity_tokens=10**12)
    Poisson(rate_per_s=1e9)
    Poisson(rate_per_s=1e-9)
    Gamma(rate_per_s=1.0, cv=100.0)
    assert len(Poisson(rate_per_s=1.0).times(2**70, n=3)) == 3  # a seed beyond int64 is a seed
    # the largest budget with a tabulated model (no k_max: the triangle's best total only) and a k_max that
    # cannot bind (k_max >= b_max) answer in seconds (took 30 s and 146 s)
    big = Engine(batch_time=Tabulated(tokens=[1, 2**24], seconds=[1e-3, 1e2]), b_max=2**24)
    assert len(stability_region(big).vertices) == 3
    assert len(stability_region(engine().with_(b_max=2**24, k_max=2**24), prompt_tokens=100).vertices) == 3
    r = region_mix(stability_region(engine()), (1e-12, 1e-12))
    assert r.feasible and np.isfinite(r.scale)
    ch = _dtmc(tolerance=1e-12, kernel_tol=1e-15)
    res = ch.solve()
    assert res.status.value in ("stable", "inaccurate") and np.isfinite(res.lost_mass)
    assert np.isfinite(_simulated_region(n_rays=1, horizon_s=50.0).points).all()
    run = simulate_network(_net(), horizon_s=1e-6, rng=0)
    assert np.isnan(run.growth_rate()) or np.isfinite(run.growth_rate())


def test_network_growth_rate_of_a_tiny_window_is_nan_not_linalgerror():
    """The slope of a window too narrow to fit is NaN (np.polyfit raised LinAlgError on 1e-300 s)."""
    from fluidq.network.sim import NetworkSimResult

    t = np.linspace(0.0, 1e-300, 400)
    r = NetworkSimResult(times_s=t, in_system={"A": np.arange(400.0)}, buffer_tokens={}, station_tokens={},
                         station_requests={}, completed={}, mean_sojourn_s={}, batches=0, events=0,
                         horizon_s=1e-300, wall_s=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = r.growth_rate()
    assert np.isnan(g) or np.isfinite(g)
    t = np.linspace(0.0, 10.0, 400)
    r2 = NetworkSimResult(times_s=t, in_system={"A": 3.0 * t}, buffer_tokens={}, station_tokens={},
                          station_requests={}, completed={}, mean_sojourn_s={}, batches=0, events=0,
                          horizon_s=10.0, wall_s=0.0)
    assert r2.growth_rate() == pytest.approx(3.0)


@pytest.mark.parametrize("mu", [1e9, 1e15, 1e22])
def test_poisson_kernel_of_a_huge_mean_stays_short(mu):
    """Arrivals of 1e9 req/s over a batch: the kernel is capped (scipy's isf is NaN beyond ~1e14)."""
    from fluidq.dtmc.kernels import poisson_pmf

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = poisson_pmf(mu, 1e-12, cap=50)
    assert p.shape == (51,) and np.isfinite(p).all() and p.sum() == pytest.approx(1.0) and p[-1] == pytest.approx(1)


def test_finite_support_chain_at_a_huge_rate_builds_a_short_kernel():
    """build_finite_dtmc at 1e9 req/s asked for a Poisson vector of rate x t(b) ~ 1e8 entries per batch size."""
    from fluidq.dtmc.finite import batch_arrivals

    tb, arrivals = batch_arrivals(engine(), 1e9, 512, 1e-12, cap=41)
    A, p = arrivals(512)
    assert A.max() <= 41 and p.sum() == pytest.approx(1.0)


def test_fastertransformer_threshold_at_the_largest_budget_answers():
    """FasterTransformer's renewal threshold tabulated its decode cycle for every k up to b_max/v_p (O(k^2) per
    output length): check --b-max 16777216 --policy fastertransformer hung; one k is computed now."""
    from fluidq.dtmc.threshold import _decode_cycle_at, _decode_cycle_s

    t = Staircase(c=0.01128, a=0.03547, b0=128)
    for out in (Geometric(mean_tokens=20), fluidq.Fixed(n=30)):
        for k in (65, 200):
            assert _decode_cycle_at(t, out, k) == pytest.approx(float(_decode_cycle_s(t, out, k)[k]), rel=1e-12)
    big = Engine(batch_time=t, b_max=2**24)
    res = fluidq.check_stability(big, workload(rate=1.0), "fastertransformer")
    # k -> infinity: a cycle of k whole 100-token prompts (t = c + a ceil(100 k / b0)) and 100 decodes of k requests
    # (each c + a ceil(k / b0)) lasts a k (m_p + m_d) / b0 plus O(m_d (c + a)) seconds, so FasterTransformer's
    # renewal threshold tends to k / (a k (m_p + m_d) / b0) = b0 / (a (m_p + m_d)) = 128 / (0.03547 x 200) = 18.04
    # req/s; at k = 2^24 / 100 = 167,772 the O(m_d (c + a)) terms are 101 x 0.047 s against 9,299 s a cycle (5e-4)
    b0, a, c, m_p, m_d = 128, 0.03547, 0.01128, 100, 100
    k = 2**24 // m_p
    limit = b0 / (a * (m_p + m_d))
    assert (m_d + 1) * (c + a) / (a * k * (m_p + m_d) / b0) < 1e-3
    assert res.status == Status.STABLE and res.method == "renewal"
    assert res.threshold_requests_per_s == pytest.approx(limit, rel=1e-3)
