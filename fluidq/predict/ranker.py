"""The length ranker: a backbone and a linear scorer, fitted by one of two methods.

``LengthRanker.fit(prompts, lengths)`` fits, by default (``method="cues"``), a ridge regression of
the normal scores of the lengths' ranks on :class:`~fluidq.predict.LengthCues` features
(instruction cues, hashed word and character n-grams), the n-gram columns scaled by how the
training target goes with them (``ngram_scale``, since 2026-12-06).  Squared error on the ranks' normal scores
is pairwise-consistent: summed over all pairs, ``((s_i - s_j) - (z_i - z_j))**2`` is ``2n`` times the
centred squared error, so the fit is a least-squares pairwise ranker.  Lengths may be one column
per model (2-D): the target is then the mean over models of each model's normal scores (pooling).

``method="pairwise"`` is PARS's own training (the default before 2026-12): pairs from
:func:`fluidq.predict.make_pairs`, the mean margin ranking loss plus an L2 penalty, full-batch Adam,
over :class:`~fluidq.predict.HashedNgrams`.  Passing one of its parameters (``delta``, ``margin``...)
without ``method`` selects it, as before.

``score(prompts)`` returns one float per prompt, **higher = longer response**; a scheduler
sorts ascending (approximate shortest-job-first).  ``save``/``load`` use ``.npz`` with a JSON
header and never pickle.

References
----------
Tao et al., "PARS: Low-Latency LLM Serving via Pairwise Learning-to-Rank", arXiv:2510.03243.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._io import json_loads, read_bytes, write_output
from .._validate import array, integer, real
from .._version import __version__
from ..errors import DataError, ParameterError, ParameterTypeError
from .features import HashedNgrams, as_prompts
from .pairs import make_pairs, margin_ranking_loss

__all__ = ["LengthRanker", "backbone_from_dict", "RANKER_METHODS", "DEFAULT_METHOD"]

_FORMAT = "fluidq-length-ranker/1"

#: the fitting methods of :meth:`LengthRanker.fit`: ``"cues"`` (the default) and ``"pairwise"`` (PARS's)
RANKER_METHODS = ("cues", "pairwise")
DEFAULT_METHOD = "cues"
#: the default method's settings, chosen by 5-split cross-validation on the development models
#: (see docs/explanation/pars.md): ridge penalty and the cue block's weight
CUES_L2 = 0.7
CUES_CUE_WEIGHT = 4.0
#: the default method's supervised n-gram scaling (2026-12-06, issue 18): each sparse column k is
#: multiplied by ``1 + CUES_NGRAM_SCALE * |r_k|``, ``r_k`` the centred target summed over the training
#: prompts that contain k, divided by their number plus one (docs/explanation/pars.md)
CUES_NGRAM_SCALE = 1.0
#: above this many prompts the ridge is solved in the primal (LSQR) instead of an n x n system
_DUAL_MAX = 3000


def backbone_from_dict(d: dict):
    kind = d.get("backbone")
    if kind == "hashed-ngrams":
        return HashedNgrams(n_bits=int(d["n_bits"]), ngram_max=int(d["ngram_max"]))
    if kind == "length-cues":
        from .cues import LengthCues

        return LengthCues(n_bits=int(d["n_bits"]), word_weight=float(d["word_weight"]),
                          char_weight=float(d["char_weight"]), char_min=int(d["char_min"]),
                          char_max=int(d["char_max"]), cue_set=int(d.get("cue_set", 1)))
    if kind == "encoder":
        from .encoder import EncoderBackbone

        return EncoderBackbone.from_dict(d)
    raise DataError(f"unknown backbone {kind!r} in a saved ranker (known: length-cues, hashed-ngrams, encoder)")


def rank_scores(lengths, model_weights=None) -> np.ndarray:
    """Normal scores of the ranks, per column (ties share their mean rank; NaN stays NaN), then the
    mean over the columns that have a value, weighted by ``model_weights`` (one per column, > 0;
    default equal): the pooled target of the ``"cues"`` method."""
    from scipy.special import ndtri

    L = np.asarray(lengths, float)
    L2 = L[:, None] if L.ndim == 1 else L
    Z = np.full(L2.shape, np.nan)
    for j in range(L2.shape[1]):
        ok = np.isfinite(L2[:, j])
        if ok.sum():
            Z[ok, j] = ndtri((_mean_ranks(L2[ok, j]) - 0.5) / ok.sum())
    has = np.isfinite(Z).any(axis=1)
    w = np.ones(L2.shape[1]) if model_weights is None else np.asarray(model_weights, float)
    W = np.where(np.isfinite(Z), w[None, :], 0.0)
    out = np.full(L2.shape[0], np.nan)
    out[has] = (np.nan_to_num(Z[has]) * W[has]).sum(axis=1) / W[has].sum(axis=1)
    return out


def _mean_ranks(x) -> np.ndarray:
    """Ranks 1..n, ties sharing their mean rank (``scipy.stats.rankdata``, without importing scipy.stats)."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    new = np.r_[True, xs[1:] != xs[:-1]]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], xs.size]
    r = np.empty(xs.size)
    r[order] = ((starts + ends + 1) / 2.0)[np.cumsum(new) - 1]
    return r


