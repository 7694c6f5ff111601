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

``[fixed]`` and ``[grid]`` keys are point keys of :mod:`fluidq.sweep.analyses`.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError, ParameterError
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


def load_case(path) -> SweepCase:
    """Read a sweep case TOML file (format in the module docstring)."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{path}: not valid TOML ({exc})") from exc
    unknown = sorted(set(raw) - {"sweep", "fixed", "grid"})
    if unknown:
        raise DataError(f"{path}: unknown table [{unknown[0]}]; expected [sweep], [fixed] and [grid]")
    sw, fixed, axes = raw.get("sweep", {}), raw.get("fixed", {}), raw.get("grid")
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
    store = sw.get("store")
    if store is not None:
        store = str((path.parent / store).resolve()) if not Path(store).is_absolute() else store
    grid = Grid(axes=axes, fixed=fixed)  # ranges: finite numbers (a nan would reach the JSON store)
    if sw["analysis"] in ANALYSES:
        check_grid_values(grid, sw["analysis"])  # every value, before anything runs
    return SweepCase(analysis=sw["analysis"], grid=grid, seed=sw.get("seed", 0),
                     chunk_size=sw.get("chunk_size", 200), store=store,
                     common_seeds=tuple(sw["common_seeds"]) if sw.get("common_seeds") else None,
                     errors=sw.get("errors", "raise"), name=sw.get("name", path.stem))
