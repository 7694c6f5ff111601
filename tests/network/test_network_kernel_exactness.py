"""The compiled network event loop (:mod:`fluidq.kernel.network`) gives the Python event-skipping path's run
exactly, on random networks: completions, mean sojourns bit for bit, batch and event counts, every recorded
series (requests per class, tokens per buffer label -- same labels in the same order -- and per station,
residents per station), the hop record, and the generator left in the same state.

The networks: 1-4 stations running Sarathi-Serve, vLLM with chunked prefill or a decode-first chunked
scheduler with a budget of its own below the engine's (and, in the ``every`` half, Orca, vLLM,
FasterTransformer, schedulers with random options, binding ``k_max``); random, JSQ-by-requests and
JSQ-by-tokens routers; 1-3 classes with routes of 1-3 hops (fixed or geometric lengths, one length shared
by several hops; output 0 allowed), class priorities at stations, Poisson or periodic arrivals, batch
times that make event times coincide exactly (binary fractions), initial requests, ``max_batches``.
"""
from __future__ import annotations

import numpy as np
import pytest

from fluidq import Affine, ContextAware, Engine, Staircase
from fluidq.network import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station, simulate_network
from fluidq.policies import Scheduler
from fluidq.sim.network import _kernel_unsupported
from fluidq.workload import Geometric, Periodic, Poisson


def random_network(seed, every_scheduler=False):
    """A random network the compiled loop covers, at a random load, and a horizon; ``every_scheduler``: the
    stations run any built-in scheduler (or one with random options), with binding ``k_max`` too."""
    r = np.random.default_rng(seed)
    n_st = int(r.integers(1, 5))
    engines, policies = [], []
    for _ in range(n_st):
        b_max = int(r.integers(12, 200))
        kind = int(r.integers(4))
        bt = (Affine(c=0.125, a=0.0) if kind == 0 else Affine(c=0.01 + 0.04 * r.random(), a=2e-4 * r.random())
              if kind == 1 else Staircase(c=0.01128, a=0.03547, b0=int(r.integers(8, 64))) if kind == 2
              else Affine(c=0.0625, a=1.0 / 1024))
        if every_scheduler:
            k_max = None if r.random() < 0.5 else int(r.integers(1, 2 * b_max + 1))
        else:
            k_max = None if r.random() < 0.7 else int(r.integers(b_max, 2 * b_max + 1))  # never below the budget
        engines.append(Engine(batch_time=bt, b_max=b_max, k_max=k_max))
        p = int(r.integers(7 if every_scheduler else 3))
        policies.append("sarathi" if p == 0 else "vllm-chunked" if p == 1 else
                        Scheduler(name="own-budget", priority="decode", mixed=True, chunked=True,
                                  b_max=int(r.integers(4, b_max + 1))) if p == 2 else
                        ("orca", "vllm", "fastertransformer")[p - 3] if p < 6 else
                        Scheduler(name="random", priority=str(r.choice(["prefill", "decode"])),
                                  mixed=bool(r.random() < 0.5), chunked=bool(r.random() < 0.5),
                                  chunk_long_prompts=bool(r.random() < 0.5),
                                  b_max=None if r.random() < 0.5 else int(r.integers(4, b_max + 1)),
                                  k_max=None if r.random() < 0.5 else int(r.integers(1, 40))))
    names = [f"E{i}" for i in range(n_st)]
    routers = []
    if n_st >= 2:
        for j in range(int(r.integers(0, 3))):
            m = int(r.integers(2, n_st + 1))
            eng = tuple(str(x) for x in r.choice(names, size=m, replace=False))
            pol = int(r.integers(3))
            if pol == 0:
                w = r.integers(1, 5, size=m).astype(float)
                probs = tuple((w / w.sum()).tolist())
                routers.append(Router(name=f"R{j}", engines=eng, policy="random", probabilities=probs))
            else:
                routers.append(Router(name=f"R{j}", engines=eng, policy="jsq",
                                      count="requests" if pol == 1 else "tokens"))
    targets = names + [rt.name for rt in routers]
    # random lengths (drawn 256 at a time per length, as the Python path does), where no random router's
    # draws interleave with them; one length shared by several hops too
    geo = (not any(rt.policy == "random" for rt in routers)) and r.random() < 0.5
    shared = Geometric(mean_tokens=float(r.uniform(5, 60)))
    at_station = {n: [] for n in names}
    classes = []
    periodic = r.random() < 0.3
    for c in range(int(r.integers(1, 4))):
        route = []
        for k in range(int(r.integers(1, 4))):
            tgt = str(r.choice(targets))
            name = f"c{c}.{k}"
            p_tok = int(r.integers(1, 400 if every_scheduler else 300))
            d_tok = int(r.integers(0, 50))
            if geo and r.random() < 0.7:
                p_tok = Geometric(mean_tokens=float(r.uniform(5, 200))) if r.random() < 0.6 else shared
            if geo and r.random() < 0.7:
                d_tok = Geometric(mean_tokens=float(r.uniform(1, 40))) if r.random() < 0.6 else shared
            route.append(Hop(engine=tgt, prompt_tokens=p_tok, output_tokens=d_tok, name=name))
            for rt in routers:
                if rt.name == tgt:
                    for e in rt.engines:
                        at_station[e].append(name)
            if tgt in at_station:
                at_station[tgt].append(name)
        arrival = Periodic(rate_per_s=1.0) if periodic else Poisson(rate_per_s=1.0)
        classes.append(RequestClass(name=f"c{c}", rate_per_s=1.0, arrival=arrival, route=route))
    stations = []
    for i, n in enumerate(names):
        here = sorted(set(at_station[n]))
        prio = [str(x) for x in r.permutation(here)[:int(r.integers(0, len(here) + 1))]] if here else []
        stations.append(Station(name=n, engine=engines[i], policy=policies[i], priority=prio))
    net = Network(stations=stations, routers=routers, classes=classes)
    return net.at_load(float(r.uniform(0.5, 1.25))), float(r.uniform(20.0, 90.0)), r


