"""One deployment, every face, the same answer: a random-deployment consistency audit (h-consist, 2026-12-07).

Draws ``--n`` files-free deployments (``--gpu``/``--model``: the roofline batch time) from the shipped tables --
models of ``fluidq/models/facts.json`` (dense, MoE and sliding-window), GPUs of ``fluidq/models/gpus.json``, a
tensor-parallel size that fits, ``max_num_seqs`` 16-512, ``max_num_batched_tokens`` 512-16384 (log-uniform),
``gpu_memory_utilization`` 0.7-0.95, prompts 50-8000 and outputs 20-2000 tokens (log-uniform; fixed, or geometric
with those means), cycling the binding limit of the capacity line (KV cache, ``max_num_seqs``, token budget) so
that each is drawn about as often -- and, for each, the maximum throughput (req/s) every face answers:

``H``   ``fluidq capacity --json``'s headline (vLLM's flow balance, ``predict_roofline_deployment``)
``R``   its ``region`` line (``fluidq.max_throughput`` of ``fluidq.engine.roofline_engine``)
``B``   its load basis (``fluidq.dtmc.load_basis.load_basis``), what ``check``/``simulate --load`` read
``C``   ``fluidq check --load 1 --method analytic --json``'s arrival rate (the basis ``check`` used)
``G``   ``fluidq region --json``'s ``max_request_rate_per_s`` (the region face's lambda*)
``A``   the API: ``predict_roofline_deployment`` (= H?), ``max_throughput``/``load_basis`` of
        ``roofline_engine(model, gpu, tp, ..., context_tokens=p + o/2)`` (= R, B?)

against a seeded overloaded simulation of the same engine (``fluidq.simulate``, vLLM's ``vllm-chunked`` scheduler,
the engine the CLI simulates: its cache, budgets and batch time; Poisson arrivals at 2 x the largest face, the
requests completing over 0.3-0.9 of the arrival span per second, ``--reps`` seeded replications, mean and 95 %
t-interval over them).  One row per deployment, then a summary: mean / worst |error| per face, by binding limit.

    PYTHONPATH=$PWD python validation/tools/face_consistency.py --n 40 --seed 20261207 [--reps 5] [--jsonl out]

Run time: about 25 seconds for the default 40 deployments and 5 replications on one core of the shared 2-vCPU VM
(2026-12-07, measured 22.6 s; the numba kernel compiled beforehand -- its first compile adds 1-3 minutes).
Results: validation/RESULTS.md, "2026-12-07 night: one deployment, every face, the same answer (h-consist)".
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import time

import numpy as np

GPUS_SKIP = ()  # every GPU of the table is drawn
TPS = (1, 2, 4, 8)


def _cli_json(argv):
    """``fluidq ARGV --json`` in this process: (exit status, parsed JSON or the error text)."""
    from fluidq.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv) + ["--json"])
    if rc != 0:
        return rc, (err.getvalue() + out.getvalue()).strip()
    return rc, json.loads(out.getvalue())


def _flags(d):
    f = ["--model", d["model"], "--gpu", d["gpu"], "--tensor-parallel-size", str(d["tp"]),
         "--max-num-seqs", str(d["k"]), "--max-num-batched-tokens", str(d["b"]),
         "--gpu-memory-utilization", str(d["util"]), "--input-len", str(d["p"]), "--output-len", str(d["o"])]
    return f + (["--geometric"] if d["lengths"] == "geometric" else [])


def _workload(d, rate=1.0):
    from fluidq.workload import Geometric, Poisson, Workload

    if d["lengths"] == "geometric":
        return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=d["p"]),
                        output_tokens=Geometric(mean_tokens=d["o"]))
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=d["p"], output_tokens=d["o"])


def draw(rng, models, gpus, want=None, tries=400):
    """One deployment: a dict, or ``None`` where ``tries`` draws found none with the binding limit ``want``."""
    from fluidq.models import load_model
    from fluidq.validate.roofline import predict_roofline_deployment

    for _ in range(tries):
        m = models[rng.integers(len(models))]
        g = gpus[rng.integers(len(gpus))]
        tp = int(TPS[rng.integers(len(TPS))])
        d = {"model": m, "gpu": g, "tp": tp, "k": int(np.exp(rng.uniform(np.log(16), np.log(512)))),
             "b": int(np.exp(rng.uniform(np.log(512), np.log(16384)))), "util": round(float(rng.uniform(0.7, 0.95)), 2),
             "p": int(np.exp(rng.uniform(np.log(50), np.log(8000)))),
             "o": int(np.exp(rng.uniform(np.log(20), np.log(2000)))),
             "lengths": "geometric" if rng.uniform() < 0.35 else "fixed"}
        if d["p"] + d["o"] > (load_model(m).max_position_embeddings or 10 ** 9):
            continue  # past the model's context vLLM refuses the requests (and so does fluidq: not a finding)
        try:
            res = predict_roofline_deployment(m, g, input_tokens=d["p"], output_tokens=d["o"], tensor_parallel_size=tp,
                                              max_num_seqs=d["k"], max_num_batched_tokens=d["b"],
                                              gpu_memory_utilization=d["util"])
        except Exception:  # the weights do not fit, or the TP does not split the heads: draw again
            continue
        if want is not None and res.binding != want:
            continue
        return d
    return None


def faces(d):
    """Every face's req/s for deployment ``d`` (a dict of floats and notes)."""
    from fluidq import max_throughput
    from fluidq.dtmc.load_basis import load_basis
    from fluidq.engine import roofline_engine
    from fluidq.validate.roofline import predict_roofline_deployment

    r = {}
    rc, cap = _cli_json(["capacity"] + _flags(d))
    if rc != 0:
        r["error"] = f"capacity exit {rc}: {cap}"
        return r
    r["H"] = cap["requests_per_s"]
    r["binding"] = cap["binding"]
    r["R"] = cap["stability_region"]["requests_per_s"]
    r["B"] = cap["load_basis_requests_per_s"]
    r["basis"] = cap["load_basis"]
    r["basis_binding"] = cap.get("load_basis_binding")
    r["kv"] = cap["inputs"]["kv_capacity_tokens"]
    rc, chk = _cli_json(["check", "--load", "1", "--method", "analytic", "--policy", "vllm-chunked"] + _flags(d))
    if rc == 0 and isinstance(chk, list):
        chk = chk[0]
    r["C"] = chk["inputs"]["arrival_rate_per_s"] if rc == 0 else float("nan")
    if rc != 0:
        r["check_error"] = f"exit {rc}: {chk}"
    rc, reg = _cli_json(["region"] + _flags(d))
    r["G"] = reg["workload"]["max_request_rate_per_s"] if rc == 0 else float("nan")
    if rc != 0:
        r["region_error"] = f"exit {rc}: {reg}"
    if d["lengths"] == "fixed":  # the API on the same lengths (a geometric law: the CLI draws 4,096 rows)
        api = predict_roofline_deployment(d["model"], d["gpu"], input_tokens=d["p"], output_tokens=d["o"],
                                          tensor_parallel_size=d["tp"], max_num_seqs=d["k"],
                                          max_num_batched_tokens=d["b"], gpu_memory_utilization=d["util"])
        r["A_H"] = api.requests_per_s
    eng = roofline_engine(d["model"], d["gpu"], d["tp"], b_max=d["b"], k_max=d["k"],
                          gpu_memory_utilization=d["util"], context_tokens=d["p"] + d["o"] / 2)
    w = _workload(d)
    r["A_kv"] = eng.kv_capacity_tokens
    r["A_R"] = max_throughput(eng, w).requests_per_s
    r["A_B"] = load_basis(eng, w).requests_per_s
    return r


