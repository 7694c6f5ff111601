"""Check the measured side's mix-adjusted capacity (fluidq.validate.runs.mix_adjusted_capacity) where the truth
is known: on fluidq.simulate's own logs.  For each shared LLMServingSim run, the benchmark (its requests in order,
Poisson at its rate) and a stationary overload (1000 requests drawn from the lengths at 1.5 x the fluid capacity)
are simulated on the same engine (vLLM's rules, the run's profiles; DP MoE ranks in lockstep); the benchmark's
steady window gives its raw tokens/s and its mix-adjusted tokens/s, to be compared with the stationary one.
Nothing measured is read beyond the runs' configuration and request lengths.  Prints one line per run.

    PYTHONPATH=$PWD python validation/tools/mix_adjusted_check.py [replications]
"""
import sys
from pathlib import Path

import numpy as np

from fluidq.sim.core import simulate
from fluidq.validate.cases import _plain_path
from fluidq.validate.deployment import LockstepRanks, _deployment_parts
from fluidq.validate.predict import _ticks, predict_capacity
from fluidq.validate.replay import vllm_engine
from fluidq.validate.runs import capacity_regimes, mix_adjusted_capacity, read_run

DATA = Path(__file__).resolve().parents[1] / "data" / "llmservingsim"
RUNS = ["RTX4090_Llama-3.1-8B", "RTXPRO6000_Llama-3.1-8B", "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"]


def one(name, reps):
    run = read_run(DATA / name)
    dp = run.data_parallel_size
    parts = _deployment_parts(_plain_path(DATA / name), tp=1, pp=1, dp=dp, enable_expert_parallel=run.expert_parallel,
                              k_max=run.max_num_seqs, b_max=run.max_num_batched_tokens, block=run.block_size,
                              model=None, comm=None, link_bandwidth_gbps=None, link_latency_us=None,
                              all_reduce_csv=None, kv_capacity_tokens=run.kv_capacity_tokens, gpu_memory_gib=None,
                              gpu_memory_utilization=0.9)
    model, kv = parts["model"], parts["kv"]
    moe = parts["moe"] and dp > 1
    m = LockstepRanks(model, dp) if moe else model
    b_max, k_max, kvc = dp * run.max_num_batched_tokens, dp * run.max_num_seqs, dp * kv
    eng = vllm_engine(m, b_max=b_max, k_max=k_max, kv_capacity_tokens=kvc, block_size=run.block_size,
                      async_scheduling=run.async_scheduling)
    p, o = run.input_tokens.astype(np.int64), run.output_tokens.astype(np.int64)
    co = run.client_order
    span = float(run.arrival_s[-1] - run.arrival_s[0])
    rate = (len(run) - 1) / span
    fl = predict_capacity(model, p, o, b_max=run.max_num_batched_tokens, k_max=run.max_num_seqs,
                          kv_capacity_tokens=kv, block_size=run.block_size)
    out = {"raw": [], "adj": [], "stat": []}
    for g in np.random.SeedSequence(2024).spawn(reps):
        rng = np.random.default_rng(g)
        for kind in ("bench", "stat"):
            if kind == "bench":
                n, lam = len(run), rate
                idx = co
            else:
                n, lam = 1000, 1.5 * fl.requests_per_s * dp
                idx = rng.integers(0, p.size, n)
            arr = np.cumsum(rng.exponential(1.0 / lam, n))
            arr -= arr[0]
            sim = simulate(eng, {"arrival_s": arr, "prompt_tokens": p[idx], "output_tokens": o[idx]}, "vllm-chunked",
                           n_requests=n, record_iterations=True)
            ts = _ticks(sim, kvc)
            reg = capacity_regimes(ts, max_num_seqs=k_max, min_ticks=1)
            st = reg["steady"]
            if not np.isfinite(st["tokens_per_s"]):
                continue
            if kind == "bench":
                out["raw"].append(st["tokens_per_s"])
                out["adj"].append(mix_adjusted_capacity(ts, st["index"], mean_prompt_tokens=p.mean(),
                                                        mean_output_tokens=o.mean(), resamples=50)["tokens_per_s"])
            else:
                out["stat"].append(st["tokens_per_s"])
    f = {k: float(np.nanmean(v)) for k, v in out.items()}
    print(f"{name}: simulated benchmark window {f['raw']:.0f} tokens/s, mix-adjusted {f['adj']:.0f}, stationary "
          f"{f['stat']:.0f} (raw {100 * (f['raw'] / f['stat'] - 1):+.1f} %, adjusted {100 * (f['adj'] / f['stat'] - 1):+.1f} % "
          f"of the stationary; {reps} replications)")


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for r in RUNS:
        one(r, reps)
