"""The old path of the KV-cache rules: :class:`StationMemory` (and its helpers) now live in
:mod:`fluidq.kernel.memory` (moved 2026-12-06, issue 14: the kernel layer holds the memory rules); this
module re-exports them, the private helpers included, as the very same objects."""
from __future__ import annotations

from ..kernel.memory import BlockPool, StationMemory, _may_evict_hook, _victim_order  # noqa: F401 (re-exported)

__all__ = ["StationMemory"]
