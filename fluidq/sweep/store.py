"""The append-only result store of a sweep: one JSON Lines file.

Line 1 is a header naming the sweep (a fingerprint of the analysis, the grid and the seed), the fluidq
version that wrote it and the sha256 of each trace file the grid names.  Every further line is one finished
chunk: ``{"indices": [...], "rows": [...]}``.

A store is resumed only by the sweep it names, and only while its trace files are the ones its points were
computed from: a trace whose sha256 differs from the header's (edited or replaced since) is refused in one line
naming the trace and the store, left as it was.  A store written by another fluidq version is resumed with a
:class:`StoreWarning` saying so; one written before the header held trace hashes (2026-12-07) is resumed as
before, unchecked, with a :class:`StoreWarning` saying that.

What is written, and when
-------------------------
* A store is only ever written by a sweep that holds its lock (an exclusive ``flock`` on
  ``F.lock`` beside the store ``F``), and only after the file was read and its first line verified
  as the header of *this* sweep.  The lock is taken before anything else is done with the file; a
  second sweep on a store that a running sweep holds is refused at once, without touching it.
* Only regular files are opened (a FIFO, socket or device is refused, with ``O_NONBLOCK`` so that
  the check cannot block).
* A path that does not exist, or a file of zero bytes (which holds nothing to lose), becomes a new
  store.  Any other file that does not start with this sweep's header -- a user's file, another
  sweep's store, a file of some other program -- is refused in one line and left byte for byte as
  it was.
* A chunk is written with a single ``write`` on a file opened for appending, then flushed to disk
  (``fsync``).  Nothing is ever rewritten in place.

What survives a crash
---------------------
A sweep killed at any moment leaves either the whole chunk or a *torn last line* (the start of a
chunk without its newline).  Every finished chunk survives.  When the store is opened again (under
the lock), a torn last line is moved, byte for byte, to the sidecar ``F.damaged`` and only then cut
from ``F``, so that the next chunk starts on a fresh line; its points are computed again, and a
:class:`StoreWarning` says so.  (A torn last line that is nevertheless a complete chunk is kept: it
only gets its newline.)  A file holding nothing but a torn header of this sweep is treated the same
way and the header written anew.

What survives a corruption
--------------------------
A damaged line in the middle of the store (not JSON, or not a chunk of this sweep: indices outside
the grid, rows that do not match them) is **left in place** and skipped: every intact chunk before
and after it is kept, only the damaged chunk's points are computed again (and appended at the end),
and a :class:`StoreWarning` names the line and the points, each time the store is opened or read.
The damaged bytes are never deleted; remove the line by hand once you no longer need it.
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
import warnings
from pathlib import Path

from .._io import _kind, _os_reason, _shown
from ..errors import DataError

__all__ = ["ResultStore", "StoreMismatchError", "StoreWarning", "FORMAT", "read_store"]

FORMAT = "fluidq-sweep/1"

_NONBLOCK = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_INDICES = re.compile(rb'"indices"\s*:\s*\[([0-9,\s]*)\]')


class StoreError(DataError):
    """A store that cannot be used: its message starts with ``store='<path>':``; ``path`` and ``reason`` (the
    message without that prefix) let a caller name the store its own way (the CLI says ``--store``)."""

    def __init__(self, path, reason: str):
        super().__init__(f"{_where(path)}: {reason}")
        self.path, self.reason = path, reason

    def __reduce__(self):  # (the default would call __init__ with the whole message only)
        return type(self), (self.path, self.reason)


class StoreMismatchError(StoreError):
    """The store file belongs to a different sweep (other analysis, grid or seed), or one of its trace files
    has changed since its points were computed."""


class StoreWarning(UserWarning):
    """A store had a damaged or torn line: it was skipped (or moved aside) and its points are recomputed; or
    it was written by another fluidq version, or before trace hashes were recorded (its points are reused)."""


def changed_traces(old_header: dict, new_hashes: dict) -> list | None:
    """The trace files (of ``new_hashes``, ``{trace: sha256}`` as :func:`fluidq.sweep.core.trace_hashes` gives)
    whose sha256 differs from the one a store's header ``old_header`` recorded (a trace it did not record counts
    as changed), in ``new_hashes``' order; ``None`` for a store written before fluidq recorded its trace files'
    contents (no ``trace_sha256``: its points are reused unchecked)."""
    had = old_header.get("trace_sha256")
    if had is None:
        return None
    return [t for t, d in new_hashes.items() if had.get(t) != d]


def _check_inputs(path, old: dict, header: dict, n_rows: int) -> None:
    """Before a store of this sweep is resumed (nothing written yet): refuse it when a trace file it was computed
    from has changed since (its sha256 in the header differs), naming the trace and the store, the file left as
    it is; warn when it was written by another fluidq version, or before fluidq recorded its trace files'
    contents (a store without ``trace_sha256``: its points are reused unchecked, as they always were)."""
    new = header.get("trace_sha256") or {}
    changed = changed_traces(old, new)
    if changed is None:
        if new and n_rows:
            names = ", ".join(_shown(t) for t in new)
            warnings.warn(f"{_where(path)}: written by a fluidq that recorded no content hash of its trace files: "
                          f"its {n_rows} stored points are reused without checking that {names} is unchanged "
                          "(delete the store to compute them again from the trace as it is now)",
                          StoreWarning, stacklevel=4)
    elif changed:
        trace, had = changed[0], old["trace_sha256"]
        was = (f"sha256 {had[trace][:12]}..." if trace in had else "which was no readable file then")
        raise StoreMismatchError(
            path, f"holds results computed from the trace file {_shown(trace)!r} ({was}), which has "
            f"changed since (sha256 now {new[trace][:12]}...): its {n_rows} stored points are not this trace's "
            "and are not reused; the store was left as it is: restore the trace, or give another store "
            "(or delete this one) to compute them again")
    mine, theirs = header.get("fluidq_version"), old.get("fluidq_version")
    if mine is not None and theirs != mine and n_rows:
        who = f"fluidq {theirs}" if theirs else "a fluidq that recorded no version"
        warnings.warn(f"{_where(path)}: written by {who} (this is fluidq {mine}): its {n_rows} stored points are "
                      "reused as that version computed them (delete the store to compute them with this one)",
                      StoreWarning, stacklevel=4)


def _where(path) -> str:
    return f"store={_shown(path)!r}"


def _check_not_special(path: Path) -> bool:
    """``True`` if ``path`` is an existing regular file, ``False`` if it does not exist; else a ``DataError``.

    ``os.stat`` never blocks, so a FIFO or a device is refused before anything opens it.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreError(path, f"cannot use it ({_os_reason(exc)})") from None
    except ValueError:  # an embedded NUL
        raise StoreError(path, f"not a usable file name") from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(path, f"{_kind(st.st_mode)}, not a regular file; a sweep store must be a "
                        "regular file (a pipe or device could block forever)")
    return True


