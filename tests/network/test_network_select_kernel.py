"""Stations whose policies are asked in Python on the compiled network loop (:mod:`fluidq.kernel.network_select`)
give the Python event clock's run exactly.

Random networks of :mod:`test_network_kernel_exactness` (1-4 stations, random and JSQ routers, class priorities,
fixed and random lengths, tandems, probabilistic choices and fork-joins, initial requests, ``max_batches``, a random
recording grid), with some or all stations given a policy defined here (last in first out, in lifo_policy.py with
the bench; longest prompt first; one that leaves the decoders out of any batch with a prompt in it; one that reports
long prompts blocked) or a built-in scheduler with another ordering (SJF, SRPT), the others keeping their built-in
FCFS schedulers: the compiled loop's run equals ``method="python"``'s bit for bit -- completions, mean sojourns,
batch and event counts, every recorded series, the hop record (each hop's arrival and finish), ``blocked`` -- with
the default ``check_batches`` (on where a user policy runs: every station batch by batch) and with
``check_batches=False`` (the built-in FCFS stations skip runs); the generic path agrees too.  The loop must run
these networks itself (the Python path is made to fail during the compiled runs).  A return that is not a Batch
raises the Python path's :class:`PolicyError`; a batch that breaks the constraints gives the Python path's run (its
``violations``).  Run uncompiled (``NUMBA_DISABLE_JIT=1``, a child process) the loop gives the compiled arrays.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

from lifo_policy import LIFO  # noqa: E402  (tests/network/lifo_policy.py, timed by benchmarks/bench_network_select.py)
from network_arrays import run_arrays  # noqa: E402  (tests/network/network_arrays.py)
from test_network_kernel_exactness import assert_identical, random_network, random_route_network  # noqa: E402

import fluidq.sim.network as simnet  # noqa: E402
from fluidq import Affine, ContextAware, Engine, Staircase  # noqa: E402
from fluidq.errors import PolicyError  # noqa: E402
from fluidq.network import Hop, Network, RequestClass, Router, Station, simulate_network  # noqa: E402
from fluidq.policies import Batch, Orca, Sarathi, VLLM  # noqa: E402
from fluidq.policies.latency import LAS, SJF, SRPT  # noqa: E402
from fluidq.policies.unified import UniBoost  # noqa: E402
from fluidq.sim.network import _kernel_unsupported  # noqa: E402


class LongestPromptFirst:
    """Whole prompts, longest remaining first (ties by id), while they fit; then at most a quarter of the budget of
    decoders, the latest arrivals at the station first."""

    name = "longest-prompt"

    def select(self, v):
        b = v.b_max
        k = v.k_max if v.k_max is not None else 1 << 30
        pre = []
        for r in sorted((r for r in v.requests if r.in_prefill), key=lambda r: (-r.prefill_left, r.rid)):
            if r.prefill_left <= b and k > 0:
                pre.append((r.rid, r.prefill_left))
                b -= r.prefill_left
                k -= 1
        dec = []
        for r in sorted((r for r in v.requests if not r.in_prefill and r.decode_left > 0),
                        key=lambda r: (-r.arrival_s, r.rid)):
            if b > 0 and k > 0 and len(dec) < v.b_max // 4:
                dec.append(r.rid)
                b -= 1
                k -= 1
        if not pre and not dec:  # (a prompt above the budget: its first chunk, so that nothing waits for ever)
            r = next((r for r in v.requests if r.in_prefill), None)
            if r is not None and k > 0:
                pre = [(r.rid, min(b, r.prefill_left))]
        return Batch(prefill=tuple(pre), decode=tuple(dec))


class PrefillOnly:
    """Leaves the decoders out of any batch with a prompt in it: a chunk of every waiting prompt, the ones started
    first (the latest started first), then the others (latest arrival first), chunks of at most 8 tokens per
    request in view, else every decoder within the budget."""

    name = "prefill-only"

    def select(self, v):
        b = v.b_max
        k = v.k_max if v.k_max is not None else 1 << 30
        waiting = sorted((r for r in v.requests if r.in_prefill),
                         key=lambda r: (0, -r.first_scheduled_s, r.rid) if r.first_scheduled_s == r.first_scheduled_s
                         else (1, 0.0, -r.rid))
        pre = []
        for r in waiting:
            if b < 1 or k < 1:
                break
            m = min(b, r.prefill_left, 8 * len(v.requests))
            pre.append((r.rid, m))
            b -= m
            k -= 1
        if pre:
            return Batch(prefill=tuple(pre))
        return Batch(decode=tuple(r.rid for r in v.requests if r.decode_left > 0)[:min(b, k)])


class BlockLong:
    """FCFS whole prompts and decoders, with prompts longer than ``limit`` reported blocked (never scheduled)."""

    name = "block-long"

    def __init__(self, limit):
        self.limit = limit

    def select(self, v):
        b = v.b_max
        k = v.k_max if v.k_max is not None else 1 << 30
        dec = [r.rid for r in v.requests if not r.in_prefill and r.decode_left > 0][:min(b, k)]
        b -= len(dec)
        k -= len(dec)
        pre, blocked = [], []
        for r in v.requests:
            if not r.in_prefill:
                continue
            if r.prompt_tokens > min(self.limit, v.b_max):  # (one above b_max could never run: blocked too)
                blocked.append(r.rid)
            elif r.prefill_left <= b and k > 0:
                pre.append((r.rid, r.prefill_left))
                b -= r.prefill_left
                k -= 1
        return Batch(prefill=tuple(pre), decode=tuple(dec), blocked=tuple(blocked))


def asked_policy(r, budget):
    """A policy asked in Python, drawn from ``r``: one of the user policies above, a built-in scheduler with another
    ordering than FCFS (SJF, SRPT, least attained service), or UNIBOOST's unified former."""
    x = int(r.integers(10))
    return (LIFO(), LongestPromptFirst(), PrefillOnly(), BlockLong(int(r.integers(budget // 2, 3 * budget))),
            Sarathi(order=SJF()), Sarathi(order=SRPT()), VLLM(order=SJF()), Orca(order=SRPT()),
            Sarathi(order=LAS()), UniBoost(memguard=False))[x]


def with_asked(net, r, every=False):
    """``net`` with each station's policy replaced, at random (every one with ``every``, at least one), by a policy
    asked in Python."""
    n = len(net.stations)
    pick = np.ones(n, bool) if every else r.random(n) < 0.5
    if not pick.any():
        pick[int(r.integers(n))] = True
    stations = [Station(name=st.name, engine=st.engine, priority=st.priority,
                        policy=asked_policy(r, st.engine.b_max) if pick[i] else st.policy)
                for i, st in enumerate(net.stations)]
    return Network(stations=stations, routers=net.routers, classes=net.classes)


@pytest.fixture
def loop_only(monkeypatch):
    """The compiled runs must not fall back to the Python clock: ``guard()`` makes the Python path fail."""

    def guard():
        def refuse(*a, **k):
            raise AssertionError("the network ran on the Python clock")

        monkeypatch.setattr(simnet, "_run", refuse)

    return guard


def compare(net, horizon, r, seed, loop_only, monkeypatch, initial_max=100, **kw):
    """The Python clock's run and the compiled loop's, with options drawn from ``r`` (initial requests, max_batches,
    a recording grid, the hop record): identical, and the generators left in the same state."""
    if r.random() < 0.25:
        first = next((s for s in net.classes[0].route if isinstance(s, Hop)), None)
        if first is not None and first is net.classes[0].route[0]:
            kw["initial"] = {first.name: int(r.integers(1, initial_max))}
    if r.random() < 0.15:
        kw["max_batches"] = int(r.integers(1, 3000))
    if r.random() < 0.3:
        kw["record_dt_s"] = horizon / float(r.integers(10, 2000))
    kw["record_hops"] = bool(r.random() < 0.7)
    ga, gb = np.random.default_rng(seed + 1000), np.random.default_rng(seed + 1000)
    a = simulate_network(net, horizon_s=horizon, rng=ga, method="python", **kw)
    with monkeypatch.context():
        loop_only()
        b = simulate_network(net, horizon_s=horizon, rng=gb, method="kernel", **kw)
    assert_identical(a, b)
    assert ga.random() == gb.random()
    return a


@pytest.mark.parametrize("check", [None, False])
@pytest.mark.parametrize("seed", range(16))
def test_asked_stations_on_random_networks(seed, check, loop_only, monkeypatch):
    net, horizon, r = random_network(500 + seed, every_scheduler=bool(seed % 2))
    net = with_asked(net, r, every=seed % 4 == 3)
    assert _kernel_unsupported(net, False) is None
    a = compare(net, horizon, r, seed, loop_only, monkeypatch, check_batches=check)
    assert a.batches > 20


@pytest.mark.parametrize("seed", range(10))
def test_asked_stations_with_choices_and_fork_joins(seed, loop_only, monkeypatch):
    net, horizon, r = random_route_network(700 + seed, bool(seed % 2))
    net = with_asked(net, r)
    assert _kernel_unsupported(net, False) is None
    compare(net, horizon, r, seed, loop_only, monkeypatch, initial_max=40)


@pytest.mark.parametrize("seed", range(6))
def test_asked_stations_with_context_aware_times_and_first_tokens(seed, loop_only, monkeypatch):
    net, horizon, r = random_network(900 + seed, every_scheduler=True)
    stations = []
    for st in with_asked(net, r).stations:
        eng = st.engine
        if r.random() < 0.6:
            eng = eng.with_(batch_time=ContextAware(base=eng.batch_time,
                                                    kv_s_per_token=float(r.choice([2.0 ** -14, 3e-6 * r.random()]))))
        if r.random() < 0.5:
            eng = eng.with_(prefill_emits_token=True)
        stations.append(Station(name=st.name, engine=eng, policy=st.policy, priority=st.priority))
    net = Network(stations=stations, routers=net.routers, classes=net.classes)
    assert _kernel_unsupported(net, False) is None
    compare(net, horizon, r, seed, loop_only, monkeypatch)


def tandem(policy, load=0.9):
    """Four stations: a JSQ pair of Sarathi stations, the station under test, a vLLM station; two classes with
    priorities at the station under test."""
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=32), b_max=128)
    return Network(stations=[Station(name="A", engine=e), Station(name="B", engine=e),
                             Station(name="U", engine=e, policy=policy, priority=("y.2",)),
                             Station(name="V", engine=Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=64),
                                     policy="vllm")],
                   routers=[Router(name="J", engines=("A", "B"), policy="jsq", count="tokens")],
                   classes=[RequestClass(name="x", rate_per_s=1.0, route=[
                       Hop(engine="J", prompt_tokens=200, output_tokens=30, name="x.1"),
                       Hop(engine="U", prompt_tokens=90, output_tokens=12, name="x.2"),
                       Hop(engine="V", prompt_tokens=20, output_tokens=4, name="x.3")]),
                       RequestClass(name="y", rate_per_s=1.0, route=[
                           Hop(engine="J", prompt_tokens=40, output_tokens=60, name="y.1"),
                           Hop(engine="U", prompt_tokens=300, output_tokens=5, name="y.2")])]).at_load(load)


