"""Network chains: parallel engines behind JSQ / random routers, the Rybko-Stolyar network."""
import numpy as np
import pytest

import fluidq
from fluidq.dtmc.networks import parallel_engines, rybko_stolyar, virtual_station_work
from fluidq.results import Status

G = fluidq.Geometric


@pytest.fixture
def tiny_engine():
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=4), b_max=4)


def wl(rate):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=G(mean_tokens=5),
                           output_tokens=G(mean_tokens=5))


def test_two_jsq_engines_are_stable_below_twice_the_single_capacity(tiny_engine):
    lam1 = fluidq.max_throughput(tiny_engine, wl(1.0)).requests_per_s
    for f in (0.5, 1.2, 1.6):  # above one engine's capacity, below two
        r = parallel_engines(tiny_engine, wl(f * lam1), "jsq", cap=70).solve()
        assert r.status == Status.STABLE, (f, r.reason)
        assert r.pi.sum() == pytest.approx(1.0) and np.all(r.pi >= 0)
    r = parallel_engines(tiny_engine, wl(2.1 * lam1), "jsq", cap=40).solve()
    assert r.status == Status.UNSTABLE and r.means == {}


def test_jsq_beats_random_routing(tiny_engine):
    lam1 = fluidq.max_throughput(tiny_engine, wl(1.0)).requests_per_s
    j = parallel_engines(tiny_engine, wl(1.2 * lam1), "jsq", cap=70).solve()
    r = parallel_engines(tiny_engine, wl(1.2 * lam1), "random", cap=70).solve()
    assert r.status == Status.STABLE
    assert j.mean_total < r.mean_total
    bad = parallel_engines(tiny_engine, wl(1.2 * lam1), "random", probabilities=(0.9, 0.1), cap=30).solve()
    assert bad.status == Status.UNSTABLE


def test_rybko_stolyar_virtual_station_drift_is_positive_where_exit_classes_block():
    lam, means = 1.0, (0.1, 0.6, 0.1, 0.6)  # station loads 0.7 < 1 but lambda (m2 + m4) = 1.2 > 1
    ch = rybko_stolyar(lam, means, cap=8)
    assert max(ch.inputs["station_loads"]) < 1 and ch.inputs["virtual_load"] > 1
    d = ch.drift(virtual_station_work(ch))
    x = ch.coords()
    inner = (x["x1"] < 8) & (x["x3"] < 8) & (x["x2"] < 8) & (x["x4"] < 8)  # a move into a full class is lost
    # class 2 in service, class 4 empty, class 3 waiting behind class 2 (and the mirror image)
    blk = inner & (x["x2"] > 0) & (x["x4"] == 0) & (x["x3"] > 0)
    blk |= inner & (x["x4"] > 0) & (x["x2"] == 0) & (x["x1"] > 0)
    assert blk.sum() > 50
    assert np.allclose(d[blk], lam * (means[1] + means[3]) - 1.0)
    assert np.all(d[blk] > 0)
    assert ch.solve().status == Status.UNSTABLE


def test_rybko_stolyar_stationary_solve_when_virtual_load_below_one():
    ch = rybko_stolyar(0.25, (0.1, 0.6, 0.1, 0.6), cap=8)  # lambda (m2 + m4) = 0.3
    r = ch.solve(tolerance=1e-4)
    assert r.status == Status.STABLE, r.reason
    assert r.pi.sum() == pytest.approx(1.0) and np.all(r.pi >= 0)
    # symmetric network: classes 1/3 and 2/4 have equal means
    assert r.means["x1"] == pytest.approx(r.means["x3"], rel=1e-6)
    assert r.means["x2"] == pytest.approx(r.means["x4"], rel=1e-6)


def test_network_bad_input(tiny_engine):
    with pytest.raises(fluidq.FluidqError):
        parallel_engines(tiny_engine, wl(1.0), "round-robin")
    with pytest.raises(fluidq.FluidqError):
        parallel_engines(tiny_engine, wl(1.0), "random", probabilities=(0.5, 0.6))
    with pytest.raises(fluidq.FluidqError):
        rybko_stolyar(1.0, means=(1, 2, 3))


def test_dag_tandem_and_split(tiny_engine):
    from fluidq.dtmc.networks import dag_network

    cap1 = fluidq.max_throughput(tiny_engine).tokens_per_s
    # engine 1 -> engines 2 and 3 with probabilities 0.5 / 0.3 (0.2 leave), hop of 10 tokens each
    lam = 0.6 * cap1 / 10
    R = [[0, 0.5, 0.3], [0, 0, 0], [0, 0, 0]]
    ch = dag_network([tiny_engine] * 3, [lam, 0, 0], [10, 10, 10], R, cap=20)
    assert ch.inputs["flows_per_s"] == pytest.approx([lam, 0.5 * lam, 0.3 * lam])
    r = ch.solve(tolerance=1e-5)
    assert r.status == Status.STABLE, r.reason
    # less traffic downstream, fewer requests there
    assert r.means["n1"] > r.means["n2"] > r.means["n3"]
    with pytest.raises(fluidq.FluidqError, match="cycle"):
        dag_network([tiny_engine] * 2, [lam, 0], [10, 10], [[0, 0.5], [0.5, 0]])
    over = dag_network([tiny_engine] * 2, [1.1 * cap1 / 10, 0], [10, 10], [[0, 1], [0, 0]], cap=10)
    assert over.solve().status == Status.UNSTABLE


