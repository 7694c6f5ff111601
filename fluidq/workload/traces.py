"""Request traces: readers for CSV traces (Azure's and a plain one) and the Mooncake JSONL format.

A :class:`Trace` holds per-request arrival times (seconds from the first request), prompt
tokens and output tokens.  ``load_trace(path)`` detects the format from the header / first
line (the formats: :data:`TRACE_FORMATS`, and "Trace files" in ``docs/reference/descriptions.md``); embedded traces are named
``"azure-conv"`` and ``"azure-code"`` (Azure LLM inference trace, Nov 2023, CC-BY 4.0, from the
Splitwise paper, ISCA 2024; copies under ``fluidq/data/``, see ``fluidq/data/PROVENANCE.md``).
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import numpy as np

from .._io import gunzip_bytes, json_loads, read_text
from ..errors import DataError, ParameterError, UnknownNameError

__all__ = ["EMBEDDED_TRACES", "MAX_TOKENS", "TRACE_FORMATS", "Trace", "load_trace"]

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
    #: the file's column (or field) of the arrival times, for messages
    time_field: str = "arrival_s"

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

    def check_rate(self) -> None:
        """Refuse a trace whose mean arrival rate is below the least fluidq models (``MIN_RATE_PER_S``, one request
        in about 30 years), naming the trace and its time column: the arrivals built from it would refuse it as an
        internal parameter (``rate_per_s=np.float64(1e-12)``, review revbad2 L4).  A file may hold such times
        (:data:`MAX_SECONDS`); a workload cannot run on them."""
        from .._validate import MIN_RATE_PER_S

        rate = self.rate_per_s  # inf for one request or no span
        if rate < MIN_RATE_PER_S:
            span = float(self.arrival_s[-1] - self.arrival_s[0])
            raise DataError(f"{self.source}: {len(self)} requests over {span:.6g} s of arrival times (column "
                            f"{self.time_field}), a mean rate of {rate:.3g} req/s: expected at least "
                            f"{MIN_RATE_PER_S:g} req/s (one request in about 30 years, the least fluidq models); are "
                            "the times in another unit?")


#: the most tokens one request may have: far beyond any context window, and small enough that the
#: token sums over a trace (rates, means, batch budgets) stay exact in 64-bit integers
MAX_TOKENS = 2**31 - 1
#: the largest |timestamp| a Mooncake record may have, in milliseconds (1e15 ms is about 31,700 years):
#: beyond it a float no longer resolves the millisecond, and the span of the trace would lose its meaning
MAX_TIMESTAMP_MS = 1e15
#: the largest arrival time in seconds a CSV trace may give: the same instant as Mooncake's bound (1e12 s)
MAX_SECONDS = MAX_TIMESTAMP_MS / 1e3
_INT = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

#: the trace files ``load_trace`` reads (one line each; the documentation and ``--trace``'s help say the same)
TRACE_FORMATS = (
    "CSV with header arrival_s,prompt_tokens,output_tokens: arrival time in seconds (a number >= 0), "
    "prompt and output tokens (whole numbers >= 1)",
    "Azure CSV with header TIMESTAMP,ContextTokens,GeneratedTokens: TIMESTAMP an ISO date and time "
    "(Azure's own traces) or a number of seconds >= 0",
    "Mooncake JSONL: one JSON object per line with timestamp (ms), input_length, output_length",
)
_PLAIN = ["arrival_s", "prompt_tokens", "output_tokens"]
_AZURE = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
_FRACTION = re.compile(r"^(.*?[0-9]:[0-9]{2}:[0-9]{2}\.)([0-9]+)(.*)$")


def _tokens(value, where: str, field: str) -> int:
    """A token count read from a file: a whole number in ``[1, MAX_TOKENS]``, or a DataError at ``where``."""
    if isinstance(value, str):  # a CSV cell: decimal digits only (no 1.5, no 1e3, no "true")
        text = value.strip()
        if not _INT.fullmatch(text):
            raise DataError(f"{where}: {field} = {value!r}: expected a whole number of tokens")
        n = int(text)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DataError(f"{where}: {field} = {json.dumps(value)[:40]}: expected a whole number of tokens, "
                        f"not {'a boolean' if isinstance(value, bool) else type(value).__name__}")
    elif isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise DataError(f"{where}: {field} = {value!r}: expected a whole number of tokens (it is not "
                        "rounded silently)")
    else:
        n = int(value)
    if n < 1:
        raise DataError(f"{where}: {field} = {n}: a length below one token; filter such rows explicitly")
    if n > MAX_TOKENS:
        raise DataError(f"{where}: {field} = {value!r}: more than {MAX_TOKENS:,} (2**31-1) tokens, the most "
                        "fluidq takes for one request (far beyond any context window; larger counts would "
                        "overflow the token sums over the trace)")
    return n


def column(name: str, values, tokens: bool) -> np.ndarray:
    """A column given in memory (``fluidq.simulate(engine, {arrival_s, prompt_tokens, output_tokens})``) read by
    the rules a trace file's cells follow (:func:`_tokens`): token counts whole numbers in ``[1, MAX_TOKENS]``
    (no rounding, no booleans, no strings), times finite numbers of seconds.  A ``ParameterError`` naming
    ``name`` and the first bad entry otherwise.  Returns int64 tokens or float seconds, 1-d."""
    what = "whole numbers of tokens" if tokens else "numbers of seconds"
    if not isinstance(values, np.ndarray) and any(isinstance(v, (bool, np.bool_)) for v in values):
        i = next(i for i, v in enumerate(values) if isinstance(v, (bool, np.bool_)))
        raise ParameterError(f"{name}[{i}]", values[i], what, "not a boolean")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise ParameterError(name, "<column>", f"a 1-d column of {what}", str(exc)) from None
    if arr.dtype.kind == "b":
        raise ParameterError(name, "<booleans>", what, "not a boolean")
    if arr.dtype.kind not in "iuf":
        bad = arr.reshape(-1)[0] if arr.size else arr
        raise ParameterError(f"{name}[0]" if arr.size else name, bad.item() if arr.size else "<column>", what,
                             f"not {arr.dtype.kind == 'U' and 'a string' or arr.dtype}")
    if arr.ndim != 1:
        raise ParameterError(name, f"<{arr.ndim}-d column>", f"a 1-d column of {what}")
    if not tokens:
        bad = np.flatnonzero(~np.isfinite(arr)) if arr.dtype.kind == "f" else ()
        if len(bad):
            raise ParameterError(f"{name}[{bad[0]}]", arr[bad[0]].item(), "finite " + what)
        return arr.astype(float)
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~(np.isfinite(arr) & (arr == np.floor(arr))))
        if len(bad):
            raise ParameterError(f"{name}[{bad[0]}]", arr[bad[0]].item(), "a whole number of tokens",
                                 "it is not rounded silently")
    bad = np.flatnonzero(arr < 1)
    if len(bad):
        raise ParameterError(f"{name}[{bad[0]}]", arr[bad[0]].item(), "at least one token",
                             "a length below one token; filter such rows explicitly")
    bad = np.flatnonzero(arr > MAX_TOKENS)
    if len(bad):
        raise ParameterError(f"{name}[{bad[0]}]", arr[bad[0]].item(), f"at most {MAX_TOKENS:,} (2**31-1) tokens",
                             "the most fluidq takes for one request, as in a trace file")
    return arr.astype(np.int64)


def refuse_duplicate_columns(source, names, read=None) -> None:
    """Refuse a CSV header that names a column twice: a reader keeps one of them (the first here, the last in
    ``csv.DictReader``) without a word.  ``names`` the header's cells as compared (stripped); ``read`` the columns
    the reader uses (None: every column), a duplicate of another being ignored as that column is.  The message
    names the file, the column and the header."""
    for col in (read if read is not None else names):
        if names.count(col) > 1:
            shown = ",".join(names)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise DataError(f"{source}: the header has the column {col!r} {names.count(col)} times (header: "
                            f"{shown}); which one is meant is unknown")


def _stamp(text: str, where: str) -> datetime:
    stamp = text.strip()
    m = _FRACTION.match(stamp)
    if m and len(m.group(2)) > 6:  # Azure stamps carry 7 fractional digits: keep 6 (and any offset after them)
        stamp = m.group(1) + m.group(2)[:6] + m.group(3)
    try:
        return datetime.fromisoformat(stamp)
    except ValueError as exc:
        raise DataError(f"{where}: TIMESTAMP = {text!r}: not an ISO date and time ({exc})") from None


def _seconds(text: str, where: str, field: str) -> float:
    """An arrival time in seconds read from a CSV cell: a finite decimal number in ``[0, MAX_SECONDS]``."""
    cell = text.strip()
    if not _NUMBER.fullmatch(cell):
        what = "empty" if not cell else f"{text!r}"
        raise DataError(f"{where}: {field} = {what}: expected a number of seconds >= 0 (a finite decimal number)")
    t = float(cell)
    if not (0.0 <= t <= MAX_SECONDS):
        raise DataError(f"{where}: {field} = {text!r}: expected a number of seconds >= 0 (and at most "
                        f"{MAX_SECONDS:g}, about 31,700 years)" + ("; a negative arrival time has no meaning" if t < 0
                                                                  else ""))
    return t


def _parse_csv(text: str, source: str) -> Trace:
    """CSV rows: the plain format (``arrival_s,prompt_tokens,output_tokens``) or Azure's
    (``TIMESTAMP,ContextTokens,GeneratedTokens``; further columns are ignored in both).

    An Azure TIMESTAMP is either an ISO date and time or, when the file's first row has a number there,
    seconds (every row then).  ISO stamps with a UTC offset are converted to UTC, so rows with different
    offsets (a log that crosses a daylight-saving change) are ordered correctly; stamps without one
    are read as UTC (no local time zone, no daylight-saving jump).  A file that mixes the two is
    refused: the naive stamps could be in any zone."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise DataError(f"{source}, line 1: not a CSV header ({exc})") from None
    got = [h.strip() for h in header[:3]] if header else []
    if got not in (_PLAIN, _AZURE):
        shown = ",".join(header)[:80] if header else "nothing"
        raise DataError(f"{source}: line 1 is {shown!r}; expected a trace header {','.join(_PLAIN)} (seconds, "
                        f"tokens, tokens) or Azure's {','.join(_AZURE)}, or Mooncake JSONL records "
                        "(see 'Trace files' in docs/reference/descriptions.md)")
    fields = got
    names = [h.strip() for h in header]
    refuse_duplicate_columns(source, names, fields)
    numeric = True if fields == _PLAIN else None  # Azure: decided by the first row
    ts, p, o, lines = [], [], [], []
    naive = aware = None  # the first line of each kind of time stamp
    first_kind = None  # (line, "a number" | "an ISO date") of an Azure file's first row
    lineno = 1
    try:
        for row in reader:
            lineno = reader.line_num
            if not row or not any(c.strip() for c in row):
                continue
            where = f"{source}, line {lineno}"
            if len(row) < 3:
                raise DataError(f"{where}: expected 3 columns ({','.join(fields)}), got {len(row)}")
            if any(c.strip() for c in row[len(header):]):  # a cell no column names (a row of another file, a
                # stray comma inside a row): refused, not dropped; empty trailing cells (a spreadsheet's commas) hold nothing
                raise DataError(f"{where}: {len(row)} cells, but the header names {len(header)} column"
                                f"{'s' if len(header) > 1 else ''} ({','.join(h.strip() for h in header)[:80]}): "
                                "expected at most one cell per column (a cell past the header would be dropped; empty trailing cells "
                                "are read as nothing)")
            if numeric is None:
                numeric = bool(_NUMBER.fullmatch(row[0].strip())) or row[0].strip().lower() in (
                    "nan", "inf", "-inf", "+inf", "infinity", "-infinity")
                first_kind = (lineno, "a number of seconds" if numeric else "an ISO date and time")
            if numeric:
                try:
                    ts.append(_seconds(row[0], where, fields[0]))
                except DataError as exc:
                    if first_kind is None or first_kind[0] == lineno:
                        raise
                    raise DataError(f"{exc} (line {first_kind[0]} gives seconds: a file gives every TIMESTAMP as "
                                    "seconds or every one as an ISO date and time)") from None
            else:
                if _NUMBER.fullmatch(row[0].strip()):
                    raise DataError(f"{where}: TIMESTAMP = {row[0]!r}: a number, but line {first_kind[0]} gives an "
                                    "ISO date and time (a file gives every TIMESTAMP as seconds or every one as an "
                                    "ISO date and time)")
                dt = _stamp(row[0], where)
                if dt.tzinfo is None or dt.utcoffset() is None:
                    naive = naive or lineno
                    dt = dt.replace(tzinfo=timezone.utc)
                else:
                    aware = aware or lineno
                if naive and aware:
                    raise DataError(f"{source}: line {aware} has a time stamp with a UTC offset and line {naive} "
                                    "one without: the time zone of the naive stamps is unknown, so the rows cannot "
                                    "be ordered; give every stamp an offset, or none")
                ts.append(dt.timestamp())
            p.append(_tokens(row[1], where, fields[1]))
            o.append(_tokens(row[2], where, fields[2]))
            lines.append(lineno)
    except csv.Error as exc:
        raise DataError(f"{source}, line {lineno + 1}: not a CSV row ({exc})") from None
    if not ts:
        raise DataError(f"{source}: a header but no requests")
    return _finish(ts, p, o, source, lines, fields[0])


