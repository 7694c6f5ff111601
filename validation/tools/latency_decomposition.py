"""Where the latency replay's error on the LLMServingSim runs comes from (issue 16): diagnostics, no fitting.

Run from the repository root: ``python validation/tools/latency_decomposition.py``.  For each shipped
LLMServingSim run it replays the run's arrivals exactly as ``fluidq validate`` does (operator-profile iteration
model, vLLM v1 memory, async scheduling, policy ``vllm-chunked``) and prints

1. the per-request TTFT and TPOT, measured vs simulated, by arrival decile (decile 0 is the ramp with few
   requests running, the last decile the drain of shrinking decode batches);
2. the attention profile's extra (non power-of-two) rows, which the iteration model leaves out of its grid,
   against the model's interpolation at those points (the bias of leaving them out);
3. the dense profile's weight-streaming check: each projection's time at one token against its weight bytes
   over the GPU's memory bandwidth (``peer_sim_config.json``'s ``mem_bw``): below the floor would mean the
   profiler timed a warm L2 cache;
4. the drain's measured iteration time, read from ``vllm_timeseries.csv`` where a second has no prompt
   tokens and no queue (mean running / generated tokens per second), against the replay's mean batch time at
   the same decode count; and the TTFT of the requests that did not queue (one mixed iteration each);
5. sensitivities (NOT fitted, NOT used by fluidq): a constant per-iteration overhead, the peer's decode
   attention skew term ``alpha (t(kv_max) - t(kv_mean))`` with the pooled ``alpha_default`` of the profile's
   ``profile_meta.yaml`` (the peer's per-bucket table is not shipped), and the lockstep MoE ranks holding
   whole requests (the busiest rank ``ceil(n/dp)`` decodes instead of ``n/dp``).

Prints markdown-ish text; the numbers are the ones quoted in ``validation/RESULTS.md`` ("Where the remaining
latency error comes from").  The measured side is only ever compared with, never read into the model.
"""
from __future__ import annotations

import csv
import gzip
import re
from pathlib import Path

import numpy as np

from fluidq.batchtime.operators import lss_iteration_model
from fluidq.sim import simulate
from fluidq.validate.cases import _case_comm, _case_facts, _n_layers, _planned_kv, load_cases
from fluidq.validate.replay import read_s, vllm_engine
from fluidq.validate.runs import latency_metrics, read_run

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CASES = ("rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b", "rtxpro6000-qwen3-30b-a3b")


def _setup(name):
    case = {c.name: c for c in load_cases(ROOT / "cases")}[name]
    s = case.spec
    run = read_run(DATA / s["run"])
    facts = _case_facts(case, s)
    dp = run.data_parallel_size
    ep = run.tensor_parallel_size * dp if run.expert_parallel else 1
    comm = _case_comm(case, s, DATA) if ep > 1 else None
    kw = dict(n_layers=_n_layers(case.name, s), tp=run.tensor_parallel_size, facts=facts, comm=comm,
              data_parallel_size=dp if facts is not None and facts.n_experts else 1, expert_parallel_size=ep)
    kv = run.kv_capacity_tokens
    if kv is None and "kv" in s:
        kv, _ = _planned_kv(case, s["kv"], run)
    return case, s, run, kw, kv


class _Skew:
    """The peer's decode-skew term on top of an iteration model (Python path: ``time`` sees every context)."""

    def __init__(self, m, alpha, decode_only=False):
        self.m, self.alpha, self.n_layers, self.decode_only = m, float(alpha), m.n_layers, decode_only

    def kernel_table(self):
        return None

    def time_shape(self, *a, **k):
        return self.m.time_shape(*a, **k)

    def time(self, prefill_chunks=(), decode_contexts=()):
        t = self.m.time(prefill_chunks, decode_contexts)
        return t + _skew_s(self.m, self.alpha, prefill_chunks, decode_contexts, 1, self.decode_only)


