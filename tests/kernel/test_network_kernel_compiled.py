"""The compiled network event loop (fluidq.kernel.network) equals the same source run as Python.

Run as a script in a subprocess with ``NUMBA_DISABLE_JIT=1`` (numba's switch, read at import), it simulates
the cases below with ``method="kernel"`` and saves every output; the test compares them with the compiled
runs, array for array.
"""
import sys
from pathlib import Path

import numpy as np

from fluidq import Affine, ContextAware, Engine, Staircase
from fluidq.engine import VLLM, Memory
from fluidq.network import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station
from fluidq.policies import Scheduler
from fluidq.workload import Periodic

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1] / "network"))

from network_arrays import run_arrays  # noqa: E402  (tests/network/network_arrays.py, written once for both loops)


def _cases():
    """(label, network, horizon, keyword arguments): JSQ by tokens and by requests with class priorities,
    a random router, a tandem whose event times coincide exactly, initial requests and the hop record, and
    stations run batch by batch (vLLM with blocked prompts, Orca with k_max, chunking only long prompts), and
    stations with a KV cache that binds (token KV swapping, vLLM's paged KV with prefix caching, incremental
    paged KV swapping, behind a JSQ router, with a context-aware batch time and the first token from the
    prefill; some hops refused), and a route with a probabilistic choice and a fork-join, through a random router,
    to stations without a KV cache with a context-aware batch time and the first token from the prefill."""
    stair = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=32), b_max=96)
    own = Scheduler(name="own", priority="decode", mixed=True, chunked=True, b_max=40)
    jsq = Network(stations=[Station(name="A", engine=stair, priority=("x.1",)), Station(name="B", engine=stair),
                            Station(name="C", engine=stair, policy=own)],
                  routers=[Router(name="T", engines=("A", "B", "C"), policy="jsq", count="tokens"),
                           Router(name="Q", engines=("B", "C"), policy="jsq", count="requests")],
                  classes=[RequestClass(name="x", rate_per_s=1.0, route=[
                      Hop(engine="T", prompt_tokens=120, output_tokens=30, name="x.1"),
                      Hop(engine="Q", prompt_tokens=40, output_tokens=0, name="x.2")]),
                      RequestClass(name="y", rate_per_s=1.0, route=[
                          Hop(engine="A", prompt_tokens=300, output_tokens=12, name="y.1")])]).at_load(0.95)
    rnd = Network(stations=[Station(name="F", engine=Engine(batch_time=Affine(c=0.05, a=1e-4), b_max=64)),
                            Station(name="S", engine=Engine(batch_time=Affine(c=0.1, a=0.0), b_max=64),
                                    policy="vllm-chunked")],
                  routers=[Router(name="R", engines=("F", "S"), policy="random", probabilities=(0.7, 0.3))],
                  classes=[RequestClass(name="c", rate_per_s=1.0, route=[
                      Hop(engine="R", prompt_tokens=90, output_tokens=9, name="c.1"),
                      Hop(engine="S", prompt_tokens=20, output_tokens=5, name="c.2")])]).at_load(1.1)
    e = Engine(batch_time=Affine(c=0.125, a=0.0), b_max=256)
    ties = Network(stations=[Station(name="E", engine=e), Station(name="G", engine=e)],
                   classes=[RequestClass(name="c", arrival=Periodic(rate_per_s=16.0), rate_per_s=16.0, route=[
                       Hop(engine="E", prompt_tokens=96, output_tokens=8, name="e"),
                       Hop(engine="G", prompt_tokens=64, output_tokens=4, name="g")])])
    byb = Network(stations=[Station(name="V", engine=Engine(batch_time=Affine(c=0.03, a=1e-4), b_max=32, k_max=2),
                                    policy="vllm"),
                            Station(name="O", engine=Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=64, k_max=6),
                                    policy="orca", priority=("s.2",)),
                            Station(name="L", engine=stair, policy=Scheduler(
                                name="long", priority="prefill", mixed=False, chunked=False, chunk_long_prompts=True))],
                  classes=[RequestClass(name="big", rate_per_s=0.5, route=[
                      Hop(engine="V", prompt_tokens=100, output_tokens=5, name="b.1")]),
                      RequestClass(name="s", rate_per_s=4.0, route=[
                          Hop(engine="V", prompt_tokens=10, output_tokens=0, name="s.1"),
                          Hop(engine="O", prompt_tokens=30, output_tokens=3, name="s.2"),
                          Hop(engine="L", prompt_tokens=150, output_tokens=20, name="s.3")])])
    kvb = Staircase(c=0.01128, a=0.0003547, b0=128)
    kv = Network(stations=[Station(name="K", engine=Engine(batch_time=kvb, b_max=256, kv_capacity_tokens=900,
                                                           memory=Memory(preemption="swap")), policy="orca"),
                           Station(name="P", engine=Engine(batch_time=ContextAware(base=kvb, kv_s_per_token=3e-7),
                                                           b_max=256, kv_capacity_tokens=320,
                                                           memory=VLLM.with_(prefix_caching=True),
                                                           prefill_emits_token=True)),
                           Station(name="W", engine=Engine(batch_time=kvb, b_max=256, k_max=6, kv_capacity_tokens=330,
                                                           memory=Memory(kind="blocks", block_size=8,
                                                                         reservation="incremental", preemption="swap")),
                                   policy="vllm"),
                           Station(name="N", engine=stair)],
                 routers=[Router(name="J", engines=("P", "W"), policy="jsq", count="tokens")],
                 classes=[RequestClass(name="a", rate_per_s=1.0, route=[
                     Hop(engine="K", prompt_tokens=200, output_tokens=60, name="a.1"),
                     Hop(engine="J", prompt_tokens=150, output_tokens=40, name="a.2"),
                     Hop(engine="N", prompt_tokens=50, output_tokens=10, name="a.3")]),
                     RequestClass(name="huge", rate_per_s=0.05, route=[
                         Hop(engine="K", prompt_tokens=800, output_tokens=200, name="h.1")])]).at_load(0.9)
    fj = Engine(batch_time=Affine(c=0.04, a=1e-4), b_max=128)
    ctx = Engine(batch_time=ContextAware(base=Affine(c=0.04, a=1e-4), kv_s_per_token=2e-6), b_max=128,
                 prefill_emits_token=True)
    routes = Network(stations=[Station(name="M", engine=fj), Station(name="V", engine=ctx, policy="vllm"),
                               Station(name="X", engine=ctx, policy="sarathi")],
                     routers=[Router(name="R", engines=("M", "X"), policy="random", probabilities=(0.5, 0.5))],
                     classes=[RequestClass(name="f", rate_per_s=1.0, route=[
                         Hop(engine="M", prompt_tokens=60, output_tokens=8, name="f.1"),
                         Choice(options=((0.3, []), (0.7, [
                             Fork(name="k", branches=([Hop(engine="V", prompt_tokens=40, output_tokens=6, name="f.v")],
                                                      [Hop(engine="R", prompt_tokens=30, output_tokens=4, name="f.r"),
                                                       Hop(engine="X", prompt_tokens=20, output_tokens=3,
                                                           name="f.x")])),
                             Hop(engine="M", prompt_tokens=25, output_tokens=5, name="f.m"), Join(name="k")]))),
                         Hop(engine="X", prompt_tokens=50, output_tokens=10, name="f.2")])]).at_load(0.9)
    return [("jsq", jsq, 40.0, {"record_hops": True}), ("random", rnd, 40.0, {"initial": {"c.1": 30}}),
            ("ties", ties, 20.0, {"record_hops": True, "record_dt_s": 0.0625}), ("batch-by-batch", byb, 30.0, {}),
            ("kv", kv, 40.0, {"record_hops": True, "swap_s_per_token": 2e-6}),
            ("routes", routes, 80.0, {"record_hops": True})]


def _arrays() -> dict:
    """Every output of every case, as named arrays (the preemptions and rejections counted too)."""
    return run_arrays(_cases(), kv_counts=True)


def test_compiled_and_uncompiled_network_loop_agree(uncompiled_agrees):
    jit = _arrays()
    uncompiled_agrees(HERE, jit)
    # they did something
    assert all(jit[f"{c}/counts"][0] > 300 for c in ("jsq", "random", "ties", "batch-by-batch", "kv", "routes"))
    assert np.all(jit["kv/counts"][-8:-5] > 0) and jit["kv/counts"][-4] > 0  # K, P, W preempt; K refuses hops


if __name__ == "__main__":
    from fluidq.kernel import compiled

    print(f"compiled={compiled()}")
    np.savez(sys.argv[1], **_arrays())
