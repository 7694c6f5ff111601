"""The select() loop on the kernel's arrays (fluidq.kernel.select) against EngineRun, side by side in one run.

Run:  /work/venv/bin/python benchmarks/bench_select.py [--n N] [--reps R] [--load L] [--only sync|async]

On the Theorem-2 workload (deterministic 100-token prompts and outputs, Poisson arrivals, b_max = 512, the paper's
batch time t_b = 11.28 + 35.47 ceil(b/128) ms; bench_kernel.py's) at ``--load`` lambda* (default 0.9), CPU seconds
per request of ``policy.select`` every iteration, through ``fluidq.simulate`` end to end:

* ``EngineRun``  ``method="generic"`` (fluidq.kernel.step.run_generic, the Python reference);
* ``select``     ``method="auto"`` (fluidq.kernel.select.run_select, the arrays advanced by compiled code);

for a user policy written in this file (decoders first, then prompts in arrival order, chunked: Sarathi's rule as a
user would write it, reading every request in view) and for the built-in SJF ordering (``Sarathi(order=SJF())``),
without a KV cache, with the default token rules binding (``Memory()``, 16,384 tokens: preemptions by recomputation)
and with vLLM's binding cache (``fluidq.engine.VLLM``, 16-token blocks, 32,768 tokens, as ``bench_kernel.py --kv``:
the paged rules), and vLLM's cache with prefix caching; then (``async`` rows, branch ``h-sel2``) the user policy with
async scheduling (``Engine(async_scheduling=True)``, vLLM's default: a batch formed while the previous one runs, a
finished request holding its slot and KV one batch longer), without a cache, with ``Memory()`` and with vLLM's blocks,
and with ``k_max = 64`` (the slots of finished requests held).  A run the select kernel does not cover would run
EngineRun on both sides (the row says so).  The two paths alternate
``--reps`` times (best of each, the kernel compiled before timing) and must give the same finish times; the ratio
EngineRun / select is printed.  Nothing is asserted but the equality.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

C, A, B0 = 0.01128, 0.03547, 128
LAM_STAR = (512 / (C + A * 4)) / 200.0  # requests/s for (100, 100), b_max = 512


class UserSarathi:
    """Decoders first in arrival order, then prompts in arrival order, chunked to the budget (a user policy)."""

    name = "user-sarathi"

    def select(self, view):
        from fluidq.policies import Batch

        b = view.b_max
        k = view.k_max if view.k_max is not None else 1 << 30
        dec, pre = [], []
        for r in view.requests:
            if not r.in_prefill and r.decode_left > 0 and b > 0 and k > 0:
                dec.append(r.rid)
                b -= 1
                k -= 1
        for r in view.requests:
            if b <= 0 or k <= 0:
                break
            if r.in_prefill:
                m = min(r.prefill_left, b)
                pre.append((r.rid, m))
                b -= m
                k -= 1
        return Batch(prefill=tuple(pre), decode=tuple(dec))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--only", choices=("sync", "async"), default=None, help="only the synchronous or the async rows")
    args = ap.parse_args(argv)

    import fluidq
    from fluidq import Engine, Poisson, Staircase, Workload
    from fluidq.engine import VLLM, Memory
    from fluidq.kernel import compiled
    from fluidq.kernel.select import covers
    from fluidq.policies import Sarathi
    from fluidq.policies.latency import SJF

    eng = Engine(batch_time=Staircase(c=C, a=A, b0=B0), b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=args.load * LAM_STAR), prompt_tokens=100, output_tokens=100)
    arr, P, D = w.sample(np.random.default_rng(1), n=args.n)
    rows = {"arrival_s": arr, "prompt_tokens": P, "output_tokens": D}
    print(f"fluidq {fluidq.__file__}; numba compiled: {compiled()}; Python {platform.python_version()}; "
          f"{platform.machine()}; n = {args.n}, {args.load} lambda*, best of {args.reps}")
    failed = False
    print(f"{'policy':<14}{'memory':<30}{'EngineRun us/req':>18}{'select us/req':>16}{'ratio':>8}  note")
    mems = (("none", eng), ("Memory() 16384 (binds)", eng.with_(kv_capacity_tokens=16_384, memory=Memory())),
            ("vLLM 32768 (binds)", eng.with_(kv_capacity_tokens=32_768, memory=VLLM)),
            ("vLLM+prefix 32768", eng.with_(kv_capacity_tokens=32_768, memory=VLLM.with_(prefix_caching=True))))
    cases = []
    if args.only != "async":
        cases += [(pname, make, mname, e) for pname, make in (("user-sarathi", UserSarathi),
                                                               ("sarathi-sjf", lambda: Sarathi(order=SJF())))
                  for mname, e in mems]
    if args.only != "sync":  # async scheduling (vLLM's default), the user policy
        cases += [("user-sarathi", UserSarathi, "async " + mname, e.with_(async_scheduling=True))
                  for mname, e in mems[:3]]
        cases.append(("user-sarathi", UserSarathi, "async vLLM, k_max 64", mems[2][1].with_(async_scheduling=True,
                                                                                           k_max=64)))
    for pname, make, mname, e in cases:
        simulate = fluidq.simulate
        simulate(e, {k: v[:200] for k, v in rows.items()}, make(), n_requests=200)  # compile / warm
        best = {"generic": np.inf, "auto": np.inf}
        out = {}
        for _ in range(args.reps):
            for m in ("generic", "auto"):
                t0 = time.process_time()
                out[m] = simulate(e, rows, make(), n_requests=args.n, method=m)
                best[m] = min(best[m], time.process_time() - t0)
        same = np.array_equal(out["auto"].requests["finish_s"], out["generic"].requests["finish_s"],
                              equal_nan=True) and out["auto"].n_iterations == out["generic"].n_iterations
        failed |= not same
        cov = covers(kv_cap=e.kv_capacity_tokens, memory=e.memory, async_scheduling=e.async_scheduling)
        cov = cov and out["auto"].method == "fast"  # (the select loop ran)
        note = ("" if cov else "not covered: EngineRun on both sides") + ("" if same else " FAIL: results differ")
        g, s = best["generic"] / args.n * 1e6, best["auto"] / args.n * 1e6
        print(f"{pname:<14}{mname:<30}{g:>18.1f}{s:>16.1f}{g / s:>7.2f}x  {note}"
              f"  ({out['auto'].n_iterations} iterations, {out['auto'].preemptions} preemptions)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
