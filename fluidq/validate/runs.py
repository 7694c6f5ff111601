"""Readers of measured serving runs and the numbers measured on them.

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

Measured quantities
-------------------
TTFT = ``first_token_ts - queued_ts``; latency = ``last_token_ts - queued_ts``; TPOT =
``(last_token_ts - first_token_ts)/(output_toks - 1)`` -- the definitions under which the peer
simulator's summary (``peer_sim_vs_vllm_summary.txt``) is reproduced from these files.
The *served throughput* of an overloaded run is read over its saturated interval (ticks with
``waiting > 0``), not as tokens over the makespan (ramp-up and drain would understate it).

Capacity per regime (:func:`capacity_regimes`): a tick is *saturated* when it lies in a stretch of consecutive ticks
with ``waiting > 0`` spanning at least 3 s with the engine at ``max_num_seqs`` or a full cache, or 10 s whatever it
shows (:func:`saturated_ticks`: a queue held over many samples was held back by a limit, one seen once was a burst
admitted at the next iterations); a run with no such stretch never
saturated and has no capacity nor binding limit to score.  The *start-up ramp* is the ticks with requests waiting
before the engine's
state first reaches its saturated level (``running`` and, where known, the KV use at >= 95 % of their medians over
the saturated ticks; the batches are then prompt-heavy: few residents decode yet); the *steady state* is every
saturated tick after it, and its capacity is the mean over all of them -- no tick is kept or dropped by how busy
it was.  The binding limit is a diagnosis of that same window: ``kv_cache`` when the run preempts there or its KV
use sits at >= 90 % in at least half of its ticks, ``k_max`` when ``running`` sits at ``max_num_seqs`` (times the
data-parallel size: the run's ``running`` counts every replica) in at least half of them, else ``token_budget``.
Each regime's mean tokens/s comes with a 95 % interval from batch means (per-tick throughput is autocorrelated):
blocks of ``ceil(sqrt(n))`` consecutive ticks, or of :func:`batch_means`'s data-chosen size where that is larger,
ending at the window's last tick, with the t quantile of ``nb - 1`` degrees of freedom; none with fewer than 3
blocks (:func:`_window_ci`).  The resident count and the queue growth take :func:`batch_means` alone (a size chosen
from the data, none when fewer than 5 batches would be left).
A request whose stamps are out of order (``queued_ts <= scheduled_ts <= first_token_ts <= last_token_ts``
on vLLM's engine clock), a timeseries row with a negative count or rate, or tick times that do not increase
are refused naming the file, line and field.
A run whose KV-use column is absent or stayed 0 has its KV use rebuilt from the requests' own
timestamps (:func:`kv_in_use_tokens`); a regime of fewer than 3 ticks has no capacity (a short run says
"no steady state").
"""
from __future__ import annotations

import csv
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import json_loads, open_text, read_text  # noqa: F401  (open_text: re-exported)
from .._validate import BUDGET_WHY, MAX_BUDGET_TOKENS
from ..errors import DataError

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


def saturated_throughput(run: ServingRun) -> dict:
    """Served tokens per second (prompt + generated) over the ticks with ``waiting > 0``.

    Returns ``tokens_per_s``, ``seconds`` (ticks counted), ``running_max``, ``running_mean``,
    ``kv_pct_mean`` over those ticks, and ``tokens_per_s_ci`` (a 95 % interval from a batch-means
    estimate over blocks of 5 ticks; per-tick throughput is strongly autocorrelated).
    """
    ts = run.timeseries
    m = ts["waiting"] > 0
    if m.sum() < 3:
        return {"tokens_per_s": float("nan"), "seconds": int(m.sum()), "running_max": float("nan"),
                "running_mean": float("nan"), "kv_pct_mean": float("nan"), "tokens_per_s_ci": (float("nan"),) * 2,
                "window_s": (float("nan"),) * 2, "running_mean_ci": (float("nan"),) * 2,
                "note": "fewer than 3 ticks with waiting > 0: the run never saturated"}
    tok = (ts["prompt_throughput"] + ts["gen_throughput"])[m]
    k = 5
    nb = len(tok) // k
    if nb >= 3:
        bm = tok[: nb * k].reshape(nb, k).mean(axis=1)
        half = 1.96 * bm.std(ddof=1) / np.sqrt(nb)
    else:
        half = 1.96 * tok.std(ddof=1) / np.sqrt(len(tok))
    kv = ts.get("kv_cache_pct")
    t = np.asarray(ts["t"], dtype=float)[m]
    return {"tokens_per_s": float(tok.mean()), "seconds": int(m.sum()), "window_s": (float(t[0]), float(t[-1])),
            "running_mean_ci": _mean_ci(np.asarray(ts["running"], dtype=float)[m])[1],
            "running_max": float(ts["running"][m].max()), "running_mean": float(ts["running"][m].mean()),
            "kv_pct_mean": float(kv[m].mean()) if kv is not None else float("nan"),
            "tokens_per_s_ci": (float(tok.mean() - half), float(tok.mean() + half))}


#: the significance at which :func:`steady_poisson_arrivals` says a run's arrivals are not Poisson at a steady rate
ARRIVALS_ALPHA = 1e-3


