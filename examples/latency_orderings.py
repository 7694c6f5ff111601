"""Latency of scheduling orderings on the Azure traces and a heavy-tailed reasoning-like workload.

Reproduces the experiments of docs/latency.md as first run on 2026-12-02, at the same arrival rates,
seeds and replications: latency-load curves for FCFS, PARS, oracle SJF, SRPT, gamma-Boost and
UNIBOOST (with the MEMGUARD ablation), a gamma sweep, PARS's sensitivity to the predictor's Kendall
tau, and the throughput check at 0.95 of capacity; and the reasoning-like run at load 2.0 of today's
basis that docs/latency.md shows beside them (added 2026-12-07).

    python examples/latency_orderings.py [--quick] [--out docs/latency]

**Loads.** The 2026-12-02 loads (:data:`OLD_LOADS` 0.3, 0.5, 0.7, 0.9; the gamma sweep at 0.7, the
tau table at 0.9) were fractions of ``b_max / t(b_max)`` without the KV cache, the unit
``compare_orderings`` read then.  Since 2026-12-07 it reads loads on the load basis of ``fluidq
check --load`` (where the KV cache binds, the capacity under its rules); :func:`old_loads` converts
the old settings once into today's loads with the same arrival rates (to the last bit), so the
tables are the 2026-12-02 ones: conversation 0.423 / 0.704 / 0.986 / 1.268 of the KV basis, code
unchanged (the cache does not bind), reasoning-like 1.083 / 1.805 / 2.527 / 3.250 of the KV basis
(loads above 2 run again since 2026-12-07).  Printed, per workload and load, ``res.table(i)`` under
a heading "load L of the <basis> B req/s = R req/s (old load x)"; then the reasoning-like run at
today's loads of old 0.3, old 0.5 and 2.0 (``reasoning_rerun.json``; its third table is the page's
load-2.0 table), the gamma sweep, the tau table and the throughput lines.  It writes
``results.json``, ``reasoning_rerun.json`` and the PNGs (the reasoning-like figures from the
load-2.0 run, as on the page) under ``--out``.

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
from fluidq.dtmc.load_basis import load_basis
from fluidq.latency import POLICY_KEYS, compare_orderings, reasoning_workload, standard_policies
from fluidq.profiles import DEFAULT_PROFILE, load_profile
from fluidq.results import plain
from fluidq.sim import replicate
from fluidq.latency.old_loads import BASIS_WORDS, load_words, old_loads

KEYS = ["fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost", "uniboost-nomemguard"]
#: the 2026-12-02 loads, in the old unit (module docstring); --quick: two of them
OLD_LOADS = (0.3, 0.5, 0.7, 0.9)
OLD_LOADS_QUICK = (0.6, 0.9)
#: the reasoning-like rerun docs/latency.md shows: old 0.3 and 0.5 and this load of today's basis
REASONING_RERUN_LOAD = 2.0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="docs/latency")
    ap.add_argument("--kv", type=int, default=50_000)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    eng = load_profile(DEFAULT_PROFILE).engine(kv_capacity_tokens=args.kv)
    olds = OLD_LOADS_QUICK if args.quick else OLD_LOADS
    horizon = 60.0 if args.quick else 400.0
    reps = 1 if args.quick else 2
    workloads = {"azure-conv": fluidq.Workload.from_trace("azure-conv")}
    if not args.quick:
        workloads.update({"azure-code": fluidq.Workload.from_trace("azure-code"), "reasoning": reasoning_workload()})
    keys = ["fcfs", "pars", "srpt", "uniboost"] if args.quick else KEYS
    summary = {"engine": eng.to_dict(), "loads": olds, "loads_are": "old unit (b_max/t(b_max) without the KV cache)",
               "horizon_s": horizon, "replications": reps, "runs": {}, "load_conversion": {}}
    from fluidq.latency import METRICS

    quick = (f"\n(quick run: {horizon:g} s x {reps} replication, {len(olds)} loads: inconclusive, no intervals)"
             if args.quick else "")
    for name, w in workloads.items():
        t = time.perf_counter()
        pols = standard_policies(eng, w, keys=keys, tau=0.5)
        conv = old_loads(eng, w, olds)
        res = compare_orderings(eng, w, pols, loads=[d["load"] for d in conv], horizon_s=horizon,
                                n_replications=reps, rng=2026)
        summary["runs"][name] = res.to_dict()
        summary["load_conversion"][name] = conv
        if name != "reasoning" or args.quick:
            for metric in ("latency_per_token_mean_s", "ttlt_p99_s", "ttft_mean_s", "preemptions_per_request"):
                _plot(res, metric, out / f"{name}_{metric}.png", title=f"{name}: {METRICS[metric][0]}{quick}")
        print(f"\n## {name}  ({time.perf_counter() - t:.0f} s)")
        for i, d in enumerate(conv):
            print(f"\n{load_words(d)}")
            print(res.table(i))
    if not args.quick:    # the reasoning-like run the page shows: old 0.3 and 0.5, and 2.0 of today's basis
        w = workloads["reasoning"]
        t = time.perf_counter()
        conv = old_loads(eng, w, OLD_LOADS[:2])
        lb = load_basis(eng, w)
        conv.append({"old_load": None, "load": REASONING_RERUN_LOAD, "basis": lb.basis, "basis_req_s": lb.requests_per_s,
                     "rate_req_s": REASONING_RERUN_LOAD * lb.requests_per_s})
        res = compare_orderings(eng, w, standard_policies(eng, w, keys=keys, tau=0.5), loads=[d["load"] for d in conv],
                                horizon_s=horizon, n_replications=reps, rng=2026)
        (out / "reasoning_rerun.json").write_text(json.dumps(plain(res.to_dict()), indent=1))
        for metric in ("latency_per_token_mean_s", "ttlt_p99_s", "ttft_mean_s", "preemptions_per_request"):
            _plot(res, metric, out / f"reasoning_{metric}.png", title=f"reasoning: {METRICS[metric][0]}")
        print(f"\n## reasoning, the page's rerun at old 0.3, 0.5 and {REASONING_RERUN_LOAD:g} of today's basis "
              f"({time.perf_counter() - t:.0f} s)")
        for i, d in enumerate(conv):
            print(f"\n{load_words(d, old=d['old_load'] is not None)}")
            print(res.table(i))
    # gamma sweep on the conversation trace at load 0.7
    w = workloads["azure-conv"]
    sweep = {}
    for g in ((0.01, 100.0) if args.quick else (0.01, 0.1, 1.0, 10.0, 100.0)):
        p = standard_policies(eng, w, keys=["gamma-boost", "uniboost"], gamma_per_s=g)
        sweep[f"gamma-boost g={g:g}"] = p["gamma-boost"]
        sweep[f"uniboost g={g:g}"] = p["uniboost"]
    sweep["uniboost-ada (ratio)"] = standard_policies(eng, w, keys=["uniboost-ada"])["uniboost-ada"]
    cg = old_loads(eng, w, (0.7,))[0]
    res = compare_orderings(eng, w, sweep, loads=(cg["load"],), horizon_s=horizon, n_replications=reps, rng=7)
    summary["gamma_sweep"] = res.to_dict()
    print(f"\n## gamma sweep, azure-conv, {load_words(cg)}\n" + res.table(0))
    # PARS sensitivity to the predictor's Kendall tau, at load 0.9 (where memory binds)
    tsens = {}
    for tau in ((0.3, 0.9) if args.quick else (0.3, 0.5, 0.7, 0.9, 1.0)):
        tsens[f"pars tau={tau:g}"] = standard_policies(eng, w, keys=["pars"], tau=tau)["pars"]
    tsens["fcfs"] = standard_policies(eng, w, keys=["fcfs"])["fcfs"]
    tsens["sjf"] = standard_policies(eng, w, keys=["sjf"])["sjf"]
    ct = old_loads(eng, w, (0.9,))[0]
    res = compare_orderings(eng, w, tsens, loads=(ct["load"],), horizon_s=horizon, n_replications=reps, rng=8)
    summary["pars_tau"] = res.to_dict()
    print(f"\n## PARS vs predictor quality, azure-conv, {load_words(ct)}\n" + res.table(0))
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
    print(f"\nwritten: {out}/results.json" + ("" if args.quick else f", {out}/reasoning_rerun.json") + " and PNGs")


def _plot(res, metric, path, title):
    from fluidq.plotting import axes, finish
    from fluidq.plotting.latency import plot_latency_vs_load

    fig, ax = axes()
    basis = BASIS_WORDS.get(res.inputs.get("load_basis"), res.inputs.get("load_basis"))
    plot_latency_vs_load(res, metric=metric, logy=metric != "preemptions_per_request", ax=ax,
                         xlabel=f"load (fraction of the {basis}, {res.inputs['capacity_requests_per_s']:.4g} req/s)")
    ax.set_title(title, fontsize="medium")
    return finish(fig, ax, path)


if __name__ == "__main__":
    main()
