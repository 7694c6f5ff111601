"""numba's ``njit`` for fluidq's kernels, or the plain-Python stand-in where numba is missing.

``jit(fn)`` compiles ``fn`` lazily with ``cache=True`` (one machine-code file per signature, reused
by later processes).  The cache lives next to the source when that folder is writable, else under
the user's cache folder (``NUMBA_CACHE_DIR``; set here before numba is imported unless the user set
it).  Without numba (a platform with no wheel) ``jit`` returns the function unchanged, so the same
kernel runs as Python, and the first use warns once with :class:`KernelNotCompiledWarning` (a
``UserWarning``: a slower run, not a numerical problem, so the test suite's ``error::RuntimeWarning``
filter does not turn a platform without numba into failures).  ``NUMBA_DISABLE_JIT=1`` does the same with
numba installed (numba's own switch; the tests use it to run the kernel uncompiled).

The cache's stamp.  numba keys a cached function on the source of the one file that *defines* it (its mtime
and size up to numba 0.6x, a digest of that file's contents later) and on the function's own bytecode, but a
compiled kernel carries the machine code of everything it calls or inlines from other modules (``kv.py``'s loop
inlines ``memory.py``'s ``token_next`` through ``kvrules.py``) and the values of the constants it reads.  Editing
only ``memory.py`` then left ``kv.py``'s cached machine code in place: the compiled loop ran the old rule while
the Python paths ran the new one.  So every function ``jit`` compiles gets a cache whose stamp adds
:func:`source_digest`, a SHA-256 of the contents of every file in :data:`_STAMP_SOURCES` (every module of
``fluidq.kernel`` and the two outside it whose functions or constants compiled code uses: ``policies/batch_rule.py``
and ``batchtime/operators.py``; ``tests/kernel/test_jit_cache_stamp.py`` walks the jitted functions' globals and
fails if one comes from a module not listed).  Any edit to any of them recompiles every kernel once (about a
minute on a slow machine); otherwise the cache is read as before.  The digest is computed once per process, on the
first ``jit`` with numba (~0.7 ms for the ~460 kB read).  It is done per function, on the dispatcher's own cache
object (numba's ``FunctionCache`` subclassed with a ``CacheImpl`` whose ``locator`` returns numba's locator with
``get_source_stamp`` extended), which is why it is preferred to the alternatives: a locator class added to numba's
list (``CacheImpl._locator_classes``) would be numba-wide state, and a cache subfolder per digest would move the
cache and leave a folder behind per edit.  Where the cache lives (``configure_cache``'s folder, ``NUMBA_CACHE_DIR``,
the source tree) and how users' own numba functions cache are unchanged.  It uses numba internals
(``numba.core.caching.FunctionCache._impl_class``, its ``locator`` property, a dispatcher's ``_cache``; checked on
numba 0.68.1, the same shape in older numba's ``caching.py``); where they are missing, or the sources cannot be
read (a zipped or frozen install, which nobody edits), ``jit`` falls back to plain ``cache=True`` without a word.
"""
from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path

__all__ = ["KernelLimitWarning", "KernelNotCompiledWarning", "compiled", "configure_cache", "jit", "source_digest",
           "warn_if_uncompiled", "warn_kernel_limit"]


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


#: the sources whose contents stamp the compiled kernels' cache (globs relative to the fluidq package): every module
#: of fluidq.kernel, and those outside it whose functions (batch_rule's integer core) or constants (operators' KT_*
#: table header) the compiled code uses; a module the jitted code starts using must be added here (a test checks)
_STAMP_SOURCES = ("kernel/*.py", "policies/batch_rule.py", "batchtime/operators.py")

_digest = None  # not computed yet; then the digest, or "" where the sources cannot be read
_stamped_cache = False  # not built yet; then the cache class, or None where numba's internals differ


