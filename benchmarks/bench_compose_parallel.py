"""``fluidq.simulate`` on vLLM engines whose operator-profile batch time has parallel terms: the compiled KV kernel
(``method="auto"``: ``IterationModel.kernel_table(max_batch_tokens=b_max)`` with the per-batch-size terms,
:func:`fluidq.kernel.compose.chunks_s`) against the generic ``select()`` loop (``method="generic"``, what ran these
engines before issue 15's parallel step), CPU seconds per request, alternating, best of ``--reps``.

Engines (``fluidq.validate.replay.vllm_engine``: vLLM blocks with prefix caching, the first token with the prefill,
async scheduling, a cache that binds), each on the same Poisson arrivals (prompts 100-1499, outputs 20-399):

* Qwen3-30B-A3B, DP2 + EP2 ranks in lockstep (``LockstepRanks``: the shipped RTX PRO 6000 profile, its MoE experts,
  the all-to-alls over the run's link), ``b_max`` 2 x 2048, ``k_max`` 2 x 128 -- the validation case's engine;
* Llama-2-70B TP2 (Vidur's A100 profiles, the measured NVLink all-reduce), ``b_max`` 512, ``k_max`` 128;
* Llama-3.1-8B in 2 pipeline stages (the RTX 4090 profile, sends over a 50 GB/s link), ``b_max`` 2048, ``k_max`` 64.

"same": equal finish times of the kernel and the generic loop on the generic run's requests.  Nothing is asserted.

Run:  /work/venv/bin/python benchmarks/bench_compose_parallel.py [--n 5000] [--n-generic 300] [--reps 2]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "validation" / "data"


def _rows(n: int, rate: float):
    rng = np.random.default_rng(1)
    return {"arrival_s": np.cumsum(rng.exponential(1 / rate, n)), "prompt_tokens": rng.integers(100, 1500, n),
            "output_tokens": rng.integers(20, 400, n)}


def _engines():
    from fluidq.batchtime.comm import Link
    from fluidq.batchtime.operators import lss_iteration_model, vidur_iteration_model
    from fluidq.models import load_model
    from fluidq.validate.deployment import LockstepRanks
    from fluidq.validate.replay import vllm_engine

    qwen = DATA / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"
    link = Link.from_peer_sim_config(qwen / "peer_sim_config.json")
    moe = lss_iteration_model(qwen, n_layers=48, facts=load_model("Qwen/Qwen3-30B-A3B-Instruct-2507"), comm=link,
                              data_parallel_size=2, expert_parallel_size=2)
    v70 = DATA / "vidur" / "a100" / "meta-llama" / "Llama-2-70b-hf"
    tp2 = vidur_iteration_model(v70 / "mlp.csv.gz", DATA / "vidur" / "legacy_e2d00e9_a100" / "attention.csv.gz",
                                n_layers=80, tp=2,
                                all_reduce_csv=DATA / "vidur" / "a100" / "network" / "all_reduce_pairwise_nvlink.csv.gz",
                                collective_launch_us=20.0, decode_batching_overhead=0.1)
    pp2 = lss_iteration_model(DATA / "llmservingsim" / "RTX4090_Llama-3.1-8B", n_layers=32, hidden_size=4096,
                              comm=Link(bandwidth_gbps=50.0, latency_us=3.0), pipeline_parallel_size=2)
    kw = dict(prefix_caching=True, async_scheduling=True)
    return {"qwen3-moe-dp2-ep2": (vllm_engine(LockstepRanks(moe, 2), b_max=4096, k_max=256,
                                              kv_capacity_tokens=50_000, **kw), 8.0),
            "llama2-70b-tp2": (vllm_engine(tp2, b_max=512, k_max=128, kv_capacity_tokens=40_000, **kw), 1.0),
            "llama3.1-8b-pp2": (vllm_engine(pp2, b_max=2048, k_max=64, kv_capacity_tokens=40_000, **kw), 4.0)}


def _time(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="requests of a kernel run")
    ap.add_argument("--n-generic", type=int, default=300, help="requests of a generic run")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    import fluidq

    print(f"# fluidq.simulate end to end, kernel n={a.n:,}, generic n={a.n_generic:,}, best of {a.reps}")
    print(f"{'engine':<20}{'method':>8}{'kernel us/req':>15}{'generic us/req':>16}{'generic/kernel':>16}"
          f"{'table s':>9}{'preempt':>9}{'same':>6}")
    for name, (eng, rate) in _engines().items():
        big, small = _rows(a.n, rate), _rows(a.n_generic, rate)
        tab, _ = _time(lambda: eng.batch_time.kernel_table(max_batch_tokens=eng.b_max))  # (first: built, cached)
        fluidq.simulate(eng, small, "vllm-chunked", n_requests=a.n_generic)  # compiled (or loaded) before timing
        k_s = g_s = float("inf")
        for _ in range(a.reps):  # alternating, so that both see the same load of the (shared) machine
            t, rk = _time(lambda: fluidq.simulate(eng, big, "vllm-chunked", n_requests=a.n))
            u, rg = _time(lambda: fluidq.simulate(eng, small, "vllm-chunked", n_requests=a.n_generic,
                                                  method="generic"))
            k_s, g_s = min(k_s, t), min(g_s, u)
        same = fluidq.simulate(eng, small, "vllm-chunked", n_requests=a.n_generic)
        ok = bool(np.array_equal(same.requests["finish_s"], rg.requests["finish_s"], equal_nan=True))
        kr, gr = k_s / a.n, g_s / a.n_generic
        print(f"{name:<20}{rk.method:>8}{kr * 1e6:>15.1f}{gr * 1e6:>16.1f}{gr / kr:>15.0f}x{tab:>9.3f}"
              f"{rk.preemptions:>9}{str(ok):>6}")


if __name__ == "__main__":
    main()
