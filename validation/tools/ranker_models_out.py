"""Issue 18's check of the default length ranker with whole models held out, before and after a change.

    PYTHONPATH=. python validation/tools/ranker_models_out.py [--json out.json] [--quick]

Two stages, so that nothing is chosen on the models it is scored on:

1. **Development (nested)**: only the 11 development models (``DEV`` below, the same as
   ``pars_uniboost_claims.DEV_MODELS``).  Protocol B: the development models in 5 seeded folds, each
   fold ranked by a ranker trained on the other folds' pooled lengths of 75 % of the prompts, crossed
   with 5 seeded prompt splits (seeds 7 and 5: 25 cells each); protocol C: each development model's
   own lengths, 5 prompt splits of seed 7.  Settings are compared here only.
2. **Held out**: the 13 other AlpacaEval models, scored once per candidate, the 5 prompt splits of
   ``pars_uniboost_claims`` (seed 5).  Protocol C (the model's own lengths of the training prompts,
   what ``fluidq pars --model M --splits 5`` and an outside check measure) and protocol B (the
   development models' pooled lengths of the training prompts; the held-out model's lengths unused).

Candidates: ``before`` (``ngram_scale=0``, the default until 2026-12-06) and ``after`` (the
default).  Each number is the mean over the models ranked, then mean +- sd over the 5 splits; the
gain is paired over the same splits.  Prompts are featurised once (a cache keyed by the prompt);
the fits are ``LengthRanker.fit`` as shipped.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from fluidq.predict import LengthCues, LengthRanker, kendall_tau, load_lengths

DEV = ("gpt4", "gpt4_0613", "gpt4_0613_concise", "gpt4_0613_verbose", "gpt4_1106_preview",
       "gpt-4o-2024-05-13", "gpt-3.5-turbo-0613", "claude-2.1", "llama-2-7b-chat-hf",
       "llama-2-13b-chat-hf", "llama-2-70b-chat-hf")
CANDIDATES = {"before": {"ngram_scale": 0.0}, "after": {}}


class _Cached(LengthCues):
    """The default backbone, its features computed once per prompt (same numbers)."""

    def transform_parts(self, prompts):
        cache = _CACHE
        miss = [p for p in dict.fromkeys(prompts) if p not in cache]
        if miss:
            m, d = LengthCues.transform_parts(self, miss)
            for i, p in enumerate(miss):
                cache[p] = (m[i], d[i])
        import scipy.sparse as sp

        rows = [cache[p] for p in prompts]
        return sp.vstack([r[0] for r in rows], format="csr"), np.array([r[1] for r in rows])


_CACHE: dict = {}


def splits(n, seed, k=5, test_fraction=0.25):
    """The seeded 75/25 prompt splits of ``tau_over_splits(rng=seed)``."""
    out = []
    for child in np.random.SeedSequence(seed).spawn(k):
        perm = np.random.default_rng(child).permutation(n)
        m = max(2, int(round(test_fraction * n)))
        out.append((np.sort(perm[m:]), np.sort(perm[:m])))
    return out


def _fit_score(P, L, tr, te, kw):
    tr = tr[np.isfinite(L[tr]).any(axis=1)] if L.ndim == 2 else tr[np.isfinite(L[tr])]
    rk = LengthRanker.fit([P[i] for i in tr], L[tr], backbone=_Cached(), **kw)
    return rk.score([P[i] for i in te])


def _ms(x):
    x = np.asarray(x, float)
    return {"mean": float(x.mean()), "sd": float(x.std(ddof=1)), "per_split": x.tolist()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="3 held-out models, one development seed")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    ds = load_lengths("alpaca_eval")
    P = list(ds.prompts)
    models = list(ds.models)
    LM = np.column_stack([ds.of(m) for m in models])
    dev = [models.index(m) for m in DEV]
    held = [j for j in range(len(models)) if j not in dev]
    if a.quick:
        held = held[:3]
    out = {"dev": {}, "held": {}}
    # 1. development models only
    for seed in ((7,) if a.quick else (7, 5)):
        perm = np.random.default_rng(seed).permutation(len(dev))
        folds = [[dev[i] for i in perm[k::5]] for k in range(5)]
        for name, kw in CANDIDATES.items():
            res = []
            for tr, te in splits(len(P), seed):
                t = []
                for f in folds:
                    s = _fit_score(P, LM[:, [j for j in dev if j not in f]], tr, te, kw)
                    t += [kendall_tau(s, LM[te, j]) for j in f]
                res.append(np.mean(t))
            out["dev"][f"B_seed{seed}_{name}"] = _ms(res)
        print(f"dev B seed {seed} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    for name, kw in CANDIDATES.items():
        res = []
        for tr, te in splits(len(P), 7):
            res.append(np.mean([kendall_tau(_fit_score(P, LM[:, j], tr, te, kw), LM[te, j]) for j in dev]))
        out["dev"][f"C_seed7_{name}"] = _ms(res)
    print(f"dev C done ({time.perf_counter() - t0:.0f} s)", flush=True)
    # 2. held-out models (scored, never used to choose)
    sp5 = splits(len(P), 5)
    for name, kw in CANDIDATES.items():
        C = np.array([[kendall_tau(_fit_score(P, LM[:, j], tr, te, kw), LM[te, j]) for j in held] for tr, te in sp5])
        B = []
        for tr, te in sp5:
            s = _fit_score(P, LM[:, dev], tr, te, kw)
            B.append([kendall_tau(s, LM[te, j]) for j in held])
        B = np.array(B)
        out["held"][name] = {"C": _ms(C.mean(axis=1)), "B": _ms(B.mean(axis=1)),
                             "C_per_model": {models[j]: _ms(C[:, i]) for i, j in enumerate(held)},
                             "B_per_model": {models[j]: _ms(B[:, i]) for i, j in enumerate(held)}}
    print(f"held-out done ({time.perf_counter() - t0:.0f} s)", flush=True)
    d = out["dev"]
    for k in [k for k in d if k.endswith("_after")]:
        base = k[:-len("after")] + "before"
        d[k[:-len("_after")] + "_gain"] = _ms(np.subtract(d[k]["per_split"], d[base]["per_split"]))
    h = out["held"]
    for p in ("C", "B"):
        h[f"{p}_gain"] = _ms(np.subtract(h["after"][p]["per_split"], h["before"][p]["per_split"]))
    f = lambda r: f"{r['mean']:.3f} ± {r['sd']:.3f}"  # noqa: E731
    print("\n| development models (nested) | before | after | gain (paired) |\n|---|---|---|---|")
    for k in [k for k in d if k.endswith("_gain")]:
        print(f"| {k[:-5]} | {f(d[k[:-5] + '_before'])} | {f(d[k[:-5] + '_after'])} | {f(d[k])} |")
    print("\n| held-out model | C before | C after | B before | B after |\n|---|---|---|---|---|")
    for m in h["before"]["C_per_model"]:
        print(f"| {m} | " + " | ".join(f(h[c][p + '_per_model'][m]) for p in ("C", "B") for c in ("before", "after"))
              + " |")
    print(f"| **mean of the {len(held)}** | {f(h['before']['C'])} | {f(h['after']['C'])} | {f(h['before']['B'])} | "
          f"{f(h['after']['B'])} |")
    print(f"\npaired gain on the held-out models: C {f(h['C_gain'])}, B {f(h['B_gain'])} "
          f"({time.perf_counter() - t0:.0f} s)")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
