"""A 2,000-point sweep on a Dask local cluster that is killed midway and resumed.

The sweep (``fluidq.sweep``) runs a seeded M/M/1 point function (``fluidq.sweep.demo.mm1_wait``)
over 20 arrival rates x 100 seeds in chunks of 100 points on a ``distributed.LocalCluster``, writing
every finished chunk to an append-only JSON Lines store. A child process runs it and is SIGKILLed
(with its workers) after a few chunks; the sweep is then resumed from the store on a fresh cluster
and compared with an uninterrupted run on local processes: same table, no point lost or repeated.

Writes ``sweep_dask_resume.png`` (mean waiting time against the load, with the M/M/1 formula) to
--out and prints the counts and wall times. Needs the dask extra: ``pip install 'fluidq[dask]'``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fluidq.plotting import axes, finish
from fluidq.sweep import Grid, dask_executor, read_store, sweep
from fluidq.sweep.demo import mm1_wait

CHUNK = 100


def grid(quick: bool) -> Grid:
    return Grid(axes={"rate_per_s": np.round(np.linspace(0.1, 0.86, 20), 3).tolist(), "seed": list(range(100))},
                fixed={"customers": 1500 if quick else 20000})


def child(store: str, quick: bool, workers: int) -> None:
    with dask_executor(n_workers=workers) as client:
        sweep(mm1_wait, grid(quick), executor=client, store=store, chunk_size=CHUNK, seed=2026)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="cheaper points (1,500 customers instead of 20,000)")
    ap.add_argument("--out", default="figures", help="folder for the PNG and the store")
    ap.add_argument("--workers", type=int, default=2, help="Dask worker processes")
    ap.add_argument("--kill-after", type=int, default=4, help="chunks stored before the kill")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.quick, args.workers)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "sweep_dask_resume.jsonl"
    store.unlink(missing_ok=True)
    g = grid(args.quick)

    # 1. start the sweep in a child process and kill it (and its cluster) after a few chunks
    t0 = time.monotonic()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(store), "--workers", str(args.workers)]
    err = tempfile.TemporaryFile(mode="w+")  # the child's stderr, read only if it ends early
    proc = subprocess.Popen(cmd + (["--quick"] if args.quick else []), start_new_session=True, stderr=err)
    while not store.exists() or store.read_bytes().count(b"\n") < 1 + args.kill_after:
        if proc.poll() is not None:
            err.seek(0)
            why = [ln for ln in err.read().splitlines() if ln.strip()]
            raise SystemExit(f"the sweep ended (rc={proc.returncode}) before it could be interrupted"
                             + (f": {why[-1]}" if why else ""))
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _, kept = read_store(store)
    t_first = time.monotonic() - t0
    print(f"killed the sweep (rc {proc.returncode}) after {t_first:.1f} s: {len(kept)} of {len(g)} points stored")

    # 2. resume on a fresh local cluster
    t0 = time.monotonic()
    with dask_executor(n_workers=args.workers) as client:
        resumed = sweep(mm1_wait, g, executor=client, store=store, chunk_size=CHUNK, seed=2026)
    t_resume = time.monotonic() - t0
    print(f"resumed on {resumed.executor}: {resumed.n_resumed} points from the store, {resumed.n_computed} "
          f"computed, {t_resume:.1f} s")

    # 3. an uninterrupted reference on local processes, other chunking
    t0 = time.monotonic()
    ref = sweep(mm1_wait, g, chunk_size=250, seed=2026, max_workers=args.workers)
    t_ref = time.monotonic() - t0
    counts = {}
    for line in store.read_bytes().split(b"\n")[1:-1]:
        for i in json.loads(line)["indices"]:
            counts[i] = counts.get(i, 0) + 1
    same = resumed.rows == ref.rows
    print(f"uninterrupted run on {ref.executor}: {t_ref:.1f} s")
    print(f"same table: {same}; points stored once each: {sorted(counts) == list(range(len(g)))} and "
          f"{set(counts.values()) == {1}}")

    rates = sorted({r["rate_per_s"] for r in resumed.rows})
    fig, ax = axes()
    w = {lam: np.array([r["mean_wait_s"] for r in resumed.rows if r["rate_per_s"] == lam]) for lam in rates}
    mean = np.array([w[lam].mean() for lam in rates])
    half = np.array([1.96 * w[lam].std(ddof=1) / np.sqrt(w[lam].size) for lam in rates])
    ax.errorbar(rates, mean, yerr=half, fmt="o", ms=3, capsize=2, label="sweep: 100 seeds per rate, 95 % CI")
    lam = np.linspace(min(rates), max(rates), 200)
    ax.plot(lam, lam / (1 - lam), color="black", lw=1, label="M/M/1: rho / (mu - lambda)")
    ax.set_xlabel("arrival rate (service rate 1)")
    ax.set_ylabel("mean waiting time [mean service times]")
    quick = "\n(quick run: 1,500 customers per point)" if args.quick else ""
    ax.set_title(f"{len(g)} points, killed after {len(kept)} and resumed on Dask{quick}", fontsize="medium")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "sweep_dask_resume.png")
    if not same:
        raise SystemExit("the resumed table differs from the uninterrupted one")
    print(f"wrote {out}/sweep_dask_resume.png")


if __name__ == "__main__":
    main()