def assert_identical(a, b):
    assert a.completed == b.completed
    for k in a.completed:
        assert a.mean_sojourn_s[k] == b.mean_sojourn_s[k], k  # bit for bit (None == None without completions)
    assert (a.batches, a.events) == (b.batches, b.events)
    assert np.array_equal(a.times_s, b.times_s)
    for field in ("in_system", "buffer_tokens", "station_tokens", "station_requests"):
        x, y = getattr(a, field), getattr(b, field)
        assert list(x) == list(y), field
        for k in x:
            assert np.array_equal(x[k], y[k]), (field, k)
    assert (a.violations, a.blocked, a.preemptions, a.rejected) == (b.violations, b.blocked, b.preemptions,
                                                                     b.rejected)
    assert (a.hops is None) == (b.hops is None)
    if a.hops is not None:
        for k in a.hops:
            assert np.array_equal(a.hops[k], b.hops[k]), k
            assert a.hops[k].dtype == b.hops[k].dtype, k


@pytest.mark.parametrize("every", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_compiled_loop_is_the_python_path_on_random_networks(seed, every):
    net, horizon, r = random_network(seed, every)
    assert _kernel_unsupported(net, False) is None
    run_both_paths(net, horizon, r, seed, initial_max=200, record_hops=bool(r.random() < 0.5))


def run_both_paths(net, horizon, r, seed, initial_max, **kw):
    """Simulate ``net`` on the Python path and on the compiled loop with the options ``kw`` plus, drawn from
    ``r``, initial requests (1 to ``initial_max`` - 1), ``max_batches`` and a recording grid; assert the two runs
    identical and the generators left in the same state; return the Python path's run."""
    if r.random() < 0.25:
        first = None  # the first top-level hop of class 0 before any fork (a later one's join would have no fork)
        for step in net.classes[0].route:
            if isinstance(step, Fork):
                break
            if isinstance(step, Hop):
                first = step
                break
        n = int(r.integers(1, initial_max))
        if first is not None:
            kw["initial"] = {first.name: n}
    if r.random() < 0.15:
        kw["max_batches"] = int(r.integers(1, 3000))
    if r.random() < 0.3:
        kw["record_dt_s"] = horizon / float(r.integers(10, 2000))
    ga, gb = np.random.default_rng(seed + 1000), np.random.default_rng(seed + 1000)
    a = simulate_network(net, horizon_s=horizon, rng=ga, method="python", **kw)
    b = simulate_network(net, horizon_s=horizon, rng=gb, method="kernel", **kw)
    assert_identical(a, b)
    assert ga.random() == gb.random()  # the routers' uniforms: as many drawn as the Python path draws
    return a


def with_context_and_first_token(net, r):
    """``net`` with each station's engine given, at random, a context-aware batch time (its batch time the base,
    seconds per KV token a binary fraction or not) and/or the first token from the prefill."""
    stations = []
    for st in net.stations:
        eng = st.engine
        if r.random() < 0.6:
            ks = float(r.choice([2.0 ** -14, 3e-6 * r.random(), 0.0]))
            eng = eng.with_(batch_time=ContextAware(base=eng.batch_time, kv_s_per_token=ks))
        if r.random() < 0.5:
            eng = eng.with_(prefill_emits_token=True)
        stations.append(Station(name=st.name, engine=eng, policy=st.policy, priority=st.priority))
    return Network(stations=stations, routers=net.routers, classes=net.classes)


@pytest.mark.parametrize("every", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_compiled_loop_runs_context_aware_and_first_token_stations(seed, every):
    """Stations without a KV cache with a context-aware batch time and/or an engine whose prefill gives the first
    token run batch by batch on the compiled loop, as the Python path runs them."""
    net, horizon, r = random_network(100 + seed, every)
    net = with_context_and_first_token(net, r)
    assert _kernel_unsupported(net, False) is None
    run_both_paths(net, horizon, r, seed, initial_max=100, record_hops=bool(r.random() < 0.5))


def random_steps(r, targets, name, depth, length, out, choices=True):
    """1-3 random steps named from ``name``: hops (lengths from ``length()``), and above depth 2 probabilistic
    choices (1-3 options, some empty; with ``choices``) and forks (1-3 branches, each starting with a hop) joined
    after 0-1 hops; ``out`` collects the hops."""
    steps = []
    for k in range(int(r.integers(1, 4))):
        nm, x = f"{name}.{k}", r.random()
        if depth < 2 and x < 0.25 and choices:
            w = r.integers(1, 5, size=int(r.integers(1, 4))).astype(float)
            steps.append(Choice(options=tuple((float(p), [] if r.random() < 0.25 else
                                               random_steps(r, targets, f"{nm}.{o}", depth + 1, length, out, choices))
                                              for o, p in enumerate(w / w.sum()))))
        elif depth < 2 and x < 0.45:
            branches = []
            for o in range(int(r.integers(1, 4))):
                h = Hop(engine=str(r.choice(targets)), prompt_tokens=length(True), output_tokens=length(False),
                        name=f"{nm}.{o}")
                out.append(h)
                branches.append([h] + (random_steps(r, targets, f"{nm}.{o}.x", depth + 1, length, out, choices)
                                       if r.random() < 0.5 else []))
            steps.append(Fork(name=nm, branches=tuple(branches)))
            if r.random() < 0.5:
                steps += random_steps(r, targets, f"{nm}.m", 2, length, out, choices)
            steps.append(Join(name=nm))
        else:
            h = Hop(engine=str(r.choice(targets)), prompt_tokens=length(True), output_tokens=length(False), name=nm)
            out.append(h)
            steps.append(h)
    return steps


def random_route_network(seed, every):
    """:func:`random_network`'s stations and routers with classes whose routes nest probabilistic choices and
    fork-joins, fixed or random lengths (with random routers and choices too: their draws interleave), new class
    priorities."""
    net, horizon, r = random_network(seed, every)
    names = [s.name for s in net.stations]
    targets = names + [rt.name for rt in net.routers]
    uniforms = r.random() < 0.7  # (choices)
    geo = r.random() < 0.6
    shared = Geometric(mean_tokens=float(r.uniform(5, 60)))

    def length(prompt):
        if geo and r.random() < 0.6:
            return Geometric(mean_tokens=float(r.uniform(5, 120 if prompt else 30))) if r.random() < 0.6 else shared
        return int(r.integers(1, 300)) if prompt else int(r.integers(0, 40))

    classes, hops = [], []
    for c in range(int(r.integers(1, 4))):
        route, out = [], []
        while not any(isinstance(x, Hop) for x in route):  # (a route with a hop at its top level)
            out = []
            route = random_steps(r, targets, f"c{c}", 0, length, out, uniforms)
            if not isinstance(route[0], Hop) and r.random() < 0.5:
                out.append(Hop(engine=str(r.choice(targets)), prompt_tokens=length(True),
                               output_tokens=length(False), name=f"c{c}.first"))
                route = [out[-1], *route]
        hops += out
        classes.append(RequestClass(name=f"c{c}", rate_per_s=1.0, route=route))
    at_station = {n: [] for n in names}
    for h in hops:
        for e in (next((rt.engines for rt in net.routers if rt.name == h.engine), (h.engine,))):
            at_station[e].append(h.name)
    stations = [Station(name=st.name, engine=st.engine, policy=st.policy,
                        priority=[str(x) for x in r.permutation(sorted(set(at_station[st.name])))[
                            :int(r.integers(0, len(set(at_station[st.name])) + 1))]] if at_station[st.name] else [])
                for st in net.stations]
    net = Network(stations=stations, routers=net.routers, classes=classes).at_load(float(r.uniform(0.5, 1.2)))
    rate = sum(c.rate_per_s for c in net.classes)
    return net, min(max(horizon, 300.0 / rate), 5000.0), r  # (some 300 requests or more)


@pytest.mark.parametrize("every", [False, True])
@pytest.mark.parametrize("seed", range(15))
def test_compiled_loop_runs_choices_and_fork_joins(seed, every, monkeypatch):
    """Routes with probabilistic choices (a uniform each, drawn in the Python path's order, with the random
    routers' and between random lengths' draws) and fork-joins, nested, on the compiled loop: the Python path's
    run, bit for bit, and the generator left in the same state.  Blocks of 1-9 uniforms for half the seeds, so
    that the loop asks for the next block often, also between a length buffer's refills."""
    import fluidq.kernel.network as kn

    net, horizon, r = random_route_network(200 + seed, every)
    if seed % 2:
        monkeypatch.setattr(kn, "UB", int(r.integers(1, 10)))
    assert _kernel_unsupported(net, False) is None
    run_both_paths(net, horizon, r, seed, initial_max=50, record_hops=bool(r.random() < 0.5))


@pytest.mark.parametrize("seed", [1, 5, 8])
def test_compiled_loop_matches_select_per_batch(seed, same_runs):
    """The generic path (``select(view)`` every batch) agrees too: the same requests and series."""
    net, horizon, _ = random_network(seed)
    a = simulate_network(net, horizon_s=horizon, rng=seed, method="generic")
    b = simulate_network(net, horizon_s=horizon, rng=seed, method="kernel")
    assert sum(a.completed.values()) > 0
    same_runs(a, b, exact=True)


def test_auto_uses_the_compiled_loop_where_it_applies_and_python_elsewhere():
    from fluidq.kernel import compiled

    net, horizon, _ = random_network(3)
    a = simulate_network(net, horizon_s=horizon, rng=2)
    b = simulate_network(net, horizon_s=horizon, rng=2, method="python")
    assert_identical(a, b)
    plain = [Station(name=st.name, engine=st.engine, policy=st.policy) for st in net.stations[:2]]
    geo = Network(stations=plain, routers=[Router(name="R", engines=(net.stations[0].name,
                                                                                 net.stations[1].name),
                                                             policy="random", probabilities=(0.5, 0.5))],
                  classes=[RequestClass(name="g", rate_per_s=2.0, route=[
                      Hop(engine="R", prompt_tokens=Geometric(mean_tokens=50), output_tokens=10)])])
    assert _kernel_unsupported(geo, False) is None  # (random lengths and a random router: their draws interleave)
    assert _kernel_unsupported(net, True) is None  # (2026-12-07, h-netwin: the built-in stations asked in Python)
    ctx = Engine(batch_time=ContextAware(base=Affine(c=0.05, a=0.0), kv_s_per_token=1e-6), b_max=64)
    ctx_net = Network(stations=[Station(name="O", engine=ctx)], classes=[RequestClass(name="o", rate_per_s=2.0, route=[
        Hop(engine="O", prompt_tokens=20, output_tokens=5)])])
    assert _kernel_unsupported(ctx_net, False) is None  # (batch by batch)

    class Own(Scheduler):  # a subclass with a rule of its own: its select() asked in Python, on the loop (h-netwin)
        def select(self, view):
            return super().select(view)

    own = Network(stations=[Station(name="O", engine=net.stations[0].engine, policy=Own(
        name="own", priority="decode", mixed=True, chunked=True))], classes=ctx_net.classes)
    assert _kernel_unsupported(own, False) is None
    assert_identical(simulate_network(geo, horizon_s=5.0, rng=1, method="kernel", check_batches=True),
                     simulate_network(geo, horizon_s=5.0, rng=1, method="python", check_batches=True))
    assert_identical(simulate_network(geo, horizon_s=50.0, rng=1), simulate_network(geo, horizon_s=50.0, rng=1,
                                                                                     method="python"))
    assert isinstance(compiled(), bool)


def test_batch_by_batch_stations_block_and_window_as_the_python_path():
    """Whole-prompt schedulers (vLLM, Orca) with prompts above the budget: blocked hops are reported, and a
    queue of more blocked prompts than the Python path's view shows (``min(b_max, k_max) + 8``) hides the
    schedulable prompts behind them, in both paths; prompt-only hops leave at their prefill."""
    small = Engine(batch_time=Affine(c=0.03, a=1e-4), b_max=32, k_max=2)
    net = Network(stations=[Station(name="V", engine=small, policy="vllm"),
                            Station(name="O", engine=Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=64),
                                    policy="orca", priority=("s.2",))],
                  classes=[RequestClass(name="big", rate_per_s=3.0, route=[
                      Hop(engine="V", prompt_tokens=100, output_tokens=5, name="b.1")]),
                      RequestClass(name="s", rate_per_s=4.0, route=[
                          Hop(engine="V", prompt_tokens=10, output_tokens=0, name="s.1"),
                          Hop(engine="O", prompt_tokens=30, output_tokens=3, name="s.2")])])
    a = simulate_network(net, horizon_s=20.0, rng=5, method="python", record_hops=True)
    b = simulate_network(net, horizon_s=20.0, rng=5, method="kernel", record_hops=True)
    assert a.blocked == (("V", "b.1"),)
    assert a.completed["big"] == 0 and a.completed["s"] > 0
    assert_identical(a, b)
