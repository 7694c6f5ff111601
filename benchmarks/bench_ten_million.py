"""Ten million requests through ``fluidq.simulate`` end to end (issue 15's sweep-scale target).

Run:  /work/venv/bin/python benchmarks/bench_ten_million.py [--n N] [--small M] [--skip-full]

The Theorem-2 workload (deterministic 100-token prompts and outputs, Poisson arrivals at 0.9 lambda*,
b_max = 512, the paper's batch time t_b = 11.28 + 35.47 ceil(b/128) ms) under Sarathi.  Each measurement is
a fresh child process after a warm-up run (the kernel compiled or loaded from numba's cache):

* ``record="full"``: ``simulate`` then ``.metrics``, N requests;
* ``record="summary"`` (streamed in bounded memory), N requests and M requests (default 1,000,000): its peak
  resident memory should not grow with the requests.

Printed side by side: CPU seconds against the target of 10 CPU-s, and the peak resident memory of each
child (its growth over the child's memory before the measured run, per request and in MB).  Nothing is
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


def child(n: int, record: str) -> dict:
    import resource

    sys.path.insert(0, str(ROOT))
    import fluidq
    from fluidq import Engine, Poisson, Staircase, Workload

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam = 0.9 * 512 / (0.01128 + 4 * 0.03547) / 200
    w = Workload(arrival=Poisson(rate_per_s=lam), prompt_tokens=100, output_tokens=100)
    fluidq.simulate(e, w, "sarathi", n_requests=1000, rng=0, record=record)  # compile / load the kernel
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.process_time()
    r = fluidq.simulate(e, w, "sarathi", n_requests=n, rng=0, record=record)
    t1 = time.process_time()
    m = r.metrics
    t2 = time.process_time()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"n": n, "record": record, "simulate_cpu_s": t1 - t0, "metrics_cpu_s": t2 - t1, "peak_rss_bytes": peak,
            "rss_before_bytes": base, "finished": r.n_finished, "ttlt_p99_s": m["ttlt_s"]["p99"],
            "ttlt_mean_s": m["ttlt_s"]["mean"]}


def _run(n: int, record: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", "--n", str(n), "--record", record],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--small", type=int, default=1_000_000, help="the smaller summary run (peak memory vs n)")
    ap.add_argument("--skip-full", action="store_true", help="measure only the summary runs")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--record", default="full", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.n, a.record)))
        return
    runs = [("summary", a.small), ("summary", a.n)] + ([] if a.skip_full else [("full", a.n)])
    res = [_run(n, rec) for rec, n in runs]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()} {platform.system()}, "
          f"Python {platform.python_version()}")
    print(f"{'record':<8} {'requests':>11} {'CPU s':>7} {'/target':>8} {'simulate':>9} {'metrics':>8} "
          f"{'peak RSS MB':>12} {'growth MB':>10} {'B/request':>10} {'P99 TTLT s':>11} {'mean TTLT s':>12}")
    for r in res:
        total = r["simulate_cpu_s"] + r["metrics_cpu_s"]
        grow = r["peak_rss_bytes"] - r["rss_before_bytes"]
        print(f"{r['record']:<8} {r['n']:>11,} {total:>7.2f} {total / TARGET_CPU_S:>8.3f} {r['simulate_cpu_s']:>9.2f} "
              f"{r['metrics_cpu_s']:>8.2f} {r['peak_rss_bytes'] / 1e6:>12.0f} {grow / 1e6:>10.1f} "
              f"{grow / r['n']:>10.1f} {r['ttlt_p99_s']:>11.4g} {r['ttlt_mean_s']:>12.5g}")
    small, big = res[0], res[1]
    total = big["simulate_cpu_s"] + big["metrics_cpu_s"]
    print(f"summary, {big['n']:,} requests: {total:.2f} CPU-s against {TARGET_CPU_S:g}: "
          f"{'met' if total <= TARGET_CPU_S else 'NOT met'}; peak RSS {big['peak_rss_bytes'] / 1e6:.0f} MB at "
          f"{big['n']:,} vs {small['peak_rss_bytes'] / 1e6:.0f} MB at {small['n']:,} "
          f"(ratio {big['peak_rss_bytes'] / small['peak_rss_bytes']:.3f})")


if __name__ == "__main__":
    main()
