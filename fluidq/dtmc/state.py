"""State spaces of the embedded chains: named integer coordinates and a flat index (internal)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["StateSpace"]


@dataclass(frozen=True, eq=False)
class StateSpace:
    """A finite set of integer vectors with named coordinates and a lookup table.

    ``coords[name][i]`` is coordinate ``name`` of state ``i``; :meth:`index` maps coordinate arrays
    (already inside the box) to flat indices, ``-1`` for vectors that are not states.
    """

    names: tuple
    coords: dict
    shape: tuple
    _lookup: np.ndarray = field(repr=False)

    @classmethod
    def from_mask(cls, names, shape, valid: np.ndarray) -> StateSpace:
        """All vectors of the box ``prod(range(s) for s in shape)`` where ``valid`` is True."""
        grids = np.nonzero(valid)
        coords = {n: g.astype(np.int64) for n, g in zip(names, grids)}
        lookup = np.full(shape, -1, dtype=np.int64)
        lookup[grids] = np.arange(grids[0].size)
        for a in coords.values():
            a.setflags(write=False)
        return cls(tuple(names), coords, tuple(shape), lookup)

    @property
    def size(self) -> int:
        return int(self.coords[self.names[0]].size)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, name) -> np.ndarray:
        return self.coords[name]

    def index(self, *values) -> np.ndarray:
        return self._lookup[tuple(np.asarray(v, dtype=np.int64) for v in values)]

    def find(self, **values) -> int:
        """Flat index of one state given by keyword coordinates (missing ones are 0)."""
        v = tuple(int(values.get(n, 0)) for n in self.names)
        i = int(self._lookup[v])
        if i < 0:
            raise KeyError(f"{values} is not a state")
        return i
