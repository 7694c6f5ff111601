"""Benchmark: a network with a station whose policy is asked in Python, on the Python event clock and on the compiled
network loop (:mod:`fluidq.kernel.network_select`, issue 15), per batch, side by side in one run.

The network (4 stations): a join-the-shortest-queue pair of Sarathi-Serve stations (A, B), a station U whose policy
is asked in Python, and a vLLM station V; class x goes J -> U -> V, class y J -> U (with priority at U), at 0.9 of
the stations' capacity.  U runs, in turn, a user policy (last in first out: decoders first, then the latest prompts,
chunked; the unit tests' tests/network/lifo_policy.py) and Sarathi-Serve with the SJF ordering (a built-in
scheduler whose ordering is not FCFS).
Each row: microseconds of CPU per batch (``time.process_time`` of this process; least of ``--repeat`` runs
alternating between the two paths) of ``method="python"`` (the Python clock) and ``method="auto"`` (the compiled
loop asking U's policy in Python), their ratio, and the two runs' batches and completions (which must be equal:
the run stops with an error otherwise).  ``check_batches`` is on by default for a user policy (every station then
runs batch by batch on both paths); the ``unchecked`` rows pass ``check_batches=False`` (the Sarathi stations skip
runs of identical batches on both paths).  For reference, the same network with U running Sarathi-Serve in FCFS
order (the compiled loop's own rule; no asks); and the unchecked user policy at 1.15 of capacity over a quarter of
the horizon (U's queue grows to thousands: the Python clock sorts U's view every batch, the loop keeps it in order).
The KV rows (2026-12-07, h-netkv) give U a KV cache (``KV``: 8000 tokens of vLLM's 16-token blocks, recomputation;
no class priority at U, which a KV station does not apply) and run a third of ``--horizon``:
U's memory passes run compiled on the loop's arrays and its policy (``select``, the victim's order, ``may_evict``)
is asked in Python (:mod:`fluidq.kernel.network_kv`; h-netmem, 2026-12-07 -- h-netkv asked it through the Python
clock's own EngineRun and memory rules), the other stations on the compiled loop.  ``--kv-only`` runs the KV rows
alone.  The last KV row doubles U behind a JSQ router by remaining tokens (h-netjsq, 2026-12-07: on the Python clock
before, so ``method="auto"`` was the Python clock).
The window rows (2026-12-07, h-netwin) run a sixth of ``--horizon`` (500 s at the default): U under a subclass of
Sarathi-Serve whose ``select`` is its own (here the built-in rule, called through the override: the loop cannot know
that) -- asked in Python with the Python clock's window of U's queue; with the KV cache of the KV rows, as any
policy at a KV station (every resident in view, as the Python clock shows it) -- and the FCFS network with
``check_batches=True`` given explicitly, where every station (all four built-in) is asked in Python on the loop with
its window and checked, as the Python clock asks and checks them.  ``--window`` runs these rows only (< 1 min).

Run: ``python benchmarks/bench_network_select.py [--horizon S] [--repeat N] [--kv-only] [--window]``.  Recorded figures:
``benchmarks/README.md`` (network section).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the user policy of the unit tests, written once (tests/network/lifo_policy.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "network"))

from bench_network import best_pair  # noqa: E402
from lifo_policy import LIFO  # noqa: E402

from fluidq import Affine, Engine, Staircase  # noqa: E402
from fluidq.engine import Memory  # noqa: E402
from fluidq.network import Hop, Network, RequestClass, Router, Station, simulate_network  # noqa: E402
from fluidq.policies import Sarathi, Scheduler, VLLMChunked  # noqa: E402
from fluidq.policies.latency import SJF  # noqa: E402


#: the KV cache of U in the KV rows: vLLM's paged blocks of 16 tokens, recomputation, small enough to preempt
KV = dict(kv_capacity_tokens=8000, memory=Memory(kind="blocks", block_size=16))


class OwnSarathi(Scheduler):
    """Sarathi-Serve's options with a ``select`` of its own (the built-in rule, called through the override): a
    windowed station asked in Python (``kernel/network_select.py``), not the loop's own rule."""

    def select(self, view):
        return super().select(view)


def own_sarathi():
    return OwnSarathi(name="own-sarathi", priority="decode", mixed=True, chunked=True)