def _lengths(lengths, n_prompts: int) -> np.ndarray:
    """Validated lengths: 1-D (one per prompt, finite) or 2-D (one row per prompt, one column per
    model, NaN where a model has no response)."""
    try:
        ndim = np.ndim(lengths)
    except ValueError:      # ragged nested lists
        ndim = 1
    if ndim == 2:
        try:
            L = np.asarray(lengths, dtype=float)
        except (TypeError, ValueError):
            raise ParameterTypeError("lengths: expected numbers, one row per prompt and one column per model") from None
        if L.shape[0] != n_prompts or L.shape[1] < 1:
            raise ParameterError("lengths", f"<shape {L.shape}>", f"one row per prompt ({n_prompts}) and at least "
                                 "one column (model)")
        if np.any(np.isinf(L)) or np.any(L[np.isfinite(L)] < 0):
            raise ParameterError("lengths", "<a negative or infinite length>", "lengths >= 0 (NaN: no response)")
        if not np.isfinite(L).any(axis=1).all():
            raise ParameterError("lengths", "<a prompt with no length>", "at least one length per prompt (row)")
        return L
    L = array("lengths", lengths, nonnegative=True, min_len=1)
    if L.size != n_prompts:
        raise ParameterError("lengths", f"<{L.size} values>", f"one length per prompt ({n_prompts})")
    return L


def _split(backbone, X):
    """(sparse-or-dense main block, dense tail to standardise)."""
    if isinstance(X, tuple):
        return X
    n_tail = len(getattr(backbone, "dense_names", ()))
    if n_tail == 0:
        return X, None
    if sp.issparse(X):
        X = X.tocsc()
        main, tail = X[:, :-n_tail].tocsr(), X[:, -n_tail:].toarray()
    else:
        main, tail = X[:, :-n_tail], X[:, -n_tail:]
    return main, tail


def _features(backbone, prompts):
    parts = getattr(backbone, "transform_parts", None)
    return parts(prompts) if parts is not None else backbone.transform(prompts)