def _read_all(fd: int) -> bytes:
    chunks, off = [], 0
    while True:
        b = os.pread(fd, 1 << 22, off)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        off += len(b)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:  # one write in practice; loop only on a short write
        n = os.write(fd, view)
        view = view[n:]
    os.fsync(fd)


def _points(indices) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"`` (at most a few ranges shown)."""
    idx = sorted(set(indices))
    runs, start, prev = [], None, None
    for i in idx:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            runs.append((start, prev))
            start = prev = i
    if start is not None:
        runs.append((start, prev))
    text = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:6])
    return text + (f", ... ({len(idx)} points)" if len(runs) > 6 else "")


def _chunk(line: bytes, n_points: int):
    """``(indices, rows)`` of a chunk line, or a reason (str) why it is not an intact chunk."""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return "not valid JSON"
    if not isinstance(rec, dict):
        return "not a chunk record"
    idx, rows = rec.get("indices"), rec.get("rows")
    if not isinstance(idx, list) or not isinstance(rows, list) or len(idx) != len(rows):
        return "not a chunk record (indices and rows do not match)"
    for i, r in zip(idx, rows):
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_points:
            return f"a point index {i!r} outside the sweep's {n_points} points"
        if not isinstance(r, dict) or r.get("index") != i:
            return f"the row of point {i} does not carry its index"
    return idx, rows


def _guess_indices(line: bytes, n_points: int) -> list:
    """The point indices a damaged line names, as far as they can be read (those inside the grid)."""
    m = _INDICES.search(line)
    if not m:
        return []
    try:
        return [i for i in (int(t) for t in m.group(1).split(b",") if t.strip()) if 0 <= i < n_points]
    except ValueError:
        return []


