"""Where do the non-work-conserving schedulers become unstable? A simulation sweep (beyond the papers).

Theorem 2 of Li, Dai, Peng (arXiv:2504.07347) places the boundary of Sarathi-Serve and Orca at
load 1, and only says that FasterTransformer and vanilla vLLM are "not maximally stable". This
example sweeps ``simulate`` over loads x schedulers x seeds with ``fluidq.sweep`` (common random
numbers: every scheduler sees the same arrivals at a given load and seed) and plots the token
backlog growth rate with a 95 % interval over seeds. Where the interval leaves zero is the
empirical threshold for this workload. The dotted vertical lines are the thresholds ``fluidq check``
computes (Theorem 2 for the work-conserving ones, a renewal-reward argument over the prefill/decode
cycles for the others): for (129, 112) tokens, vanilla vLLM at about 0.757 of the Theorem-2
capacity and FasterTransformer at about 0.04, so both grow well below load 1.

``--quick`` keeps the loads on both sides of each threshold (0.5 and 0.65 below vLLM's, 0.9 between
vLLM's and Theorem 2's, 1.1 and 1.25 above) with 6 seeds of 120 s, enough for the intervals to
separate growth from zero (under 10 s on two cores); the full run sweeps 0.3 ... 1.3 with 10 seeds
of 240 s.

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
    ap.add_argument("--quick", action="store_true", help="5 loads x 6 seeds of 120 s (instead of 11 x 10 of 240 s)")
    ap.add_argument("--out", default="figures", help="folder for the PNG and the store")
    ap.add_argument("--workers", type=int, default=None, help="local worker processes (default: the CPUs)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    loads = [0.5, 0.65, 0.9, 1.1, 1.25] if args.quick else np.round(np.arange(0.3, 1.31, 0.1), 2).tolist()
    seeds = list(range(6 if args.quick else 10))
    horizon = 120.0 if args.quick else 240.0
    grid = Grid(axes={"load": loads, "policy": POLICIES, "seed": seeds},
                fixed={"prompt_tokens": 129, "output_tokens": 112, "horizon_s": horizon})
    res = sweep("simulate", grid, store=out / "threshold_sweep.jsonl", seed=2026, common_seeds=["load", "seed"],
                chunk_size=8 if args.quick else 40, max_workers=args.workers)
    print(f"{res.n_points} simulations ({res.n_computed} run, {res.n_resumed} from the store) on {res.executor} "
          f"in {res.elapsed_s:.1f} s")

    engine = fluidq.load_profile().engine()  # the profile the points use
    capacity = fluidq.max_throughput(engine).tokens_per_s
    shape = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=129, output_tokens=112)
    lam_star = fluidq.max_throughput(engine, shape).requests_per_s
    fig, ax = axes()
    for pol in POLICIES:
        m, h = [], []
        for load in loads:
            s = np.array([r["token_backlog_slope_per_s"] for r in res.rows
                          if r["policy"] == pol and r["load"] == load], dtype=float)
            m.append(s.mean())
            h.append(1.96 * s.std(ddof=1) / np.sqrt(s.size) if s.size > 1 else 0.0)
        # the threshold fluidq check computes for this scheduler (None: Theorem 2's load 1)
        thr = fluidq.check_stability(engine, shape, pol).threshold_requests_per_s
        thr_load = 1.0 if thr is None else thr / lam_star
        line = ax.errorbar(loads, m, yerr=h, marker="o", ms=3, capsize=2,
                           label=f"{pol} (check: threshold {thr_load:.3g})")
        ax.axvline(thr_load, color=line[0].get_color(), ls=":", lw=1.2, alpha=0.8)
        above = [load for load, mm, hh in zip(loads, m, h) if mm - hh > TOLERANCE * load * capacity]
        flat = [load for load, mm, hh in zip(loads, m, h) if mm - hh <= TOLERANCE * load * capacity]
        print(f"  {pol:18s} backlog grows (95 % interval above {TOLERANCE:.0%} of the offered tokens/s) "
              f"from load {above[0] if above else '> ' + str(max(loads))}; flat at "
              f"{', '.join(f'{x:g}' for x in flat) or 'no load'}; fluidq check's threshold: load {thr_load:.3g}")
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xlabel("offered load (fraction of the Theorem-2 capacity)")
    ax.set_ylabel("token backlog growth, tokens/s")
    title = "Poisson arrivals, (129, 112) tokens per request, b_max = 512"
    if args.quick:
        title += f"\n(quick run: {horizon:g} s x {len(seeds)} seeds, {len(loads)} loads)"
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "threshold_sweep.png")
    print(f"wrote {out}/threshold_sweep.png")


if __name__ == "__main__":
    main()
