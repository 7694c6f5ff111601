"""Fluid verdicts for the reference networks (§2-3) and the single-engine backlog slope."""
from __future__ import annotations

import numpy as np
import pytest

import fluidq
from fluidq.fluid import backlog_slope, fluid_path, fluid_stability, lyapunov_certificate
from fluidq.network.examples import llm_rybko_stolyar, lu_kumar, rybko_stolyar
from fluidq.results import Status


@pytest.mark.parametrize("make", [rybko_stolyar, lu_kumar])
def test_classical_exit_priority_diverges(make):
    r = fluid_stability(make())
    assert r.status == Status.UNSTABLE and r.certificate == "diverging_path"
    assert r.growth_factor > 1.2
    assert max(r.loads.values()) == pytest.approx(0.7)
    # the diverging path really grows: each peak exceeds the one two peaks before (a cycle has two)
    p = fluid_path(make(), {"1": 1.0}, cycles=6)
    peaks = [v for _, v in p.peaks]
    assert len(peaks) >= 4 and all(b > a for a, b in zip(peaks, peaks[2:]))


@pytest.mark.parametrize("make", [rybko_stolyar, lu_kumar])
def test_classical_stable_when_virtual_station_below_one_or_reversed(make):
    # lambda (m2 + m4) = 0.8 * 1.2 < 1
    r = fluid_stability(make(rate_per_s=0.8))
    assert r.status == Status.STABLE and r.certificate == "lyapunov"
    r = fluid_stability(make(priority="reversed"))
    assert r.status == Status.STABLE and r.certificate in ("priority_layers", "lyapunov")
    # whatever decided, a linear Lyapunov function exists for the reversed priorities too
    c, rows = lyapunov_certificate(make(priority="reversed"))
    assert c is not None and rows > 0


def test_virtual_station_threshold_is_sharp_for_rybko_stolyar():
    # unstable just above lambda (m2 + m4) = 1, stable just below
    lam = 1 / 1.2
    assert fluid_stability(rybko_stolyar(rate_per_s=1.02 * lam)).status == Status.UNSTABLE
    assert fluid_stability(rybko_stolyar(rate_per_s=0.98 * lam)).status == Status.STABLE


def test_rybko_stolyar_first_phases_by_hand():
    # all fluid (100 tokens = 100/12 jobs) in class 4: station 1 drains it at 20 tokens/s while class 3's
    # arrivals (1 job/s = 12 tokens/s into class 4) pass through station 2: class 4 empties at t = 12.5,
    # by then class 1 holds 2 tokens/s * 12.5 s = 25 tokens.
    p = fluid_path(rybko_stolyar(), {"4": 100.0}, max_phases=1)
    assert p.times_s[1] == pytest.approx(12.5)
    assert p.levels[1] == pytest.approx([25.0, 0.0, 0.0, 0.0])


def test_llm_rybko_stolyar_peaks_grow_about_4x():
    net = llm_rybko_stolyar()
    assert net.loads() == pytest.approx({"E1": 0.9, "E2": 0.9})
    r = fluid_stability(net)
    assert r.status == Status.UNSTABLE and r.certificate == "diverging_path"
    p = fluid_path(net, {"A.1": 100 * 64.0}, cycles=6)
    peaks = np.array([v for _, v in p.peaks])
    ratios = peaks[1:] / peaks[:-1]
    assert len(ratios) >= 3
    assert np.all((ratios > 3.5) & (ratios < 4.5))          # "about 4x per cycle" (peak to peak)
    assert p.growth_factor == pytest.approx(ratios[-1] ** 2, rel=1e-6)  # two peaks per full cycle


def test_llm_rybko_stolyar_reversed_is_bounded():
    net = llm_rybko_stolyar(priority="reversed")
    r = fluid_stability(net)
    assert r.status == Status.STABLE and r.certificate == "priority_layers"
    p = fluid_path(net, {"A.1": 6400.0, "B.1": 3200.0})
    assert p.outcome == "drained"
    assert p.total_tokens.max() <= 1.0001 * max(p.total_tokens[0], p.total_tokens[1:3].max())
    # a linear Lyapunov function bounds the drain time: V(z0) = c . z0
    c, _ = lyapunov_certificate(net)
    assert p.drain_time_s <= c @ p.levels[0] + 1e-9


def test_lyapunov_function_decreases_along_paths():
    net = rybko_stolyar(priority="reversed")
    c, _ = lyapunov_certificate(net)
    rng = np.random.default_rng(5)
    for _ in range(5):
        z0 = rng.exponential(10.0, size=4)
        p = fluid_path(net, z0)
        V = p.levels @ c
        dt = np.diff(p.times_s)
        keep = dt > 1e-12
        assert np.all(np.diff(V)[keep] <= -dt[keep] * (1 - 1e-9))


def test_parallel_engines(small):
    jsq = small["jsq"]()
    assert fluid_stability(jsq.at_load(0.9)).status == Status.STABLE
    r = fluid_stability(jsq.at_load(1.1))
    assert r.status == Status.UNSTABLE and r.certificate == "load"
    # uniform random split over a 2:1 pair at 0.8 of the combined capacity overloads the slow one
    uni = small["random"]((0.5, 0.5))
    prop = small["random"]((2 / 3, 1 / 3))
    total = sum(s.capacity_tokens_per_s for s in uni.stations)
    rate = 0.8 * total / 104
    uni, prop = uni.scaled(rate), prop.scaled(rate)
    ru = fluid_stability(uni)
    assert ru.status == Status.UNSTABLE and ru.loads["slow"] == pytest.approx(1.2)
    assert fluid_stability(prop).status == Status.STABLE


