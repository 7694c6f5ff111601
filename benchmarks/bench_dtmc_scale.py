"""Benchmark: how a Sarathi engine chain's build + solve cost grows with its states (250k -> 1M).

Targets (issue 19): a 1,000,000-state chain builds and solves within 4x the CPU time of a
250,000-state one (cost linear in the states), and the 250,000-state chain within 0.5 GiB.

Case: the paper's batch-time fit (Staircase c=0.01128, a=0.03547, b0=128), b_max = 512, Sarathi-Serve,
fixed prompts of 200 tokens (the head prompt's progress is a coordinate), geometric outputs of mean 20,
5 requests/s, max_decode = 49; max_prefill 25 gives 250,050 states and 100 gives 1,000,050.  Each size
runs in its own process, so the peak resident memory (``ru_maxrss``) is that size's alone, imports
included.  Printed side by side: states, non-zeros kept (the two factors of P), CPU seconds of build
and solve, peak memory, and the ratios against the targets.

Each size is solved twice, in separate processes: by ``solve()`` (``auto``: the chain is first solved on
the leading prefill levels that hold its mass, see :func:`fluidq.dtmc.solve.stationary`'s ``levels``) and
by ``solve("arnoldi")`` (Arnoldi iteration on the whole box).  The two chains are the same chain with a
cap of 25 or 100 waiting prompts: the mass beyond about 16 prompts is below 1e-12 in both, so ``auto``
solves the same 160,050-state block in both and its ratio is the build's plus that constant; the
``arnoldi`` rows show what the whole box costs (it grows with the stored entries, 4.42x for 4x states:
the smaller box cuts more arrival terms at its edge).

    python benchmarks/bench_dtmc_scale.py [--sizes 25,100] [--rate 5] [--methods auto,arnoldi] [--blas-threads 1]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

TIME_RATIO_TARGET = 4.0
MEMORY_TARGET_GIB = 0.5


def one(max_prefill: int, rate: float, method: str = "auto") -> dict:
    import resource
    import time

    import fluidq

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=200,
                        output_tokens=fluidq.Geometric(mean_tokens=20))
    c0 = time.process_time()
    ch = fluidq.build_dtmc(e, w, "sarathi", max_prefill=max_prefill, max_decode=49, kernel_tol=1e-10,
                           max_states=2_000_000)
    c1 = time.process_time()
    r = ch.solve(method)
    c2 = time.process_time()
    return {"states": ch.n_states, "nnz": ch.nnz, "build_cpu_s": c1 - c0, "solve_cpu_s": c2 - c1,
            "cpu_s": c2 - c0, "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "method": method, "solver": r.method, "residual": r.residual, "status": r.status.value,
            "mean_requests": r.mean_requests}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="25,100", help="max_prefill values, smallest first (default 25,100)")
    p.add_argument("--rate", type=float, default=5.0)
    p.add_argument("--methods", default="auto,arnoldi", help="solve() methods, each a pair of runs (default "
                   "auto,arnoldi)")
    p.add_argument("--blas-threads", type=int, default=None, help="OPENBLAS_NUM_THREADS/OMP_NUM_THREADS of the "
                   "runs (default: inherited; on a shared 2-vCPU VM 1 gives steadier CPU seconds: BLAS threads "
                   "waiting for a core are counted too)")
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--method", default="auto", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one is not None:
        print(json.dumps(one(a.one, a.rate, a.method)))
        return 0
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                         env.get("PYTHONPATH", "")])
    if a.blas_threads is not None:
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(a.blas_threads)
    print(f"{'method':>8} {'states':>11} {'non-zeros':>12} {'build s':>8} {'solve s':>8} {'CPU s':>7} {'x states':>8} "
          f"{'x CPU':>6} {'peak GiB':>8}  solver (residual), mean requests")
    summary = []
    for method in a.methods.split(","):
        rows = []
        for n in (int(x) for x in a.sizes.split(",")):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", str(n), "--rate", str(a.rate),
                                  "--method", method], capture_output=True, text=True, env=env, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        base = rows[0]
        for r in rows:
            print(f"{method:>8} {r['states']:>11,} {r['nnz']:>12,} {r['build_cpu_s']:>8.2f} {r['solve_cpu_s']:>8.2f} "
                  f"{r['cpu_s']:>7.2f} {r['states'] / base['states']:>8.2f} {r['cpu_s'] / base['cpu_s']:>6.2f} "
                  f"{r['peak_gib']:>8.3f}  {r['solver']} ({r['residual']:.1e}), {r['mean_requests']:.9f} [{r['status']}]")
        big = rows[-1]
        ratio = big["cpu_s"] / base["cpu_s"]
        allowed = TIME_RATIO_TARGET * big["states"] / (4 * base["states"])
        summary.append(f"{method}: CPU ratio {ratio:.2f} for {big['states'] / base['states']:.2f}x the states (target "
                       f"<= {allowed:.2f}: {'ok' if ratio <= allowed else 'MISSED'}; build alone "
                       f"{big['build_cpu_s'] / base['build_cpu_s']:.2f}, solve alone "
                       f"{big['solve_cpu_s'] / base['solve_cpu_s']:.2f}); peak memory of the smallest "
                       f"{base['peak_gib']:.3f} GiB (target <= {MEMORY_TARGET_GIB} GiB: ratio "
                       f"{base['peak_gib'] / MEMORY_TARGET_GIB:.2f})")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
