"""The load basis through the switch from the KV cache to max_num_seqs (issue 16 / 20, h-basis).

fluidq.dtmc.load_basis.load_basis (the lambda* of every face's ``--load``) of roofline engines, at KV caches through
the switch where the KV rules stop binding (``k_max (p + o/2)`` times 0.9-2.0), against seeded ``fluidq.simulate`` runs
of the same engine (``vllm-chunked``, Poisson at 1.5 x the basis, the requests completing over 0.3-0.9 of the arrivals,
seeds 1-5).  The engines: the four of validation/RESULTS.md's "Not done (for the lead)" and seeded random ones
(:func:`random_engine`; none a shipped run's engine).

    PYTHONPATH=<tree> python validation/tools/load_basis_switch.py formula > before_or_after.jsonl
    PYTHONPATH=$PWD python validation/tools/load_basis_switch.py simulate > sim.jsonl   # (seconds once compiled)
    python validation/tools/load_basis_switch.py table before.jsonl after.jsonl sim.jsonl
"""
import json
import sys

import numpy as np

#: (label, model, gpu, tp, k_max, prompt, output): the engines of the finding
NAMED = [("l8b-h100-k64-1000+500", "Llama-3.1-8B", "H100-SXM5-80GB", 1, 64, 1000, 500),
         ("q14b-a100-k64-1200+400", "Qwen2.5-14B", "A100-SXM4-80GB", 1, 64, 1200, 400),
         ("l70b-h100tp2-k96-1500+400", "Llama-3.1-70B", "H100-SXM5-80GB", 2, 96, 1500, 400),
         ("l1b-l4-k24-300+150", "Llama-3.2-1B", "L4", 1, 24, 300, 150)]
#: held-out draws: models of several sizes, with the tensor parallelism that fits them
POOL = [("Llama-3.2-3B", 1), ("Qwen2.5-7B", 1), ("Mistral-Nemo-12B", 1), ("Qwen3-14B", 1), ("Qwen2.5-32B", 2),
        ("Llama-3.3-70B", 4), ("Qwen3-8B", 1), ("Yi-34B", 2)]
GPUS = ["H100-SXM5-80GB", "A100-SXM4-80GB", "L40S", "H200-SXM-141GB"]
FACTORS = (0.9, 1.1, 1.25, 1.5, 2.0)
SEEDS = (1, 2, 3, 4, 5)
N_REQ = 2000


def random_engine(seed):
    """A seeded random roofline engine: model, GPU, max_num_seqs, fixed prompt and output lengths (log-uniform
    prompts 200-4000, outputs 50-1000), max_num_seqs below what the token budget (2048) lets decode so that it binds
    once the KV cache does not."""
    rng = np.random.default_rng(1000 + seed)
    m, tp = POOL[rng.integers(len(POOL))]
    g = GPUS[rng.integers(len(GPUS))]
    p = int(np.exp(rng.uniform(np.log(200), np.log(4000))))
    o = int(np.exp(rng.uniform(np.log(50), np.log(1000))))
    k = int(rng.integers(16, 257))
    k = max(8, min(k, int(0.7 * 2048 * (o - 1) / (p + o - 1))))
    return (f"r{seed}-{m}-{g.split('-')[0]}-tp{tp}-k{k}-{p}+{o}", m, g, tp, k, p, o)


def engines(n_random=8):
    return NAMED + [random_engine(s) for s in range(n_random)]


def _engine(m, g, tp, k, kv):
    from fluidq.engine.roofline import roofline_engine

    return roofline_engine(m, g, tp, k_max=k, kv_capacity_tokens=int(kv))


def formula():
    from fluidq.dtmc.load_basis import load_basis
    from fluidq.workload import Poisson, Workload

    for label, m, g, tp, k, p, o in engines():
        wl = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
        for f in FACTORS:
            kv = int(f * k * (p + o / 2))
            lb = load_basis(_engine(m, g, tp, k, kv), wl)
            binding = getattr(lb.capacity, "binding", None)
            print(json.dumps({"label": label, "factor": f, "kv": kv, "basis": lb.basis, "binding": binding,
                              "rps": lb.requests_per_s}), flush=True)


def simulated(eng, p, o, rate, seed, n=N_REQ):
    """Requests per second completing over 0.3-0.9 of the arrivals of one seeded Poisson run at ``rate``."""
    import fluidq

    rng = np.random.default_rng(seed)
    a = np.concatenate([[0.0], np.cumsum(rng.exponential(1 / rate, n - 1))])
    r = fluidq.simulate(eng, {"arrival_s": a, "prompt_tokens": np.full(n, p), "output_tokens": np.full(n, o)},
                        "vllm-chunked", n_requests=n)
    fin = np.asarray(r.requests["finish_s"])
    t0, t1 = 0.3 * a[-1], 0.9 * a[-1]
    return float(np.sum((fin > t0) & (fin <= t1)) / (t1 - t0)), float(np.sum(r.requests["preemptions"])) / n


def simulate():
    from scipy import stats

    from fluidq.dtmc.load_basis import load_basis
    from fluidq.workload import Poisson, Workload

    for label, m, g, tp, k, p, o in engines():
        wl = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
        for f in FACTORS:
            kv = int(f * k * (p + o / 2))
            eng = _engine(m, g, tp, k, kv)
            rate = 1.5 * load_basis(eng, wl).requests_per_s
            runs = [simulated(eng, p, o, rate, s) for s in SEEDS]
            x = np.array([r[0] for r in runs])
            half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
            print(json.dumps({"label": label, "factor": f, "kv": kv, "sim": float(x.mean()), "half": half,
                              "preempt": float(np.mean([r[1] for r in runs]))}), flush=True)


def table(before, after, sim):
    rows = {}
    for name, path in (("b", before), ("a", after), ("s", sim)):
        for line in open(path):
            d = json.loads(line)
            rows.setdefault((d["label"], d["factor"]), {})[name] = d
    print("| engine | cache x k(p+o/2) | before: basis, req/s, / sim | after: basis, req/s, / sim | simulated req/s "
          "(95 % CI), preemptions/request |")
    print("|---|---|---|---|---|")
    for (label, f), r in rows.items():
        s = r["s"]
        cell = lambda d: f"{d['basis']} ({d['binding']}) {d['rps']:.4g}, {100 * (d['rps'] / s['sim'] - 1):+.1f} %"
        print(f"| {label} | {f:g} | {cell(r['b'])} | {cell(r['a'])} | {s['sim']:.4g} +- {s['half']:.2g}, "
              f"{s['preempt']:.3f} |")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "formula"
    if mode == "formula":
        formula()
    elif mode == "simulate":
        simulate()
    else:
        table(*sys.argv[2:5])
