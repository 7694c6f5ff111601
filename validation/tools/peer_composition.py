"""fluidq's iteration time against the peer simulator's composition rule, term by term, on the same batches
(issue 16): diagnostics, no fitting.

Run from the repository root: ``python validation/tools/peer_composition.py``.  LLMServingSim's simulator
(casys-kaist/LLMServingSim, ``serving/core/trace_generator.py`` and ``profiler/models/llama.yaml``) composes
one iteration from the same operator profiles fluidq reads:

* the embedding, ``L x`` (two RMS norms, QKV projection, rotary embedding, attention, output projection,
  gate/up projection, activation, down projection), the final norm: each dense operator looked up at the
  batch's computed tokens, linear between the profiled token counts, clamped below the first and
  extrapolated from the last two above, truncated to whole nanoseconds;
* the LM head and the sampler at the number of requests in the batch (prefilling ones included);
* attention once per layer from the 4-D table at ``(sum of prefill chunks, sum of their prior contexts,
  decodes, the decodes' integer mean context)``, linear on each axis over *every* profiled row (the
  power-of-two grid and the x1.5 rows alike), a missing ``(chunk, decodes)`` corner taken from the nearest
  profiled pair;
* plus the skew term ``alpha (t(kv_max) - t(kv_mean))`` per layer on a batch of two or more decodes whose
  longest context exceeds the mean (:class:`fluidq.batchtime.operators.AttentionSkew`), ``alpha`` from the
  profile's bucket table, else its pooled ``alpha_default``.

This script reimplements that rule (:class:`PeerRule`, written from the rule as stated above, not copied)
and evaluates it and fluidq's :class:`~fluidq.batchtime.operators.IterationModel` on every batch of
fluidq's replay of each shipped LLMServingSim Llama run, splitting the seconds by term; then it replays
the runs with fluidq's own skew term read from the profile (``attention_skew="profile"``: the pooled
alpha, the only skew number the shipped profiles carry) as a sensitivity.  The measured side is only
compared with (the 15 latency metrics), never read into a model.  Prints the numbers quoted in
``validation/RESULTS.md`` ("The iteration composition against the peer's, term by term").
"""
from __future__ import annotations

import bisect
import csv
import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency_decomposition as ld  # noqa: E402

from fluidq.batchtime.operators import lss_iteration_model  # noqa: E402
from fluidq._io import open_text  # noqa: E402

CASES = ("rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b")
#: one decoder layer of LLMServingSim's Llama catalogue and how often each dense operator runs in it
LAYER = (("layernorm", 2), ("qkv_proj", 1), ("rotary_emb", 1), ("o_proj", 1), ("gate_up_proj", 1),
         ("act_fn", 1), ("down_proj", 1))


def _bracket(vals, q):
    """``(lo, hi, t)`` for linear blending on the sorted ``vals``: clamped below the first value,
    extrapolated from the last two above."""
    n = len(vals)
    if n == 1 or q <= vals[0]:
        return 0, 0, 0.0
    i = bisect.bisect_right(vals, q)
    lo, hi = (n - 2, n - 1) if i >= n else (i - 1, i)
    x0, x1 = vals[lo], vals[hi]
    return lo, hi, (0.0 if x1 == x0 else (q - x0) / (x1 - x0))


def _lin(keys, vals, q):
    if len(keys) == 1:
        return vals[0]
    lo, hi, t = _bracket(keys, q)
    return vals[lo] + t * (vals[hi] - vals[lo])