class _Scan:
    """What a store's bytes hold: header, rows, damaged lines and a torn tail (nothing is changed)."""

    def __init__(self, raw: bytes, path):
        self.raw = raw
        self.header = None
        self.rows: dict = {}
        self.damaged: list = []  # (line number, reason, indices guessed from the bytes)
        self.end = raw.rfind(b"\n") + 1  # bytes up to and including the last newline
        self.tail = raw[self.end:]       # a torn last line (empty if the file ends with a newline)
        self.tail_chunk = None           # the tail, if it is nevertheless an intact chunk
        if self.end == 0:
            return
        first = raw[:raw.find(b"\n")]
        try:
            head = json.loads(first)
        except (ValueError, RecursionError):
            head = None
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            raise StoreError(path, f"not a fluidq sweep store (its first line is not a {FORMAT} "
                            "header); the file was left as it is: give another path")
        self.header = head
        n = head.get("n_points")
        n = n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else 0
        lines = raw[len(first) + 1:self.end].split(b"\n")[:-1]
        for k, ln in enumerate(lines, start=2):
            if not ln.strip():
                continue
            got = _chunk(ln, n)
            if isinstance(got, str):
                self.damaged.append((k, got, _guess_indices(ln, n)))
                continue
            for i, row in zip(*got):
                self.rows.setdefault(i, row)
        if self.tail:
            got = _chunk(self.tail, n)
            if not isinstance(got, str):
                self.tail_chunk = got
                for i, row in zip(*got):
                    self.rows.setdefault(i, row)

    def warn_damaged(self, path, *, stacklevel: int = 3, fate: str = "computed again") -> None:
        n = self.header.get("n_points") if self.header else None
        missing = [i for i in range(n) if i not in self.rows] if isinstance(n, int) and n <= 10**8 else []
        for k, why, guessed in self.damaged:
            held = f"it held points {_points(guessed)} (as far as can be read); " if guessed else ""
            if not missing:
                after = "every point is stored on another line"
            else:
                after = (f"the {len(missing)} point(s) not in any intact line ({_points(missing)}) are {fate}")
            warnings.warn(f"{_where(path)}: line {k} is damaged ({why}); it is skipped and left in the file, "
                          f"every other chunk is kept; {held}{after}", StoreWarning, stacklevel=stacklevel)


def _torn_header(tail: bytes, header: dict) -> bool:
    """Is ``tail`` (a file with no newline) the start of the header this sweep writes?"""
    mine = (json.dumps({"format": FORMAT, "fingerprint": header["fingerprint"]}, separators=(",", ":"))[:-1]
            ).encode()
    return mine.startswith(tail) or tail.startswith(mine)


