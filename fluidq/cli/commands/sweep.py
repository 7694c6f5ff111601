"""``fluidq sweep CASE.toml``: run a sweep case on local processes or a Dask cluster; resumable."""
from __future__ import annotations

import sys
from collections import Counter

from .. import CliError, emit


def register(sub):
    p = sub.add_parser("sweep", help="run a sweep case (loads x budgets x policies x seeds); resumable",
                       description="Run the analysis of a sweep case file over its grid, in chunks, on local "
                       "processes (default), a Dask local cluster or a Dask scheduler. Finished chunks are "
                       "appended to the store; run the same command again to resume an interrupted sweep.")
    p.add_argument("case", help="sweep case TOML file ([sweep], [fixed], [grid]; see the docs)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--dask", metavar="ADDRESS", default=None, help="a running Dask scheduler, e.g. tcp://host:8786")
    g.add_argument("--local-cluster", metavar="N", type=int, default=None,
                   help="start a Dask LocalCluster of N worker processes")
    g.add_argument("--workers", type=int, default=None, help="local worker processes (default: the CPUs)")
    g.add_argument("--serial", action="store_true", help="run in this process (debugging)")
    p.add_argument("--store", default=None, help="result store (JSON Lines); overrides the case's sweep.store")
    p.add_argument("--chunk-size", type=int, default=None, help="points per task (overrides the case)")
    p.add_argument("--csv", default=None, help="also write the table as CSV")
    p.add_argument("--status", action="store_true",
                   help="only report how many points the store holds (runs nothing)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the whole table as JSON")
    p.set_defaults(func=run)


def _summary(res) -> str:
    lines = [f"{res.analysis}: {res.n_points} points ({res.n_computed} computed, {res.n_resumed} from the store) "
             f"on {res.executor} in {res.elapsed_s:.1f} s"]
    if res.store:
        lines.append(f"  store: {res.store}")
    cols = [c for c in ("status", "error") if any(c in r for r in res.rows)]
    for c in cols:
        counts = Counter(r.get(c) for r in res.rows if c in r)
        lines.append(f"  {c}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    return "\n".join(lines)


def _write_csv(path, rows):
    import csv

    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def _status(args, case, store):
    from pathlib import Path

    from ...sweep.core import fingerprint
    from ...sweep.store import read_store

    if store is None:
        raise CliError("--status needs a store (sweep.store in the case file, or --store)")
    n = len(case.grid)
    done, same = 0, None
    if Path(store).exists():
        header, rows = read_store(store)
        same = header.get("fingerprint") == fingerprint(case.analysis, case.grid, case.seed, case.common_seeds and
                                                        list(case.common_seeds))
        done = len(rows) if same else 0
    info = {"store": str(store), "n_points": n, "n_done": done, "n_left": n - done,
            "belongs_to_this_case": same}
    note = ("no store yet" if same is None else "the store holds another sweep's results" if not same else
            f"{done}/{n} points done, {n - done} left")
    emit(args, info, f"{case.analysis}: {note}  ({store})")
    return 0


def run(args):
    from pathlib import Path

    from ...sweep import dask_executor
    from ...sweep.case import load_case
    from ..common import _same_file, output_file, reject_ignored

    if args.status:
        for opt, v in (("--csv", args.csv), ("--chunk-size", args.chunk_size), ("--dask", args.dask),
                       ("--local-cluster", args.local_cluster), ("--workers", args.workers),
                       ("--serial", args.serial or None)):
            reject_ignored(opt if v is True else f"{opt} {v}", v is not None,
                           "with --status (it only counts the points in the store and runs nothing)")
    if args.store and Path(args.case).is_file() and _same_file(Path(args.store), Path(args.case)):
        raise CliError(f"--store {args.store}: that is the case file (the results would be appended to it)")
    if args.csv:  # checked before the sweep runs (it is written at the end)
        args.csv = output_file("--csv", args.csv, inputs=[("case file", args.case), ("--store", args.store)],
                               figure=False, what="CSV file")
    case = load_case(args.case)
    store = args.store if args.store is not None else case.store
    if args.store is not None and not Path(args.store).expanduser().resolve().parent.is_dir():
        raise CliError(f"--store {args.store}: expected a path in an existing folder (there is no folder "
                       f"'{Path(args.store).expanduser().resolve().parent}'), as for --csv")
    if args.status:
        return _status(args, case, store)
    kw = {"store": store, "progress": False if (args.no_progress or args.json) else None}
    if args.chunk_size is not None:
        if args.chunk_size < 1:
            raise CliError(f"--chunk-size={args.chunk_size}: expected an integer >= 1")
        kw["chunk_size"] = args.chunk_size
    if args.local_cluster is not None and args.local_cluster < 1:
        raise CliError(f"--local-cluster={args.local_cluster}: expected a number of workers >= 1")
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers={args.workers}: expected a number of workers >= 1")
    if store is None:
        print("fluidq sweep: no store given (sweep.store or --store): an interruption loses the work done",
              file=sys.stderr)
    if args.dask or args.local_cluster:
        try:
            cm = dask_executor(args.dask, n_workers=args.local_cluster or 1)
        except ImportError as exc:
            raise CliError(str(exc)) from None
        from ...errors import ParameterError

        try:
            with cm as client:
                res = case.run(executor=client, **kw)
        except ParameterError as exc:  # the scheduler address (raised on connecting): name the option
            if getattr(exc, "name", None) == "address":
                raise CliError(f"--dask {args.dask}: {str(exc).split(': ', 1)[-1]}") from None
            raise
    elif args.serial:
        res = case.run(executor="serial", **kw)
    else:
        res = case.run(max_workers=args.workers, **kw)
    if args.csv:
        _write_csv(args.csv, res.table())
    emit(args, res, _summary(res))