class PeerRule:
    """The peer simulator's iteration composition over an LLMServingSim profile folder (TP1, dense model),
    in nanoseconds per term; ``alpha`` is the skew term's (0: none)."""

    def __init__(self, folder, n_layers, alpha=0.0):
        self.L, self.alpha = int(n_layers), float(alpha)
        self.dense = self._table(folder / "profile_tp1_dense.csv", "tokens")
        self.seq = self._table(folder / "profile_tp1_per_sequence.csv", "sequences")
        slices: dict = {}
        with open_text(folder / "profile_tp1_attention.csv") as f:
            for r in csv.DictReader(f):
                pc, kp, nd, kd = (int(r[k]) for k in ("prefill_chunk", "kv_prefill", "n_decode", "kv_decode"))
                slices.setdefault((pc, nd), {}).setdefault(kp, {})[kd] = round(float(r["time_us"]) * 1e3)
        self.slices = {k: (sorted(v), [(sorted(v[kp]), [v[kp][x] for x in sorted(v[kp])]) for kp in sorted(v)])
                       for k, v in slices.items()}
        self.pcs = sorted({k[0] for k in slices})
        self.nds = sorted({k[1] for k in slices})
        self.pairs = sorted(slices)

    @staticmethod
    def _table(path, key):
        out: dict = {}
        with open_text(path) as f:
            for r in csv.DictReader(f):
                out.setdefault(r["layer"], {})[int(r[key])] = round(float(r["time_us"]) * 1e3)
        return {k: (sorted(v), [v[x] for x in sorted(v)]) for k, v in out.items()}

    def _1d(self, table, op, q):
        k, v = table[op]
        return max(1, int(_lin(k, v, max(int(q), 1))))

    def _slice(self, pc, nd, kp, kd):
        s = self.slices.get((pc, nd))
        if s is None:
            return None
        kps, rows = s
        lo, hi, t = _bracket(kps, max(int(kp), 0))
        a = _lin(*rows[lo], max(int(kd), 0))
        return a if lo == hi else a + t * (_lin(*rows[hi], max(int(kd), 0)) - a)

    def attention_ns(self, pc, kp, nd, kd):
        lp, hp, tp = _bracket(self.pcs, max(int(pc), 0))
        ln, hn, tn = _bracket(self.nds, max(int(nd), 0))

        def corner(p, n):
            v = self._slice(p, n, kp, kd)
            if v is None:
                q = min(self.pairs, key=lambda x: (x[0] - p) ** 2 + (x[1] - n) ** 2)
                v = self._slice(q[0], q[1], kp, kd) or 0.0
            return v

        v0 = corner(self.pcs[lp], self.nds[ln])
        v0 += tn * (corner(self.pcs[lp], self.nds[hn]) - v0)
        v1 = corner(self.pcs[hp], self.nds[ln])
        v1 += tn * (corner(self.pcs[hp], self.nds[hn]) - v1)
        return max(1, int(v0 + tp * (v1 - v0)))

    def terms(self, prefill_chunks, decode_contexts) -> dict:
        pcs = [(int(c), int(k)) for c, k in prefill_chunks if c > 0]
        dc = [int(x) for x in decode_contexts]
        pc, kp, nd = sum(c for c, _ in pcs), sum(k for _, k in pcs), len(dc)
        total, nseq = pc + nd, len(pcs) + nd
        mean = sum(dc) // nd if nd else 0
        a = self.attention_ns(pc, kp, nd, mean)
        skew = 0
        if self.alpha and nd > 1 and max(dc) != mean:
            amax = self.attention_ns(pc, kp, nd, max(dc))
            if amax > a:
                skew = int(round(a + self.alpha * (amax - a))) - a
        return {"linear": self.L * sum(m * self._1d(self.dense, op, total) for op, m in LAYER),
                "once": self._1d(self.dense, "embedding", total) + self._1d(self.dense, "final_layernorm", total),
                "per_seq": self._1d(self.seq, "lm_head", nseq) + self._1d(self.seq, "sampler", nseq),
                "attention": self.L * a, "skew": self.L * skew}


