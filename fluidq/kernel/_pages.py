"""Ordinary (4 KiB) pages for a run's per-request arrays, not transparent huge pages.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MiB or more.
Where the kernel's setting is ``defrag=madvise`` (Ubuntu's default) the first touch of such an array then
waits for the kernel to compact memory into free 2 MiB pages, a cost that varies with how fragmented the
machine's memory is and that small arrays never pay: on the 2-vCPU VM (2026-12-07) first touching 320 MB in
12.8 MB arrays took 0.06-0.66 CPU-s of system time in fresh processes, against 0.12-0.15 s with 4 KiB pages,
so one ``simulate`` of 1.6M requests (arrays of 12.8 MB) in a fresh process cost 1.5-1.8x per request what one
of 100k (0.8 MB) did.  A run's arrays are written once, front to back; huge pages buy them nothing.

:func:`small_pages` turns numpy's request off for the duration of a block (numpy's switch is process-wide: other
threads' arrays allocated meanwhile get ordinary pages too, which changes nothing but their speed) and puts the
previous setting back when the last block open in the process ends.  It is a no-op where numpy has no such
switch, and where the user chose a setting with numpy's own environment variable ``NUMPY_MADVISE_HUGEPAGE``.
"""
from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["small_pages"]

_lock = threading.Lock()
_depth = 0
_prev = True


def _switch():
    """numpy's ``_set_madvise_hugepage`` (numpy 2: ``numpy._core``; 1.x: ``numpy.core``), or None."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:  # the user's choice
        return None
    import numpy as np

    for mod in ("_core", "core"):
        f = getattr(getattr(getattr(np, mod, None), "multiarray", None), "_set_madvise_hugepage", None)
        if f is not None:
            return f
    return None


_SET = _switch()


@contextlib.contextmanager
def small_pages():
    """numpy's arrays allocated in this block get ordinary pages (see the module docstring)."""
    global _depth, _prev
    if _SET is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _prev = bool(_SET(False))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _SET(_prev)
