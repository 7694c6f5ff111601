"""An unshipped DAG network (a choice, a fork-join, a random router, prompt-only hops, four batch-time forms): the
loads fluidq computes equal the traffic equations worked by hand, and simulated hop completions per station match
the hand-computed visit rates (Student-t interval over seeded replications).  Written by the independent probe."""
import numpy as np
import pytest
from scipy import stats

import fluidq as fq
from fluidq.network import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station

LX, LY, LZ = 20.0, 30.0, 15.0


def _net():
    E = {"A": fq.Engine(batch_time=fq.Affine(c=0.01, a=5e-5), b_max=256),
         "B": fq.Engine(batch_time=fq.Staircase(c=0.008, a=0.01, b0=64), b_max=200),
         "C": fq.Engine(batch_time=fq.Affine(c=0.02, a=2e-5), b_max=512),
         "D": fq.Engine(batch_time=fq.PiecewiseLinear(c=0.015, a=1e-4, b0=64), b_max=128)}
    G = fq.Geometric
    classes = [
        RequestClass(name="X", rate_per_s=LX, route=[
            Hop(engine="A", prompt_tokens=20, output_tokens=10),
            Choice(options=[(0.3, [Hop(engine="B", prompt_tokens=30, output_tokens=5)]), (0.7, [])]),
            Fork(name="f", branches=[[Hop(engine="C", prompt_tokens=10, output_tokens=10)],
                                     [Hop(engine="D", prompt_tokens=15, output_tokens=5)]]),
            Join(name="f")]),
        RequestClass(name="Y", rate_per_s=LY, route=[
            Hop(engine="R", prompt_tokens=40, output_tokens=20),
            Hop(engine="D", prompt_tokens=G(mean_tokens=10.0), output_tokens=G(mean_tokens=30.0))]),
        RequestClass(name="Z", rate_per_s=LZ, route=[Hop(engine="B", prompt_tokens=G(mean_tokens=50.0), output_tokens=0)]),
    ]
    net = Network(stations=[Station(name=k, engine=e) for k, e in E.items()], classes=classes,
                  routers=[Router(name="R", engines=("A", "C"), policy="random", probabilities=(0.25, 0.75))],
                  claim="dag")
    return net, E


HOPS = {"A": LX + 0.25 * LY, "B": 0.3 * LX + LZ, "C": LX + 0.75 * LY, "D": LX + LY}
TOKENS = {"A": LX * 30 + 0.25 * LY * 60, "B": 0.3 * LX * 35 + LZ * 50, "C": LX * 20 + 0.75 * LY * 60,
          "D": LX * 20 + LY * 40}


def test_loads_are_the_hand_traffic_equations():
    net, E = _net()
    loads = net.loads()
    for k, e in E.items():
        assert loads[k] == pytest.approx(TOKENS[k] / (e.b_max / float(e.batch_time(e.b_max))), rel=1e-12)
    assert fq.fluid_stability(net).status == fq.Status.STABLE
    assert fq.fluid_stability(net.at_load(1.1)).status == fq.Status.UNSTABLE


def test_simulated_hop_rates_match_the_visit_rates():
    net, E = _net()
    H, warm, n = 400.0, 50.0, 8
    rates = {k: [] for k in E}
    for s in range(n):
        r = fq.simulate_network(net, horizon_s=H, rng=100 + s, record_hops=True)
        st, fin = np.asarray(r.hops["station"]), np.asarray(r.hops["finish_s"])
        for j, k in enumerate(E):
            rates[k].append(np.count_nonzero((fin > warm) & (st == j)) / (H - warm))
    for k in E:
        a = np.asarray(rates[k])
        half = stats.t.ppf(0.995, n - 1) * a.std(ddof=1) / np.sqrt(n)
        assert abs(a.mean() - HOPS[k]) <= half, (k, a.mean(), half, HOPS[k])
