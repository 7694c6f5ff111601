"""Stations WITH a KV cache whose policies are asked in Python, on the compiled network loop
(:mod:`fluidq.kernel.network_kv`), give the Python event clock's run exactly (2026-12-07, h-netkv).

Random networks of :mod:`test_network_kernel_kv` (1-4 stations, random and JSQ routers, class priorities, fixed and
random lengths, initial requests, ``max_batches``, a random recording grid; KV caches small enough to preempt and to
refuse some hops, under token rules and paged blocks, recompute and swap, the most-recent or last-in-order victim,
prefix caching, context-aware times, the first token from the prefill) and the choices and fork-joins of
:func:`test_network_kernel_exactness.random_route_network`, with stations given a policy asked in Python
(:func:`test_network_select_kernel.asked_policy`: last in first out, longest prompt first, one leaving the decoders
out, one reporting long prompts blocked, SJF/SRPT/LAS orderings, UNIBOOST): the compiled loop's run equals
``method="python"``'s bit for bit -- completions, mean sojourns, batch and event counts, every recorded series, the
hop record with each hop's preemptions, preemptions and refusals per station, ``blocked`` -- with the default check
and with ``check_batches=False``; the loop runs them itself (``loop_only``: the Python path fails).  Bad batches
and a policy that stalls raise the Python path's :class:`PolicyError`, the same message.  A batch over the budgets
with the check off runs as the Python clock runs it (the loop's arrays grow; no restart), at stations with and
without a KV cache.  Run uncompiled (``NUMBA_DISABLE_JIT=1``, a child process) the loop gives the compiled arrays.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

from lifo_policy import LIFO  # noqa: E402
from network_arrays import run_arrays  # noqa: E402  (tests/network/network_arrays.py)
from test_network_kernel_exactness import assert_identical, random_route_network  # noqa: E402
from test_network_kernel_kv import MEMORIES, random_kv_network  # noqa: E402
from test_network_select_kernel import (LongestPromptFirst, Over, PrefillOnly, compare, loop_only,  # noqa: E402,F401
                                        with_asked)

from fluidq import Affine, Engine  # noqa: E402
from fluidq.engine import Memory  # noqa: E402
from fluidq.errors import PolicyError  # noqa: E402
from fluidq.network import Hop, Network, RequestClass, Router, Station, simulate_network  # noqa: E402
from fluidq.policies import Batch, Sarathi, VLLM  # noqa: E402
from fluidq.policies.latency import SJF  # noqa: E402
from fluidq.sim.network import _kernel_unsupported, _native  # noqa: E402


def _jsq_by_requests(net):
    """``net`` with its JSQ routers counting requests (the random networks of these tests, as first written; a JSQ
    router by remaining tokens over a KV station asked in Python runs on the loop too since 2026-12-07:
    test_network_jsq_kv_loop.py)."""
    routers = [dataclasses.replace(r, count="requests") if r.policy == "jsq" else r for r in net.routers]
    return Network(stations=net.stations, routers=routers, classes=net.classes)


def kv_asked_network(seed, every=False):
    net, horizon, r = random_kv_network(2000 + seed, every_scheduler=bool(seed % 2))
    net = _jsq_by_requests(with_asked(net, r, every=every))
    return net, horizon, r


def _some_kv_station_asked(net):
    return any(s.engine.kv_capacity_tokens is not None and not _native(s.policy) for s in net.stations)


@pytest.mark.parametrize("check", [None, False])
@pytest.mark.parametrize("seed", range(14))
def test_kv_stations_asked_in_python_on_random_networks(seed, check, loop_only, monkeypatch):
    net, horizon, r = kv_asked_network(seed, every=seed % 3 == 2)
    assert _kernel_unsupported(net, False) is None
    a = compare(net, horizon, r, seed, loop_only, monkeypatch, check_batches=check,
                swap_s_per_token=float(r.choice([0.0, 2e-6, 1.0 / 4096])))
    assert a.batches > 20


@pytest.mark.parametrize("seed", range(6))
def test_check_batches_true_where_every_policy_is_asked_in_python(seed, loop_only, monkeypatch):
    """``check_batches=True`` given explicitly: where every station's policy is asked in Python the loop checks them
    all, the same run.  (Since 2026-12-07, h-netwin, a network with a built-in FCFS station runs on the loop too, that
    station asked in Python: tests/network/test_network_window_loop.py.)"""
    net, horizon, r = kv_asked_network(seed)
    assert _kernel_unsupported(net, True) is None
    net = _jsq_by_requests(with_asked(net, r, every=True))
    assert _kernel_unsupported(net, True) is None
    compare(net, horizon, r, seed, loop_only, monkeypatch, check_batches=True, swap_s_per_token=1e-6)


def test_the_random_cases_bind(loop_only, monkeypatch):
    """The random cases above put a policy asked in Python at a KV station, preempt there and refuse hops."""
    asked = pre = rej = 0
    for seed in range(14):
        net, horizon, r = kv_asked_network(seed, every=seed % 3 == 2)
        asked += _some_kv_station_asked(net)
        kw = {"swap_s_per_token": 1e-6}
        a = simulate_network(net, horizon_s=horizon, rng=seed, method="kernel", **kw)
        pre += sum(a.preemptions.values()) > 0
        rej += sum(a.rejected.values()) > 0
    assert asked >= 10 and pre >= 5 and rej >= 2, (asked, pre, rej)


def _with_kv(net, r):
    stations = []
    for i, s in enumerate(net.stations):
        e = s.engine
        if r.random() < 0.7 or i == 0:
            mem = MEMORIES[int(r.integers(len(MEMORIES)))]
            e = dataclasses.replace(e, kv_capacity_tokens=int(r.integers(max(mem.block_size, 200), 2000)), memory=mem)
        stations.append(Station(name=s.name, engine=e, policy=s.policy, priority=()))
    return Network(stations=stations, routers=net.routers, classes=net.classes)


@pytest.mark.parametrize("seed", range(8))
def test_kv_stations_asked_in_python_with_choices_and_fork_joins(seed, loop_only, monkeypatch):
    net, horizon, r = random_route_network(2700 + seed, bool(seed % 2))
    net = _jsq_by_requests(with_asked(_with_kv(net, r), r, every=True))
    assert _kernel_unsupported(net, False) is None
    compare(net, horizon, r, seed, loop_only, monkeypatch, initial_max=40, swap_s_per_token=1e-6)


def loop_agrees(net, rng, loop_only, **kw):
    """``method="python"``'s run of ``net`` and, with the Python path refused, the compiled loop's: identical; the
    Python run is returned for the test's own assertions."""
    a = simulate_network(net, rng=rng, method="python", **kw)
    loop_only()
    b = simulate_network(net, rng=rng, method="kernel", **kw)
    assert_identical(a, b)
    return a, b


