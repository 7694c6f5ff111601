"""Ten million requests through ``fluidq.simulate`` end to end (issue 15's sweep-scale target).

Run:  /work/venv/bin/python benchmarks/bench_ten_million.py [--n N]

The Theorem-2 workload (deterministic 100-token prompts and outputs, Poisson arrivals at 0.9 lambda*,
b_max = 512, the paper's batch time t_b = 11.28 + 35.47 ceil(b/128) ms) under Sarathi, in a fresh child
process after a warm-up run (the kernel compiled or loaded from numba's cache).  Printed side by side:
CPU seconds of ``simulate`` (sampling, kernel, result assembly) and of ``.metrics``, against the
target of 10 CPU-s, and the peak resident memory of the process in bytes per request.  Nothing is
asserted: these machines are shared and noisy.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_CPU_S = 10.0


def child(n: int) -> dict:
    import resource

    sys.path.insert(0, str(ROOT))
    import fluidq
    from fluidq import Engine, Poisson, Staircase, Workload

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam = 0.9 * 512 / (0.01128 + 4 * 0.03547) / 200
    w = Workload(arrival=Poisson(rate_per_s=lam), prompt_tokens=100, output_tokens=100)
    fluidq.simulate(e, w, "sarathi", n_requests=1000, rng=0)  # compile / load the kernel
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.process_time()
    r = fluidq.simulate(e, w, "sarathi", n_requests=n, rng=0)
    t1 = time.process_time()
    m = r.metrics
    t2 = time.process_time()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"n": n, "simulate_cpu_s": t1 - t0, "metrics_cpu_s": t2 - t1, "peak_rss_bytes": peak,
            "rss_before_bytes": base, "finished": r.n_finished, "ttlt_p99_s": m["ttlt_s"]["p99"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.n)))
        return
    out = subprocess.run([sys.executable, __file__, "--child", "--n", str(a.n)], capture_output=True, text=True,
                         check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    total = r["simulate_cpu_s"] + r["metrics_cpu_s"]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()} {platform.system()}, "
          f"Python {platform.python_version()}")
    print(f"{'measurement':<58} {'value':>12} {'target':>10} {'ratio':>7}")
    label = f"simulate + metrics, {r['n']:,} requests (CPU s)"
    print(f"{label:<58} {total:>12.2f} {TARGET_CPU_S:>10.1f} "
          f"{total / TARGET_CPU_S:>7.3f} {'ok' if total <= TARGET_CPU_S else 'MISSED'}")
    print(f"{'  of which simulate (sampling, kernel, assembly)':<58} {r['simulate_cpu_s']:>12.2f}")
    print(f"{'  of which .metrics':<58} {r['metrics_cpu_s']:>12.2f}")
    per = (r["peak_rss_bytes"] - r["rss_before_bytes"]) / r["n"]
    print(f"{'peak RSS growth per request (bytes)':<58} {per:>12.0f}")
    print(f"{'peak RSS (GB)':<58} {r['peak_rss_bytes'] / 1e9:>12.2f}")
    print(f"finished {r['finished']:,} of {r['n']:,}; P99 TTLT {r['ttlt_p99_s']:.4g} s")


if __name__ == "__main__":
    main()