def simulate(d, kv, rate, reps, seed0):
    """Served req/s of ``reps`` seeded overloaded runs of the CLI's engine (its cache ``kv``) at ``rate``."""
    import fluidq
    from fluidq.engine import roofline_engine

    eng = roofline_engine(d["model"], d["gpu"], d["tp"], b_max=d["b"], k_max=d["k"], kv_capacity_tokens=int(kv))
    n = int(min(20000, max(3000, 40 * d["k"])))
    out = []
    for s in range(reps):
        r = fluidq.simulate(eng, _workload(d, rate), "vllm-chunked", n_requests=n, rng=seed0 + s, record="full")
        a = np.asarray(r.requests["arrival_s"])
        fin = np.asarray(r.requests["finish_s"])
        t0, t1 = 0.3 * a[-1], 0.9 * a[-1]
        out.append(float(np.sum((fin > t0) & (fin <= t1)) / (t1 - t0)))
    x = np.array(out)
    from scipy import stats

    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")
    return float(x.mean()), half, n


FACES = ("H", "R", "B", "C", "G", "A_H", "A_R", "A_B")
#: faces that answer the same question and should give one number: check's basis is capacity's load basis line,
#: the API's answers are the command line's (the region face's G is R where the KV cache does not bind)
PAIRS = (("C", "B"), ("A_H", "H"), ("A_R", "R"), ("A_B", "B"))


