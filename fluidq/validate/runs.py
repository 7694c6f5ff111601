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
same code.

Measured quantities
-------------------
TTFT = ``first_token_ts - queued_ts``; latency = ``last_token_ts - queued_ts``; TPOT =
``(last_token_ts - first_token_ts)/(output_toks - 1)`` -- the definitions under which the peer
simulator's summary (``peer_sim_vs_vllm_summary.txt``) is reproduced from these files.
The *served throughput* of an overloaded run is read over its saturated interval (ticks with
``waiting > 0``), not as tokens over the makespan (ramp-up and drain would understate it).

Capacity per regime (:func:`capacity_regimes`): the saturated ticks are split by what the
measurements alone say binds -- ``k_max`` when ``running`` reaches ``max_num_seqs`` (times the
data-parallel size: the run's ``running`` counts every replica), ``kv_cache`` when the KV use reaches
90 %, else ``token_budget``.  The *steady state* is the saturated ticks where that limit holds
(``running`` >= 95 % of ``max_num_seqs``, KV use >= 90 %, or, for the token budget, ``running`` on its
plateau, >= 95 % of its saturated maximum); the *start-up ramp* is the saturated ticks before the first steady
one (the batches are then prompt-heavy: few residents decode yet).  Each regime's mean tokens/s comes
with a 95 % interval from batch means over blocks of ticks (per-tick throughput is autocorrelated).
"""
from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import json_loads, open_text, read_text  # noqa: F401  (open_text: re-exported)
from ..errors import DataError

__all__ = ["ServingRun", "read_run", "read_peer_summary", "saturated_throughput", "capacity_regimes",
           "queue_growth", "latency_metrics", "open_text"]


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
        as ``bench-N``), when every request's id ends in a number; else None.
    sent_s : ndarray or None
        Per request, when the client handed it to vLLM (``arrival_time``, vLLM's wall-clock stamp in the
        front end) on the engine's clock: shifted by the smallest ``queued_ts - arrival_time`` of the run
        (the clocks' offset plus the shortest hand-over), at least 0; None when a request lacks
        ``arrival_time``.  ``arrival_s`` (``queued_ts``) is when the engine *read* the request, which it
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

    @property
    def engine_kwargs(self) -> dict:
        return self.meta.get("engine_kwargs", {})

    @property
    def max_num_seqs(self) -> int:
        return int(self.engine_kwargs.get("max_num_seqs", 256))

    @property
    def max_num_batched_tokens(self) -> int:
        return int(self.engine_kwargs.get("max_num_batched_tokens", 2048))

    @property
    def tensor_parallel_size(self) -> int:
        return int(self.engine_kwargs.get("tensor_parallel_size", 1))

    @property
    def data_parallel_size(self) -> int:
        return int(self.engine_kwargs.get("data_parallel_size", 1) or 1)

    @property
    def pipeline_parallel_size(self) -> int:
        return int(self.engine_kwargs.get("pipeline_parallel_size", 1) or 1)

    @property
    def expert_parallel(self) -> bool:
        return bool(self.engine_kwargs.get("enable_expert_parallel", False))

    @property
    def kv_capacity_tokens(self) -> int | None:
        kv = self.meta.get("kv_cache") or {}
        if kv.get("num_kv_tokens"):
            return int(kv["num_kv_tokens"])
        if kv.get("num_gpu_blocks") and kv.get("block_size"):
            return int(kv["num_gpu_blocks"]) * int(kv["block_size"])
        return None

    @property
    def async_scheduling(self) -> bool:
        """Whether the engine scheduled each batch while the previous one ran (vLLM's
        ``--async-scheduling``): the run's ``resolved_config.scheduler_config.async_scheduling`` when
        ``vllm_meta.json`` records it, else its ``engine_kwargs``, else vLLM's default for the run's
        ``vllm_version`` (on since 0.14, except with pipeline parallelism, by vLLM 0.14's release notes)."""
        sched = ((self.meta.get("resolved_config") or {}).get("scheduler_config") or {})
        if isinstance(sched, dict) and isinstance(sched.get("async_scheduling"), bool):
            return sched["async_scheduling"]
        if isinstance(self.engine_kwargs.get("async_scheduling"), bool):
            return self.engine_kwargs["async_scheduling"]
        m = re.match(r"(\d+)\.(\d+)", str(self.meta.get("vllm_version", "")))
        return bool(m) and (int(m.group(1)), int(m.group(2))) >= (0, 14) and self.pipeline_parallel_size == 1

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
        return (self.last_token_s - self.first_token_s) / np.maximum(self.output_tokens - 1, 1)

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
    """Read a run folder (see the module docstring for the format)."""
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"{path}: not a run folder (expected vllm_requests.jsonl, vllm_timeseries.csv, "
                        "vllm_meta.json)")
    rows = []
    req = path / "vllm_requests.jsonl"
    with open_text(req) as f:
        for i, line in enumerate(f):
            if line.strip():
                try:
                    r = json.loads(line)
                except RecursionError:
                    raise DataError(f"{req}, line {i + 1}: JSON nested too deeply to read") from None
                except ValueError as exc:
                    raise DataError(f"{req}, line {i + 1}: not JSON ({exc})") from None
                if not isinstance(r, dict):
                    raise DataError(f"{req}, line {i + 1}: expected a JSON object (one request)")
                rows.append((i + 1, r))
    if not rows:
        raise DataError(f"{req}: no requests")
    need = ("input_toks", "output_toks", "queued_ts", "first_token_ts", "last_token_ts")
    for line, r in rows:
        miss = [k for k in need if k not in r]
        if miss:
            raise DataError(f"{req}, line {line}: missing {', '.join(miss)}")
        for k in need:
            v = r[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise DataError(f"{req}, line {line}: {k} = {json.dumps(v)[:40]}: expected a finite number")
        for k in ("input_toks", "output_toks"):
            if not (float(r[k]).is_integer() and 0 <= r[k] <= 2**31 - 1):
                raise DataError(f"{req}, line {line}: {k} = {r[k]!r}: expected a whole number of tokens in "
                                "[0, 2**31-1]")
    rows.sort(key=lambda lr: lr[1]["queued_ts"])
    rows = [r for _, r in rows]
    q = np.array([float(r["queued_ts"]) for r in rows])
    t0 = q[0]
    ts = {}
    tsp = path / "vllm_timeseries.csv"
    with open_text(tsp) as f:
        reader = csv.DictReader(f)
        try:
            for r in reader:
                for k, v in r.items():
                    try:
                        x = float(v)
                    except (TypeError, ValueError):
                        raise DataError(f"{tsp}, line {reader.line_num}: column {k!r} = {v!r}: not a number") from None
                    ts.setdefault(k, []).append(x)
        except csv.Error as exc:
            raise DataError(f"{tsp}, line {reader.line_num}: not a CSV row ({exc})") from None
    ts = {k: np.asarray(v) for k, v in ts.items()}
    for k in ("t", "prompt_throughput", "gen_throughput", "running", "waiting"):
        if k not in ts:
            raise DataError(f"{tsp}: missing column {k!r}")
        if not np.all(np.isfinite(ts[k])):
            raise DataError(f"{tsp}: column {k!r} has a value that is not finite")
    mp = path / "vllm_meta.json"
    with open_text(mp) as f:
        meta = json_loads(f.read(), where=str(mp))
    if not isinstance(meta, dict):
        raise DataError(f"{mp}: expected a JSON object")
    for key in ("engine_kwargs", "kv_cache", "hardware"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise DataError(f"{mp}: {key} is not an object")
    ids = [re.search(r"(\d+)$", str(r.get("request_id", ""))) for r in rows]
    request_index = np.array([int(m.group(1)) for m in ids]) if all(ids) else None
    if request_index is not None and np.unique(request_index).size != request_index.size:
        request_index = None  # ids that do not number the requests once each say no order
    return ServingRun(
        name=path.name, path=str(path), request_index=request_index,
        input_tokens=np.array([int(r["input_toks"]) for r in rows]),
        output_tokens=np.array([int(r["output_toks"]) for r in rows]),
        arrival_s=q - t0,
        first_token_s=np.array([float(r["first_token_ts"]) for r in rows]) - t0,
        last_token_s=np.array([float(r["last_token_ts"]) for r in rows]) - t0,
        timeseries=ts, meta=meta, sent_s=_sent(rows, q, t0))


def _sent(rows, q, t0):
    """The client's hand-over times on the engine clock (see :class:`ServingRun` ``sent_s``), or None."""
    a = [r.get("arrival_time") for r in rows]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in a):
        return None
    a = np.asarray(a, dtype=float)
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
    return {"tokens_per_s": float(tok.mean()), "seconds": int(m.sum()),
            "running_max": float(ts["running"][m].max()), "running_mean": float(ts["running"][m].mean()),
            "kv_pct_mean": float(kv[m].mean()) if kv is not None else float("nan"),
            "tokens_per_s_ci": (float(tok.mean() - half), float(tok.mean() + half))}


def _mean_ci(x: np.ndarray, block: int = 5) -> tuple[float, tuple[float, float]]:
    """Mean and 95 % interval by batch means over blocks of ``block`` ticks (ticks themselves when
    fewer than 3 blocks; no interval from fewer than 2 ticks)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return float("nan"), (float("nan"), float("nan"))
    m = float(x.mean())
    nb = x.size // block
    if nb >= 3:
        bm = x[: nb * block].reshape(nb, block).mean(axis=1)
        half = 1.96 * bm.std(ddof=1) / np.sqrt(nb)
    elif x.size >= 2:
        half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)
    else:
        half = float("nan")
    return m, (m - half, m + half)


def capacity_regimes(timeseries: dict, *, max_num_seqs: int, data_parallel_size: int = 1,
                     kv_full_pct: float = 90.0, plateau: float = 0.95) -> dict:
    """Served tokens/s per regime of an overloaded run (see the module docstring).

    Parameters
    ----------
    timeseries : dict of array
        ``t, prompt_throughput, gen_throughput, running, waiting`` and optionally ``kv_cache_pct``
        (a :class:`ServingRun`'s ``timeseries``).
    max_num_seqs, data_parallel_size : int
        The engine's ``max_num_seqs`` per replica and the number of replicas ``running`` counts.

    Returns
    -------
    dict
        ``binding`` (measured), ``steady`` and ``ramp``: each ``tokens_per_s``, ``ci`` (95 %),
        ``seconds`` (ticks), ``window_s`` (first, last tick); ``saturated_seconds``.
    """
    ts = timeseries
    t = np.asarray(ts["t"], dtype=float)
    tok = np.asarray(ts["prompt_throughput"], dtype=float) + np.asarray(ts["gen_throughput"], dtype=float)
    run_ = np.asarray(ts["running"], dtype=float)
    sat = np.asarray(ts["waiting"], dtype=float) > 0
    kv = ts.get("kv_cache_pct")
    kv = np.asarray(kv, dtype=float) if kv is not None else np.full(t.shape, np.nan)
    k_total = int(max_num_seqs) * int(data_parallel_size)
    nan_regime = {"tokens_per_s": float("nan"), "ci": (float("nan"), float("nan")), "seconds": 0,
                  "window_s": (float("nan"), float("nan"))}
    if sat.sum() == 0:
        return {"binding": "none (the run never saturated)", "steady": nan_regime, "ramp": nan_regime,
                "saturated_seconds": 0}
    if np.any(run_[sat] >= k_total):
        # a tick samples ``running`` once: completions are replaced with a lag, so "at the limit" is
        # within the plateau share of it
        binding, hold = "k_max", run_ >= plateau * k_total
    elif np.any(np.isfinite(kv[sat])) and np.nanmax(kv[sat]) >= kv_full_pct:
        binding, hold = "kv_cache", kv >= kv_full_pct
    elif np.any(np.isfinite(kv[sat])):
        binding, hold = "token_budget", run_ >= plateau * run_[sat].max()
    else:
        binding, hold = "unknown (the run records no KV use)", run_ >= plateau * run_[sat].max()
    steady = sat & hold
    first = int(np.flatnonzero(steady)[0]) if steady.any() else len(t)
    ramp = sat & ~steady & (np.arange(len(t)) < first)

    def regime(mask):
        if not mask.any():
            return dict(nan_regime)
        m, ci = _mean_ci(tok[mask])
        return {"tokens_per_s": m, "ci": ci, "seconds": int(mask.sum()),
                "window_s": (float(t[mask][0]), float(t[mask][-1]))}

    return {"binding": binding, "steady": regime(steady), "ramp": regime(ramp), "saturated_seconds": int(sat.sum())}


def queue_growth(run: ServingRun) -> dict:
    """How fast the run's backlog grows while requests still arrive.

    ``waiting_per_s``: least-squares slope of ``waiting`` over the ticks from the first tick with
    ``waiting > 0`` to the last arrival.  ``backlog_tokens_per_s``: slope of the token backlog
    (tokens offered so far minus tokens served so far) over the same ticks; the fluid model says
    it equals ``offered - capacity`` (Theorem 2 of arXiv:2504.07347).  ``offered_tokens_per_s``:
    tokens of the requests that arrived in that window per second.
    """
    ts = run.timeseries
    t = ts["t"]
    served_cum = np.cumsum(ts["prompt_throughput"] + ts["gen_throughput"]) * np.gradient(t) if len(t) > 1 else t
    tot = run.input_tokens + run.output_tokens
    last_arrival = float(run.arrival_s[-1])
    on = np.flatnonzero(ts["waiting"] > 0)
    if on.size == 0:
        return {"waiting_per_s": 0.0, "backlog_tokens_per_s": float("nan"), "offered_tokens_per_s": float("nan"),
                "window_s": (float("nan"), float("nan"))}
    t_start = float(t[on[0]]) - 1.0
    sel = (t >= t_start) & (t <= last_arrival + 1.0)
    if sel.sum() < 3:
        sel = np.zeros_like(t, dtype=bool)
        sel[on[0]: on[0] + 3] = True
    tt = t[sel]
    offered_cum = np.array([tot[run.arrival_s <= x].sum() for x in tt], dtype=float)
    backlog = offered_cum - served_cum[sel]
    w = np.polyfit(tt, ts["waiting"][sel], 1)[0]
    b = np.polyfit(tt, backlog, 1)[0]
    win = (tt[0] - 1.0, tt[-1])
    arrived = (run.arrival_s > win[0]) & (run.arrival_s <= win[1])
    offered = float(tot[arrived].sum() / (win[1] - win[0]))
    return {"waiting_per_s": float(w), "backlog_tokens_per_s": float(b), "offered_tokens_per_s": offered,
            "window_s": (float(win[0]), float(win[1]))}


def latency_metrics(ttft_s, latency_s, tpot_s) -> dict:
    """Mean, median, P90, P95, P99 of TTFT, TPOT and latency in milliseconds (peer summary's keys)."""
    out = {}
    for name, arr in (("TTFT", ttft_s), ("TPOT", tpot_s), ("Latency", latency_s)):
        a = np.asarray(arr, dtype=float) * 1e3
        out[f"{name} Mean"] = float(a.mean())
        for lab, q in (("Median", 50), ("P90", 90), ("P95", 95), ("P99", 99)):
            out[f"{name} {lab}"] = float(np.percentile(a, q))
    return out