def network(policy, load=0.9, kv=False, jsq_kv=False):
    """``jsq_kv``: U doubled (U, U2, both with the KV cache and ``policy``), the hops to U going through a JSQ router
    by remaining tokens over the pair (``JU``; on the Python clock until h-netjsq, 2026-12-07)."""
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=64), b_max=256)
    eu = Engine(batch_time=e.batch_time, b_max=256, **KV) if kv else e
    extra = [Station(name="U2", engine=eu, policy=policy)] if jsq_kv else []
    to_u = "JU" if jsq_kv else "U"
    return Network(stations=[Station(name="A", engine=e), Station(name="B", engine=e),
                             Station(name="U", engine=eu, policy=policy, priority=() if kv else ("y.2",)), *extra,
                             Station(name="V", engine=Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=128),
                                     policy=VLLMChunked())],
                   routers=[Router(name="J", engines=("A", "B"), policy="jsq", count="tokens"),
                            *([Router(name="JU", engines=("U", "U2"), policy="jsq", count="tokens")] if jsq_kv else [])],
                   classes=[RequestClass(name="x", rate_per_s=1.0, route=[
                       Hop(engine="J", prompt_tokens=300, output_tokens=40, name="x.1"),
                       Hop(engine=to_u, prompt_tokens=120, output_tokens=20, name="x.2"),
                       Hop(engine="V", prompt_tokens=30, output_tokens=5, name="x.3")]),
                       RequestClass(name="y", rate_per_s=1.0, route=[
                           Hop(engine="J", prompt_tokens=60, output_tokens=80, name="y.1"),
                           Hop(engine=to_u, prompt_tokens=400, output_tokens=8, name="y.2")])]).at_load(load)


def row(label, net, horizon, repeat, **kw):
    def run(method):
        return lambda: simulate_network(net, horizon_s=horizon, rng=11, method=method, **kw)

    tp, a, tk, b = best_pair(run("python"), run("auto"), repeat)
    if (a.batches, a.completed, a.events) != (b.batches, b.completed, b.events):
        raise SystemExit(f"{label}: the two paths' runs differ: {a.batches, a.completed} vs {b.batches, b.completed}")
    up, uk = 1e6 * tp / a.batches, 1e6 * tk / b.batches
    print(f"{label:38s} python {up:7.2f} us/batch  loop {uk:7.2f} us/batch  python/loop {up / uk:6.2f}x  "
          f"({a.batches} batches, {sum(a.completed.values())} completed, {sum(a.preemptions.values())} preempted)")
    return up, uk


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=float, default=3000.0, help="simulated seconds per run")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per path (least CPU time kept)")
    ap.add_argument("--kv-only", action="store_true", help="the KV rows alone")
    ap.add_argument("--window", action="store_true", help="only the window rows (h-netwin; < 1 min)")
    args = ap.parse_args()
    simulate_network(network(LIFO()), horizon_s=50.0, rng=1)  # (compile or load the loop first)
    simulate_network(network(LIFO(), kv=True), horizon_s=50.0, rng=1)  # (and the KV station's compiled pass)
    print(f"# {time.strftime('%Y-%m-%d')}  horizon {args.horizon:g} s, least CPU time of {args.repeat} alternating "
          "runs per path")
    if not args.kv_only:
        # the window rows (h-netwin): a station shown the built-in window of its queue, asked in Python on the loop; a
        # sixth of the horizon
        w_h = args.horizon / 6
        row("U = Sarathi subclass, own select()", network(own_sarathi()), w_h, args.repeat)
        row("U = Sarathi subclass, KV blocks", network(own_sarathi(), kv=True), w_h, args.repeat)
        row("check_batches=True, all built-in", network(Sarathi()), w_h, args.repeat, check_batches=True)
        row("U = Sarathi FCFS (no asks), same h", network(Sarathi()), w_h, args.repeat)
        if args.window:
            return
        row("U = user LIFO (checked)", network(LIFO()), args.horizon, args.repeat)
        row("U = user LIFO (unchecked)", network(LIFO()), args.horizon, args.repeat, check_batches=False)
        row("U = Sarathi(order=SJF())", network(Sarathi(order=SJF())), args.horizon, args.repeat)
        row("U = Sarathi FCFS (no asks)", network(Sarathi()), args.horizon, args.repeat)
        # overloaded (1.15 of capacity): U's queue grows to thousands; the Python clock sorts its view every batch
        row("U = user LIFO (unchecked), 1.15x", network(LIFO(), 1.15), args.horizon / 4, args.repeat,
            check_batches=False)
    # U with a KV cache (fluidq.kernel.network_kv: its memory passes compiled, its policy asked in Python),
    # over a third of the horizon: with 8,000 tokens U's queue starts to grow between 1,000 and 2,000 s (a run to
    # 2,000 s cost ~15 CPU-s against ~1 at 1,000 s, 2026-12-07), and the default horizon's KV rows did not finish
    kv_h = args.horizon / 3
    row("U = user LIFO, KV blocks (checked)", network(LIFO(), kv=True), kv_h, args.repeat)
    row("U = user LIFO, KV blocks (unchecked)", network(LIFO(), kv=True), kv_h, args.repeat, check_batches=False)
    row("U = Sarathi(order=SJF()), KV blocks", network(Sarathi(order=SJF()), kv=True), kv_h, args.repeat)
    # U and U2 behind a JSQ router by remaining tokens (the network at 0.9 of its capacity): the loop makes an event's
    # asks so far before that router reads them (h-netjsq, 2026-12-07)
    row("U,U2 = user LIFO, KV, JSQ by tokens", network(LIFO(), kv=True, jsq_kv=True), kv_h, args.repeat)


if __name__ == "__main__":
    main()