@pytest.mark.parametrize("policy", [LIFO(), LongestPromptFirst(), PrefillOnly(), BlockLong(250), Sarathi(order=SJF()),
                                    Sarathi(order=SRPT()), Sarathi(order=LAS()), UniBoost(memguard=False)],
                         ids=lambda p: f"{p.name}-{getattr(getattr(p, 'order', None), 'name', '')}")
def test_tandem_generic_path_agrees(policy, same_runs, loop_only, monkeypatch):
    """The generic path (``select(view)`` at every station, every batch) gives the same requests and series."""
    net = tandem(policy)
    a = simulate_network(net, horizon_s=120.0, rng=4, method="generic", record_hops=True)
    with monkeypatch.context():
        loop_only()
        b = simulate_network(net, horizon_s=120.0, rng=4, method="kernel", record_hops=True)
    assert sum(a.completed.values()) > 100
    same_runs(a, b, exact=True)
    assert a.batches == b.batches and a.blocked == b.blocked
    for k in a.hops:
        assert np.array_equal(a.hops[k], b.hops[k]), k
    if isinstance(policy, BlockLong):
        assert a.blocked == (("U", "y.2"),)


def test_an_idle_station_is_asked_again_within_the_event(loop_only, monkeypatch):
    """A station whose policy answers an empty batch (a blocked prompt alone in view) is asked again at the next hop
    submitted to it in the same event (a fork's second branch), as the Python clock asks it."""
    from fluidq.network import Fork, Join

    e = Engine(batch_time=Affine(c=0.05, a=1e-3), b_max=64)
    net = Network(stations=[Station(name="U", engine=e, policy=BlockLong(100)), Station(name="S", engine=e)],
                  classes=[RequestClass(name="f", rate_per_s=0.5, route=[
                      Fork(name="k", branches=([Hop(engine="U", prompt_tokens=500, output_tokens=2, name="f.long")],
                                               [Hop(engine="U", prompt_tokens=20, output_tokens=3, name="f.short")])),
                      Join(name="k")]),
                      RequestClass(name="g", rate_per_s=0.5, route=[
                          Hop(engine="S", prompt_tokens=30, output_tokens=5, name="g.1"),
                          Hop(engine="U", prompt_tokens=10, output_tokens=2, name="g.2")])])
    kw = {"horizon_s": 60.0, "record_hops": True}
    a = simulate_network(net, rng=np.random.default_rng(1), method="python", **kw)
    with monkeypatch.context():
        loop_only()
        b = simulate_network(net, rng=np.random.default_rng(1), method="kernel", **kw)
    assert_identical(a, b)
    assert a.blocked == (("U", "f.long"),) and np.sum(a.hops["station"] == 0) > 30