@pytest.mark.parametrize("kind", ["dag", "fork_join"])
def test_dag_and_fork_join(small, kind):
    net = small[kind]()
    r = fluid_stability(net.at_load(0.9))
    assert r.status == Status.STABLE and r.certificate == "feedforward"
    r = fluid_stability(net.at_load(1.1))
    assert r.status == Status.UNSTABLE and r.certificate == "load"
    assert r.backlog_slope_tokens_per_s > 0


def test_fork_join_fluid_path_drains_and_joins(small):
    net = small["fork_join"]().at_load(0.9)
    p = fluid_path(net, {"orchestrate": 5000.0})
    assert p.outcome == "drained"
    # everything forked is eventually joined: join backlogs end empty
    assert np.allclose(p.join_levels[-1], 0.0)


def test_single_engine_backlog_slope_matches_reference():
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam_star = 512 / 0.15316 / 200  # requests/s at capacity for (100, 100)
    for f, want in ((1.1, 334.29), (1.2, 668.58)):  # reference: 0.33429 and 0.66858 tokens/ms
        w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=f * lam_star), prompt_tokens=100, output_tokens=100)
        assert backlog_slope(e, w) == pytest.approx(want, rel=2e-4)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=0.9 * lam_star), prompt_tokens=100, output_tokens=100)
    assert backlog_slope(e, w) == 0.0


def test_network_of_one_engine_grows_at_the_same_slope():
    from fluidq.network import Hop, Network, RequestClass, Station

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam = 1.2 * 512 / 0.15316 / 200
    net = Network(stations=[Station(name="E", engine=e)],
                  classes=[RequestClass(name="A", rate_per_s=lam, route=[Hop(engine="E", prompt_tokens=100, output_tokens=100)])])
    r = fluid_stability(net)
    assert r.status == Status.UNSTABLE and r.backlog_slope_tokens_per_s == pytest.approx(668.58, rel=2e-4)


def test_non_work_conserving_engine_gives_unknown():
    from fluidq.network import Hop, Network, RequestClass, Station

    e = fluidq.Engine(batch_time=fluidq.Affine(c=1.0, a=0.0), b_max=64)
    net = Network(stations=[Station(name="E", engine=e, policy="vllm")],
                  classes=[RequestClass(name="A", rate_per_s=1.0, route=[Hop(engine="E", prompt_tokens=8, output_tokens=8)])])
    r = fluid_stability(net)
    assert r.status == Status.UNKNOWN and "not work-conserving" in r.reason
    # ... but overload is decided whatever the scheduler
    assert fluid_stability(net.scaled(10.0)).status == Status.UNSTABLE


def test_no_priority_rybko_stolyar_is_unknown_not_guessed():
    r = fluid_stability(rybko_stolyar(priority=None))
    assert r.status == Status.UNKNOWN and r.certificate is None and "no proof" in r.reason


def test_reentrant_station_in_an_otherwise_acyclic_network_is_stable():
    from fluidq.network import Hop, Network, RequestClass, Station

    e = fluidq.Engine(batch_time=fluidq.Affine(c=1.0, a=0.0), b_max=256)
    # plan twice on E1 (exit priority there), then code on E2: E1 -> E1 -> E2
    net = Network(stations=[Station(name="E1", engine=e, priority=["t.2", "t.1"]), Station(name="E2", engine=e)],
                  classes=[RequestClass(name="t", rate_per_s=1.0, route=[
                      Hop(engine="E1", prompt_tokens=60, output_tokens=4), Hop(engine="E1", prompt_tokens=100, output_tokens=8),
                      Hop(engine="E2", prompt_tokens=200, output_tokens=16)])])
    assert not net.is_dag and net.cycles() == [["E1"]]
    r = fluid_stability(net.at_load(0.95))
    assert r.status == Status.STABLE and r.certificate == "feedforward" and "re-entrant" in r.reason
    rng = np.random.default_rng(3)
    for _ in range(5):
        p = fluid_path(net.at_load(0.95), rng.exponential(2000.0, size=3))
        assert p.outcome == "drained"
    assert fluid_stability(net.at_load(1.05)).status == Status.UNSTABLE


def test_priority_layers_scale_to_large_rings():
    from fluidq.network import Hop, Network, RequestClass, Station

    e = fluidq.Engine(batch_time=fluidq.Affine(c=1.0, a=0.0), b_max=768)
    m = 25

    def ring(entering_first):
        st = []
        for k in range(m):
            pr = (f"T{k}.1", f"T{(k - 1) % m}.2") if entering_first else (f"T{(k - 1) % m}.2", f"T{k}.1")
            st.append(Station(name=f"S{k}", engine=e, priority=pr))
        cl = [RequestClass(name=f"T{k}", rate_per_s=0.9 * 768 / 512, route=[
            Hop(engine=f"S{k}", prompt_tokens=128, output_tokens=32, name=f"T{k}.1"),
            Hop(engine=f"S{(k + 1) % m}", prompt_tokens=320, output_tokens=32, name=f"T{k}.2")]) for k in range(m)]
        return Network(stations=st, classes=cl)

    r = fluid_stability(ring(True))
    assert r.status == Status.STABLE and r.certificate == "priority_layers"
    r = fluid_stability(ring(False))
    assert r.status == Status.UNSTABLE and r.certificate == "diverging_path" and r.growth_factor > 10
    # the certificate's claim, checked on paths: entering-first rings drain from random states
    rng = np.random.default_rng(8)
    p = fluid_path(ring(True), rng.exponential(3000.0, size=2 * m))
    assert p.outcome == "drained"


def test_no_initial_fluid_inside_a_fork(small):
    from fluidq.errors import ParameterError

    with pytest.raises(ParameterError, match="between a fork and its join"):
        fluid_path(small["fork_join"](), {"search": 10.0})
