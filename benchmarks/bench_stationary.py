"""Benchmark: the stationary solvers side by side on one large engine chain (issue 13).

The chain of ``stability_threshold(method="dtmc")``'s confirmation for vLLM with chunked prefill
(paper fit, b_max = 512, prompts of 100 tokens, geometric outputs of mean 100, 5 req/s, caps
max_prefill = 10, max_decode = 60): 61,061 states and about 4.5 M transitions, the head prompt's
progress in the state.  Prints each method's CPU seconds, products with P^T where it counts them,
residual, and the ratio power / Arnoldi measured in the same run.

    python benchmarks/bench_stationary.py [--rate R] [--max-prefill N] [--max-decode N]
"""
from __future__ import annotations

import argparse
import time

import scipy.sparse as sp

import fluidq
from fluidq.dtmc import build_dtmc
from fluidq.dtmc.solve import stationary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=5.0)
    p.add_argument("--max-prefill", type=int, default=10)
    p.add_argument("--max-decode", type=int, default=60)
    a = p.parse_args(argv)
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=a.rate), prompt_tokens=100,
                        output_tokens=fluidq.Geometric(mean_tokens=100))
    ch = build_dtmc(e, w, "vllm-chunked", max_prefill=a.max_prefill, max_decode=a.max_decode)
    P = sp.csr_matrix(ch.P)
    print(f"chain: {ch.n_states:,} states, {ch.nnz:,} transitions")
    cost = {}
    for m in ("arnoldi", "power"):
        t = time.process_time()
        s = stationary(P, m)
        cost[m] = time.process_time() - t
        print(f"{m:8s} {cost[m]:7.2f} CPU-s  residual {s.residual:.1e}  converged {s.converged}  "
              f"iterations {s.iterations or '-'}")
    print(f"power / arnoldi: {cost['power'] / cost['arnoldi']:.1f}x")


if __name__ == "__main__":
    main()
