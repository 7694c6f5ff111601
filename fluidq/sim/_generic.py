"""The old path of the ``select()``-per-iteration loop: :func:`run_generic` and :class:`PolicyError` now
live in :mod:`fluidq.kernel.step` (moved 2026-12-06, issue 14: the kernel layer holds the iteration
engine; its notes state the memory rules); this module re-exports them, the private names included, as
the very same objects."""
from __future__ import annotations

from ..kernel.memory import StationMemory, _may_evict_hook, _victim_order  # noqa: F401 (re-exported)
from ..kernel.step import INF, NAN, PolicyError, _Residents, run_generic  # noqa: F401 (re-exported)
