"""Issue 18, fourth round: the ideas of the round's brief for the default length ranker, each scored on
the development models (chooses) and on the held-out models (reports), against the shipped default.

    PYTHONPATH=. python validation/tools/ranker_round4.py [--only "NAME[;NAME...]"] [--list]

Protocols and splits are those of ``ranker_models_out.py`` (the same ``DEV`` list and ``splits``):

* dev B (seed 7): the 11 development models in 5 seeded folds, each ranked by a ranker trained on the
  other folds' pooled lengths of 75 % of the prompts, crossed with 5 prompt splits (25 cells);
* dev C (seed 7): each development model ranked by a ranker trained on its own lengths (5 splits);
* held C (seed 5): each of the 13 held-out models ranked by a ranker trained on its own lengths of the
  training prompts (what ``fluidq pars --model M --splits 5`` measures); a candidate that pools uses the
  11 development models' lengths of the training prompts (never the held-out model's others);
* held B (seed 5): the development models' pooled lengths; the held-out model's lengths unused.

Each number: mean over the models ranked, then mean +- sd over the 5 splits; gains are paired over
the same splits against the shipped default.  The ridge here is a replica of
``LengthRanker._fit_cues`` (dual solve) on features computed once; the script checks at start that it
gives the shipped fit's scores (correlation 1).  Some 10-20 minutes on one free core for all
candidates (the pairwise ensemble is most of it).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ranker_models_out import DEV, _Cached, splits  # noqa: E402

from fluidq.predict import LengthCues, LengthRanker, kendall_tau, load_lengths  # noqa: E402
from fluidq.predict.ranker import CUES_CUE_WEIGHT, CUES_L2, CUES_NGRAM_SCALE, rank_scores  # noqa: E402

ds = load_lengths("alpaca_eval")
P = list(ds.prompts)
MODELS = list(ds.models)
LM = np.column_stack([ds.of(m) for m in MODELS])
LC = np.column_stack([load_lengths("alpaca_eval", unit="chars").of(m) for m in MODELS])
DEV_J = [MODELS.index(m) for m in DEV]
HELD_J = [j for j in range(len(MODELS)) if j not in DEV_J]
_FEAT: dict = {}


def feats(key="default"):
    if key not in _FEAT:
        bb = {"default": LengthCues(), "c35": LengthCues(char_min=3, char_max=5),
              "c36": LengthCues(char_min=3, char_max=6), "b18": LengthCues(n_bits=18),
              "b20": LengthCues(n_bits=20)}[key]
        m, d = bb.transform_parts(P)
        _FEAT[key] = (m.tocsr(), np.asarray(d, float))
    return _FEAT[key]


def ridge(tr, te, y, *, key="default", l2=CUES_L2, cue_weight=CUES_CUE_WEIGHT, ngram_scale=CUES_NGRAM_SCALE,
          row_w=None, dense_extra=None):
    """``LengthRanker._fit_cues`` (dual) on rows ``tr`` with target ``y``; the scores of rows ``te``."""
    M, D = feats(key)
    if dense_extra is not None:
        D = np.column_stack([D, dense_extra])
    Mtr, Mte, Dtr, Dte = M[tr], M[te], D[tr], D[te]
    mu, sd = Dtr.mean(0), Dtr.std(0)
    sd[sd == 0] = 1
    c = cue_weight / np.sqrt(D.shape[1])
    Ztr, Zte = (Dtr - mu) / sd * c, (Dte - mu) / sd * c
    yc = y - y.mean()
    pres = Mtr.tocsc(copy=True)
    pres.data = (pres.data != 0).astype(float)
    pres.eliminate_zeros()
    r = np.asarray(pres.T @ yc).ravel() / (np.diff(pres.indptr) + 1.0)
    s2 = sp.diags((1 + ngram_scale * np.abs(r)) ** 2)
    K = (Mtr @ s2 @ Mtr.T).toarray() + Ztr @ Ztr.T
    Kte = (Mte @ s2 @ Mtr.T).toarray() + Zte @ Ztr.T
    K[np.diag_indices(len(tr))] += l2 if row_w is None else l2 / row_w     # weighted ridge: K + l2 W^-1
    return Kte @ np.linalg.solve(K, yc)


z = rank_scores


def fit_default(tr, te, pool, own, **kw):
    """The shipped default: own lengths (protocol C) or the pool's pooled normal scores (B)."""
    y = z(LM[tr, own]) if own is not None else z(LM[np.ix_(tr, pool)])
    ok = np.isfinite(y)
    return ridge(tr[ok], te, y[ok], **kw)


# ---------------------------------------------------------------- protocols
def dev_b(fit, seed=7):
    perm = np.random.default_rng(seed).permutation(len(DEV_J))
    folds = [[DEV_J[i] for i in perm[k::5]] for k in range(5)]
    res = []
    for tr, te in splits(len(P), seed):
        t = []
        for f in folds:
            s = fit(tr, te, [j for j in DEV_J if j not in f], None)
            t += [kendall_tau(s, LM[te, j]) for j in f]
        res.append(np.mean(t))
    return np.array(res)