def steady_poisson_arrivals(arrival_s, *, windows: int = 10, alpha: float = ARRIVALS_ALPHA) -> dict:
    """Whether a run's arrival times look like a Poisson process at one steady rate, by two tests:

    * **steady rate**: the arrivals counted in ``windows`` equal windows of their span; under a homogeneous Poisson
      process the counts are independent Poisson variables of one mean, and the index of dispersion
      ``sum (c - mean)^2 / mean`` follows chi-square with ``windows - 1`` degrees of freedom;
    * **Poisson-like gaps**: the gaps between consecutive arrivals over their mean, against the unit exponential by
      Kolmogorov-Smirnov (the mean estimated from the same gaps makes the test conservative).

    A p-value under ``alpha`` (0.001) in either says no.  A benchmark that ramps its rate (a reviewer's run from 6 to
    180 req/s: counts 32 ... 912 per window) or sends at fixed intervals fails; seeded Poisson runs of 300 arrivals
    fail in about 0.2 % of seeds (tests/validation/test_arrival_test.py), and the three shipped LLMServingSim runs pass
    (p 0.77-0.82 and 0.70-0.79).  Fewer than ``2 x windows`` arrivals are not tested (``steady`` True, ``note``
    says so).  Returns ``steady`` (bool), ``p_rate``, ``p_gaps``, ``counts`` and ``note`` (the reason in words)."""
    from scipy import stats

    a = np.sort(np.asarray(arrival_s, dtype=float))
    out = {"steady": True, "p_rate": float("nan"), "p_gaps": float("nan"), "counts": [], "note": ""}
    if a.size < 2 * windows or not a[-1] > a[0]:
        out["note"] = f"{a.size} arrivals: too few to test the arrival process"
        return out
    c, _ = np.histogram(a, bins=windows, range=(a[0], a[-1]))
    m = float(c.mean())
    p_rate = float(stats.chi2.sf(float(((c - m) ** 2).sum()) / m, windows - 1))
    g = np.diff(a)
    p_gaps = float(stats.kstest(g / g.mean(), "expon").pvalue) if g.mean() > 0 else 0.0
    out.update(p_rate=p_rate, p_gaps=p_gaps, counts=c.tolist())
    bad = []
    if p_rate < alpha:
        bad.append(f"not one steady rate: arrivals per tenth of the span {', '.join(map(str, c))} (dispersion test "
                   f"p = {p_rate:.2g} < {alpha:g})")
    if p_gaps < alpha:
        bad.append(f"gaps not exponential (Kolmogorov-Smirnov p = {p_gaps:.2g} < {alpha:g})")
    out["steady"] = not bad
    out["note"] = "; ".join(bad) if bad else (f"Poisson-like at a steady rate (dispersion p = {p_rate:.2g}, gaps "
                                              f"p = {p_gaps:.2g})")
    return out


def batch_means(x) -> dict:
    """A 95 % interval of the mean of a serially correlated series by batch means with a batch size chosen
    from the data.

    The batch size grows (1, 2, 3, 4, then x1.5) until the lag-1 autocorrelation of the batch means falls below
    0.1 with at least 5 batches; it is then doubled (the lag-1 rule stops early on a noisy estimate) and the
    interval is the t interval of the batch means (``nb - 1`` degrees of freedom).  When no size passes with 5
    batches left after doubling, the series is too correlated for its length and there is **no interval**
    (``ci`` NaN, ``note`` says why): on seeded AR(1) series of 165 ticks the rule covers 0.94 at rho 0.5 and gives
    no interval in 66 % of replications at rho 0.9, where, when it gives one, it covers only 0.82
    (tests/validation/test_run_intervals.py).

    Returns ``mean``, ``ci``, ``batch`` (the size used, or None) and ``note`` ("" or why there is no interval)."""
    x = np.asarray(x, dtype=float)
    n = x.size
    m = float(x.mean()) if n else float("nan")
    nan2 = (float("nan"), float("nan"))
    if n < 5:
        return {"mean": m, "ci": nan2, "batch": None, "note": f"{n} value(s): too few for an interval"}
    if np.ptp(x) == 0:
        return {"mean": m, "ci": (m, m), "batch": 1, "note": ""}
    b = 1
    while n // b >= 5:
        nb = n // b
        bm = x[: nb * b].reshape(nb, b).mean(axis=1)
        d = bm - bm.mean()
        r1 = float(d[1:] @ d[:-1] / (d @ d)) if d @ d > 0 else 0.0
        if r1 < 0.1:
            b2 = 2 * b
            if n // b2 < 5:
                break
            nb = n // b2
            bm = x[: nb * b2].reshape(nb, b2).mean(axis=1)
            from scipy.stats import t as student_t

            half = float(student_t.ppf(0.975, nb - 1)) * float(bm.std(ddof=1)) / math.sqrt(nb)
            return {"mean": m, "ci": (m - half, m + half), "batch": b2, "note": ""}
        b = b + 1 if b < 4 else int(math.ceil(b * 1.5))
    return {"mean": m, "ci": nan2, "batch": None,
            "note": (f"no interval: {n} values leave fewer than 5 batches at the batch size their correlation "
                     "needs (batch means nearly uncorrelated, the size then doubled)")}


