"""A run folder in LLMServingSim's layout written from fluidq's own simulator, for an engine whose capacity is known.

``synthesize(dst, ...)`` takes the operator profiles of a shipped run (optionally renamed as another model, or
copied as ``profile_tp{N}_*`` with a communication link in ``peer_sim_config.json``), builds the iteration model
``fluidq validate --run`` will build from that folder, sends a seeded overloaded benchmark through
:func:`fluidq.validate.replay.replay` (vLLM v1's engine model on :func:`fluidq.simulate`), and writes what vLLM's
bench would record:

* ``vllm_requests.jsonl``: ``arrival_time`` (client wall clock), ``queued_ts`` (when the engine read the request:
  the end of the batch running at its arrival, :func:`fluidq.validate.replay.read_s`), ``scheduled_ts`` (its first
  batch's start), ``first_token_ts`` (end of the batch completing the prefill), ``last_token_ts``;
* ``vllm_timeseries.csv`` at 1 s ticks: prompt and generated tokens of the batches ending in the tick, ``running``
  and ``waiting`` at the tick's end, ``kv_cache_pct`` (KV blocks in use over the cache);
* ``vllm_meta.json``: the engine options and the KV cache (``num_gpu_blocks`` x ``block_size``).

``known_capacity(...)`` is the same engine's served tokens/s over a long overloaded run (seeded replications):
what the measured side of a finite benchmark should read, independently of the fluid formula that predicts it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

import run_variants as rv

T0_MONO = 500_000.0  # the engine's monotonic clock at the first arrival (any offset: the reader shifts it)
T0_WALL = 1.78e9  # the client's wall clock at the first arrival
#: vLLM's default --block-size: the engine's KV blocks, the cache the KV % is read against and the meta's kv_cache
BLOCK_SIZE = 16


def profile_folder(dst: Path, *, src: str = rv.LLAMA_PRO, tp: int = 1, model: str | None = None,
                   link_gbps: float | None = None, link_latency_ns: float | None = None) -> Path:
    """The profiles of ``src`` in ``dst`` (``profile_tp{tp}_*`` copies of the TP1 tables for ``tp`` > 1: the timing
    of a split model is not what matters here, the same tables on both sides is), ``profile_meta.yaml`` naming
    ``model`` when given, and a ``peer_sim_config.json`` with the link when given."""
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    full = rv.copy_run(src, dst / ".src")
    for f in full.glob("profile_tp1_*"):
        shutil.copy(f, dst / f.name.replace("profile_tp1_", f"profile_tp{tp}_"))
    meta = (full / "profile_meta.yaml").read_text()
    if model is not None:
        old = rv.meta(full)["model"]
        meta = meta.replace(old, model)
    (dst / "profile_meta.yaml").write_text(meta)
    if link_gbps is not None:
        (dst / "peer_sim_config.json").write_text(json.dumps({"num_nodes": 1, "link_bw": link_gbps,
                                                              "link_latency": link_latency_ns}))
    shutil.rmtree(full)
    return dst


def iteration_model(folder: Path, facts, tp: int):
    from fluidq.batchtime.comm import Link
    from fluidq.batchtime.operators import lss_iteration_model

    comm = Link.from_peer_sim_config(folder / "peer_sim_config.json") if tp > 1 else None
    return lss_iteration_model(folder, n_layers=facts.n_layers, tp=tp, facts=facts, comm=comm)


def workload(n: int, rate_per_s: float, seed: int, *, prompt_mean: float = 400, output_mean: float = 150):
    """Seeded Poisson arrivals (the first at 0) and lognormal lengths (ShareGPT-like spread, sigma 0.6)."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([[0.0], np.cumsum(rng.exponential(1.0 / rate_per_s, n - 1))])
    s = 0.6
    p = np.maximum(1, np.round(rng.lognormal(np.log(prompt_mean) - s * s / 2, s, n))).astype(np.int64)
    o = np.maximum(2, np.round(rng.lognormal(np.log(output_mean) - s * s / 2, s, n))).astype(np.int64)
    return a, p, o


def engine_run(model, a, p, o, *, max_num_seqs: int, b_max: int, kv_blocks: int, block_size: int = BLOCK_SIZE):
    from fluidq.validate.replay import replay

    return replay(model, a, p, o, b_max=b_max, k_max=max_num_seqs, kv_capacity_tokens=kv_blocks * block_size,
                  block_size=block_size)


