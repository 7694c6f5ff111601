"""MEMGUARD's first level k and gamma-Ada's update cadence: fluidq's choices, swept.  (issue 18)

UNIBOOST (Li et al., "Beyond Prediction: Tail-Aware Scheduling for LLM Inference",
arXiv:2606.18431) guards requests in memory with MEMGUARD's geometric work levels k, 2k, 4k, ...
and adapts gamma-Boost's gamma to the observed tail with gamma-Ada.  The paper's first level and
gamma-Ada's update cadence could not be read, so fluidq chose k = 32 tokens and an update every 50
response times.  This script sweeps both around those choices, on the same requests for every
value (common random numbers), and reports P99 TTLT, P99 TTFT, mean latency per token and
preemptions per request, each with a Student-t interval over seeded replications, and the paired
ratio to fluidq's default (k = 32, cadence 50).  MEMGUARD off and oracle SRPT are the references.

Setting: the paper's CodeLlama-34B/A100 fit with a KV cache of 30,000 tokens (binding: MEMGUARD has
something to guard), the Azure 2023 conversation trace's lengths, Poisson arrivals for 300 s, every run
drained (so the tails include every request), at the arrival rates of the sweep's first run
(2026-12-05): loads 0.7 and 0.9 of the unit ``compare_orderings`` read then, ``b_max / t(b_max)``
without the KV cache.  Since 2026-12-07 ``compare_orderings`` reads loads on the load basis of
``fluidq check --load`` (here the KV rules' capacity); :func:`old_loads` converts the old settings
(:data:`OLD_LOADS`) once into today's loads with the same rates, and the table names each as "load L
of the KV basis B req/s = R req/s".

    python examples/memguard_ada_sweep.py [--quick] [--out docs/latency] [--seeds 8]

It writes ``memguard_ada_sweep.json``, ``memguard_ada_sweep.md`` (the table of docs/latency.md) and
``memguard_ada_sweep.png`` under ``--out``.  The full run (8 seeds) takes some 10 minutes on one
shared core (555 s on 2026-12-05; 630 s on 2026-12-07 from the converted loads, the same 832 numbers to the
last bit); ``--quick`` (2 seeds, 60 s, two values each, load 0.7) well under a minute and is a
smoke test only: its figure says *quick run, inconclusive*.

The same knobs from the command line: ``fluidq latency --trace azure-conv --kv-capacity 30000
--orderings uniboost,uniboost-ada --memguard-k 64 --ada-every 20``; from Python:
``fluidq.policies.UniBoost(k_tokens=64, adaptive=True, update_every=20)``.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from scipy import stats

import fluidq
from fluidq.latency import compare_orderings, standard_policies
from fluidq.latency.families import workload_family
from fluidq.results import plain
from fluidq.latency.old_loads import load_words, old_loads

PROFILE = "paper-codellama34b-a100"
METRICS = {"ttlt_p99_s": "P99 TTLT [s]", "ttft_p99_s": "P99 TTFT [s]",
           "latency_per_token_mean_s": "mean latency per token [s/token]",
           "preemptions_per_request": "preemptions per request"}
DEFAULT_K, DEFAULT_EVERY = 32, 50
#: the loads of the 2026-12-05 run, in the old unit (module docstring); --quick: the first
OLD_LOADS = (0.7, 0.9)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="docs/latency")
    ap.add_argument("--seeds", type=int, default=None, help="replications per point (default 8; --quick: 2)")
    args = ap.parse_args(argv)
    q = args.quick
    reps = args.seeds or (2 if q else 8)
    horizon = 60.0 if q else 300.0
    olds = OLD_LOADS[:1] if q else OLD_LOADS
    ks = (8, 32) if q else (4, 8, 16, 32, 64, 128, 512)
    everies = (10, 50) if q else (5, 10, 25, 50, 100, 200)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    eng = fluidq.load_profile(PROFILE).engine(kv_capacity_tokens=30_000)
    w = workload_family("azure-conv")
    conv = old_loads(eng, w, olds)
    loads = tuple(d["load"] for d in conv)
    pols = standard_policies(eng, w, keys=["srpt", "uniboost-nomemguard"])
    for k in ks:
        pols[f"k={k}"] = standard_policies(eng, w, keys=["uniboost"], k_tokens=k)["uniboost"]
    for n in everies:
        pols[f"ada every {n}"] = standard_policies(eng, w, keys=["uniboost-ada"], update_every=n)["uniboost-ada"]
    gammas = {}   # gamma-Ada's trajectory in each run: {(policy, load): [(updates, min, final gamma), ...]}

    def progress(name, load, rep):
        base = getattr(getattr(pols[name], "order", None), "base", None)
        hist = getattr(base, "history", None)
        if name.startswith("ada") and hist is not None:
            g = [x[1] for x in hist] or [base.gamma]
            gammas.setdefault((name, load), []).append((len(hist), min(g), g[-1]))

    t0 = time.perf_counter()
    res = compare_orderings(eng, w, pols, loads=loads, horizon_s=horizon, n_replications=reps, rng=2026, drain=True,
                            progress=progress)
    R = {"quick": q, "replications": reps, "profile": PROFILE, "kv_tokens": 30_000, "workload": w.name,
         "loads": loads, "load_conversion": conv, "horizon_s": horizon, "ks": ks, "everies": everies, "loads_data": []}
    for i, ld in enumerate(loads):
        row = {}
        for p in res.policies:
            base = f"ada every {DEFAULT_EVERY}" if p.startswith("ada") else f"k={DEFAULT_K}"
            row[p] = {m: {"value": res.values[p][m][i],
                          "vs_default": (paired(res, m, p, base, i) if p.startswith(("k=", "ada")) else None),
                          "vs_srpt": paired(res, m, p, "srpt", i) if p != "srpt" else None}
                      for m in METRICS}
            row[p]["throughput_vs_srpt"] = paired(res, "throughput_tokens_per_s", p, "srpt", i) if p != "srpt" else None
            row[p]["finished"] = res.values[p]["finished_fraction"][i][0]
            if (p, ld) in gammas:
                g = np.asarray(gammas[(p, ld)], float)
                row[p]["gamma_ada"] = {"updates_mean": float(g[:, 0].mean()), "gamma_min": float(g[:, 1].min()),
                                       "gamma_final_range": [float(g[:, 2].min()), float(g[:, 2].max())]}
        R["loads_data"].append({"load": ld, "conversion": conv[i], "policies": row})
    R["seconds"] = time.perf_counter() - t0
    (out / "memguard_ada_sweep.json").write_text(json.dumps(plain(R), indent=1))
    (out / "memguard_ada_sweep.md").write_text(render(R))
    plot(R, out / "memguard_ada_sweep.png")
    print(render(R))
    print(f"written under {out} ({R['seconds']:.0f} s)")


def paired(res, metric, policy, base, i):
    """(mean, 95 % half-width) of policy / base over the paired replications (NaN-free ones)."""
    a = np.asarray(res.samples[policy][metric][i], float)
    b = np.asarray(res.samples[base][metric][i], float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    r = r[np.isfinite(r)]
    if r.size < 2:
        return (float(r.mean()) if r.size else math.nan), math.nan
    return float(r.mean()), float(stats.t.ppf(0.975, r.size - 1) * r.std(ddof=1) / math.sqrt(r.size))


def _v(c):
    m, h = c
    return f"{m:.3g} ± {h:.2g}" if h == h else f"{m:.3g}"


def _x(c):
    m, h = c
    return f"{m:.3g}× ± {h:.2g}" if h == h else f"{m:.3g}×"


def render(R) -> str:
    lines = [f"Generated by `python examples/memguard_ada_sweep.py` ({R['replications']} seeded replications, "
             "every policy on the same requests; 95 % Student-t intervals"
             + ("; QUICK RUN: inconclusive" if R["quick"] else "") + ").",
             "",
             f"Setting: {R['workload']}, arrivals for {R['horizon_s']:g} s, drained; paper "
             f"CodeLlama-34B/A100 fit, KV {R['kv_tokens']:,} tokens. `k=K`: UNIBOOST (gamma-Boost, MEMGUARD with "
             f"first level K tokens); `ada every N`: UNIBOOST with gamma-Ada updating gamma every N response "
             f"times (k = {DEFAULT_K}). In brackets: the paired ratio to fluidq's default (k = {DEFAULT_K}, "
             f"cadence {DEFAULT_EVERY}; < 1 is lower, i.e. better for every column here)."]
    for L in R["loads_data"]:
        lines += ["", f"**{load_words(L['conversion'])}**", "",
                  "| policy | " + " | ".join(METRICS.values()) + " | finished |",
                  "|---|" + "---|" * (len(METRICS) + 1)]
        for p, row in L["policies"].items():
            cells = []
            for m in METRICS:
                c = row[m]
                txt = _v(c["value"])
                if c["vs_default"] is not None and not p.endswith((f"={DEFAULT_K}", f" {DEFAULT_EVERY}")):
                    r, h = c["vs_default"]
                    txt += f" ({r:.3g}× ± {h:.2g})" if r == r else ""
                cells.append(txt)
            lines.append(f"| {p} | " + " | ".join(cells) + f" | {row['finished']:.3g} |")
        d = L["policies"][f"k={DEFAULT_K}"]
        lines += ["", f"UNIBOOST (k = {DEFAULT_K}, fixed gamma) / oracle SRPT, paired over the replications: "
                  + "; ".join(f"{METRICS[m]} {_x(d[m]['vs_srpt'])}" for m in METRICS)
                  + f"; throughput {_x(d['throughput_vs_srpt'])}."]
        ada = {p: r["gamma_ada"] for p, r in L["policies"].items() if "gamma_ada" in r}
        if ada:
            lines += ["", "gamma-Ada's gamma in these runs (1/s; clamp [1, 200], start 200): "
                      + "; ".join(f"{p}: {g['updates_mean']:.1f} updates per run (mean), lowest {g['gamma_min']:.3g}, final "
                                  f"{g['gamma_final_range'][0]:.3g}–{g['gamma_final_range'][1]:.3g}"
                                  for p, g in ada.items()) + "."]
    return "\n".join(lines) + "\n"


def plot(R, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
    for (ax_k, ax_a), m in zip(((axes[0][0], axes[0][1]), (axes[1][0], axes[1][1])),
                               ("ttlt_p99_s", "preemptions_per_request")):
        for L in R["loads_data"]:
            P = L["policies"]
            for ax, names, xs in ((ax_k, [f"k={k}" for k in R["ks"]], R["ks"]),
                                  (ax_a, [f"ada every {n}" for n in R["everies"]], R["everies"])):
                mm = [P[n][m]["value"][0] for n in names]
                hh = [P[n][m]["value"][1] if P[n][m]["value"][1] == P[n][m]["value"][1] else 0 for n in names]
                line = ax.errorbar(xs, mm, yerr=hh, marker="o", capsize=3, label=f"load {L['load']:.4g}")
                col = line[0].get_color()
                ax.axhline(P["uniboost-nomemguard"][m]["value"][0], color=col, ls=":", lw=1)
                ax.axhline(P["srpt"][m]["value"][0], color=col, ls="--", lw=1)
        for ax, lab, d in ((ax_k, "MEMGUARD first level k [tokens]", DEFAULT_K),
                           (ax_a, "gamma-Ada cadence [responses per update]", DEFAULT_EVERY)):
            ax.set_xscale("log", base=2)
            ax.axvline(d, color="0.6", lw=0.8)
            ax.set_xlabel(lab)
            ax.set_ylabel(METRICS[m])
    axes[0][0].legend(fontsize=8, title="dotted: MEMGUARD off, dashed: SRPT", title_fontsize=7)
    fig.suptitle("UNIBOOST: MEMGUARD's k and gamma-Ada's cadence (grey line: fluidq's choice)"
                 + ("\nquick run: 2 seeds, 60 s -- inconclusive" if R["quick"] else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
