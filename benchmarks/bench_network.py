"""Benchmark: fluid paths and the network simulator (issue 5 targets).

Targets:
* the exact fluid path of a 50-class network over 20 cycles in under 1 s -- a ring of 25 Sarathi
  engines, class k doing a short hop (128, 32) on engine k and a long hop (320, 32) on engine k+1, each
  engine 90 % loaded and giving priority to the class leaving through it (a Rybko--Stolyar ring whose
  fluid path diverges by a constant factor per cycle);
* the network simulator keeps the single-engine simulator's per-event cost: microseconds per batch of
  ``simulate_network`` on a one-engine network vs ``fluidq.simulate`` on the same engine and workload
  (the two draw the same arrivals and give the same requests), generic path against generic path
  (``select(view)`` every batch, 300 s) and event-skipping against the single-engine kernel -- per batch
  over a 1,200 s run, and as the marginal cost per batch between a 150 s and a 1,200 s run (setup,
  recording and result assembly cancel out) -- target <= 1.5x each; and, for information, per batch on a
  two-engine network (LLM Rybko--Stolyar) whose queues grow to thousands, on one station with a
  binding block KV cache (vLLM's memory) against ``fluidq.simulate`` on the same engine, and on that station
  and a 4-station network with KV stations, the compiled loop against the Python path (ratio side by side); the
  same for networks with a probabilistic choice and a fork-join, with context-aware batch times and prefill-
  emitted first tokens at stations without a KV cache, and with random lengths through a random router.
* issue 15's tighter targets: the one-station network within 1.2x of the single-engine kernel per batch,
  and a 4-engine JSQ network (four times the arrivals, each engine at 0.9 of its capacity) within 1.3x per
  batch of the one-station network, both over 12,000 s runs (~90,000 batches; best of 7, interleaved).
  ``method='auto'`` runs these networks on the compiled event loop (:mod:`fluidq.kernel.network`); a row gives
  the Python event-skipping path (``method='python'``) too.

Run: ``python benchmarks/bench_network.py`` (prints measured value, target and ratio per line).

``--against SRC`` instead times this tree against the fluidq package of another source tree (a commit
extracted with ``git archive``), before/after a change to the network loops: the marginal CPU cost per batch
(between a run and one eight times shorter, so that setup and result assembly cancel out) of one-station
networks under each built-in scheduler (Sarathi's runs skipped; Orca, vLLM, FasterTransformer and Sarathi with
a binding ``k_max`` batch by batch), a station with vLLM's block KV, the 4-station KV network above,
geometric lengths through a random router, and on the Python loop (``method='python'``) Sarathi's
event-skipping path, vLLM batch by batch, the block-KV station and the 4-station KV network (their KV
stations are the kernel's ``EngineRun``); each tree in its own child processes, alternating (``--repeats``
each, best kept), the ratio this/other per case (it stops with an error if the two trees' runs differ: batches or
completions); ``--only TEXT`` keeps the cases whose name contains TEXT (``A|B``: either).
The simulator pairs are timed interleaved (network, single engine, network, ...) in CPU seconds of this process
(``time.process_time``; wall-clock time, used before 2026-12-07, missed each issue-15 target in one of two runs
under load) and the least of each is kept, so that load from other jobs on a shared machine hits both sides alike;
the issue-15 rows also print the median of the paired ratios, and a met / NOT met line each.  Recorded figures:
``benchmarks/README.md`` (network section).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import fluidq
from fluidq import Affine, Engine, Staircase
from fluidq.fluid import fluid_path
from fluidq.network import Hop, Network, RequestClass, Station, simulate_network
from fluidq.network.examples import llm_rybko_stolyar


def ring(m=25, short=(128, 32), long=(320, 32), load=0.9):
    e = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=768)
    lam = load * 768 / (sum(short) + sum(long))
    st = [Station(name=f"S{k}", engine=e, priority=(f"T{(k - 1) % m}.2", f"T{k}.1")) for k in range(m)]
    cl = [RequestClass(name=f"T{k}", rate_per_s=lam, route=[
        Hop(engine=f"S{k}", prompt_tokens=short[0], output_tokens=short[1], name=f"T{k}.1"),
        Hop(engine=f"S{(k + 1) % m}", prompt_tokens=long[0], output_tokens=long[1], name=f"T{k}.2")])
        for k in range(m)]
    return Network(stations=st, classes=cl, name=f"ring-{m}")


def best_of(fn, repeat=3):
    """The least CPU time of this process (``time.process_time``: other jobs' load on a shared machine does not
    count, as it does in wall-clock time) of ``repeat`` calls of ``fn``, and its last result."""
    out, val = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        val = fn()
        out.append(time.process_time() - t0)
    return min(out), val


#: the CPU times of each side of the last :func:`best_pair` (run in pairs, alternating): for the medians
LAST_PAIR: dict = {}


def best_pair(fa, fb, repeat):
    """Least CPU times of ``fa`` and ``fb`` (see :func:`best_of`) run alternately ``repeat`` times, and their last
    results; every time kept in :data:`LAST_PAIR` (``"a"``, ``"b"``)."""
    ta, tb, ra, rb = [], [], None, None
    for _ in range(repeat):
        t0 = time.process_time()
        ra = fa()
        ta.append(time.process_time() - t0)
        t0 = time.process_time()
        rb = fb()
        tb.append(time.process_time() - t0)
    LAST_PAIR.update(a=ta, b=tb)
    return min(ta), ra, min(tb), rb


def _median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def verdict(label: str, scale: float, target: float) -> str:
    """The issue-15 line of the last :func:`best_pair`: the ratio of least CPU times (a per-unit ``scale``: the
    b side's units over the a side's) and the median of the paired ratios, each against ``target``."""
    ta, tb = LAST_PAIR["a"], LAST_PAIR["b"]
    best = min(ta) / min(tb) * scale
    med = _median([x / y for x, y in zip(ta, tb, strict=True)]) * scale
    return (f"# issue 15: {label}: {best:.3f}x (least CPU time of {len(ta)} alternating runs each), median of the "
            f"paired ratios {med:.3f}x (each {min(x / y for x, y in zip(ta, tb)) * scale:.2f}-"
            f"{max(x / y for x, y in zip(ta, tb)) * scale:.2f}x); target <= {target:g}x: "
            f"{'met' if best <= target else 'NOT met'} (median: {'met' if med <= target else 'NOT met'})")


def main():
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()} "
          f"{platform.system()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load average "
          f"{os.getloadavg()[0]:.1f}; times: CPU seconds of this process (time.process_time), least of the repeats")
    rows, verdicts = [], []
    net = ring()
    assert net.flow.n == 50
    fluid_path(net, {"T0.1": 6400.0}, cycles=2)  # warm-up
    t, p = best_of(lambda: fluid_path(net, {"T0.1": 6400.0}, cycles=20, max_phases=100000))
    rows.append((f"fluid path, 50 classes, {p.cycles_seen} cycles ({len(p.times_s) - 1} phases, "
                 f"x{p.growth_factor:.3g}/cycle)", t, "s", 1.0, "<="))

    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam = 0.9 * 512 / float(eng.batch_time(512)) / 200
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=lam), prompt_tokens=100, output_tokens=100)
    one = Network(stations=[Station(name="E", engine=eng)],
                  classes=[RequestClass(name="c", rate_per_s=lam, route=[Hop(engine="E", prompt_tokens=100,
                                                                              output_tokens=100)])])
    horizon = 300.0
    try:
        tq, rq, tg, rg = best_pair(
            lambda: simulate_network(one, horizon_s=horizon, rng=1, method="generic"),
            lambda: fluidq.simulate(eng, w, "sarathi", horizon_s=horizon, rng=1, method="generic"), repeat=3)
        us_net_gen, us_gen = 1e6 * tq / rq.batches, 1e6 * tg / max(rg.n_iterations, 1)
        # event-skipping: per batch over a long run, and the marginal cost per batch between a short and a
        # long run (the per-event cost proper: setup, recording grid and result assembly cancel out)
        h_short, h_long = 150.0, 1200.0
        tn1, rn1, ts1, rs1 = best_pair(
            lambda: simulate_network(one, horizon_s=h_short, rng=1),
            lambda: fluidq.simulate(eng, w, "sarathi", horizon_s=h_short, rng=1, method="fast"), repeat=9)
        tn, rn, ts, rs = best_pair(
            lambda: simulate_network(one, horizon_s=h_long, rng=1),
            lambda: fluidq.simulate(eng, w, "sarathi", horizon_s=h_long, rng=1, method="fast"), repeat=9)
        for a_, b_ in ((rn1, rs1), (rn, rs)):  # the same requests (tests/network/test_network_sim_exactness.py)
            assert a_.completed["c"] == _finished(b_), (a_.completed, _finished(b_))
        us_net, us_fast = 1e6 * tn / rn.batches, 1e6 * ts / max(rs.n_iterations, 1)
        mar_net = 1e6 * (tn - tn1) / (rn.batches - rn1.batches)
        mar_fast = 1e6 * (ts - ts1) / (rs.n_iterations - rs1.n_iterations)
        rows.append(("single-engine simulator, generic path (select(view) per iteration)", us_gen, "us", None, "info"))
        rows.append((f"single-engine simulator, event-skipping kernel, per iteration ({h_long:g} s)", us_fast, "us",
                     None, "info"))
        rows.append(("network simulator, method='generic' (select(view) per batch) vs generic single-engine",
                     us_net_gen, "us", 1.5 * us_gen, "<="))
        name_short = (f"network simulator, method='auto', per batch over {h_short:g} s (setup counts more; kernel: "
                      f"{1e6 * ts1 / max(rs1.n_iterations, 1):.3g} us)")
        rows.append((name_short, 1e6 * tn1 / rn1.batches, "us", None, "info"))
        rows.append((f"network simulator, method='auto' (runs skipped) vs single-engine kernel, per batch ({h_long:g} s)",
                     us_net, "us", 1.5 * us_fast, "<="))
        rows.append((f"  the same, marginal cost per batch ({h_short:g} s -> {h_long:g} s runs; kernel: {mar_fast:.3g} us)",
                     mar_net, "us", 1.5 * mar_fast, "<="))
        # the Python event-skipping path (method='python'), which method='auto' ran before the compiled loop
        tpy, rpy = best_of(lambda: simulate_network(one, horizon_s=h_long, rng=1, method="python"), repeat=3)
        assert rpy.completed == rn.completed and rpy.mean_sojourn_s == rn.mean_sojourn_s
        rows.append((f"network simulator, method='python' (the Python event-skipping path), per batch ({h_long:g} s)",
                     1e6 * tpy / rpy.batches, "us", None, "info"))
        # issue 15's tighter targets on the same pair: one-station network within 1.2x of simulate per batch, over
        # runs ten times longer than the rows above (a 1,200 s run is ~3 ms: on a shared machine its ratio moved
        # 1.15x-1.41x between two runs of this script)
        h15 = 10 * h_long
        tn15, rn15, ts15, rs15 = best_pair(
            lambda: simulate_network(one, horizon_s=h15, rng=1),
            lambda: fluidq.simulate(eng, w, "sarathi", horizon_s=h15, rng=1, method="fast"), repeat=7)
        assert rn15.completed["c"] == _finished(rs15), (rn15.completed, _finished(rs15))
        us_net15 = 1e6 * tn15 / rn15.batches
        verdicts.append(verdict(f"one-station network vs simulate, CPU per batch ({h15:g} s, {rn15.batches:,} "
                                "batches)", max(rs15.n_iterations, 1) / rn15.batches, 1.2))
        rows.append((f"issue 15: one-station network vs single-engine kernel, per batch ({h15:g} s; kernel "
                     f"{1e6 * ts15 / max(rs15.n_iterations, 1):.3g} us)",
                     us_net15, "us", 1.2e6 * ts15 / max(rs15.n_iterations, 1), "<="))
        # issue 15: a 4-engine JSQ network (4x the arrivals, same per-engine load) within 1.3x per batch of the
        # one-station network; interleaved like the pairs above
        from fluidq.network import Router

        four = Network(stations=[Station(name=f"E{j}", engine=eng) for j in range(4)],
                       routers=[Router(name="R", engines=[f"E{j}" for j in range(4)], policy="jsq")],
                       classes=[RequestClass(name="c", rate_per_s=4 * lam, route=[
                           Hop(engine="R", prompt_tokens=100, output_tokens=100)])])
        h4 = h15 / 4  # about as many batches in all as the one-station run
        tj, rj, to, ro = best_pair(lambda: simulate_network(four, horizon_s=h4, rng=1),
                                   lambda: simulate_network(one, horizon_s=h15, rng=1), repeat=7)
        us_four, us_one = 1e6 * tj / rj.batches, 1e6 * to / ro.batches
        verdicts.append(verdict(f"4-engine JSQ network ({h4:g} s, {rj.batches:,} batches) vs one-station network "
                                f"({h15:g} s, {ro.batches:,} batches), CPU per batch", ro.batches / rj.batches, 1.3))
        rows.append((f"issue 15: 4-engine JSQ network ({rj.batches} batches over {h4:g} s) vs one-station network "
                     f"({ro.batches} batches over {h15:g} s), per batch", us_four, "us", 1.3 * us_one, "<="))
    except AssertionError:  # different runs: their timings compare nothing
        raise
    except Exception as exc:  # the single-engine simulator is another module; report, do not fail
        tn, rn = best_of(lambda: simulate_network(one, horizon_s=horizon, rng=1), repeat=3)
        us_net = 1e6 * tn / rn.batches
        tq, rq = best_of(lambda: simulate_network(one, horizon_s=horizon, rng=1, method="generic"), repeat=3)
        us_net_gen = 1e6 * tq / rq.batches
        rows.append((f"single-engine simulator unavailable ({type(exc).__name__})", float("nan"), "us", None, "info"))
        rows.append(("network simulator, one engine, per batch", us_net, "us", None, "info"))
        rows.append(("network simulator, one engine, per batch (generic)", us_net_gen, "us", None, "info"))
    # a station that cannot skip runs (Orca: prefill-first mixed batches) runs batch by batch, compiled too;
    # against fluidq.simulate's kernel on the same engine and workload, and the Python path
    orca_one = Network(stations=[Station(name="E", engine=eng, policy="orca")], classes=one.classes)
    to_, ro_, tos, ros = best_pair(lambda: simulate_network(orca_one, horizon_s=horizon, rng=1),
                                   lambda: fluidq.simulate(eng, w, "orca", horizon_s=horizon, rng=1), repeat=5)
    top, rop = best_of(lambda: simulate_network(orca_one, horizon_s=horizon, rng=1, method="python"), repeat=3)
    assert rop.completed == ro_.completed and rop.mean_sojourn_s == ro_.mean_sojourn_s
    assert ro_.completed["c"] == _finished(ros), (ro_.completed, _finished(ros))
    rows.append((f"network simulator, one Orca station (batch by batch), per batch (fluidq.simulate: "
                 f"{1e6 * tos / max(ros.n_iterations, 1):.3g} us; method='python': {1e6 * top / rop.batches:.3g} us)",
                 1e6 * to_ / max(ro_.batches, 1), "us", None, "info"))
    # a station with a KV cache (vLLM's block memory, binding: preemptions) runs batch by batch with the memory
    # rules of fluidq.sim._admission, on the compiled loop (method='auto') or the Python path; against
    # fluidq.simulate on the same engine, and the Python path side by side (the same run bit for bit)
    from fluidq.engine import VLLM

    kv_eng = eng.with_(kv_capacity_tokens=6000, memory=VLLM)
    kv_one = Network(stations=[Station(name="E", engine=kv_eng)], classes=one.classes)
    tk, rk, tks, rks = best_pair(lambda: simulate_network(kv_one, horizon_s=horizon, rng=1),
                                 lambda: fluidq.simulate(kv_eng, w, "sarathi", horizon_s=horizon, rng=1), repeat=3)
    tkp, rkp = best_of(lambda: simulate_network(kv_one, horizon_s=horizon, rng=1, method="python"), repeat=3)
    assert rk.batches == rks.n_iterations and rk.preemptions["E"] == rks.preemptions
    assert rkp.completed == rk.completed and rkp.mean_sojourn_s == rk.mean_sojourn_s and rkp.batches == rk.batches
    rows.append((f"network, one station with block KV ({rks.preemptions} preemptions), method='auto' (compiled), "
                 f"per batch (fluidq.simulate: {1e6 * tks / max(rks.n_iterations, 1):.3g} us)",
                 1e6 * tk / max(rk.batches, 1), "us", None, "info"))
    rows.append((f"  the same, method='python' ({1e6 * tkp / max(rkp.batches, 1):.3g} us per batch) / compiled",
                 tkp / tk, "x", None, "info"))
    # four KV stations behind a JSQ router (token KV, swapping; vLLM's blocks with prefix caching; two without
    # a cache), then a second hop to one of them: the compiled loop against the Python path, same run
    kv4 = _kv4_network(eng, lam)
    h4 = horizon / 2
    t4, r4, t4p, r4p = best_pair(lambda: simulate_network(kv4, horizon_s=h4, rng=1, swap_s_per_token=1e-6),
                                 lambda: simulate_network(kv4, horizon_s=h4, rng=1, swap_s_per_token=1e-6,
                                                          method="python"), repeat=3)
    assert r4p.completed == r4.completed and r4p.mean_sojourn_s == r4.mean_sojourn_s and r4p.batches == r4.batches
    assert r4p.preemptions == r4.preemptions
    rows.append((f"network, 4 stations (2 with KV: {sum(r4.preemptions.values())} preemptions) behind JSQ, 2 hops, "
                 f"method='auto' (compiled), per batch", 1e6 * t4 / max(r4.batches, 1), "us", None, "info"))
    rows.append((f"  the same, method='python' ({1e6 * t4p / max(r4p.batches, 1):.3g} us per batch) / compiled",
                 t4p / t4, "x", None, "info"))
    # issue 15: the route elements and station options compiled since (2026-12-06): a route with a probabilistic
    # choice and a fork-join, through a random router; stations without a KV cache with a context-aware batch time
    # and the first token from the prefill; random lengths with a random router -- the compiled loop against the
    # Python path, side by side, same run
    for label, net_, hh in (("a choice and a fork-join (3 branches) per request, random router", _routes_network(
            eng, lam), horizon), ("2 stations, context-aware batch time, first token from the prefill",
                                  _context_network(eng, lam), horizon),
                            ("geometric lengths through a random router to 2 stations", _random_lengths_network(
                                eng, lam), horizon)):
        tc, rc, tp, rp = best_pair(lambda n=net_, h=hh: simulate_network(n, horizon_s=h, rng=1),
                                   lambda n=net_, h=hh: simulate_network(n, horizon_s=h, rng=1, method="python"),
                                   repeat=3)
        assert rp.completed == rc.completed and rp.mean_sojourn_s == rc.mean_sojourn_s and rp.batches == rc.batches
        rows.append((f"network, {label}, method='auto' (compiled), per batch", 1e6 * tc / max(rc.batches, 1), "us",
                     None, "info"))
        rows.append((f"  the same, method='python' ({1e6 * tp / max(rp.batches, 1):.3g} us per batch) / compiled",
                     tp / tc, "x", None, "info"))
    rsn = llm_rybko_stolyar()
    tl, rl = best_of(lambda: simulate_network(rsn, horizon_s=1500.0, rng=2, initial={"A.1": 100}), repeat=3)
    peak = int(max(v.max() for v in rl.station_requests.values()))
    rows.append((f"network simulator, LLM Rybko-Stolyar (up to {peak} requests per engine), per batch",
                 1e6 * tl / rl.batches, "us", None, "info"))

    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'value':>12}  {'target':>12}  ratio")
    for name, val, unit, target, op in rows:
        if target is None:
            print(f"{name:<{width}}  {val:>9.4g} {unit:<2}  {'-':>12}  -")
            continue
        ratio = val / target
        ok = ratio <= 1 if op == "<=" else ratio >= 1
        print(f"{name:<{width}}  {val:>9.4g} {unit:<2}  {op} {target:>7.4g} {unit:<2}  {ratio:6.3f} {'ok' if ok else 'MISSED'}")
    for line in verdicts:
        print(line)


def _finished(r) -> int:
    """Requests ``fluidq.simulate``'s run ``r`` finished (the batch in progress at the horizon completed, as in the
    network)."""
    import numpy as np

    return int(np.isfinite(np.asarray(r.requests["finish_s"])).sum())


def _kv4_network(eng, lam):
    """Four KV stations behind a JSQ router (token KV, swapping; vLLM's blocks with prefix caching; two
    without a cache), then a second hop to one of them, at 3 x ``lam`` requests per second."""
    from fluidq.engine import VLLM, Memory
    from fluidq.network import Router

    mems = [(6000, Memory(preemption="swap")), (6000, VLLM.with_(prefix_caching=True)), (None, None), (None, None)]
    return Network(stations=[Station(name=f"K{j}", engine=eng.with_(kv_capacity_tokens=c, memory=m))
                             for j, (c, m) in enumerate(mems)],
                   routers=[Router(name="R", engines=[f"K{j}" for j in range(4)], policy="jsq", count="tokens")],
                   classes=[RequestClass(name="c", rate_per_s=3 * lam, route=[
                       Hop(engine="R", prompt_tokens=100, output_tokens=100, name="c.1"),
                       Hop(engine="K1", prompt_tokens=20, output_tokens=4, name="c.2")])])


def _routes_network(eng, lam):
    """Three Sarathi stations: a first hop, then with probability 0.8 a fork of three branches (one through a random
    router) joined before a last hop, else straight to the last hop; about ``lam`` x 3 tokens of work per engine."""
    from fluidq.network import Choice, Fork, Join, Router

    h = dict(prompt_tokens=100, output_tokens=100)
    return Network(stations=[Station(name=f"F{j}", engine=eng) for j in range(3)],
                   routers=[Router(name="R", engines=("F1", "F2"), policy="random", probabilities=(0.5, 0.5))],
                   classes=[RequestClass(name="c", rate_per_s=lam, route=[
                       Hop(engine="F0", **h, name="c.1"),
                       Choice(options=((0.8, [Fork(name="k", branches=(
                           [Hop(engine="F1", **h, name="c.a")], [Hop(engine="F2", **h, name="c.b")],
                           [Hop(engine="R", **h, name="c.r")])), Join(name="k")]), (0.2, []))),
                       Hop(engine="F0", prompt_tokens=20, output_tokens=20, name="c.2")])]).at_load(0.85)


def _random_lengths_network(eng, lam):
    """Geometric prompt and output lengths (means 100) through a random router (0.6 / 0.4) to two Sarathi stations:
    the lengths' and the router's draws from one generator interleave."""
    from fluidq.network import Router
    from fluidq.workload import Geometric

    return Network(stations=[Station(name="G0", engine=eng), Station(name="G1", engine=eng)],
                   routers=[Router(name="R", engines=("G0", "G1"), policy="random", probabilities=(0.6, 0.4))],
                   classes=[RequestClass(name="c", rate_per_s=lam, route=[
                       Hop(engine="R", prompt_tokens=Geometric(mean_tokens=100), output_tokens=Geometric(
                           mean_tokens=100), name="c.1")])]).at_load(0.85)


def _context_network(eng, lam):
    """A tandem of two stations whose engines charge the decoders' context (``ContextAware``) and give the first
    token with the prefill (one Sarathi, one vLLM), at 0.85 of capacity."""
    from fluidq import ContextAware

    e = eng.with_(batch_time=ContextAware(base=eng.batch_time, kv_s_per_token=2e-7), prefill_emits_token=True)
    return Network(stations=[Station(name="C0", engine=e), Station(name="C1", engine=e, policy="vllm")],
                   classes=[RequestClass(name="c", rate_per_s=lam, route=[
                       Hop(engine="C0", prompt_tokens=100, output_tokens=100, name="c.1"),
                       Hop(engine="C1", prompt_tokens=50, output_tokens=20, name="c.2")])]).at_load(0.85)


def _cases():
    """The ``--against`` cases: name -> (network, long horizon, simulate_network options)."""
    from fluidq.engine import VLLM

    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam = 0.9 * 512 / float(eng.batch_time(512)) / 200
    cls = [RequestClass(name="c", rate_per_s=lam, route=[Hop(engine="E", prompt_tokens=100, output_tokens=100)])]

    def one(policy="sarathi", e=eng):
        return Network(stations=[Station(name="E", engine=e, policy=policy)], classes=cls)

    kv4 = _kv4_network(eng, lam)
    return {
        "sarathi, runs skipped": (one(), 64000.0, {}),
        "orca, batch by batch": (one("orca"), 16000.0, {}),
        "vllm, batch by batch": (one("vllm"), 16000.0, {}),
        "fastertransformer": (one("fastertransformer"), 16000.0, {}),
        "sarathi, k_max=16": (one(e=eng.with_(k_max=16)), 16000.0, {}),
        "block KV (vLLM), 1 station": (one(e=eng.with_(kv_capacity_tokens=6000, memory=VLLM)), 16000.0, {}),
        "4 stations, 2 with KV, JSQ": (kv4, 8000.0, {"swap_s_per_token": 1e-6}),
        "sarathi, method='python'": (one(), 4000.0, {"method": "python"}),
        # the Python loop's batch-by-batch stations: without a cache, and with one (the kernel's EngineRun)
        "vllm, method='python'": (one("vllm"), 1000.0, {"method": "python"}),
        "orca, method='python'": (one("orca"), 1000.0, {"method": "python"}),
        "block KV (vLLM), method='python'": (one(e=eng.with_(kv_capacity_tokens=6000, memory=VLLM)), 1000.0,
                                             {"method": "python"}),
        "4 stations KV JSQ, method='python'": (kv4, 400.0, {"swap_s_per_token": 1e-6, "method": "python"}),
        "geometric lengths, random router": (_random_lengths_network(eng, lam), 8000.0, {}),
    }


def marginal_us(net, h, kw, repeat):
    """CPU microseconds per batch between a run of ``h / 8`` s and one of ``h`` s (each the best of ``repeat``,
    after a first run that compiles or loads the cached code), and the long run's result; bench_routing.py uses it."""
    simulate_network(net, horizon_s=h / 8, rng=1, **kw)  # compile or load the cached code

    def cpu(hh):
        best, res = None, None
        for _ in range(repeat):
            t0 = time.process_time()
            res = simulate_network(net, horizon_s=hh, rng=1, **kw)
            dt = time.process_time() - t0
            best = dt if best is None or dt < best else best
        return best, res

    ts, rs = cpu(h / 8)
    tl, rl = cpu(h)
    return 1e6 * (tl - ts) / max(rl.batches - rs.batches, 1), rl


