"""Theorem 2 of Li, Dai, Peng (arXiv:2504.07347): the capacity b_max/t(b_max) is the stability boundary.

Writes three PNGs to --out:

* ``theorem2_capacity.png``  capacity (tokens/s and requests/s at (100, 100)) against the budget b_max;
* ``theorem2_verdicts.png``  the verdict of each scheduler along the load axis (a sweep of ``check``);
* ``theorem2_slope.png``     the simulated token-backlog growth rate of Sarathi-Serve against the load,
  with 95 % confidence intervals over seeded replications, and the fluid prediction
  ``max(0, lambda (m_p + m_d) - b_max/t(b_max))``; each point is coloured by the verdict of the
  replication test (``bounded``, ``growing`` or ``inconclusive``).

Below load 1 the simulated growth is zero within its interval, above it follows the fluid line.
Run ``python examples/theorem2_boundary.py --quick --out figs`` for a short version: 9 loads for the
verdicts and 4 simulated loads (0.7 and 0.9 below the boundary, 1.1 and 1.3 above) with 8 seeds of
300 s, long enough that the test calls the two below ``bounded`` and the two above ``growing``
(a few seconds). The full run simulates 8 loads with 12 seeds of 1200 s; at load 1 itself the
verdict stays ``inconclusive`` (the boundary is critical).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import fluidq
from fluidq.plotting import axes, finish
from fluidq.sweep import Grid, sweep

POLICIES = ["sarathi", "orca", "vllm-chunked", "vllm", "fastertransformer"]
STATUS_Y = {"stable": 0, "critical": 1, "unknown": 2, "unstable": 3}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 simulated loads x 8 seeds of 300 s (instead of 8 x 12 of 1200 s)")
    ap.add_argument("--out", default="figures", help="folder for the PNGs")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sim_loads = [0.7, 0.9, 1.1, 1.3] if args.quick else [0.7, 0.8, 0.9, 1.0, 1.05, 1.1, 1.2, 1.3]
    horizon, reps = (300.0, 8) if args.quick else (1200.0, 12)
    n_check = 9 if args.quick else 33
    quick = f"\n(quick run: {len(sim_loads)} loads, {reps} seeds x {horizon:g} s)" if args.quick else ""

    bt = fluidq.Staircase(c=0.01128, a=0.03547, b0=128)
    engine = fluidq.Engine(batch_time=bt, b_max=512)
    shape = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    cap = fluidq.max_throughput(engine, shape)
    print(f"capacity {cap.tokens_per_s:.2f} tokens/s, lambda* = {cap.requests_per_s:.4f} requests/s "
          f"(paper: 3342.909 tokens/s, 16.7145 requests/s)")

    # 1. capacity against the budget
    budgets = np.arange(64, 2049, 64)
    caps = [fluidq.max_throughput(fluidq.Engine(batch_time=bt, b_max=int(b)), shape) for b in budgets]
    fig, ax = axes()
    ax.plot(budgets, [c.tokens_per_s for c in caps], marker="o", ms=3)
    ax.axvline(512, color="grey", ls=":", lw=1)
    ax.set_xlabel("token budget b_max")
    ax.set_ylabel("capacity sup b/t(b) over b <= b_max, tokens/s")
    ax.set_title("Theorem 2: capacity of the CodeLlama-34B/A100 staircase"
                 + ("\n(quick run: the same analytic curve)" if args.quick else ""), fontsize="medium")
    ax2 = ax.twinx()
    ax2.set_ylim(*(np.array(ax.get_ylim()) / shape.mean_tokens))
    ax2.set_ylabel("requests/s at (m_p, m_d) = (100, 100)")
    finish(fig, ax, out / "theorem2_capacity.png")

    # 2. verdicts along the load axis: a sweep of the "check" analysis
    loads = np.round(np.linspace(0.5, 1.3, n_check), 4).tolist()
    res = sweep("check", Grid(axes={"policy": POLICIES, "load": loads},
                              fixed={"prompt_tokens": 100, "output_tokens": 100}), executor="serial")
    fig, ax = axes(figsize=(7.0, 3.6))
    colors = {"stable": "tab:green", "critical": "tab:orange", "unknown": "tab:grey", "unstable": "tab:red"}
    for i, pol in enumerate(POLICIES):
        rows = [r for r in res.rows if r["policy"] == pol]
        ax.scatter([r["load"] for r in rows], [i] * len(rows), c=[colors[r["status"]] for r in rows], s=40)
    for s, c in colors.items():
        ax.scatter([], [], c=c, label=s)
    ax.set_yticks(range(len(POLICIES)), POLICIES)
    ax.axvline(1.0, color="black", lw=1)
    ax.set_xlabel("offered load  lambda (m_p + m_d) / capacity")
    ax.set_title("Verdicts (Theorem 2 and the work-conservation search)"
                 + (f"\n(quick run: {n_check} loads)" if args.quick else ""), fontsize="medium")
    ax.legend(ncol=4, fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.18))
    finish(fig, ax, out / "theorem2_verdicts.png")

    # 3. simulated backlog growth against the fluid prediction
    means, lows, highs, pred, verdicts = [], [], [], [], []
    for k, load in enumerate(sim_loads):
        rep = fluidq.replicate(engine, shape.with_rate(load * cap.requests_per_s), "sarathi",
                               n_replications=reps, horizon_s=horizon, rng=np.random.SeedSequence([2026, k]),
                               keep_runs=False)
        means.append(rep.slope_tokens_per_s)
        lows.append(rep.slope_ci[0])
        highs.append(rep.slope_ci[1])
        pred.append(rep.predicted_slope_tokens_per_s)
        verdicts.append(rep.verdict)
        print(f"load {load:.2f}: slope {rep.slope_tokens_per_s:8.1f} tokens/s  CI [{rep.slope_ci[0]:.1f}, "
              f"{rep.slope_ci[1]:.1f}]  fluid {rep.predicted_slope_tokens_per_s:.1f}  -> {rep.verdict}")
    fig, ax = axes()
    m = np.array(means)
    ax.errorbar(sim_loads, m, yerr=[m - np.array(lows), np.array(highs) - m], fmt="none", capsize=3,
                ecolor="grey", label=f"simulated Sarathi-Serve ({reps} seeds, {horizon:g} s, 95 % CI)")
    vcol = {"bounded": "tab:green", "growing": "tab:red", "inconclusive": "tab:grey"}
    for v, c in vcol.items():
        sel = [i for i, x in enumerate(verdicts) if x == v]
        if sel:
            ax.plot([sim_loads[i] for i in sel], m[sel], "o", color=c, label=f"replication test: {v}")
    grid = np.linspace(min(sim_loads), max(sim_loads), 100)
    full = cap.work_conserving_tokens_per_s  # b_max/t(b_max): what a work-conserving scheduler serves
    ax.plot(grid, np.maximum(0.0, grid * cap.tokens_per_s - full), color="black", lw=1,
            label="fluid: max(0, lambda(m_p+m_d) - b_max/t(b_max))")
    ax.set_xlabel("offered load")
    ax.set_ylabel("token backlog growth, tokens/s")
    ax.axvline(1.0, color="grey", ls=":", lw=1)
    ax.set_title("Sarathi-Serve, (100, 100) tokens: growth starts at load 1" + quick, fontsize="medium")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "theorem2_slope.png")
    print(f"wrote {out}/theorem2_capacity.png, theorem2_verdicts.png, theorem2_slope.png")


if __name__ == "__main__":
    main()