def _skew_s(m, alpha, prefill_chunks, decode_contexts, dp, decode_only):
    """The peer's skew term in seconds, ``alpha (t_attn(kv_max) - t_attn(kv_mean))`` over the layers (the
    decodes shared over ``dp`` lockstep ranks; none on a batch with a prompt chunk when ``decode_only``)."""
    dc = np.asarray(decode_contexts, dtype=float)
    pcs = [(float(c), float(k)) for c, k in prefill_chunks if c > 0]
    if (decode_only and pcs) or dc.size < 2 or not dc.max() > dc.mean():
        return 0.0
    C = sum(c for c, _ in pcs)
    kp = max(0.0, sum(c * (k + c / 2) for c, k in pcs) / C - C / 2) if C > 0 else 0.0
    lo = float(m.attn_us(C, kp, dc.size / dp, dc.mean()))
    hi = float(m.attn_us(C, kp, dc.size / dp, dc.max()))
    return m.n_layers * alpha * max(hi - lo, 0.0) * 1e-6


def replay(name, *, overhead_us=0.0, skew_alpha=None, skew_decode_only=False):
    case, s, run, kw, kv = _setup(name)
    model = lss_iteration_model(DATA / s["profile"], overhead_us=overhead_us, **kw)
    dp, facts = run.data_parallel_size, kw["facts"]
    lockstep = dp > 1 and facts is not None and facts.n_experts
    if skew_alpha is not None and not lockstep:
        model = _Skew(model, skew_alpha, skew_decode_only)
    rb, rk, rkv, rmodel = run.max_num_batched_tokens, run.max_num_seqs, kv, model
    if lockstep:
        from fluidq.validate.deployment import LockstepRanks

        rmodel, rb, rk, rkv = LockstepRanks(model, dp), dp * rb, dp * rk, None if kv is None else dp * kv
        if skew_alpha is not None:
            base = rmodel

            class _SkewRanks:  # the lockstep ranks plus the skew term of one rank's share of the decodes
                n_layers, source = base.n_layers, base.source

                def time_shape(self, *a, **k):
                    return base.time_shape(*a, **k)

                def time(self, prefill_chunks=(), decode_contexts=()):
                    return base.time(prefill_chunks, decode_contexts) + _skew_s(
                        model, skew_alpha, prefill_chunks, decode_contexts, dp, skew_decode_only)

            rmodel = _SkewRanks()
    order = np.argsort(run.sent_s, kind="stable")
    reqs = {"arrival_s": run.sent_s[order], "prompt_tokens": run.input_tokens[order],
            "output_tokens": run.output_tokens[order]}
    eng = vllm_engine(rmodel, b_max=rb, k_max=rk, kv_capacity_tokens=rkv, prefix_caching=run.prefix_caching,
                      name=name, async_scheduling=run.async_scheduling, block_size=run.block_size)
    sim = simulate(eng, reqs, "vllm-chunked", n_requests=len(run), record_iterations=True)
    r, t_read = sim.requests, read_s(sim)
    ttft = r["prefill_done_s"] - t_read
    tpot = (r["finish_s"] - r["prefill_done_s"]) / np.maximum(r["output_tokens"] - 1, 1)
    meas = latency_metrics(run.ttft_s, run.latency_s, run.tpot_s)
    ours = latency_metrics(ttft, r["finish_s"] - t_read, tpot)
    errs = {k: 100 * (ours[k] - meas[k]) / meas[k] for k in meas}
    return dict(sim=sim, run=run, order=order, ttft=ttft, tpot=tpot, errs=errs,
                mae=float(np.mean(np.abs(list(errs.values())))))


