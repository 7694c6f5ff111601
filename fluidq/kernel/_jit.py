"""numba's ``njit`` for fluidq's kernels, or the plain-Python stand-in where numba is missing.

``jit(fn)`` compiles ``fn`` lazily with ``cache=True`` (one machine-code file per signature, reused
by later processes).  The cache lives next to the source when that folder is writable, else under
the user's cache folder (``NUMBA_CACHE_DIR``; set here before numba is imported unless the user set
it).  Without numba (a platform with no wheel) ``jit`` returns the function unchanged, so the same
kernel runs as Python, and the first use warns once with :class:`KernelNotCompiledWarning` (a
``UserWarning``: a slower run, not a numerical problem, so the test suite's ``error::RuntimeWarning``
filter does not turn a platform without numba into failures).  ``NUMBA_DISABLE_JIT=1`` does the same with
numba installed (numba's own switch; the tests use it to run the kernel uncompiled).
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

__all__ = ["KernelLimitWarning", "KernelNotCompiledWarning", "compiled", "configure_cache", "jit", "warn_if_uncompiled",
           "warn_kernel_limit"]


class KernelNotCompiledWarning(UserWarning):
    """numba is missing: the simulation kernel runs as plain Python (same results, slower)."""


class KernelLimitWarning(UserWarning):
    """A run the compiled kernels cover but for a size limit (a KV block above
    :data:`fluidq.sim.core.KV_KERNEL_MAX_BLOCK` tokens, a network station's budget above
    :data:`fluidq.kernel.clock.KERNEL_TABLE_MAX`): it runs on the Python path (same results, slower)."""


def _user_cache_dir(environ) -> Path:
    if sys.platform == "win32":
        base = Path(environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "fluidq" / "numba"


def _cache_writable() -> bool:
    here = Path(__file__).resolve().parent
    cache = here / "__pycache__"
    try:
        cache.mkdir(exist_ok=True)
    except OSError:
        return False
    return os.access(cache, os.W_OK)


def configure_cache(environ=os.environ, writable=None) -> str | None:
    """Point ``NUMBA_CACHE_DIR`` at the user's cache folder when the install folder is read-only.

    Leaves a ``NUMBA_CACHE_DIR`` the user set alone; returns the folder set, or None.
    """
    if "NUMBA_CACHE_DIR" in environ:
        return None
    if writable is None:
        writable = _cache_writable()
    if writable:
        return None
    environ["NUMBA_CACHE_DIR"] = str(_user_cache_dir(environ))
    return environ["NUMBA_CACHE_DIR"]


_CACHE_DIR = configure_cache()  # before numba is imported: it reads the variable once

_numba = False  # not looked for yet; then the module, or None where it is missing
_warned = False
_limits_said: set = set()  # the KernelLimitWarning texts said in this process


def _load_numba():
    """numba, imported on first use (it costs ~0.15 CPU-s, which `fluidq --help` should not pay), or None."""
    global _numba
    if _numba is False:
        try:
            import numba
        except ImportError:  # pragma: no cover - exercised by a test that hides numba
            numba = None
        if numba is not None and _CACHE_DIR and not numba.config.CACHE_DIR:  # numba was imported before us
            numba.config.CACHE_DIR = _CACHE_DIR
        _numba = numba
    return _numba


def compiled() -> bool:
    """Whether the kernels run as machine code (numba present and ``NUMBA_DISABLE_JIT`` not set)."""
    nb = _load_numba()
    return nb is not None and not nb.config.DISABLE_JIT


def jit(fn=None, *, python=None, **options):
    """``numba.njit(cache=True, nogil=True, **options)(fn)``; uncompiled, ``fn`` itself (or ``python``, its
    stand-in for lists).

    ``python`` serves helpers that allocate (growing a buffer): uncompiled, the kernel runs on Python
    lists, which plain Python indexes several times faster than numpy arrays.  ``options`` are numba's
    (the network loop passes ``inline="always"`` and ``_nrt=False``).
    """
    if fn is None:
        return lambda f: jit(f, python=python, **options)
    if not compiled():
        return python or fn
    return _load_numba().njit(cache=True, nogil=True, **options)(fn)


def warn_if_uncompiled() -> None:
    """Warn once per process that the kernel runs as plain Python because numba is missing."""
    global _warned
    if _load_numba() is None and not _warned:
        _warned = True
        warnings.warn("numba is not installed: fluidq's simulation kernel runs as plain Python (about 15x "
                      "slower; `pip install numba` to compile it)", KernelNotCompiledWarning, stacklevel=3)


def warn_kernel_limit(why: str) -> None:
    """Warn once per process and reason (one line, :class:`KernelLimitWarning`) that a run which a compiled kernel
    would run, but for one of its size limits, runs on the Python path; ``why`` names the limit."""
    if why in _limits_said:
        return
    _limits_said.add(why)
    warnings.warn(f"{why}: the Python path, same results, slower (a limit of fluidq's compiled kernel)",
                  KernelLimitWarning, stacklevel=3)
