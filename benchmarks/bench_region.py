"""Benchmark: stability region construction and membership queries (issue 6 targets).

Targets: the region for b_max = 8192, k_max = 1024 (paper batch-time constants) in under 1 s;
membership queries at >= 10^4 per second (one point per call) and far more vectorised.
Also shown: a tabulated (PCHIP) batch time, where every integer batch total is a candidate, and
the brute-force enumeration of every admissible shape that the smart one replaces.

Run: ``python benchmarks/bench_region.py`` (prints measured value, target and ratio per line).
"""
from __future__ import annotations

import time

import numpy as np

import fluidq
from fluidq import Engine, Staircase, Tabulated
from fluidq.region import stability_region


def best_of(fn, repeat=5):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def brute_force_points(bt, b_max, k_max):
    pts = []
    for b in range(1, b_max + 1):
        y = np.arange(0, b + 1)
        x = b - y
        ok = y + (x > 0) <= k_max
        tb = float(bt(b))
        pts.append(np.stack([x[ok], y[ok]], 1) / tb)
    return np.concatenate(pts)


def main():
    paper = Staircase(c=0.01128, a=0.03547, b0=128)
    e = Engine(batch_time=paper, b_max=8192, k_max=1024)
    stability_region(e)  # imports, warm-up
    rows = []
    t_region = best_of(lambda: stability_region(e))
    rows.append(("region b_max=8192 k_max=1024 (staircase)", t_region, "s", 1.0, "<="))
    b = np.concatenate([[1], np.arange(64, 8193, 64)])
    tab = Tabulated(tokens=tuple(b), seconds=tuple(paper(b)))
    et = Engine(batch_time=tab, b_max=8192, k_max=1024)
    t_tab = best_of(lambda: stability_region(et), repeat=3)
    rows.append(("region b_max=8192 k_max=1024 (tabulated, all totals)", t_tab, "s", 1.0, "<="))
    r = stability_region(e)
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 1.1, size=(20000, 2)) * r.vertices.max(axis=0)
    n1 = 20000
    tuples = [(float(x), float(y)) for x, y in pts[:n1]]
    t1 = best_of(lambda: [r.contains(p) for p in tuples], repeat=3)
    rows.append(("contains, one (x, y) tuple per call", n1 / t1, "queries/s", 1e4, ">="))
    t1b = best_of(lambda: [r.contains(p) for p in pts[:n1]], repeat=3)
    rows.append(("contains, one numpy row per call", n1 / t1b, "queries/s", 1e4, ">="))
    big = rng.uniform(0, 1.1, size=(1_000_000, 2)) * r.vertices.max(axis=0)
    tv = best_of(lambda: r.contains(big), repeat=3)
    rows.append(("contains, vectorised 10^6 points", big.shape[0] / tv, "queries/s", 1e4, ">="))
    t_lp = best_of(lambda: r.margin(pts[0]), repeat=5)
    rows.append(("margin (cvxpy LP), one point", t_lp, "s", None, ""))
    t_bf = best_of(lambda: brute_force_points(paper, 2048, 256), repeat=1)
    t_sm = best_of(lambda: stability_region(e.with_(b_max=2048, k_max=256)))
    rows.append(("brute-force shape enumeration b_max=2048 (points only)", t_bf, "s", None, ""))
    rows.append(("smart enumeration + hull, b_max=2048", t_sm, "s", None, ""))
    print(f"fluidq {fluidq.__version__}: stability region benchmark")
    print(f"{'quantity':<58} {'measured':>14} {'target':>12} {'ratio':>8}  ok")
    for name, val, unit, target, op in rows:
        if target is None:
            print(f"{name:<58} {val:>12.4g} {unit:<3}")
            continue
        ratio = (target / val) if op == "<=" else (val / target)
        ok = ratio >= 1
        print(f"{name:<58} {val:>12.4g} {unit:<3} {op}{target:<10.3g} {ratio:>7.1f}x  {'yes' if ok else 'NO'}")
    print(f"speed-up of the smart enumeration over brute force at b_max=2048: {t_bf / t_sm:.0f}x")


if __name__ == "__main__":
    main()