def dev_c(fit, seed=7):
    return np.array([np.mean([kendall_tau(fit(tr, te, [k for k in DEV_J if k != j], j), LM[te, j]) for j in DEV_J])
                     for tr, te in splits(len(P), seed)])


def held_c(fit, seed=5):
    return np.array([np.mean([kendall_tau(fit(tr, te, DEV_J, j), LM[te, j]) for j in HELD_J])
                     for tr, te in splits(len(P), seed)])


def held_b(fit, seed=5):
    out = []
    for tr, te in splits(len(P), seed):
        s = fit(tr, te, DEV_J, None)
        out.append(np.mean([kendall_tau(s, LM[te, j]) for j in HELD_J]))
    return np.array(out)


PROTOCOLS = {"dev B": dev_b, "dev C": dev_c, "held C": held_c, "held B": held_b}


# ---------------------------------------------------------------- candidates
def own_pool(w=0.5, p=0.0, all_others=False):
    """C: target w * own normal scores + (1 - w) * the pool's (weights corr(own, model)^p on the
    training prompts; p = 0: equal; ``all_others``: the pool is the 23 other shipped models, what a
    model outside the table would get).  B: the default."""
    def fit(tr, te, pool, own):
        if all_others and own is not None:
            pool = [k for k in range(len(MODELS)) if k != own]
        zp = z(LM[np.ix_(tr, pool)])
        if own is None:
            return ridge(tr, te, zp)
        zo = z(LM[tr, own])
        if p:
            ok = np.isfinite(zo)
            cor = []
            for k in pool:
                zk = z(LM[tr, k])
                m = ok & np.isfinite(zk)
                cor.append(np.corrcoef(zo[m], zk[m])[0, 1])
            zp = z(LM[np.ix_(tr, pool)], np.clip(cor, 0.01, None) ** p)
        return ridge(tr, te, np.where(np.isfinite(zo), w * zo + (1 - w) * zp, zp))
    return fit


def residual(l2_res):
    """C: the pool's ridge plus a second ridge (penalty l2_res) on own minus pooled normal scores."""
    def fit(tr, te, pool, own):
        zp = z(LM[np.ix_(tr, pool)])
        if own is None:
            return ridge(tr, te, zp)
        zo = z(LM[tr, own])
        ok = np.isfinite(zo)
        return ridge(tr, te, zp) + ridge(tr[ok], te, (zo - zp)[ok], l2=l2_res)
    return fit


def words_and_chars(tr, te, pool, own):
    """C: target the mean of the normal scores of the own lengths in words and in characters."""
    if own is None:
        return fit_default(tr, te, pool, own)
    y = 0.5 * (z(LM[tr, own]) + z(LC[tr, own]))
    ok = np.isfinite(y)
    return ridge(tr[ok], te, y[ok])


def precision_rows(s2):
    """B: each training prompt weighted by 1 / (s2 + var of the pool's normal scores / models)."""
    def fit(tr, te, pool, own):
        if own is not None:
            return fit_default(tr, te, pool, own)
        Zm = np.column_stack([z(LM[tr, k]) for k in pool])
        v = np.nanvar(Zm, axis=1) / np.isfinite(Zm).sum(1)
        rw = 1.0 / (s2 + v)
        return ridge(tr, te, z(LM[np.ix_(tr, pool)]), row_w=rw / rw.mean())
    return fit


def _target(Ltr, kind):
    L2 = Ltr if Ltr.ndim == 2 else Ltr[:, None]
    U = np.full(L2.shape, np.nan)
    for j in range(L2.shape[1]):
        ok = np.isfinite(L2[:, j])
        if kind == "uniform":           # the percentile of the length within its model
            U[ok, j] = (rankdata(L2[ok, j]) - 0.5) / ok.sum()
        else:                            # z-scored log length
            x = np.log1p(L2[ok, j])
            U[ok, j] = (x - x.mean()) / x.std()
    return np.nanmean(U, axis=1)


def target(kind):
    def fit(tr, te, pool, own):
        y = _target(LM[tr, own] if own is not None else LM[np.ix_(tr, pool)], kind)
        ok = np.isfinite(y)
        return ridge(tr[ok], te, y[ok])
    return fit


_AUX = frozenset("is are can could do does did should would will was were has have am may might must shall".split())
_IMP = frozenset("write create explain describe give list generate make provide tell summarize summarise rewrite "
                 "translate classify compose draft design develop suggest name find identify compare discuss outline "
                 "plan help convert correct edit answer calculate solve define choose select analyze analyse imagine "
                 "pretend act recommend show build implement come please".split())
_TOK = re.compile(r"[a-z0-9']+")


def brief_cues(p: str) -> list:
    """The brief's cues not in cue set 2: yes/no question (auxiliary first, ends with '?'), auxiliary
    first, imperative first word, why, how-first, wh-first, code fences, log tokens, explain, step by step."""
    low = p.lower()
    t = _TOK.findall(low)
    t0 = t[0] if t else ""
    return [float(t0 in _AUX and low.rstrip().endswith("?")), float(t0 in _AUX), float(t0 in _IMP),
            float(t0 == "why" or " why " in f" {low} "), float(t0 == "how"),
            float(t0 in ("what", "which", "who", "where", "when")), float(np.log1p(low.count("```"))),
            float(np.log1p(len(t))), float("explain" in low), float("step by step" in low or "step-by-step" in low)]


