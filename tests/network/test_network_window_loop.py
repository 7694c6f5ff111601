"""The last two non-KV-specific cases of ``simulate_network`` that ran the whole network on the Python clock run on
the compiled loop, their policies asked in Python with the Python clock's window view and checks (issue 15,
2026-12-07, h-netwin):

1. a subclass of a built-in :class:`~fluidq.policies.Scheduler` in FCFS order that overrides ``select`` or
   ``budgets`` (here: one that only notes its calls, one that never mixes decoders with prompts, one that runs the
   built-in rule on its view reversed, one whose ``budgets`` halve the token budget) -- without a KV cache the Python
   clock shows it the built-in window of its queue (``clock._StationState.view_requests``: the decoders in the
   order their prefill ended up to ``min(b_max, k_max)``, then prompts by rank and arrival until ``b_max`` tokens
   or ``min(b_max, k_max) + 8`` of them), with one the KV station's EngineRun view (every resident);
2. ``check_batches=True`` given explicitly where a station runs a built-in FCFS scheduler: every station's batches
   checked in Python, the built-in ones asked through the same window (or their KV station's EngineRun).

Random networks of :mod:`test_network_kernel_exactness` and :mod:`test_network_kernel_kv` (1-4 stations, random
and JSQ routers, probabilistic choices and fork-joins, class priorities, fixed and random lengths, initial
requests, ``max_batches``, KV caches of every memory model small enough to preempt and refuse) with such stations,
KV on and off, the check default, off and on: the loop's run equals ``method="python"``'s field for field (per-hop
times, every recorded series, batches, events, blocked, preemptions, refusals) and so does every policy call --
their number and, for each, the time and the requests seen with their prefilled and decoded tokens and rank.  The
loop runs them itself (``loop_only``: the Python path fails).  A policy naming a resident outside its window gets
the Python clock's :class:`PolicyError`; so does a built-in scheduler's checked batch (here made to break a rule).
A KV station under a built-in scheduler with a composition batch time, which the loop's own KV rule does not time,
runs on the loop asked in Python (network_kv times it), the check on or off.
``method="python"`` now asks such a subclass every batch, as ``"generic"`` does (before, a decode-first chunked
subclass skipped runs by the built-in rule there: ``clock._fast_budget``).  Run uncompiled (``NUMBA_DISABLE_JIT=1``,
a child process) the loop gives the compiled arrays.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

from network_arrays import run_arrays  # noqa: E402  (tests/network/network_arrays.py)
from test_network_kernel_exactness import assert_identical, random_network, random_route_network  # noqa: E402
from test_network_kernel_kv import MEMORIES, random_kv_network  # noqa: E402
from test_network_select_kernel import loop_only  # noqa: E402,F401  (the fixture: the Python path fails)

from fluidq import Affine, Engine  # noqa: E402
from fluidq.errors import PolicyError  # noqa: E402
from fluidq.network import Hop, Network, RequestClass, Router, Station, simulate_network  # noqa: E402
from fluidq.policies import Batch, QueueView, Scheduler  # noqa: E402
from fluidq.sim.network import _kernel_unsupported, _native  # noqa: E402

#: every policy call of a run: (policy name, time, the requests seen as (id, prefilled, decoded, rank, prompt), b_max,
#: k_max, kv_free_tokens)
LOG: list = []


def _note(name, view):
    LOG.append((name, view.now_s, tuple((r.rid, r.prefilled, r.decoded, getattr(r, "rank", None), r.prompt_tokens)
                                        for r in view.requests), view.b_max, view.k_max, view.kv_free_tokens))


class Logged(Scheduler):
    """The built-in rule as given; ``select`` overridden only to note each call."""

    def select(self, view):
        _note(self.name, view)
        return super().select(view)


class NoMix(Scheduler):
    """A rule of its own: the built-in batch, but only its decoders when it holds decoders and prompts."""

    def select(self, view):
        _note(self.name, view)
        b = super().select(view)
        return Batch(decode=b.decode, blocked=b.blocked) if b.decode and b.prefill else b


class Reverse(Scheduler):
    """The built-in rule on its view reversed: the latest prompts and decoders it is shown first."""

    def select(self, view):
        _note(self.name, view)
        return super().select(QueueView(requests=tuple(reversed(view.requests)), now_s=view.now_s, b_max=view.b_max,
                                        k_max=view.k_max, kv_free_tokens=view.kv_free_tokens))


class HalfBudget(Scheduler):
    """``budgets`` overridden only: half the token budget (``select`` is the library's)."""

    def budgets(self, view):
        _note(self.name, view)
        b, k = super().budgets(view)
        return max(1, b // 2), k


KINDS = (Logged, NoMix, Reverse, HalfBudget)


def windowed_policy(r, budget):
    """A subclass of a built-in FCFS scheduler with a rule of its own (or none), with random options."""
    cls = KINDS[int(r.integers(len(KINDS)))]
    return cls(name=f"{cls.__name__.lower()}-{int(r.integers(1000))}", priority=str(r.choice(["prefill", "decode"])),
               mixed=bool(r.random() < 0.6), chunked=bool(r.random() < 0.6), chunk_long_prompts=bool(r.random() < 0.5),
               b_max=None if r.random() < 0.6 else int(r.integers(4, budget + 1)),
               k_max=None if r.random() < 0.6 else int(r.integers(1, 40)))


def with_windowed(net, r, every=False):
    """``net`` with each station's policy replaced, at random (every one with ``every``, at least one), by
    :func:`windowed_policy`."""
    n = len(net.stations)
    pick = np.ones(n, bool) if every else r.random(n) < 0.5
    if not pick.any():
        pick[int(r.integers(n))] = True
    stations = [Station(name=st.name, engine=st.engine, priority=st.priority,
                        policy=windowed_policy(r, st.engine.b_max) if pick[i] else st.policy)
                for i, st in enumerate(net.stations)]
    return Network(stations=stations, routers=net.routers, classes=net.classes)


def jsq_by_requests(net):
    """``net`` with its JSQ routers counting requests (a JSQ router by remaining tokens over a KV station asked in
    Python keeps the network on the Python clock: network_kv)."""
    routers = [dataclasses.replace(rt, count="requests") if rt.policy == "jsq" else rt for rt in net.routers]
    return Network(stations=net.stations, routers=routers, classes=net.classes)


def with_kv(net, r):
    """``net`` with a KV cache small enough to bind at some stations (the first one always), under a random memory
    model."""
    stations = []
    for i, s in enumerate(net.stations):
        e = s.engine
        if r.random() < 0.7 or i == 0:
            mem = MEMORIES[int(r.integers(len(MEMORIES)))]
            e = dataclasses.replace(e, kv_capacity_tokens=int(r.integers(max(mem.block_size, 200), 2000)), memory=mem)
        stations.append(Station(name=s.name, engine=e, policy=s.policy, priority=s.priority))
    return jsq_by_requests(Network(stations=stations, routers=net.routers, classes=net.classes))


def _sim(net, horizon, gen, **kw):
    try:
        return simulate_network(net, horizon_s=horizon, rng=gen, **kw)
    except PolicyError as e:
        return e


def compare(net, horizon, r, seed, loop_only, monkeypatch, initial_max=100, method="kernel", **kw):
    """The Python clock's run and the compiled loop's (``method``), with options drawn from ``r`` (initial requests,
    max_batches, a recording grid, the hop record, the swap time): identical, every policy call the same, and the
    generators left in the same state.  Returns the Python clock's run and its calls."""
    if r.random() < 0.25:
        first = next((s for s in net.classes[0].route if isinstance(s, Hop)), None)
        if first is not None and first is net.classes[0].route[0]:
            kw["initial"] = {first.name: int(r.integers(1, initial_max))}
    if r.random() < 0.15:
        kw["max_batches"] = int(r.integers(1, 3000))
    if r.random() < 0.3:
        kw["record_dt_s"] = horizon / float(r.integers(10, 2000))
    kw["record_hops"] = bool(r.random() < 0.7)
    kw["swap_s_per_token"] = float(r.choice([0.0, 2e-6, 1.0 / 4096]))
    ga, gb = np.random.default_rng(seed + 1000), np.random.default_rng(seed + 1000)
    LOG.clear()
    a = _sim(net, horizon, ga, method="python", **kw)
    calls = list(LOG)
    LOG.clear()
    with monkeypatch.context():
        loop_only()
        b = _sim(net, horizon, gb, method=method, **kw)
    if isinstance(a, PolicyError):
        assert type(b) is PolicyError and str(a) == str(b)
    else:
        assert not isinstance(b, PolicyError), b
        assert_identical(a, b)
    assert calls == LOG, (len(calls), len(LOG))
    assert ga.random() == gb.random()
    return a, calls


def _kv_at_windowed(net):
    return any(s.engine.kv_capacity_tokens is not None and not _native(s.policy) for s in net.stations)


@pytest.mark.parametrize("check", [None, False, True])
@pytest.mark.parametrize("seed", range(8))
def test_windowed_subclasses_on_random_networks(seed, check, loop_only, monkeypatch):
    net, horizon, r = random_network(4100 + seed, every_scheduler=bool(seed % 2))
    net = with_windowed(net, r, every=seed % 4 == 3)
    assert _kernel_unsupported(net, bool(check)) is None
    a, calls = compare(net, horizon, r, seed, loop_only, monkeypatch, check_batches=check)
    assert isinstance(a, PolicyError) or a.batches > 20


@pytest.mark.parametrize("check", [None, False, True])
@pytest.mark.parametrize("seed", range(6))
def test_windowed_subclasses_at_kv_stations(seed, check, loop_only, monkeypatch):
    net, horizon, r = random_kv_network(4300 + seed, every_scheduler=bool(seed % 2))
    net = jsq_by_requests(with_windowed(net, r, every=seed % 3 == 2))
    assert _kernel_unsupported(net, bool(check)) is None
    a, _ = compare(net, horizon, r, seed, loop_only, monkeypatch, check_batches=check)
    assert isinstance(a, PolicyError) or a.batches > 20


@pytest.mark.parametrize("kv", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_windowed_subclasses_with_choices_and_fork_joins(seed, kv, loop_only, monkeypatch):
    net, horizon, r = random_route_network(4500 + seed, bool(seed % 2))
    net = with_windowed(with_kv(net, r) if kv else net, r)
    check = (None, False, True)[seed % 3]
    assert _kernel_unsupported(net, bool(check)) is None
    compare(net, horizon, r, seed, loop_only, monkeypatch, initial_max=40, check_batches=check)


def log_builtin(monkeypatch):
    """Every built-in scheduler's ``select`` notes its calls (``Scheduler.select`` replaced: the built-in ones stay
    built-in, ``_native`` and ``_trusted`` read the replacement).  Only where every station is asked in Python on
    the loop (``check_batches=True``): a built-in station the loop runs itself calls no ``select``."""
    select = Scheduler.select

    def noted(self, view):
        _note(self.name, view)
        return select(self, view)

    monkeypatch.setattr(Scheduler, "select", noted)


@pytest.fixture
def logged_builtin(monkeypatch):
    log_builtin(monkeypatch)


@pytest.mark.parametrize("seed", range(6))
def test_check_batches_true_on_builtin_stations(seed, loop_only, monkeypatch, logged_builtin):
    """``check_batches=True`` given explicitly with built-in FCFS schedulers (no other policy): the loop asks them
    in Python, each through its window, and every call is the Python clock's."""
    net, horizon, r = random_network(4700 + seed, every_scheduler=bool(seed % 2))
    assert all(_native(s.policy) for s in net.stations)
    assert _kernel_unsupported(net, True) is None
    a, calls = compare(net, horizon, r, seed, loop_only, monkeypatch, check_batches=True)
    assert isinstance(a, PolicyError) or len(calls) >= a.batches > 20


@pytest.mark.parametrize("seed", range(6))
def test_check_batches_true_on_builtin_kv_stations(seed, loop_only, monkeypatch, logged_builtin):
    net, horizon, r = random_kv_network(4900 + seed, every_scheduler=bool(seed % 2))
    net = jsq_by_requests(net)
    assert _kernel_unsupported(net, True) is None
    a, calls = compare(net, horizon, r, seed, loop_only, monkeypatch, check_batches=True)
    assert isinstance(a, PolicyError) or len(calls) >= a.batches > 20


def test_the_random_cases_bind(loop_only, monkeypatch):
    """Not vacuous: the windows hide residents (a view shorter than the station's residents), KV stations with a
    windowed subclass preempt, and the subclasses' rules change the run (NoMix and HalfBudget against the built-in
    rule, the same network otherwise)."""
    hidden = 0
    for seed in range(8):
        net, horizon, r = random_network(4100 + seed, every_scheduler=bool(seed % 2))
        net = with_windowed(net, r, every=True)
        LOG.clear()
        res = _sim(net, horizon, seed, method="kernel", check_batches=False, record_dt_s=horizon / 400)
        if isinstance(res, PolicyError):
            continue
        peak = max(float(v.max()) for v in res.station_requests.values())
        longest = max(len(c[2]) for c in LOG)
        hidden += longest < peak
    assert hidden >= 3, hidden
    pre = 0
    for seed in range(6):
        net, horizon, r = random_kv_network(4300 + seed, every_scheduler=bool(seed % 2))
        net = jsq_by_requests(with_windowed(net, r, every=True))
        res = _sim(net, horizon, seed, method="kernel", swap_s_per_token=1e-6)
        pre += not isinstance(res, PolicyError) and sum(res.preemptions.values()) > 0
    assert pre >= 2, pre
    e = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=128)
    base = dict(name="x", priority="decode", mixed=True, chunked=True)
    runs = [simulate_network(one_station(e, cls(**base)), horizon_s=60.0, rng=1).mean_sojourn_s["c"]
            for cls in (Logged, NoMix, HalfBudget)]
    assert runs[0] != runs[1] and runs[0] != runs[2]


def one_station(engine, policy, rate=4.0, prompt=100, output=20):
    return Network(stations=[Station(name="E", engine=engine, policy=policy)], classes=[RequestClass(
        name="c", rate_per_s=rate, route=[Hop(engine="E", prompt_tokens=prompt, output_tokens=output)])])


def tandem(policy, kv=None, load=1.0):
    """Sarathi feeding the station under test (``policy``, class priorities, a KV cache of ``kv`` tokens) through a
    JSQ router by requests; a second class straight to it."""
    e = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=128, k_max=12)
    u = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=96, k_max=6, kv_capacity_tokens=kv)
    return Network(stations=[Station(name="A", engine=e), Station(name="B", engine=e),
                             Station(name="U", engine=u, policy=policy, priority=("y.1",))],
                   routers=[Router(name="J", engines=("A", "B"), policy="jsq", count="requests")],
                   classes=[RequestClass(name="x", rate_per_s=2.0 * load, route=[
                       Hop(engine="J", prompt_tokens=150, output_tokens=20, name="x.1"),
                       Hop(engine="U", prompt_tokens=60, output_tokens=15, name="x.2")]),
                       RequestClass(name="y", rate_per_s=1.0 * load, route=[
                           Hop(engine="U", prompt_tokens=200, output_tokens=5, name="y.1")])])


