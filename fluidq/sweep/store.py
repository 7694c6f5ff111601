"""The append-only result store of a sweep: one JSON Lines file.

Line 1 is a header naming the sweep (a fingerprint of the analysis, the grid and the seed).  Every
further line is one finished chunk: ``{"indices": [...], "rows": [...]}``.  A chunk is written with
a single ``write`` on a file opened for appending, then flushed to disk, so a sweep killed at any
moment leaves either the whole chunk or a torn last line; a torn last line is dropped (and cut
off) when the store is opened again.  Nothing is ever rewritten, so a finished point is neither
lost nor computed twice when the sweep resumes.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import DataError, FluidqError

__all__ = ["ResultStore", "StoreMismatchError", "FORMAT"]

FORMAT = "fluidq-sweep/1"


class StoreMismatchError(FluidqError, ValueError):
    """The store file belongs to a different sweep (other analysis, grid or seed)."""


class ResultStore:
    """An open store.  Use :meth:`open`; ``rows`` maps point index -> stored row."""

    def __init__(self, path: Path, header: dict, rows: dict):
        self.path = path
        self.header = header
        self.rows = rows
        self._fd = None
        self._lock = None

    @classmethod
    def open(cls, path, header: dict) -> "ResultStore":
        """Open (or create) the store at ``path`` for the sweep described by ``header``.

        Raises :class:`StoreMismatchError` if the file holds another sweep's results, and
        :class:`~fluidq.errors.DataError` if it is not a fluidq sweep store.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows: dict = {}
        if path.exists() and path.stat().st_size > 0 and b"\n" not in path.read_bytes():
            path.write_bytes(b"")  # a header torn by a kill while the store was created: start afresh
        if path.exists() and path.stat().st_size > 0:
            raw = path.read_bytes()
            good_end = 0
            lines = raw.split(b"\n")
            complete = lines[:-1]  # the part after the last newline is torn (or empty)
            parsed = []
            for ln in complete:
                try:
                    parsed.append(json.loads(ln))
                except ValueError:
                    break
                good_end += len(ln) + 1
            if not parsed or parsed[0].get("format") != FORMAT:
                raise DataError(f"store={str(path)!r}: not a fluidq sweep store (first line is not a "
                                f"{FORMAT} header); use another path")
            old = parsed[0]
            if old.get("fingerprint") != header["fingerprint"]:
                raise StoreMismatchError(
                    f"store={str(path)!r}: holds results of another sweep (analysis {old.get('analysis')!r}, "
                    f"{old.get('n_points')} points, seed {old.get('seed')}); expected this sweep's "
                    f"fingerprint {header['fingerprint'][:12]} (use another path, or delete the file to start over)")
            for rec in parsed[1:]:
                for i, row in zip(rec["indices"], rec["rows"]):
                    rows.setdefault(int(i), row)
            if good_end < len(raw):  # cut a torn tail so that later appends start on a fresh line
                with open(path, "r+b") as fh:
                    fh.truncate(good_end)
            store = cls(path, old, rows)
        else:
            store = cls(path, header, rows)
            store._append(header, create=True)
        store._acquire()
        return store

    def _acquire(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        fh = open(str(self.path) + ".lock", "w")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise DataError(f"store={str(self.path)!r}: another sweep is writing to this store right now") from None
        self._lock = fh

    def _append(self, record: dict, create: bool = False):
        data = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
        flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
        fd = os.open(self.path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:  # one write in practice; loop only on a short write
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)

    def append_chunk(self, indices, rows, **extra) -> None:
        """Append one finished chunk (atomically, see the module docstring)."""
        new = [(int(i), r) for i, r in zip(indices, rows) if int(i) not in self.rows]
        if not new:
            return
        self._append({"indices": [i for i, _ in new], "rows": [r for _, r in new], **extra})
        for i, r in new:
            self.rows[i] = r

    def close(self):
        if self._lock is not None:
            self._lock.close()
            self._lock = None
            try:
                os.unlink(str(self.path) + ".lock")
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_store(path) -> tuple[dict, list[dict]]:
    """``(header, rows in index order)`` of a store file, without running anything."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"store {str(path)!r} does not exist")
    header, rows = None, {}
    for ln in path.read_bytes().split(b"\n")[:-1]:
        try:
            rec = json.loads(ln)
        except ValueError:
            break
        if header is None:
            if rec.get("format") != FORMAT:
                raise DataError(f"store={str(path)!r}: not a fluidq sweep store")
            header = rec
            continue
        for i, row in zip(rec["indices"], rec["rows"]):
            rows.setdefault(int(i), row)
    if header is None:
        raise DataError(f"store={str(path)!r}: empty or not a fluidq sweep store")
    return header, [rows[i] for i in sorted(rows)]
