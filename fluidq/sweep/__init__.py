"""Sweeps: one analysis over a grid of points (loads x budgets x policies x seeds), at scale.

``sweep(fn, grid, executor=None, store=PATH)`` evaluates a named analysis (``"capacity"``,
``"check"``, ``"region"``, ``"simulate"``) or your own ``fn(point, rng)`` at every point of the grid:

* chunked tasks (hundreds of points each) on any ``concurrent.futures.Executor`` -- local
  processes by default, a Dask cluster (``distributed.Client``) to outgrow one machine;
* one ``numpy.random.SeedSequence``: point ``i`` draws from child ``i``, so results do not depend on
  the chunking or the executor;
* an append-only JSON Lines store written chunk by chunk, so an interrupted sweep (Ctrl-C, a killed
  process or worker) resumes without losing or repeating finished points;
* a progress bar on stderr and the result as a table (:class:`SweepResult`, ``to_frame()``).

The command line face is ``fluidq sweep CASE.toml`` (:mod:`fluidq.sweep.case`).
"""
from __future__ import annotations

from .analyses import ANALYSES
from .core import SweepError, SweepResult, point_rng, sweep
from .grid import Grid
from .store import StoreMismatchError, StoreWarning, read_store

__all__ = [
    "ANALYSES",
    "Grid",
    "StoreMismatchError",
    "StoreWarning",
    "SweepError",
    "SweepResult",
    "dask_executor",
    "point_rng",
    "read_store",
    "sweep",
]


DASK_CONNECT_S = 10.0  # the whole connection to a scheduler address: TCP connect and Dask's handshake


def _connect(Client, address, wait_s):
    """``Client(address)`` with the whole connection bounded by ``wait_s``: distributed's ``timeout`` bounds
    the TCP connect but not the handshake's read, which waits for ever on a listener that is no Dask
    scheduler.  The connection runs in a daemon thread; one that answers after the deadline is closed."""
    import threading

    box: dict = {}
    lock = threading.Lock()

    def go():
        try:
            c = Client(address, timeout=f"{wait_s:g}s")
        except BaseException as exc:  # handed to the caller
            box["exc"] = exc
            return
        with lock:
            if box.get("late"):
                c.close()
            else:
                box["client"] = c

    th = threading.Thread(target=go, name="fluidq-dask-connect", daemon=True)
    th.start()
    th.join(wait_s + 1.0)
    with lock:
        if "client" in box:
            return box["client"]
        if "exc" not in box:
            box["late"] = True
            raise TimeoutError(f"no Dask handshake within {wait_s:g} s")
    raise box["exc"]


def dask_executor(address: str | None = None, *, n_workers: int = 2, threads_per_worker: int = 1,
                  processes: bool = True, worker_wait_s: float | None = None, **cluster_kw):
    """A context manager yielding a ``distributed.Client`` to pass as ``sweep(..., executor=client)``.

    ``address`` (``"tcp://host:8786"``) connects to a running scheduler; without it a
    ``distributed.LocalCluster`` of ``n_workers`` is started and closed on exit.  A scheduler that has no
    worker is given ``worker_wait_s`` seconds (default :data:`fluidq.sweep.core.DASK_WORKER_WAIT_S`, 60) for
    one to join, then refused with a ``ParameterError`` naming ``address`` (a sweep submitted there would
    wait for ever).

    Examples
    --------
    >>> from fluidq.sweep import dask_executor, sweep          # doctest: +SKIP
    >>> with dask_executor(n_workers=2) as client:             # doctest: +SKIP
    ...     res = sweep("check", {"load": [0.5, 0.9]}, executor=client)
    """
    import contextlib

    from .._validate import integer
    from .core import _WORKERS_WHY, MAX_WORKERS

    n_workers = integer("n_workers", n_workers, minimum=1, maximum=MAX_WORKERS, why=_WORKERS_WHY)
    if worker_wait_s is not None:
        from .._validate import real

        worker_wait_s = real("worker_wait_s", worker_wait_s, positive=True)
    threads_per_worker = integer("threads_per_worker", threads_per_worker, minimum=1, maximum=MAX_WORKERS,
                                 why="more threads per worker than that is not a useful sweep configuration")
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise ImportError("the Dask executor needs Dask's 'distributed' package: pip install distributed, or from "
                          "a fluidq checkout pip install '.[dask]' (fluidq is not on PyPI)") from exc

    @contextlib.contextmanager
    def _cm():
        if address is not None:
            from ..errors import ParameterError

            from distributed.comm import parse_address
            from distributed.comm.addressing import parse_host_port
            from distributed.comm.registry import backends

            try:  # the address's syntax first, with no event loop involved
                scheme, loc = parse_address(str(address))
                if scheme not in backends:  # distributed would say so only when the Client connects
                    raise ValueError(f"unknown scheme {scheme!r}; known: {', '.join(sorted(backends))}")
                if scheme in ("tcp", "tls", "ws", "wss"):
                    _host, port = parse_host_port(loc)
                    if not 0 <= int(port) <= 65535:  # getaddrinfo raised OverflowError beyond a C long
                        raise ValueError(f"port {port} is not in 0..65535")
            except (ValueError, TypeError) as exc:  # not an address distributed can parse
                raise ParameterError("address", address, f"a Dask scheduler address such as tcp://host:8786 ({exc})") \
                    from None
            try:
                client = _connect(Client, address, DASK_CONNECT_S)
            except (OSError, TimeoutError, OverflowError, MemoryError) as exc:
                # nothing answers there (OSError subclasses); a listener that is no Dask scheduler (no reply:
                # the handshake read has no time limit of its own; bytes that are no Dask frame: a length of
                # exabytes, numpy's MemoryError)
                raise ParameterError("address", address, f"a running Dask scheduler: {address} did not answer as a "
                                     f"Dask scheduler within {DASK_CONNECT_S:g} s ({type(exc).__name__})") from None
            except (TypeError, ValueError) as exc:  # a scheme this installation cannot connect with (ucx
                # without its package, an inproc address of no scheduler in this process)
                raise ParameterError("address", address, "a Dask scheduler address this installation can connect "
                                     f"to ({type(exc).__name__}: {exc})") from None
            try:
                from .core import DASK_WORKER_WAIT_S, wait_for_workers

                wait_for_workers(client, DASK_WORKER_WAIT_S if worker_wait_s is None else worker_wait_s,
                                 "address", address)
                yield client
            finally:
                client.close()
            return
        kw = {"dashboard_address": None, **cluster_kw}
        with LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=processes,
                          **kw) as cluster, Client(cluster) as client:
            yield client

    return _cm()


# ``fluidq.sweep`` is both this package and (through ``fluidq._LAZY``) the function: importing the
# package makes the attribute the module, so the module itself is made callable as ``sweep``.
import sys as _sys
import types as _types


class _CallableModule(_types.ModuleType):
    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