def child_cases(script, tree, only=None):
    """Run ``script --child`` in a process importing the fluidq of ``tree``; return its cases (refused when the child
    imported another fluidq)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, str(Path(script).resolve()), "--child"] + (["--only", only] if only else []),
                       env=env, cwd=str(tree), capture_output=True, text=True, check=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if not Path(out["fluidq"]).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"the child imported {out['fluidq']}, not the fluidq of {tree}")
    return out["cases"]


def alternate(script, here, src, repeats, only=None):
    """The cases of ``repeats`` child runs of ``script`` on this tree and on ``src``, alternating: (this, other)."""
    new, old = [], []
    for _ in range(repeats):
        new.append(child_cases(script, here, only))
        old.append(child_cases(script, Path(src).resolve(), only))
    return new, old


def _child(repeat: int, only: str | None = None) -> None:
    """Print, as JSON, each case's marginal CPU microseconds per batch (best of ``repeat``) and its batches
    (``only``: the cases whose name contains it)."""
    out = {}
    for name, (net, h, kw) in _cases().items():
        if only and not any(o in name for o in only.split("|")):
            continue
        us, rl = marginal_us(net, h, kw, repeat)
        out[name] = {"us": us, "batches": int(rl.batches),
                     "completed": int(sum(rl.completed.values()) if isinstance(rl.completed, dict)
                                      else rl.completed)}
    print(json.dumps({"fluidq": fluidq.__file__, "cases": out}))


def against(src: str, repeats: int, only: str | None = None) -> None:
    """This tree against the fluidq under ``src``: per case, marginal CPU us per batch, alternating children."""
    here = Path(__file__).resolve().parents[1]
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()} {platform.system()}, "
          f"{os.cpu_count()} CPUs; this tree ({here}) against {src}: marginal CPU us per batch, best of "
          f"{repeats} alternating child processes each (3 runs per child)")

    new, old = alternate(__file__, here, src, repeats, only)
    width = max(len(k) for k in new[0])
    print(f"{'case':<{width}}  {'batches':>9}  {'this us':>8}  {'other us':>8}  this/other (each run)")
    differ = []
    for k in new[0]:
        a = min(r[k]["us"] for r in new)
        b = min(r[k]["us"] for r in old)
        same = all(r[k]["batches"] == new[0][k]["batches"] and r[k]["completed"] == new[0][k]["completed"]
                   for r in new + old)
        each = " ".join(f"{x[k]['us'] / y[k]['us']:.3f}" for x, y in zip(new, old, strict=True))
        print(f"{k:<{width}}  {new[0][k]['batches']:>9,}  {a:>8.3f}  {b:>8.3f}  {a / b:.3f}x ({each})"
              f"{'' if same else '  (runs differ!)'}")
        differ += [] if same else [k]
    if differ:  # a change meant to keep the runs must keep them: the timing of different runs compares nothing
        raise SystemExit(f"the two trees' runs differ (batches or completions): {', '.join(differ)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="SRC", help="time this tree against the fluidq of this source tree")
    ap.add_argument("--repeats", type=int, default=3, help="alternating child processes per tree with --against")
    ap.add_argument("--only", metavar="TEXT", help="with --against, only the cases whose name contains TEXT "
                    "('A|B': either)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(3, a.only)
    elif a.against:
        against(a.against, max(1, a.repeats), a.only)
    else:
        main()
