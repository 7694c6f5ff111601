"""Baseline length rankers beside PARS's pairwise one: pointwise, bucket, listwise.

Each fits a linear score over the same backbone features as :class:`LengthRanker` (hashed
n-grams plus standardised dense length cues) and returns a :class:`LengthRanker`, so it scores,
saves and schedules the same way; only the training loss differs:

``"pointwise"``  squared error on the standardised ``log(1 + length)``: length regression, so a
                 scheduler on its score is SJF on the predicted length (the approach of
                 output-length predictors such as S3, arXiv:2306.06000);
``"bucket"``     ordinal classification into ``n_buckets`` quantile buckets of the length
                 (cumulative-logit: ``P(bucket > k) = sigmoid(s - theta_k)``, learned thresholds),
                 the bucket classifiers of e.g. "Response Length Perception", arXiv:2305.13144;
``"listwise"``   ListNet's top-one cross entropy (Cao et al., "Learning to Rank: From Pairwise
                 Approach to Listwise Approach", ICML 2007) over random lists of ``list_size``
                 prompts, the target being the softmax of the standardised log lengths.

:func:`tau_over_splits` reports Kendall tau_b as a mean with a Student-t interval over seeded
train/test splits, for any of these, for PARS's pairwise ranker (``"pairwise"``) and for the
default ranker (``"cues"``).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._validate import array, integer, real
from ..errors import ParameterError, UnknownNameError
from .features import HashedNgrams, as_prompts

__all__ = ["BASELINES", "fit_baseline", "tau_over_splits"]

BASELINES = ("pointwise", "bucket", "listwise")


def _sigmoid(x):
    return 0.5 * (1 + np.tanh(0.5 * x))


def fit_baseline(kind: str, prompts, lengths, *, backbone=None, n_buckets: int = 5, list_size: int = 10,
                 n_lists: int | None = None, l2: float = 1e-4, epochs: int = 150, learning_rate: float = 0.05,
                 rng=None):
    """Fit the ``kind`` baseline (one of :data:`BASELINES`) and return a :class:`LengthRanker`.

    ``n_buckets`` (>= 2) is for ``"bucket"``; ``list_size`` (>= 2) and ``n_lists`` (default: 10
    lists per prompt / list_size x 10) for ``"listwise"``.  Scores are higher for longer responses.
    """
    from .ranker import LengthRanker, _features, _split

    if kind not in BASELINES:
        raise UnknownNameError("baseline ranker", kind, BASELINES)
    t0 = time.perf_counter()
    prompts = as_prompts(prompts)
    L = array("lengths", lengths, nonnegative=True, min_len=2)
    if L.size != len(prompts):
        raise ParameterError("lengths", f"<{L.size} values>", f"one length per prompt ({len(prompts)})")
    n_buckets = integer("n_buckets", n_buckets, minimum=2)
    list_size = integer("list_size", list_size, minimum=2)
    l2 = real("l2", l2, nonnegative=True)
    epochs = integer("epochs", epochs, minimum=1)
    lr = real("learning_rate", learning_rate, positive=True)
    g = np.random.default_rng(rng)
    n = len(prompts)
    if list_size > n:
        raise ParameterError("list_size", list_size, f"at most the number of prompts ({n})")
    n_lists = integer("n_lists", 10 * math.ceil(n / list_size) if n_lists is None else n_lists, minimum=1)
    backbone = backbone if backbone is not None else HashedNgrams()
    main, tail = _split(backbone, _features(backbone, prompts))
    if tail is not None:
        mu, sd = tail.mean(axis=0), tail.std(axis=0)
        sd[sd == 0] = 1.0
        Z = (tail - mu) / sd
    else:
        mu = sd = np.zeros(0)
        Z = np.zeros((n, 0))
    y = np.log1p(L)
    y = (y - y.mean()) / (y.std() or 1.0)
    if kind == "bucket":
        edges = np.quantile(L, np.arange(1, n_buckets) / n_buckets)
        above = (L[:, None] > edges[None, :]).astype(float)      # n x (K-1): bucket > k
        theta = np.linspace(-1, 1, n_buckets - 1)
    else:
        theta = np.zeros(0)
    if kind == "listwise":
        lists = np.stack([g.choice(n, list_size, replace=False) for _ in range(n_lists)])
        tgt = np.exp(y[lists] - y[lists].max(axis=1, keepdims=True))
        tgt /= tgt.sum(axis=1, keepdims=True)

    def grads(s):
        """(d loss / d score per prompt, d loss / d theta)."""
        if kind == "pointwise":
            return (s - y) / n, np.zeros(0)
        if kind == "bucket":
            r = _sigmoid(s[:, None] - theta[None, :]) - above
            return r.sum(axis=1) / n, -r.sum(axis=0) / n
        sl = s[lists]
        p = np.exp(sl - sl.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        gs = np.bincount(lists.ravel(), weights=(p - tgt).ravel(), minlength=n) / n_lists
        return gs, np.zeros(0)

    params = [np.zeros(main.shape[1]), np.zeros(Z.shape[1]), np.zeros(1), theta]
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    mainT = main.T.tocsr() if hasattr(main, "tocsr") else main.T
    for step in range(1, epochs + 1):
        s = main @ params[0] + Z @ params[1] + params[2][0]
        gs, gt = grads(np.asarray(s, float).ravel())
        gr = [mainT @ gs + l2 * params[0], Z.T @ gs + l2 * params[1], np.array([gs.sum()]), gt]
        for k, (p, gk) in enumerate(zip(params, gr)):
            m1[k] = 0.9 * m1[k] + 0.1 * gk
            m2[k] = 0.999 * m2[k] + 0.001 * gk * gk
            p -= lr * (m1[k] / (1 - 0.9 ** step)) / (np.sqrt(m2[k] / (1 - 0.999 ** step)) + 1e-8)
    info = {"loss": kind, "n_prompts": n, "l2": l2, "epochs": epochs, "learning_rate": lr,
            "fit_seconds": time.perf_counter() - t0}
    if kind == "bucket":
        info["n_buckets"] = n_buckets
    if kind == "listwise":
        info.update(list_size=list_size, n_lists=n_lists)
    # the bias does not change a ranking: the returned scorer is the linear part
    return LengthRanker(backbone=backbone, weights=params[0], tail_weights=params[1], tail_mean=mu, tail_scale=sd,
                        info=info)


def tau_over_splits(prompts, lengths, kind: str = "pairwise", *, n_splits: int = 5, test_fraction: float = 0.25,
                    confidence: float = 0.95, rng=0, score_lengths=None, **fit_kw) -> dict:
    """Kendall tau_b of a ranker on held-out prompts over ``n_splits`` seeded splits.

    ``kind`` is ``"pairwise"`` (PARS's training, ``LengthRanker.fit(method="pairwise")``),
    ``"cues"`` (the default ranker, ``method="cues"``), one of :data:`BASELINES`, or ``"random"``
    (random scores: the floor a ranker must beat).  ``lengths`` may be 2-D (one column per model)
    for ``"cues"`` only; tau_b is then taken against ``score_lengths`` (1-D, required), so that
    training may pool several models while the score is on one.  Returns ``{"kind", "tau_b"
    (per split), "mean", "sd", "half_width", "n_splits", "n_test"}``.
    """
    from scipy import stats

    from .evaluate import kendall_tau
    from .ranker import LengthRanker

    kinds = ("cues", "pairwise", "random") + BASELINES
    if kind not in kinds:
        raise UnknownNameError("ranker kind", kind, kinds)
    n_splits = integer("n_splits", n_splits, minimum=2)
    test_fraction = real("test_fraction", test_fraction, positive=True)
    if test_fraction >= 1:
        raise ParameterError("test_fraction", test_fraction, "a fraction in (0, 1)")
    prompts = as_prompts(prompts)
    if np.ndim(lengths) == 2:
        from .ranker import _lengths

        if kind != "cues":
            raise ParameterError("lengths", "<a 2-D array>", "one length per prompt (1-D): only kind='cues' pools "
                                 "several models")
        if score_lengths is None:
            raise ParameterError("score_lengths", None, "the 1-D lengths to score against when lengths is 2-D")
        train_L = _lengths(lengths, len(prompts))
        L = array("score_lengths", score_lengths, min_len=4)
    else:
        if score_lengths is not None:
            raise ParameterError("score_lengths", "<given>", "only with 2-D lengths (pooled training)")
        L = train_L = array("lengths", lengths, nonnegative=True, min_len=4)
    if L.size != len(prompts):
        raise ParameterError("lengths", f"<{L.size} values>", f"one length per prompt ({len(prompts)})")
    ss = np.random.SeedSequence(rng)
    taus, n_test = [], 0
    for child in ss.spawn(n_splits):
        g = np.random.default_rng(child)
        perm = g.permutation(L.size)
        k = max(2, int(round(test_fraction * L.size)))
        te, tr = perm[:k], perm[k:]
        n_test = te.size
        if kind == "random":
            s = g.random(te.size)
        else:
            if train_L.ndim == 2:   # pooled: prompts no training model answered are left out
                tr = tr[np.isfinite(train_L[tr]).any(axis=1)]
            P = [prompts[i] for i in tr]
            rk = (LengthRanker.fit(P, train_L[tr], method=kind, rng=g, **fit_kw) if kind in ("pairwise", "cues")
                  else fit_baseline(kind, P, L[tr], rng=g, **fit_kw))
            s = rk.score([prompts[i] for i in te])
        taus.append(kendall_tau(s, L[te]))
    t = np.asarray(taus)
    sd = float(t.std(ddof=1))
    h = float(stats.t.ppf(0.5 + confidence / 2, t.size - 1) * sd / math.sqrt(t.size))
    return {"kind": kind, "tau_b": t.tolist(), "mean": float(t.mean()), "sd": sd, "half_width": h,
            "n_splits": n_splits, "n_test": int(n_test)}
