"""GPU harness: measure t_b on a real model, then serve Poisson arrivals with real continuous batching.

Usage (from the repository root)::

    python validation/gpu/harness.py --mode cuda --out validation/data/gpu   # on a CUDA machine
    python validation/gpu/harness.py --mode cpu  --out /tmp/harness          # tiny model, seconds

What it does
------------
1. Builds a Llama-shaped model from a ``transformers.LlamaConfig`` with random weights (nothing
   is downloaded): in ``cuda`` mode the shape of Llama-3.1-8B in bf16, in ``cpu`` mode a tiny one.
2. Runs it through its own engine: a packed batch of prompt chunks and decode tokens per
   iteration, a per-request KV cache in fixed slots (one slot per admitted request, so the cache
   never binds and ``k_max`` = slots), decode attention over each request's cached context.
3. Measures the iteration time ``t_b`` over token counts and KV lengths (prefill-only,
   decode-only and mixed batches with one or two prompt chunks; mean of repeats after a warm-up)
   -> ``batch_time_table``.  All prompt chunks of a batch share one padded attention call and all
   decodes another, so the number of kernels per layer does not grow with the requests.
4. Fits ``t(b, kv)`` with ``fluidq.fit_batch_time`` and predicts the capacity with
   ``fluidq.validate.predict.predict_capacity`` for the workload (uniform prompt/output lengths).
5. For each scheduler (``sarathi``: decode first, mixed batches, chunked prefill -- work-conserving;
   ``vllm``: vanilla vLLM, prefill first, whole prompts, no mixed batches -- not work-conserving)
   and each load in ``--loads`` (fractions of the predicted capacity), offers Poisson arrivals for
   ``--horizon`` seconds in real time, serves them with the real model, and writes the run in the
   vLLM/LLMServingSim format (``vllm_requests.jsonl``, ``vllm_timeseries.csv``, ``vllm_meta.json``).
   Requests unfinished when the run is cut (``--drain`` seconds after the last arrival) are left
   out of ``vllm_requests.jsonl``; the time series still counts them as running or waiting.
6. Writes ``harness_meta.json`` (device, date, config, table, runs) so ``fluidq validate``
   (case ``gpu-harness``) ingests the session.

The CPU mode checks the plumbing (formats, schedulers, ingestion by ``fluidq validate``); on a
shared CPU its timings are dominated by Python overhead and preemption by other processes and say
nothing about the theory.  Timestamps are seconds on ``time.perf_counter`` since the session's start; an arrival is the
Poisson time at which the request entered the queue (it may wait for the running iteration).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import platform
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

PRESETS = {
    # Llama-3.1-8B shape (random weights), bf16
    "cuda": dict(model=dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                            num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=8192),
                 dtype="bfloat16", b_max=512, k_max=64, prompt=(32, 480), output=(16, 256), horizon=25.0, drain=10.0,
                 tick=1.0, reps=5, loads=(0.8, 0.9, 1.1, 1.2)),
    # a tiny Llama for the CPU test
    "cpu": dict(model=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, vocab_size=256, rope_theta=10000.0, max_position_embeddings=256),
                dtype="float32", b_max=32, k_max=4, prompt=(4, 24), output=(2, 8), horizon=1.5, drain=1.0,
                tick=0.1, reps=3, loads=(0.8, 1.2)),
}


def _import_fluidq():
    try:
        import fluidq  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT))


# ------------------------------------------------------------------------------------- engine
def _plain_llama(cfg: dict, device):
    """The same module tree as ``transformers.LlamaForCausalLM`` (the attributes the engine uses),
    built from plain ``torch.nn`` layers: for quick CPU checks without importing transformers."""
    import types

    import torch
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, n, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            v = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(v + self.eps)).to(x.dtype) * self.weight

    class MLP(nn.Module):
        def __init__(self, h, i):
            super().__init__()
            self.gate_proj, self.up_proj = nn.Linear(h, i, bias=False), nn.Linear(h, i, bias=False)
            self.down_proj = nn.Linear(i, h, bias=False)

        def forward(self, x):
            return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))

    h, nh, kvh = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = h // nh

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj, self.o_proj = nn.Linear(h, nh * hd, bias=False), nn.Linear(nh * hd, h, bias=False)
            self.k_proj, self.v_proj = nn.Linear(h, kvh * hd, bias=False), nn.Linear(h, kvh * hd, bias=False)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn, self.mlp = Attn(), MLP(h, cfg["intermediate_size"])
            self.input_layernorm, self.post_attention_layernorm = RMSNorm(h), RMSNorm(h)

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(cfg["vocab_size"], h)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg["num_hidden_layers"]))
            self.norm = RMSNorm(h)

    class Causal(nn.Module):
        def __init__(self):
            super().__init__()
            self.model, self.lm_head = Inner(), nn.Linear(h, cfg["vocab_size"], bias=False)

    with torch.device(device):
        model = Causal()
    return types.SimpleNamespace(**cfg), model


class Engine:
    """A Llama-shaped model with a slot KV cache and a packed varlen forward pass."""

    def __init__(self, cfg: dict, *, dtype: str, device: str, slots: int, max_len: int, seed: int = 0,
                 backend: str = "transformers"):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.dtype = getattr(torch, dtype)
        torch.manual_seed(seed)  # weights only; the harness's randomness uses numpy Generators
        default = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)  # build the weights in their final dtype (no fp32 copy)
        try:
            if backend == "transformers":
                from transformers import LlamaConfig, LlamaForCausalLM

                config = LlamaConfig(**cfg)
                with torch.device(self.device):
                    model = LlamaForCausalLM(config)
            elif backend == "torch":
                config, model = _plain_llama(cfg, self.device)
            else:
                raise ValueError(f"backend={backend!r}: expected 'transformers' or 'torch'")
        finally:
            torch.set_default_dtype(default)
        self.backend = backend
        self.model = model.to(self.dtype).eval()
        self.cfg = config
        self.L = config.num_hidden_layers
        self.nh = config.num_attention_heads
        self.kvh = config.num_key_value_heads
        self.hd = config.hidden_size // config.num_attention_heads
        self.max_len = max_len
        shape = (self.L, slots, max_len, self.kvh, self.hd)
        self.K = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.V = torch.zeros(shape, dtype=self.dtype, device=self.device)
        theta = float(cfg.get("rope_theta", 10000.0))
        inv = 1.0 / (theta ** (torch.arange(0, self.hd, 2, device=self.device).float() / self.hd))
        self.inv_freq = inv
        # grouped-query attention without copying K/V per query head, where torch supports it (>= 2.5)
        try:
            z = torch.zeros(1, 2, 1, 4, device=self.device, dtype=self.dtype)
            torch.nn.functional.scaled_dot_product_attention(z, z[:, :1], z[:, :1], enable_gqa=True)
            self.gqa = True
        except (TypeError, RuntimeError):
            self.gqa = False

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def _rope(self, x, cos, sin):
        h = x.shape[-1] // 2
        rot = self.torch.cat((-x[..., h:], x[..., :h]), dim=-1)
        return x * cos + rot * sin

    def step(self, segments, ids=None, return_logits=False):
        """One iteration. ``segments``: list of ``(slot, start, n_new)``; returns the next token of
        each segment (greedy).  The token ids are random unless given (``ids``: the packed new
        tokens): their content does not change the cost, which is what is measured."""
        torch = self.torch
        with torch.inference_mode():
            dev = self.device
            lens = [n for _, _, n in segments]
            b = sum(lens)
            slot_tok = torch.tensor(np.repeat([s for s, _, _ in segments], lens), device=dev)
            pos_np = np.concatenate([np.arange(st, st + n) for _, st, n in segments])
            pos = torch.tensor(pos_np, device=dev)
            if ids is None:
                ids = torch.randint(0, self.cfg.vocab_size, (b,), device=dev)
            else:
                ids = torch.as_tensor(ids, device=dev)
            m = self.model.model
            x = m.embed_tokens(ids)
            fr = pos[:, None].float() * self.inv_freq[None, :]
            emb = torch.cat((fr, fr), dim=-1)
            cos = emb.cos().to(self.dtype)[:, None, :]
            sin = emb.sin().to(self.dtype)[:, None, :]
            offs = np.concatenate([[0], np.cumsum(lens)])
            dec = [i for i, (_, st, n) in enumerate(segments) if n == 1 and st > 0]
            pre = [i for i, (_, st, n) in enumerate(segments) if not (n == 1 and st > 0)]
            if dec:
                d_tok = torch.tensor([offs[i] for i in dec], device=dev)
                d_slot = torch.tensor([segments[i][0] for i in dec], device=dev)
                d_len = torch.tensor([segments[i][1] + 1 for i in dec], device=dev)
                d_max = int(max(segments[i][1] + 1 for i in dec))
                d_mask = (torch.arange(d_max, device=dev)[None, :] < d_len[:, None])[:, None, None, :]
            if pre:
                # all prefill chunks in one padded attention call: rows = chunk tokens, keys = context
                n_max = max(segments[i][2] for i in pre)
                t_max = max(segments[i][1] + segments[i][2] for i in pre)
                rows = np.zeros((len(pre), n_max), dtype=np.int64)
                valid = np.zeros((len(pre), n_max), dtype=bool)
                qpos = np.zeros((len(pre), n_max), dtype=np.int64)
                for j, i in enumerate(pre):
                    _, st, n = segments[i]
                    rows[j, :n] = np.arange(offs[i], offs[i] + n)
                    valid[j, :n] = True
                    qpos[j, :n] = st + np.arange(n)
                p_rows = torch.tensor(rows, device=dev)
                p_valid = torch.tensor(valid, device=dev)
                p_slot = torch.tensor([segments[i][0] for i in pre], device=dev)
                keys = torch.arange(t_max, device=dev)
                # a padded row attends to key 0 only (keeps the softmax finite; its output is dropped)
                p_mask = (keys[None, None, :] <= torch.tensor(qpos, device=dev)[:, :, None])[:, None]
                p_out = p_rows[p_valid]
            rep = 1 if self.gqa else self.nh // self.kvh
            sdpa = torch.nn.functional.scaled_dot_product_attention
            kw = {"enable_gqa": True} if self.gqa else {}

            def heads(t):  # (n, kv_heads, T, hd) -> the query heads' view
                return t if self.gqa else t.repeat_interleave(rep, dim=1)

            for li, layer in enumerate(m.layers):
                at = layer.self_attn
                h = layer.input_layernorm(x)
                q = self._rope(at.q_proj(h).view(b, self.nh, self.hd), cos, sin)
                k = self._rope(at.k_proj(h).view(b, self.kvh, self.hd), cos, sin)
                v = at.v_proj(h).view(b, self.kvh, self.hd)
                self.K[li, slot_tok, pos] = k
                self.V[li, slot_tok, pos] = v
                out = torch.empty_like(q)
                if dec:
                    kd = heads(self.K[li, d_slot, :d_max].transpose(1, 2))
                    vd = heads(self.V[li, d_slot, :d_max].transpose(1, 2))
                    qd = q[d_tok][:, :, None, :]
                    od = sdpa(qd, kd, vd, attn_mask=d_mask, **kw)
                    out[d_tok] = od[:, :, 0, :]
                if pre:
                    kp = heads(self.K[li, p_slot, :t_max].transpose(1, 2))
                    vp = heads(self.V[li, p_slot, :t_max].transpose(1, 2))
                    qp = q[p_rows].transpose(1, 2)  # (P, heads, n_max, hd)
                    op = sdpa(qp, kp, vp, attn_mask=p_mask, **kw)
                    out[p_out] = op.transpose(1, 2)[p_valid]
                x = x + at.o_proj(out.reshape(b, self.nh * self.hd))
                x = x + layer.mlp(layer.post_attention_layernorm(x))
            last = torch.tensor(offs[1:] - 1, device=dev)
            logits = self.model.lm_head(m.norm(x[last]))
            nxt = logits.argmax(dim=-1)
            self.sync()
            return logits if return_logits else nxt

    def timed(self, segments, reps: int) -> float:
        self.step(segments)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            self.step(segments)
            ts.append(time.perf_counter() - t0)
        # the mean, not the median: serving pays the mean iteration time, tail included
        return float(np.mean(ts))


# --------------------------------------------------------------------------- batch-time table
def measure_table(eng: Engine, *, b_max: int, k_max: int, max_ctx: int, reps: int, log) -> dict:
    """Median iteration time for prefill-only, decode-only and mixed batches."""
    tokens, kv, secs, phase = [], [], [], []

    def grid(lo, hi, n):
        return sorted({int(round(x)) for x in np.geomspace(lo, hi, n)})

    for c in grid(4, b_max, 10):
        t = eng.timed([(0, 0, c)], reps)
        tokens.append(c), kv.append(0), secs.append(t), phase.append("prefill")
    for n in grid(1, k_max, 6):
        for ctx in grid(8, max_ctx - 1, 5):
            t = eng.timed([(s, ctx, 1) for s in range(n)], reps)
            tokens.append(n), kv.append(n * ctx), secs.append(t), phase.append("decode")
    for c in grid(4, b_max // 2, 4):
        for n in grid(1, min(k_max - 2, b_max - c), 3):
            for segs in (1, 2):  # one or two prompt chunks next to the decodes
                ctx = max_ctx // 2
                pre_segs = [(k_max - 1 - j, 0, max(1, c // segs)) for j in range(segs)]
                t = eng.timed(pre_segs + [(s, ctx, 1) for s in range(min(n, k_max - segs))], reps)
                nd = min(n, k_max - segs)
                tokens.append(sum(x[2] for x in pre_segs) + nd), kv.append(nd * ctx), secs.append(t)
                phase.append("mixed")
    i_d = phase.index("decode")
    i_p = max(i for i, ph in enumerate(phase) if ph == "prefill")
    log(f"measured {len(secs)} batches: t(1 decode) = {secs[i_d] * 1e3:.2f} ms, t({tokens[i_p]} prefill) = "
        f"{secs[i_p] * 1e3:.2f} ms")
    return {"tokens": tokens, "kv_tokens": kv, "seconds": secs, "phase": phase}


# ------------------------------------------------------------------------------- schedulers
class Req:
    __slots__ = ("i", "arrival", "p", "o", "done_p", "gen", "slot", "scheduled", "first", "last")

    def __init__(self, i, arrival, p, o):
        self.i, self.arrival, self.p, self.o = i, arrival, p, o
        self.done_p = 0
        self.gen = 0
        self.slot = None
        self.scheduled = self.first = self.last = None


def sarathi_batch(running, waiting, free_slots, b_max, k_max):
    """Decode first: one token per decoding resident, then prompt chunks FCFS (residents first,
    then admissions) in the rest of the budget.  Work-conserving with mixed batches and chunking."""
    batch, budget = [], b_max
    for r in running:
        if r.done_p >= r.p and budget > 0:
            batch.append((r, 1))
            budget -= 1
    for r in running:
        if r.done_p < r.p and budget > 0:
            c = min(r.p - r.done_p, budget)
            batch.append((r, c))
            budget -= c
    admit = []
    while waiting and budget > 0 and free_slots and len(running) + len(admit) < k_max:
        r = waiting.popleft()
        r.slot = free_slots.pop()
        c = min(r.p, budget)
        batch.append((r, c))
        budget -= c
        admit.append(r)
    return batch, admit


def vllm_batch(running, waiting, free_slots, b_max, k_max):
    """Vanilla vLLM: prefill first with whole prompts FCFS (stop at the first that does not fit),
    no mixed batches; else one decode token per resident.  Not work-conserving."""
    batch, admit, budget = [], [], b_max
    while waiting and free_slots and len(running) + len(admit) < k_max and waiting[0].p <= budget:
        r = waiting.popleft()
        r.slot = free_slots.pop()
        batch.append((r, r.p))
        budget -= r.p
        admit.append(r)
    if batch:
        return batch, admit
    for r in running[:b_max]:
        batch.append((r, 1))
    return batch, admit


SCHEDULERS = {"sarathi": (sarathi_batch, True), "vllm": (vllm_batch, False)}
# fluidq's own scheduler objects (``fluidq.policies``), driven through the policy protocol
FLUIDQ_WORK_CONSERVING = {"sarathi": True, "orca": True, "vllm-chunked": True, "vllm": False,
                          "fastertransformer": False}


class FluidqPolicy:
    """Batch formation by a ``fluidq.policies`` scheduler: the residents and as many waiting requests
    as there are free KV slots are shown to its ``select(view)`` as
    :class:`~fluidq.policies.RequestState` records (``output_tokens`` = the decode tokens after the
    first, which comes with the prefill as in vLLM); a request takes a slot when it is first
    scheduled and frees it when it finishes."""

    def __init__(self, name: str):
        _import_fluidq()
        from fluidq.policies import QueueView, RequestState, resolve_policy

        self.policy = resolve_policy(name)
        self.QueueView, self.RequestState = QueueView, RequestState
        self.states = {}
        self.no_slot = 0
        self.t0 = time.perf_counter()  # set by serve() to the run's clock origin

    def __call__(self, running, waiting, free_slots, b_max, k_max):
        # the engine's KV slots gate admission: the policy sees the residents and as many waiting
        # requests as there are free slots (as vLLM admits only what its cache can hold)
        present = sorted(list(running) + list(waiting)[:len(free_slots)], key=lambda r: r.i)
        views = []
        for r in present:
            st = self.states.get(r.i)
            if st is None:
                st = self.states[r.i] = self.RequestState(rid=r.i, arrival_s=r.arrival, prompt_tokens=r.p,
                                                          output_tokens=max(r.o - 1, 0))
            st.prefilled = r.done_p
            st.decoded = max(r.gen - 1, 0)
            views.append(st)
        view = self.QueueView(requests=tuple(views), now_s=time.perf_counter() - self.t0, b_max=b_max, k_max=k_max)
        b = self.policy.select(view)
        by_id = {r.i: r for r in present}
        batch, admit = [], []
        for rid, n in b.prefill:
            r = by_id[rid]
            if r.slot is None:
                if not free_slots:
                    self.no_slot += 1  # the engine's KV slots are full: the chunk waits
                    continue
                r.slot = free_slots.pop()
                waiting.remove(r)
                admit.append(r)
            batch.append((r, int(n)))
        for rid in b.decode:
            batch.append((by_id[rid], 1))
        return batch, admit


def make_scheduler(name: str):
    """``(batch former, work-conserving)`` for a built-in name or ``fluidq:<policy>``."""
    if name.startswith("fluidq:"):
        pol = name.split(":", 1)[1]
        return FluidqPolicy(pol), FLUIDQ_WORK_CONSERVING.get(pol.lower(), False)
    return SCHEDULERS[name]


def serve(eng: Engine, arrivals, prompts, outputs, *, scheduler: str, b_max: int, k_max: int, horizon: float,
          drain: float, tick: float, max_len: int):
    """Serve the arrivals in real time; return (requests, timeseries rows)."""
    form, _ = make_scheduler(scheduler)
    reqs = [Req(i, float(a), int(p), int(o)) for i, (a, p, o) in enumerate(zip(arrivals, prompts, outputs))]
    waiting, running = deque(), []
    free = list(range(k_max))
    nxt = 0
    rows = []
    t_start = time.perf_counter()
    if hasattr(form, "t0"):
        form.t0 = t_start
    cut = horizon + drain
    acc_p = acc_g = 0
    next_tick = tick
    now = 0.0
    iters = []  # (start_s, seconds, tokens, kv_tokens, prefill_segments)
    while True:
        now = time.perf_counter() - t_start
        while next_tick <= now:
            rows.append((round(next_tick, 6), acc_p / tick, acc_g / tick, len(running), len(waiting),
                         100.0 * sum(r.done_p + r.gen for r in running) / (k_max * max_len)))
            acc_p = acc_g = 0
            next_tick += tick
        if now > cut:
            break
        while nxt < len(reqs) and reqs[nxt].arrival <= now:
            waiting.append(reqs[nxt])
            nxt += 1
        if not running and not waiting:
            if nxt >= len(reqs):
                break
            time.sleep(max(0.0, min(reqs[nxt].arrival - now, next_tick - now, 0.01)))
            continue
        batch, admit = form(running, waiting, free, b_max, k_max)
        for r in admit:
            r.scheduled = now
            running.append(r)
        if not batch:
            time.sleep(0.0005)
            continue
        segs = []
        for r, n in batch:
            start = r.done_p if r.done_p < r.p else r.p + r.gen - 1
            segs.append((r.slot, start, n))
        t_it = time.perf_counter()
        eng.step(segs)
        t_end = time.perf_counter() - t_start
        kvs = sum(st for _, st, n in segs if n == 1 and st > 0)
        iters.append((round(t_it - t_start, 6), time.perf_counter() - t_it, sum(n for _, _, n in segs), kvs,
                      sum(1 for _, st, n in segs if not (n == 1 and st > 0))))
        finished = []
        for r, n in batch:
            if r.done_p < r.p:
                r.done_p += n
                acc_p += n
                if r.done_p >= r.p:
                    r.gen = 1
                    r.first = t_end
                    acc_g += 1
            else:
                r.gen += 1
                acc_g += 1
            if r.done_p >= r.p and r.gen >= r.o:
                r.last = t_end
                finished.append(r)
        for r in finished:
            running.remove(r)
            free.append(r.slot)
    # final partial tick
    rows.append((round(now, 6), acc_p / tick, acc_g / tick, len(running), len(waiting), 0.0))
    return reqs, rows, iters


def write_run(folder: Path, reqs, rows, meta: dict, iters=()):
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "iterations.csv").open("w") as f:
        f.write("start_s,seconds,tokens,kv_tokens,prefill_segments\n")
        for it in iters:
            f.write(",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in it) + "\n")
    with (folder / "vllm_requests.jsonl").open("w") as f:
        for r in reqs:
            if r.last is None:
                continue
            f.write(json.dumps({"request_id": f"h-{r.i}", "input_toks": r.p, "output_toks": r.o,
                                "arrival_time": r.arrival, "queued_ts": r.arrival, "scheduled_ts": r.scheduled,
                                "first_token_ts": r.first, "last_token_ts": r.last}) + "\n")
    with (folder / "vllm_timeseries.csv").open("w") as f:
        f.write("t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n")
        for row in rows:
            f.write(",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row) + "\n")
    (folder / "vllm_meta.json").write_text(json.dumps(meta, indent=1))


# ----------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=sorted(PRESETS), default="cuda")
    ap.add_argument("--out", default=str(ROOT / "validation" / "data" / "gpu"))
    ap.add_argument("--horizon", type=float, default=None, help="seconds of arrivals per run")
    ap.add_argument("--drain", type=float, default=None, help="seconds served after the last arrival")
    ap.add_argument("--loads", default=None, help="comma-separated fractions of the predicted capacity")
    ap.add_argument("--schedulers", default="sarathi,vllm",
                    help="comma-separated: the harness's own 'sarathi' (work-conserving) and 'vllm' (not), or "
                         "fluidq's scheduler objects as 'fluidq:sarathi', 'fluidq:vllm', 'fluidq:orca', ...")
    ap.add_argument("--seed", type=int, default=20260424)
    ap.add_argument("--layers", type=int, default=None, help="override the number of decoder layers")
    ap.add_argument("--backend", choices=["transformers", "torch"], default="transformers",
                    help="build the model with transformers.LlamaForCausalLM (default) or plain torch.nn "
                         "layers of the same shape (no transformers import; quick CPU checks)")
    args = ap.parse_args(argv)
    pre = dict(PRESETS[args.mode])
    if args.layers:
        pre["model"] = dict(pre["model"], num_hidden_layers=args.layers)
    horizon = args.horizon or pre["horizon"]
    drain = args.drain if args.drain is not None else pre["drain"]
    loads = tuple(float(x) for x in args.loads.split(",")) if args.loads else pre["loads"]
    scheds = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    for s in scheds:
        if s not in SCHEDULERS and not (s.startswith("fluidq:") and s.split(":", 1)[1] in FLUIDQ_WORK_CONSERVING):
            ap.error(f"--schedulers: unknown {s!r} (known: {', '.join(SCHEDULERS)}, or fluidq:NAME with NAME in "
                     f"{', '.join(FLUIDQ_WORK_CONSERVING)})")
    t_session = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_session:7.1f} s] {msg}", flush=True)

    import torch

    device = "cuda" if args.mode == "cuda" else "cpu"
    if device == "cpu":
        torch.set_num_threads(1)  # tiny matrices: threads only add noise on a shared machine
    if device == "cuda" and not torch.cuda.is_available():
        print("--mode cuda: no CUDA device visible (use --mode cpu for the tiny model)", file=sys.stderr)
        return 2
    _import_fluidq()
    from fluidq.batchtime.fit import fit_batch_time
    from fluidq.batchtime.operators import FittedIterationModel
    from fluidq.validate.predict import predict_capacity

    b_max, k_max = pre["b_max"], pre["k_max"]
    max_len = pre["prompt"][1] + pre["output"][1] + 1
    eng = Engine(pre["model"], dtype=pre["dtype"], device=device, slots=k_max, max_len=max_len, seed=args.seed,
                 backend=args.backend)
    dev_name = torch.cuda.get_device_name(0) if device == "cuda" else f"CPU ({platform.processor() or platform.machine()})"
    log(f"model built on {dev_name}: {pre['model']['num_hidden_layers']} layers, hidden {pre['model']['hidden_size']}")
    table = measure_table(eng, b_max=b_max, k_max=k_max, max_ctx=max_len, reps=pre["reps"], log=log)
    fit = fit_batch_time(table["tokens"], table["seconds"], kind="context-aware", kv_tokens=table["kv_tokens"])
    log(f"fit: {fit.describe()}")
    rng = np.random.default_rng(args.seed)
    # the workload's lengths (uniform), one sample large enough for the prediction
    lp = rng.integers(pre["prompt"][0], pre["prompt"][1] + 1, 20000)
    lo = rng.integers(pre["output"][0], pre["output"][1] + 1, 20000)
    pred = predict_capacity(FittedIterationModel(fit.model), lp, lo, b_max=b_max, k_max=k_max, kv_capacity_tokens=None)
    log(f"predicted capacity {pred.tokens_per_s:.0f} tokens/s = {pred.requests_per_s:.3f} req/s ({pred.binding} binds)")
    stamp = _dt.datetime.now(_dt.timezone.utc)
    session = Path(args.out) / f"{stamp:%Y%m%d}_{args.mode}_{''.join(ch for ch in dev_name if ch.isalnum())[:24]}"
    runs = []
    try:
        import transformers

        tv = transformers.__version__
    except ImportError:
        tv = None

    def write_meta():
        # rewritten after every run: a session cut short (time limit) is still a valid, smaller one
        session.mkdir(parents=True, exist_ok=True)
        (session / "harness_meta.json").write_text(json.dumps({
            "device": dev_name, "date": f"{stamp:%Y-%m-%d %H:%M} UTC", "mode": args.mode, "model_config": pre["model"],
            "dtype": pre["dtype"], "b_max": b_max, "k_max": k_max, "kv_capacity_tokens": None,
            "workload": {"prompt_uniform": pre["prompt"], "output_uniform": pre["output"]}, "seed": args.seed,
            "versions": {"torch": torch.__version__, "transformers": tv, "backend": args.backend,
                         "python": platform.python_version()},
            "batch_time_table": table, "fit": fit.describe(), "predicted_at_run_time": pred.to_dict(),
            "loads": list(loads), "schedulers": scheds, "horizon_s": horizon, "drain_s": drain, "runs": runs}, indent=1))

    ss = np.random.SeedSequence(args.seed)
    for sched, child in zip(scheds, ss.spawn(len(scheds))):
        for load, g in zip(loads, child.spawn(len(loads))):
            r = np.random.default_rng(g)
            lam = load * pred.requests_per_s
            n = max(2, int(r.poisson(lam * horizon)))
            arr = np.sort(r.uniform(0.0, horizon, n))
            p = r.integers(pre["prompt"][0], pre["prompt"][1] + 1, n)
            o = r.integers(pre["output"][0], pre["output"][1] + 1, n)
            reqs, rows, iters = serve(eng, arr, p, o, scheduler=sched, b_max=b_max, k_max=k_max, horizon=horizon,
                                      drain=drain, tick=pre["tick"], max_len=max_len)
            name = f"{sched.replace(':', '-')}_load{load:g}"
            done = sum(q.last is not None for q in reqs)
            meta = {"schema_version": 1, "model": "Llama-shaped, random weights", "engine_kwargs": {
                        "max_num_seqs": k_max, "max_num_batched_tokens": b_max, "tensor_parallel_size": 1},
                    "num_requests": n, "tick_seconds": pre["tick"],
                    "hardware": {"device_name": dev_name, "torch_version": torch.__version__},
                    "harness": {"scheduler": sched, "work_conserving": make_scheduler(sched)[1], "load": load,
                                "arrival_rate_per_s": lam, "finished": done, "horizon_s": horizon, "drain_s": drain}}
            write_run(session / name, reqs, rows, meta, iters)
            runs.append(name)
            write_meta()
            log(f"{name}: {n} requests at {lam:.3f} req/s, {done} finished")
    log(f"session written to {session}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