class _Lock:
    """An exclusive ``flock`` on ``F.lock`` (never written; removed on release if it is still empty)."""

    def __init__(self, store: Path):
        self.path = Path(str(store) + ".lock")
        self.fd = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        flags = os.O_RDWR | os.O_CREAT | _NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        for _ in range(20):  # retried only if the lock file was replaced while we waited for it
            try:
                fd = os.open(self.path, flags, 0o644)
            except OSError as exc:
                raise StoreError(store, f"cannot use its lock file {_shown(self.path)!r} "
                                f"({_os_reason(exc) if exc.errno != errno.ELOOP else 'a symlink'})") from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                raise StoreError(store, f"its lock file {_shown(self.path)!r} is {_kind(st.st_mode)}, "
                                "not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise StoreError(store, f"another sweep is writing to this store right now (it holds "
                                f"{_shown(self.path)!r}); the store was not touched") from None
            try:
                now = os.stat(self.path)
            except OSError:
                now = None
            if now is not None and (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
                self.fd = fd
                return
            os.close(fd)  # a releasing sweep removed the file we locked: lock the new one
        raise StoreError(store, f"could not take its lock {_shown(self.path)!r}")

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            a, b = os.fstat(self.fd), os.stat(self.path)
            if (a.st_ino, a.st_dev) == (b.st_ino, b.st_dev) and b.st_size == 0:
                os.unlink(self.path)  # still holding the lock: nobody can have taken it meanwhile
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


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

        The lock is taken first; the file is then read and verified, and only written (a new
        header, a torn last line moved to ``F.damaged``) once it is known to be this sweep's store
        or new (see the module docstring).

        Raises
        ------
        StoreMismatchError
            The file holds another sweep's results.
        DataError
            It is not a fluidq sweep store (or not a regular file), or another sweep holds it.
        """
        path = Path(path)
        _check_not_special(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(path, f"cannot create its folder ({_os_reason(exc)})") from None
        lock = _Lock(path)
        fd = None
        try:
            fd = cls._open_fd(path)
            scan = _Scan(_read_all(fd), path)
            if scan.header is None:  # zero bytes, or a file with no newline
                if scan.tail and not _torn_header(scan.tail, header):
                    raise StoreError(path, f"not a fluidq sweep store ({len(scan.tail)} bytes that are not "
                                    f"a {FORMAT} header); the file was left as it is: give another path")
                old = header
                line = (json.dumps(header, separators=(",", ":"), allow_nan=False) + "\n").encode()
                if scan.tail:
                    try:
                        parsed = json.loads(scan.tail)
                    except ValueError:
                        parsed = None
                    if (isinstance(parsed, dict) and parsed.get("fingerprint") == header["fingerprint"]
                            and parsed.get("trace_sha256") == header.get("trace_sha256")):
                        old, line = parsed, b"\n"  # a whole header that lacks only its newline
                    else:
                        cls._set_aside(path, scan.tail, "a header torn by a kill while the store was created")
                        os.ftruncate(fd, 0)
                        warnings.warn(f"{_where(path)}: held only a header torn by a kill while the store was "
                                      f"created ({len(scan.tail)} bytes, moved to "
                                      f"{_shown(str(path) + '.damaged')!r}); the store starts afresh",
                                      StoreWarning, stacklevel=3)
                _write_all(fd, line)
                rows = {}
            else:
                old = scan.header
                if old.get("fingerprint") != header["fingerprint"]:
                    raise StoreMismatchError(
                        path, f"holds results of another sweep (analysis {old.get('analysis')!r}, "
                        f"{old.get('n_points')} points, seed {old.get('seed')}); expected this sweep's "
                        f"fingerprint {header['fingerprint'][:12]} (use another path, or delete the file to start "
                        "over)")
                _check_inputs(path, old, header, len(scan.rows))
                scan.warn_damaged(path, stacklevel=4)
                if scan.tail_chunk is not None:
                    _write_all(fd, b"\n")  # an intact chunk that lacks only its newline
                elif scan.tail:
                    guessed = [i for i in _guess_indices(scan.tail, header["n_points"]) if i not in scan.rows]
                    cls._set_aside(path, scan.tail, "the last line was torn (a sweep killed while writing it)")
                    os.ftruncate(fd, scan.end)
                    warnings.warn(f"{_where(path)}: the last line was torn (a sweep killed while writing it); its "
                                  f"{len(scan.tail)} bytes were moved to {_shown(str(path) + '.damaged')!r} and "
                                  + (f"its points {_points(guessed)} are computed again" if guessed else
                                     "its points are computed again"), StoreWarning, stacklevel=3)
                rows = scan.rows
        except BaseException:
            if fd is not None:
                os.close(fd)
            lock.release()
            raise
        store = cls(path, old, rows)
        store._fd, store._lock = fd, lock
        return store

    @staticmethod
    def _open_fd(path: Path) -> int:
        """The store's descriptor (read + append), created if absent; a regular file or a ``DataError``."""
        flags = os.O_RDWR | os.O_APPEND | _NONBLOCK
        try:
            try:
                fd = os.open(path, flags)
            except FileNotFoundError:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise StoreError(path, f"cannot open it ({_os_reason(exc)})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped for something else since the check
            os.close(fd)
            raise StoreError(path, f"{_kind(st.st_mode)}, not a regular file")
        return fd

    @staticmethod
    def _set_aside(path: Path, data: bytes, why: str) -> None:
        """Append ``data`` (and a newline) to ``F.damaged``, on disk, before it is cut from the store."""
        side = Path(str(path) + ".damaged")
        try:
            _check_not_special(side)
            fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NONBLOCK | getattr(os, "O_NOFOLLOW", 0),
                         0o644)
        except DataError:
            raise StoreError(path, f"{why}, and its bytes cannot be set aside in {_shown(side)!r} "
                            "(not a regular file); the store was left as it is") from None
        except OSError as exc:
            raise StoreError(path, f"{why}, and its bytes cannot be set aside in {_shown(side)!r} "
                            f"({_os_reason(exc)}); the store was left as it is") from None
        try:
            _write_all(fd, data + b"\n")
        finally:
            os.close(fd)

    def _append(self, record: dict):
        _write_all(self._fd, (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode())

    def append_chunk(self, indices, rows, **extra) -> None:
        """Append one finished chunk (atomically, see the module docstring)."""
        new = [(int(i), r) for i, r in zip(indices, rows) if int(i) not in self.rows]
        if not new:
            return
        self._append({"indices": [i for i, _ in new], "rows": [r for _, r in new], **extra})
        for i, r in new:
            self.rows[i] = r

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_store(path) -> tuple[dict, list[dict]]:
    """``(header, rows in index order)`` of a store file, without running or changing anything.

    Damaged lines are skipped (with a :class:`StoreWarning`), a torn last line is ignored.
    """
    path = Path(path)
    if not _check_not_special(path):
        raise FileNotFoundError(f"store {str(path)!r} does not exist")
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except OSError as exc:
        raise StoreError(path, f"cannot read it ({_os_reason(exc)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(path, f"{_kind(st.st_mode)}, not a regular file")
        scan = _Scan(_read_all(fd), path)
    finally:
        os.close(fd)
    if scan.header is None:
        raise StoreError(path, f"empty or not a fluidq sweep store")
    scan.warn_damaged(path, fate="not counted as stored")
    return scan.header, [scan.rows[i] for i in sorted(scan.rows)]
