"""DISTBOOST: a prediction-free, distribution-aware ordering (the UNIBOOST paper's strawman, as fluidq builds it).

The UNIBOOST paper (Li et al., arXiv:2606.18431) sets its prediction-free gamma-Boost against a
"distribution" approach that uses the workload's length distribution rather than a per-request
prediction.  The paper's exact definition was not available to fluidq, so this is **fluidq's
reconstruction**, stated as such: shortest *expected* remaining processing time given the work
attained so far,

    key(r) = remaining prefill + E[D - d | D > d],

with ``D`` drawn from a sample of the workload's output lengths and ``d`` the tokens the request
has decoded.  Under a heavy tail a request that has run long gets a *larger* expected remainder (the
decreasing-hazard effect), so it is pushed back like under LAS; under a light tail it is pulled
forward like under SRPT.  The request's own output length is never read.

A decoded count at or above the sample's largest length (beyond the known support) gets an expected
remainder of one token.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import array
from .orderings import KeyOrdering

__all__ = ["DistBoost"]


@dataclass(frozen=True, kw_only=True)
class DistBoost(KeyOrdering):
    """Shortest expected remaining time from a sample of output lengths (see the module docstring).

    Parameters
    ----------
    output_lengths : array_like
        A sample of the workload's output lengths in tokens (each ``>= 1``; at least 1 value).
    """

    output_lengths: tuple = field(default=(), compare=False)
    _table: dict = field(default_factory=dict, repr=False, compare=False)
    # what equality and hashing see of the sample: a digest of the sorted lengths (the ordering reads
    # nothing else), so two DistBoost with different samples never compare equal -- with ``eq=False`` they
    # inherited KeyOrdering's field-less equality and did, and caches keyed on policies mixed them
    _lengths_key: str | None = field(default=None, init=False, repr=False)

    name = "distboost"
    static = False

    def __post_init__(self):
        super().__post_init__()
        L = np.sort(array("output_lengths", self.output_lengths, positive=True, min_len=1))
        if np.any(L < 1):
            from ..errors import ParameterError

            raise ParameterError("output_lengths", f"<min {L.min():g}>", "output lengths >= 1 token")
        tail = np.cumsum(L[::-1])[::-1]                     # sum of L[i:]
        self._table.update(L=L, tail=tail)
        import hashlib

        object.__setattr__(self, "_lengths_key",
                           hashlib.sha256(np.ascontiguousarray(L, dtype=float).tobytes()).hexdigest())

    def expected_remaining(self, decoded: float) -> float:
        """``E[D - d | D > d]`` for ``d = decoded`` (1 beyond the sample's largest length)."""
        L, tail = self._table["L"], self._table["tail"]
        i = int(np.searchsorted(L, decoded, side="right"))
        if i >= L.size:
            return 1.0
        return float(tail[i] / (L.size - i) - decoded)

    def key(self, r, now_s):
        return (r.prompt_tokens - r.prefilled) + self.expected_remaining(r.decoded)

    def describe(self) -> str:
        L = self._table["L"]
        return f"DISTBOOST (fluidq's reconstruction: expected remaining time from {L.size} lengths, mean {L.mean():.4g})"
