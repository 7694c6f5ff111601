"""Does a process that compiled a kernel run the same machine code as one that loaded it from numba's cache?

Run:  /work/venv/bin/python benchmarks/bench_onecopy.py [--rounds 3] [--n 200000] [--reps 3]

A jitted function that calls another jitted one gets the callee's IR linked into its own module, where LLVM
optimizes it a second time; the process that compiled the caller may still run the callee's own copy, a process
that loads the caller from the cache runs the linked one (kv.step did: 1.3-1.4x apart, benchmarks/README.md,
2026-12-07).  Each round makes a fresh ``NUMBA_CACHE_DIR``, runs one child that compiles into it, then children
that load from it; each child times, warm (after a first call), CPU seconds, best of ``--reps``:

* the FCFS kernel (``fluidq.kernel.run_fcfs``) on bench_kernel's Theorem-2 workload, Sarathi and Orca at 0.9 and
  1.2 lambda*, ``--n`` requests;
* bench_network's one-station network (``simulate_network``, 12,000 s, compiled loop) per batch.

It prints each child's times and, per case, the median of the loaded children over that of the compiling ones.
Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _child(n: int, reps: int) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np

    from bench_kernel import _inputs, _kw
    from fluidq.kernel import ensure_compiled, run_fcfs

    ensure_compiled()
    out = {}
    for policy in ("sarathi", "orca"):
        for load in (0.9, 1.2):
            arr, P, D, tau, ks = _inputs(load, n)
            run_fcfs(arr, P, D, **_kw(policy, tau, ks))
            best = float("inf")
            for _ in range(reps):
                t0 = time.process_time()
                r = run_fcfs(arr, P, D, **_kw(policy, tau, ks))
                best = min(best, time.process_time() - t0)
            out[f"{policy}@{load}"] = (best, int(r["iterations"]), float(np.nansum(r["finish_s"])))
    import fluidq
    from fluidq.network import Hop, Network, RequestClass, Station, simulate_network
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    lam = 0.9 * 512 / float(eng.batch_time(512)) / 200
    one = Network(stations=[Station(name="E", engine=eng)],
                  classes=[RequestClass(name="c", rate_per_s=lam, route=[Hop(engine="E", prompt_tokens=100,
                                                                              output_tokens=100)])])
    simulate_network(one, horizon_s=1200.0, rng=1)
    best = float("inf")
    for _ in range(reps + 2):
        t0 = time.process_time()
        r = simulate_network(one, horizon_s=12000.0, rng=1)
        best = min(best, time.process_time() - t0)
    out["network 1-station (us/batch)"] = (1e6 * best / r.batches, int(r.batches), float(sum(r.mean_sojourn_s.values())))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loaded", type=int, default=2, help="loading children per round")
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(_child(a.n, a.reps)))
        return
    rows = {"compiled": [], "loaded": []}
    for rnd in range(a.rounds):
        cache = tempfile.mkdtemp(prefix="nc_onecopy_bench_")
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        for kind in ["compiled"] + ["loaded"] * a.loaded:
            p = subprocess.run([sys.executable, __file__, "--child", "--n", str(a.n), "--reps", str(a.reps)],
                               env=env, capture_output=True, text=True)
            if p.returncode:
                sys.exit(p.stderr)
            res = json.loads(p.stdout.strip().splitlines()[-1])
            rows[kind].append(res)
            print(f"round {rnd} {kind:8s} " + "  ".join(f"{k}={v[0] * (1 if 'us' in k else 1e3):.3g}"
                                                      for k, v in res.items()), flush=True)
    print("\ncase: compiled, loaded (median; best), loaded/compiled of the medians and of the bests (ms per run; "
          "network us per batch)")
    for k in rows["compiled"][0]:
        scale = 1 if "us" in k else 1e3
        c = statistics.median(r[k][0] for r in rows["compiled"]) * scale
        ld = statistics.median(r[k][0] for r in rows["loaded"]) * scale
        cb = min(r[k][0] for r in rows["compiled"]) * scale
        lb = min(r[k][0] for r in rows["loaded"]) * scale
        same = len({tuple(r[k][1:]) for r in rows["compiled"] + rows["loaded"]}) == 1
        print(f"  {k:30s} {c:8.3g} {ld:8.3g}  ({cb:.3g}; {lb:.3g})  {ld / c:.3f}x  {lb / cb:.3f}x  same results: {same}")


if __name__ == "__main__":
    main()
