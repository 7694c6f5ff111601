"""The capacity through the switch from the KV cache to max_num_seqs (issue 16 / 20, h-kvjump): the flow balance of
held-out roofline engines (fluidq.dtmc.kv_basis.kv_capacity, or the k_max flow balance where the cache never binds)
against seeded ``fluidq.simulate`` runs of the same engine at 1.5 x overload, at KV caches through the transition.

    PYTHONPATH=$PWD python validation/tools/kv_transition.py formula   # the formula of the tree on PYTHONPATH
    PYTHONPATH=$PWD python validation/tools/kv_transition.py simulate  # truth (slow: minutes)

Prints one row per engine and cache: the formula's tokens/s (or the simulated tokens/s of the requests completing over
the middle of the arrivals, 0.3-0.9 of the window, and the preemptions per request)."""
import sys

import numpy as np

import fluidq
from fluidq.engine.roofline import roofline_engine
from fluidq.validate.predict import predict_capacity
from fluidq.dtmc.kv_basis import _BatchTimeIterations

#: (label, model, gpu, tp, k_max, prompt, output, lognormal sigma); none of them a shipped run's engine
ENGINES = [("l8b-h100-k64-1000+500", "Llama-3.1-8B", "H100-SXM5-80GB", 1, 64, 1000, 500, 0.0),
           ("q7b-l4-k32-600+300-ln", "Qwen2.5-7B", "L4", 1, 32, 600, 300, 0.5),
           ("l70b-tp2-k96-1500+400", "Llama-3.1-70B", "H100-SXM5-80GB", 2, 96, 1500, 400, 0.0),
           ("m7b-a100-k48-300+600-ln", "Mistral-7B-v0.3", "A100-SXM4-80GB", 1, 48, 300, 600, 0.8)]
#: caches as multiples of k_max (p + o/2): below, at and above the mean switch
FACTORS = (0.85, 0.95, 1.0, 1.05, 1.12, 1.2, 1.3)
N_REQ = 3000


def lengths(p, o, sig, n, seed):
    rng = np.random.default_rng(seed)
    if not sig:
        return np.full(n, p, dtype=np.int64), np.full(n, o, dtype=np.int64), rng
    pp = np.maximum(1, np.round(rng.lognormal(np.log(p) - sig * sig / 2, sig, n))).astype(np.int64)
    oo = np.maximum(2, np.round(rng.lognormal(np.log(o) - sig * sig / 2, sig, n))).astype(np.int64)
    return pp, oo, rng


def formula(eng, p, o):
    pr = predict_capacity(_BatchTimeIterations(eng.batch_time), p.astype(float), o.astype(float), b_max=eng.b_max,
                          k_max=eng.k_max, kv_capacity_tokens=eng.kv_capacity_tokens, block_size=1)
    return pr


def main(mode):
    for label, model, gpu, tp, k, p0, o0, sig in ENGINES:
        for f in FACTORS:
            kv = int(f * k * (p0 + o0 / 2))
            eng = roofline_engine(model, gpu, tp, k_max=k, kv_capacity_tokens=kv)
            p, o, _ = lengths(p0, o0, sig, 4096, 0)
            pr = formula(eng, p, o)
            if mode == "formula":
                print(f"{label} {f:.2f} {kv} formula {pr.tokens_per_s:.1f} {pr.binding}", flush=True)
                continue
            pp, oo, rng = lengths(p0, o0, sig, N_REQ, 11)
            rate = 1.5 * pr.requests_per_s
            a = np.concatenate([[0.0], np.cumsum(rng.exponential(1 / rate, N_REQ - 1))])
            r = fluidq.simulate(eng, {"arrival_s": a, "prompt_tokens": pp, "output_tokens": oo}, "vllm-chunked",
                                n_requests=N_REQ)
            fin = np.asarray(r.requests["finish_s"])
            t0, t1 = 0.3 * a[-1], 0.9 * a[-1]
            done = (fin > t0) & (fin <= t1)  # the tokens of the requests completing over the middle of the arrivals
            served = float(np.sum((pp + oo)[done]) / (t1 - t0))
            pre = float(np.sum(r.requests["preemptions"])) / N_REQ
            print(f"{label} {f:.2f} {kv} simulate {served:.1f} {pre:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "formula")