@pytest.mark.parametrize("kv", [None, 1200], ids=["no-kv", "kv"])
@pytest.mark.parametrize("case", ["subclass", "check"])
def test_each_case_takes_the_loop_with_method_auto(case, kv, loop_only, monkeypatch):
    """Each case runs on the compiled loop with the default ``method="auto"`` (the Python path is made to fail):
    ``_kernel_unsupported`` says nothing; on main it named the case and ``"auto"`` ran the Python clock."""
    pol = NoMix(name="nomix", priority="decode", mixed=True, chunked=True) if case == "subclass" else "sarathi"
    check = None if case == "subclass" else True
    if check:
        log_builtin(monkeypatch)
    net = tandem(pol, kv)
    assert _kernel_unsupported(net, bool(check)) is None
    r = np.random.default_rng(3)
    r.random(8)
    a, calls = compare(net, 80.0, r, 3, loop_only, monkeypatch, method="auto", check_batches=check)
    assert a.completed["x"] > 20 and a.completed["y"] > 10
    assert {c[0] for c in calls} == ({"nomix"} if case == "subclass" else {"sarathi"})  # (A, B and U with the check)


def test_the_window_binds_as_on_the_python_clock(loop_only, monkeypatch):
    """A heavily loaded station under a windowed subclass (``k_max=3``) with class priorities: its views show at most
    3 decoders, then prompts, the higher rank first, until 11 of them (``min(b_max, k_max) + 8``) or ``b_max`` tokens
    -- both bounds bind in some calls -- and every call is the Python clock's."""
    e = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=64, k_max=3)
    net = Network(stations=[Station(name="E", engine=e, priority=("s.1",),
                                    policy=Logged(name="w", priority="decode", mixed=True, chunked=False))],
                  classes=[RequestClass(name=c, rate_per_s=rate, route=[Hop(engine="E", prompt_tokens=p,
                                                                             output_tokens=d, name=f"{c}.1")])
                           for c, rate, p, d in (("s", 20.0, 4, 6), ("l", 6.0, 30, 4))])
    kw = dict(horizon_s=60.0, rng=1011, check_batches=False, record_hops=True)
    LOG.clear()
    a = simulate_network(net, method="python", **kw)
    calls = list(LOG)
    LOG.clear()
    with monkeypatch.context():
        loop_only()
        b = simulate_network(net, method="kernel", **kw)
    assert_identical(a, b)
    assert calls == LOG
    n_pre, by_count, by_tokens = [], 0, 0
    for c in calls:
        seen = c[2]  # (rid, prefilled, decoded, rank, prompt)
        k = sum(1 for x in seen if x[1] >= x[4])
        assert all(x[1] >= x[4] for x in seen[:k]) and k <= 3  # the decoders first, at most min(b_max, k_max)
        pre = seen[k:]
        assert [x[3] for x in pre] == sorted(x[3] for x in pre)  # the higher rank first
        n_pre.append(len(pre))
        by_count += len(pre) == 11
        by_tokens += len(pre) < 11 and sum(x[4] - x[1] for x in pre) >= 64
    assert max(n_pre) == 11 and by_count > 100 and by_tokens > 100, (by_count, by_tokens)


