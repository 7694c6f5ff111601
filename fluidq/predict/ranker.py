"""The PARS length ranker: a backbone and a linear scorer trained on the pairwise hinge.

``LengthRanker.fit(prompts, lengths)`` builds PARS pairs (:func:`fluidq.predict.make_pairs`),
and minimises the mean margin ranking loss plus an L2 penalty by full-batch Adam over the linear
weights.  ``score(prompts)`` returns one float per prompt, **higher = longer response**; a scheduler
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

from .._io import atomic_write, json_loads, read_bytes
from .._validate import array, integer, real
from .._version import __version__
from ..errors import DataError, ParameterError, ParameterTypeError
from .features import HashedNgrams, as_prompts
from .pairs import make_pairs, margin_ranking_loss

__all__ = ["LengthRanker", "backbone_from_dict"]

_FORMAT = "fluidq-length-ranker/1"


def backbone_from_dict(d: dict):
    kind = d.get("backbone")
    if kind == "hashed-ngrams":
        return HashedNgrams(n_bits=int(d["n_bits"]), ngram_max=int(d["ngram_max"]))
    if kind == "encoder":
        from .encoder import EncoderBackbone

        return EncoderBackbone.from_dict(d)
    raise DataError(f"unknown backbone {kind!r} in a saved ranker (known: hashed-ngrams, encoder)")


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
    def fit(cls, prompts, lengths, *, backbone=None, delta: float = 0.2, pairs_per_prompt: int = 10,
            max_attempts: int = 100, margin: float = 1.0, l2: float = 1e-4, epochs: int = 150,
            learning_rate: float = 0.05, rng=None) -> "LengthRanker":
        """Train on ``prompts`` and their response ``lengths``.

        Parameters
        ----------
        prompts : sequence of str
        lengths : array_like
            Response lengths (any unit; only their order matters), one per prompt.
        backbone : optional
            Default :class:`~fluidq.predict.HashedNgrams` ``()``.
        delta, pairs_per_prompt, max_attempts : see :func:`~fluidq.predict.make_pairs`.
        margin : float
            Margin of the ranking loss (paper: 1.0).
        l2 : float
            L2 penalty on the weights (``>= 0``).
        epochs : int
            Full-batch Adam steps.
        learning_rate : float
            Adam step size.
        rng : Generator, int or None
            Seeds the pair sampling.
        """
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
        info = {"n_prompts": n, "n_pairs": npairs, "delta": float(delta), "pairs_per_prompt": int(pairs_per_prompt),
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
        leaves the old file or the new one, and a symlink at ``path`` is replaced, not followed.
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
        atomic_write(path, buf.getvalue())
        return str(path)

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
