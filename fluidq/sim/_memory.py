"""The old path of the paged KV-cache state: :class:`BlockPool` now lives in :mod:`fluidq.kernel.memory`
(moved 2026-12-06, issue 14: the kernel layer holds the memory rules); this module re-exports it."""
from __future__ import annotations

from ..kernel.memory import BlockPool

__all__ = ["BlockPool"]