def _parse_mooncake(text: str, source: str) -> Trace:
    ts, p, o, lines = [], [], [], []
    fields = "timestamp (ms), input_length, output_length"
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}, line {lineno}"
        rec, twice = _record(line, where)
        if not isinstance(rec, dict):
            raise DataError(f"{where}: not a Mooncake record (a JSON object with {fields})")
        missing = [k for k in ("timestamp", "input_length", "output_length") if k not in rec]
        if missing:
            raise DataError(f"{where}: not a Mooncake record: no {', '.join(missing)} (expected {fields})")
        if twice:
            raise DataError(f"{where}: {twice} is given twice in the record (JSON keeps the last one silently); "
                            "give each field once")
        stamp = rec["timestamp"]
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
            raise DataError(f"{where}: timestamp = {json.dumps(stamp)[:40]}: expected a number of milliseconds")
        if not (math.isfinite(stamp) and abs(stamp) <= MAX_TIMESTAMP_MS):
            raise DataError(f"{where}: timestamp = {stamp!r}: expected a finite time in milliseconds, at most "
                            f"{MAX_TIMESTAMP_MS:g} in size (about 31,700 years)")
        ts.append(float(stamp) / 1e3)
        p.append(_tokens(rec["input_length"], where, "input_length"))
        o.append(_tokens(rec["output_length"], where, "output_length"))
        lines.append(lineno)
    if not ts:
        raise DataError(f"{source}: no requests")
    return _finish(ts, p, o, source, lines, "timestamp (ms)")