class NotABatch:
    name = "not-a-batch"

    def select(self, v):
        return [(r.rid, r.prefill_left) for r in v.requests]


class Over:
    """Decoders (at most half the budget), then the head prompt's chunk within the budget, and one fault by
    ``mode``: ``"over"`` every waiting prompt whole (over the budget when they are many: 6d); ``"double"`` one token
    more than the remaining prompt (6b); ``"decode-prefilling"`` decodes for prefilling requests too (6a);
    ``"twice"`` the chunk in two entries of one request (within the constraints); ``"float"`` the chunk's tokens a
    float (not a whole number), ``"float-decode"`` the decoders' ids."""

    def __init__(self, mode):
        self.mode = mode
        self.name = f"bad-{mode}"

    def select(self, v):
        mode = self.mode
        dec = [r.rid for r in v.requests if (mode == "decode-prefilling" or not r.in_prefill)
               and r.decode_left > 0][:v.b_max // 2]
        if mode == "over":
            return Batch(prefill=tuple((r.rid, r.prefill_left) for r in v.requests if r.in_prefill), decode=tuple(dec))
        head = next((r for r in v.requests if r.in_prefill), None)
        m = 0 if head is None else min(head.prefill_left, v.b_max - len(dec))
        pre = ()
        if m >= 1:
            rid = head.rid
            pre = (((rid, head.prefill_left + 1) if head.prefill_left + 1 + len(dec) <= v.b_max else (rid, m),)
                   if mode == "double" else
                   (((rid, m - 1), (rid, 1)) if m > 1 else ((rid, m),)) if mode == "twice" else
                   ((rid, float(m)),) if mode == "float" else ((rid, m),))
        if mode == "float-decode":
            dec = [float(rid) for rid in dec]
        return Batch(prefill=pre, decode=tuple(dec))


class ZeroTokens:
    name = "zero-tokens"

    def select(self, v):
        return Batch(prefill=tuple((r.rid, 0) for r in v.requests if r.in_prefill)[:1])


@pytest.mark.parametrize("policy,says", [(NotABatch(), "not a fluidq.policies.Batch"),
                                         (ZeroTokens(), "prefill allocation 0 < 1")], ids=["not-a-batch", "zero-tokens"])
def test_a_policy_error_is_the_python_paths(policy, says):
    """A return that is not a Batch, or a batch of no tokens that is not empty: the Python path's PolicyError, the
    same message, raised in the loop's driver (2026-12-07: no restart on the Python clock)."""
    net = tandem(policy)
    with pytest.raises(PolicyError) as py:
        simulate_network(net, horizon_s=30.0, rng=1, method="python")
    with pytest.raises(PolicyError) as kern:
        simulate_network(net, horizon_s=30.0, rng=1, method="kernel")
    assert str(kern.value) == str(py.value) and says in str(py.value)


@pytest.mark.parametrize("mode,rule", [("over", "(6d)"), ("double", "(6b)"), ("decode-prefilling", "(6a)"),
                                       ("twice", "appears twice in the prefill part"), ("float", "whole numbers"),
                                       ("float-decode", "whole numbers")])
def test_bad_batches_give_the_python_paths_error(mode, rule, loop_only):
    """A batch that breaks the constraints (or names a request twice in its prefill part, or gives a float's
    tokens): the Python path's PolicyError, the same message, raised by the compiled loop's driver at once (no
    restart on the Python clock: ``loop_only``).  With the check off only the budget (6d) is skipped: the Python
    path runs that batch as given, and so does the loop (its batch arrays grow, the batch's time beyond its table is
    EngineRun's; 2026-12-07: no restart on the Python clock); every other fault is the same PolicyError."""
    net = tandem(Over(mode))

    def run(**kw):
        try:
            return simulate_network(net, horizon_s=20.0, rng=2, **kw)
        except PolicyError as e:
            return e

    a, c = run(method="python"), run(method="python", check_batches=False)
    loop_only()
    b = run()
    assert type(a) is type(b) is PolicyError and str(a) == str(b) and rule in str(a)
    assert str(a).startswith("station 'U': policy 'bad-" + mode + "' at t=")
    d = run(check_batches=False)
    if mode == "over":  # (unchecked, both paths run it as given)
        assert not isinstance(c, PolicyError) and c.violations == ()
        assert_identical(c, d)
        return
    assert type(c) is type(d) is PolicyError and str(c) == str(d) == str(a)


def test_what_stays_on_the_python_clock():
    kv = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=64, kv_capacity_tokens=2000)
    net = Network(stations=[Station(name="K", engine=kv, policy=LIFO())], classes=[RequestClass(
        name="x", rate_per_s=1.0, route=[Hop(engine="K", prompt_tokens=20, output_tokens=4)])])
    assert _kernel_unsupported(net, False) is None  # (2026-12-07: fluidq.kernel.network_kv)
    # (2026-12-07, h-netwin: check_batches=True asks the built-in FCFS stations in Python too, on the loop)
    assert _kernel_unsupported(tandem(LIFO()), True) is None
    assert _kernel_unsupported(tandem(LIFO()), False) is None