@dataclass(frozen=True, kw_only=True, eq=False)
class LengthRanker:
    """A trained length ranker (use :meth:`fit` or :meth:`load`).

    Attributes
    ----------
    backbone : HashedNgrams or EncoderBackbone
        Text -> features.
    weights : ndarray
        Linear weights over the backbone's main features.
    tail_weights, tail_mean, tail_scale : ndarray
        Weights over the standardised dense length features.
    info : dict
        Training settings and diagnostics (pairs, final loss, seconds).
    """

    backbone: object
    weights: np.ndarray
    tail_weights: np.ndarray
    tail_mean: np.ndarray
    tail_scale: np.ndarray
    info: dict = field(default_factory=dict)

    @classmethod
    def fit(cls, prompts, lengths, *, method: str | None = None, backbone=None, l2: float | None = None,
            cue_weight: float | None = None, model_weights=None, ngram_scale: float | None = None,
            delta: float | None = None,
            pairs_per_prompt: int | None = None, max_attempts: int | None = None, margin: float | None = None, epochs: int | None = None,
            learning_rate: float | None = None, rng=None) -> "LengthRanker":
        """Train on ``prompts`` and their response ``lengths``.

        Parameters
        ----------
        prompts : sequence of str
        lengths : array_like
            Response lengths (any unit; only their order matters), one per prompt; or, for
            ``method="cues"``, a 2-D array with one column per model (NaN where a model has no
            response): each model's lengths are turned into normal scores of their ranks, which are
            averaged over the models (pooling).
        method : {"cues", "pairwise"} or None
            ``"cues"`` (the default): ridge regression of the ranks' normal scores on
            :class:`~fluidq.predict.LengthCues` features.  ``"pairwise"``: PARS's margin ranking
            loss on sampled pairs, by Adam, over :class:`~fluidq.predict.HashedNgrams`.  ``None``
            means ``"pairwise"`` when one of its own parameters (``delta``, ``pairs_per_prompt``,
            ``max_attempts``, ``margin``, ``epochs``, ``learning_rate``) is given, else ``"cues"``.
        backbone : optional
            Text -> features; default :class:`~fluidq.predict.LengthCues` ``()`` for ``"cues"``,
            :class:`~fluidq.predict.HashedNgrams` ``()`` for ``"pairwise"``.
        l2 : float
            L2 penalty (``>= 0``; ``"cues"``: the ridge penalty, default 0.7 (1.0 before 2026-12);
            ``"pairwise"``: 1e-4).
        cue_weight : float
            ``"cues"`` only: the norm of a typical standardised dense (cue) row against 1 for each
            n-gram block (default 4.0).
        ngram_scale : float
            ``"cues"`` only: supervised scaling of the sparse (n-gram) columns, ``>= 0`` (default 1.0;
            0 is the fit before 2026-12-06): column ``k`` is multiplied by ``1 + ngram_scale * |r_k|``,
            where ``r_k`` is the sum of the centred target over the training prompts containing ``k``
            divided by their number plus one, so n-grams that go with long or short answers in the
            training prompts weigh more in the ridge.  The scale is folded into :attr:`weights`: scoring
            and the saved format are unchanged.  A dense main block (an encoder) is not scaled.
        model_weights : array_like, optional
            ``"cues"`` with 2-D ``lengths`` only: one weight > 0 per column (model) in the pooled
            mean (default equal), e.g. ``[0.5, 0.05, ...]`` to give one model half the target.
        delta, pairs_per_prompt, max_attempts : ``"pairwise"`` only, see
            :func:`~fluidq.predict.make_pairs` (defaults 0.2, 10, 100).
        margin : float
            ``"pairwise"`` only: margin of the ranking loss (paper: 1.0).
        epochs, learning_rate : ``"pairwise"`` only: full-batch Adam steps (150) and step size (0.05).
        rng : Generator, int or None
            Seeds the pair sampling (``"pairwise"``; the ``"cues"`` fit is deterministic).
        """
        given = {k: v for k, v in (("delta", delta), ("pairs_per_prompt", pairs_per_prompt),
                                   ("max_attempts", max_attempts), ("margin", margin), ("epochs", epochs),
                                   ("learning_rate", learning_rate)) if v is not None}
        if method is None:
            method = "pairwise" if given else DEFAULT_METHOD
        if method not in RANKER_METHODS:
            from ..errors import UnknownNameError

            raise UnknownNameError("ranker method", method, RANKER_METHODS)
        if method == "cues":
            if given:
                k = next(iter(given))
                raise ParameterError(k, given[k], "not given with method='cues' (it is a parameter of the "
                                     "pairwise method)")
            return cls._fit_cues(prompts, lengths, backbone=backbone, l2=CUES_L2 if l2 is None else l2,
                                 cue_weight=CUES_CUE_WEIGHT if cue_weight is None else cue_weight,
                                 model_weights=model_weights,
                                 ngram_scale=CUES_NGRAM_SCALE if ngram_scale is None else ngram_scale)
        for k, v in (("cue_weight", cue_weight), ("model_weights", model_weights), ("ngram_scale", ngram_scale)):
            if v is not None:
                raise ParameterError(k, v, "not given with method='pairwise' (a parameter of the 'cues' method)")
        return cls._fit_pairwise(prompts, lengths, backbone=backbone,
                                 delta=0.2 if delta is None else delta,
                                 pairs_per_prompt=10 if pairs_per_prompt is None else pairs_per_prompt,
                                 max_attempts=100 if max_attempts is None else max_attempts,
                                 margin=1.0 if margin is None else margin, l2=1e-4 if l2 is None else l2,
                                 epochs=150 if epochs is None else epochs,
                                 learning_rate=0.05 if learning_rate is None else learning_rate, rng=rng)

    @classmethod
    def pretrained(cls, data: str = "alpaca_eval", *, unit: str = "words") -> "LengthRanker":
        """The default (``"cues"``) ranker fitted on every prompt of a shipped length table, the
        target pooled over all its models (the mean of each model's normal scores of the ranks).

        For ranking prompts when no lengths of the serving model are at hand.  Deterministic (the
        fit is a closed-form ridge; some 0.3 s on 805 prompts).  Its quality on *new* prompts is
        that of a ranker trained on pooled lengths of other models on other prompts: Kendall tau_b
        0.42 on AlpacaEval prompts and models it never saw (0.34-0.46 by model) (docs/explanation/pars.md,
        "Evaluation protocols").  On the table's own prompts it has seen every prompt: ranking an
        unseen model's lengths there (0.62-0.65) measures how much models agree on those prompts,
        not the ranker -- do not score a scheduler with it on these prompts.

        Parameters
        ----------
        data : str
            A built-in table (``"alpaca_eval"``, ``"gsm8k"``) or a JSONL path
            (:func:`~fluidq.predict.load_lengths`).
        unit : {"words", "chars"}
        """
        from .data import load_lengths

        ds = load_lengths(data, unit=unit)
        L = np.column_stack([ds.of(m) for m in ds.models])
        keep = np.isfinite(L).any(axis=1)
        rk = cls.fit([p for p, k in zip(ds.prompts, keep) if k], L[keep], method="cues")
        rk.info["pretrained"] = {"data": str(data), "unit": unit, "n_prompts": int(keep.sum()),
                                 "models": list(ds.models)}
        return rk

    @classmethod
    def _fit_cues(cls, prompts, lengths, *, backbone, l2, cue_weight, model_weights=None,
                  ngram_scale=0.0) -> "LengthRanker":
        """Ridge on the normal scores of the ranks (pooled over columns), the sparse columns scaled by
        how the target goes with them (``ngram_scale``); exact dual solve up to ``_DUAL_MAX`` prompts,
        LSQR in the primal beyond."""
        t0 = time.perf_counter()
        prompts = as_prompts(prompts)
        L = _lengths(lengths, len(prompts))
        l2 = real("l2", l2, nonnegative=True)
        cue_weight = real("cue_weight", cue_weight, nonnegative=True)
        ngram_scale = real("ngram_scale", ngram_scale, nonnegative=True)
        if len(prompts) < 2:
            raise ParameterError("prompts", f"<{len(prompts)} prompt>", "at least 2 prompts to rank")
        if model_weights is not None:
            if L.ndim != 2:
                raise ParameterError("model_weights", "<given>", "only with 2-D lengths (one column per model)")
            model_weights = array("model_weights", model_weights, positive=True)
            if model_weights.size != L.shape[1]:
                raise ParameterError("model_weights", f"<{model_weights.size} values>",
                                     f"one weight per column of lengths ({L.shape[1]})")
        y = rank_scores(L, model_weights)
        if np.ptp(y) == 0:
            Lf = L[np.isfinite(L)]
            raise DataError(f"no training pair differs in length: all {len(prompts)} prompts rank equal (lengths "
                            f"{Lf.min():g}..{Lf.max():g}); nothing to learn: use more varied data")
        if backbone is None:
            from .cues import LengthCues

            backbone = LengthCues()
        main, tail = _split(backbone, _features(backbone, prompts))
        n = len(prompts)
        if tail is not None and tail.shape[1]:
            mu = tail.mean(axis=0)
            sd = tail.std(axis=0)
            sd[sd == 0] = 1.0
            c = cue_weight / np.sqrt(tail.shape[1])
            Z = (tail - mu) / sd * c
        else:
            mu = sd = np.zeros(0)
            c = 0.0
            Z = np.zeros((n, 0))
        yc = y - y.mean()
        dense_main = not sp.issparse(main)
        col_scale = None
        if ngram_scale > 0 and not dense_main:
            # supervised scaling: r_k = (sum of yc over the prompts holding column k) / (their count + 1)
            present = main.tocsc(copy=True)
            present.data = (present.data != 0).astype(float)
            present.eliminate_zeros()
            r = np.asarray(present.T @ yc).ravel() / (np.diff(present.indptr) + 1.0)
            col_scale = 1.0 + ngram_scale * np.abs(r)
            main = (main @ sp.diags(col_scale)).tocsr()
        if n <= _DUAL_MAX:
            K = main @ main.T
            K = (K.toarray() if sp.issparse(K) else np.asarray(K)) + Z @ Z.T
            K[np.diag_indices(n)] += l2
            alpha = np.linalg.lstsq(K, yc, rcond=None)[0] if l2 == 0 else np.linalg.solve(K, yc)
            w = np.asarray(main.T @ alpha, dtype=float).ravel()
            v = c * (Z.T @ alpha)
            solver = "dual"
        else:
            from scipy.sparse.linalg import lsqr

            A = sp.hstack([sp.csr_matrix(main) if dense_main else main, sp.csr_matrix(Z)], format="csr")
            u = lsqr(A, yc, damp=float(np.sqrt(l2)), atol=1e-10, btol=1e-10, iter_lim=5000)[0]
            w, v = u[:main.shape[1]], c * u[main.shape[1]:]
            solver = "lsqr"
        s = np.asarray(main @ w, dtype=float).ravel() + (Z / c if c else Z) @ v
        if col_scale is not None:     # scores use the unscaled columns: fold the scale into the weights
            w = w * col_scale
        info = {"method": "cues", "target": "normal scores of the ranks" + (f", mean over {L.shape[1]} models"
                                                                            if L.ndim == 2 else ""),
                "n_prompts": n, "n_models": int(L.shape[1]) if L.ndim == 2 else 1, "l2": l2,
                **({"model_weights": model_weights.tolist()} if model_weights is not None else {}),
                "cue_weight": cue_weight, "ngram_scale": ngram_scale, "solver": solver,
                "train_rmse": float(np.sqrt(np.mean((s - s.mean() - yc) ** 2))),
                "fit_seconds": time.perf_counter() - t0, "fluidq_version": __version__}
        return cls(backbone=backbone, weights=w, tail_weights=np.asarray(v, float), tail_mean=mu, tail_scale=sd,
                   info=info)

    @classmethod
    def _fit_pairwise(cls, prompts, lengths, *, backbone, delta, pairs_per_prompt, max_attempts, margin, l2,
                      epochs, learning_rate, rng) -> "LengthRanker":
        """PARS's training: margin ranking loss on sampled pairs, full-batch Adam."""
        t0 = time.perf_counter()
        prompts = as_prompts(prompts)
        L = array("lengths", lengths, nonnegative=True, min_len=1)
        if L.size != len(prompts):
            raise ParameterError("lengths", f"<{L.size} values>", f"one length per prompt ({len(prompts)})")
        if len(prompts) < 2:
            raise ParameterError("prompts", f"<{len(prompts)} prompt>", "at least 2 prompts to form a pair")
        margin = real("margin", margin, nonnegative=True)
        l2 = real("l2", l2, nonnegative=True)
        epochs = integer("epochs", epochs, minimum=1)
        lr = real("learning_rate", learning_rate, positive=True)
        pairs = make_pairs(L, delta=delta, pairs_per_prompt=pairs_per_prompt, max_attempts=max_attempts, rng=rng)
        backbone = backbone if backbone is not None else HashedNgrams()
        main, tail = _split(backbone, _features(backbone, prompts))
        if tail is not None:
            mu = tail.mean(axis=0)
            sd = tail.std(axis=0)
            sd[sd == 0] = 1.0
            Z = (tail - mu) / sd
        else:
            mu = sd = np.zeros(0)
            Z = np.zeros((len(prompts), 0))
        w = np.zeros(main.shape[1])
        v = np.zeros(Z.shape[1])
        mt = [np.zeros_like(w), np.zeros_like(v)]
        vt = [np.zeros_like(w), np.zeros_like(v)]
        b1, b2, eps = 0.9, 0.999, 1e-8
        a, b, y = pairs.a, pairs.b, pairs.y
        n, npairs = len(prompts), len(pairs)
        mainT = main.T.tocsr() if sp.issparse(main) else main.T
        loss = np.nan
        for step in range(1, epochs + 1):
            s = main @ w + Z @ v
            viol = margin - y * (s[a] - s[b])
            act = viol > 0
            loss = float(np.maximum(viol, 0).mean())
            gs = np.bincount(a[act], weights=-y[act], minlength=n) + np.bincount(b[act], weights=y[act], minlength=n)
            gs = gs.astype(float) / npairs
            grads = [mainT @ gs + l2 * w, Z.T @ gs + l2 * v]
            for k, (p, g) in enumerate(zip((w, v), grads)):
                mt[k] = b1 * mt[k] + (1 - b1) * g
                vt[k] = b2 * vt[k] + (1 - b2) * g * g
                p -= lr * (mt[k] / (1 - b1 ** step)) / (np.sqrt(vt[k] / (1 - b2 ** step)) + eps)
        s = main @ w + Z @ v
        info = {"method": "pairwise", "n_prompts": n, "n_pairs": npairs, "delta": float(delta),
                "pairs_per_prompt": int(pairs_per_prompt),
                "max_attempts": int(max_attempts), "margin": margin, "l2": l2, "epochs": epochs,
                "learning_rate": lr, "final_loss": float(margin_ranking_loss(s[a], s[b], y, margin)),
                "last_step_loss": loss, "fit_seconds": time.perf_counter() - t0, "fluidq_version": __version__}
        return cls(backbone=backbone, weights=w, tail_weights=v, tail_mean=mu, tail_scale=sd, info=info)

    def score(self, prompts) -> np.ndarray:
        """Scores, higher = longer predicted response."""
        main, tail = _split(self.backbone, _features(self.backbone, prompts))
        s = np.asarray(main @ self.weights, dtype=float).ravel()
        if tail is not None and self.tail_weights.size:
            s = s + ((tail - self.tail_mean) / self.tail_scale) @ self.tail_weights
        return s

    __call__ = score

    def to_dict(self) -> dict:
        return {"format": _FORMAT, "backbone": self.backbone.to_dict(), "info": dict(self.info),
                "nonzero_weights": int(np.count_nonzero(self.weights))}

    def save(self, path) -> str:
        """Write ``path`` (``.npz``: sparse weights + JSON header; no pickle).

        The archive is built in memory and put in place by a temporary file and a rename: a crash
        leaves the old file or the new one, and a symlink at ``path`` is replaced, not followed.  A file
        system that refuses the write is a ``DataError`` naming ``path`` (not the temporary file).
        """
        import io

        path = Path(path)
        nz = np.flatnonzero(self.weights)
        header = json.dumps({"format": _FORMAT, "backbone": self.backbone.to_dict(), "info": self.info,
                             "n_weights": int(self.weights.size)})
        buf = io.BytesIO()
        np.savez_compressed(buf, header=np.array(header), w_index=nz.astype(np.int64),
                            w_value=self.weights[nz], tail_weights=self.tail_weights,
                            tail_mean=self.tail_mean, tail_scale=self.tail_scale)
        return write_output(path, buf.getvalue(), what="ranker file")

    @classmethod
    def load(cls, path) -> "LengthRanker":
        """Read a ranker written by :meth:`save`.

        Only a regular file is read (a FIFO or a device is refused: it could block forever), and
        never with pickle.  Anything else than what :meth:`save` writes (random bytes, a zip that
        is not an ``.npz``, missing arrays, object arrays, weights that do not fit the backbone) is a
        :class:`~fluidq.errors.DataError` naming the file.
        """
        import io
        import zipfile
        import zlib

        raw = read_bytes("ranker file", path, what="saved ranker", gunzip=False)

        def bad(why: str) -> DataError:
            return DataError(f"{path}: not a saved fluidq length ranker ({why})")

        unreadable = (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile, zlib.error,
                      NotImplementedError, RuntimeError)
        if raw.startswith(b"\x93NUMPY"):
            raise bad("a single NumPy array, not an .npz archive")
        if not raw.startswith(b"PK"):
            raise bad("not a NumPy .npz archive, which is a zip file" + ("; the file is empty" if not raw else ""))
        try:
            z = np.load(io.BytesIO(raw), allow_pickle=False)
        except unreadable as exc:
            raise bad(f"not a NumPy .npz archive: {_first_line(exc)}") from None
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise bad("a single NumPy array, not an .npz archive")
        need = ("header", "w_index", "w_value", "tail_weights", "tail_mean", "tail_scale")
        with z:
            missing = [k for k in need if k not in z.files]
            if missing:
                raise bad(f"no array {', '.join(missing)}")
            try:
                arr = {k: z[k] for k in need}
            except unreadable as exc:
                raise bad(f"an unreadable array: {_first_line(exc)}") from None
        h = arr["header"]
        if h.ndim != 0 or h.dtype.kind != "U":
            raise bad("the header is not a text")
        header = json_loads(str(h), where=f"{path}: the header")
        if not isinstance(header, dict):
            raise bad("the header is not a JSON object")
        if header.get("format") != _FORMAT:
            raise DataError(f"{path}: not a fluidq length ranker (format {header.get('format')!r})")
        try:
            n = integer("n_weights", header.get("n_weights"), minimum=0, maximum=1 << 26,
                        why="the hashed n-gram backbone has at most 2**26 columns")
        except (ParameterError, ParameterTypeError) as exc:
            raise bad(f"header {exc}") from None
        d = header.get("backbone")
        if not isinstance(d, dict):
            raise bad("the header has no backbone object")
        try:
            backbone = backbone_from_dict(d)
        except (ParameterError, ParameterTypeError, KeyError, TypeError, ValueError) as exc:
            raise bad(f"its backbone {_first_line(exc)}") from None
        width = getattr(backbone, "n_sparse", None)
        if width is not None and n != width:
            raise bad(f"{n} weights for a backbone of {width} columns")
        idx, val = arr["w_index"], arr["w_value"]
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or val.ndim != 1 or val.dtype.kind != "f" or idx.size != val.size:
            raise bad("w_index and w_value are not matching integer and float vectors")
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise bad(f"a weight index outside 0..{n - 1}")
        tails = [arr[k] for k in ("tail_weights", "tail_mean", "tail_scale")]
        k_tail = len(getattr(backbone, "dense_names", ()))
        for t in tails:
            if t.ndim != 1 or t.dtype.kind != "f" or t.size not in (0, k_tail) or t.size != tails[0].size:
                raise bad(f"the tail arrays are not float vectors of length {k_tail} (or 0)")
        if not all(np.all(np.isfinite(a)) for a in (val, *tails)):
            raise bad("a weight that is not finite")
        if np.any(tails[2] <= 0):
            raise bad("a tail scale <= 0")
        info = header.get("info", {})
        if not isinstance(info, dict):
            raise bad("the header's info is not an object")
        w = np.zeros(n)
        w[idx] = val
        return cls(backbone=backbone, weights=w, tail_weights=tails[0].astype(float),
                   tail_mean=tails[1].astype(float), tail_scale=tails[2].astype(float), info=info)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__
