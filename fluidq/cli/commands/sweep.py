"""``fluidq sweep CASE.toml``: run a sweep case on local processes or a Dask cluster; resumable."""
from __future__ import annotations

import contextlib
import sys
from collections import Counter

from .. import CliError, emit


def _whole(text: str) -> int:
    """An integer option that also takes a whole number written as a float (``1e3``); bounds come later."""
    import argparse
    import math

    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not math.isfinite(v) or not v.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(v)


def register(sub):
    p = sub.add_parser("sweep", help="run a sweep case (loads x budgets x policies x seeds); resumable",
                       description="Run the analysis of a sweep case file over its grid, in chunks, on local "
                       "processes (default), a Dask local cluster or a Dask scheduler. Finished chunks are "
                       "appended to the store; run the same command again to resume an interrupted sweep.")
    p.add_argument("case", help="sweep case TOML file ([sweep], [fixed], [grid]; see the docs)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--dask", metavar="ADDRESS", default=None, help="a running Dask scheduler, e.g. tcp://host:8786")
    g.add_argument("--local-cluster", metavar="N", type=_whole, default=None,
                   help="start a Dask LocalCluster of N worker processes")
    g.add_argument("--workers", type=_whole, default=None, help="local worker processes (default: the CPUs)")
    g.add_argument("--serial", action="store_true", help="run in this process (debugging)")
    p.add_argument("--store", default=None, help="result store (JSON Lines); overrides the case's sweep.store")
    p.add_argument("--chunk-size", type=_whole, default=None, help="points per task (overrides the case)")
    p.add_argument("--csv", default=None, help="also write the table as CSV")
    p.add_argument("--status", action="store_true",
                   help="only report how many points the store holds (runs nothing)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the whole table as JSON")
    p.set_defaults(func=run)


