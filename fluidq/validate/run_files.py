"""The files of a run folder (:mod:`fluidq.validate.runs`): under which names each is found
(:data:`RUN_FILE_NAMES`, :func:`run_file`), the request fields and timeseries columns under other
recorders' names (:data:`REQUEST_ALIASES`, :data:`TS_ALIASES`), the timeseries read and checked
(:func:`_read_timeseries`), the checks of a request's stamps and optional fields, and the peer simulator's
summary (:func:`read_peer_summary`).  :func:`fluidq.validate.runs.read_run` reads a folder through them.

A request whose stamps are out of order (``queued_ts <= scheduled_ts <= first_token_ts <= last_token_ts``
on vLLM's engine clock), a timeseries row with a negative count or rate, or tick times that do not increase
are refused naming the file, line and field.
"""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np

from .._io import open_text
from ..errors import DataError

__all__ = ["RUN_FILE_NAMES", "REQUEST_ALIASES", "TS_ALIASES", "TS_FRACTION_ALIASES", "TS_REQUIRED", "run_file",
           "read_peer_summary"]


# the run's three files under the names LLMServingSim's versions give them: the shared runs' ``vllm_*``,
# its bench runner's own output folder (``meta.json``, ...), its examples' ``vllm/`` subfolder
RUN_FILE_NAMES = {"meta": ("vllm_meta.json", "meta.json", "vllm/meta.json"),
                  "requests": ("vllm_requests.jsonl", "requests.jsonl", "vllm/requests.jsonl"),
                  "timeseries": ("vllm_timeseries.csv", "timeseries.csv", "vllm/timeseries.csv")}

# per-request fields under the names other recorders give them (vLLM's RequestStateStats names the stamps)
REQUEST_ALIASES = {"input_toks": ("prompt_tokens", "num_prompt_tokens", "input_tokens", "prompt_len", "input_len"),
                   "output_toks": ("output_tokens", "num_generation_tokens", "num_output_tokens",
                                   "completion_tokens", "output_len")}

# timeseries columns under vLLM's own metric names (with or without the ``vllm:`` prefix); a KV-use
# column named as vLLM's gauges is a fraction (1 = full), ``kv_cache_pct`` a percentage
TS_ALIASES = {"t": ("time", "time_s", "elapsed_s", "timestamp"),
              "prompt_throughput": ("prompt_tokens_per_s", "avg_prompt_throughput", "prompt_throughput_toks_per_s"),
              "gen_throughput": ("generation_throughput", "generation_tokens_per_s", "avg_generation_throughput",
                                 "gen_throughput_toks_per_s"),
              "running": ("num_running", "num_requests_running", "num_running_reqs"),
              "waiting": ("num_waiting", "num_requests_waiting", "num_waiting_reqs", "pending"),
              "kv_cache_pct": ("kv_cache_usage_pct", "gpu_cache_usage_pct"),
              "preempted": ("num_preempted", "num_preempted_reqs", "num_preemptions")}
TS_FRACTION_ALIASES = ("kv_cache_usage", "kv_cache_usage_perc", "gpu_cache_usage_perc", "gpu_cache_usage")
TS_REQUIRED = ("t", "prompt_throughput", "gen_throughput", "running", "waiting")


def run_file(folder, kind: str) -> Path:
    """The run's ``kind`` file (``"meta"``, ``"requests"``, ``"timeseries"``) in ``folder``, under any name of
    :data:`RUN_FILE_NAMES` (gzipped too); a folder with none of them is refused naming them."""
    folder = Path(folder)
    for n in RUN_FILE_NAMES[kind]:
        for cand in (folder / n, folder / (n + ".gz")):
            if cand.is_file():
                return folder / n
    raise DataError(f"{folder}: no {' or '.join(RUN_FILE_NAMES[kind])} (the run's {kind}; LLMServingSim's layout "
                    "is vllm_meta.json, vllm_requests.jsonl, vllm_timeseries.csv)")


def _request_value(r: dict, key: str):
    if key in r:
        return r[key]
    for a in REQUEST_ALIASES.get(key, ()):
        if a in r:
            return r[a]
    raise KeyError(key)