class Outside(Scheduler):
    """The built-in rule, but once its view shows six prompts or more (a full window: ``k_max=1`` shows seven prompts
    of 10 tokens), after 5 s, one token of the next request's prompt -- a resident it was not shown (one station,
    one class, a queue of dozens: request ids are consecutive)."""

    def select(self, view):
        b = super().select(view)
        waiting = [r.rid for r in view.requests if r.prefilled < r.prompt_tokens]
        if len(waiting) >= 6 and view.now_s > 5.0:
            return Batch(prefill=((max(waiting) + 1, 1),))
        return b


@pytest.mark.parametrize("check", [None, False, True])
def test_a_resident_outside_the_window_is_refused_as_on_the_python_clock(check, loop_only):
    e = Engine(batch_time=Affine(c=0.05, a=1e-3), b_max=64, k_max=1)
    net = one_station(e, Outside(name="outside", priority="decode", mixed=False, chunked=False), rate=8.0,
                      prompt=10, output=2)
    a = _sim(net, 40.0, 5, method="python", check_batches=check)
    loop_only()
    b = _sim(net, 40.0, 5, method="kernel", check_batches=check)
    assert type(a) is type(b) is PolicyError and str(a) == str(b)
    assert "which is not resident" in str(a), str(a)


@pytest.mark.parametrize("kv", [None, 1500], ids=["no-kv", "kv"])
def test_a_checked_builtin_batch_that_breaks_a_rule(kv, loop_only, monkeypatch):
    """With ``check_batches=True`` the built-in schedulers' batches are checked on the loop as on the Python clock:
    one made to break (6b) at t >= 10 s raises the same PolicyError; with the check off neither path reads it."""
    select = Scheduler.select

    def broken(self, view):
        b = select(self, view)
        if view.now_s >= 10.0 and b.prefill:
            rid, m = b.prefill[0]
            left = next(r.prompt_tokens - r.prefilled for r in view.requests if r.rid == rid)
            return Batch(prefill=((rid, left + 1),) + b.prefill[1:], decode=b.decode)
        return b

    monkeypatch.setattr(Scheduler, "select", broken)
    net = tandem("vllm", kv)
    a = _sim(net, 30.0, 2, method="python", check_batches=True)
    with monkeypatch.context():
        loop_only()
        b = _sim(net, 30.0, 2, method="kernel", check_batches=True)
    assert type(a) is type(b) is PolicyError and str(a) == str(b) and "(6b)" in str(a)


