"""The compiled network loop's covered decoders (no heap entry while the decoder that started decoding just
before finishes first) give the Python path's run exactly.

Few distinct output lengths make most decoders covered and make ties (two decoders finishing in the same
round, broken by arrival at the station); class priorities and chunked long prompts make decoders start in
an order other than their arrival (a later arrival decoding first, finishing in the same round as an earlier
one, or earlier).  Stable and overloaded, one station and two in tandem; the hop record holds every
completion's order and time.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_network_kernel_exactness import assert_identical

from fluidq import Affine, Engine, Staircase
from fluidq.network import Hop, Network, RequestClass, Station, simulate_network
from fluidq.policies import Scheduler
from fluidq.sim.network import _kernel_unsupported


def _network(outputs, prompts, policy, two, load):
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=16), b_max=48)
    eng2 = Engine(batch_time=Affine(c=0.0625, a=1.0 / 1024), b_max=40)
    names = ["E0", "E1"] if two else ["E0"]
    classes = []
    for c, (p, d) in enumerate(zip(prompts, outputs, strict=True)):
        route = [Hop(engine="E0", prompt_tokens=p, output_tokens=d, name=f"c{c}.0")]
        if two:
            route.append(Hop(engine="E1", prompt_tokens=p // 2 + 1, output_tokens=d, name=f"c{c}.1"))
        classes.append(RequestClass(name=f"c{c}", rate_per_s=1.0, route=route))
    n = len(classes)
    stations = [Station(name="E0", engine=eng, policy=policy, priority=tuple(f"c{c}.0" for c in reversed(range(n))))]
    if two:
        stations.append(Station(name="E1", engine=eng2, policy=policy, priority=tuple(f"c{c}.1" for c in range(n))))
    assert [s.name for s in stations] == names
    return Network(stations=stations, classes=classes).at_load(load)


@pytest.mark.parametrize("outputs", [(7, 7, 7), (1, 1, 1), (2, 3, 9), (9, 3, 3)])
@pytest.mark.parametrize("load", [0.8, 1.3])  # stable, overloaded
@pytest.mark.parametrize("policy", ["sarathi", "own-budget"])
@pytest.mark.parametrize("two", [False, True])
def test_covered_decoders_give_the_python_paths_run(outputs, load, policy, two):
    pol = policy if policy == "sarathi" else Scheduler(name="own-budget", priority="decode", mixed=True,
                                                          chunked=True, b_max=20)
    net = _network(outputs, (5, 60, 13), pol, two, load)
    assert _kernel_unsupported(net, False) is None
    kw = {"horizon_s": 60.0, "record_hops": True, "record_dt_s": 0.37}
    a = simulate_network(net, rng=np.random.default_rng(3), method="python", **kw)
    b = simulate_network(net, rng=np.random.default_rng(3), method="kernel", **kw)
    assert sum(a.completed.values()) > 50
    assert_identical(a, b)
