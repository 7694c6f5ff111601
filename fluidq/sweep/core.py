"""The sweep runner: chunks, executors, seeds, the store, the progress bar."""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validate import integer
from ..errors import FluidqError, ParameterError, ParameterTypeError, interrupt_in
from ..results import Result, plain
from .analyses import ANALYSES, check_grid_values, resolve_analysis
from .grid import Grid, as_grid
from .progress import ProgressBar
from .store import FORMAT, ResultStore

__all__ = ["sweep", "SweepResult", "SweepError", "point_rng"]


class SweepError(FluidqError, RuntimeError):
    """A sweep stopped before all points were computed (finished chunks are in the store)."""


def point_rng(seed: int, key: int) -> np.random.Generator:
    """The random generator of the point with spawn key ``key``: child ``key`` of ``SeedSequence(seed)``.

    Identical to ``np.random.SeedSequence(seed).spawn(key + 1)[key]``, but computed directly, so a
    point's stream depends only on the seed and its index -- not on chunking, order or executor.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))


def _normalise(value) -> dict:
    """A point's output as a dict of JSON values."""
    if hasattr(value, "to_dict") and callable(value.to_dict):
        value = value.to_dict()
    value = plain(value)
    if not isinstance(value, dict):
        value = {"value": value}
    # one JSON round trip: rows computed now and rows read back from a store compare equal
    return json.loads(json.dumps(value, allow_nan=False))


def _run_chunk(target, seed, tasks, errors):
    """Worker side: ``tasks`` is a list of ``(index, seed_key, point)``; returns ``(indices, rows)``."""
    fn = resolve_analysis(target) if isinstance(target, str) else target
    indices, rows = [], []
    for i, key, point in tasks:
        try:
            out = _normalise(fn(dict(point), point_rng(seed, key)))
        except Exception as exc:  # noqa: BLE001 - reported per point or re-raised below
            stop = interrupt_in(exc)  # Ctrl-C inside compiled code (a SystemError raised from it): the sweep
            if stop is not None:  # stops as interrupted, no point is blamed
                raise stop from None
            if errors == "raise":
                raise SweepError(f"point {i} {point}: {type(exc).__name__}: {exc}") from exc
            out = {"error": f"{type(exc).__name__}: {exc}"}
        clash = sorted((set(out) & set(point)) | ({"index"} & set(out)))
        if clash:
            raise SweepError(f"point {i}: the function returned key(s) {clash} that are also point "
                             "coordinates; rename them")
        indices.append(i)
        rows.append({"index": i, **point, **out})
    return indices, rows