@pytest.mark.parametrize("check", [None, True], ids=["check-default", "check-true"])
def test_a_kv_station_with_a_composition_batch_time_on_the_loop(check, loop_only, monkeypatch):
    """A KV station under a built-in FCFS scheduler with a composition batch time, which the loop's own KV rule does
    not time: asked in Python (network_kv times a composition), with the check off by default as on the Python clock
    (which asks a KV station's policy every batch too), or with ``check_batches=True``: the loop runs the network,
    the Python clock's run and every select call.  (Until 2026-12-07 evening the default kept it on the Python clock.)"""
    from fluidq import Staircase
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import FittedIterationModel

    comp = Composition(model=FittedIterationModel(Staircase(c=0.01, a=0.02, b0=16)))
    net = tandem("sarathi", kv=900)
    u = net.stations[2]
    net = Network(stations=[*net.stations[:2], Station(name="U", engine=dataclasses.replace(u.engine, batch_time=comp),
                                                       policy=u.policy, priority=u.priority)],
                  routers=net.routers, classes=net.classes)
    assert _kernel_unsupported(net, False) is None and _kernel_unsupported(net, True) is None
    log_builtin(monkeypatch)
    kw = dict(horizon_s=40.0, rng=4, check_batches=check, record_hops=True)
    LOG.clear()
    a = simulate_network(net, method="python", **kw)
    calls = list(LOG)
    LOG.clear()
    with monkeypatch.context():
        loop_only()
        b = simulate_network(net, **kw)
    assert_identical(a, b)
    if check:  # (every station asked in Python on both paths: the same calls; by default the loop runs the
        # other, built-in stations itself, without select calls, and only U is asked)
        assert calls == LOG and len(calls) >= a.batches > 500
    else:
        assert a.batches > 500 and len(LOG) < len(calls)


