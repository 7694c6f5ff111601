"""The Python network loop's stations without a KV cache are the kernel's ``EngineRun`` too (fed, with the
station's per-priority deques as its ``queues``): every batch they run batch by batch is one
``begin``/``finish`` of it, their policy sees the station's view (hop priority, then arrival at the station),
and their remaining tokens stay the sum of their buffers' through the first token from the prefill, a
context-aware time and the hand-overs between the run-skipping path and the batch-by-batch one.
"""
from __future__ import annotations

import numpy as np
import pytest

from fluidq import Engine, Staircase
from fluidq.batchtime import ContextAware
from fluidq.kernel import step as step_mod
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.sim import simulate_network
from fluidq.policies.schedulers import resolve_policy
from fluidq.workload import Poisson

BT = Staircase(c=0.01128, a=0.0003547, b0=128)


def _one(policy, rate=4.0, p=200, d=40):
    eng = Engine(batch_time=BT, b_max=256)
    return Network(stations=[Station(name="E", engine=eng, policy=policy)],
                   classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=rate), rate_per_s=rate,
                                         route=[Hop(engine="E", prompt_tokens=p, output_tokens=d)])])


@pytest.fixture
def finishes(monkeypatch):
    """Counts the calls of ``EngineRun.finish`` that ended a batch."""
    count = [0]
    real = step_mod.EngineRun.finish

    def counting(self):
        out = real(self)
        if out is not None:
            count[0] += 1
        return out

    monkeypatch.setattr(step_mod.EngineRun, "finish", counting)
    return count


@pytest.mark.parametrize("policy", ["orca", "vllm", "fastertransformer"])
def test_every_batch_of_a_batch_by_batch_station_is_an_engine_run_step(policy, finishes):
    res = simulate_network(_one(policy), horizon_s=40.0, rng=2, method="python")
    assert res.batches > 100
    assert finishes[0] == res.batches


def test_a_skipping_station_steps_its_engine_run_on_the_generic_path_only(finishes):
    # Sarathi skips runs of identical batches on the Python path (while its decoders fit the budget, which
    # its admission keeps them within here); the generic path steps the EngineRun every batch
    net = _one("sarathi", rate=10.0, p=100, d=100)
    gen = simulate_network(net, horizon_s=20.0, rng=2, method="generic")
    assert finishes[0] == gen.batches > 100
    finishes[0] = 0
    py = simulate_network(net, horizon_s=20.0, rng=2, method="python")
    assert py.batches == gen.batches and py.completed == gen.completed
    assert finishes[0] == 0


def test_a_user_policy_sees_the_station_priority_order():
    seen = []
    inner = resolve_policy("sarathi")

    class Spy:
        name = "spy"
        chunked = True

        def select(self, view):
            seen.append([r.label for r in view.requests])
            return inner.select(view)

    eng = Engine(batch_time=BT, b_max=256)
    net = Network(stations=[Station(name="E", engine=eng, policy=Spy(), priority=["hi"])],
                  classes=[RequestClass(name="lo", arrival=Poisson(rate_per_s=6.0), rate_per_s=6.0,
                                        route=[Hop(engine="E", prompt_tokens=200, output_tokens=30, name="lo")]),
                           RequestClass(name="hi", arrival=Poisson(rate_per_s=3.0), rate_per_s=3.0,
                                        route=[Hop(engine="E", prompt_tokens=100, output_tokens=30, name="hi")])])
    simulate_network(net, horizon_s=30.0, rng=5, method="python")
    mixed = [v for v in seen if "hi" in v and "lo" in v]
    assert len(mixed) > 20
    for v in mixed:  # the priority hop's requests come first in every view
        assert v == sorted(v, key=lambda lab: lab != "hi")


@pytest.mark.parametrize("method", ["python", "generic"])
@pytest.mark.parametrize("emit,context", [(False, False), (True, False), (False, True), (True, True)])
def test_a_station_tokens_are_its_buffers_tokens(emit, context, method):
    bt = ContextAware(base=BT, kv_s_per_token=2e-7) if context else BT
    eng = Engine(batch_time=bt, b_max=256, prefill_emits_token=emit)
    net = Network(stations=[Station(name="F", engine=eng, policy="sarathi"),
                            Station(name="G", engine=eng, policy="vllm")],
                  classes=[RequestClass(name="a", arrival=Poisson(rate_per_s=5.0), rate_per_s=5.0,
                                        route=[Hop(engine="F", prompt_tokens=200, output_tokens=60, name="a.1"),
                                               Hop(engine="G", prompt_tokens=50, output_tokens=20, name="a.2")]),
                           RequestClass(name="b", arrival=Poisson(rate_per_s=3.0), rate_per_s=3.0,
                                        route=[Hop(engine="G", prompt_tokens=80, output_tokens=1, name="b.0"),
                                               Hop(engine="F", prompt_tokens=120, output_tokens=90, name="b.1")])])
    res = simulate_network(net, horizon_s=30.0, rng=3, method=method, record_dt_s=0.25)
    for st, labs in (("F", ("a.1", "b.1")), ("G", ("a.2", "b.0"))):
        tok = res.station_tokens[st]
        assert np.array_equal(tok, res.buffer_tokens[labs[0]] + res.buffer_tokens[labs[1]])
        assert tok.max() > 0 and (tok >= 0).all()
    assert res.batches > 200 and sum(res.completed.values()) > 100