def source_digest(root=None, sources=_STAMP_SOURCES) -> str | None:
    """SHA-256 (hex) of the names and contents of the files ``sources`` matches under ``root`` (fluidq's package
    folder), or None where one cannot be read or a pattern matches nothing.  Computed once per process for the
    defaults (the stamp of every kernel's cache; the module notes say why)."""
    global _digest
    default = root is None and sources == _STAMP_SOURCES
    if default and _digest is not None:
        return _digest or None
    base = Path(__file__).resolve().parent.parent if root is None else Path(root)
    h = hashlib.sha256()
    try:
        for pattern in sources:
            paths = sorted(base.glob(pattern))
            if not paths:
                raise FileNotFoundError(pattern)
            for path in paths:
                data = path.read_bytes()
                h.update(b"%s %d\n" % (path.relative_to(base).as_posix().encode(), len(data)))
                h.update(data)
        digest = h.hexdigest()
    except (OSError, ValueError):
        digest = ""
    if default:
        _digest = digest
    return digest or None


def _stamped_cache_class(caching, digest):
    """numba's ``FunctionCache`` whose source stamp is numba's own plus ``digest``, or None where ``caching``
    (``numba.core.caching``) lacks what it overrides (numba's internals changed: then numba's cache as it is)."""
    base = getattr(caching, "FunctionCache", None)
    impl = getattr(base, "_impl_class", None)
    if not (isinstance(base, type) and isinstance(impl, type) and isinstance(getattr(impl, "locator", None), property)):
        return None
    inner_locator = impl.locator

    class _Stamped:
        """numba's locator for the function, its ``get_source_stamp`` extended by the sources' digest."""

        def __init__(self, inner):
            self._inner = inner

        def get_source_stamp(self):
            return (self._inner.get_source_stamp(), "fluidq kernel sources", digest)

        def __getattr__(self, name):
            if name == "_inner":  # not set yet (a copy): no recursion
                raise AttributeError(name)
            return getattr(self._inner, name)

    class _Impl(impl):
        @property
        def locator(self):
            inner = inner_locator.__get__(self)
            stamped = self.__dict__.get("_fluidq_locator")
            if stamped is None or stamped._inner is not inner:
                stamped = self._fluidq_locator = _Stamped(inner)
            return stamped

    class FluidqKernelCache(base):
        _impl_class = _Impl

    return FluidqKernelCache


def _enable_cache(dispatcher) -> None:
    """``dispatcher.enable_caching()`` (``cache=True``), with the stamp of fluidq's sources where it can."""
    global _stamped_cache
    if _stamped_cache is False:
        digest = source_digest()
        try:
            from numba.core import caching
        except ImportError:  # pragma: no cover - numba's layout changed
            caching = None
        _stamped_cache = _stamped_cache_class(caching, digest) if digest and caching else None
    if _stamped_cache is not None and hasattr(dispatcher, "_cache"):
        try:
            dispatcher._cache = _stamped_cache(dispatcher.py_func)
            return
        except Exception:  # numba's own cache below: the same error where numba cannot cache the function
            pass
    dispatcher.enable_caching()


def compiled() -> bool:
    """Whether the kernels run as machine code (numba present and ``NUMBA_DISABLE_JIT`` not set)."""
    nb = _load_numba()
    return nb is not None and not nb.config.DISABLE_JIT


def jit(fn=None, *, python=None, **options):
    """``numba.njit(cache=True, nogil=True, **options)(fn)``, its cache stamped by fluidq's sources (the module
    notes); uncompiled, ``fn`` itself (or ``python``, its stand-in for lists).

    ``python`` serves helpers that allocate (growing a buffer): uncompiled, the kernel runs on Python
    lists, which plain Python indexes several times faster than numpy arrays.  ``options`` are numba's
    (the network loop passes ``inline="always"`` and ``_nrt=False``).
    """
    if fn is None:
        return lambda f: jit(f, python=python, **options)
    if not compiled():
        return python or fn
    dispatcher = _load_numba().njit(nogil=True, **options)(fn)
    _enable_cache(dispatcher)
    return dispatcher


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