def _window_ci(x: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Mean and 95 % interval of a regime's per-tick served tokens/s: batch means over consecutive blocks of
    ``ceil(sqrt(n))`` ticks, or of :func:`batch_means`'s data-chosen size where that is larger, with the t quantile
    of ``nb - 1`` degrees of freedom; no interval with fewer than 3 blocks.  Not the data-chosen size alone: a
    served-tokens series has a short anticorrelation (a 1 s tick holds 26 or 27 iterations of a full token budget
    in turn) over a slow drift of the residents' contexts, and the lag-1 rule stops at the short one -- on seeded
    token-budget-bound runs of fluidq's engine its intervals held the long-run capacity in 5 of the 11 seeds that
    got one (9 of 20 got none); blocks of sqrt(n) ticks held it in 16 of 20
    (tests/validation/test_capacity_coverage.py)."""
    from scipy.stats import t as student_t

    x = np.asarray(x, dtype=float)
    n = x.size
    m = float(x.mean()) if n else float("nan")
    if n < 3 or np.ptp(x) == 0:
        return m, ((m, m) if n >= 3 else (float("nan"), float("nan")))
    b = max(int(math.ceil(math.sqrt(n))), batch_means(x)["batch"] or 1)
    nb = n // b
    if nb < 3:
        return m, (float("nan"), float("nan"))
    bm = x[n - nb * b:].reshape(nb, b).mean(axis=1)  # the blocks end at the window's last tick
    half = float(student_t.ppf(0.975, nb - 1)) * float(bm.std(ddof=1)) / math.sqrt(nb)
    return m, (m - half, m + half)


def _mean_ci(x: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Mean and 95 % interval by batch means with a data-chosen batch size (:func:`batch_means`); the interval
    is ``(nan, nan)`` when the ticks are too correlated for their number."""
    r = batch_means(x)
    return r["mean"], r["ci"]


def check_kv_column(run: ServingRun) -> None:
    """Refuse a KV-use column that reads as a fraction under a percentage's name: its maximum over the ticks
    with requests waiting lies in [0.9, 1] while ``running`` stayed below ``max_num_seqs``.  Only then can the
    reading mislead -- a fraction near 1 (a full cache, the KV limit binding) read as a percentage says the
    cache is nearly empty and would call a KV-bound run token-budget bound.  A genuinely low percentage (a run
    whose KV use stays under 1 % of a large cache) is read as it is."""
    ts = run.timeseries
    kv = ts.get("kv_cache_pct")
    sat = np.asarray(ts["waiting"], dtype=float) > 0
    if kv is not None and sat.any():
        kv = np.asarray(kv, dtype=float)[sat]
        top = float(np.nanmax(kv)) if np.any(np.isfinite(kv)) else 0.0
        k_total = run.max_num_seqs * run.data_parallel_size
        if 0.9 <= top <= 1.0 and not np.any(np.asarray(ts["running"], dtype=float)[sat] >= k_total):
            raise DataError(f"{run.files.get('timeseries', run.path)}: the KV-use column (kv_cache_pct, a percentage) "
                            f"tops at {top:g} while requests waited and running stayed below max_num_seqs "
                            f"({k_total}): a cache that full as a fraction (1 = full) would be nearly empty as a "
                            "percentage, so the column cannot be read either way; name it kv_cache_usage (read as a "
                            "fraction) or write percentages, or drop the column (KV use is then rebuilt from the "
                            "requests' timestamps)")


def measured_regimes(run: ServingRun) -> dict:
    """The run's measured regimes (:func:`capacity_regimes`) from its own columns and requests, and the KV
    cache only as the run recorded it (never the planner's estimate, which is the prediction's): what
    ``fluidq validate --run`` scores against (a KV-use column that is a fraction is refused first:
    :func:`check_kv_column`)."""
    check_kv_column(run)
    return capacity_regimes(run.timeseries, max_num_seqs=run.max_num_seqs, data_parallel_size=run.data_parallel_size,
                            kv_in_use_tokens=lambda: kv_in_use_tokens(run),  # rebuilt only where a regime reads it
                            kv_capacity_tokens=run.kv_capacity_tokens, tick_s=run.tick_s)


def kv_in_use_tokens(run: ServingRun) -> np.ndarray:
    """Per timeseries tick, the KV tokens the run's requests held at the tick's end, rebuilt from their own
    timestamps (for a run whose ``kv_cache_pct`` column is absent or stayed 0): a request holds its prompt
    from its admission (``scheduled_ts``, else its first token) and its generated tokens as they come
    (spread evenly from the first token to the last) until its last token.  A preempted request is counted
    as holding its blocks throughout (vLLM stamps only the first admission), so the figure is an upper
    bound while requests are preempted.  Measured inputs only: no KV capacity is read."""
    t = np.asarray(run.timeseries["t"], dtype=float)[:, None]
    start = run.scheduled_s if run.scheduled_s is not None else run.first_token_s
    f, last = run.first_token_s, run.last_token_s
    out = np.zeros(t.shape[0])
    for i in range(0, len(f), 2048):  # blocks of requests: ticks x 2048 at most in memory
        sl = slice(i, i + 2048)
        on = (start[None, sl] <= t) & (t < last[None, sl])
        frac = np.clip((t - f[None, sl]) / np.maximum(last[sl] - f[sl], 1e-9)[None, :], 0.0, 1.0)
        out += ((run.input_tokens[None, sl] + run.output_tokens[None, sl] * frac) * on).sum(axis=1)
    return out


#: seconds that requests must keep waiting, tick after tick, for a stretch of the run to count as saturated when
#: the engine sits at ``max_num_seqs`` or a full KV cache in it, and when it does not (the token budget, or a KV
#: use the run does not record)
SATURATED_STRETCH_S = 3.0
SATURATED_STRETCH_UNSEEN_LIMIT_S = 10.0


def saturated_ticks(waiting, at_limit=None, *, tick_s: float = 1.0, min_stretch_s: float = SATURATED_STRETCH_S,
                    unseen_limit_s: float = SATURATED_STRETCH_UNSEEN_LIMIT_S) -> np.ndarray:
    """Which ticks hold the engine saturated: those of a *stretch* of consecutive ticks with ``waiting > 0`` that

    * spans at least ``min_stretch_s`` seconds with the engine at a limit it records (``at_limit``: per tick,
      ``running`` at ``max_num_seqs``, a full KV cache or a preemption) in at least half of its ticks, or
    * spans at least ``unseen_limit_s`` seconds whatever ``running`` and the KV use show (the token budget binds
      with neither at its limit, and a run may record no KV use).

    The reason: vLLM admits a waiting request at its next iteration (tens of milliseconds) unless a limit holds it
    back, so a queue seen at one tick's sample and gone at the next was a burst of arrivals admitted in turn,
    and the tick's throughput is the load offered, not a capacity.  A run under its capacity has such bursts: a
    reviewer's run at 20 req/s had 11 ticks of 79 with a queue, never 3 in a row, ``running`` at most 17 of
    ``max_num_seqs`` 64 (its "capacity" read 272 % off the prediction).  On seeded runs of fluidq's vLLM engine
    model (Llama-3.1-8B profiles, ``max_num_seqs`` 64, token budget 2048, 1,500 requests,
    tests/validation/test_saturated_stretch.py) the longest queue at 12-14 req/s (about 0.6-0.7 of its
    capacity) held 3-6 s with ``running`` at most 48; a limit-free queue of 10 s did not occur below 16 req/s,
    and the saturated runs hold one long stretch (the shipped LLMServingSim runs: 14 to 160 ticks, at
    ``max_num_seqs`` or a full cache).  ``min_stretch_s = unseen_limit_s = 0`` takes every tick with a queue (the
    rule before 2026-12-07, which :func:`fluidq.validate.predict.simulate_capacity` keeps for its simulated logs)."""
    w = np.asarray(waiting, dtype=float) > 0
    lim = np.zeros(w.shape, dtype=bool) if at_limit is None else np.asarray(at_limit, dtype=bool)
    tick_s = float(tick_s)
    need = max(1, int(math.ceil(float(min_stretch_s) / tick_s - 1e-9)))  # 0 s: every tick with a queue
    need_unseen = max(need, int(math.ceil(float(unseen_limit_s) / tick_s - 1e-9)))
    out = np.zeros(w.shape, dtype=bool)
    d = np.diff(np.concatenate([[0], w.astype(np.int8), [0]]))  # the stretches: where the runs of True start, end
    for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)):
        if b - a >= need_unseen or (b - a >= need and 2 * int(lim[a:b].sum()) >= b - a):
            out[a:b] = True
    return out


