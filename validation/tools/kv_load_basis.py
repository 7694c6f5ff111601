"""Where does the simulated stability threshold lie when the KV cache binds? (issues 16, 20; h-kvbasis)

For each engine: ``lam_region`` = ``fluidq.max_throughput(engine, w).requests_per_s`` (the lambda* `check --load`,
`simulate --load` and `region` read before h-kvbasis: b/t(b) at the batch the mean footprints allow), ``lam_kv`` =
:func:`fluidq.dtmc.kv_basis.kv_capacity` (vLLM's KV rules: whole-prompt admission, recompute preemptions -- the flow
balance of ``predict_capacity`` on the engine's own batch time) and the simulated threshold: a bisection on the
arrival rate (geometric, between 0.7 lam_kv and 1.1 lam_region) where each rate is judged by
``fluidq.replicate`` (seeded replications, root seed SEED, automatic horizon, the 95 % CI of the token-backlog
slope against 1 % of the offered load): bounded -> the rate is below the threshold, growing or inconclusive -> not
shown below it.  Also the verdicts at 0.9 of each basis (what `check --load 0.9` offers).  No constant here is fitted:
the engines are drawn (seeded) or named, and the measured side never reads either basis except as a bracket.

Usage: python validation/tools/kv_load_basis.py [--steps N] [--only NAME ...] > out.jsonl
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

import fluidq
from fluidq import Affine, Engine, Geometric, Poisson, Staircase, Workload
from fluidq.batchtime import ContextAware
from fluidq.engine.memory import VLLM

SEED = 0
POLICY = "sarathi"


def W(p, o, rate=1.0):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=p, output_tokens=o)


def cases():
    from fluidq.engine.roofline import roofline_engine

    out = [
        # KV binds (named engines)
        ("affine-ctx 600/200 kv30k", Engine(batch_time=ContextAware(base=Affine(c=0.02, a=2e-4), kv_s_per_token=1e-7),
                                            b_max=1024, kv_capacity_tokens=30_000), W(600, 200)),
        ("affine 600/200 kv30k (test_kv_verdicts)", Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024,
                                                            kv_capacity_tokens=30_000), W(600, 200)),
        ("staircase geo300/geo150 kv50k", Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512,
                                                 kv_capacity_tokens=50_000), W(Geometric(mean_tokens=300), Geometric(mean_tokens=150))),
        ("affine-ctx vLLM blocks 1000/200 kv40k k256",
         Engine(batch_time=ContextAware(base=Affine(c=0.015, a=1e-4), kv_s_per_token=2e-7), b_max=2048, k_max=256,
                kv_capacity_tokens=40_000, memory=VLLM, prefill_emits_token=True), W(1000, 200)),
        ("roofline Qwen2.5-7B L4 1000/200", roofline_engine("Qwen2.5-7B", "L4"), W(1000, 200)),
        ("roofline Llama-3.1-8B L4 2000/500", roofline_engine("Llama-3.1-8B", "L4"), W(2000, 500)),
        ("roofline Llama-3.1-70B TP4 A100-40GB 1000/200", roofline_engine("Llama-3.1-70B", "A100-40GB", 4),
         W(1000, 200)),
        ("roofline Mistral-7B-v0.1 A10G 6000/2000", roofline_engine("Mistral-7B-v0.1", "A10G"), W(6000, 2000)),
        ("roofline Qwen2.5-7B L4 geo1000/geo200", roofline_engine("Qwen2.5-7B", "L4"),
         W(Geometric(mean_tokens=1000), Geometric(mean_tokens=200))),
    ]
    # small caches (a new user's review, 2026-12-07, h-user6c): Gemma-2-9B's planned cache is 4,272 tokens on a
    # 24 GB card (about 21 requests of 100 + 100, 6 of 500 + 200), Llama-3.1-8B's on an A10G 31,632
    out += [
        ("roofline Gemma-2-9B A10G 100/100", roofline_engine("Gemma-2-9B", "A10G"), W(100, 100)),
        ("roofline Gemma-2-9B L4 100/100", roofline_engine("Gemma-2-9B", "L4"), W(100, 100)),
        ("roofline Gemma-2-9B A10G 500/200", roofline_engine("Gemma-2-9B", "A10G"), W(500, 200)),
        ("roofline Llama-3.1-8B A10G 100/100", roofline_engine("Llama-3.1-8B", "A10G"), W(100, 100)),
    ]
    rng = np.random.default_rng(20261207)  # random KV-bound engines
    for i in range(4):
        c, a, s = rng.uniform(0.005, 0.03), rng.uniform(2e-5, 2e-4), rng.uniform(0, 3e-7)
        p, o = int(rng.integers(100, 1500)), int(rng.integers(50, 400))
        b_max = int(rng.choice([512, 1024, 2048]))
        kv = int(rng.uniform(8, 40) * (p + o))  # a cache of 8-40 whole requests: binds
        out.append((f"random-{i} ctx c={c*1e3:.1f}ms a={a*1e6:.0f}us s={s*1e9:.0f}ns {p}/{o} kv{kv} b{b_max}",
                    Engine(batch_time=ContextAware(base=Affine(c=c, a=a), kv_s_per_token=s), b_max=b_max,
                           kv_capacity_tokens=kv), W(p, o)))
    # KV does not bind: the two numbers must agree and both sit at the simulated threshold
    out += [
        ("no-kv affine-ctx 600/200", Engine(batch_time=ContextAware(base=Affine(c=0.02, a=2e-4), kv_s_per_token=1e-7),
                                          b_max=1024), W(600, 200)),
        ("large-kv affine 300/100 kv2M", Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024,
                                               kv_capacity_tokens=2_000_000), W(300, 100)),
        ("roofline Llama-3.1-8B H100 100/100", roofline_engine("Llama-3.1-8B", "H100"), W(100, 100)),
    ]
    return out


def judge(engine, w, rate, n):
    """``replicate``'s verdict at ``rate`` (n seeded runs, automatic horizon) and its slope CI over the tolerance."""
    rep = fluidq.replicate(engine, w.with_rate(rate), POLICY, n_replications=n, horizon_s=None, rng=SEED,
                           keep_runs=False)
    tol = rep.tolerance_tokens_per_s
    return rep.verdict, [round(x / tol, 2) for x in rep.slope_ci]