_EXTRA = None


def extra_cues(tr, te, pool, own):
    global _EXTRA
    if _EXTRA is None:
        _EXTRA = np.array([brief_cues(p) for p in P])
    y = z(LM[tr, own]) if own is not None else z(LM[np.ix_(tr, pool)])
    ok = np.isfinite(y)
    return ridge(tr[ok], te, y[ok], dense_extra=_EXTRA)


def chars(key):
    return lambda tr, te, pool, own: fit_default(tr, te, pool, own, key=key)


_PAIR: dict = {}


def with_pairwise(wp):
    """Rank average: (1 - wp) x the default ridge + wp x PARS's pairwise hinge (seed 0) on the same
    features and the same own lengths (C only)."""
    def fit(tr, te, pool, own):
        k = (tr.tobytes(), te.tobytes(), own, tuple(pool))
        if k not in _PAIR:
            ok = tr[np.isfinite(LM[tr, own])]
            y = LM[ok, own]
            rk = LengthRanker.fit([P[i] for i in ok], y, method="pairwise", backbone=_Cached(), rng=0)
            _PAIR[k] = (fit_default(tr, te, pool, own), rk.score([P[i] for i in te]))
        a, b = _PAIR[k]
        return (1 - wp) * rankdata(a) + wp * rankdata(b)
    return fit


C_ONLY = ("dev C", "held C")        # candidates that change only the fit on a model's own lengths
B_ONLY = ("dev B", "held B")        # ... only the fit on pooled lengths
CANDIDATES = {                      # name -> (fit, the protocols where it differs from the default)
    "own+pool w=0.7": (own_pool(0.7), C_ONLY), "own+pool w=0.5": (own_pool(0.5), C_ONLY),
    "own+pool w=0.3": (own_pool(0.3), C_ONLY),
    "own+pool w=0.5, the 23 other models": (own_pool(0.5, all_others=True), ("held C",)),
    "own+pool w=0.5, corr^2 weights": (own_pool(0.5, 2), C_ONLY),
    "own+pool w=0.5, corr^4 weights": (own_pool(0.5, 4), C_ONLY),
    "pool ridge + own residual ridge, l2 2": (residual(2.0), C_ONLY),
    "pool ridge + own residual ridge, l2 5": (residual(5.0), C_ONLY),
    "target: words and chars": (words_and_chars, C_ONLY),
    "precision-weighted prompts s2=0.1": (precision_rows(0.1), B_ONLY),
    "precision-weighted prompts s2=0.3": (precision_rows(0.3), B_ONLY),
    "target: percentile within model": (target("uniform"), tuple(PROTOCOLS)),
    "target: z-scored log length": (target("logz"), tuple(PROTOCOLS)),
    "brief's extra cues (10 columns)": (extra_cues, tuple(PROTOCOLS)),
    "char 3-5-grams": (chars("c35"), tuple(PROTOCOLS)), "char 3-6-grams": (chars("c36"), tuple(PROTOCOLS)),
    "2**18 hash columns per block": (chars("b18"), tuple(PROTOCOLS)),
    "2**20 hash columns per block": (chars("b20"), tuple(PROTOCOLS)),
    "rank average with pairwise hinge, 0.25": (with_pairwise(0.25), C_ONLY),
    "rank average with pairwise hinge, 0.5": (with_pairwise(0.5), C_ONLY),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="candidate names separated by semicolons (see --list)")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(CANDIDATES))
        return
    names = list(CANDIDATES) if a.only is None else [n.strip() for n in a.only.split(";")]
    t0 = time.perf_counter()
    tr, te = splits(len(P), 5)[0]
    rk = LengthRanker.fit([P[i] for i in tr], LM[tr, 0])
    c = np.corrcoef(rk.score([P[i] for i in te]), fit_default(tr, te, None, 0))[0, 1]
    assert c > 1 - 1e-9, f"the replica ridge is not the shipped fit (correlation {c})"
    base = {k: f(fit_default) for k, f in PROTOCOLS.items()}
    f2 = lambda x: f"{x.mean():.3f} ± {x.std(ddof=1):.3f}"  # noqa: E731
    print("| candidate | " + " | ".join(PROTOCOLS) + " |\n|---|" + "---|" * len(PROTOCOLS))
    print("| the default | " + " | ".join(f2(base[k]) for k in PROTOCOLS) + " |", flush=True)
    for n in names:
        fit, where = CANDIDATES[n]
        r = {k: PROTOCOLS[k](fit) for k in where}
        print(f"| {n} | " + " | ".join(f"{f2(r[k])} ({(r[k] - base[k]).mean():+.4f} ± {(r[k] - base[k]).std(ddof=1):.4f})"
                                        if k in r else "= default" for k in PROTOCOLS) + " |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
