"""Benchmark: the compiled network loop's routing (routers, choices, fork-joins), this tree against another.

Written for the routing rules moved into :mod:`fluidq.kernel.routing` (2026-12-07, branch ``h-route1``): the
compiled loop must not slow down.  Each child process (``--child``) times, on the fluidq its ``PYTHONPATH``
names, the issue-15 pair of ``bench_network.py`` -- a 4-engine JSQ network (four times the arrivals, each
engine at 0.9 of its capacity, 3,000 s) against the one-station network (12,000 s), CPU per batch -- and the
marginal CPU cost per batch (between a run and one eight times shorter: set-up and result assembly cancel
out) of networks that exercise each routing rule on the compiled loop: JSQ by requests, JSQ by remaining
tokens, a random router, and a route with a probabilistic choice and a fork-join; and, on the Python event
clock (``method='python'``), the JSQ and choice/fork networks.  The parent runs the two trees' children
alternately (``--repeats`` each), keeps the least time of each case, prints this/other per case, and stops if
the two trees' runs differ (batches, completions, mean sojourns).

Run: ``python benchmarks/bench_routing.py --against SRC [--repeats 5] [--only TEXT]`` (``SRC``: a source tree,
e.g. ``git archive COMMIT | tar -x -C /tmp/base``).  Times: CPU seconds of the child (``time.process_time``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

from bench_network import alternate, marginal_us  # (the same timing and child driver as bench_network.py)


def _networks():
    from fluidq import Affine, Engine, Staircase
    from fluidq.network import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station

    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam = 0.9 * 512 / float(eng.batch_time(512)) / 200
    one = Network(stations=[Station(name="E", engine=eng)],
                  classes=[RequestClass(name="c", rate_per_s=lam, route=[
                      Hop(engine="E", prompt_tokens=100, output_tokens=100)])])

    def four(policy="jsq", count="requests", probabilities=None):
        return Network(stations=[Station(name=f"E{j}", engine=eng) for j in range(4)],
                       routers=[Router(name="R", engines=[f"E{j}" for j in range(4)], policy=policy, count=count,
                                       probabilities=probabilities)],
                       classes=[RequestClass(name="c", rate_per_s=4 * lam, route=[
                           Hop(engine="R", prompt_tokens=100, output_tokens=100)])])

    fj = Engine(batch_time=Affine(c=0.04, a=1e-4), b_max=256)
    routes = Network(stations=[Station(name="M", engine=fj), Station(name="A", engine=fj),
                               Station(name="B", engine=fj)],
                     routers=[Router(name="R", engines=("A", "B"), policy="jsq", count="tokens")],
                     classes=[RequestClass(name="f", rate_per_s=1.0, route=[
                         Hop(engine="M", prompt_tokens=60, output_tokens=8, name="f.1"),
                         Choice(options=((0.3, [Hop(engine="A", prompt_tokens=20, output_tokens=2, name="f.a")]),
                                         (0.7, [Fork(name="k", branches=(
                                             [Hop(engine="R", prompt_tokens=40, output_tokens=6, name="f.r")],
                                             [Hop(engine="B", prompt_tokens=30, output_tokens=4, name="f.b")])),
                                                Hop(engine="M", prompt_tokens=25, output_tokens=5, name="f.m"),
                                                Join(name="k")]))),
                         Hop(engine="M", prompt_tokens=50, output_tokens=10, name="f.2")])]).at_load(0.9)
    return eng, lam, one, four, routes


def _cases():
    """name -> (network, long horizon, simulate_network options): the marginal-cost cases."""
    _, _, one, four, routes = _networks()
    return {
        "one station (no routing)": (one, 48000.0, {}),
        "4 engines, JSQ by requests": (four(), 12000.0, {}),
        "4 engines, JSQ by tokens": (four(count="tokens"), 12000.0, {}),
        "4 engines, random router": (four("random", probabilities=(0.25, 0.25, 0.25, 0.25)), 12000.0, {}),
        "choice + fork-join + JSQ": (routes, 16000.0, {}),
        "4 engines, JSQ, method='python'": (four(), 1500.0, {"method": "python"}),
        "choice + fork-join, method='python'": (routes, 2000.0, {"method": "python"}),
    }


def _summary(r):
    return [int(r.batches), int(sum(r.completed.values())),
            [None if v is None else float(v) for v in r.mean_sojourn_s.values()]]


def _child(repeat: int, only: str | None) -> None:
    import fluidq
    from fluidq.network import simulate_network

    out = {}
    _, _, one, four, _ = _networks()
    if not only or "issue" in only:
        jsq = four()
        simulate_network(jsq, horizon_s=100.0, rng=1)  # compile or load the cached code
        tj, to = [], []
        for _ in range(repeat):  # interleaved, as bench_network.py's issue-15 row
            t0 = time.process_time()
            rj = simulate_network(jsq, horizon_s=3000.0, rng=1)
            tj.append(time.process_time() - t0)
            t0 = time.process_time()
            ro = simulate_network(one, horizon_s=12000.0, rng=1)
            to.append(time.process_time() - t0)
        out["issue 15: 4-engine JSQ / one station, per batch"] = {
            "ratio": (min(tj) / rj.batches) / (min(to) / ro.batches),
            "us": 1e6 * min(tj) / rj.batches, "run": _summary(rj) + _summary(ro)}
    for name, (net, h, kw) in _cases().items():
        if only and not any(o in name for o in only.split("|")):
            continue
        us, rl = marginal_us(net, h, kw, repeat)
        out[name] = {"us": us, "run": _summary(rl)}
    print(json.dumps({"fluidq": fluidq.__file__, "cases": out}))


def against(src: str, repeats: int, only: str | None) -> None:
    here = Path(__file__).resolve().parents[1]
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()} {platform.system()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; this tree ({here}) against {src}: "
          f"CPU us per batch (marginal, least of {repeats} alternating children x 3 runs)")

    new, old = alternate(__file__, here, src, repeats, only)
    width = max(len(k) for k in new[0])
    for k in new[0]:
        if any(r[k]["run"] != new[0][k]["run"] for r in new + old):
            raise SystemExit(f"{k}: the two trees' runs differ: {new[0][k]['run']} vs {old[0][k]['run']}")
        key = "ratio" if "ratio" in new[0][k] else "us"
        a = min(r[k][key] for r in new)
        b = min(r[k][key] for r in old)
        each = " ".join(f"{x[k][key] / y[k][key]:.3f}" for x, y in zip(new, old))
        unit = "x" if key == "ratio" else " us"
        print(f"{k:<{width}}  this {a:.4g}{unit}  other {b:.4g}{unit}  this/other {a / b:.3f} (each pair: {each})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="SRC")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        _child(3 if a.only is None or "issue" not in a.only else 7, a.only)
    elif a.against:
        against(a.against, a.repeats, a.only)
    else:
        ap.error("--against SRC (a source tree to compare with)")


if __name__ == "__main__":
    main()