def _read_timeseries(tsp: Path) -> dict:
    """The timeseries columns by fluidq's names (aliases mapped, a KV fraction made a percentage); an unknown
    layout is refused naming the missing column and the names accepted for it."""
    from ..workload.traces import refuse_duplicate_columns  # the --trace reader's check (fit's CSVs say the same)

    raw, line_of = {}, []  # line_of[i]: the file's line of row i (the reader skips blank lines)
    with open_text(tsp) as f:
        reader = csv.DictReader(f)
        try:
            # a column named twice: DictReader keeps the last silently (every column is kept: each one is read)
            refuse_duplicate_columns(tsp, [k.strip().removeprefix("vllm:") for k in (reader.fieldnames or [])])
            for r in reader:
                line_of.append(reader.line_num)
                for k, v in r.items():
                    if k is None:
                        raise DataError(f"{tsp}, line {reader.line_num}: more cells than the header names")
                    try:
                        x = float(v)
                    except (TypeError, ValueError):
                        raise DataError(f"{tsp}, line {reader.line_num}: column {k!r} = {v!r}: not a number") from None
                    raw.setdefault(k, []).append(x)
        except csv.Error as exc:
            raise DataError(f"{tsp}, line {reader.line_num}: not a CSV row ({exc})") from None
    names = {k.strip().removeprefix("vllm:"): k for k in raw}
    ts, src = {}, {}  # src: the column's name in the file, for messages
    for key, aliases in TS_ALIASES.items():
        for n in (key, *aliases):
            if n in names:
                ts[key], src[key] = np.asarray(raw[names[n]], dtype=float), names[n]
                break
    if "kv_cache_pct" not in ts:
        for n in TS_FRACTION_ALIASES:
            if n in names:
                ts["kv_cache_pct"], src["kv_cache_pct"] = 100.0 * np.asarray(raw[names[n]], dtype=float), names[n]
                break
    for k, v in raw.items():  # every other column under its own name
        ts.setdefault(k, np.asarray(v, dtype=float))
    if raw == {} and names == {} and _header_only(tsp):
        raise DataError(f"{tsp}: no rows (a header and no tick)")
    for k in TS_REQUIRED:
        if k not in ts:
            raise DataError(f"{tsp}: no column {k!r} (accepted names: {', '.join((k,) + TS_ALIASES[k])}); its "
                            f"columns are {', '.join(map(repr, raw)) or 'none'}")
        if not np.all(np.isfinite(ts[k])):
            i = int(np.flatnonzero(~np.isfinite(ts[k]))[0])
            raise DataError(f"{tsp}, line {line_of[i]}: column {src.get(k, k)!r} = {ts[k][i]:g}: expected a finite "
                            "number (a NaN or an infinity is no measurement)")
    if ts["t"].size == 0:
        raise DataError(f"{tsp}: no rows")
    # a count or a rate below 0 is no measurement, and ticks out of order (or twice) would put the steady window
    # and its seconds elsewhere without a word: refused naming the column and the line (the header is line 1)
    for k in ("prompt_throughput", "gen_throughput", "running", "waiting", "kv_cache_pct", "preempted"):
        if k in ts and np.any(ts[k] < 0):
            i = int(np.flatnonzero(ts[k] < 0)[0])
            raise DataError(f"{tsp}, line {i + 2}: column {src.get(k, k)!r} = {ts[k][i]:g}: expected a value >= 0 "
                            f"(a {'count' if k in ('running', 'waiting', 'preempted') else 'rate or share'})")
    bad = np.flatnonzero(np.diff(ts["t"]) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise DataError(f"{tsp}, line {i + 2}: column {src['t']!r} = {ts['t'][i]:g} after {ts['t'][i - 1]:g}: expected "
                        "tick times that increase row by row (one row per tick, in the order recorded)")
    return ts


def _header_only(tsp: Path) -> bool:
    """Whether the timeseries file has a header line and no row (csv.DictReader then yields no column)."""
    with open_text(tsp) as f:
        lines = [line for line in f if line.strip()]
    return len(lines) == 1


def _stamps_in_order(req: Path, line: int, r: dict) -> None:
    """Refuse a request whose engine stamps are out of order: vLLM stamps ``queued_ts <= scheduled_ts <=
    first_token_ts <= last_token_ts`` on one monotonic clock, so a later stamp before an earlier one is a
    corrupted or mixed-up record (it would give a negative TTFT or TPOT, averaged in without a word)."""
    order = [k for k in ("queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts")
             if k != "scheduled_ts" or _finite_number(r.get(k))]
    for a, b in zip(order, order[1:]):
        if float(r[b]) < float(r[a]):
            raise DataError(f"{req}, line {line}: {b} = {float(r[b]):.6f} is before {a} = {float(r[a]):.6f}: expected "
                            "queued_ts <= scheduled_ts <= first_token_ts <= last_token_ts (vLLM's stamps on one "
                            "engine clock)")


def _finite_number(x) -> bool:
    """A JSON number that is finite (a bool is not a number here)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _all_or_none(req: Path, kept: list, key: str, ok, expected: str, why: str = "") -> list | None:
    """``key`` of every kept request (``(line, row)`` pairs), or None when no request has it (absent or null on
    every line).  Where some have it, a request whose ``key`` fails ``ok`` (missing or null too) is refused
    naming the file, line and field: ``expected`` is what it should be, ``why`` an optional closing remark."""
    values = [r.get(key) for _, r in kept]
    if all(v is None for v in values):
        return None
    n_have = sum(bool(ok(v)) for v in values)
    for (line, r), v in zip(kept, values):
        if not ok(v):
            shown = "missing" if key not in r else f"= {json.dumps(v)[:40]}"
            raise DataError(f"{req}, line {line}: {key} {shown}: expected {expected}, as {n_have} other "
                            f"request{'s' if n_have > 1 else ''} of the file have{why}")
    return values


def _optional_stamps(req: Path, kept: list, key: str) -> np.ndarray | None:
    """``key`` of every kept request (``(line, row)`` pairs) as floats, or None when no request has it (absent
    or null on every line).  Where some have it, a request whose ``key`` is missing, null, non-numeric or not
    finite is refused naming the file, line and field (:func:`_all_or_none`)."""
    values = _all_or_none(req, kept, key, _finite_number, "a finite number",
                          f" (a run's {key} is used for every request or for none)")
    return None if values is None else np.array([float(v) for v in values])


def _request_numbers(req: Path, kept: list) -> tuple:
    """``(request_index, how)``: the numbers the kept requests' ids end in, when every id ends in one and no
    two share it, else None; ``how`` says which order :attr:`ServingRun.client_order` follows and why.  A
    request without an id where others have one is refused (file, line; :func:`_all_or_none`)."""
    ids = _all_or_none(req, kept, "request_id", lambda v: v is not None, "an id")
    if ids is None:
        return None, "arrival order (no request has a request_id)"
    have = [(line, v) for (line, _), v in zip(kept, ids)]
    nums = [re.search(r"(\d+)$", str(v)) for _, v in have]
    bad = next(((line, v) for (line, v), m in zip(have, nums) if m is None), None)
    if bad is not None:
        return None, (f"arrival order (the ids do not number the requests: line {bad[0]}'s "
                      f"{json.dumps(bad[1])[:40]} ends in no number)")
    index = np.array([int(m.group(1)) for m in nums])
    uniq, first, counts = np.unique(index, return_index=True, return_counts=True)
    if uniq.size != index.size:
        k = int(np.argmax(counts > 1))
        return None, (f"arrival order (the ids do not number the requests once each: {counts[k]} end in "
                      f"{uniq[k]}, first on line {have[first[k]][0]})")
    return index, "the numbers the request ids end in"


def _sent(a, q, t0):
    """The client's hand-over times on the engine clock (see :class:`ServingRun` ``sent_s``), or None."""
    if a is None:
        return None
    sent = a + float(np.min(q - a)) - t0
    return np.maximum(sent, 0.0)


def read_peer_summary(path) -> dict:
    """Parse ``peer_sim_vs_vllm_summary.txt``: ``{"TTFT Mean": (vllm_ms, sim_ms, diff_pct), ...}``."""
    out = {}
    with open_text(Path(path)) as f:
        for line in f:
            m = re.match(r"^\s*([A-Za-z]+ [A-Za-z0-9]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+([+-]?[\d.]+)%", line)
            if m:
                out[m.group(1)] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
    return out
