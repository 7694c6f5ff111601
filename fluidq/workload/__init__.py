"""Workloads: an arrival process and prompt/output length distributions.

``arrivals``  Poisson, Periodic, Gamma (bursty), TraceArrivals
``lengths``   Fixed, Geometric, PoissonLength, LogNormal, Empirical
``traces``    CSV (plain or Azure's) / Mooncake JSONL readers and the embedded Azure traces
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._validate import integer, real, seed_sequence
from ..errors import ParameterError
from .arrivals import Arrival, Gamma, Periodic, Poisson, TraceArrivals
from .lengths import (
    Empirical,
    Fixed,
    Geometric,
    Length,
    LogNormal,
    PoissonLength,
    as_length,
)
from .traces import EMBEDDED_TRACES, Trace, load_trace

__all__ = [
    "EMBEDDED_TRACES",
    "STREAM_CHUNK",
    "Arrival",
    "Empirical",
    "Fixed",
    "Gamma",
    "Geometric",
    "Length",
    "LogNormal",
    "Periodic",
    "Poisson",
    "PoissonLength",
    "Trace",
    "TraceArrivals",
    "Workload",
    "load_trace",
]


#: requests per chunk of :meth:`Workload.sample_chunks` (part of its definition: the sample depends on it)
STREAM_CHUNK = 1 << 16
#: the spawn-key element that sets the chunked sampler's generators apart from replications' children
_STREAM_KEY = 0x5EED_C0DE


@dataclass(frozen=True, kw_only=True, eq=False)
class Workload:
    """Requests arriving to an engine.

    Parameters
    ----------
    arrival : Arrival
        The arrival process (``fluidq.Poisson(rate_per_s=...)``...).
    prompt_tokens, output_tokens : int or Length
        Prompt (prefill, ``v_p``) and output (decode, ``v_d``) lengths; an int is deterministic.
    trace : Trace, optional
        When set, :meth:`sample` replays the trace's (arrival, prompt, output) rows, time-scaled
        to ``arrival.rate_per_s``; with another arrival process (e.g. ``Poisson``) it draws the
        (prompt, output) rows at random, keeping the lengths' joint distribution, which the
        analyses of a KV-cache limit read too (:func:`fluidq.capacity.mean_resident_context`).

    Examples
    --------
    >>> from fluidq import Workload, Poisson
    >>> w = Workload(arrival=Poisson(rate_per_s=10.0), prompt_tokens=100, output_tokens=100)
    >>> w.mean_tokens
    200.0
    """

    arrival: Arrival
    prompt_tokens: Length | int
    output_tokens: Length | int
    trace: Trace | None = None
    name: str = "workload"

    def __post_init__(self):
        if not isinstance(self.arrival, Arrival):
            raise ParameterError("arrival", self.arrival, "a fluidq arrival process",
                                 "e.g. fluidq.Poisson(rate_per_s=10)")
        object.__setattr__(self, "prompt_tokens", as_length("prompt_tokens", self.prompt_tokens))
        object.__setattr__(self, "output_tokens", as_length("output_tokens", self.output_tokens))

    @property
    def replays_trace(self) -> bool:
        """Whether :meth:`sample` replays the trace's rows at their own (scaled) times: one sample path,
        and at most ``len(trace)`` requests."""
        return self.trace is not None and isinstance(self.arrival, TraceArrivals)

    @property
    def arrival_rate_per_s(self) -> float:
        return self.arrival.rate_per_s

    @property
    def mean_prompt_tokens(self) -> float:
        """``m_p``."""
        return self.prompt_tokens.mean

    @property
    def mean_output_tokens(self) -> float:
        """``m_d``."""
        return self.output_tokens.mean

    @property
    def mean_tokens(self) -> float:
        """``m_p + m_d``."""
        return self.mean_prompt_tokens + self.mean_output_tokens

    @property
    def token_rate_per_s(self) -> float:
        """Offered load in tokens per second, ``lambda (m_p + m_d)``."""
        return self.arrival_rate_per_s * self.mean_tokens

    def with_rate(self, rate_per_s: float) -> Workload:
        """The same workload at another arrival rate (a trace is time-scaled)."""
        return replace(self, arrival=self.arrival.with_rate(real("rate_per_s", rate_per_s, positive=True)))

    def sample(self, rng: np.random.Generator, horizon_s: float | None = None, n: int | None = None):
        """Draw ``(arrival_s, prompt_tokens, output_tokens)`` arrays."""
        t = self.arrival.times(rng, horizon_s=horizon_s, n=n)
        k = len(t)
        if self.replays_trace:  # the rows in order, at their (scaled) times
            return t, self.trace.prompt_tokens[:k].copy(), self.trace.output_tokens[:k].copy()
        return (t, *self._lengths(rng, k))

    def _lengths(self, rng: np.random.Generator, k: int):
        """``k`` (prompt, output) pairs drawn with ``rng`` (after the arrival times, in :meth:`sample` and in each
        chunk of :meth:`sample_chunks`): rows of the trace at random, so that the lengths keep their joint
        distribution (the KV cache a request holds depends on both), else from the two length distributions."""
        if self.trace is not None:
            rows = rng.integers(0, len(self.trace), size=k)
            return (np.asarray(self.trace.prompt_tokens)[rows].astype(np.int64),
                    np.asarray(self.trace.output_tokens)[rows].astype(np.int64))
        return self.prompt_tokens.sample(rng, k), self.output_tokens.sample(rng, k)

    def sample_chunks(self, rng, horizon_s: float | None = None, n: int | None = None,
                      chunk: int = STREAM_CHUNK):
        """Draw ``(arrival_s, prompt_tokens, output_tokens)`` chunk by chunk: an iterator of array triples.

        Chunk ``i`` (``chunk`` requests, the last one fewer) is drawn from its own generator, seeded by the
        child ``(*root.spawn_key, 0x5EEDC0DE, i)`` of the root SeedSequence of ``rng`` (a seed, a
        SeedSequence, None, or a Generator from which one seed is drawn): arrival gaps, then prompts, then
        outputs, the times continuing from the previous chunk's last arrival.  So the sample is a function
        of ``(rng, horizon_s, n, chunk)`` alone, the same however many chunks a consumer holds at once, and
        a consumer needs one chunk in memory.  It is a different draw from :meth:`sample`'s (which draws
        whole arrays from one generator): the same distribution, not the same numbers.  A replayed trace
        (``TraceArrivals`` and a ``trace``) has no randomness: its rows are yielded in order, as :meth:`sample`
        gives them.  Recorded times without a trace (``TraceArrivals`` and length distributions) are
        :meth:`sample`'s times, in chunks, each chunk's lengths drawn from its own generator.
        """
        from .arrivals import _check_limits

        chunk = integer("chunk", chunk, minimum=1)
        if self.replays_trace:
            t, p, d = self.sample(None, horizon_s=horizon_s, n=n)
            for i in range(0, len(t), chunk):
                yield t[i:i + chunk], p[i:i + chunk], d[i:i + chunk]
            return
        root = seed_sequence(rng)

        def generator(i):
            return np.random.default_rng(np.random.SeedSequence(root.entropy,
                                                                spawn_key=(*root.spawn_key, _STREAM_KEY, i)))

        if isinstance(self.arrival, TraceArrivals):  # recorded times (held by the arrival already): no gaps to draw
            t = self.arrival.times(None, horizon_s=horizon_s, n=n)
            for i, s in enumerate(range(0, len(t), chunk)):
                ti = t[s:s + chunk]
                yield (ti, *self._lengths(generator(i), len(ti)))
            return
        h, k = _check_limits(horizon_s, n, self.arrival_rate_per_s)
        t0, done, i = 0.0, 0, 0
        while k is None or done < k:
            m = chunk if k is None else min(chunk, k - done)
            g = generator(i)
            t = t0 + np.cumsum(self.arrival._gaps(g, m))
            p, d = self._lengths(g, m)
            i += 1
            done += m
            if h is not None and t[-1] > h:
                keep = int(np.searchsorted(t, h, side="right"))
                if keep:
                    yield t[:keep], p[:keep], d[:keep]
                return
            yield t, p, d
            t0 = float(t[-1])

    @classmethod
    def from_trace(cls, path_or_name, rate_per_s: float | None = None, name: str | None = None) -> Workload:
        """A workload replaying a trace (a CSV trace -- plain ``arrival_s,prompt_tokens,output_tokens`` or Azure's --, Mooncake JSONL, or ``"azure-conv"``/``"azure-code"``; see :func:`~fluidq.workload.traces.load_trace`).

        Lengths are the trace's empirical distributions (used by analyses); :meth:`sample` replays
        the rows in order.  ``rate_per_s`` rescales time (default: the trace's own rate).
        """
        from .._validate import MAX_REQUEST_TOKENS
        from ..errors import DataError, ParameterError

        tr = load_trace(path_or_name)
        if len(tr) < 2:
            raise DataError(f"{tr.source}: a trace needs at least 2 requests to define a rate")
        lengths = {}
        for col, arr in (("prompt", tr.prompt_tokens), ("output", tr.output_tokens)):
            try:  # Empirical checks the cap (load_trace reads up to 2**31-1; a length holds at most 2**30)
                lengths[col] = Empirical(values=tuple(arr))
            except ParameterError as exc:
                # its message names `values`, which the caller never gave: name the trace, request and column
                big = np.flatnonzero(np.asarray(arr) > MAX_REQUEST_TOKENS)
                if exc.name != "values" or not big.size:
                    raise
                i = int(big[0])
                raise DataError(f"{tr.source}: request {i} (in time order) has {int(arr[i]):,} {col} tokens, more than "
                                f"the {MAX_REQUEST_TOKENS:,} (2**30) a workload takes for one request") from exc
        tr.check_rate()  # a rate below the least one, said of the trace and its column, not of rate_per_s
        arr = TraceArrivals(times_s=tuple(tr.arrival_s))
        if rate_per_s is not None:
            arr = arr.with_rate(rate_per_s)
        return cls(arrival=arr, prompt_tokens=lengths["prompt"], output_tokens=lengths["output"], trace=tr,
                   name=name or tr.source)

    def to_dict(self) -> dict:
        out = {"name": self.name, "arrival": self.arrival.to_dict(),
               "prompt_tokens": self.prompt_tokens.to_dict(), "output_tokens": self.output_tokens.to_dict(),
               "mean_prompt_tokens": self.mean_prompt_tokens, "mean_output_tokens": self.mean_output_tokens}
        if self.trace is not None:
            out["trace"] = {"source": self.trace.source, "requests": len(self.trace),
                            "reordered_records": self.trace.reordered}
        return out
