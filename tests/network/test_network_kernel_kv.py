"""Stations with a KV cache on the compiled network event loop (:mod:`fluidq.kernel.network`): the Python path's
run exactly (:mod:`fluidq.sim.network`, whose KV stations apply :class:`fluidq.sim._admission.StationMemory`).

Random networks of :func:`test_network_kernel_exactness.random_network` (1-4 stations, the five built-in
schedulers and random ones, binding ``k_max``, random and JSQ routers, multi-hop routes, fixed and geometric
lengths, class priorities, initial requests, ``max_batches``) whose stations get, at random, a KV cache small
enough to bind (and to refuse some hops outright) under every memory model -- token KV with the default rules
(recompute or swap), paged KV of 1-32-token blocks with whole-prompt or incremental reservation, the
last-in-order or most-recent victim, recompute or swap, prefix caching -- and at random a context-aware batch
time or an engine whose prefill gives the first token.  Every output is compared bit for bit: completions, mean
sojourns, batch and event counts, every recorded series, blocked hops, preemptions and refusals per station, the
hop record with each hop's preemptions, and the generator's state.
"""
from __future__ import annotations

import dataclasses

import pytest

from fluidq import ContextAware, Engine
from fluidq.engine import Memory
from fluidq.network import Network, Station, simulate_network
from fluidq.sim.network import _kernel_unsupported

from test_network_kernel_exactness import assert_identical, random_network, run_both_paths

MEMORIES = [Memory(), Memory(preemption="swap"), Memory(victim="most_recent"),
            Memory(kind="blocks", block_size=16, reservation="whole_prompt", victim="most_recent"),
            Memory(kind="blocks", block_size=16, prefix_caching=True, victim="most_recent"),
            Memory(kind="blocks", block_size=8, reservation="incremental"),
            Memory(kind="blocks", block_size=4, prefix_caching=True, reservation="incremental"),
            Memory(kind="blocks", block_size=32, preemption="swap"),
            Memory(kind="blocks", block_size=1, prefix_caching=True, victim="most_recent")]


def random_kv_network(seed, every_scheduler=True):
    """A random network of :func:`random_network` whose stations have (each with probability 0.75, at least one)
    a KV cache of a random memory model, small enough to bind."""
    net, horizon, r = random_network(seed, every_scheduler)
    stations = []
    kv_any = False
    for i, s in enumerate(net.stations):
        e = s.engine
        if r.random() < 0.75 or (i == len(net.stations) - 1 and not kv_any):
            kv_any = True
            mem = MEMORIES[int(r.integers(len(MEMORIES)))]
            cap = int(r.integers(max(mem.block_size, 60), 1500))
            bt = e.batch_time
            if r.random() < 0.25:
                bt = ContextAware(base=bt, kv_s_per_token=float(r.choice([1.0 / 65536, 3e-7])))
            e = dataclasses.replace(e, batch_time=bt, kv_capacity_tokens=cap, memory=mem,
                                    prefill_emits_token=bool(r.random() < 0.25))
        stations.append(Station(name=s.name, engine=e, policy=s.policy, priority=s.priority))
    return Network(stations=stations, routers=net.routers, classes=net.classes), horizon, r


def _runs(net, horizon, r, seed):
    return run_both_paths(net, horizon, r, seed, initial_max=100, record_hops=bool(r.random() < 0.7),
                          swap_s_per_token=float(r.choice([0.0, 2e-6, 1.0 / 4096])))


