"""The horizon means the same in both drivers (issue 14): no batch starts at or after ``horizon_s`` and the
batch in progress at the horizon is completed -- in ``fluidq.simulate`` and in ``fluidq.simulate_network``
alike (the network simulator used to stop at the crossing batch).  Checked on one-station networks for every
built-in scheduler, with and without a KV cache, at horizons that cut a batch."""
import numpy as np
import pytest

import fluidq
from fluidq import Engine, Staircase
from fluidq.engine import VLLM
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.sim import simulate_network
from fluidq.workload import Poisson

SCHEDULERS = ["fastertransformer", "vllm", "orca", "sarathi", "vllm-chunked"]
RATE, P, D = 6.0, 200, 60


def _engine(memory):
    return Engine(batch_time=Staircase(c=0.01128, a=0.0003547, b0=128), b_max=256,
                  kv_capacity_tokens=None if memory is None else 1800, memory=memory)


@pytest.mark.parametrize("memory", [None, VLLM], ids=["no-kv", "block-kv"])
@pytest.mark.parametrize("policy", SCHEDULERS)
@pytest.mark.parametrize("horizon_s", [7.0, 12.3456])
def test_the_batch_crossing_the_horizon_is_completed_in_both_drivers(policy, memory, horizon_s):
    engine = _engine(memory)
    w = fluidq.Workload(arrival=Poisson(rate_per_s=RATE), prompt_tokens=P, output_tokens=D)
    single = fluidq.simulate(engine, w, policy, horizon_s=horizon_s, rng=3, record_iterations=True)
    net = simulate_network(Network(stations=[Station(name="E", engine=engine, policy=policy)],
                                   classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=RATE), rate_per_s=RATE,
                                                         route=[Hop(engine="E", prompt_tokens=P, output_tokens=D)])]),
                           horizon_s=horizon_s, rng=3, record_hops=True)
    it = single.iterations
    starts, ends = it["t_s"], it["t_s"] + it["batch_s"]
    assert np.all(starts < horizon_s)  # no batch starts at or after the horizon
    assert ends[-1] > horizon_s  # ... and the one in progress there ran to its end (these horizons cut one)
    assert net.batches == single.n_iterations == len(starts)
    fin = single.requests["finish_s"]
    done = np.isfinite(fin)
    assert net.completed["c"] == int(done.sum())
    np.testing.assert_array_equal(np.sort(net.hops["finish_s"]), np.sort(fin[done]))
    assert np.nanmax(fin) <= ends[-1]  # nothing finishes after the crossing batch
    assert net.horizon_s == horizon_s and net.times_s[-1] <= horizon_s  # the series stop at the horizon