def saturated(engine, w, rate, n, iterations=20_000):
    """Served requests/s under overload at ``rate``: the arrivals of each run's second half minus its request
    backlog's slope there (mean and 95 % t-interval over n seeded runs)."""
    from scipy import stats

    t_b = float(engine.batch_time(engine.b_max)) if not hasattr(engine.batch_time, "base") else \
        float(engine.batch_time.base(engine.b_max))
    horizon = max(300.0, iterations * t_b)
    served = []
    for seed in range(n):
        r = fluidq.simulate(engine, w.with_rate(rate), POLICY, horizon_s=horizon, rng=1000 + seed)
        served.append(r.offered(0.5)["requests_per_s"] - r.backlog_slope("requests", 0.5))
    m, s = float(np.mean(served)), float(np.std(served, ddof=1))
    h = float(stats.t.ppf(0.975, n - 1) * s / math.sqrt(n))
    return m, (m - h, m + h), horizon


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--replications", type=int, default=8)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--iterations", type=int, default=20_000, help="iterations of b_max per saturated run")
    a = ap.parse_args()
    from fluidq.dtmc.kv_basis import kv_capacity

    for name, e, w in cases():
        if a.only and not any(s in name for s in a.only):
            continue
        t0 = time.time()
        reg = fluidq.max_throughput(e, w).requests_per_s
        kvp = kv_capacity(e, w)
        kv = kvp.requests_per_s if kvp is not None else reg
        row = {"case": name, "lam_region": reg, "lam_kv": kv, "kv_binds": kvp is not None, "at": {}}
        for label, lam in (("0.9 kv", 0.9 * kv), ("0.9 region", 0.9 * reg)):
            row["at"][label] = judge(e, w, lam, a.replications)
        m, sat_ci, hor = saturated(e, w, 1.3 * max(reg, kv), 4, iterations=a.iterations)
        row.update(sat=m, sat_ci=sat_ci, sat_horizon_s=hor)
        lo, hi = 0.7 * min(kv, reg), 1.1 * max(reg, kv)
        seen = []
        for _ in range(a.steps):  # (--steps 0: no bisection)
            mid = math.sqrt(lo * hi)
            v, ci = judge(e, w, mid, a.replications)
            seen.append((mid, v, ci))
            if v == "bounded":
                lo = mid
            else:
                hi = mid
        row.update(sim_lo=lo, sim_hi=hi, seen=seen, wall_s=time.time() - t0)
        print(json.dumps(row), flush=True)
        print(f"{name}: region {reg:.4g} kv {kv:.4g} sim [{lo:.4g}, {hi:.4g}] sat {m:.4g} [{sat_ci[0]:.4g}, {sat_ci[1]:.4g}] "
              f"({row['at']}) {row['wall_s']:.0f}s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