@pytest.mark.parametrize("kind", [Logged, NoMix, Reverse, HalfBudget], ids=lambda c: c.__name__)
def test_python_asks_a_subclass_every_batch_as_generic_does(kind, loop_only, monkeypatch):
    """A decode-first chunked subclass in FCFS order (Sarathi's options): ``method="python"`` asks it every batch, as
    ``"generic"`` does, and the loop too.  Before (main), ``"python"`` skipped runs of identical batches by the
    built-in rule while fewer requests decoded than the budget, never asking it then: fewer calls, and another run
    for a rule of its own."""
    e = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=256)
    net = one_station(e, kind(name="sub", priority="decode", mixed=True, chunked=True), rate=20.0, prompt=50)
    runs, calls = [], []
    for m in ("python", "generic", "kernel"):
        LOG.clear()
        runs.append(simulate_network(net, horizon_s=40.0, rng=1, method=m, record_hops=True))
        calls.append(list(LOG))
    assert_identical(runs[0], runs[2])
    assert runs[0].completed == runs[1].completed and runs[0].mean_sojourn_s == runs[1].mean_sojourn_s
    assert calls[0] == calls[2]
    assert len(calls[0]) == len(calls[1]) >= runs[0].batches > 500


def _cases():
    """(label, network, horizon, keyword arguments) for the compiled/uncompiled check."""
    sub = NoMix(name="nomix", priority="decode", mixed=True, chunked=True, k_max=5)
    rev = Reverse(name="reverse", priority="prefill", mixed=False, chunked=False, chunk_long_prompts=True)
    return [("nomix", tandem(sub), 25.0, {"record_hops": True, "initial": {"x.1": 20}}),
            ("reverse-kv", tandem(rev, kv=1200), 25.0, {"record_hops": True}),
            ("check", tandem("orca"), 25.0, {"check_batches": True, "record_dt_s": 0.1}),
            ("check-kv", tandem("vllm", kv=1500), 25.0,
             {"check_batches": True, "record_hops": True})]


def _arrays() -> dict:
    return run_arrays(_cases(), kv_counts=True)


def test_compiled_and_uncompiled_loop_agree_with_windowed_stations(uncompiled_agrees, loop_only, monkeypatch):
    with monkeypatch.context():
        loop_only()
        jit = _arrays()
    uncompiled_agrees(HERE, jit)
    assert all(jit[f"{c}/counts"][0] > 100 for c, *_ in _cases())


if __name__ == "__main__":
    from fluidq.kernel import compiled

    print(f"compiled={compiled()}")
    np.savez(sys.argv[1], **_arrays())
