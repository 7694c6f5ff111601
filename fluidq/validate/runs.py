"""Readers of measured serving runs (the numbers measured on them: :mod:`fluidq.validate.measured`).

A *run* is a folder in the LLMServingSim format (Cho et al., casys-kaist/LLMServingSim):

* ``vllm_requests.jsonl`` -- one request per line: ``input_toks, output_toks, arrival_time,
  queued_ts, scheduled_ts, first_token_ts, last_token_ts`` (seconds; the ``*_ts`` share one
  monotonic clock, ``arrival_time`` is wall-clock);
* ``vllm_timeseries.csv`` -- one row per tick: ``t, prompt_throughput, gen_throughput, running,
  waiting, kv_cache_pct`` (tokens per second over the tick);
* ``vllm_meta.json`` -- the engine arguments (``max_num_seqs``, ``max_num_batched_tokens``,
  ``tensor_parallel_size``) and, when recorded, the KV-cache size.

The GPU harness in ``validation/gpu/`` writes the same three files, so its runs are read by the
same code.  LLMServingSim's bench runner itself names them ``meta.json``, ``requests.jsonl``,
``timeseries.csv`` (its examples keep them under ``vllm/``): every such name is read
(:data:`RUN_FILE_NAMES`), and so are other recorders' request fields and vLLM's metric names for the
timeseries columns (:data:`REQUEST_ALIASES`, :data:`TS_ALIASES`).  vLLM's options are read from its
resolved config first (:meth:`ServingRun._option`).

What is read where: this module, :class:`ServingRun` (one run, its options read from ``vllm_meta.json``) and
:func:`read_run`; :mod:`fluidq.validate.run_files`, the files' names and aliases and the checks of each line;
:mod:`fluidq.validate.measured`, the numbers measured on a run (capacity per regime, saturation, queue growth,
latency) and :mod:`fluidq.validate.measured_intervals`, their intervals -- the measured side, which imports
nothing of the prediction.  Every name of those modules that was imported from here is re-exported.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import json_loads, open_text, read_text  # noqa: F401  (open_text: re-exported)
from .._validate import BUDGET_WHY, MAX_BUDGET_TOKENS
from ..errors import DataError

# re-exported (F401): the names other modules and the tests import from here
from .measured import (ARRIVALS_ALPHA, SATURATED_STRETCH_S, SATURATED_STRETCH_UNSEEN_LIMIT_S,  # noqa: F401
                       capacity_regimes, check_kv_column, kv_in_use_tokens, latency_metrics, measured_regimes,
                       mix_adjusted_capacity, queue_growth, saturated_throughput, saturated_ticks,
                       steady_poisson_arrivals)
from .measured_intervals import _block_indices, _mean_ci, _window_ci, batch_means, latency_metrics_ci  # noqa: F401
from .run_files import (REQUEST_ALIASES, RUN_FILE_NAMES, TS_ALIASES, TS_FRACTION_ALIASES,  # noqa: F401
                        TS_REQUIRED, _all_or_none, _finite_number, _header_only, _optional_stamps,
                        _read_timeseries, _request_numbers, _request_value, _sent, _stamps_in_order,
                        read_peer_summary, run_file)

__all__ = ["ServingRun", "read_run", "run_file", "kv_in_use_tokens", "read_peer_summary", "saturated_throughput", "capacity_regimes", "saturated_ticks", "steady_poisson_arrivals",
           "mix_adjusted_capacity", "queue_growth", "latency_metrics", "latency_metrics_ci", "batch_means",
           "open_text"]


_NOTED: set = set()


def _note_disagreement(meta, key, used_at, used, others) -> None:
    """Say on stderr, once per run file and option, that the run records two values of ``key`` and which one is
    used (the precedence of :meth:`ServingRun._option`: what the engine ran with before what the bench asked
    for); it used the first silently, e.g. ``engine_kwargs.max_num_seqs`` 64 under a resolved 256."""
    what = (str(meta), key, json.dumps(used), json.dumps(others, default=str))
    if what in _NOTED:
        return
    _NOTED.add(what)
    role = {"kv_cache": "the cache it recorded", "engine_kwargs": "what the bench asked for"}

    def said(n, v):
        return f"{n}.{key} = {json.dumps(v)} ({role.get(n, 'what the engine ran with')})"

    print(f"fluidq: note: {meta} records {key} twice: {said(used_at, used)} and "
          f"{', '.join(said(n, v) for n, v in others)}; using {json.dumps(used)}, from {used_at}", file=sys.stderr)


#: the largest value of a recorded option, with why: the bounds the prediction's own checks set (a larger one was
#: refused there as an internal parameter, naming no file: review revbad2 L4)
_INT_MAX = {k: (MAX_BUDGET_TOKENS, BUDGET_WHY) for k in ("max_num_batched_tokens", "max_num_seqs", "block_size")}


@dataclass(frozen=True, kw_only=True, eq=False)
class ServingRun:
    """One measured serving run.

    Attributes
    ----------
    name : str
        Folder name.
    input_tokens, output_tokens : ndarray
        Per request, in arrival order.
    arrival_s, first_token_s, last_token_s : ndarray
        Seconds on the engine's clock, shifted so the first arrival is at 0.
    timeseries : dict of ndarray
        Columns of ``vllm_timeseries.csv`` (``t, prompt_throughput, gen_throughput, running,
        waiting, kv_cache_pct``).
    meta : dict
        ``vllm_meta.json`` as read.
    request_index : ndarray or None
        Per request, its place in the benchmark client's request list (the ``N`` of a ``request_id`` such
        as ``bench-N``), when every request's id ends in a number, each a different one; else None
        (``sources["order"]`` says why).  A request without a ``request_id`` where others have one is refused.
    scheduled_s : ndarray or None
        Per request, vLLM's ``scheduled_ts`` (its first admission) on the same clock; None when no request
        has it.  One request without a finite ``scheduled_ts`` where others have it is refused (file, line).
    sources : dict
        Which stamps the run's clocks come from: ``"sent"`` (``arrival_time`` or ``queued_ts``),
        ``"scheduled"`` (``scheduled_ts`` or ``first_token_ts``), ``"order"`` (the ids' numbers or the
        arrival order), each with the reason for a fallback.
    dropped : dict
        Requests left out of every measured and replayed number, counted by why: ``"failed"`` (a record with
        null timestamps: LLMServingSim's bench writes one for a request that returned no metrics),
        ``"no output token"`` (``output_toks`` < 1: an aborted request) and ``"no prompt token"``
        (``input_toks`` < 1).
    files : dict
        The files read: ``meta``, ``requests``, ``timeseries`` (their names differ between LLMServingSim
        versions, see :func:`run_file`).
    sent_s : ndarray or None
        Per request, when the client handed it to vLLM (``arrival_time``, vLLM's wall-clock stamp in the
        front end) on the engine's clock: shifted by the smallest ``queued_ts - arrival_time`` of the run
        (the clocks' offset plus the shortest hand-over), at least 0; None when no request has
        ``arrival_time`` (one without a finite ``arrival_time`` where others have it is refused, naming the
        file and line: a silent fall-back to ``queued_ts`` changed the verdicts).  ``arrival_s`` (``queued_ts``) is when the engine *read* the request, which it
        does only between its iterations, so it carries the measured engine's own iteration boundaries;
        a replay sends the requests at ``sent_s`` and reads its own (:func:`fluidq.validate.replay.read_s`).
    """

    name: str
    path: str
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    arrival_s: np.ndarray
    first_token_s: np.ndarray
    last_token_s: np.ndarray
    timeseries: dict
    meta: dict = field(repr=False)
    request_index: np.ndarray | None = field(default=None, repr=False)
    sent_s: np.ndarray | None = field(default=None, repr=False)
    scheduled_s: np.ndarray | None = field(default=None, repr=False)
    dropped: dict = field(default_factory=dict, repr=False)
    files: dict = field(default_factory=dict, repr=False)
    sources: dict = field(default_factory=dict, repr=False)

    @property
    def engine_kwargs(self) -> dict:
        return self.meta.get("engine_kwargs") or {}

    def _option(self, key: str, section: str, *, default=None, kind=int):
        """A vLLM option of the run: vLLM's resolved ``resolved_config.<section>.<key>`` (what the engine
        ran with), else ``kv_cache.<key>`` for the cache options, else ``engine_kwargs.<key>`` (what the
        bench asked for), else ``default``; a null value counts as not recorded.  ``default=None``: a
        run recording none of them is refused naming the field."""
        where = [(f"resolved_config.{section}", (self.meta.get("resolved_config") or {}).get(section)),
                 ("kv_cache", self.meta.get("kv_cache") if section == "cache_config" else None),
                 ("engine_kwargs", self.engine_kwargs)]
        found = [(name, doc[key]) for name, doc in where if isinstance(doc, dict) and doc.get(key) is not None]
        if found:
            used_at, used = found[0][0], self._checked(found[0][0], key, found[0][1], kind)
            # a later record is not used but checked all the same (an invalid one, e.g. engine_kwargs.max_num_seqs
            # 0 or "256", is refused naming it, not noted as a disagreement: review revbad2 L1); another valid
            # value is said, once, naming both
            for n, v in found[1:]:
                self._checked(n, key, v, kind)
            others = [(n, v) for n, v in found[1:] if v != used]
            if others:
                _note_disagreement(self.files.get("meta", self.path), key, used_at, used, others)
            return used
        if default is None:
            raise DataError(f"{self.files.get('meta', self.path)} records no {key} (engine_kwargs.{key} or "
                            f"resolved_config.{section}.{key}): the engine's {key} is needed to predict the run, and "
                            "vLLM's default depends on its version, the GPU and how it was started (add the value "
                            "the engine ran with to engine_kwargs; vLLM logs it at start-up)")
        return default

    def _checked(self, name: str, key: str, v, kind):
        """The recorded value ``v`` of ``<name>.<key>`` as ``kind`` (bool; str; int: a whole number >= 1, at most
        :data:`_INT_MAX` for the options it names; float: a number > 0), or a DataError naming the field in
        ``vllm_meta.json``."""
        top = _INT_MAX.get(key)
        if kind is int and top is not None and _finite_number(v) and float(v).is_integer() and v > top[0]:
            raise DataError(f"{self.files.get('meta', self.path)}: {name}.{key} = {json.dumps(v)[:40]}: expected a "
                            f"whole number <= {top[0]:,} ({top[1]})")
        if kind is bool:
            if isinstance(v, bool):
                return v
        elif kind is str:
            return str(v)
        elif _finite_number(v) and v > 0 and (
                kind is float or float(v).is_integer()):
            return kind(v)
        raise DataError(f"{self.files.get('meta', self.path)}: {name}.{key} = {json.dumps(v)[:40]}: expected "
                        + {bool: "true or false", int: "a whole number >= 1", float: "a number > 0"}[kind])

    @property
    def max_num_seqs(self) -> int:
        return self._option("max_num_seqs", "scheduler_config")

    @property
    def max_num_batched_tokens(self) -> int:
        return self._option("max_num_batched_tokens", "scheduler_config")

    @property
    def tensor_parallel_size(self) -> int:
        return self._option("tensor_parallel_size", "parallel_config", default=1)

    @property
    def data_parallel_size(self) -> int:
        return self._option("data_parallel_size", "parallel_config", default=1)

    @property
    def pipeline_parallel_size(self) -> int:
        return self._option("pipeline_parallel_size", "parallel_config", default=1)

    @property
    def expert_parallel(self) -> bool:
        return self._option("enable_expert_parallel", "parallel_config", default=False, kind=bool)

    @property
    def block_size(self) -> int:
        """Tokens per KV block (``kv_cache.block_size``, the resolved ``cache_config``, ``engine_kwargs``;
        vLLM's default 16 when none records it)."""
        return self._option("block_size", "cache_config", default=16)

    @property
    def gpu_memory_utilization(self) -> float:
        """vLLM's ``--gpu-memory-utilization`` as recorded (its default 0.9 when not)."""
        v = self._option("gpu_memory_utilization", "cache_config", default=0.9, kind=float)
        if not 0 < v <= 1:
            raise DataError(f"{self.files.get('meta', self.path)}: gpu_memory_utilization = {v:g}: expected a fraction in (0, 1]")
        return v

    @property
    def kv_cache_dtype(self) -> str:
        """``kv_cache_dtype`` (``engine_kwargs``) or the resolved ``cache_config.cache_dtype``; "auto" when neither."""
        v = self._option("kv_cache_dtype", "cache_config", default="auto", kind=str)
        if v == "auto":
            v = self._option("cache_dtype", "cache_config", default="auto", kind=str)
        return v

    @property
    def prefix_caching(self) -> bool:
        """Whether the run's engine had prefix caching on (``kv_cache`` / resolved ``cache_config`` /
        ``engine_kwargs`` ``enable_prefix_caching``); not recorded: vLLM's default for the run's ``vllm_version``
        (:attr:`prefix_caching_source` says which): on from 0.8 (the V1 engine, which turns it on for generative
        models), off before and when the version is not recorded.  It matters when requests are preempted and
        re-admitted (their cached blocks are reused)."""
        return self._prefix_caching()[0]

    @property
    def prefix_caching_source(self) -> str:
        """Where :attr:`prefix_caching` comes from, in words (the recorded field, or the version's default)."""
        return self._prefix_caching()[1]

    def _prefix_caching(self) -> tuple[bool, str]:
        absent = object()
        v = self._option("enable_prefix_caching", "cache_config", default=absent, kind=bool)
        if v is not absent:
            return v, "recorded in vllm_meta.json"
        ver = self.vllm_version
        if ver is None:
            named = self.meta.get("vllm_version")
            if named is not None and str(named).strip():
                return False, (f"not recorded, and vllm_meta.json names vllm_version {str(named)[:40]!r}, not a "
                               "version: off (vLLM's default before 0.8; on since)")
            return False, ("not recorded, and vllm_meta.json names no vllm_version: off (vLLM's default before "
                           "0.8; on since)")
        on = ver >= (0, 8)
        return on, (f"not recorded: vLLM {ver[0]}.{ver[1]}'s default ({'on: the V1 engine turns it on' if on else 'off'}"
                    " for generative models)")

    @property
    def vllm_version(self) -> tuple[int, int] | None:
        """``(major, minor)`` of ``vllm_meta.json``'s ``vllm_version`` (e.g. ``"0.19.0"``), None when absent or not
        a version."""
        m = re.match(r"\s*v?(\d+)\.(\d+)", str(self.meta.get("vllm_version", "")))
        return (int(m.group(1)), int(m.group(2))) if m else None

    @property
    def kv_capacity_tokens(self) -> int | None:
        """The KV cache of one engine in tokens as vLLM allocated it: ``kv_cache.num_kv_tokens``, else
        ``num_gpu_blocks x block_size`` (``kv_cache`` or the resolved ``cache_config``), else the resolved
        ``cache_config.kv_cache_size_tokens`` (newer vLLM); None when the run records none.  Records that give
        two sizes are not refused (a hybrid model's cache may count tokens otherwise than blocks x block size) but
        said on stderr, once per file, naming every record and the one used."""
        kv = self.meta.get("kv_cache") or {}
        cc = (self.meta.get("resolved_config") or {}).get("cache_config") or {}
        found = []  # (where, tokens) of every record, in this order of precedence
        for doc, key, name in ((kv, "num_kv_tokens", "kv_cache"), (kv, "num_gpu_blocks", "kv_cache"),
                               (cc, "num_gpu_blocks", "resolved_config.cache_config"),
                               (cc, "kv_cache_size_tokens", "resolved_config.cache_config")):
            v = doc.get(key) if isinstance(doc, dict) else None
            if v is not None:
                n = self._checked(name, key, v, int)
                found.append((f"{name}.{key} = {n}" + (f" x block_size {self.block_size}" if key == "num_gpu_blocks"
                                                       else ""), n * (self.block_size if key == "num_gpu_blocks" else 1)))
        if not found:
            return None
        used_at, used = found[0]
        others = [(w, n) for w, n in found[1:] if n != used]
        if others:  # two records of one cache that disagree: the first is used, and said once (review revbad2 M6)
            what = (str(self.files.get("meta", self.path)), "kv_cache_tokens", used_at, repr(others))
            if what not in _NOTED:
                _NOTED.add(what)
                print(f"fluidq: note: {self.files.get('meta', self.path)} records the KV cache twice with two sizes: "
                      f"{used_at} ({used:,} tokens) and " + ", ".join(f"{w} ({n:,} tokens)" for w, n in others)
                      + f"; using {used:,} tokens, from {used_at.split(' = ')[0]} (the order: kv_cache.num_kv_tokens, "
                      "vLLM's own token count, then kv_cache.num_gpu_blocks, then the resolved cache_config's); a "
                      "hybrid model's cache (sliding-window layers) can count tokens otherwise than blocks x "
                      "block_size, else one of the records is wrong", file=sys.stderr)
        return used

    @property
    def async_scheduling(self) -> bool:
        """Whether the engine scheduled each batch while the previous one ran (vLLM's
        ``--async-scheduling``): the run's ``resolved_config.scheduler_config.async_scheduling`` when
        ``vllm_meta.json`` records it, else its ``engine_kwargs``, else vLLM's default for the run's
        ``vllm_version`` (on since 0.14, except with pipeline parallelism, by vLLM 0.14's release notes)."""
        sched = ((self.meta.get("resolved_config") or {}).get("scheduler_config") or {})
        # recorded: true or false, else refused naming it ("yes" fell back to the version's default silently)
        rec = [self._checked(name, "async_scheduling", doc["async_scheduling"], bool)
               for name, doc in (("resolved_config.scheduler_config", sched), ("engine_kwargs", self.engine_kwargs))
               if isinstance(doc, dict) and doc.get("async_scheduling") is not None]
        if rec:
            return rec[0]
        ver = self.vllm_version
        return ver is not None and ver >= (0, 14) and self.pipeline_parallel_size == 1

    @property
    def tick_s(self) -> float:
        """Seconds per row of the timeseries: ``tick_seconds`` in ``vllm_meta.json``, else the median step of
        its ``t`` column, else 1.  A recorded value that is not a number > 0 is refused (a DataError naming it),
        as every other recorded option is: falling back would read the run at another tick without a word."""
        v = self.meta.get("tick_seconds")
        if v is not None:
            if _finite_number(v) and v > 0:
                return float(v)
            raise DataError(f"{self.files.get('meta', self.path)}: tick_seconds = {json.dumps(v)[:40]}: expected a "
                            "number > 0 (seconds per row of the timeseries), or leave it out to use the median step "
                            "of its t column")
        t = np.asarray(self.timeseries.get("t", []), dtype=float)
        d = np.diff(t)
        return float(np.median(d)) if d.size and np.median(d) > 0 else 1.0

    @property
    def gpu(self) -> str:
        hw = self.meta.get("hardware") or {}
        return hw.get("device_name") or self.name.split("_", 1)[0]

    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_token_s - self.arrival_s

    @property
    def latency_s(self) -> np.ndarray:
        return self.last_token_s - self.arrival_s

    @property
    def tpot_s(self) -> np.ndarray:
        """Per request, ``(last - first token) / (output_toks - 1)``; NaN for a one-token output, which has no
        time per output token: vLLM's ``benchmark_serving`` leaves such requests out of TPOT (it appends a TPOT
        only for ``output_len > 1``), and :func:`latency_metrics` leaves the NaNs out likewise."""
        out = self.output_tokens
        return np.where(out > 1, (self.last_token_s - self.first_token_s) / np.maximum(out - 1, 1), np.nan)

    @property
    def offered_rate_per_s(self) -> float:
        span = float(self.arrival_s[-1] - self.arrival_s[0])
        return (len(self.arrival_s) - 1) / span if span > 0 else float("nan")

    @property
    def client_order(self) -> np.ndarray:
        """Indices that put the requests (held in arrival order) in the order the benchmark client sent
        them: by ``request_index`` when the ids number them, else the arrival order itself (requests that
        arrive nearly together can swap places at the engine)."""
        if self.request_index is None:
            return np.arange(len(self.arrival_s))
        return np.argsort(self.request_index, kind="stable")

    def __len__(self):
        return len(self.arrival_s)


def read_run(path) -> ServingRun:
    """Read a run folder (see the module docstring for the format; file names of :data:`RUN_FILE_NAMES`,
    request fields and timeseries columns under the aliases of :data:`REQUEST_ALIASES` and :data:`TS_ALIASES`).

    A request with null timestamps (failed: LLMServingSim's bench writes that when vLLM returned no
    metrics) or no output token is left out of every number and counted in ``dropped``; any other
    malformed request is refused naming the file, line and field."""
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"{path}: not a run folder (expected vllm_requests.jsonl, vllm_timeseries.csv, "
                        "vllm_meta.json)")
    req = run_file(path, "requests")
    tsp = run_file(path, "timeseries")
    mp = run_file(path, "meta")
    from ..workload.traces import json_record  # the --trace JSONL reader's: a key twice is refused

    rows = []
    with open_text(req) as f:
        for i, line in enumerate(f):
            if line.strip():
                text = line.strip()
                if text.startswith("{") and not text.endswith("}"):  # "not JSON (... line 2 column 1)" said less
                    raise DataError(f"{req}, line {i + 1}: the record is cut short (it ends before its closing "
                                    f"brace, after {len(text)} characters: {text[-40:]!r}): a file truncated or a "
                                    "write interrupted; remove the line or write it whole")
                r, twice = json_record(text, f"{req}, line {i + 1}", constants=True)  # NaN: by its field
                if not isinstance(r, dict):
                    raise DataError(f"{req}, line {i + 1}: expected a JSON object (one request)")
                if twice is not None:
                    raise DataError(f"{req}, line {i + 1}: key {json.dumps(twice)[:60]} twice in one object: expected "
                                    "each key once (a JSON reader keeps the last value without a word)")
                rows.append((i + 1, r))
    if not rows:
        raise DataError(f"{req}: no requests")
    seen = {}  # a request id twice: the file written twice, or two runs' requests mixed -- each counted twice
    for line, r in rows:
        if r.get("request_id") is not None:
            key = json.dumps(r["request_id"], sort_keys=True)
            if key in seen:
                raise DataError(f"{req}, line {line}: request_id {key[:60]} again (first on line {seen[key]}): expected "
                                "one line per request (a file appended twice, or two runs' requests together, would "
                                "count them twice)")
            seen[key] = line
    need = ("input_toks", "output_toks", "queued_ts", "first_token_ts", "last_token_ts")
    stamps = ("queued_ts", "first_token_ts", "last_token_ts")
    kept, dropped = [], {}
    for line, r in rows:
        miss = []
        for k in need:
            try:
                r[k] = _request_value(r, k)
            except KeyError:
                miss.append(k + (f" (or {', '.join(REQUEST_ALIASES[k])})" if k in REQUEST_ALIASES else ""))
        if miss:
            raise DataError(f"{req}, line {line}: missing {', '.join(miss)}")
        if any(r[k] is None for k in stamps):
            dropped["failed"] = dropped.get("failed", 0) + 1
            continue
        for k in need:
            v = r[k]
            if not _finite_number(v):
                raise DataError(f"{req}, line {line}: {k} = {json.dumps(v)[:40]}: expected a finite number")
        _stamps_in_order(req, line, r)
        for k in ("input_toks", "output_toks"):
            if not (float(r[k]).is_integer() and 0 <= r[k] <= 2**31 - 1):
                raise DataError(f"{req}, line {line}: {k} = {r[k]!r}: expected a whole number of tokens in "
                                "[0, 2**31-1]")
        if r["output_toks"] < 1 or r["input_toks"] < 1:
            why = "no output token" if r["output_toks"] < 1 else "no prompt token"
            dropped[why] = dropped.get(why, 0) + 1
            continue
        kept.append((line, r))
    if not kept:
        raise DataError(f"{req}: no request with timestamps and an output token ({', '.join(f'{v} {k}' for k, v in dropped.items())})")
    kept.sort(key=lambda lr: lr[1]["queued_ts"])
    rows = [r for _, r in kept]
    # optional stamps: absent from every request, a fall-back (said in ``sources``); present in some, required
    # of every one (a single bad value made the whole column fall back silently)
    sent_a = _optional_stamps(req, kept, "arrival_time")
    sched_a = _optional_stamps(req, kept, "scheduled_ts")
    request_index, order_src = _request_numbers(req, kept)
    sources = {"sent": "arrival_time" if sent_a is not None else "queued_ts (no request has arrival_time)",
               "scheduled": ("scheduled_ts" if sched_a is not None
                             else "first_token_ts (no request has scheduled_ts)"),
               "order": order_src}
    q = np.array([float(r["queued_ts"]) for r in rows])
    t0 = q[0]
    ts = _read_timeseries(tsp)
    if ts["t"].size and float(ts["t"].min()) > 1e6:
        # a clock stamp (e.g. epoch seconds), not seconds since the run began: put it on the run's clock, by the
        # client's wall-clock send stamps when the requests carry them, else from the first tick
        a0 = float(np.min(sent_a)) if sent_a is not None else None
        step = float(np.median(np.diff(ts["t"]))) if ts["t"].size > 1 else 1.0
        ts["t"] = ts["t"] - (a0 if a0 is not None and abs(float(ts["t"].min()) - a0) < 86400
                             else float(ts["t"][0]) - step)
    with open_text(mp) as f:
        text = f.read()
    meta, twice = json_record(text, str(mp))
    if twice is not None:
        at = [n + 1 for n, ln in enumerate(text.splitlines()) if re.search(re.escape(json.dumps(twice)) + r"\s*:", ln)]
        raise DataError(f"{mp}: key {json.dumps(twice)[:60]} twice in one object (the key is on line"
                        + (f"s {', '.join(map(str, at))}" if len(at) > 1 else f" {at[0]}" if at else "s shown nowhere")
                        + "): expected each key once (a JSON reader keeps the last value without a word)")
    if not isinstance(meta, dict):
        raise DataError(f"{mp}: expected a JSON object")
    for key in ("engine_kwargs", "kv_cache", "hardware", "resolved_config"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise DataError(f"{mp}: {key} is not an object")
    scheduled = sched_a - t0 if sched_a is not None else None
    return ServingRun(
        name=path.name, path=str(path), request_index=request_index,
        input_tokens=np.array([int(r["input_toks"]) for r in rows]),
        output_tokens=np.array([int(r["output_toks"]) for r in rows]),
        arrival_s=q - t0,
        first_token_s=np.array([float(r["first_token_ts"]) for r in rows]) - t0,
        last_token_s=np.array([float(r["last_token_ts"]) for r in rows]) - t0,
        timeseries=ts, meta=meta, sent_s=_sent(sent_a, q, t0), scheduled_s=scheduled, dropped=dropped,
        files={"meta": str(mp), "requests": str(req), "timeseries": str(tsp)}, sources=sources)