def capacity_regimes(timeseries: dict, *, max_num_seqs: int, data_parallel_size: int = 1,
                     kv_full_pct: float = 90.0, plateau: float = 0.95, full_share: float = 0.5,
                     kv_in_use_tokens=None, kv_capacity_tokens: int | None = None, tick_s: float = 1.0,
                     min_ticks: int = 3, min_stretch_s: float = SATURATED_STRETCH_S,
                     unseen_limit_s: float = SATURATED_STRETCH_UNSEEN_LIMIT_S) -> dict:
    """Served tokens/s of an overloaded run in its steady state and its start-up ramp, and the limit that binds.

    Saturated ticks are those of a stretch of consecutive ticks with requests waiting that spans at least
    ``min_stretch_s`` seconds at a limit the run records, or ``unseen_limit_s`` seconds (:func:`saturated_ticks`,
    which says why); a run with none never saturated
    (``binding`` "none (the run never saturated)", no steady capacity, ``note`` saying how many ticks had a
    queue and why they do not count).
    The steady state is **every** saturated tick after the ramp, and its capacity is the mean served
    tokens/s over all of them: under saturation the queue never empties, so each such tick is the engine serving
    at its limit, whatever the tick's batch happened to hold.  No tick is kept or dropped by how busy it was
    (keeping only the ticks at ``max_num_seqs`` or at a full cache selects on the outcome: on runs of fluidq's own
    engine where the KV cache binds near ``max_num_seqs``, the ticks at >= 95 % of ``max_num_seqs`` served 24 %
    more than the long-run capacity).

    * **Ramp**: the saturated ticks before the first one where the engine's state has reached its saturated
      level -- ``running`` at >= ``plateau`` x its median over the saturated ticks and, where the KV use is
      known, the KV use at >= ``plateau`` x its median there too (a KV-bound engine admits its residents first
      and fills its cache as they decode).  Only the start is read from these levels; after it no tick is
      dropped but those with nobody waiting.
    * **Binding limit**, diagnosed on the steady ticks (it selects none of them), in this order:
      ``kv_cache`` if the run's ``preempted`` column counts preemptions there (vLLM preempts only when a block
      cannot be allocated), or if the KV use is at the cache's full level (>= ``kv_full_pct``) in at least
      ``full_share`` of them; else ``k_max`` if ``running`` is at ``max_num_seqs`` x DP (>= ``plateau`` of it, or one request
      less: a tick samples ``running`` once and completions are replaced with a lag) in at least ``full_share``
      of them; else ``token_budget`` when the KV use is known (neither the cache nor the residents bind), and
      otherwise "not resolved" (below).
    * **Interval**: batch means over blocks of ``ceil(sqrt(n))`` consecutive ticks, or of the data-chosen size of
      :func:`batch_means` where larger (:func:`_window_ci`): the ticks are autocorrelated (a tick's batch is
      mostly the previous tick's residents), so a per-tick t interval is far too narrow.  It is the interval of *this run's* steady mean;
      a short benchmark's steady window is the cohort admitted at the end of the ramp, and what that leaves
      out of the long-run capacity is measured in tests/validation/test_capacity_coverage.py.

    Parameters
    ----------
    timeseries : dict of array
        ``t, prompt_throughput, gen_throughput, running, waiting`` and optionally ``kv_cache_pct`` and
        ``preempted`` (a :class:`ServingRun`'s ``timeseries``).
    max_num_seqs, data_parallel_size : int
        The engine's ``max_num_seqs`` per replica and the number of replicas ``running`` counts.
    kv_full_pct, plateau, full_share : float
        The KV use (%) that counts as a full cache, the share of ``max_num_seqs`` (and of the saturated medians,
        for the end of the ramp) that counts as reached, and the share of the steady ticks a limit must hold in
        to be named.
    kv_in_use_tokens : array or callable, optional
        Per tick, the KV tokens the requests held (:func:`kv_in_use_tokens`), or a function of no argument
        that returns them, called only when they are read: when the ``kv_cache_pct`` column is absent or all 0
        (a stat logger that never filled it).  Over ``kv_capacity_tokens`` (one replica's KV cache *as the run
        recorded it*) it stands in for the KV use; with no recorded capacity only its level marks the end of the
        ramp and the binding limit is reported as not resolved (``"kv_cache or token_budget ..."``) unless the
        run's ``preempted`` column shows preemptions in the steady ticks.
    tick_s : float
        Seconds per tick (``seconds`` below are ticks x ``tick_s``).
    min_ticks : int
        A regime of fewer ticks has no capacity: its ``tokens_per_s`` is NaN and ``note`` says why.
    min_stretch_s, unseen_limit_s : float
        The shortest stretch of ticks with requests waiting, in seconds, that counts as saturated with the engine
        at ``max_num_seqs``, a full cache or preempting in half of its ticks, and without (:func:`saturated_ticks`).

    Returns
    -------
    dict
        ``binding`` (measured), ``binding_source`` (what said so, with the shares read), ``steady`` and
        ``ramp``: each ``tokens_per_s``, ``ci`` (95 %), ``ticks``, ``seconds``, ``window_s`` (first, last tick
        stamp), ``note`` (empty, or why there is no number), ``index`` (the regime's tick positions in
        ``timeseries``, for :func:`mix_adjusted_capacity`; ``()`` when the regime has no capacity);
        ``saturated_seconds``; ``shares`` (the steady ticks' shares at a full cache, at ``max_num_seqs``, and their
        preemptions; NaN where not recorded).
    """
    ts = timeseries
    t = np.asarray(ts["t"], dtype=float)
    tok = np.asarray(ts["prompt_throughput"], dtype=float) + np.asarray(ts["gen_throughput"], dtype=float)
    run_ = np.asarray(ts["running"], dtype=float)
    queued = np.asarray(ts["waiting"], dtype=float) > 0
    kv = ts.get("kv_cache_pct")
    kv = np.asarray(kv, dtype=float) if kv is not None else np.full(t.shape, np.nan)
    pre = ts.get("preempted")
    pre = np.asarray(pre, dtype=float) if pre is not None else None
    k_total = int(max_num_seqs) * int(data_parallel_size)
    tick_s = float(tick_s)
    # a tick samples ``running`` once, often between a completion and its replacement: "at max_num_seqs" is within
    # 1 - plateau of it, or one request
    at_k = min(plateau * k_total, k_total - 1.0)
    at_limit = (run_ >= at_k) | (np.nan_to_num(kv) >= kv_full_pct)
    if pre is not None:
        at_limit |= np.nan_to_num(pre) > 0
    sat = saturated_ticks(ts["waiting"], at_limit, tick_s=tick_s, min_stretch_s=min_stretch_s,
                          unseen_limit_s=unseen_limit_s)
    nan_regime = {"tokens_per_s": float("nan"), "ci": (float("nan"), float("nan")), "ticks": 0, "seconds": 0,
                  "window_s": (float("nan"), float("nan")), "note": "", "index": ()}
    nan_shares = {"kv_full": float("nan"), "k_max": float("nan"), "preemptions": float("nan")}
    if sat.sum() == 0:
        note = ("the run never saturated: no tick with requests waiting" if not queued.any() else
                f"the run never saturated: {int(queued.sum())} tick(s) with requests waiting, none in a stretch of "
                f">= {min_stretch_s:g} s at max_num_seqs or a full KV cache, nor of >= {unseen_limit_s:g} s: "
                "queues of bursts admitted within seconds, not held by a limit (the engine below its capacity)")
        return {"binding": "none (the run never saturated)", "binding_source": note,
                "steady": {**nan_regime, "note": note}, "ramp": dict(nan_regime), "saturated_seconds": 0,
                "shares": nan_shares}
    kv_recorded = bool(np.any(np.isfinite(kv[sat])) and np.nanmax(kv[sat]) > 0)
    source = "the kv_cache_pct column"
    level = kv if kv_recorded else None  # the KV use whose level marks the end of the ramp
    if not kv_recorded and kv_in_use_tokens is not None:
        use = np.asarray(kv_in_use_tokens() if callable(kv_in_use_tokens) else kv_in_use_tokens, dtype=float)
        level = use
        if kv_capacity_tokens:
            kv = 100.0 * use / (float(kv_capacity_tokens) * int(data_parallel_size))
            kv_recorded = True
            source = ("the KV use rebuilt from the requests' timestamps over the recorded KV cache (the run's "
                      "kv_cache_pct " + ("stayed 0)" if "kv_cache_pct" in ts else "is not recorded)"))
    idx = np.arange(t.size)
    reached = sat & (run_ >= plateau * float(np.median(run_[sat])))
    if level is not None:
        reached &= level >= plateau * float(np.median(level[sat]))
    start = int(np.flatnonzero(reached)[0]) if reached.any() else t.size
    steady = sat & (idx >= start)
    # the ramp: every tick with requests waiting before the steady state begins (a queue that builds up to the
    # saturated stretch), as before the stretch rule; it has no capacity row to score
    ramp = queued & (idx < start)
    n_st = int(steady.sum())
    # the binding limit: a diagnosis of the steady ticks, which it selects none of
    k_share = float(np.mean(run_[steady] >= at_k)) if n_st else float("nan")
    kv_share = float(np.mean(kv[steady] >= kv_full_pct)) if n_st and kv_recorded else float("nan")
    n_pre = float(np.nansum(pre[steady])) if n_st and pre is not None else float("nan")
    shares = {"kv_full": kv_share, "k_max": k_share, "preemptions": n_pre}
    kv_words = (f"{100 * kv_share:.0f} % of the steady ticks at a KV use >= {kv_full_pct:g} % ({source})"
                if np.isfinite(kv_share) else "KV use against the cache unknown (no KV-use column and no recorded KV "
                "cache)")
    said = (f"{kv_words}, {100 * k_share:.0f} % with running >= {at_k:g} (max_num_seqs x DP = "
            f"{k_total}), " + ("preemptions not recorded" if pre is None else f"{n_pre:g} preemptions")
            + f" (a limit is named where it holds in >= {100 * full_share:g} % of them)") if n_st else ""
    if not n_st:
        binding, why = "unknown (no steady state)", "no tick after the ramp with requests waiting"
    elif n_pre > 0:
        binding, why = "kv_cache", "preemptions while requests waited (the preempted column)"
    elif kv_share >= full_share:
        binding, why = "kv_cache", "the KV use at the cache's full level"
    elif k_share >= full_share:
        binding, why = "k_max", "running at max_num_seqs with no preemption recorded" if pre is not None \
            else "running at max_num_seqs"
    elif kv_recorded or n_pre == 0:
        binding, why = "token_budget", "neither the KV cache nor max_num_seqs holds"
    elif level is not None:
        binding = "kv_cache or token_budget (the run records neither its KV use nor its KV cache)"
        why = "running below max_num_seqs; the KV use rebuilt from the requests' timestamps has no cache to fill"
    else:
        binding, why = "unknown (the run records no KV use)", "running below max_num_seqs"
    source = f"{why}: {said}" if said else why

    def regime(mask, what):
        n = int(mask.sum())
        if not mask.any():
            return {**nan_regime, "note": f"no {what}"}
        win = (float(t[mask][0]), float(t[mask][-1]))
        if n < min_ticks:
            return {**nan_regime, "ticks": n, "seconds": n * tick_s, "window_s": win,
                    "note": f"{n} tick(s) of {tick_s:g} s ({win[0]:g}-{win[1]:g} s): fewer than {min_ticks}, "
                            "too few for a capacity"}
        m, ci = _window_ci(tok[mask])
        return {"tokens_per_s": m, "ci": ci, "ticks": n, "seconds": n * tick_s, "window_s": win, "note": "",
                "index": tuple(int(i) for i in np.flatnonzero(mask))}

    st = regime(steady, "tick with requests waiting after the ramp")
    if not np.isfinite(st["tokens_per_s"]):
        st["note"] = ("no steady state: " + st["note"] + f"; {int(sat.sum())} tick(s) with requests waiting in all")
    return {"binding": binding, "binding_source": source, "steady": st,
            "ramp": regime(ramp, "tick with requests waiting before it"),
            "saturated_seconds": int((sat | ramp).sum()) * tick_s,
            "shares": shares}