def deciles(name):
    out = replay(name)
    run, o = out["run"], out["order"]
    mt, mp = run.ttft_s[o], run.tpot_s[o]
    n = len(o)
    print(f"### {name}: MAE {out['mae']:.2f} %, {out['sim'].n_iterations} iterations, "
          f"{out['sim'].preemptions} preemptions")
    print("| " + " | ".join(f"{k} {v:+.1f}" for k, v in out["errs"].items()) + " |")
    print("| arrival decile | TTFT meas (s) | TTFT sim (s) | error | TPOT meas (ms) | TPOT sim (ms) | error |")
    print("|---|---|---|---|---|---|---|")
    for i in range(10):
        sl = slice(i * n // 10, (i + 1) * n // 10)
        a, b, c, d = mt[sl].mean(), out["ttft"][sl].mean(), mp[sl].mean(), out["tpot"][sl].mean()
        print(f"| {i} | {a:.2f} | {b:.2f} | {100 * (b / a - 1):+.1f} % | {1e3 * c:.2f} | {1e3 * d:.2f} | "
              f"{100 * (d / c - 1):+.1f} % |")
    print()


def extra_rows(name):
    case, s, run, kw, kv = _setup(name)
    folder = DATA / s["profile"]
    path = folder / "profile_tp1_attention.csv.gz"
    if not path.is_file():
        return
    m = lss_iteration_model(folder, **{**kw, "n_layers": kw["n_layers"]})
    with gzip.open(path, "rt") as f:
        A = np.array([[float(x[k]) for k in ("prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us")]
                      for x in csv.DictReader(f)])
    reg = lambda v: (v == 0) | (np.log2(np.maximum(v, 1)) % 1 == 0)  # noqa: E731
    extra = ~np.all(reg(A[:, :4]), axis=1)
    print(f"{name}: {extra.sum()} of {len(A)} attention rows off the power-of-two grid")
    for what, sel in (("decode", (A[:, 0] == 0) & (A[:, 2] > 0)), ("prefill", (A[:, 0] > 0) & (A[:, 2] == 0)),
                      ("mixed", (A[:, 0] > 0) & (A[:, 2] > 0))):
        k = sel & extra
        if not k.any():
            continue
        pred = m.attn_us(A[k, 0], A[k, 1], A[k, 2], A[k, 3])
        print(f"  {what}: {k.sum()} rows, model's interpolation vs measured: time-weighted "
              f"{100 * (pred - A[k, 4]).sum() / A[k, 4].sum():+.2f} %, mean |error| "
              f"{100 * np.mean(np.abs(pred - A[k, 4]) / A[k, 4]):.2f} %")


def drain_and_unqueued(name):
    case, s, run, kw, kv = _setup(name)
    out = replay(name)
    sim, o = out["sim"], out["order"]
    it = {k: np.asarray(v) for k, v in sim.iterations.items()}
    last_prefill = it["t_s"][np.nonzero(it["prefill_tokens"])[0][-1]]
    dec = (it["prefill_tokens"] == 0) & (it["t_s"] > last_prefill)
    with open(DATA / s["run"] / "vllm_timeseries.csv") as f:
        ts = list(csv.DictReader(f))
    print(f"{name}: drain, measured iteration time (mean running / generated tokens per s) vs the replay's")
    print("| t (s) | running | measured (ms) | replay (ms) | ratio |")
    print("|---|---|---|---|---|")
    prev = None
    for row in ts:
        r, g = int(row["running"]), float(row["gen_throughput"])
        if float(row["prompt_throughput"]) == 0 and int(row["waiting"]) == 0 and r > 0 and prev and g > 0:
            ra = 0.5 * (r + prev)
            near = dec & (np.abs(it["decode_tokens"] - ra) <= max(1.0, 0.1 * ra))
            if near.any():
                m, x = 1e3 * ra / g, 1e3 * it["batch_s"][near].mean()
                print(f"| {float(row['t']):g} | {prev}->{r} | {m:.2f} | {x:.2f} | {x / m:.3f} |")
        prev = r
    mt, st, p = run.ttft_s[o], out["ttft"], run.input_tokens[o]
    k = np.arange(len(o))
    k = k[(k > 0) & (mt < 0.3) & (st < 0.3)]
    print(f"{name}: {k.size} requests that did not queue (TTFT < 0.3 s on both sides, the first request left "
          f"out): replay/measured TTFT {st[k].sum() / mt[k].sum():.3f}" + "".join(
              f"; prompts {lo}-{hi}: {st[j].sum() / mt[j].sum():.3f} (n={j.size})"
              for lo, hi in ((1, 511), (512, 1023), (1024, 2047)) for j in [k[(p[k] >= lo) & (p[k] <= hi)]]
              if j.size) + f"; first request {1e3 * mt[0]:.0f} ms measured, {1e3 * st[0]:.0f} ms replayed")
    print()


def _lockstep_whole(self, prefill_chunks=(), decode_contexts=()):
    """LockstepRanks.time with whole requests per rank (sensitivity only)."""
    dc = np.asarray(decode_contexts, dtype=float)
    n = dc.size
    kvd = float(dc.mean()) if n else 0.0
    counts = [n // self.dp + (1 if i < n % self.dp else 0) for i in range(self.dp)]
    ranks, load = [[] for _ in range(self.dp)], [float(c) for c in counts]
    for c, k in sorted(((float(c), float(k)) for c, k in prefill_chunks if c > 0), reverse=True):
        r = int(np.argmin(load))
        ranks[r].append((c, k))
        load[r] += c
    worst = 0.0
    for r, pcs in enumerate(ranks):
        C = sum(c for c, _ in pcs)
        if C == 0 and counts[r] == 0:
            continue
        kv_eff = max(0.0, sum(c * (k + c / 2.0) for c, k in pcs) / C - C / 2.0) if C > 0 else 0.0
        worst = max(worst, float(self.replica.time_shape(C, kv_eff, counts[r], kvd, n_emit=counts[r] + len(pcs))))
    return worst


def weight_floor(name, facts):
    case, s, run, kw, kv = _setup(name)
    folder = DATA / s["profile"]
    cfg = (folder / "peer_sim_config.json").read_text()
    bw = float(re.search(r'"mem_bw":\s*([\d.]+)', re.search(r'"npu_mem":\s*\{[^}]*\}', cfg).group(0)).group(1))
    h, i, hd = facts.hidden_size, facts.intermediate_size, facts.head_dim
    w = {"qkv_proj": h * (facts.n_heads + 2 * facts.n_kv_heads) * hd, "o_proj": facts.n_heads * hd * h,
         "gate_up_proj": 2 * h * i, "down_proj": i * h}
    with open(folder / "profile_tp1_dense.csv") as f:
        t1 = {r["layer"]: float(r["time_us"]) for r in csv.DictReader(f) if int(r["tokens"]) == 1}
    print(f"{name}: projection time at 1 token / weight-streaming floor at {bw:g} GB/s: " + ", ".join(
        f"{k} {t1[k]:.1f}/{2 * v / bw / 1e3:.1f} us ({2 * v / t1[k] / 1e3:.0f} GB/s)" for k, v in w.items()))


def main() -> int:
    for name in CASES:
        deciles(name)
    for name in CASES:
        drain_and_unqueued(name)
    for name in CASES:
        extra_rows(name)
    print()
    for name in CASES[:2]:
        weight_floor(name, _setup(name)[3]["facts"] or _facts_llama())
    print()
    print("| constant per-iteration overhead (sensitivity) | " + " | ".join(CASES) + " |")
    print("|---|---|---|---|")
    for o in (0.0, 500.0, 1000.0, 2000.0):
        print(f"| {o:g} us | " + " | ".join(f"{replay(c, overhead_us=o)['mae']:.2f} %" for c in CASES) + " |")
    # each profile's own pooled alpha (profile_meta.yaml skew_fit.per_tp.1.alpha_default); the 4090 profile has
    # no skew profile (alpha 0, the peer's fallback), so its replay is the one above
    for name, alpha in (("rtxpro6000-llama3.1-8b", 0.0543), ("rtxpro6000-qwen3-30b-a3b", 0.0645)):
        for only in (False, True):
            sk = replay(name, skew_alpha=alpha, skew_decode_only=only)
            print(f"\npeer's skew term, pooled alpha {alpha}, {'decode-only batches' if only else 'every batch'} "
                  f"({name}): MAE {sk['mae']:.2f} %; " + ", ".join(f"{k} {v:+.1f}" for k, v in sk["errs"].items()))
    from fluidq.validate.deployment import LockstepRanks

    saved = LockstepRanks.time
    try:
        LockstepRanks.time = _lockstep_whole
        w = replay("rtxpro6000-qwen3-30b-a3b")
    finally:
        LockstepRanks.time = saved
    print(f"\nlockstep ranks holding whole requests (rtxpro6000-qwen3-30b-a3b): MAE {w['mae']:.2f} %; "
          + ", ".join(f"{k} {v:+.1f}" for k, v in w["errs"].items()))
    return 0


def _facts_llama():
    from fluidq.models import find_model

    return find_model("meta-llama/Llama-3.1-8B")


if __name__ == "__main__":
    raise SystemExit(main())