def fluidq_terms(m, prefill_chunks, decode_contexts) -> dict:
    """fluidq's :meth:`IterationModel.time` split into the same terms, nanoseconds."""
    pcs = [(float(c), float(k)) for c, k in prefill_chunks if c > 0]
    C = sum(c for c, _ in pcs)
    kv_eff = max(0.0, sum(c * (k + c / 2) for c, k in pcs) / C - C / 2) if C > 0 else 0.0
    dc = np.asarray(decode_contexts, dtype=float)
    nd, b = float(dc.size), C + float(dc.size)
    skew = m.skew.extra_us(m.attn_us, C, kv_eff, dc) if m.skew is not None else 0.0
    return {"linear": 1e3 * m.n_layers * float(m.linear_us(b)), "once": 1e3 * float(m.once_us(b)),
            "per_seq": 1e3 * float(m.per_seq_us(max(nd + len(pcs), 1))),
            "attention": 1e3 * m.n_layers * float(m.attn_us(C, kv_eff, nd, float(dc.mean()) if dc.size else 0.0)),
            "skew": 1e3 * m.n_layers * skew}


class _Recorder:
    """An iteration model that records every batch it times (and runs on the generic path)."""

    def __init__(self, m):
        self.m, self.n_layers, self.source, self.batches = m, m.n_layers, m.source, []

    def time_shape(self, *a, **k):
        return self.m.time_shape(*a, **k)

    def time(self, prefill_chunks=(), decode_contexts=()):
        self.batches.append(([(int(c), int(k)) for c, k in prefill_chunks if c > 0],
                             [int(x) for x in decode_contexts]))
        return self.m.time(prefill_chunks, decode_contexts)


def replay(name, **model_kw):
    """:func:`latency_decomposition.replay` with extra ``lss_iteration_model`` arguments; also returns the model
    and every batch it timed."""
    made = []

    def build(*a, **k):
        made.append(_Recorder(lss_iteration_model(*a, **{**k, **model_kw})))
        return made[-1]

    saved = ld.lss_iteration_model
    ld.lss_iteration_model = build
    try:
        out = ld.replay(name)
    finally:
        ld.lss_iteration_model = saved
    return out, made[0].m, made[0].batches


def compare(name):
    case, s, run, kw, kv = ld._setup(name)
    out, m, batches = replay(name)
    peer = PeerRule(ld.DATA / s["profile"], m.n_layers)
    print(f"### {name}: {len(batches)} batches of fluidq's replay (MAE {out['mae']:.2f} %)")
    print("| batches | n | term | fluidq (s) | peer rule (s) | fluidq - peer |")
    print("|---|---|---|---|---|---|")
    for kind in ("decode", "mixed", "prefill"):
        rows = [(fluidq_terms(m, p, d), peer.terms(p, d)) for p, d in batches
                if kind == ("mixed" if p and d else "prefill" if p else "decode")]
        if not rows:
            continue
        for t in ("linear", "once", "per_seq", "attention"):
            f, p = sum(r[0][t] for r in rows) / 1e9, sum(r[1][t] for r in rows) / 1e9
            print(f"| {kind} | {len(rows)} | {t} | {f:.4f} | {p:.4f} | {100 * (f - p) / p:+.2f} % |")
    multi = [(p, d) for p, d in batches if p and d and len(p) > 1]
    if multi:
        f = sum(fluidq_terms(m, p, d)["attention"] for p, d in multi)
        g = sum(peer.terms(p, d)["attention"] for p, d in multi)
        print(f"(mixed batches with two or more prompt chunks: {len(multi)}, their attention fluidq - peer "
              f"{100 * (f - g) / g:+.2f} %: the chunks' prior contexts folded by causal work vs summed)")
    print()


def skew_sensitivity(name):
    sk, m, batches = replay(name, attention_skew="profile")
    tot = sum(sum(fluidq_terms(m, p, d).values()) for p, d in batches)
    add = sum(fluidq_terms(m, p, d)["skew"] for p, d in batches)
    print(f"{name}, skew term with {m.skew.source}: +{100 * add / (tot - add):.2f} % of the replay's batch "
          f"seconds; MAE {sk['mae']:.2f} %; " + ", ".join(f"{k} {v:+.1f}" for k, v in sk["errs"].items()))


def main() -> int:
    for name in CASES:
        compare(name)
    skew_sensitivity("rtxpro6000-llama3.1-8b")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
