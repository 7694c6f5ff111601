"""Writing output files without ever writing through a link or over something that is not a file (internal).

Every file the report, the validation report and the figures write goes through :func:`write_output`:

- the bytes go to a temporary file in the target's folder and ``os.replace`` puts it in place
  (:func:`fluidq._io.atomic_write`): a symlink planted at the target is *replaced* by the new file,
  and the file it pointed to is never opened;
- a target that exists and is neither a regular file nor a symlink (a folder, a FIFO, a device such as
  ``/dev/null``, a socket) is refused before anything is written: renaming over it would replace a
  device node or fail half-way;
- every ``OSError`` becomes one :class:`~fluidq.errors.DataError` naming the file.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .._io import _kind, _os_reason, _shown, atomic_write
from ..errors import DataError

__all__ = ["check_target", "write_output"]


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
