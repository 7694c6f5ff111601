"""The compiled network loop's uniforms (random routers, choices) are drawn a block at a time and the generator
rewound before each refill of a random length's draws; the blocks are sized from use, so the uniforms drawn stay
a small multiple of those used (a fixed block of 4,096 drew about 33 per request here: 16 per length draw), and
the run is still the Python path's, with the generator left in the same state."""
from __future__ import annotations

import numpy as np
import pytest

import fluidq.sim.network as sn
from fluidq import Engine, Staircase
from fluidq.kernel.network import UB
from fluidq.network import Hop, Network, RequestClass, Router, Station, simulate_network
from fluidq.workload import Geometric


class _Counted(sn._Uniforms):
    """``_Uniforms`` counting the generator's draws for uniforms (blocks, and the redraws of a rewind) and the
    uniforms the loop took."""

    drawn = taken = biggest = 0

    def block(self):
        if self.n:
            _Counted.taken += self.n
        x = super().block()
        _Counted.drawn += x.size
        _Counted.biggest = max(_Counted.biggest, x.size)
        return x

    def rewind(self, used):
        if self.n:
            _Counted.drawn += used
            _Counted.taken += used
        super().rewind(used)


def _network(p_mean, d_mean, load):
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lengths = {} if p_mean is None else {"prompt_tokens": Geometric(mean_tokens=p_mean)}
    lengths.setdefault("prompt_tokens", 100)
    return Network(stations=[Station(name="G0", engine=eng), Station(name="G1", engine=eng)],
                   routers=[Router(name="R", engines=("G0", "G1"), policy="random", probabilities=(0.6, 0.4))],
                   classes=[RequestClass(name="c", rate_per_s=1.0, route=[
                       Hop(engine="R", output_tokens=Geometric(mean_tokens=d_mean), name="c.1", **lengths)])]
                   ).at_load(load)


@pytest.mark.parametrize("p_mean,d_mean,load", [(100, 100, 0.85), (None, 30, 0.7), (50, 200, 1.1)])
def test_uniforms_drawn_follow_use(p_mean, d_mean, load, monkeypatch):
    monkeypatch.setattr(sn, "_Uniforms", _Counted)
    _Counted.drawn = _Counted.taken = _Counted.biggest = 0
    net = _network(p_mean, d_mean, load)
    ga, gb = np.random.default_rng(7), np.random.default_rng(7)
    a = simulate_network(net, horizon_s=600.0, rng=ga, method="python")
    b = simulate_network(net, horizon_s=600.0, rng=gb, method="kernel")
    assert a.completed == b.completed and a.mean_sojourn_s == b.mean_sojourn_s and a.batches == b.batches
    assert np.array_equal(a.in_system["c"], b.in_system["c"])
    assert ga.random() == gb.random()  # the generator left where the Python path leaves it
    assert _Counted.taken > 5000  # (one uniform per request, the router's: many length refills among them)
    assert _Counted.drawn <= 3 * _Counted.taken  # (a fixed block of UB: above 16 per length draw)
    assert _Counted.biggest <= UB


def test_routers_alone_draw_full_blocks(monkeypatch):
    """With fixed lengths nothing rewinds before the end: the blocks grow to ``UB`` and no uniform is drawn
    twice but the last block's unused ones."""
    monkeypatch.setattr(sn, "_Uniforms", _Counted)
    _Counted.drawn = _Counted.taken = _Counted.biggest = 0
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    net = Network(stations=[Station(name="G0", engine=eng), Station(name="G1", engine=eng)],
                  routers=[Router(name="R", engines=("G0", "G1"), policy="random", probabilities=(0.5, 0.5))],
                  classes=[RequestClass(name="c", rate_per_s=1.0, route=[
                      Hop(engine="R", prompt_tokens=100, output_tokens=50, name="c.1")])]).at_load(0.8)
    ga, gb = np.random.default_rng(3), np.random.default_rng(3)
    a = simulate_network(net, horizon_s=1500.0, rng=ga, method="python")
    b = simulate_network(net, horizon_s=1500.0, rng=gb, method="kernel")
    assert a.completed == b.completed and ga.random() == gb.random()
    assert _Counted.taken > 2 * UB and _Counted.biggest == UB
    assert _Counted.drawn <= _Counted.taken + 2 * UB