def kv_tandem(policy, memory=Memory(), cap=1500, load=1.0, b_max=256, emit=False, k_max=None):
    """A tandem: a Sarathi station feeding a KV station (``memory``, ``cap`` tokens) under ``policy``."""
    kv = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=b_max, k_max=k_max, kv_capacity_tokens=cap, memory=memory,
                prefill_emits_token=emit)
    e = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=256)
    return Network(stations=[Station(name="A", engine=e, policy=Sarathi()), Station(name="K", engine=kv, policy=policy)],
                   classes=[RequestClass(name="x", rate_per_s=3.5 * load, route=[
                       Hop(engine="A", prompt_tokens=120, output_tokens=10),
                       Hop(engine="K", prompt_tokens=150, output_tokens=40)])])


@pytest.mark.parametrize("memory", MEMORIES, ids=range(len(MEMORIES)))
@pytest.mark.parametrize("policy", [LIFO(), LongestPromptFirst(), PrefillOnly(), Sarathi(order=SJF()),
                                    VLLM(order=SJF())], ids=lambda p: p.name)
def test_kv_tandem_every_memory_model(policy, memory, loop_only, monkeypatch):
    net = kv_tandem(policy, memory, cap=900, emit=memory.kind == "blocks")
    kw = dict(horizon_s=60.0, record_hops=True, swap_s_per_token=1e-5, record_dt_s=0.25)
    a, b = loop_agrees(net, 3, loop_only, **kw)
    assert a.preemptions["K"] > 0 and b.hops["preemptions"].sum() > 0


def test_a_jsq_router_by_tokens_over_an_asked_kv_station_runs_on_the_loop(loop_only, monkeypatch):
    """(Until 2026-12-07 it stayed on the Python clock; test_network_jsq_kv_loop.py holds the case.)"""
    net = kv_tandem(LIFO(), cap=300)
    e = net.stations[1].engine
    net = Network(stations=[net.stations[0], net.stations[1], Station(name="K2", engine=e, policy=Sarathi())],
                  routers=[Router(name="R", engines=("K", "K2"), policy="jsq", count="tokens")],
                  classes=[RequestClass(name="x", rate_per_s=3.0, route=[
                      Hop(engine="A", prompt_tokens=120, output_tokens=10),
                      Hop(engine="R", prompt_tokens=150, output_tokens=40)])])
    assert _kernel_unsupported(net, False) is None
    kw = dict(horizon_s=30.0, record_hops=True)
    a, _ = loop_agrees(net, 5, loop_only, **kw)
    assert a.preemptions["K"] > 0 and a.completed["x"] > 50


