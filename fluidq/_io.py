"""Reading the files a user names, and writing files, without hanging, tracebacks or lost bytes (internal).

Every path a user gives as an *input* (a trace, a case file, a length table, a profile CSV, a saved
ranker, a sweep store) goes through :func:`input_file` or one of the readers built on it:

- only a regular file is read: a FIFO, a socket or a device would block ``open()`` forever (or never
  end), so they are refused before they are opened.  The file is opened with ``O_NONBLOCK`` and checked
  again with ``fstat`` on the open descriptor, so a path swapped for a FIFO between the check and the
  open cannot hang either;
- every ``OSError`` (no such file, a symlink loop, a name too long for the file system, permission,
  a folder) becomes one :class:`~fluidq.errors.DataError` naming the parameter and the path;
- a file larger than ``max_bytes`` is refused with its size instead of being read into memory;
- gzip input that is corrupt or truncated, text that is not UTF-8, JSON nested too deeply to parse:
  each is a ``DataError`` naming the file (and the line where there is one).

Every *output* file fluidq writes over goes through :func:`atomic_write`: the bytes go to a temporary
file in the same folder, then ``os.replace`` puts it in place.  A symlink planted at the target is
replaced by the new file; the file it pointed to is never written.  A crash leaves either the old file
or the new one, never a half-written one.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
import zlib
from pathlib import Path

from .errors import DataError, ParameterError

#: the most bytes an input file may have (1 GiB): larger ones are refused with their size
MAX_INPUT_BYTES = 1 << 30

_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFDIR: "a folder"}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _os_reason(exc: OSError) -> str:
    code = exc.errno
    if code == errno.ENOENT:
        return "no such file"
    if code == errno.ELOOP:
        return "a symlink loop"
    if code == errno.ENAMETOOLONG:
        return "the name is longer than the file system allows"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if code == errno.EISDIR:
        return "a folder, not a file"
    if code == errno.ENOTDIR:
        return "a part of the path is not a folder"
    return exc.strerror or type(exc).__name__


def _shown(path) -> str:
    text = str(path)
    return text if len(text) <= 120 else text[:60] + "..." + text[-40:]


def input_file(option: str, path, *, what: str = "file") -> Path:
    """Check that ``path`` names a regular file that can be read; return it as a ``Path``.

    Raises ``ParameterError`` for an empty name and ``DataError`` for everything the file system says
    (missing, a loop, too long a name, a FIFO, a device, a folder...), naming ``option``.
    """
    text = str(path) if path is not None else ""
    if not text.strip() or "\x00" in text:
        raise ParameterError(option, path, f"the path of a {what}")
    p = Path(text)
    try:
        st = p.stat()
    except OSError as exc:
        raise DataError(f"{option} {_shown(text)}: cannot read it ({_os_reason(exc)})") from None
    except ValueError:  # embedded NUL and friends
        raise ParameterError(option, path, f"the path of a {what}") from None
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"{option} {_shown(text)}: {_kind(st.st_mode)}, not a regular {what}; fluidq reads "
                        "only regular files (a pipe or device could block forever)")
    return p


def read_bytes(option: str, path, *, what: str = "file", max_bytes: int = MAX_INPUT_BYTES,
               gunzip: bool = True) -> bytes:
    """The bytes of a regular file (gunzipped when they start with the gzip magic and ``gunzip``)."""
    p = input_file(option, path, what=what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise DataError(f"{option} {_shown(p)}: cannot read it ({_os_reason(exc)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the check and the open
            raise DataError(f"{option} {_shown(p)}: {_kind(st.st_mode)}, not a regular {what}")
        if st.st_size > max_bytes:
            raise DataError(f"{option} {_shown(p)}: {st.st_size:,} bytes, more than the {max_bytes:,} "
                            f"fluidq reads for a {what}")
        chunks, total = [], 0
        while True:
            try:
                b = os.read(fd, 1 << 20)
            except OSError as exc:
                raise DataError(f"{option} {_shown(p)}: cannot read it ({_os_reason(exc)})") from None
            if not b:
                break
            total += len(b)
            if total > max_bytes:
                raise DataError(f"{option} {_shown(p)}: more than the {max_bytes:,} bytes fluidq reads "
                                f"for a {what}")
            chunks.append(b)
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if gunzip and raw[:2] == b"\x1f\x8b":
        raw = gunzip_bytes(option, p, raw, max_bytes=max_bytes)
    return raw


def gunzip_bytes(option: str, path, raw: bytes, *, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """Decompress gzip bytes, refusing a corrupt or truncated stream and a decompression bomb."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(raw, max_bytes + 1)
        if len(out) > max_bytes or d.unconsumed_tail:
            raise DataError(f"{option} {_shown(path)}: decompresses to more than the {max_bytes:,} bytes "
                            "fluidq reads")
        if not d.eof:
            raise DataError(f"{option} {_shown(path)}: a truncated gzip file (the stream ends early)")
    except zlib.error as exc:
        raise DataError(f"{option} {_shown(path)}: a corrupt gzip file ({exc})") from None
    return out