@pytest.mark.parametrize("every", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_kv_stations_on_the_compiled_loop_are_the_python_path(seed, every):
    net, horizon, r = random_kv_network(seed, every)
    assert _kernel_unsupported(net, False) is None
    _runs(net, horizon, r, seed)


def test_the_kv_cases_bind(monkeypatch):
    """Not vacuous: over the random cases memory preempts (recompute and swap, token and paged), refuses hops,
    and prefix caching gives cached blocks back (counted in the Python path's pool)."""
    from fluidq.sim._memory import BlockPool

    hits = []
    reuse = BlockPool.reuse

    def counted(self, i, nblocks):
        hit = reuse(self, i, nblocks)
        hits.append(hit)
        return hit

    monkeypatch.setattr(BlockPool, "reuse", counted)
    pre = {"tokens": 0, "blocks": 0, "swap": 0, "prefix": 0}
    rejected = 0
    for seed in range(30):
        net, horizon, r = random_kv_network(seed, True)
        a = _runs(net, horizon, r, seed)
        rejected += sum(a.rejected.values())
        for s in net.stations:
            m = s.engine.memory
            n = a.preemptions[s.name]
            if s.engine.kv_capacity_tokens is None:
                assert n == 0
                continue
            pre["swap" if m.preemption == "swap" else "prefix" if m.prefix_caching else m.kind] += n
    assert all(v > 0 for v in pre.values()), pre
    assert rejected > 0
    assert sum(h > 0 for h in hits) > 10, hits


@pytest.mark.parametrize("policy", ["fastertransformer", "vllm", "orca", "sarathi", "vllm-chunked"])
def test_a_tandem_of_block_kv_stations_swapping_and_caching(policy):
    """Every built-in scheduler at two KV stations in tandem that both preempt -- paged KV swapping, then vLLM's
    memory with prefix caching and a first token from the prefill -- with a station without a cache between
    them (overloaded): the compiled loop is the Python path."""
    from fluidq import Staircase
    from fluidq.engine import VLLM
    from fluidq.network import Hop, RequestClass

    bt = Staircase(c=0.01128, a=0.0003547, b0=128)
    net = Network(stations=[
        Station(name="S", engine=Engine(batch_time=bt, b_max=256, kv_capacity_tokens=1200,
                                        memory=Memory(kind="blocks", block_size=16, preemption="swap")),
                policy=policy),
        Station(name="F", engine=Engine(batch_time=bt, b_max=256)),
        Station(name="C", engine=Engine(batch_time=bt, b_max=256, kv_capacity_tokens=350,
                                        memory=VLLM.with_(prefix_caching=True), prefill_emits_token=True),
                policy=policy)],
        classes=[RequestClass(name="c", rate_per_s=5.0, route=[
            Hop(engine="S", prompt_tokens=200, output_tokens=60, name="s"),
            Hop(engine="F", prompt_tokens=30, output_tokens=5, name="f"),
            Hop(engine="C", prompt_tokens=150, output_tokens=50, name="c")])])
    kw = {"horizon_s": 30.0, "rng": 4, "record_hops": True, "swap_s_per_token": 2e-6}
    a = simulate_network(net, method="python", **kw)
    b = simulate_network(net, method="kernel", **kw)
    assert_identical(a, b)
    assert a.preemptions["F"] == 0 and a.completed["c"] > 20
    if policy != "fastertransformer":  # (it decodes alone until every decoder is done: one request at a time)
        assert a.preemptions["S"] > 0 and a.preemptions["C"] > 0


def test_a_kv_station_with_a_composition_batch_time_runs_on_the_loop():
    """A KV station with a composition batch time (vLLM's operator model) under a built-in FCFS scheduler: the loop's
    own KV rule has no composition time, so its policy is asked in Python on the loop (network_kv times the batch by
    the engine's ``composition_time``); the Python path's run exactly.  (Until 2026-12-07 evening the whole network
    ran on the Python path, ``_kernel_unsupported`` naming the station.)"""
    from fluidq import Staircase
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import FittedIterationModel
    from fluidq.engine import VLLM
    from fluidq.network import Hop, RequestClass

    comp = Composition(model=FittedIterationModel(Staircase(c=0.01, a=0.02, b0=16)))
    net = Network(stations=[Station(name="V", engine=Engine(batch_time=comp, b_max=128, kv_capacity_tokens=800,
                                                            memory=VLLM))],
                  classes=[RequestClass(name="c", rate_per_s=4.0, route=[Hop(engine="V", prompt_tokens=100,
                                                                             output_tokens=20)])])
    assert _kernel_unsupported(net, False) is None
    a = simulate_network(net, horizon_s=10.0, rng=1, method="kernel")
    b = simulate_network(net, horizon_s=10.0, rng=1, method="python")
    assert_identical(a, b)
    assert a.completed["c"] > 10
