"""A one-station network gives the single-engine run exactly for the engine options beyond the memory
model (issue 14): a context-aware batch time and ``prefill_emits_token`` (vLLM's first token comes with
the prefill, then ``output_tokens - 1`` decode iterations), with and without a block KV cache.

Found by this test: without a KV cache the network simulator ignored ``prefill_emits_token`` (one decode
iteration more per request than ``fluidq.simulate``); such a station now gives the first token with the
prefill, batch by batch (no run skipping, not on the compiled loop), as a station with a KV cache did."""
import numpy as np
import pytest

import fluidq
from fluidq import Engine, Staircase
from fluidq.batchtime.models import ContextAware
from fluidq.engine import VLLM
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.sim import simulate_network
from fluidq.workload import Poisson

STAIR = Staircase(c=0.01128, a=0.0003547, b0=128)
BATCH_TIMES = {"staircase": STAIR, "context_aware": ContextAware(base=STAIR, kv_s_per_token=2e-7)}
RATE, P, D, H = 6.0, 200, 60, 20.0


def _cases():
    for emit in (False, True):
        for bt in BATCH_TIMES:
            for kv in (False, True):
                for pol in ("fastertransformer", "vllm", "orca", "sarathi", "vllm-chunked"):
                    yield pytest.param(emit, bt, kv, pol, id=f"emit={emit}-{bt}-kv={kv}-{pol}")


@pytest.mark.parametrize(("emit", "bt", "kv", "policy"), list(_cases()))
def test_one_station_network_is_the_single_engine_run(emit, bt, kv, policy):
    e = Engine(batch_time=BATCH_TIMES[bt], b_max=256, kv_capacity_tokens=1800 if kv else None,
               memory=VLLM if kv else None, prefill_emits_token=emit)
    w = fluidq.Workload(arrival=Poisson(rate_per_s=RATE), prompt_tokens=P, output_tokens=D)
    single = fluidq.simulate(e, w, policy, horizon_s=H, rng=5)
    net = simulate_network(Network(stations=[Station(name="E", engine=e, policy=policy)],
                                   classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=RATE), rate_per_s=RATE,
                                                         route=[Hop(engine="E", prompt_tokens=P, output_tokens=D)])]),
                           horizon_s=H, rng=5, record_hops=True)
    fin, arr = single.requests["finish_s"], single.requests["arrival_s"]
    done = np.isfinite(fin)
    order = np.argsort(net.hops["arrival_s"], kind="stable")
    assert net.batches == single.n_iterations > 1000
    np.testing.assert_array_equal(net.hops["arrival_s"][order], arr[done])
    np.testing.assert_array_equal(net.hops["finish_s"][order], fin[done])
    assert net.preemptions == {"E": single.preemptions}