def test_an_asked_kv_station_with_a_composition_batch_time(loop_only, monkeypatch):
    """A composition batch time (vLLM's operator model) at a KV station whose policy is asked in Python: the driver
    times the batches by the engine's ``composition_time`` on the loop's KV columns (network_kv, h-netmem; the
    station's EngineRun until then), so the loop runs it (since 2026-12-07 evening a built-in FCFS scheduler at such a
    station is asked in Python on the loop too: test_network_composition_loop)."""
    from fluidq import Staircase
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import FittedIterationModel

    comp = Composition(model=FittedIterationModel(Staircase(c=0.01, a=0.02, b0=16)))
    net = kv_tandem(LIFO(), Memory(kind="blocks", block_size=16), cap=900)
    k = net.stations[1]
    net = Network(stations=[net.stations[0], Station(name="K", engine=dataclasses.replace(k.engine, batch_time=comp),
                                                     policy=k.policy)], classes=net.classes)
    assert _kernel_unsupported(net, False) is None
    kw = dict(horizon_s=30.0, record_hops=True)
    a, _ = loop_agrees(net, 4, loop_only, **kw)
    assert a.preemptions["K"] > 0


class SwapShy:
    """LIFO, but an empty batch when a request preempted before (a swapped-out one) is back in view and was not in the
    last view: the memory pass only swapped in, and the station asks again once the swap is done (stateful: one
    per run)."""

    name = "swap-shy"

    def __init__(self):
        self.last = set()
        self.empties = 0

    def select(self, v):
        ids = {r.rid for r in v.requests}
        back = any(r.preemptions > 0 and r.rid not in self.last for r in v.requests)
        self.last = ids
        if back:
            self.empties += 1
            return Batch()
        return LIFO().select(v)


@pytest.mark.parametrize("memory", [Memory(preemption="swap"), Memory(kind="blocks", block_size=8, preemption="swap")],
                         ids=["tokens", "blocks"])
def test_a_pass_that_only_swaps_in(memory, loop_only):
    """An empty answer after swap-ins: the station is busy for the swap time, then asked again (``S_SWAPWAIT``)."""
    kw = dict(horizon_s=60.0, rng=5, record_hops=True, swap_s_per_token=1e-4, record_dt_s=0.05)
    pa, pb = SwapShy(), SwapShy()
    a = simulate_network(kv_tandem(pa, memory, cap=900), method="python", **kw)
    loop_only()
    b = simulate_network(kv_tandem(pb, memory, cap=900), method="kernel", **kw)
    assert_identical(a, b)
    assert pa.empties == pb.empties > 0


class RankSeen:
    """LIFO, noting the ranks of the requests in each view (one per run)."""

    name = "rank-seen"

    def __init__(self):
        self.seen = []

    def select(self, v):
        self.seen.append(tuple(r.rank for r in v.requests))
        return LIFO().select(v)


def test_the_requests_ranks_at_a_kv_station_with_priorities(loop_only):
    """A KV station applies no class priority (its view is in arrival order), but its request objects carry the
    Python clock's rank: the loop's are the same."""
    e = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=256, kv_capacity_tokens=1500)

    def net(pol):
        return Network(stations=[Station(name="K", engine=e, policy=pol, priority=("y.1",))],
                       classes=[RequestClass(name=c, rate_per_s=1.5, route=[Hop(engine="K", prompt_tokens=p,
                                                                                 output_tokens=20)])
                                for c, p in (("x", 100), ("y", 300))])
    pa, pb = RankSeen(), RankSeen()
    a = simulate_network(net(pa), horizon_s=30.0, rng=6, method="python")
    loop_only()
    b = simulate_network(net(pb), horizon_s=30.0, rng=6, method="kernel")
    assert_identical(a, b)
    assert pa.seen == pb.seen and {0, 1} <= {x for v in pa.seen for x in v}


class Stall:
    """Prefills the first prompt it sees until t >= 5 s, then answers nothing while requests wait."""

    name = "stall"

    def select(self, v):
        if v.now_s >= 5.0:
            return Batch()
        return LIFO().select(v)


class GreedyOver:
    """Every waiting prompt whole and every decoder: over the budgets (6d) when they are many."""

    name = "greedy-over"

    def select(self, v):
        return Batch(prefill=tuple((r.rid, r.prefill_left) for r in v.requests if r.in_prefill),
                     decode=tuple(r.rid for r in v.requests if not r.in_prefill and r.decode_left > 0))


