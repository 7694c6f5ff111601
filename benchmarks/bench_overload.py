"""Simulator cost at heavy overload with KV-cache memory: does it grow linearly with the horizon?

Run:  /work/venv/bin/python benchmarks/bench_overload.py [--quick] [--load 100] [--kv-capacity 20000]

Every built-in scheduler, with a KV-cache capacity (so the generic kernel runs), at ``--load`` times
the Theorem-2 capacity (paper constants t_b = 11.28 + 35.47 ceil(b/128) ms, b_max = 512, geometric
(100, 100) lengths), for horizons of 25, 50 and 100 s (``--quick``: 5, 10, 20 s).  The queue grows
by about 1,600 requests per simulated second, so a kernel that reads the whole queue per iteration
costs O(horizon^2).  Each run is a fresh child process; the table prints its CPU seconds, the
requests shown to the policy per iteration (``examined / iterations``, which must not grow with the
horizon) and the ratios cost(2h)/cost(h), which should stay near 2 (linear), not 4 (quadratic).

Issue 13 (before the fix): FasterTransformer with ``--kv-capacity 20000`` at 100x took 5 / 19 / 49 s
for 25 / 50 / 100 s horizons.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

POLICIES = ("fastertransformer", "vllm", "orca", "sarathi", "vllm-chunked")


def child(policy: str, horizon: float, load: float, kv: int) -> dict:
    from fluidq import Engine, Geometric, Poisson, Staircase, Workload, max_throughput, simulate

    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, kv_capacity_tokens=kv)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=Geometric(mean_tokens=100),
                 output_tokens=Geometric(mean_tokens=100))
    w = w.with_rate(load * max_throughput(eng, w).requests_per_s)
    t0 = time.process_time()
    r = simulate(eng, w, policy, horizon_s=horizon, rng=0)
    cpu = time.process_time() - t0
    return {"cpu_s": cpu, "arrivals": r.n_requests, "iterations": r.n_iterations, "examined": getattr(r, "examined", 0),
            "in_system": int(r.backlog["requests"][-1])}


def measure(policy: str, horizon: float, load: float, kv: int) -> dict:
    cmd = [sys.executable, __file__, "--child", policy, str(horizon), str(load), str(kv)]
    env = dict(os.environ)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="horizons 5, 10, 20 s")
    ap.add_argument("--load", type=float, default=100.0, help="multiple of the capacity (default 100)")
    ap.add_argument("--kv-capacity", type=int, default=20000, help="KV-cache tokens (default 20000)")
    ap.add_argument("--policy", action="append", default=None, help="scheduler(s) (default: all five)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        p, h, load, kv = a.child
        print(json.dumps(child(p, float(h), float(load), int(kv))))
        return
    hs = (5.0, 10.0, 20.0) if a.quick else (25.0, 50.0, 100.0)
    print(f"load {a.load:g}x capacity, KV {a.kv_capacity} tokens, horizons {' / '.join(f'{h:g}' for h in hs)} s")
    print(f"{'policy':<18} " + " ".join(f"{f'CPU s @{h:g}':>10}" for h in hs)
          + f" {'ratios':>11} " + " ".join(f"{f'exam/it @{h:g}':>13}" for h in hs) + f" {'in system':>10}")
    for pol in a.policy or POLICIES:
        rows = [measure(pol, h, a.load, a.kv_capacity) for h in hs]
        cpu = [r["cpu_s"] for r in rows]
        ratios = "/".join(f"{cpu[i + 1] / cpu[i]:.1f}" if cpu[i] > 0 else "-" for i in range(len(cpu) - 1))
        per = [r["examined"] / r["iterations"] if r["iterations"] else 0.0 for r in rows]
        print(f"{pol:<18} " + " ".join(f"{c:>10.2f}" for c in cpu) + f" {ratios:>11} "
              + " ".join(f"{x:>13.1f}" for x in per) + f" {rows[-1]['in_system']:>10,}")
    print("ratios: CPU(2h)/CPU(h); about 2 is linear in the horizon, about 4 quadratic")


if __name__ == "__main__":
    main()
