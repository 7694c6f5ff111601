"""Benchmark: build and solve an engine chain of >= 250,000 states (target: < 30 s, < 4 GiB).

Prints states, non-zeros, build and solve time, the solver used and the peak memory (resident
set of this process, from ``resource.getrusage``) next to the targets.

Default case: Sarathi-Serve on the paper's batch-time fit (b_max = 512), fixed prompts of 200
tokens (the chain keeps the head prompt's progress, 200 values), geometric outputs of mean 20,
5 requests/s, caps n_p <= 24 and n_d <= 49: 25 x 50 x 200 = 250,000 states.

    python benchmarks/bench_dtmc.py [--prompt 200] [--max-prefill 24] [--max-decode 49] [--rate 5]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

import fluidq


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default="sarathi")
    p.add_argument("--prompt", type=int, default=200)
    p.add_argument("--output-mean", type=float, default=20.0)
    p.add_argument("--rate", type=float, default=5.0)
    p.add_argument("--max-prefill", type=int, default=24)
    p.add_argument("--max-decode", type=int, default=49)
    p.add_argument("--kernel-tol", type=float, default=1e-10)
    p.add_argument("--solver", default="auto")
    a = p.parse_args(argv)
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=a.rate), prompt_tokens=a.prompt,
                        output_tokens=fluidq.Geometric(mean_tokens=a.output_mean))
    t0 = time.perf_counter()
    ch = fluidq.build_dtmc(e, w, a.policy, max_prefill=a.max_prefill, max_decode=a.max_decode,
                           kernel_tol=a.kernel_tol)
    t1 = time.perf_counter()
    r = ch.solve(a.solver)
    t2 = time.perf_counter()
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20  # KiB on Linux
    total = t2 - t0
    print(f"case            {a.policy}, prompt {a.prompt}, output geometric({a.output_mean:g}), lambda {a.rate:g} req/s")
    print(f"states          {ch.n_states:,}   (target >= 250,000: {'ok' if ch.n_states >= 250_000 else 'SHORT'})")
    print(f"non-zeros       {ch.nnz:,}   ({ch.nnz / ch.n_states:.1f} per row)")
    print(f"build           {t1 - t0:.2f} s")
    print(f"solve           {t2 - t1:.2f} s by {r.method} (residual {r.residual})")
    print(f"total           {total:.2f} s   (target < 30 s: ratio {total / 30:.2f})")
    print(f"peak memory     {peak_gib:.2f} GiB   (target < 4 GiB: ratio {peak_gib / 4:.2f})")
    print(f"result          {r.status}; mean requests {r.mean_requests}; boundary mass {r.lost_mass}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
