"""Request traces: readers for the Azure LLM inference CSV and the Mooncake JSONL formats.

A :class:`Trace` holds per-request arrival times (seconds from the first request), prompt
tokens and output tokens.  ``load_trace(path)`` detects the format from the header / first
line; embedded traces are named ``"azure-conv"`` and ``"azure-code"`` (Azure LLM inference
trace, Nov 2023, CC-BY 4.0, from the Splitwise paper, ISCA 2024; copies under
``fluidq/data/``, see ``fluidq/data/PROVENANCE.md``).
"""
from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import DataError, UnknownNameError

__all__ = ["EMBEDDED_TRACES", "Trace", "load_trace"]

EMBEDDED_TRACES = {"azure-conv": "azure2023_conv.csv.gz", "azure-code": "azure2023_code.csv.gz"}


@dataclass(frozen=True, kw_only=True, eq=False)
class Trace:
    """Per-request arrival times and lengths.

    ``reordered``: how many records of the file were not in time order (the loader sorts them by time,
    stably, and says so here; the command line refuses such files instead); ``out_of_order``: the first
    record that arrives before the one above it, ``(its line, the line above, seconds earlier)``, or None.
    """

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = ""
    reordered: int = 0
    out_of_order: tuple | None = None

    def __post_init__(self):
        n = len(self.arrival_s)
        if n == 0:
            raise DataError(f"trace {self.source!r} has no requests")
        if not (len(self.prompt_tokens) == len(self.output_tokens) == n):
            raise DataError("trace columns have different lengths")
        if np.any(np.diff(self.arrival_s) < 0):
            raise DataError(f"trace {self.source!r}: arrival times are not sorted")

    def __len__(self):
        return len(self.arrival_s)

    @property
    def rate_per_s(self) -> float:
        span = float(self.arrival_s[-1] - self.arrival_s[0])
        return (len(self) - 1) / span if span > 0 else float("inf")


def _parse_azure(text: str, source: str) -> Trace:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    want = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
    if header is None or [h.strip() for h in header[:3]] != want:
        raise DataError(f"{source}: expected an Azure trace header {','.join(want)}, got {header}")
    ts, p, o, lines = [], [], [], []
    for lineno, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) < 3:
            raise DataError(f"{source}, line {lineno}: expected 3 columns, got {len(row)}")
        try:
            stamp = row[0].strip()
            # Azure stamps carry 7 fractional digits; datetime takes 6
            if "." in stamp:
                head, frac = stamp.split(".", 1)
                stamp = f"{head}.{frac[:6]}"
            ts.append(datetime.fromisoformat(stamp).timestamp())
            p.append(int(row[1]))
            o.append(int(row[2]))
        except ValueError as exc:
            raise DataError(f"{source}, line {lineno}: cannot parse {row!r} ({exc})") from None
        lines.append(lineno)
    return _finish(ts, p, o, source, lines)


def _parse_mooncake(text: str, source: str) -> Trace:
    ts, p, o, lines = [], [], [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            ts.append(float(rec["timestamp"]) / 1e3)
            p.append(int(rec["input_length"]))
            o.append(int(rec["output_length"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{source}, line {lineno}: not a Mooncake record with timestamp (ms), "
                            f"input_length, output_length ({exc!r})") from None
        lines.append(lineno)
    return _finish(ts, p, o, source, lines)


def _finish(ts, p, o, source, lines=None) -> Trace:
    if not ts:
        raise DataError(f"{source}: the trace is empty")
    t = np.asarray(ts, dtype=float)
    p = np.asarray(p, dtype=np.int64)
    o = np.asarray(o, dtype=np.int64)
    if np.any(p < 1) or np.any(o < 1):
        bad = int(np.flatnonzero((p < 1) | (o < 1))[0])
        raise DataError(f"{source}: request {bad} has a length below one token "
                        f"(prompt {p[bad]}, output {o[bad]}); filter such rows explicitly")
    back = np.flatnonzero(np.diff(t) < 0)
    first = None
    if len(back):
        k = int(back[0]) + 1
        ln = lines if lines is not None else range(1, len(t) + 1)
        first = (int(ln[k]), int(ln[k - 1]), float(t[k - 1] - t[k]))
    order = np.argsort(t, kind="stable")
    moved = int(np.count_nonzero(order != np.arange(len(order))))
    t = t[order] - t[order][0]
    return Trace(arrival_s=t, prompt_tokens=p[order], output_tokens=o[order], source=source, reordered=moved,
                 out_of_order=first)


def load_trace(path_or_name) -> Trace:
    """Read a trace from a path (Azure CSV, Mooncake JSONL, optionally gzipped) or an embedded name."""
    name = str(path_or_name)
    if name in EMBEDDED_TRACES:
        raw = resources.files("fluidq.data").joinpath(EMBEDDED_TRACES[name]).read_bytes()
        source = f"embedded:{name}"
    else:
        path = Path(name)
        if not path.exists():
            raise UnknownNameError("trace (no such file and not an embedded name)", name, EMBEDDED_TRACES)
        raw = path.read_bytes()
        source = str(path)
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{source}: not a UTF-8 text file") from None
    first = text.lstrip()[:1]
    if not first:
        raise DataError(f"{source}: the file is empty")
    if first == "{":
        return _parse_mooncake(text, source)
    return _parse_azure(text, source)
