"""Invariants of fluid paths (hypothesis): flow balance, capacity, DAG + loads < 1 => stable and drains."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluidq import Affine, Engine
from fluidq.fluid import fluid_path, fluid_stability
from fluidq.fluid.path import FluidSystem
from fluidq.network import Fork, Hop, Join, Network, RequestClass, Station
from fluidq.results import Status


@st.composite
def networks(draw, dag=False):
    n_st = draw(st.integers(1, 3))
    stations = []
    for k in range(n_st):
        stations.append(f"E{k}")
    classes, labels_at = [], {s: [] for s in stations}
    for c in range(draw(st.integers(1, 3))):
        n_h = draw(st.integers(1, 3))
        if dag:  # stations visited in non-decreasing order: acyclic apart from re-entrant stations
            idx = sorted(draw(st.lists(st.integers(0, n_st - 1), min_size=1, max_size=n_h)))
        else:
            idx = [draw(st.integers(0, n_st - 1)) for _ in range(n_h)]
        route = []
        for j, s in enumerate(idx):
            lab = f"c{c}h{j}"
            route.append(Hop(engine=stations[s], prompt_tokens=draw(st.integers(1, 300)),
                             output_tokens=draw(st.integers(0, 60)), name=lab))
            labels_at[stations[s]].append(lab)
        if draw(st.booleans()) and not dag:
            s = draw(st.integers(0, n_st - 1))
            br = [[Hop(engine=stations[s], prompt_tokens=draw(st.integers(1, 100)), output_tokens=1, name=f"c{c}f{b}")]
                  for b in range(2)]
            labels_at[stations[s]].extend([f"c{c}f0", f"c{c}f1"])
            route = route + [Fork(name="f", branches=br), Join(name="f")]
        classes.append(RequestClass(name=f"C{c}", rate_per_s=draw(st.floats(0.01, 3.0)), route=route))
    sts = []
    for k, s in enumerate(stations):
        pr = draw(st.permutations(labels_at[s])) if (labels_at[s] and draw(st.booleans())) else []
        e = Engine(batch_time=Affine(c=draw(st.floats(0.2, 2.0)), a=0.0), b_max=draw(st.sampled_from([32, 128, 512])))
        sts.append(Station(name=s, engine=e, priority=tuple(pr)))
    return Network(stations=sts, classes=classes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(net=networks(), seed=st.integers(0, 10 ** 6), load=st.floats(0.2, 1.5))
def test_fluid_paths_conserve_mass_and_respect_capacity(net, seed, load):
    net = net.at_load(load)
    sys_ = FluidSystem(net.flow)
    rng = np.random.default_rng(seed)
    z0 = rng.exponential(500.0, size=sys_.n) * (rng.random(sys_.n) < 0.6)
    z0[[b.in_fork for b in net.flow.buffers]] = 0.0  # no fluid between a fork and its join
    p = fluid_path(net, z0, max_phases=150, cycles=3)
    t, Z, U, R, Q = p.times_s, p.levels, p.served, p.joined, p.join_levels
    scale = 1.0 + np.abs(Z).max() + np.abs(U).max()
    assert np.all(Z >= -1e-9 * scale) and np.all(np.diff(t) >= 0)
    assert np.all(np.diff(U, axis=0) >= -1e-9 * scale)
    for k in range(len(t)):
        arrived = sys_.w * (sys_.E @ sys_.lam * t[k] + sys_.B @ (U[k] / sys_.w) + sys_.J @ R[k])
        assert np.allclose(Z[k], Z[0] + arrived - U[k], atol=1e-7 * scale, rtol=1e-9)
        if sys_.G:
            into = sys_.ext_in * t[k] + sys_.BI @ (U[k] / sys_.w) + sys_.JI @ R[k]
            assert np.allclose(Q[k], Q[0] + into - R[k][sys_.join_of], atol=1e-7 * scale)
    # each point serves at most its capacity
    dU = np.diff(U, axis=0)
    dt = np.diff(t)
    for pnt in range(len(sys_.cap)):
        served = dU[:, sys_.fm.point_of == pnt].sum(axis=1)
        assert np.all(served <= sys_.cap[pnt] * dt * (1 + 1e-9) + 1e-9 * scale)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(net=networks(dag=True), seed=st.integers(0, 10 ** 6), load=st.floats(0.05, 0.95))
def test_dag_with_loads_below_one_is_stable_and_drains(net, seed, load):
    import networkx as nx

    net = net.at_load(load)
    g = net.graph.copy()
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    assert nx.is_directed_acyclic_graph(g) and max(net.loads().values()) < 1
    r = fluid_stability(net)
    assert r.status == Status.STABLE and r.certificate == "feedforward"
    rng = np.random.default_rng(seed)
    p = fluid_path(net, rng.exponential(1000.0, size=net.flow.n), max_phases=2000)
    assert p.outcome == "drained"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(net=networks(), seed=st.integers(0, 10 ** 6), load=st.floats(0.05, 0.95))
def test_stability_certificates_agree_with_fluid_paths(net, seed, load):
    net = net.at_load(load)
    r = fluid_stability(net)
    rng = np.random.default_rng(seed)
    z0 = rng.exponential(1000.0, size=net.flow.n)
    z0[[b.in_fork for b in net.flow.buffers]] = 0.0
    p = fluid_path(net, z0, max_phases=3000, cycles=2)
    if r.status == Status.STABLE:
        assert r.certificate in ("feedforward", "priority_layers", "lyapunov")
        assert p.outcome in ("drained", "draining")
    if r.status == Status.UNSTABLE:
        assert r.certificate == "diverging_path" and r.growth_factor > 1
