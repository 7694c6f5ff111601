"""Sweep overhead: wall time of one 2,000-point sweep against the chunk size and the executor.

Prints, side by side, the seconds per sweep and the ratio to the serial run, for chunk sizes
1, 10, 100 and 500 on local processes, and (with the dask extra) on a 2-worker Dask LocalCluster.
The point function is the cheap seeded M/M/1 recursion of ``fluidq.sweep.demo`` (about 1 ms a
point), so the numbers show the per-task overhead that chunking amortises. No target is asserted:
read the ratios (``python benchmarks/bench_sweep.py [--points N] [--customers C]``).
"""
from __future__ import annotations

import argparse
import time

from fluidq.sweep import Grid, sweep
from fluidq.sweep.demo import mm1_wait


def timed(**kw):
    t0 = time.perf_counter()
    res = sweep(mm1_wait, kw.pop("grid"), seed=1, **kw)
    return time.perf_counter() - t0, res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--customers", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    grid = Grid(axes={"seed": list(range(args.points))}, fixed={"rate_per_s": 0.7, "customers": args.customers})
    t_serial, ref = timed(grid=grid, executor="serial", chunk_size=args.points)
    print(f"{args.points} points, {args.customers} customers each; serial {t_serial:.2f} s "
          f"({1e3 * t_serial / args.points:.2f} ms/point)")
    print(f"{'executor':<22}{'chunk':>7}{'seconds':>10}{'x serial':>10}  same table")
    for chunk in (1, 10, 100, 500):
        t, res = timed(grid=grid, chunk_size=chunk, max_workers=args.workers)
        print(f"{res.executor:<22}{chunk:>7}{t:>10.2f}{t / t_serial:>10.2f}  {res.rows == ref.rows}")
    try:
        from fluidq.sweep import dask_executor

        t0 = time.perf_counter()
        with dask_executor(n_workers=args.workers) as client:
            t_up = time.perf_counter() - t0
            for chunk in (10, 100, 500):
                t, res = timed(grid=grid, executor=client, chunk_size=chunk)
                print(f"{'dask LocalCluster':<22}{chunk:>7}{t:>10.2f}{t / t_serial:>10.2f}  {res.rows == ref.rows}")
        print(f"(LocalCluster start-up {t_up:.2f} s, not included)")
    except ImportError:
        print("dask not installed: pip install 'fluidq[dask]' for the cluster rows")


if __name__ == "__main__":
    main()