def _shown(v) -> str:
    """A value for the human summary: an undefined or infinite number (NaN, inf, None) prints as a dash."""
    import math

    if v is None or (isinstance(v, float) and not math.isfinite(v)) or \
            (isinstance(v, str) and v.strip().lower() in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity")):
        return "\u2013"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def _summary(res) -> str:
    where = (f"on {res.executor}" if res.n_computed or res.executor != "none" else
             "nothing left to compute")  # (every point came from the store: no executor ran)
    lines = [f"{res.analysis}: {res.n_points} points ({res.n_computed} computed, {res.n_resumed} from the store) "
             f"{where} in {_shown(res.elapsed_s)} s"]
    if res.store:
        lines.append(f"  store: {res.store}")
    cols = [c for c in ("status", "error") if any(c in r for r in res.rows)]
    for c in cols:
        counts = Counter(r.get(c) for r in res.rows if c in r)
        lines.append(f"  {c}: " + ", ".join(f"{_shown(k)} {v}" for k, v in counts.most_common()))
    return "\n".join(lines)


def _write_csv(path, rows):
    """Write the table, replacing an existing non-empty file only when its header line is the one this table
    has (the same columns, in order: a table this sweep wrote before); else a ``DataError``, the file kept."""
    import csv
    import io
    import os
    import stat

    from ...errors import DataError
    from ..._io import write_output

    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > 0:
        try:
            cells = _header_cells(path)
        except OSError:
            cells = None
        if cells != keys:
            raise DataError(f"sweep table {path}: an existing file whose first line ({_cells_text(cells)}) is not "
                            f"the header of this sweep's table ({_cells_text(keys)}), so it was not replaced; "
                            "remove it or give a new name")
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
    return write_output(path, buf.getvalue(), what="sweep table")


def _header_cells(path) -> list | None:
    """The first line of an existing file read as CSV cells; ``None`` when it is no whole line of UTF-8 text
    within its first 64 KiB (``OSError``: the file cannot be read)."""
    import csv

    from ..common import file_head

    head = file_head(path, 1 << 16)
    end = head.find(b"\n")
    if end < 0:
        return None
    try:
        line = head[:end].decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        return None
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return None


def _cells_text(cells) -> str:
    if cells is None:
        return "no CSV header"
    text = ",".join(cells)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _is_sweep_table(path) -> bool:
    """Whether an existing ``--csv`` file may be a table a sweep wrote (a whole header line of distinct names
    whose first is ``index``, the table's first column): a user's own file given by mistake is not replaced.
    Checked again once the case is read (:func:`_check_table_of_this_case`: the point's columns) and when the
    table is written (:func:`_write_csv`: the whole header line, which only the sweep's results give)."""
    cells = _header_cells(path)
    return bool(cells) and len(cells) >= 2 and cells[0] == "index" and all(cells) and len(set(cells)) == len(cells)


def _point_columns(grid) -> list:
    """The columns of a sweep table that the grid gives (after ``index``): the points' keys, in table order."""
    keys: list = []
    points = [grid[0]] if grid.axes is not None else [{**grid.fixed, **p} for p in grid.points]
    for p in points:
        keys += [k for k in p if k not in keys]
    return keys


def _check_table_of_this_case(option: str, path, grid) -> None:
    """Before the run: an existing non-empty ``--csv`` file must be a table of this case's points (its header
    starts with ``index`` and the points' columns), else it is refused, left as it was."""
    import os

    try:
        if os.lstat(path).st_size == 0:
            return
        cells = _header_cells(path)
    except OSError:
        return  # (gone since output_file's check: nothing to keep)
    want = ["index", *_point_columns(grid)]
    if cells is None or cells[:len(want)] != want:
        raise CliError(f"{option} {path}: an existing file whose first line ({_cells_text(cells)}) is not the header "
                       f"of this sweep's table (it starts {_cells_text(want)}), so it is not replaced; remove it or "
                       "give a new name")


def _not_a_table_kind(path) -> str:
    """What the refusal of an existing ``--csv`` file that is no sweep table says: the file's own first line
    (its start) beside what a sweep table's starts with, so that it does not read as if the user's file
    started with ``index,``."""
    from ..common import file_head

    try:
        head = file_head(path, 200)
    except OSError:
        return "a sweep table (a sweep table's header starts with 'index,')"
    first = head.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", errors="replace")
    shown = repr(first[:40] + ("..." if len(first) > 40 else ""))
    return f"a sweep table: its first line is {shown}, a sweep table's header starts with 'index,'"


def _workers(option: str, value):
    """A worker count within what one machine can start (``None`` passes)."""
    from ...sweep.core import _WORKERS_WHY, MAX_WORKERS

    if value is not None and not 1 <= value <= MAX_WORKERS:
        if value < 1:
            raise CliError(f"{option} {value}: expected a number of workers >= 1")
        raise CliError(f"{option} {value:,}: expected at most {MAX_WORKERS} workers ({_WORKERS_WHY})")


def _store_warning_line(message, category, filename, lineno, file=None, line=None):
    """Store repairs (a damaged or torn line) as one ``fluidq sweep: warning:`` line each, on stderr."""
    print(f"fluidq sweep: warning: {message}", file=sys.stderr)


def _status(args, case, store):
    from pathlib import Path

    from ...sweep.core import fingerprint, trace_hashes
    from ...sweep.store import changed_traces, read_store

    if store is None:
        raise CliError("--status needs a store (sweep.store in the case file, or --store)")
    n = len(case.grid)
    done, same, changed = 0, None, []
    if Path(store).exists():
        header, rows = read_store(store)
        same = header.get("fingerprint") == fingerprint(case.analysis, case.grid, case.seed, case.common_seeds and
                                                        list(case.common_seeds))
        if same and header.get("trace_sha256") is not None:  # (a store from before trace hashes: unchecked, as a
            changed = changed_traces(header, trace_hashes(case.grid))  # run says; the traces are not even read)
        done = len(rows) if same and not changed else 0
    info = {"store": str(store), "n_points": n, "n_done": done, "n_left": n - done,
            "belongs_to_this_case": same, **({"traces_changed": changed} if changed else {})}
    note = ("no store yet" if same is None else "the store holds another sweep's results" if not same else
            f"the trace file {changed[0]} has changed since the store was written: a run refuses the store"
            if changed else f"{done}/{n} points done, {n - done} left")
    emit(args, info, f"{case.analysis}: {note}  ({store})")
    return 0


def run(args):
    from pathlib import Path

    from ...sweep.case import load_case
    from ..common import _same_file, output_file, reject_ignored

    if args.status:
        for opt, v in (("--csv", args.csv), ("--chunk-size", args.chunk_size), ("--dask", args.dask),
                       ("--local-cluster", args.local_cluster), ("--workers", args.workers),
                       ("--serial", args.serial or None)):
            reject_ignored(opt if v is True else f"{opt} {v}", v is not None,
                           "with --status (it only counts the points in the store and runs nothing)")
    _workers("--local-cluster", args.local_cluster)
    _workers("--workers", args.workers)
    if args.chunk_size is not None and args.chunk_size < 1:
        raise CliError(f"--chunk-size {args.chunk_size}: expected an integer >= 1")
    if args.store is not None and not str(args.store).strip():
        raise CliError("--store '': expected the path of a result store")
    if args.store is not None:
        try:
            parent = Path(args.store).expanduser().resolve().parent
        except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
            raise CliError(f"--store {args.store}: cannot resolve the path ({exc})") from None
        if not parent.is_dir():
            raise CliError(f"--store {args.store}: expected a path in an existing folder (there is no folder "
                           f"'{parent}'), as for --csv")
    if args.store and Path(args.case).is_file() and _same_file(Path(args.store), Path(args.case)):
        raise CliError(f"--store {args.store}: that is the case file (the results would be appended to it)")
    if args.csv is not None:  # checked before the sweep runs (it is written at the end)
        args.csv = output_file("--csv", args.csv, inputs=[("case file", args.case), ("--store", args.store)],
                               figure=False, what="CSV file",
                               replaceable=(_is_sweep_table, _not_a_table_kind(args.csv)))
    case = load_case(args.case)
    if args.csv:
        _check_table_of_this_case("--csv", args.csv, case.grid)
    store = args.store if args.store is not None else case.store
    if args.csv and store is not None and _same_file(Path(args.csv), Path(store)):
        raise CliError(f"--csv {args.csv}: that is the result store (writing the CSV would overwrite it)")
    import warnings

    from ...sweep.store import StoreError, StoreWarning

    with warnings.catch_warnings():  # restores the filters and showwarning afterwards
        warnings.simplefilter("always", StoreWarning)
        shown = warnings.showwarning

        def show(message, category, *rest, **kw):
            (_store_warning_line if issubclass(category, StoreWarning) else shown)(message, category, *rest, **kw)

        warnings.showwarning = show
        try:
            with _one_interrupt():
                return _run(args, case, store)
        except StoreError as exc:  # name the store as the user gave it: the flag, or the case file's key
            if store is None or _resolved(exc.path) != _resolved(store):  # (about another path: as it is)
                raise
            where = f"--store {args.store}" if args.store is not None else f"sweep.store = {store!r} ({args.case})"
            raise CliError(f"{where}: {exc.reason}") from None


@contextlib.contextmanager
def _one_interrupt(wind_down_s: float = 10.0):
    """Ctrl-C stops the sweep once, quietly: the first SIGINT raises ``KeyboardInterrupt`` (the sweep stores
    what finished and says how to resume); a second one while it stops -- a terminal's repeated Ctrl-C, or
    ``timeout -s INT``, which signals the command and then its whole process group -- is ignored, and the
    pool's threads and processes are joined here, before the handler is restored, so that the interpreter's
    exit has nothing left to wait on (a SIGINT there printed "Exception ignored in: <module 'threading'>").
    A process forked from this one (a pool worker, before its initializer ignores SIGINT itself) ignores it.
    Off the main thread (no signal handler can be set there) nothing changes.  A SIGTERM (``cli.Terminated``,
    a ``KeyboardInterrupt``) is wound down the same way: without the join, CPython 3.11's exit hook for process
    pools could write to the manager thread's wake-up pipe while that thread closed it ("Exception ignored ...
    OSError: [Errno 9] Bad file descriptor", seen once in about ten CI runs)."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    me = os.getpid()
    state = {"hit": False}

    def on_sigint(signum, frame):
        if os.getpid() != me or state["hit"]:
            return  # a worker (the sweep stops it), or a second Ctrl-C while the first is handled
        state["hit"] = True
        raise KeyboardInterrupt

    before = set(threading.enumerate())
    old = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (cli.Terminated): the same wind-down
        state["hit"] = True
        raise
    finally:
        if state["hit"]:
            _wind_down(before, wind_down_s)
        signal.signal(signal.SIGINT, old)


def _wind_down(before, timeout_s: float) -> None:
    """Join the threads the sweep started (the process pool's manager) and reap its worker processes."""
    import multiprocessing
    import threading
    import time

    deadline = time.monotonic() + timeout_s
    for t in threading.enumerate():
        if t in before or t is threading.current_thread() or t.daemon:
            continue
        t.join(max(0.0, deadline - time.monotonic()))
    multiprocessing.active_children()  # reaps the terminated workers


def _resolved(path):
    from pathlib import Path

    return Path(str(path)).expanduser().resolve()


def _run(args, case, store):
    from ...sweep import dask_executor

    if args.status:
        return _status(args, case, store)
    kw = {"store": store, "progress": False if (args.no_progress or args.json) else None}
    if args.chunk_size is not None:
        kw["chunk_size"] = args.chunk_size
    def no_store_note():  # said once the run starts, to a person at a terminal (a log keeps one error line)
        if store is None and sys.stderr.isatty():
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
                no_store_note()
                res = case.run(executor=client, **kw)
        except ParameterError as exc:  # the scheduler address (raised on connecting): name the option
            if getattr(exc, "name", None) == "address":
                raise CliError(f"--dask {args.dask}: {str(exc).split(': ', 1)[-1]}") from None
            raise
    elif args.serial:
        no_store_note()
        res = case.run(executor="serial", **kw)
    else:
        no_store_note()
        res = case.run(max_workers=args.workers, **kw)
    if args.csv:
        from ..common import write_late

        write_late(args, "--csv", args.csv, lambda: _write_csv(args.csv, res.table()))
    emit(args, res, _summary(res))
    return 0
