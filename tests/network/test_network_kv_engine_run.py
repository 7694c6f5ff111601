"""The Python network loop's stations with a KV cache are the kernel's ``EngineRun``, fed by the network.

Its token accounting is the station's: at every recorded time a KV station's remaining tokens are the sum of
its buffers' (each hop's label), through recomputation, prefix reuse, swaps and the first token given by the
prefill; a user's policy (which only the Python loop runs) at such a station reports never-schedulable
prompts and, with ``check_batches``, bad batches in the result instead of raising.
"""
from __future__ import annotations

import numpy as np
import pytest

from fluidq import Engine, Staircase
from fluidq.engine import VLLM, Memory
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.sim import simulate_network
from fluidq.policies.base import Batch
from fluidq.workload import Poisson

MEMORIES = {"tokens": Memory(), "blocks_prefix": VLLM.with_(prefix_caching=True),
            "blocks_swap": Memory(kind="blocks", block_size=16, preemption="swap")}


def _tandem(memory, emit):
    bt = Staircase(c=0.01128, a=0.0003547, b0=128)
    kv = Engine(batch_time=bt, b_max=256, kv_capacity_tokens=2400, memory=memory, prefill_emits_token=emit)
    return Network(
        stations=[Station(name="K", engine=kv, policy="vllm"),
                  Station(name="F", engine=Engine(batch_time=bt, b_max=256), policy="sarathi")],
        classes=[RequestClass(name="a", arrival=Poisson(rate_per_s=5.0), rate_per_s=5.0,
                              route=[Hop(engine="K", prompt_tokens=200, output_tokens=60, name="a.1"),
                                     Hop(engine="F", prompt_tokens=50, output_tokens=20, name="a.2")]),
                 RequestClass(name="b", arrival=Poisson(rate_per_s=3.0), rate_per_s=3.0,
                              route=[Hop(engine="F", prompt_tokens=80, output_tokens=10, name="b.0"),
                                     Hop(engine="K", prompt_tokens=120, output_tokens=90, name="b.1")])])


@pytest.mark.parametrize("emit", [False, True])
@pytest.mark.parametrize("memory", list(MEMORIES))
def test_a_kv_station_tokens_are_its_buffers_tokens(memory, emit):
    res = simulate_network(_tandem(MEMORIES[memory], emit), horizon_s=30.0, rng=3, method="python",
                           swap_s_per_token=1e-6, record_dt_s=0.5)
    k = res.station_tokens["K"]
    labels = [lab for lab in res.buffer_tokens if lab in ("a.1", "b.1")]
    assert sorted(labels) == ["a.1", "b.1"]
    assert np.array_equal(k, res.buffer_tokens["a.1"] + res.buffer_tokens["b.1"])
    assert k.max() > 0 and (k >= 0).all() and res.batches > 100
    if memory != "blocks_prefix":
        assert res.preemptions["K"] > 0  # memory binds: recomputation or swaps took place


def test_a_user_policy_at_a_kv_station_reports_into_the_result():
    class Greedy:
        """Every waiting prompt whole, decodes for the rest; reports the longest prompt never schedulable."""
        name = "greedy"
        chunked = False

        def select(self, view):
            pre = tuple((r.rid, r.prompt_tokens - r.prefilled) for r in view.requests if r.in_prefill)
            dec = tuple(r.rid for r in view.requests if not r.in_prefill)
            blocked = tuple(r.rid for r in view.requests if r.in_prefill and r.prompt_tokens > 150)
            return Batch(prefill=pre[:1], decode=dec, blocked=blocked[:1])

    eng = Engine(batch_time=Staircase(c=0.01128, a=0.0003547, b0=128), b_max=256, kv_capacity_tokens=4000)
    net = Network(stations=[Station(name="K", engine=eng, policy=Greedy())],
                  classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=4.0), rate_per_s=4.0,
                                        route=[Hop(engine="K", prompt_tokens=200, output_tokens=5, name="c.1")])])
    res = simulate_network(net, horizon_s=10.0, rng=1, check_batches=True)
    assert res.blocked == (("K", "c.1"),)
    assert not res.violations
    assert sum(res.completed.values()) > 10
