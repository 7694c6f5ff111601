"""Collective-communication time: the cost a parallel engine adds to each iteration.

Two ways to know how long an all-reduce of ``n`` bytes over ``w`` workers takes:

* :class:`Link` -- a link's bandwidth (GB/s, one direction, per GPU) and latency (microseconds), e.g.
  LLMServingSim's ``peer_sim_config.json`` (``link_bw``, ``link_latency``) or a GPU table entry.  The
  time is the ring algorithm's ``2 (w-1)/w * n / bandwidth + 2 (w-1) * latency``: every byte crosses
  the ring twice (reduce-scatter, then all-gather) in ``w-1`` steps each, and every step pays the
  link latency once.
* :class:`MeasuredAllReduce` -- a measured table of (workers, bytes, time), e.g. Vidur's
  ``all_reduce_pairwise_nvlink.csv``; times in between are interpolated linearly in bytes, and beyond
  the largest size the table continues at the bandwidth of its last two points.

Both answer ``allreduce_us(n_bytes, workers)``, vectorised in ``n_bytes``; one worker costs nothing.
``collective_us(n_bytes, workers, kind=)`` gives the other patterns a parallel engine uses, each stated
as a share of the ring all-reduce so that a measured all-reduce table answers them too:

* ``all_gather`` / ``reduce_scatter``: half the ring (``(w-1)/w * n / bandwidth + (w-1) * latency``);
* ``all_to_all`` (expert parallelism's dispatch and combine): every GPU sends the ``(w-1)/w`` share of
  its ``n`` bytes that belongs to the others, the same volume as a reduce-scatter, so half the ring;
* ``send`` (pipeline stages: one GPU hands ``n`` bytes of activations to the next): on a link
  ``n / bandwidth + latency``; from a measured all-reduce table, the two-worker all-reduce of the
  same message (it moves ``n`` bytes per GPU in two latency steps: an upper bound, stated).

References
----------
Patarasuk, Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations" (J. Parallel
Distrib. Comput. 2009) for the ring cost; Agrawal et al., "Vidur", arXiv:2405.05465 (measured tables).
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import open_text
from .._validate import integer
from ..errors import DataError, ParameterError

__all__ = ["Link", "MeasuredAllReduce", "ring_allreduce_us"]

_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send")
_HALF = ("all_gather", "reduce_scatter", "all_to_all")


def _positive(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, value, "a positive number") from None
    if not math.isfinite(v) or v <= 0:
        raise ParameterError(name, value, "a positive finite number")
    return v


def _nonnegative(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, value, "a number >= 0") from None
    if not math.isfinite(v) or v < 0:
        raise ParameterError(name, value, "a finite number >= 0")
    return v


def _bytes(n_bytes):
    a = np.asarray(n_bytes, dtype=float)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ParameterError("n_bytes", n_bytes, "finite message sizes >= 0 bytes")
    return a


def ring_allreduce_us(n_bytes, workers: int, *, bandwidth_gbps: float, latency_us: float):
    """Microseconds of a ring all-reduce of ``n_bytes`` over ``workers`` GPUs (vectorised)."""
    w = integer("workers", workers, minimum=1)
    bw = _positive("bandwidth_gbps", bandwidth_gbps)
    lat = _nonnegative("latency_us", latency_us)
    n = _bytes(n_bytes)
    if w == 1:
        return np.zeros(n.shape) if n.shape else 0.0
    us = 2.0 * (w - 1) / w * n / (bw * 1e3) + 2.0 * (w - 1) * lat  # GB/s = 1e3 bytes per microsecond
    return np.where(n > 0, us, 0.0) if n.shape else (float(us) if n > 0 else 0.0)


@dataclass(frozen=True, kw_only=True)
class Link:
    """A GPU-to-GPU link: ``bandwidth_gbps`` (GB/s per direction) and ``latency_us`` per message."""

    bandwidth_gbps: float
    latency_us: float
    name: str = "link"
    source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "bandwidth_gbps", _positive("bandwidth_gbps", self.bandwidth_gbps))
        object.__setattr__(self, "latency_us", _nonnegative("latency_us", self.latency_us))

    def allreduce_us(self, n_bytes, workers: int):
        return ring_allreduce_us(n_bytes, workers, bandwidth_gbps=self.bandwidth_gbps, latency_us=self.latency_us)

    def collective_us(self, n_bytes, workers: int, *, kind: str = "all_reduce"):
        """Microseconds of one collective of ``kind`` (see the module docstring) over ``workers`` GPUs."""
        if kind not in _KINDS:
            raise ParameterError("kind", kind, f"one of {', '.join(_KINDS)}")
        if kind == "send":
            w = integer("workers", workers, minimum=1)
            n = _bytes(n_bytes)
            if w == 1:
                return np.zeros(n.shape) if n.shape else 0.0
            us = n / (self.bandwidth_gbps * 1e3) + self.latency_us
            return np.where(n > 0, us, 0.0) if n.shape else (float(us) if n > 0 else 0.0)
        us = self.allreduce_us(n_bytes, workers)
        return us / 2.0 if kind in _HALF else us

    def describe(self) -> str:
        return f"{self.name}: {self.bandwidth_gbps:g} GB/s, {self.latency_us:g} us" + (
            f" ({self.source})" if self.source else "")

    @classmethod
    def from_peer_sim_config(cls, path) -> "Link":
        """LLMServingSim's ``peer_sim_config.json``: ``link_bw`` (GB/s) and ``link_latency`` (ns)."""
        from .._io import json_loads, read_text

        d = json_loads(read_text("peer_sim_config", Path(path), what="peer_sim_config.json"), where=str(path))
        if not isinstance(d, dict):
            raise DataError(f"{path}: expected a JSON object with link_bw and link_latency")
        node = d
        for key in ("link_bw", "link_latency"):
            if key not in node:
                found = _find_key(d, key)
                if found is None:
                    raise DataError(f"{path}: no {key!r} entry")
                node = found
        for key, what in (("link_bw", "a bandwidth in GB/s > 0"), ("link_latency", "a latency in ns >= 0")):
            v = node[key]  # checked here, naming the file and the field (a string or a list was an internal error)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (
                v > 0 if key == "link_bw" else v >= 0)
            if not ok:
                raise DataError(f"{path}: {key} = {json.dumps(v)[:40]}: expected {what}")
        return cls(bandwidth_gbps=node["link_bw"], latency_us=float(node["link_latency"]) / 1e3,
                   name="peer link", source=str(path))


