"""Latency of scheduling orderings on the Azure traces and a heavy-tailed reasoning-like workload.

Reproduces the experiments of docs/latency.md: latency-load curves for FCFS, PARS, oracle SJF,
SRPT, gamma-Boost and UNIBOOST (with the MEMGUARD ablation), a gamma sweep, PARS's sensitivity to
the predictor's Kendall tau, and the throughput check at 0.95 of capacity.

    python examples/latency_orderings.py [--quick] [--out docs/latency]

The full run takes about 20 minutes on one core; ``--quick`` (one workload, two loads, one 60 s
replication, four policies) checks that it works in well under a minute. Its numbers mean little:
one replication gives no interval, so its figures say "quick run ... inconclusive" in their titles
and the orderings they show are not evidence (the full run's figures are in docs/latency/).

Engine: the paper's CodeLlama-34B/A100 fit (b_max = 512) with a KV cache of 50,000 tokens (an
estimate for 34B weights on an 80 GB card, see docs/latency.md).  Everything is seeded.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import fluidq
from fluidq.latency import POLICY_KEYS, compare_orderings, reasoning_workload, standard_policies
from fluidq.profiles import DEFAULT_PROFILE, load_profile
from fluidq.results import plain
from fluidq.sim import replicate

KEYS = ["fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost", "uniboost-nomemguard"]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="docs/latency")
    ap.add_argument("--kv", type=int, default=50_000)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    eng = load_profile(DEFAULT_PROFILE).engine(kv_capacity_tokens=args.kv)
    loads = (0.6, 0.9) if args.quick else (0.3, 0.5, 0.7, 0.9)
    horizon = 60.0 if args.quick else 400.0
    reps = 1 if args.quick else 2
    workloads = {"azure-conv": fluidq.Workload.from_trace("azure-conv")}
    if not args.quick:
        workloads.update({"azure-code": fluidq.Workload.from_trace("azure-code"), "reasoning": reasoning_workload()})
    keys = ["fcfs", "pars", "srpt", "uniboost"] if args.quick else KEYS
    summary = {"engine": eng.to_dict(), "loads": loads, "horizon_s": horizon, "replications": reps, "runs": {}}
    for name, w in workloads.items():
        t = time.perf_counter()
        pols = standard_policies(eng, w, keys=keys, tau=0.5)
        res = compare_orderings(eng, w, pols, loads=loads, horizon_s=horizon, n_replications=reps, rng=2026)
        summary["runs"][name] = res.to_dict()
        quick = (f"\n(quick run: {horizon:g} s x {reps} replication, {len(loads)} loads: inconclusive, no intervals)"
                 if args.quick else "")
        for metric in ("latency_per_token_mean_s", "ttlt_p99_s", "ttft_mean_s", "preemptions_per_request"):
            from fluidq.latency import METRICS

            _plot(res, metric, out / f"{name}_{metric}.png", title=f"{name}: {METRICS[metric][0]}{quick}")
        print(f"\n## {name}  ({time.perf_counter() - t:.0f} s)")
        for i, ld in enumerate(res.loads):
            print(f"\nload {ld}")
            print(res.table(i))
    # gamma sweep on the conversation trace at load 0.7
    w = workloads["azure-conv"]
    sweep = {}
    for g in ((0.01, 100.0) if args.quick else (0.01, 0.1, 1.0, 10.0, 100.0)):
        p = standard_policies(eng, w, keys=["gamma-boost", "uniboost"], gamma_per_s=g)
        sweep[f"gamma-boost g={g:g}"] = p["gamma-boost"]
        sweep[f"uniboost g={g:g}"] = p["uniboost"]
    sweep["uniboost-ada (ratio)"] = standard_policies(eng, w, keys=["uniboost-ada"])["uniboost-ada"]
    res = compare_orderings(eng, w, sweep, loads=(0.7,), horizon_s=horizon, n_replications=reps, rng=7)
    summary["gamma_sweep"] = res.to_dict()
    print("\n## gamma sweep, azure-conv, load 0.7\n" + res.table(0))
    # PARS sensitivity to the predictor's Kendall tau, at load 0.9 (where memory binds)
    tsens = {}
    for tau in ((0.3, 0.9) if args.quick else (0.3, 0.5, 0.7, 0.9, 1.0)):
        tsens[f"pars tau={tau:g}"] = standard_policies(eng, w, keys=["pars"], tau=tau)["pars"]
    tsens["fcfs"] = standard_policies(eng, w, keys=["fcfs"])["fcfs"]
    tsens["sjf"] = standard_policies(eng, w, keys=["sjf"])["sjf"]
    res = compare_orderings(eng, w, tsens, loads=(0.9,), horizon_s=horizon, n_replications=reps, rng=8)
    summary["pars_tau"] = res.to_dict()
    print("\n## PARS vs predictor quality, azure-conv, load 0.9\n" + res.table(0))
    # throughput: every ordering on a work-conserving former, unlimited memory, 0.95 of capacity
    eng0 = load_profile(DEFAULT_PROFILE).engine()
    tr = fluidq.Workload.from_trace("azure-conv")
    wp = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=tr.prompt_tokens,
                         output_tokens=tr.output_tokens, name="azure-conv lengths, Poisson arrivals")
    lam = fluidq.max_throughput(eng0, wp).requests_per_s
    thr = {}
    tkeys = ["fcfs", "uniboost"] if args.quick else POLICY_KEYS
    for k, pol in standard_policies(eng0, wp, keys=tkeys).items():
        r = replicate(eng0, wp.with_rate(0.95 * lam), pol, n_replications=2 if args.quick else 6,
                      horizon_s=horizon if args.quick else 800.0, rng=95, keep_runs=False)
        thr[k] = {"verdict": r.verdict, "slope_tokens_per_s": r.slope_tokens_per_s, "slope_ci": list(r.slope_ci),
                  "tolerance_tokens_per_s": r.tolerance_tokens_per_s,
                  "mean_requests_in_system": r.mean_requests_in_system}
        print(f"0.95 capacity  {k:<22} {r.verdict:<12} slope {r.slope_tokens_per_s:8.2f} tokens/s "
              f"CI [{r.slope_ci[0]:.1f}, {r.slope_ci[1]:.1f}] (tolerance {r.tolerance_tokens_per_s:.1f})")
    summary["throughput_095"] = thr
    (out / "results.json").write_text(json.dumps(plain(summary), indent=1))
    print(f"\nwritten: {out}/results.json and PNGs")


def _plot(res, metric, path, title):
    from fluidq.plotting import axes, finish
    from fluidq.plotting.latency import plot_latency_vs_load

    fig, ax = axes()
    plot_latency_vs_load(res, metric=metric, logy=metric != "preemptions_per_request", ax=ax)
    ax.set_title(title, fontsize="medium")
    return finish(fig, ax, path)


if __name__ == "__main__":
    main()
