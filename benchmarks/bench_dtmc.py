"""Benchmark: build and solve an engine chain of >= 250,000 states (target: < 30 s, < 4 GiB).

Prints states, non-zeros, build and solve time, the solver used and the peak memory (resident
set of this process, from ``resource.getrusage``) next to the targets.

Cases (paper batch-time fit, b_max = 512, geometric outputs):

``vllm`` (default)   vanilla vLLM, fixed prompts of 50 tokens, outputs of mean 20, 8 requests/s,
                     caps n_p, n_d <= 499: 500 x 500 = 250,000 states (prefill batches have no
                     decode completions, so most rows fan out over the arrivals only).
``sarathi``          Sarathi-Serve, fixed prompts of 200 tokens (the head prompt's progress is in
                     the state), outputs of mean 20, 5 requests/s, caps n_p <= 25, n_d <= 49:
                     250,050 states with ~100 non-zeros per row (arrivals x completions).

    python benchmarks/bench_dtmc.py [--case vllm|sarathi] [--rate R] [--max-prefill N] [--max-decode N]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

import fluidq


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", choices=["vllm", "sarathi"], default="vllm")
    p.add_argument("--prompt", type=int, default=None)
    p.add_argument("--output-mean", type=float, default=20.0)
    p.add_argument("--rate", type=float, default=None)
    p.add_argument("--max-prefill", type=int, default=None)
    p.add_argument("--max-decode", type=int, default=None)
    p.add_argument("--kernel-tol", type=float, default=1e-10)
    p.add_argument("--solver", default="auto")
    a = p.parse_args(argv)
    defaults = {"vllm": {"prompt": 50, "rate": 8.0, "max_prefill": 499, "max_decode": 499},
                "sarathi": {"prompt": 200, "rate": 5.0, "max_prefill": 25, "max_decode": 49}}[a.case]
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.policy = a.case
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