class KOver:
    """Decoders, then chunks of every waiting prompt, within ``b_max`` tokens but not ``k_max`` requests."""

    name = "k-over"

    def select(self, v):
        b = v.b_max
        dec = [r.rid for r in v.requests if not r.in_prefill and r.decode_left > 0][:b]
        b -= len(dec)
        pre = []
        for r in v.requests:
            if r.in_prefill and b > 0:
                m = min(b, r.prefill_left, 16)
                pre.append((r.rid, m))
                b -= m
        return Batch(prefill=tuple(pre), decode=tuple(dec))


def _run(net, **kw):
    try:
        return simulate_network(net, horizon_s=25.0, rng=2, swap_s_per_token=1e-6, **kw)
    except PolicyError as e:
        return e


@pytest.mark.parametrize("mode,rule", [("over", "(6d)"), ("double", "(6b)"), ("decode-prefilling", "(6a)"),
                                       ("float", "whole numbers")])
def test_bad_batches_at_a_kv_station_give_the_python_paths_error(mode, rule, loop_only):
    net = kv_tandem(Over(mode), cap=4000, load=1.2)
    a = _run(net, method="python")
    loop_only()
    b = _run(net, method="kernel")
    assert type(a) is type(b) is PolicyError and str(a) == str(b) and rule in str(a)
    assert str(a).startswith("station 'K': policy 'bad-" + mode + "' at t=")


def test_a_stalling_policy_at_a_kv_station_gives_the_python_paths_error(loop_only):
    net = kv_tandem(Stall(), cap=4000)
    a = _run(net, method="python")
    loop_only()
    b = _run(net, method="kernel")
    assert type(a) is type(b) is PolicyError and str(a) == str(b)


@pytest.mark.parametrize("kv,policy,k_max", [(False, GreedyOver(), None), (False, GreedyOver(), 3),
                                              (False, KOver(), 3), (True, KOver(), 3)])
def test_a_batch_over_the_budgets_with_the_check_off_runs_as_the_python_clock_runs_it(kv, policy, k_max, loop_only):
    """The check off, a batch over ``b_max`` (or ``k_max``) runs as given on both paths: the loop's batch arrays grow
    (they held the largest budget's batch) and a batch over the station's table is timed as EngineRun times it (no
    restart on the Python clock: ``loop_only``).  (A KV station's batch over ``b_max`` is not run: the Python clock's
    EngineRun reads its time off a table that stops at ``b_max``, an IndexError there.)"""
    net = kv_tandem(policy, cap=1 << 20, load=2.5, b_max=160, k_max=k_max)
    if not kv:
        st = net.stations[1]
        net = Network(stations=[net.stations[0], Station(name="K", engine=dataclasses.replace(
            st.engine, kv_capacity_tokens=None), policy=st.policy)], classes=net.classes)
    kw = dict(method="python", check_batches=False, record_hops=True)
    a = _run(net, **kw)
    checked = _run(net, method="python")
    assert isinstance(checked, PolicyError) and ("(6d)" in str(checked) or "(k_max)" in str(checked))
    loop_only()
    kw["method"] = "kernel"
    b = _run(net, **kw)
    assert not isinstance(a, PolicyError)
    assert_identical(a, b)


def _cases():
    return [("lifo-tokens", kv_tandem(LIFO(), cap=900), {"record_hops": True, "initial": {"x.1": 20}}),
            ("longest-blocks", kv_tandem(LongestPromptFirst(), Memory(kind="blocks", block_size=16,
                                                                     prefix_caching=True), cap=900),
             {"record_hops": True}),
            ("prefill-only-swap", kv_tandem(PrefillOnly(), Memory(preemption="swap"), cap=900),
             {"record_dt_s": 0.1, "swap_s_per_token": 1e-5}),
            ("sjf-blocks-swap", kv_tandem(Sarathi(order=SJF()), Memory(kind="blocks", block_size=8, preemption="swap"),
                                          cap=900), {"record_hops": True, "swap_s_per_token": 1e-5}),
            ("k-over", kv_tandem(KOver(), cap=1 << 20, load=2.5, b_max=160, k_max=3), {"check_batches": False})]


def _arrays() -> dict:
    return run_arrays([(label, net, 25.0, kw) for label, net, kw in _cases()], kv_counts=True)


def test_compiled_and_uncompiled_loop_agree_with_asked_kv_stations(uncompiled_agrees, loop_only, monkeypatch):
    with monkeypatch.context():
        loop_only()
        jit = _arrays()
    uncompiled_agrees(HERE, jit)
    assert all(jit[f"{c}/counts"][0] > 100 for c, *_ in _cases())
    assert jit["lifo-tokens/counts"][-3] > 0  # (K's preemptions)


if __name__ == "__main__":
    from fluidq.kernel import compiled

    print(f"compiled={compiled()}")
    np.savez(sys.argv[1], **_arrays())