def mix_adjusted_capacity(timeseries: dict, index, *, mean_prompt_tokens: float, mean_output_tokens: float,
                          resamples: int = 2000, seed: int = 0, block: int = 3) -> dict:
    """The steady window's served tokens/s moved to the workload's stationary mix of prompt and generated tokens.

    A finite benchmark's only steady window follows its ramp: the running requests are then a young cohort,
    admitted together, which finishes (and so lets new prompts in) more slowly than a stationary population
    of the same size, so the window serves fewer prompt tokens per generated token than the workload brings
    (``m_p / m_d``).  Under a fixed limit every tick of the window costs ``1 s = a P + b G`` (``P`` prompt,
    ``G`` generated tokens served in the tick: ``b`` is the decode iteration over its residents per token, ``a``
    what a prompt token adds -- the flow balance of :func:`fluidq.validate.predict.predict_capacity`); ``a`` and
    ``b`` are read by least squares from the window's ticks (``index``, a regime's ``index``) and the capacity
    at the stationary mix is ``(m_p + m_d) / (a m_p + b m_d)``.  Measured inputs only: the run's ticks and its
    requests' mean lengths; nothing predicted is read.  The interval is a seeded bootstrap over blocks of
    ``block`` consecutive ticks (the ticks are autocorrelated).  It assumes the per-token costs do not depend
    on the mix, which holds when ``max_num_seqs`` fixes the residents (``k_max`` binding); under a KV limit the
    residents themselves depend on the contexts, and the number is then an approximation.

    Returns ``tokens_per_s`` (NaN when the window cannot separate the two costs: fewer than 4 ticks, no tick
    with prompt tokens, or a cost that is not positive), ``ci``, ``prompt_us_per_token`` (``a``),
    ``generated_us_per_token`` (``b``), ``window_prompt_share`` (``P / G`` over the window), ``workload_prompt_share``
    (``m_p / m_d``) and ``note``."""
    idx = np.asarray(index, dtype=int)
    P = np.asarray(timeseries["prompt_throughput"], dtype=float)[idx]
    G = np.asarray(timeseries["gen_throughput"], dtype=float)[idx]
    mp, md = float(mean_prompt_tokens), float(mean_output_tokens)
    out = {"tokens_per_s": float("nan"), "ci": (float("nan"), float("nan")), "prompt_us_per_token": float("nan"),
           "generated_us_per_token": float("nan"), "window_prompt_share": float("nan"),
           "workload_prompt_share": mp / md if md > 0 else float("nan"), "ticks": int(idx.size), "note": ""}

    def fit(p, g):
        if p.size < 4 or not np.any(p > 0) or not np.any(g > 0):
            return None
        (a, b), *_ = np.linalg.lstsq(np.c_[p, g], np.ones(p.size), rcond=None)
        return (a, b) if a > 0 and b > 0 else None

    ab = fit(P, G)
    if ab is None:
        out["note"] = ("the window cannot separate a prompt token's cost from a generated token's (fewer than 4 "
                       "ticks, no prompt tokens, or a cost fitted <= 0)")
        return out
    a, b = ab
    cap = (mp + md) / (a * mp + b * md)
    rng = np.random.default_rng(seed)
    nb = int(math.ceil(idx.size / block))
    starts = np.arange(0, max(1, idx.size - block + 1))
    caps = []
    for _ in range(int(resamples)):
        sel = np.concatenate([np.arange(s0, s0 + block) for s0 in rng.choice(starts, nb)])[: idx.size]
        r = fit(P[sel], G[sel])
        if r is not None:
            caps.append((mp + md) / (r[0] * mp + r[1] * md))
    ci = (float(np.percentile(caps, 2.5)), float(np.percentile(caps, 97.5))) if len(caps) > 0.9 * resamples \
        else (float("nan"), float("nan"))
    out.update(tokens_per_s=float(cap), ci=ci, prompt_us_per_token=float(a * 1e6), generated_us_per_token=float(b * 1e6),
               window_prompt_share=float(P.sum() / G.sum()) if G.sum() > 0 else float("nan"))
    if not np.isfinite(ci[0]):
        out["note"] = "no interval: more than 10 % of the bootstrap resamples could not separate the two costs"
    return out