def test_fork_join_join_buffer_and_symmetry(tiny_engine):
    from fluidq.dtmc.networks import fork_join

    lam1 = fluidq.max_throughput(tiny_engine, wl(1.0)).requests_per_s
    ch = fork_join(tiny_engine, wl(0.4 * lam1), cap=12)
    r = ch.solve(tolerance=1e-5)
    assert r.status == Status.STABLE, r.reason
    assert r.means["only1"] == pytest.approx(r.means["only2"], rel=1e-6)  # symmetric branches
    assert r.means["only1"] + r.means["only2"] > 0  # the join buffer holds finished branches
    assert fork_join(tiny_engine, wl(1.05 * lam1), cap=5).solve().status == Status.UNSTABLE


def test_rybko_stolyar_symbolic_conditions():
    import sympy as sp

    from fluidq.dtmc.networks import rybko_stolyar_symbolic

    s = rybko_stolyar_symbolic()
    lam, m1, m2, m3, m4 = s["symbols"]
    assert sp.simplify(s["virtual_drift"] - (lam * (m2 + m4) - 1)) == 0
    vals = {lam: 1.0, m1: 0.1, m2: 0.6, m3: 0.1, m4: 0.6}
    assert float(s["station1"].subs(vals)) < 1 and float(s["station2"].subs(vals)) < 1
    assert float(s["virtual_drift"].subs(vals)) == pytest.approx(0.2)
    # the chain's numerical drift in a blocking state equals the symbolic one
    ch = rybko_stolyar(1.0, (0.1, 0.6, 0.1, 0.6), cap=6)
    i = ch.space.find(x1=2, x2=1, x3=2, x4=0)
    assert ch.drift(virtual_station_work(ch))[i] == pytest.approx(float(s["virtual_drift"].subs(vals)))


@pytest.mark.parametrize("lam,priority,stable", [(0.25, "exit", True), (1.0, "exit", False),
                                                 (0.35, "reversed", True)])
def test_rybko_stolyar_chain_agrees_with_the_fluid_model(lam, priority, stable):
    # the fluid model of the networks issue and this chain give the same verdict on the classical network
    from fluidq.network.examples import rybko_stolyar as fluid_rs

    fl = fluidq.fluid_stability(fluid_rs(priority=priority, rate_per_s=lam))
    assert (fl.status == Status.STABLE) == stable
    ch = rybko_stolyar(lam, (0.1, 0.6, 0.1, 0.6), priority="exit" if priority == "exit" else "entry", cap=8)
    r = ch.solve(tolerance=1e-3)
    if stable:
        assert r.status == Status.STABLE, r.reason
    else:
        assert r.status == Status.UNSTABLE
        x = ch.coords()
        blk = (x["x2"] > 0) & (x["x4"] == 0) & (x["x3"] > 0) & (x["x1"] < 8) & (x["x3"] < 8) & (x["x2"] < 8)
        assert np.all(ch.drift(virtual_station_work(ch))[blk] > 0)


def _simulate_rybko_stolyar_entry(lam, means, horizon_s, seed, warm_frac=0.1):
    """Gillespie simulation of the Rybko-Stolyar network under entry priorities (station 1 serves class
    1 before 4, station 2 class 3 before 2), written from the model, not from the chain: time-average
    class counts after a warm-up."""
    rng = np.random.default_rng(seed)
    m1, m2, m3, m4 = means
    x = [0, 0, 0, 0]
    t, t0, area = 0.0, warm_frac * horizon_s, np.zeros(4)
    exps, us, k = rng.exponential(size=1 << 16), rng.random(1 << 16), 0
    while t < horizon_s:
        if k == exps.size:
            exps, us, k = rng.exponential(size=1 << 16), rng.random(1 << 16), 0
        s1 = (1 / m1, 0.0) if x[0] > 0 else (0.0, 1 / m4 if x[3] > 0 else 0.0)
        s2 = (1 / m3, 0.0) if x[2] > 0 else (0.0, 1 / m2 if x[1] > 0 else 0.0)
        r = (lam, lam, s1[0], s1[1], s2[0], s2[1])
        tot = sum(r)
        dt = exps[k] / tot
        lo, hi = max(t, t0), min(t + dt, horizon_s)
        if hi > lo:
            area += np.asarray(x) * (hi - lo)
        t += dt
        u, e, acc = us[k] * tot, 0, r[0]
        while u > acc and e < 5:
            e += 1
            acc += r[e]
        k += 1
        if e == 0:
            x[0] += 1
        elif e == 1:
            x[2] += 1
        elif e == 2:
            x[0] -= 1
            x[1] += 1
        elif e == 3:
            x[3] -= 1
        elif e == 4:
            x[2] -= 1
            x[3] += 1
        else:
            x[1] -= 1
    return area / (horizon_s - t0)