def _record(line: str, where: str):
    """``(record, field)``: the parsed line and the first of the three Mooncake fields that its top-level
    object holds twice, or None (:func:`json_record`)."""
    return json_record(line, where, names=("timestamp", "input_length", "output_length"))


def json_record(text: str, where: str, names=None, *, constants: bool = False):
    """``(value, key)``: ``text`` parsed as JSON (:func:`fluidq._io.json_loads`, ``where`` naming the file and line in
    its errors) and the first key an object of it holds twice, or None -- JSON readers keep the last value of a
    duplicated key without a word, so a record edited by hand or written twice reads as another one.  With
    ``names``, only those keys of the top-level object are looked at, and a cheap count first: only a text that
    mentions one of them twice is parsed keeping every key (once: the value is built from the same pairs, the
    last value winning as in JSON).  Without, every key of every object (the pairs are kept for each).
    ``constants=True`` reads Python's ``NaN`` / ``Infinity`` as floats (for a caller that refuses them by field,
    naming it: a buggy writer's stamp), which :func:`~fluidq._io.json_loads` refuses as not JSON."""
    if names is not None and not any(text.count(f'"{k}"') > 1 for k in names):
        return json_loads(text, where=where, constants=constants), None
    seen: list = []
    twice: list = []

    def pairs(items):
        keys = [k for k, _ in items]
        seen.append(keys)
        if names is None and not twice and len(set(keys)) < len(keys):
            twice.append(next(k for n, k in enumerate(keys) if k in keys[:n]))
        return dict(items)

    rec = json_loads(text, where=where, object_pairs_hook=pairs, constants=constants)
    if names is None:
        return rec, (twice[0] if twice else None)
    if not isinstance(rec, dict):
        return rec, None
    top = seen[-1]  # the outermost object is built last
    return rec, next((k for k in names if top.count(k) > 1), None)