@dataclass(frozen=True, kw_only=True)
class SweepResult(Result):
    """The table of a sweep.

    Attributes
    ----------
    rows : tuple of dict
        One row per point in index order: ``index``, the point's coordinates, the outputs.
    n_points, n_computed, n_resumed : int
        Points in the grid; computed by this call; read back from the store.
    analysis : str
        The analysis name, or ``module:qualname`` of the function.
    seed : int
        Root of the ``SeedSequence`` the point streams were spawned from.
    store : str or None
        The store file.
    executor : str
        What ran the chunks.
    elapsed_s : float
        Wall time of this call.
    """

    rows: tuple
    n_points: int
    n_computed: int
    n_resumed: int
    analysis: str
    seed: int
    store: str | None
    executor: str
    elapsed_s: float
    grid: Grid = field(repr=False)

    @property
    def inputs(self) -> dict:
        """The analysis swept, its root seed, the executor and the grid's size."""
        return {"analysis": self.analysis, "seed": self.seed, "executor": self.executor, "n_points": self.n_points}

    def __len__(self):
        return len(self.rows)

    def table(self) -> list[dict]:
        """The rows as a list of dicts (a copy)."""
        return [dict(r) for r in self.rows]

    def column(self, name: str) -> list:
        """One column (``None`` where a row lacks it)."""
        return [r.get(name) for r in self.rows]

    def to_frame(self):
        """A ``pandas.DataFrame`` of the rows (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("SweepResult.to_frame() needs pandas: pip install pandas") from exc
        return pd.DataFrame(self.table()).set_index("index")

    def to_dict(self) -> dict:
        return {"analysis": self.analysis, "seed": self.seed, "n_points": self.n_points,
                "n_computed": self.n_computed, "n_resumed": self.n_resumed, "store": self.store,
                "executor": self.executor, "elapsed_s": self.elapsed_s, "grid": self.grid.to_dict(),
                "rows": self.table()}

    def plot(self, x: str, y: str, *, hue: str | None = None, ax=None, path=None, **kw):
        """Line plot of column ``y`` against ``x``, one line per value of ``hue`` (means over the rest)."""
        from ..plotting.sweep import plot_sweep

        return plot_sweep(self, x=x, y=y, hue=hue, ax=ax, path=path, **kw)


def _target_name(fn) -> str:
    if isinstance(fn, str):
        resolve_analysis(fn)
        return fn
    if not callable(fn):
        raise ParameterTypeError(f"fn={fn!r}: expected an analysis name ('capacity', 'check', 'region', 'simulate') "
                                 "or a function (point, rng) -> dict")
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"


def fingerprint(name: str, grid: Grid, seed: int, common_seeds) -> str:
    blob = json.dumps({"format": FORMAT, "analysis": name, "grid": grid.to_dict(), "seed": seed,
                       "common_seeds": list(common_seeds) if common_seeds is not None else None},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _version() -> str:
    from .._version import __version__

    return __version__


def trace_hashes(grid: Grid) -> dict:
    """``{path: sha256 hex}`` of every trace file the grid names (``trace``, fixed, an axis or explicit points),
    read now: the store's header keeps them, so that a resumed sweep whose trace file was edited since is
    refused rather than mixed with results of the old trace (:meth:`ResultStore.open`).  An embedded trace
    name, or a path that is no regular file, is skipped (the point's own checks say so); a gzipped trace read
    through ``path.gz`` is hashed there."""
    if grid.axes is not None:
        values = [grid.fixed.get("trace"), *grid.axes.get("trace", ())]
    else:
        values = [grid.fixed.get("trace"), *(p.get("trace") for p in grid.points)]
    out = {}
    for v in dict.fromkeys(v for v in values if isinstance(v, str) and v.strip() and "\x00" not in v):
        for cand in (v, v + ".gz"):
            digest = _sha256_of_file(cand)
            if digest is not None:
                out[v] = digest
                break
    return out


def _sha256_of_file(path: str) -> str | None:
    """sha256 of a regular file's bytes; ``None`` when ``path`` is no regular file that can be read."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.sha256()
        while True:
            b = os.read(fd, 1 << 22)
            if not b:
                return h.hexdigest()
            h.update(b)
    except OSError:
        return None
    finally:
        os.close(fd)


#: the most local worker processes (or Dask LocalCluster workers) a sweep starts
MAX_WORKERS = 1024
_WORKERS_WHY = ("one machine runs at most a few hundred useful worker processes; a larger sweep needs a Dask "
                "cluster (--dask / executor=distributed.Client), not more local processes")


def _default_workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        n = os.cpu_count() or 1
    return max(1, n)


class _Serial(cf.Executor):
    """Runs each task in the calling process when submitted (debugging, tiny sweeps)."""

    def submit(self, fn, /, *args, **kwargs):
        f = cf.Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            f.set_exception(exc)
        return f


#: how long a sweep waits for a Dask scheduler with no worker to get one before it says so (seconds)
DASK_WORKER_WAIT_S = 60.0


def wait_for_workers(client, timeout_s: float, name: str, value) -> None:
    """A ``distributed.Client`` whose scheduler has no worker yet: wait up to ``timeout_s`` for one to join,
    then a ``ParameterError`` naming ``name`` (``address``, ``executor``; the CLI says ``--dask``) -- tasks
    submitted to a cluster without workers wait for ever, silently.  A client that cannot say (no
    ``nthreads``) passes."""
    try:
        n = client.nthreads()
    except Exception:  # noqa: BLE001 - a cluster that cannot answer: submitting will say
        return
    if n:
        return
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except TimeoutError:  # (distributed's WorkerStartTimeoutError; asyncio's on Python 3.11+)
        raise ParameterError(name, value, f"a Dask scheduler with workers: none joined within {timeout_s:g} s, "
                             "and a sweep submitted there would wait for ever (start workers with `dask worker "
                             "ADDRESS`, or a local cluster: fluidq.sweep.dask_executor(n_workers=...); CLI: "
                             "--local-cluster N)") from None


def _cluster_slots(executor) -> int | None:
    """Worker threads of a ``distributed.Client``'s cluster (None for anything else)."""
    if hasattr(executor, "get_executor") and hasattr(executor, "nthreads"):
        try:
            return int(sum(executor.nthreads().values())) or None
        except Exception:  # noqa: BLE001 - a cluster that cannot answer: fall back to the default
            return None
    return None


def _watch_parent(every_s: float = 0.5) -> None:
    """Pool worker initializer: exit when the process that started this worker is gone.

    A pool's workers wait on a pipe whose write end they inherited, so a sweep killed from outside (SIGTERM
    from a job scheduler or ``timeout``, SIGKILL) left them alive and idle for ever; a daemon thread polling
    the parent id ends them within ``every_s`` (the store keeps every finished chunk: see
    :mod:`fluidq.sweep.store`).  The parent is read here, in the worker: under ``fork`` and ``spawn`` it is
    the sweep, under ``forkserver`` (Python 3.14's default on Linux) the fork server, which exits with the
    sweep -- the sweep's own id, passed in, killed every ``forkserver`` worker at once.

    A worker ignores SIGINT: a Ctrl-C at a terminal reaches the whole process group, and the sweep (the
    parent) answers it by terminating its workers; a worker of its own would print a traceback each."""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(1)

    threading.Thread(target=watch, name="fluidq-sweep-parent-watch", daemon=True).start()


def _worker_init(notes_dir: str) -> None:
    """Pool worker initializer: :func:`_watch_parent`, and the folder in which the sweep's workers agree on who says
    a kernel's compile note (:data:`fluidq.kernel.run.NOTE_SHARED_ENV`: once per sweep, not once per worker)."""
    from ..kernel.run import NOTE_SHARED_ENV

    os.environ[NOTE_SHARED_ENV] = notes_dir
    _watch_parent()


def _make_executor(executor, max_workers):
    """``(executor, owned, label, factory)``; ``factory`` rebuilds an owned pool after a crash."""
    if executor is None or executor == "processes":
        import tempfile

        n = max_workers or _default_workers()
        # the workers' numba "compiling ..." notes: said by the first worker only (removed with the pool's factory)
        notes = tempfile.TemporaryDirectory(prefix="fluidq-sweep-notes-")

        def factory():  # workers that end with the sweep, however it ends
            return cf.ProcessPoolExecutor(max_workers=n, initializer=_worker_init, initargs=(notes.name,))

        return factory(), True, f"processes({n})", factory
    if executor == "serial":
        return _Serial(), True, "serial", _Serial
    if executor == "threads":
        n = max_workers or _default_workers()
        return cf.ThreadPoolExecutor(max_workers=n), True, f"threads({n})", None
    if isinstance(executor, cf.Executor):
        return executor, False, type(executor).__name__, None
    if hasattr(executor, "get_executor") and hasattr(executor, "scheduler_info"):  # a distributed.Client
        wait_for_workers(executor, DASK_WORKER_WAIT_S, "executor", executor)
        return executor.get_executor(), False, f"dask({getattr(executor.scheduler, 'address', '?')})", None
    raise ParameterTypeError(f"executor={executor!r}: expected None/'processes', 'threads', 'serial', a "
                             "concurrent.futures.Executor or a distributed.Client")


def sweep(fn, grid, *, executor=None, store=None, chunk_size: int = 200, seed: int = 0,
          common_seeds=None, max_workers: int | None = None, max_in_flight: int | None = None,
          errors: str = "raise", retries: int = 2, progress=None) -> SweepResult:
    """Evaluate ``fn`` at every point of ``grid``, in chunks, on any executor; resumable.

    Parameters
    ----------
    fn : str or callable
        A named analysis (``"capacity"``, ``"check"``, ``"region"``, ``"simulate"``: see
        :mod:`fluidq.sweep.analyses`) or a function ``fn(point: dict, rng: numpy.random.Generator)``
        returning a dict of JSON values (or a result object with ``to_dict()``, or a scalar).  With
        processes it must be importable (defined at module level); Dask also ships closures.
    grid : Grid, dict or list of dict
        The points: a :class:`Grid`, a dict of axes (Cartesian product) or a list of point dicts.
    executor : None, str, concurrent.futures.Executor or distributed.Client
        ``None``/``"processes"``: a local process pool created and shut down here (``max_workers``,
        default the CPUs available); ``"threads"``; ``"serial"`` (in this process); any
        ``concurrent.futures.Executor`` (left running); a ``distributed.Client`` (its
        ``get_executor()``; Dask reschedules the tasks of a worker that dies).
    store : path, optional
        A JSON Lines file the finished chunks are appended to.  If it already holds chunks of
        this sweep (same analysis, grid, seed) they are not computed again: an interrupted sweep
        resumes.  A store of another sweep is an error.  A function is identified by its
        ``module:qualname``, not its code: after changing what it computes, use a new store.
    chunk_size : int
        Points per task (hundreds amortise the task overhead of a cluster).
    seed : int
        Root of the ``numpy.random.SeedSequence``; point ``i`` gets child ``i``
        (:func:`point_rng`), so results do not depend on chunking or executor.
    common_seeds : list of str, optional
        Axes that alone determine a point's stream: points agreeing on them share it (common
        random numbers, e.g. ``["load", "seed"]`` compares policies on the same arrivals).
    max_in_flight : int, optional
        Chunks submitted but not finished (default: twice the workers -- for a Dask client, twice
        its cluster's worker threads -- and at least 4).
    errors : {"raise", "record"}
        On an exception in ``fn``: stop the sweep (finished chunks stay stored), or record
        ``{"error": "..."}`` in that point's row and go on.
    retries : int
        Times a local process pool broken by a killed worker is rebuilt and its lost chunks
        resubmitted.
    progress : bool, optional
        Progress bar on stderr (default: only when stderr is a terminal).

    Returns
    -------
    SweepResult

    Raises
    ------
    SweepError
        When the sweep stops early; the message says how many points are stored and how to resume.

    Examples
    --------
    >>> from fluidq.sweep import sweep
    >>> res = sweep("check", {"load": [0.5, 1.2], "policy": ["sarathi"]}, executor="serial")
    >>> [r["status"] for r in res.rows]
    ['stable', 'unstable']
    """
    t0 = time.monotonic()
    grid = as_grid(grid)
    name = _target_name(fn)
    if isinstance(fn, str) and fn in ANALYSES:  # built-in analysis: every value checked before any point runs
        check_grid_values(grid, fn)
    chunk_size = integer("chunk_size", chunk_size, minimum=1)
    seed = integer("seed", seed, minimum=0)
    retries = integer("retries", retries, minimum=0)
    if errors not in ("raise", "record"):
        raise ParameterError("errors", errors, "'raise' or 'record'")
    if common_seeds is not None:
        common_seeds = list(common_seeds)
        if grid.axes is None:
            raise ParameterError("common_seeds", common_seeds, "None for a grid of explicit points")
        for a in common_seeds:
            if a not in grid.axes:
                raise ParameterError("common_seeds", common_seeds, f"axis names among {list(grid.axes)}")
    if max_workers is not None:
        max_workers = integer("max_workers", max_workers, minimum=1, maximum=MAX_WORKERS, why=_WORKERS_WHY)
    if max_in_flight is None:
        workers = _cluster_slots(executor) or max_workers or _default_workers()
        max_in_flight = max(4, 2 * workers)
    max_in_flight = integer("max_in_flight", max_in_flight, minimum=1)
    n = len(grid)
    header = {"format": FORMAT, "fingerprint": fingerprint(name, grid, seed, common_seeds), "analysis": name,
              "n_points": n, "seed": seed, "common_seeds": common_seeds, "grid": grid.to_dict(),
              "created_unix": time.time(), "fluidq_version": _version(), "trace_sha256": trace_hashes(grid)}
    st = ResultStore.open(store, header) if store is not None else None  # every argument checked first
    rows: dict = dict(st.rows) if st is not None else {}
    n_resumed = len(rows)
    todo = [i for i in range(n) if i not in rows]
    chunks = [todo[k:k + chunk_size] for k in range(0, len(todo), chunk_size)]
    target = fn
    label = "none"
    if chunks:
        try:
            ex, owned, label, factory = _make_executor(executor, max_workers)
        except BaseException:
            if st is not None:
                st.close()
            raise
    bar = ProgressBar(n, n_resumed, label=f"sweep {name}", enabled=progress)
    try:
        if chunks:
            _drive(ex, target, seed, grid, common_seeds, chunks, errors, max_in_flight, rows, st, bar,
                   factory if owned else None, retries, owned)
    except KeyboardInterrupt:
        bar.close()
        print(f"sweep interrupted: {len(rows)}/{n} points done"
              + (f", stored in {st.path}; run again with the same store to resume" if st else ""),
              file=sys.stderr)
        raise
    except SweepError as exc:
        if st is None or "run again" in str(exc):
            raise
        raise SweepError(f"{exc}; {len(rows)}/{n} points are stored in {st.path}: run again to resume") from exc
    except Exception as exc:
        raise SweepError(f"sweep stopped after {len(rows)}/{n} points ({type(exc).__name__}: {exc})"
                         + (f"; finished chunks are in {st.path}: run again to resume" if st else "")) from exc
    finally:
        if st is not None:
            st.close()
    bar.close()
    return SweepResult(rows=tuple(rows[i] for i in range(n)), n_points=n, n_computed=n - n_resumed,
                       n_resumed=n_resumed, analysis=name, seed=seed,
                       store=str(st.path) if st is not None else None, executor=label,
                       elapsed_s=time.monotonic() - t0, grid=grid)


def _drive(ex, target, seed, grid, common, chunks, errors, max_in_flight, rows, st, bar, factory, retries, owned):
    """Submit chunks with a bounded window, store each as it finishes, rebuild a broken local pool."""
    pending = list(range(len(chunks)))[::-1]  # stack of chunk numbers still to submit
    inflight: dict = {}

    def tasks(c):
        return [(i, grid.seed_key(i, common), grid[i]) for i in chunks[c]]

    try:
        while pending or inflight:
            broken = []
            while pending and len(inflight) < max_in_flight:
                c = pending.pop()
                try:
                    inflight[ex.submit(_run_chunk, target, seed, tasks(c), errors)] = c
                except cf.BrokenExecutor:  # the pool broke since the last round
                    broken.append(c)
                    break
            done = cf.wait(list(inflight), return_when=cf.FIRST_COMPLETED)[0] if inflight and not broken else ()
            for f in sorted(done, key=inflight.__getitem__):  # store finished chunks in chunk order
                c = inflight.pop(f)
                try:
                    idx, rws = f.result()
                except cf.BrokenExecutor:
                    broken.append(c)
                    continue
                if st is not None:
                    st.append_chunk(idx, rws)
                for i, r in zip(idx, rws):
                    rows[i] = r
                bar.update(len(idx))
            if broken:
                if factory is None or retries <= 0:
                    raise SweepError(f"a worker died; {len(rows)} points done"
                                     + (f", stored in {st.path}: run again to resume" if st else ""))
                retries -= 1
                # every future of a broken pool fails: collect them all and resubmit on a new pool
                for f in list(inflight):
                    c = inflight.pop(f)
                    if f.done() and f.exception() is None:
                        idx, rws = f.result()
                        if st is not None:
                            st.append_chunk(idx, rws)
                        for i, r in zip(idx, rws):
                            rows[i] = r
                        bar.update(len(idx))
                    else:
                        broken.append(c)
                ex.shutdown(wait=False, cancel_futures=True)
                ex = factory()
                pending.extend(sorted(broken, reverse=True))
    except BaseException as exc:
        # keep what already finished (e.g. Ctrl-C while results were waiting to be collected)
        for f, c in list(inflight.items()):
            if f.done() and not f.cancelled() and f.exception() is None:
                idx, rws = f.result()
                if st is not None:
                    st.append_chunk(idx, rws)
                for i, r in zip(idx, rws):
                    rows[i] = r
                del inflight[f]
        if owned and isinstance(exc, KeyboardInterrupt):
            _terminate_workers(ex)  # Ctrl-C: exiting must not wait on a worker process mid-chunk
        raise
    finally:
        for f in inflight:
            f.cancel()
        if owned:
            ex.shutdown(wait=not inflight, cancel_futures=True)


def _terminate_workers(ex) -> None:
    """Stop the processes of a process pool at once (after Ctrl-C: their chunks are lost anyway, and the
    interpreter's exit would otherwise join them); other executors are left to their shutdown."""
    for p in list((getattr(ex, "_processes", None) or {}).values()):
        try:
            p.terminate()
        except (OSError, ValueError, AttributeError):  # already gone
            pass
