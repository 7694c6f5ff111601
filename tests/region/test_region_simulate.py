"""The region claims checked with the library's simulator (``fluidq.simulate`` / ``replicate``).

Deterministic arrivals (``Periodic``): one replication's trajectory is the same in every seed, so
two replications suffice and the verdict comes from ``replicate``'s slope test.  The Poisson
check (confidence interval over seeded replications) is slow and marked so.
"""
import pytest

import fluidq
from fluidq import Engine, Periodic, Poisson, Staircase, Workload
from fluidq.policies.region_aware import RegionAware
from fluidq.region import policy_region, stability_region
from fluidq.sim import replicate, simulate

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)
E1024 = Engine(batch_time=PAPER, b_max=1024, k_max=100)
AT_C = Workload(arrival=Periodic(rate_per_s=1 / 0.4675), prompt_tokens=290, output_tokens=990)


def test_region_aware_bounded_at_vertex_c():
    pol = RegionAware.for_workload(E1024, AT_C)
    assert pol.shapes == ((29, 99),)
    res = replicate(E1024, AT_C, pol, n_replications=2, horizon_s=300, rng=0, check_batches=False)
    assert res.verdict == "bounded", res.reason
    r = simulate(E1024, AT_C, pol, horizon_s=250, record_iterations=True, check_batches=True)
    late = r.iterations["t_s"] > 150
    assert (r.iterations["prefill_tokens"][late] + r.iterations["decode_tokens"][late] == 128).mean() > 0.9


def test_sarathi_1024_diverges_at_vertex_c_at_least_at_the_fluid_rate():
    res = replicate(E1024, AT_C, "sarathi", n_replications=2, horizon_s=300, rng=0)
    assert res.verdict == "growing", res.reason
    s = policy_region(E1024, "sarathi").scale_of((290 / 0.4675, 990 / 0.4675))
    # Sarathi-1024 completes at most s*lambda requests per second: tokens pile up at >= (1 - s) of the load
    assert res.slope_ci[0] >= 0.9 * (1 - s) * AT_C.token_rate_per_s, (s, res.reason)


@pytest.mark.parametrize("shape", [(300, 196), (64, 436)])
def test_region_aware_bounded_at_095_of_boundary_points(shape):
    mp, md = shape
    w = Workload(arrival=Periodic(rate_per_s=1.0), prompt_tokens=mp, output_tokens=md)
    lam = fluidq.max_throughput(E1024, w).requests_per_s
    w = w.with_rate(0.95 * lam)
    region = stability_region(E1024, prompt_tokens=mp)
    q = region.boundary_point((mp, md))
    # a boundary point strictly between two vertices (facet C--(285, 99) or (0, 100)--C)
    assert min(((region.vertices - q) ** 2).sum(axis=1)) > 1.0
    pol = RegionAware.for_workload(E1024, w)
    assert len(pol.shapes) == 2
    res = replicate(E1024, w, pol, n_replications=2, horizon_s=300, rng=0, check_batches=False)
    assert res.verdict == "bounded", res.reason


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(290, 990), (300, 196)])
def test_region_aware_bounded_poisson_ci(shape):
    mp, md = shape
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=mp, output_tokens=md)
    w = w.with_rate(0.8 * fluidq.max_throughput(E1024, w).requests_per_s)
    res = replicate(E1024, w, RegionAware.for_workload(E1024, w), n_replications=6, horizon_s=600, rng=3,
                    check_batches=False)
    assert res.verdict == "bounded", res.reason
