"""Where do the non-work-conserving schedulers become unstable? A simulation sweep (beyond the papers).

Theorem 2 of Li, Dai, Peng (arXiv:2504.07347) places the boundary of Sarathi-Serve and Orca at
load 1, and only says that FasterTransformer and vanilla vLLM are "not maximally stable". This
example sweeps ``simulate`` over loads x schedulers x seeds with ``fluidq.sweep`` (common random
numbers: every scheduler sees the same arrivals at a given load and seed) and plots the token
backlog growth rate with a 95 % interval over seeds. Where the interval leaves zero is the
empirical threshold for this workload.

Writes ``threshold_sweep.png`` to --out (and the sweep's store, so a rerun resumes).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import fluidq
from fluidq.plotting import axes, finish
from fluidq.sweep import Grid, sweep

POLICIES = ["sarathi", "orca", "vllm", "fastertransformer"]
TOLERANCE = 0.02  # growth below 2 % of the offered tokens/s counts as flat (the transient of a finite run)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few loads and seeds, 30 s runs")
    ap.add_argument("--out", default="figures", help="folder for the PNG and the store")
    ap.add_argument("--workers", type=int, default=None, help="local worker processes (default: the CPUs)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    loads = [0.4, 0.6, 0.8, 1.0, 1.2] if args.quick else np.round(np.arange(0.3, 1.31, 0.1), 2).tolist()
    seeds = list(range(3 if args.quick else 10))
    grid = Grid(axes={"load": loads, "policy": POLICIES, "seed": seeds},
                fixed={"prompt_tokens": 129, "output_tokens": 112,
                       "horizon_s": 30.0 if args.quick else 240.0})
    res = sweep("simulate", grid, store=out / "threshold_sweep.jsonl", seed=2026, common_seeds=["load", "seed"],
                chunk_size=8 if args.quick else 40, max_workers=args.workers)
    print(f"{res.n_points} simulations ({res.n_computed} run, {res.n_resumed} from the store) on {res.executor} "
          f"in {res.elapsed_s:.1f} s")

    capacity = fluidq.max_throughput(fluidq.load_profile().engine()).tokens_per_s  # the profile the points use
    fig, ax = axes()
    for pol in POLICIES:
        m, h = [], []
        for load in loads:
            s = np.array([r["token_backlog_slope_per_s"] for r in res.rows
                          if r["policy"] == pol and r["load"] == load], dtype=float)
            m.append(s.mean())
            h.append(1.96 * s.std(ddof=1) / np.sqrt(s.size) if s.size > 1 else 0.0)
        ax.errorbar(loads, m, yerr=h, marker="o", ms=3, capsize=2, label=pol)
        above = [load for load, mm, hh in zip(loads, m, h) if mm - hh > TOLERANCE * load * capacity]
        print(f"  {pol:18s} backlog grows (95 % interval above {TOLERANCE:.0%} of the offered tokens/s) "
              f"from load {above[0] if above else '> ' + str(max(loads))}")
    ax.axhline(0.0, color="black", lw=0.8)
    ax.axvline(1.0, color="grey", ls=":", lw=1)
    ax.set_xlabel("offered load (fraction of the Theorem-2 capacity)")
    ax.set_ylabel("token backlog growth, tokens/s")
    ax.set_title("Poisson arrivals, (129, 112) tokens per request, b_max = 512")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "threshold_sweep.png")
    print(f"wrote {out}/threshold_sweep.png")


if __name__ == "__main__":
    main()