def queue_growth(run: ServingRun) -> dict:
    """How fast the run's backlog grows while requests still arrive.

    The window: the ticks from the first with ``waiting > 0`` to the last arrival (one tick past it), and it
    opens one tick (``run.tick_s``) before its first stamp, where the backlog was last seen empty.
    ``waiting_per_s``: the mean per-tick increment of ``waiting`` over the window's ticks, per second.
    ``backlog_tokens_per_s``: the same of the token backlog (tokens offered so far minus tokens served so far);
    the fluid model says it equals ``offered - capacity`` (Theorem 2 of arXiv:2504.07347).  A backlog is a
    random walk with drift, so the growth is read from its increments (nearly uncorrelated), not as a fitted
    line through its levels (whose residuals are the walk itself); the 95 % intervals are batch means of the
    increments with a data-chosen batch size (:func:`batch_means`).  ``offered_tokens_per_s``: tokens of the
    requests that arrived in the window per second.
    """
    ts = run.timeseries
    t = np.asarray(ts["t"], dtype=float)
    dt_tick = run.tick_s
    # each row's throughputs are rates over the interval since the row before (the first: one tick), so the
    # tokens served so far sum rate x interval -- the same as x tick_s on a regular grid, and right where a
    # tick is missing or late
    span = np.diff(t, prepend=t[0] - dt_tick) if len(t) else t
    served_cum = np.cumsum((ts["prompt_throughput"] + ts["gen_throughput"]) * span)
    tot = run.input_tokens + run.output_tokens
    last_arrival = float(run.arrival_s[-1])
    on = np.flatnonzero(ts["waiting"] > 0)
    nan2 = (float("nan"), float("nan"))
    if on.size == 0:
        return {"waiting_per_s": 0.0, "backlog_tokens_per_s": float("nan"), "offered_tokens_per_s": float("nan"),
                "window_s": nan2, "ticks": 0, "waiting_per_s_ci": nan2, "backlog_tokens_per_s_ci": nan2,
                "note": "no tick with requests waiting"}
    t_start = float(t[on[0]]) - dt_tick
    sel = (t >= t_start) & (t <= last_arrival + dt_tick)
    if sel.sum() < 3:
        sel = np.zeros_like(t, dtype=bool)
        sel[on[0]: on[0] + 3] = True
    tt = t[sel]
    offered_cum = np.array([tot[run.arrival_s <= x].sum() for x in tt], dtype=float)
    backlog = offered_cum - served_cum[sel]
    wt = np.asarray(ts["waiting"][sel], dtype=float)
    dt = np.diff(tt)
    win = (float(tt[0] - dt_tick), float(tt[-1]))
    arrived = (run.arrival_s > win[0]) & (run.arrival_s <= win[1])
    offered = float(tot[arrived].sum() / (win[1] - win[0]))
    out = {"window_s": win, "ticks": int(tt.size), "offered_tokens_per_s": offered, "note": ""}
    for key, y in (("waiting_per_s", wt), ("backlog_tokens_per_s", backlog)):
        if dt.size == 0:
            out[key], out[key + "_ci"] = float("nan"), nan2
            continue
        bm = batch_means(np.diff(y) / dt)
        out[key], out[key + "_ci"] = bm["mean"], bm["ci"]
        if bm["note"]:
            out["note"] += f"{key}: {bm['note']}; "
    return out


