"""The token rules never leave an empty cache idle while prompts wait (hostile-input review, 2026-12-07).

Two waiting prompts that fit the KV cache one at a time but not together: the pass keeps the first and drops
the second.  ``token_next`` used to ask the policy again with the admitted requests alone -- none -- and accept
the empty batch that came back, so the engine stalled for good with work waiting, on every path (the compiled KV
kernel, the select() loop, EngineRun, the network's stations).  Each path must now serve every request, as the
paged rules do on the same engine.
"""
from __future__ import annotations

import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.engine import VLLM
from fluidq.kernel.memory import ACCEPT, ASK_AGAIN, token_next
from fluidq.network import Hop, Network, RequestClass, Station, simulate_network
from fluidq.policies import Batch

BT = Staircase(c=0.01128, a=0.03547, b0=128)


class Fifo:
    """A user policy: FCFS, each prompt whole, every decoder."""
    name = "fifo-user"

    def select(self, view):
        dec = [r.rid for r in view.requests if not r.in_prefill and r.decode_left > 0]
        room = view.b_max - len(dec)
        pre = []
        for r in view.requests:
            if r.in_prefill and room > 0:
                m = min(r.prefill_left, room)
                pre.append((r.rid, m))
                room -= m
        return Batch(pre, dec)


def test_rule_does_not_ask_again_with_nothing_admitted():
    # a new request dropped, room left, nothing admitted: the trimmed batch runs
    assert token_next(True, False, False, 800, 0, 0) == ACCEPT
    # with an admitted request the policy is still asked again without the new ones, as before
    assert token_next(True, False, False, 800, 0, 1) == ASK_AGAIN


@pytest.mark.parametrize("policy", ["sarathi", "vllm-chunked", "orca", Fifo()],
                         ids=["sarathi", "vllm-chunked", "orca", "user"])
@pytest.mark.parametrize("method", ["auto", "generic"])
def test_single_engine_serves_every_request(policy, method):
    engine = Engine(batch_time=BT, b_max=2048, kv_capacity_tokens=2000)
    work = Workload(arrival=Poisson(rate_per_s=0.5), prompt_tokens=1200, output_tokens=200)
    r = fluidq.simulate(engine, work, policy=policy, n_requests=40, rng=3, method=method)
    assert r.n_finished == 40
    paged = fluidq.simulate(Engine(batch_time=BT, b_max=2048, kv_capacity_tokens=2000, memory=VLLM), work,
                            policy=policy, n_requests=40, rng=3, method=method)
    assert paged.n_finished == 40


@pytest.mark.parametrize("method", ["auto", "python"])
def test_network_station_serves_every_request(method):
    engine = Engine(batch_time=BT, b_max=2048, kv_capacity_tokens=2000)
    net = Network(stations=[Station(name="E", engine=engine, policy="sarathi")],
                  classes=[RequestClass(name="A", rate_per_s=0.05,
                                        route=[Hop(engine="E", prompt_tokens=1200, output_tokens=200)])])
    r = simulate_network(net, horizon_s=3000.0, rng=1, method=method)
    assert r.completed["A"] >= 130  # ~150 arrive in 3000 s; stalled, 3 completed
    assert r.in_system["A"][-1] <= 5