def run(n, seed, reps, jsonl=None, only=None):
    from fluidq.models import list_gpus, list_models

    rng = np.random.default_rng(seed)
    models = sorted(m.name for m in list_models())
    gpus = sorted(g.name for g in list_gpus())
    targets = ("kv_cache", "k_max", "token_budget")
    rows = []
    for i in range(n):
        d = draw(rng, models, gpus, want=targets[i % 3]) or draw(rng, models, gpus)
        d["i"] = i
        if only is not None and i not in only:
            continue
        t = time.time()
        try:
            r = faces(d)
        except Exception as exc:  # a crash of a face is a finding
            r = {"error": f"{type(exc).__name__}: {exc}"}
        if "error" not in r:
            top = max(v for k, v in r.items() if k in FACES and isinstance(v, float) and v == v)
            try:
                r["sim"], r["half"], r["n_req"] = simulate(d, r["kv"], 2.0 * top, reps, 1000 * seed % 100000 + 10 * i)
            except Exception as exc:
                r["error"] = f"simulate {type(exc).__name__}: {exc}"
        r["secs"] = round(time.time() - t, 1)
        row = {**d, **r}
        rows.append(row)
        if jsonl:
            with open(jsonl, "a") as f:
                f.write(json.dumps(row) + "\n")
        print(_row_line(row), flush=True)
    print()
    print(summary(rows))
    return rows


def _err(row, face):
    v = row.get(face)
    if v is None or not (isinstance(v, float) and v == v) or not row.get("sim"):
        return None
    return v / row["sim"] - 1


def _row_line(r):
    head = (f"{r['i']:>2} {r['model']} {r['gpu']} tp{r['tp']} k{r['k']} b{r['b']} u{r['util']} "
            f"{r['p']}+{r['o']} {r['lengths'][:3]}")
    if "error" in r:
        return f"{head} | ERROR {r['error'][:300]}"
    fs = " ".join(f"{f}={r[f]:.4g}({100 * _err(r, f):+.1f}%)" for f in FACES if _err(r, f) is not None)
    return (f"{head} | kv {r['kv']:,} ({r['A_kv']:,} api) bind {r['binding']} basis {r['basis']}/{r['basis_binding']}"
            f" | sim {r['sim']:.4g} [+-{r['half']:.2g}] | {fs} | {r['secs']}s")


def summary(rows):
    lines = ["| binding | face | n | mean abs err | worst err | outside CI and > 5 % |", "|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        if "error" in r:
            continue
        groups.setdefault(r["binding"], []).append(r)
        groups.setdefault("all", []).append(r)
    for b, rs in sorted(groups.items()):
        for f in FACES:
            e = [(_err(r, f), r) for r in rs if _err(r, f) is not None]
            if not e:
                continue
            a = np.array([x for x, _ in e])
            bad = sum(1 for x, r in e if abs(x) > 0.05 and abs(x * r["sim"]) > r["half"])
            w = a[np.argmax(np.abs(a))]
            lines.append(f"| {b} | {f} | {len(a)} | {100 * np.mean(np.abs(a)):.1f} % | {100 * w:+.1f} % | {bad} |")
    lines += ["", "| faces that should agree | rows compared | rows > 0.1 % apart | worst |", "|---|---|---|---|"]
    for a, b in PAIRS:
        d = [r[a] / r[b] - 1 for r in rows if "error" not in r and r.get(a) is not None and r.get(b) is not None
             and r[a] == r[a] and r[b] == r[b]]
        w = max(d, key=abs) if d else float("nan")
        lines.append(f"| {a} = {b} | {len(d)} | {sum(abs(x) > 1e-3 for x in d)} | {100 * w:+.2f} % |")
    errs = [r for r in rows if "error" in r]
    if errs:
        lines.append(f"\n{len(errs)} deployment(s) failed: " + "; ".join(f"#{r['i']} {r['error'][:200]}" for r in errs))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="deployments (default 40)")
    ap.add_argument("--seed", type=int, default=20261207, help="the draw's seed (default 20261207)")
    ap.add_argument("--reps", type=int, default=5, help="seeded simulation replications per deployment (default 5)")
    ap.add_argument("--jsonl", default=None, help="append each row as JSON to this file")
    ap.add_argument("--only", default=None, help="comma-separated deployment indices to run (the draw is the same)")
    a = ap.parse_args(argv)
    only = None if a.only is None else {int(x) for x in a.only.split(",")}
    run(a.n, a.seed, a.reps, a.jsonl, only)


if __name__ == "__main__":
    sys.exit(main())