def test_reversed_rybko_stolyar_at_1_2_solves_on_the_default_cap_without_warnings():
    import warnings

    # entry priorities are stable at lambda = 1.2 (station loads 0.84) although lambda (m2 + m4) = 1.44 > 1;
    # blocked moves used to freeze a station and make the full corner of the box absorbing (singular LU,
    # all mass at the caps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ch = rybko_stolyar(1.2, priority="entry")
        assert ch.n_states == 28_561
        r = ch.solve()
        small = rybko_stolyar(1.2, priority="entry", cap=8).solve()
    for res in (r, small):
        assert res.residual < 1e-9 and res.method != "failed"
        assert res.lost_mass < 0.01  # was ~1: the absorbing corner
        assert "residual" in res.reason or "truncation caps" in res.reason
    x = ch.coords()
    corner = (x["x1"] == 12) & (x["x2"] == 12) & (x["x3"] == 12) & (x["x4"] == 12)
    assert r.pi[corner].sum() < 1e-9
    # every solver reaches the same vector; the ILU-preconditioned GMRES to round-off
    ilu = ch.solve("ilu")
    assert ilu.method == "ilu" and ilu.residual < 1e-12
    assert np.abs(ilu.pi - r.pi).sum() < 1e-7


def test_reversed_rybko_stolyar_at_1_2_agrees_with_simulation():
    from scipy import stats

    means = (0.1, 0.6, 0.1, 0.6)
    r = rybko_stolyar(1.2, means, priority="entry", cap=(5, 30, 5, 30)).solve(tolerance=1e-4)
    assert r.status == Status.STABLE, r.reason
    runs = np.array([_simulate_rybko_stolyar_entry(1.2, means, 6000.0, 20261203 + i) for i in range(8)])
    mean, half = runs.mean(axis=0), stats.t.ppf(0.995, 7) * runs.std(axis=0, ddof=1) / np.sqrt(8)
    for i, name in enumerate(("x1", "x2", "x3", "x4")):
        assert abs(r.means[name] - mean[i]) <= half[i], (name, r.means[name], mean[i], half[i])


def test_ilu_is_judged_by_the_stationary_residual_and_the_cli_offers_it(capsys):
    from fluidq.testing.cli import run_cli

    r = rybko_stolyar(1.2, priority="entry", cap=6).solve("ilu")
    assert r.method == "ilu" and r.residual < 1e-12, r.reason
    rc, out, err = run_cli(["dtmc", "--rate", "1", "--max-prefill", "4", "--max-decode", "20", "--solver", "ilu",
                            "--b-max", "16"], capsys)
    assert rc == 0 and "(ilu)" in out, (out, err)


@pytest.mark.parametrize("policy,prompt,probs", [("sarathi", G(mean_tokens=6), (0.7, 0.3)),
                                                 ("vllm", 4, (0.5, 0.5))])
def test_llm_engines_behind_a_random_router_agree_with_simulate_network(policy, prompt, probs):
    # independent routing splits Poisson arrivals into independent Poisson streams: the product of
    # the engines' own chains is exact for fluidq.simulate_network's random router
    from scipy import stats

    from fluidq.dtmc.networks import random_routing_engines
    from fluidq.network import Hop, Network, RequestClass, Router, Station
    from fluidq.network.sim import replicate_network

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=8), b_max=16)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=6.0), prompt_tokens=prompt, output_tokens=G(mean_tokens=8))
    r = random_routing_engines([e, e], w, policy, probabilities=probs, max_prefill=40, max_decode=80)
    assert r.status == Status.STABLE and r.rates_per_s == pytest.approx((6.0 * probs[0], 6.0 * probs[1]))
    net = Network(stations=[Station(name="E1", engine=e, policy=policy), Station(name="E2", engine=e, policy=policy)],
                  routers=[Router(name="R", engines=("E1", "E2"), policy="random", probabilities=probs)],
                  classes=[RequestClass(name="A", rate_per_s=6.0,
                                        route=[Hop(engine="R", prompt_tokens=prompt, output_tokens=G(mean_tokens=8))])])
    runs = replicate_network(net, horizon_s=1500.0, replications=8, rng=20261203)
    for j, st in enumerate(("E1", "E2")):
        v = np.array([np.mean(x.station_requests[st][len(x.times_s) // 10:]) for x in runs])
        half = stats.t.ppf(0.995, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
        assert abs(r.results[j].mean_requests - v.mean()) <= half, (st, r.results[j].mean_requests, v.mean(), half)
    assert r.mean_requests == pytest.approx(sum(x.mean_requests for x in r.results))
    with pytest.raises(fluidq.FluidqError, match="probabilities"):
        random_routing_engines([e, e], w, policy, probabilities=(1.0, 0.0))