def _cases():
    """(label, network, horizon, keyword arguments) for the compiled/uncompiled check: the tandem with each kind of
    asked station (one with blocked prompts), initial requests, a recording grid and the hop record."""
    return [("lifo", tandem(LIFO(), 1.05), 25.0, {"record_hops": True, "initial": {"x.1": 20}}),
            ("longest", tandem(LongestPromptFirst()), 25.0, {"record_hops": True, "check_batches": False}),
            ("prefill-only", tandem(PrefillOnly()), 25.0, {"record_dt_s": 0.1}),
            ("block", tandem(BlockLong(250)), 25.0, {"record_hops": True}),
            ("srpt", tandem(Sarathi(order=SRPT())), 25.0, {"record_hops": True})]


def _arrays() -> dict:
    return run_arrays(_cases())


def test_compiled_and_uncompiled_loop_agree_with_asked_stations(uncompiled_agrees, loop_only, monkeypatch):
    with monkeypatch.context():
        loop_only()
        jit = _arrays()
    uncompiled_agrees(HERE, jit)
    assert all(jit[f"{c}/counts"][0] > 100 for c, *_ in _cases())
    assert jit["block/counts"][-1] == 1


if __name__ == "__main__":
    from fluidq.kernel import compiled

    print(f"compiled={compiled()}")
    np.savez(sys.argv[1], **_arrays())