def read_text(option: str, path, *, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file (gunzipped if compressed); a binary file is a ``DataError``."""
    raw = read_bytes(option, path, what=what, max_bytes=max_bytes)
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # (its NUL bytes would call it binary)
        raise DataError(f"{option} {_shown(path)}: UTF-16 text, which fluidq does not read; save the {what} as "
                        "UTF-8")
    if b"\x00" in raw[:65536]:
        raise DataError(f"{option} {_shown(path)}: a binary file, not a text {what}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise DataError(f"{option} {_shown(path)}: not UTF-8 text (line {line}); a binary file?") from None


def json_loads(text, *, where: str, object_pairs_hook=None, constants: bool = False):
    """``json.loads`` whose every failure (syntax, nesting too deep for the parser) is a ``DataError``.

    ``where`` names the file and line for the message.  Non-finite numbers (``NaN``, ``Infinity``),
    which Python's parser accepts but JSON does not have, are refused too, unless ``constants=True``
    (they are then read as floats, for a caller that refuses them by field, naming it).
    ``object_pairs_hook`` is passed to ``json.loads``.
    """
    def no_constant(name):
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=None if constants else no_constant, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to read") from None
    except ValueError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{where}: not valid JSON ({msg})") from None


#: the deepest nesting of arrays and tables a TOML case may have (real cases nest two or three deep;
#: the readers walk values recursively, so a deeper one is refused before they see it)
MAX_TOML_DEPTH = 16


def toml_loads(text: str, *, where: str) -> dict:
    """``tomllib.loads`` whose every failure is a ``DataError`` naming ``where``.

    Invalid TOML, nesting too deep for the parser, and nesting deeper than :data:`MAX_TOML_DEPTH`
    (which the readers of the result would recurse into) are each one line.
    """
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{where}: not valid TOML ({msg})") from None
    except RecursionError:
        raise DataError(f"{where}: TOML nested too deeply to read") from None
    stack = [(doc, 1)]
    while stack:  # iterative: a deep document must not make this check recurse either
        v, depth = stack.pop()
        if depth > MAX_TOML_DEPTH:
            raise DataError(f"{where}: TOML nested {depth} levels deep or more; at most {MAX_TOML_DEPTH} levels "
                            "of arrays and tables are read")
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return doc


def probe_folder(parent) -> str | None:
    """Why no file can be created in the folder ``parent`` (read-only, no permission, immutable, ``/proc``),
    or ``None``: a file is created there and removed, as :func:`atomic_write` will create its temporary
    file, so an output path is refused before a command's work rather than after it."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".fluidq-probe.", suffix=".tmp", dir=parent)
    except OSError as exc:
        return ("the file system creates no file there" if exc.errno == errno.ENOENT  # (/proc)
                else _os_reason(exc))
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:  # pragma: no cover - created but not removable: leave it, the write itself may work
        pass
    return None


def output_path_problem(text: str, *, replaceable=None) -> str | None:
    """What is wrong with ``text`` as the path of a JSON file to write, or ``None``: a folder, a symlink, a
    FIFO or device, a path in a missing folder or in one where no file can be created (:func:`probe_folder`),
    or an existing non-empty file that ``replaceable = (test, kind)`` does not recognise (``test(path)`` is
    true for a file fluidq wrote, ``kind`` names such a file): a user's own file is not replaced; an empty
    one is (and, without ``replaceable``, any existing file)."""
    if not text.strip() or "\x00" in text:
        return "expected the path of a JSON file"
    if text.endswith(os.sep) or os.path.basename(text) in ("", ".", ".."):
        return "expected a file name, not a folder"
    p = Path(text)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return f"cannot use it ({_os_reason(exc)})"
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            return "a symlink; fluidq neither writes through a link nor replaces one: give the file's own path"
        if stat.S_ISDIR(st.st_mode):
            return "expected a file name, not a folder"
        if not stat.S_ISREG(st.st_mode):
            return f"{_kind(st.st_mode)}, not a file; fluidq writes only regular files"
        if st.st_size and replaceable is not None and not replaceable[0](p):
            return (f"an existing file that is not {replaceable[1]} (fluidq did not write it), so it is not "
                    "replaced; remove it or give a new name")
    parent = p.parent
    if not parent.is_dir():
        return f"expected a path in an existing folder (there is no folder {str(parent)!r})"
    reason = probe_folder(parent)
    if reason is not None:
        return f"cannot write a file in the folder {str(parent)!r} ({reason})"
    return None


def atomic_write(path, data: bytes | str, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` by a temporary file in the same folder and an atomic rename.

    A symlink at ``path`` is replaced, not followed; a failure leaves the old file as it was.  The file
    gets the permission bits of the regular file it replaces, else those ``open()`` would give a new
    file (``0o666`` less the umask).
    """
    p = Path(path)
    if isinstance(data, str):
        data = data.encode(encoding)
    folder = p.parent if str(p.parent) else Path(".")
    mode = _new_file_mode(p)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name[:40]}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # (mkstemp makes it 0o600)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


def _new_file_mode(p: Path) -> int:
    """The permission bits for a file written at ``p``: those of the regular file there (not of a symlink's
    target: the link is replaced), else ``0o666`` less the process umask."""
    try:
        st = os.lstat(p)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    um = os.umask(0o022)  # (reading the umask sets it: put it straight back)
    os.umask(um)
    return 0o666 & ~um


def open_gzip_text(option: str, path, *, what: str = "file"):
    """A text stream over a (possibly gzipped) regular file, read whole first (see :func:`read_text`)."""
    import io

    return io.StringIO(read_text(option, path, what=what))


__all__ = ["MAX_INPUT_BYTES", "MAX_TOML_DEPTH", "atomic_write", "check_target", "staged_folder", "write_output", "gunzip_bytes", "input_file", "json_loads", "toml_loads", "read_bytes",
           "read_text", "open_gzip_text"]

# ------------------------------------------------------------------ output files (report, validation, figures)
# Every file fluidq writes as an answer goes through write_output: the bytes go to a temporary file in
# the target's folder and os.replace puts it in place (atomic_write), so a symlink planted at the target
# is replaced and the file it pointed to is never opened; a target that exists and is neither a regular
# file nor a symlink (a folder, a FIFO, a device, a socket) is refused before anything is written; every
# OSError becomes one DataError naming the file.

def check_target(path, *, what: str = "file") -> Path:
    """Refuse a ``path`` that exists and is not a regular file or a symlink; return it as a ``Path``."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as exc:
        raise DataError(f"{what} {_shown(p)}: cannot write it ({_os_reason(exc)})") from None
    if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        return p
    raise DataError(f"{what} {_shown(p)}: {_kind(st.st_mode)} is there, not a file; fluidq writes only regular "
                    "files and does not replace it (remove it or choose another name)")


def write_output(path, data: bytes | str, *, what: str = "file") -> str:
    """Write ``data`` to ``path`` through a temporary file and a rename (a link there is replaced, never
    followed); return the path as a string."""
    p = check_target(path, what=what)
    try:
        atomic_write(p, data)
    except OSError as exc:
        raise DataError(f"{what} {_shown(p)}: cannot write it ({_os_reason(exc)})") from None
    return str(p)


def open_text(path):
    """The text of ``path`` or ``path.gz`` as a stream, read whole through :mod:`fluidq._io`.

    Only a regular file is read (a FIFO or a device could block forever); a corrupt or truncated
    gzip file, a binary file, an unreadable path are each a ``DataError`` naming the file.
    """
    import io

    path = Path(path)
    gz = path.with_name(path.name + ".gz")
    target = path
    if not os.path.lexists(path) and os.path.lexists(gz):
        target = gz
    elif not os.path.lexists(path):
        raise FileNotFoundError(f"{path} (nor {gz.name}) does not exist")
    return io.StringIO(read_text("run file", target, what="run file"))


# ------------------------------------------------------------------ output folders (report, validate)
# A command that fills a folder with several files (``fluidq report``, ``fluidq validate --out``) writes
# them all into a temporary folder first and moves them in only once every file is written: a Ctrl-C or
# an error part way leaves the folder's earlier files as they were, all from one run.

@contextlib.contextmanager
def staged_folder(out, *, what: str = "file"):
    """Yield a temporary folder on ``out``'s file system; on a clean exit move its files into ``out``.

    The temporary folder is a hidden one beside ``out`` (``.NAME.partial-XXXX`` in the same parent; inside
    ``out`` when the parent is not writable or is another file system).  When the ``with`` block ends
    normally every regular file in it replaces the file of the same name in ``out`` by ``os.replace``
    (a symlink there is replaced, never followed; a folder, FIFO or device there is refused, before
    anything is moved, with a ``DataError``); report files (``.md``, ``.html``, ``.json``) are moved
    last.  SIGINT and SIGTERM are held back while the files are moved (a handful of renames), so a
    Ctrl-C lands before the move -- the folder keeps its old files, all of them -- or after it.
    When the block raises (an error, ``KeyboardInterrupt``) nothing in ``out`` is touched.  The
    temporary folder is removed either way.  A signal whose action ends the process without raising
    can leave it behind: ``kill -9``, power loss, and SIGTERM in a program that does not handle it
    (the ``fluidq`` command does: it turns SIGTERM into the ``KeyboardInterrupt`` path, see
    :func:`fluidq.cli.main`); ``out`` then holds either all old or all new files except in the
    milliseconds of the move.  Files of ``out`` that the run does not write are left alone.
    """
    import shutil

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stage = None
    parent = out.resolve().parent
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{out.resolve().name[:40]}.partial-", dir=parent))
        if os.stat(stage).st_dev != os.stat(out).st_dev:  # a mount point: a rename would not cross it
            os.rmdir(stage)
            stage = None
    except OSError:
        stage = None
    if stage is None:
        stage = Path(tempfile.mkdtemp(prefix=".partial-", dir=out))
    try:
        yield stage
        names = sorted((p.name for p in stage.iterdir() if p.is_file() and not p.is_symlink()),
                       key=lambda n: (n.endswith((".md", ".html", ".json")), n))
        for n in names:
            check_target(out / n, what=what)
        _move_quietly(stage, out, names, what)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _move_quietly(stage: Path, out: Path, names, what: str) -> None:
    """``os.replace`` each of ``names`` from ``stage`` into ``out`` with SIGINT/SIGTERM held back."""
    import signal
    import threading

    held = {signal.SIGINT, signal.SIGTERM}
    block = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held) if block else None
    try:
        for n in names:
            try:
                os.replace(stage / n, out / n)
            except OSError as exc:
                raise DataError(f"{what} {_shown(out / n)}: cannot write it ({_os_reason(exc)})") from None
    finally:
        if block:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
