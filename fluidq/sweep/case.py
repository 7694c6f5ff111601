"""Sweep case files (TOML): what ``fluidq sweep CASE.toml`` runs.

.. code-block:: toml

    [sweep]
    analysis = "check"          # "capacity", "check", "region" or "simulate"
    seed = 2026                 # root of the SeedSequence (default 0)
    chunk_size = 200            # points per task (default 200)
    store = "results.jsonl"     # optional; relative to the case file
    common_seeds = ["load", "seed"]   # optional: common random numbers across the other axes

    [fixed]                     # the same for every point (see fluidq.sweep.analyses)
    profile = "paper-codellama34b-a100"
    prompt_tokens = 100
    output_tokens = 100

    [grid]                      # the axes; the sweep is their Cartesian product
    load = { start = 0.5, stop = 1.2, num = 15 }    # inclusive linspace
    b_max = [256, 512, 1024]
    policy = ["sarathi", "orca", "vllm", "fastertransformer"]
    seed = { start = 0, stop = 3, step = 1 }        # half-open range

``[fixed]`` and ``[grid]`` keys are point keys of :mod:`fluidq.sweep.analyses`.  A ``trace`` that names a
file (not ``"azure-conv"``/``"azure-code"``) is, like ``store``, relative to the case file.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError, ParameterError, ParameterTypeError
from .analyses import ANALYSES, POINT_KEYS, check_grid_values
from .grid import Grid

__all__ = ["SweepCase", "load_case"]

_SWEEP_KEYS = {"analysis", "seed", "chunk_size", "store", "common_seeds", "errors", "name"}


@dataclass(frozen=True, kw_only=True)
class SweepCase:
    """A parsed case file: the analysis, the grid and the sweep options."""

    analysis: str
    grid: Grid
    seed: int = 0
    chunk_size: int = 200
    store: str | None = None
    common_seeds: tuple | None = None
    errors: str = "raise"
    name: str = "sweep"

    def __post_init__(self):
        if self.analysis not in ANALYSES:
            raise ParameterError("sweep.analysis", self.analysis, f"one of {', '.join(ANALYSES)}")

    def run(self, **kw):
        """Run it with :func:`fluidq.sweep.sweep` (keywords override the case's options)."""
        from .core import sweep

        opts = {"store": self.store, "chunk_size": self.chunk_size, "seed": self.seed,
                "common_seeds": list(self.common_seeds) if self.common_seeds else None, "errors": self.errors}
        opts.update(kw)
        return sweep(self.analysis, self.grid, **opts)


def _table(path, raw: dict, name: str) -> dict:
    t = raw.get(name, {})
    if not isinstance(t, dict):
        raise DataError(f"{path}: [{name}] must be a table ([{name}] with key = value lines), "
                        f"not {type(t).__name__} {t!r:.60}")
    return t


def _option(path, sw: dict, key: str, default, check):
    """``sw[key]`` (or ``default``) checked by ``check`` -> an "expected ..." phrase or None."""
    if key not in sw:
        return default
    v = sw[key]
    problem = check(v)
    if problem:
        raise DataError(f"{path}: sweep.{key} = {v!r:.80}: expected {problem}")
    return v


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _trace_path(case: Path, v):
    """A trace file named in a case, relative to the case file as the store is (an embedded trace name, an
    absolute path and anything that is not a non-empty string pass unchanged: the grid's checks name them)."""
    from ..workload.traces import EMBEDDED_TRACES

    if not isinstance(v, str) or not v.strip() or "\x00" in v or v in EMBEDDED_TRACES or Path(v).is_absolute():
        return v
    try:
        return str((case.parent / v).resolve())
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise DataError(f"{case}: trace = {v!r}: cannot resolve the path ({exc})") from None


def load_case(path) -> SweepCase:
    """Read a sweep case TOML file (format in the module docstring).

    Only a regular file is read (a FIFO or device is refused, never waited on); every problem --
    not UTF-8 text, not TOML, a missing or mistyped key, a grid too large to build -- is a
    :class:`~fluidq.errors.DataError` or :class:`~fluidq.errors.ParameterError` naming the file and the key.
    """
    from .._io import read_text, toml_loads

    text = read_text("case file", path, what="sweep case file (TOML)")  # as given: '' is no name, not '.'
    path = Path(path)
    raw = toml_loads(text, where=str(path))  # invalid or too deeply nested: one DataError naming the file
    unknown = sorted(set(raw) - {"sweep", "fixed", "grid"})
    if unknown:
        raise DataError(f"{path}: unknown table [{unknown[0]}]; expected [sweep], [fixed] and [grid]")
    sw, fixed, axes = _table(path, raw, "sweep"), _table(path, raw, "fixed"), _table(path, raw, "grid")
    if not axes:
        raise DataError(f"{path}: no [grid] table (the axes to sweep)")
    bad = sorted(set(sw) - _SWEEP_KEYS)
    if bad:
        raise DataError(f"{path}: unknown key sweep.{bad[0]}; expected some of {', '.join(sorted(_SWEEP_KEYS))}")
    for table, keys in (("fixed", fixed), ("grid", axes)):
        bad = sorted(set(keys) - POINT_KEYS)
        if bad:
            raise DataError(f"{path}: unknown key {table}.{bad[0]}; point keys are {', '.join(sorted(POINT_KEYS))}")
    if "analysis" not in sw:
        raise DataError(f"{path}: sweep.analysis is missing (one of {', '.join(ANALYSES)})")
    if not isinstance(sw["analysis"], str) or sw["analysis"] not in ANALYSES:
        raise ParameterError("sweep.analysis", sw["analysis"], f"one of {', '.join(ANALYSES)}")
    seed = _option(path, sw, "seed", 0, lambda v: None if _is_int(v) and v >= 0 else "an integer >= 0")
    chunk = _option(path, sw, "chunk_size", 200, lambda v: None if _is_int(v) and v >= 1 else "an integer >= 1")
    store = _option(path, sw, "store", None, lambda v: None if isinstance(v, str) and v.strip() and "\x00" not in v
                    else "a file path (a string)")
    errors = _option(path, sw, "errors", "raise",
                     lambda v: None if v in ("raise", "record") else "'raise' or 'record'")
    name = _option(path, sw, "name", path.stem, lambda v: None if isinstance(v, str) else "a string")
    common = _option(path, sw, "common_seeds", None,
                     lambda v: None if isinstance(v, list) and all(isinstance(a, str) for a in v) else
                     "a list of axis names, such as [\"load\", \"seed\"]")
    for a in common or ():
        if a not in axes:
            raise DataError(f"{path}: sweep.common_seeds names {a!r}, which is not an axis of [grid] "
                            f"(axes: {', '.join(axes)})")
    if store is not None and not Path(store).is_absolute():
        try:
            store = str((path.parent / store).resolve())
        except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
            raise DataError(f"{path}: sweep.store = {store!r}: cannot resolve the path ({exc})") from None
    fixed, axes = dict(fixed), dict(axes)
    if "trace" in fixed:
        fixed["trace"] = _trace_path(path, fixed["trace"])
    if isinstance(axes.get("trace"), list):
        axes["trace"] = [_trace_path(path, v) for v in axes["trace"]]
    try:
        grid = Grid(axes=axes, fixed=fixed)  # ranges: finite numbers, sizes bounded, before anything is built
    except ParameterError as exc:  # named as in the case file: grid.load.num, not axes.load.num
        if not exc.name.startswith("axes"):
            raise
        raise ParameterError("grid" + exc.name[4:], exc.value, exc.expected, exc.hint) from None
    except ParameterTypeError as exc:
        if not str(exc).startswith("axes."):
            raise
        raise ParameterTypeError("grid." + str(exc)[5:]) from None
    check_grid_values(grid, sw["analysis"])  # every value, before anything runs
    return SweepCase(analysis=sw["analysis"], grid=grid, seed=seed, chunk_size=chunk, store=store,
                     common_seeds=tuple(common) if common else None, errors=errors, name=name)
