"""Benchmark (issue 15): engine options that used to fall to the Python path, now compiled, side by side.

Each case runs the same requests with ``method="auto"`` (now the compiled kernel) and ``method="generic"`` (the
``select()`` loop they ran on before) in this process, alternating, best of ``--repeats`` CPU times, and prints
requests per CPU-second of each and their ratio; the two runs' finish times are checked identical first.

* without a KV cache (the kernel with memory, a cache that never binds): a first token emitted with the prefill,
  vLLM's async scheduling, both, and a composition batch time (LLMServingSim's RTX 4090 operator profile);
* a KV cache with a budget above ``EAGER_TAU_TOKENS`` (2**18 + 1 tokens: before, the generic path);
* a one-station network whose budget is above the Python clock's table (2**16: before, the whole network ran in
  Python) -- the network's two paths timed on one horizon.

Run: ``python benchmarks/bench_nokv_kernel.py [--n 40000] [--repeats 3]`` (numba's compile, minutes on a first
run, happens before the timing).  Recorded figures: ``benchmarks/README.md`` (issue 15: the options that fell to
the Python path).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import fluidq
from fluidq import Engine, Geometric, Poisson, Staircase, Workload, simulate
from fluidq.engine import VLLM

ROOT = Path(__file__).resolve().parents[1]
PAPER = Staircase(c=0.01128, a=0.03547, b0=128)


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def rows(n, rate, seed=1, mp=120, md=100):
    w = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=mp),
                 output_tokens=Geometric(mean_tokens=md))
    a, p, d = w.sample(np.random.default_rng(seed), n=n)
    return {"arrival_s": a, "prompt_tokens": p, "output_tokens": d}


def single(name, eng, w, pol, n, repeats):
    fast = simulate(eng, w, pol, n_requests=n)
    ref = simulate(eng, w, pol, n_requests=n, method="generic")
    assert fast.method == "fast" and ref.method == "generic", name
    np.testing.assert_array_equal(fast.requests["finish_s"], ref.requests["finish_s"])
    tf, tg = [], []
    for _ in range(repeats):
        tf.append(cpu(lambda: simulate(eng, w, pol, n_requests=n))[0])
        tg.append(cpu(lambda: simulate(eng, w, pol, n_requests=n, method="generic"))[0])
    f, g = min(tf), min(tg)
    print(f"{name:44s} n={n:>7,}  compiled {n / f:12,.0f} req/CPU-s ({f:7.3f} s)  generic {n / g:10,.0f} "
          f"req/CPU-s ({g:7.3f} s)  x{g / f:7.1f}", flush=True)


def network(repeats, horizon):
    from fluidq.network import Hop, Network, RequestClass, Station
    from fluidq.sim.network import _kernel_unsupported, simulate_network

    e = Engine(batch_time=PAPER, b_max=1 << 16)
    net = Network(stations=[Station(name="s", engine=e, policy="sarathi")],
                  classes=[RequestClass(name="c", rate_per_s=12.0,
                                        route=[Hop(engine="s", prompt_tokens=Geometric(mean_tokens=120),
                                                   output_tokens=Geometric(mean_tokens=100))])])
    assert _kernel_unsupported(net, False) is None
    k = simulate_network(net, horizon_s=horizon, rng=3)
    p = simulate_network(net, horizon_s=horizon, rng=3, method="python")
    assert k.completed == p.completed and k.mean_sojourn_s == p.mean_sojourn_s
    tk, tp = [], []
    for _ in range(repeats):
        tk.append(cpu(lambda: simulate_network(net, horizon_s=horizon, rng=3))[0])
        tp.append(cpu(lambda: simulate_network(net, horizon_s=horizon, rng=3, method="python"))[0])
    f, g = min(tk), min(tp)
    n = k.completed["c"]
    print(f"{'network, one station, b_max 2**16':44s} n={n:>7,}  compiled {n / f:12,.0f} req/CPU-s ({f:7.3f} s)  "
          f"python  {n / g:10,.0f} req/CPU-s ({g:7.3f} s)  x{g / f:7.1f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="emit,async,both,composition,kv,network",
                    help="comma-separated cases (default all); composition's generic runs cost ~1.4 ms per request")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import lss_iteration_model
    from fluidq.kernel.run import ensure_compiled_kv

    ensure_compiled_kv(False, False)
    ensure_compiled_kv(True, False)
    ensure_compiled_kv(False, True)
    print(f"fluidq {fluidq.__file__}; n = {args.n:,}, best of {args.repeats} CPU times, alternating", flush=True)
    w = rows(args.n, 14.0)  # the paper's engine at 14 req/s (about 0.75 of its capacity)
    base = Engine(batch_time=PAPER, b_max=512)
    if "emit" in only:
        single("no cache, first token with the prefill", base.with_(prefill_emits_token=True), w, "sarathi", args.n,
               args.repeats)
    if "async" in only:
        single("no cache, async scheduling", base.with_(async_scheduling=True), w, "sarathi", args.n, args.repeats)
    if "both" in only:
        single("no cache, both (vllm-chunked)", base.with_(prefill_emits_token=True, async_scheduling=True), w,
               "vllm-chunked", args.n, args.repeats)
    if "composition" in only:
        lss = lss_iteration_model(ROOT / "validation" / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B",
                                  n_layers=32)
        comp = Engine(batch_time=Composition(model=lss), b_max=512, prefill_emits_token=True)
        nc = max(1, args.n // 4)  # (a quarter of the requests: the generic path's composition is slow)
        single("no cache, composition (LSS RTX4090 8B)", comp, rows(nc, 6.0, mp=300, md=60), "vllm-chunked", nc,
               args.repeats)
    if "kv" in only:
        big = Engine(batch_time=PAPER, b_max=(1 << 18) + 1, kv_capacity_tokens=60_000, memory=VLLM)
        single("KV cache 60k tokens, b_max 2**18 + 1", big, w, "vllm-chunked", args.n, args.repeats)
    if "network" in only:
        network(args.repeats, horizon=args.n / 12.0)


if __name__ == "__main__":
    main()
