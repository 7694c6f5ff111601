"""Benchmark: batch-time fitting (``fit_batch_time``) against a per-b0 scipy NNLS loop.

fluidq solves the least-squares problem of every ``b0`` of the grid at once (normal equations,
exact active-set enumeration of the non-negativity constraints).  The reference solves one
``scipy.optimize.nnls`` per ``b0``, the obvious implementation.  Both must find the same
``b0``; the script prints their times and the ratio (scipy loop / fluidq) side by side.
On well-scaled random data the two are on par; on measured profiles, whose KV column is
badly scaled, NNLS iterates much longer (give a Vidur profile folder with an attention file
to see it, e.g. ``measured/vidur/legacy_e2d00e9_a100``).

    python benchmarks/bench_fit.py [VIDUR_FOLDER]
"""
from __future__ import annotations

import sys
import time

import numpy as np
from scipy.optimize import nnls

from fluidq.batchtime.fit import _fit_once, default_b0_grid


def reference(b, y, kv, w, grid):
    best = None
    for b0 in grid:
        cols = [np.ones_like(b), np.ceil(b / b0)] + ([kv] if kv is not None else [])
        A = np.column_stack(cols) * w[:, None]
        coef, res = nnls(A, y * w)
        if coef[1] > 0 and (best is None or res ** 2 < best[0]):
            best = (res ** 2, coef[0], coef[1], int(b0))
    return best


def cases(argv):
    rng = np.random.default_rng(0)
    for n, ctx in [(256, False), (1000, True), (5000, True), (10000, True)]:
        b = rng.integers(1, 4097, n).astype(float)
        kv = rng.integers(0, 500_000, n).astype(float) if ctx else None
        y = (0.01 + 0.03 * np.ceil(b / 128) + (1e-7 * kv if ctx else 0)) * (1 + 0.01 * rng.standard_normal(n))
        yield "random", b, y, kv
    for folder in argv:
        from fluidq.batchtime.loaders import load_measured

        m = load_measured(folder, tp=2).where(("prefill", "decode"))
        yield "measured", m.tokens, m.seconds, m.kv_tokens


def main(argv=()):
    print(f"{'data':>8} {'points':>7} {'kv':>3} {'grid':>5} {'fluidq [ms]':>12} {'scipy loop [ms]':>16} "
          f"{'ratio':>7}  same b0")
    for label, b, y, kv in cases(argv):
        n, ctx = b.size, kv is not None
        w = 1 / y
        grid = default_b0_grid(b.max())
        t0 = time.perf_counter()
        ours = _fit_once("staircase", b, y, kv, w, grid)
        t1 = time.perf_counter()
        ref = reference(b, y, kv, w, grid)
        t2 = time.perf_counter()
        print(f"{label:>8} {n:>7} {'yes' if ctx else 'no':>3} {grid.size:>5} {1e3 * (t1 - t0):>12.1f} {1e3 * (t2 - t1):>16.1f} "
              f"{(t2 - t1) / (t1 - t0):>7.1f}  {ours[3] == ref[3]}")


if __name__ == "__main__":
    main(sys.argv[1:])