def _block_indices(n: int, block: int, resamples: int, seed: int) -> np.ndarray | None:
    """``resamples x n`` positions of seeded moving-block bootstrap resamples of ``range(n)`` (blocks of ``block``
    consecutive positions), or None for fewer than two blocks' worth of positions."""
    n, block = int(n), max(1, int(block))
    if n < 2 * block:
        return None
    rng = np.random.default_rng(seed)
    nb = int(math.ceil(n / block))
    starts = rng.integers(0, n - block + 1, size=(int(resamples), nb))
    return (starts[:, :, None] + np.arange(block)[None, None, :]).reshape(int(resamples), -1)[:, :n]


def latency_metrics_ci(ttft_s, latency_s, tpot_s, *, block: int = 10, resamples: int = 1000, seed: int = 0) -> dict:
    """95 % intervals of the 15 metrics of :func:`latency_metrics` (same keys, ``(low, high)`` in ms): a seeded
    moving-block bootstrap over the requests in the order given (arrival order: requests that arrive together
    wait together, so blocks of ``block`` consecutive ones are resampled); ``(nan, nan)`` for fewer than
    ``2 x block`` requests.  Measured inputs only.

    **Not an interval for another run of the workload**, and ``fluidq validate --run`` prints none: the
    requests' latencies are serially dependent over the whole run (TTFT lag-1 correlation 0.39 / 0.97 / 0.99 at
    5 / 12 / 30 req/s), so one run holds no estimate of the between-run variation; on seeded engine
    simulations (300 requests, 120 seeds) these intervals covered the mean over replications in 0-100 % of runs
    depending on the load and the metric (TTFT mean 0.84 / 0.28 / 0.98, every TPOT metric 0) (tests/validation/test_run_intervals.py, a strict xfail)."""
    arrs = {"TTFT": np.asarray(ttft_s, dtype=float) * 1e3, "TPOT": np.asarray(tpot_s, dtype=float) * 1e3,
            "Latency": np.asarray(latency_s, dtype=float) * 1e3}
    idx = _block_indices(arrs["TTFT"].size, block, resamples, seed)
    out = {}
    for name, a in arrs.items():
        x = a[idx] if idx is not None else None  # resamples x n
        stats = {"Mean": lambda: x.mean(axis=1)} | {
            lab: (lambda q=q: np.percentile(x, q, axis=1)) for lab, q in (("Median", 50), ("P90", 90), ("P95", 95),
                                                                          ("P99", 99))}
        for lab, f in stats.items():
            if x is None:
                out[f"{name} {lab}"] = (float("nan"), float("nan"))
                continue
            v = f()
            out[f"{name} {lab}"] = ((float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5)))
                                    if np.all(np.isfinite(v)) else (float("nan"), float("nan")))
    return out


def latency_metrics(ttft_s, latency_s, tpot_s) -> dict:
    """Mean, median, P90, P95, P99 of TTFT, TPOT and latency in milliseconds (peer summary's keys); NaN values
    (the TPOT of a one-token output, :attr:`ServingRun.tpot_s`) are left out, and a metric with no value is 0, as
    vLLM's ``benchmark_serving`` reports it."""
    out = {}
    for name, arr in (("TTFT", ttft_s), ("TPOT", tpot_s), ("Latency", latency_s)):
        a = np.asarray(arr, dtype=float) * 1e3
        a = a[np.isfinite(a)]  # TPOT of one-token outputs: left out, as vLLM's benchmark does
        if a.size == 0:  # no request with a TPOT: vLLM's benchmark reports 0
            a = np.zeros(1)
        out[f"{name} Mean"] = float(a.mean())
        for lab, q in (("Median", 50), ("P90", 90), ("P95", 95), ("P99", 99)):
            out[f"{name} {lab}"] = float(np.percentile(a, q))
    return out