def _find_key(d, key):
    if isinstance(d, dict):
        if key in d:
            return d
        for v in d.values():
            r = _find_key(v, key)
            if r is not None:
                return r
    elif isinstance(d, list):
        for v in d:
            r = _find_key(v, key)
            if r is not None:
                return r
    return None


@dataclass(frozen=True, kw_only=True)
class MeasuredAllReduce:
    """All-reduce times measured by message size, per worker count (``tables[w] = (bytes, us)``)."""

    tables: dict = field(repr=False)
    name: str = "measured all-reduce"
    source: str = ""

    def allreduce_us(self, n_bytes, workers: int):
        w = integer("workers", workers, minimum=1)
        n = _bytes(n_bytes)
        if w == 1:
            return np.zeros(n.shape) if n.shape else 0.0
        if w not in self.tables:
            raise ParameterError("workers", w, f"a worker count measured in {self.source or self.name}: "
                                 f"{sorted(self.tables)}")
        xs, ys = self.tables[w]
        us = np.interp(n, xs, ys)
        if len(xs) >= 2:
            slope = (ys[-1] - ys[-2]) / max(xs[-1] - xs[-2], 1e-300)
            us = np.where(n > xs[-1], ys[-1] + slope * (n - xs[-1]), us)
        us = np.where(n > 0, us, 0.0)
        return us if n.shape else float(us)

    def collective_us(self, n_bytes, workers: int, *, kind: str = "all_reduce"):
        """Microseconds of one collective of ``kind``; ``send`` is the two-worker all-reduce (an upper bound)."""
        if kind not in _KINDS:
            raise ParameterError("kind", kind, f"one of {', '.join(_KINDS)}")
        if kind == "send":
            w = integer("workers", workers, minimum=1)
            return self.allreduce_us(n_bytes, 2) if w > 1 else self.allreduce_us(n_bytes, 1)
        us = self.allreduce_us(n_bytes, workers)
        return us / 2.0 if kind in _HALF else us

    def describe(self) -> str:
        return f"{self.name} ({self.source})" if self.source else self.name

    @classmethod
    def from_vidur_csv(cls, path) -> "MeasuredAllReduce":
        """Vidur's ``all_reduce*.csv``: ``num_workers``, ``size`` (bytes), ``time_stats.all_reduce.median`` (ms)."""
        with open_text(Path(path)) as f:
            rows = list(csv.DictReader(f))
        if not rows:
            raise DataError(f"{path}: empty table")
        need = ("num_workers", "size", "time_stats.all_reduce.median")
        missing = [c for c in need if c not in rows[0]]
        if missing:
            raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
        tabs: dict = {}
        for r in rows:
            try:
                w, n, ms = int(r["num_workers"]), float(r["size"]), float(r["time_stats.all_reduce.median"])
            except (TypeError, ValueError):
                raise DataError(f"{path}: a row with a non-numeric num_workers/size/time: {r}") from None
            if not (math.isfinite(n) and math.isfinite(ms)) or n < 0 or ms < 0:
                raise DataError(f"{path}: a row with a negative or non-finite size/time: {r}")
            tabs.setdefault(w, []).append((n, ms * 1e3))
        tables = {}
        for w, v in tabs.items():
            v.sort()
            tables[w] = (np.array([x for x, _ in v]), np.array([y for _, y in v]))
        return cls(tables=tables, name="measured all-reduce", source=str(path))