def known_capacity(model, *, rate_per_s: float, max_num_seqs: int, b_max: int, kv_blocks: int, n: int = 3000,
                   seeds=(11, 12, 13), **lengths) -> tuple[float, float]:
    """Mean and spread (max - min) over ``seeds`` of the served tokens/s of a long overloaded run, read over its
    middle half (past the ramp, before the drain; the queue never empties there at this rate)."""
    caps = []
    for seed in seeds:
        a, p, o = workload(n, rate_per_s, seed, **lengths)
        rr = engine_run(model, a, p, o, max_num_seqs=max_num_seqs, b_max=b_max, kv_blocks=kv_blocks)
        end = float(a[-1])
        caps.append(rr.served_tokens_per_s(0.25 * end, 0.75 * end))
    return float(np.mean(caps)), float(np.ptp(caps))


def synthesize(dst, *, src: str = rv.LLAMA_PRO, facts, tp: int = 1, model_name: str, max_num_seqs: int,
               b_max: int = 2048, kv_blocks: int, rate_per_s: float, n: int = 400, seed: int = 1,
               link_gbps: float | None = None, link_latency_ns: float | None = None, rename_profiles: bool = False,
               arrival_s=None, **lengths) -> tuple:
    """Write the run folder (see the module docstring); returns it and the iteration model its engine ran (the one
    ``fluidq validate --run`` builds from the folder), so that a caller needs not build it again."""
    from fluidq.validate.replay import read_s

    dst = Path(dst)
    profile_folder(dst, src=src, tp=tp, model=model_name if rename_profiles else None, link_gbps=link_gbps,
                   link_latency_ns=link_latency_ns)
    model = iteration_model(dst, facts, tp)
    a, p, o = workload(n, rate_per_s, seed, **lengths)
    if arrival_s is not None:  # the benchmark's own schedule (e.g. a ramping rate) instead of Poisson at rate_per_s
        a = np.asarray(arrival_s, dtype=float)
    rr = engine_run(model, a, p, o, max_num_seqs=max_num_seqs, b_max=b_max, kv_blocks=kv_blocks)
    sim = rr.sim
    req = sim.requests
    queued = read_s(sim)
    rows = [{"request_id": f"bench-{i}", "input_toks": int(p[i]), "output_toks": int(o[i]),
             "arrival_time": T0_WALL + float(a[i]), "queued_ts": T0_MONO + float(queued[i]),
             "scheduled_ts": T0_MONO + float(req["first_scheduled_s"][i]),
             "first_token_ts": T0_MONO + float(req["prefill_done_s"][i]),
             "last_token_ts": T0_MONO + float(req["finish_s"][i])} for i in range(n)]
    rv.write_requests(dst, rows)
    it = sim.iterations
    end = np.asarray(it["t_s"], dtype=float) + np.asarray(it["batch_s"], dtype=float)
    ticks = np.arange(1.0, np.ceil(float(np.nanmax(req["finish_s"]))) + 2.0)
    k = np.searchsorted(ticks, end, side="left")  # the tick (t-1, t] each batch ends in
    first = np.searchsorted(ticks, np.asarray(req["prefill_done_s"], dtype=float), side="left")
    gen = np.bincount(k, weights=it["decode_tokens"], minlength=ticks.size)[: ticks.size] \
        + np.bincount(first, minlength=ticks.size)[: ticks.size]  # the prefill's batch emits the first token
    useful = np.bincount(k, weights=it["useful_tokens"], minlength=ticks.size)[: ticks.size]
    last = np.searchsorted(end, ticks, side="right") - 1  # the last batch ended by the tick
    cap_tokens = kv_blocks * BLOCK_SIZE
    ts_rows = []
    for j, t in enumerate(ticks):
        b = last[j]
        running = int(it["resident"][b]) if b >= 0 else 0
        waiting = int(it["waiting"][b]) if b >= 0 else 0
        kv = 100.0 * float(it["kv_used"][b]) / cap_tokens if b >= 0 else 0.0
        if b >= 0 and end[b] < t - 1 and np.all(np.asarray(req["finish_s"]) <= end[b]):
            running = waiting = 0  # idle: every request served
        ts_rows.append([f"{t:.1f}", f"{useful[j] - gen[j]:.1f}", f"{gen[j]:.1f}", running, waiting, f"{kv:.2f}"])
    rv.write_ts(dst, ["t", "prompt_throughput", "gen_throughput", "running", "waiting", "kv_cache_pct"], ts_rows)
    meta = {"schema_version": 1, "model": model_name, "vllm_version": "0.19.0", "tick_seconds": 1.0,
            "num_requests": n,
            "engine_kwargs": {"model": model_name, "tensor_parallel_size": tp, "data_parallel_size": 1,
                              "enable_expert_parallel": False, "max_num_seqs": max_num_seqs,
                              "max_num_batched_tokens": b_max, "dtype": "bfloat16", "kv_cache_dtype": "auto",
                              "enable_prefix_caching": False, "async_scheduling": False},
            "kv_cache": {"block_size": BLOCK_SIZE, "num_gpu_blocks": kv_blocks}}
    rv.set_meta(dst, meta)
    return dst, model
