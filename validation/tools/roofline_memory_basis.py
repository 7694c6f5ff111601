"""Which KV memory should the roofline engine (``fluidq.engine.roofline_engine``) simulate? (user6a, finding 3)

``capacity --gpu`` states vLLM's flow balance (``predict_roofline_deployment``: the full roofline, vLLM's 16-token
blocks); ``check``/``simulate --load`` simulate ``roofline_engine``, whose KV cache was token memory
(``Memory()``: blocks of 1, one token of headroom per resident, victim last in order).  The alternative is vLLM's
memory (``fluidq.engine.VLLM``: blocks of ``--block-size``, whole-prompt reservation, recompute, most recent victim).

For each KV-bound deployment (none of them a shipped case) and each memory: the capacity line (req/s), the
KV-rules basis ``fluidq.dtmc.kv_basis.kv_capacity`` on that engine, and the simulated saturation -- served
requests/s under overload at 1.3x the larger basis, the second half's arrivals minus the request backlog's slope,
N seeded runs (seeds 1000..), mean and 95 % t-interval (the same measurement as validation/tools/kv_load_basis.py).
Nothing here is fitted; the measured side reads the bases only to set the overload rate.

Usage: python validation/tools/roofline_memory_basis.py [--seeds N] [--iterations N] > out.jsonl
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import fluidq
from fluidq import Poisson, Workload
from fluidq.engine import VLLM

#: (model, gpu, tp, prompt, output): KV-bound on vLLM's defaults (2048 batched tokens, 256 sequences, 0.9)
DEPLOYMENTS = [
    ("Llama-3.1-8B", "A10G", 1, 1000, 300),
    ("Qwen2.5-14B", "L40S", 1, 2000, 500),
    ("Gemma-2-9B", "A10G", 1, 1000, 200),
    ("Mistral-7B-v0.3", "L4", 1, 1500, 400),
]


# served requests/s under overload, mean and 95 % t-interval over seeded runs: kv_load_basis.py's, the one copy
# (this script runs from validation/tools/, which python puts on sys.path)
from kv_load_basis import saturated  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=8_000)
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    from fluidq.dtmc.kv_basis import kv_capacity
    from fluidq.engine.roofline import roofline_engine
    from fluidq.validate.roofline import predict_roofline_deployment

    for model, gpu, tp, p, o in DEPLOYMENTS:
        name = f"{model} {gpu} TP{tp} {p}/{o}"
        if a.only and not any(s in name for s in a.only):
            continue
        t0 = time.time()
        line = predict_roofline_deployment(model, gpu, input_tokens=p, output_tokens=o, tensor_parallel_size=tp)
        w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
        tokens = roofline_engine(model, gpu, tp, context_tokens=p + o / 2)
        row = {"case": name, "capacity_line": line.requests_per_s, "kv_tokens": tokens.kv_capacity_tokens}
        for label, e in (("tokens", tokens), ("vllm", dataclasses.replace(tokens, memory=VLLM))):
            kvp = kv_capacity(e, w)
            reg = fluidq.max_throughput(e, w).requests_per_s
            basis = kvp.requests_per_s if kvp is not None else reg
            m, ci, hor = saturated(e, w, 1.3 * max(basis, line.requests_per_s), a.seeds, a.iterations)
            row[label] = {"kv_rules": basis, "kv_binds": kvp is not None, "sat": m, "sat_ci": ci,
                          "line/sat": line.requests_per_s / m, "kv_rules/sat": basis / m, "horizon_s": hor}
        row["wall_s"] = time.time() - t0
        print(json.dumps(row), flush=True)
        print(f"{name}: line {line.requests_per_s:.4g}; tokens: kv {row['tokens']['kv_rules']:.4g} sat "
              f"{row['tokens']['sat']:.4g} [{row['tokens']['sat_ci'][0]:.4g}, {row['tokens']['sat_ci'][1]:.4g}]; "
              f"vllm: kv {row['vllm']['kv_rules']:.4g} sat {row['vllm']['sat']:.4g} "
              f"[{row['vllm']['sat_ci'][0]:.4g}, {row['vllm']['sat_ci'][1]:.4g}] ({row['wall_s']:.0f} s)",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
