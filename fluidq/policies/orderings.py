"""Orderings: the order in which a batch former takes resident requests.

An ordering is an object with ``name``, ``order(requests, now_s) -> list``, ``static`` (True when
the order depends only on what is fixed at arrival -- arrival time, lengths, a predictor score --
so a simulator may keep residents in a heap; False when keys change with time or progress, e.g.
LAS, aging, gamma-Boost) and ``overtaking_bound`` (``0`` for FCFS, an int K for K-FCFS guarantees, ``None`` when a later
arrival may overtake without bound).  :class:`KeyOrdering` sorts by a key (smaller first,
ties by arrival), which is all most orderings need; latency-aware orderings (SJF, SRPT, LAS,
PARS, gamma-Boost) live in :mod:`fluidq.policies.latency`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .base import RequestState

__all__ = ["Ordering", "FCFS", "KeyOrdering", "MAX_OVERTAKES"]

#: the largest ``overtaking_bound`` an ordering may state (an integer K >= 0, or None: unbounded)
MAX_OVERTAKES = 10**12


@dataclass(frozen=True)
class Ordering:
    """Base class: identity order (residents already come in arrival order)."""

    name = "ordering"
    static = True
    overtaking_bound: int | None = None

    def __post_init__(self):
        from .._validate import integer

        object.__setattr__(self, "overtaking_bound",
                           integer("overtaking_bound", self.overtaking_bound, minimum=0, allow_none=True,
                                   maximum=MAX_OVERTAKES, why="no run has that many requests to overtake"))

    def order(self, requests: Sequence[RequestState], now_s: float) -> list[RequestState]:
        return list(requests)


@dataclass(frozen=True)
class FCFS(Ordering):
    """First come, first served: arrival order, nobody overtakes."""

    name = "fcfs"
    overtaking_bound: int | None = 0


@dataclass(frozen=True)
class KeyOrdering(Ordering):
    """Sort by ``key(request, now_s)`` ascending; ties keep arrival order."""

    name = "key"
    static = False

    def key(self, r: RequestState, now_s: float) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def order(self, requests, now_s):
        return sorted(requests, key=lambda r: (self.key(r, now_s), r.arrival_s, r.rid))
