"""In simulation: the region-aware scheduler stays bounded at vertex C and at 0.95 of other
boundary points; Sarathi with b_max = 1024 diverges at C (reference §4).

Deterministic arrivals (one request every ``1/lambda`` s) and a test-only stepping loop
(``_region_loop.run``), so there is no randomness to put a confidence interval on: the trajectories are
reproducible exactly.  Boundedness: the most requests present in the last quarter of the run is
not above the most in the second quarter (plus a small slack); divergence: the number present
grows at least at the rate the fluid argument gives, ``(1 - s) lambda`` with ``s`` the policy
region's scale at the point.
"""
import numpy as np
import pytest

import fluidq
from fluidq import Engine, Staircase
from fluidq.policies.region_aware import RegionAware
from fluidq.region import policy_region, stability_region

from _region_loop import run

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)
E1024 = Engine(batch_time=PAPER, b_max=1024, k_max=100)


def quarters(tr):
    edges = np.linspace(0, tr.times[-1], 5)
    return [int(tr.in_system[(tr.times >= lo) & (tr.times < hi)].max()) for lo, hi in zip(edges[:-1], edges[1:])]


def bounded(tr):
    q = quarters(tr)
    return q[3] <= q[1] * 1.02 + 3, q


def growth_per_s(tr):
    half = tr.times >= tr.times[-1] / 2
    return float(np.polyfit(tr.times[half], tr.in_system[half], 1)[0])


def test_region_aware_bounded_at_vertex_c():
    pol = RegionAware(engine=E1024, target_tokens_per_s=(290 / 0.4675, 990 / 0.4675))
    assert pol.shapes == ((29, 99),)
    tr = run(E1024, pol, prompt=290, output=990, period_s=0.4675, horizon_s=300.0)
    ok, q = bounded(tr)
    assert ok, q
    assert q[3] <= 101  # 99 decoding + the one prefilling (+1 arriving)
    assert tr.completed > 400
    # almost every batch is the 128-token shape of vertex C
    assert tr.shapes.get((29, 99), 0) / sum(tr.shapes.values()) > 0.7


def test_region_aware_batches_are_admissible():
    pol = RegionAware(engine=E1024, target_tokens_per_s=(1500.0, 1300.0))
    run(E1024, pol, prompt=300, output=260, period_s=300 / (0.9 * 1500.0), horizon_s=30.0, check=True)


def test_sarathi_1024_diverges_at_vertex_c():
    tr = run(E1024, fluidq.Sarathi(), prompt=290, output=990, period_s=0.4675, horizon_s=300.0)
    ok, q = bounded(tr)
    assert not ok, q
    s = policy_region(E1024, "sarathi").scale_of((290 / 0.4675, 990 / 0.4675))
    assert s < 0.9
    lam = 1 / 0.4675
    # fluid lower bound on the growth of requests present: (1 - s) * lambda
    assert growth_per_s(tr) >= 0.8 * (1 - s) * lam


@pytest.mark.slow  # also checked with fluidq.simulate in tests/sim
def test_sarathi_128_bounded_at_vertex_c():
    tr = run(E1024, fluidq.Sarathi(b_max=128), prompt=290, output=990, period_s=0.4675, horizon_s=300.0)
    assert bounded(tr)[0]


def _case(region, q, total=500):
    """Integer request (prompt, output) along the direction of q and 0.95 of its lambda*."""
    mp = max(1, int(round(total * q[0] / (q[0] + q[1]))))
    md = max(1, total - mp)
    return mp, md, 0.95 * region.max_request_rate(mp, md)


R = stability_region(E1024)
# boundary points: the midpoint of each facet off the axes, and the mixed vertices


def _off_axes(i, j):
    u, v = R.vertices[i], R.vertices[j]
    return u.sum() > 0 and v.sum() > 0 and not (u[0] == v[0] == 0) and not (u[1] == v[1] == 0)


FACETS = [(int(i), int(j)) for i, j in R.facet_vertices if _off_axes(i, j)]


def _name(s):
    return f"({int(s[0])}p+{int(s[1])}d)"


POINTS = {f"facet {_name(R.shapes[i])}-{_name(R.shapes[j])}": 0.5 * (R.vertices[i] + R.vertices[j]) for i, j in FACETS}
POINTS.update({f"vertex {_name(s)}": v for s, v in zip(R.shapes, R.vertices) if np.all(v > 0)})


@pytest.mark.parametrize("label", sorted(POINTS))
def test_region_aware_bounded_at_095_of_boundary_points(label):
    mp, md, lam = _case(R, POINTS[label])
    pol = RegionAware(engine=E1024, target_tokens_per_s=(lam * mp, lam * md), prompt_tokens=mp)
    horizon = 150.0 + 10 * md * 0.05  # ~10 lifetimes of a request after the first 150 s
    tr = run(E1024, pol, prompt=mp, output=md, period_s=1 / lam, horizon_s=horizon)
    ok, q = bounded(tr)
    assert ok, (label, mp, md, q)
    assert tr.completed >= 0.8 * lam * horizon - q[3]


def test_sarathi_1024_diverges_at_095_of_the_facet_through_c():
    mp, md, lam = _case(R, POINTS["facet (925p+99d)-(29p+99d)"])
    assert policy_region(E1024, "sarathi").scale_of((lam * mp, lam * md)) < 1
    tr = run(E1024, fluidq.Sarathi(), prompt=mp, output=md, period_s=1 / lam, horizon_s=150.0)
    assert not bounded(tr)[0]


def test_there_are_enough_boundary_points():
    # three facets off the axes and two mixed vertices (C and (925, 99)) for this engine
    assert len(FACETS) == 3 and len(POINTS) == 5


def test_adaptive_ladder_bounded_at_095_of_a_facet():
    mp, md, lam = _case(R, 0.5 * (R.vertices[2] + R.vertices[3]))
    tr = run(E1024, RegionAware(engine=E1024, prompt_tokens=mp), prompt=mp, output=md, period_s=1 / lam,
             horizon_s=200.0)
    assert bounded(tr)[0]


def _sweep_case(b_max, k_max, mp, md=None):
    md = 400 - mp if md is None else md
    e = Engine(batch_time=PAPER, b_max=b_max, k_max=k_max)
    lam = 0.95 * stability_region(e, prompt_tokens=mp).max_request_rate(mp, md)
    pol = RegionAware(engine=e, target_tokens_per_s=(lam * mp, lam * md), prompt_tokens=mp)
    tr = run(e, pol, prompt=mp, output=md, period_s=1 / lam, horizon_s=200.0 + 10 * md * 0.05)
    return bounded(tr)


@pytest.mark.parametrize("b_max,k_max,mp", [
    pytest.param(512, 200, 200, marks=pytest.mark.slow), (2048, 64, 380),
    pytest.param(256, 20, 120, marks=pytest.mark.slow)])
def test_region_aware_bounded_on_other_engines(b_max, k_max, mp):
    ok, q = _sweep_case(b_max, k_max, mp)
    assert ok, q


@pytest.mark.slow
@pytest.mark.parametrize("b_max", [256, 512, 2048])
@pytest.mark.parametrize("k_max", [20, 64, 100, 200])
def test_region_aware_bounded_sweep(b_max, k_max):
    """0.95 of the boundary on five rays for each engine (prompt-aware region, 400-token requests)."""
    for mp in (20, 120, 200, 280, 380):
        ok, q = _sweep_case(b_max, k_max, mp)
        assert ok, (b_max, k_max, mp, q)