def _finish(ts, p, o, source, lines=None, time_field: str = "arrival_s") -> Trace:
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
                 out_of_order=first, time_field=time_field)


def load_trace(path_or_name) -> Trace:
    """Read a trace from a path (a CSV trace, plain or Azure's; Mooncake JSONL; optionally gzipped) or an
    embedded name.  The formats (:data:`TRACE_FORMATS`):

    - CSV, header ``arrival_s,prompt_tokens,output_tokens``: arrival time in seconds (a number >= 0),
      prompt and output tokens (whole numbers >= 1);
    - Azure CSV, header ``TIMESTAMP,ContextTokens,GeneratedTokens``: an ISO date and time (Azure's
      traces) or a number of seconds >= 0 in every row;
    - Mooncake JSONL: ``{"timestamp": ms, "input_length": n, "output_length": n}`` per line.

    Only a regular file is read (a FIFO or a device is refused, it could block forever).  Every
    record is checked: token counts are whole numbers in ``[1, MAX_TOKENS]`` (a JSON ``true`` or
    ``1.9`` is refused, not read as 1), time stamps are finite (CSV seconds >= 0); a problem is a
    :class:`~fluidq.errors.DataError` naming the file and its line.  Azure time stamps with UTC
    offsets are converted to UTC; naive ones are read as UTC; a file mixing both is refused.
    """
    name = str(path_or_name)
    if name in EMBEDDED_TRACES:
        raw = resources.files("fluidq.data").joinpath(EMBEDDED_TRACES[name]).read_bytes()
        source = f"embedded:{name}"
        if raw[:2] == b"\x1f\x8b":
            raw = gunzip_bytes("trace", source, raw)
        text = raw.decode("utf-8")
    else:
        try:
            os.stat(name)
        except FileNotFoundError:
            raise UnknownNameError("trace (no such file and not an embedded name)", name, EMBEDDED_TRACES) from None
        except (OSError, ValueError):
            pass  # a loop, a name too long...: read_text says which
        text = read_text("trace", name, what="trace")
        source = str(Path(name))
    first = text.lstrip()[:1]
    if not first:
        raise DataError(f"{source}: the file is empty")
    if first == "{":
        return _parse_mooncake(text, source)
    return _parse_csv(text, source)
