"""Backbones: prompt text -> feature matrix.

The default :class:`HashedNgrams` needs no download and no torch: lower-cased word uni- and
bi-grams hashed into ``2**n_bits`` columns (sub-linear term frequency, rows L2-normalised) plus a few
dense length features (log whitespace words, log characters, log lines, question marks, digit share,
log length of the first token).  Word hashes
are CRC-32 (stable across processes, unlike Python's ``hash``) and cached; bigram hashes are
combined arithmetically in numpy, so featurising 10^4 prompts takes a fraction of a second.

An optional transformer encoder lives in :mod:`fluidq.predict.encoder` (extra ``[encoder]``).
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validate import integer
from ..errors import ParameterError, ParameterTypeError

__all__ = ["HashedNgrams", "as_prompts"]


class _HashCache(dict):
    """word -> CRC-32, filled on first use (``map(cache.__getitem__, words)`` stays in C for hits)."""

    def __missing__(self, w):
        h = self[w] = zlib.crc32(w.encode("utf-8"))
        return h

_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_DENSE_NAMES = ("log_words", "log_chars", "log_lines", "questions", "digits_frac", "imperative_len")


def as_prompts(prompts, name: str = "prompts") -> list[str]:
    """Validate a non-empty sequence of strings."""
    if isinstance(prompts, str):
        raise ParameterTypeError(f"{name}={prompts[:40]!r}...: expected a sequence of strings, got one string")
    try:
        out = list(prompts)
    except TypeError as exc:
        raise ParameterTypeError(f"{name}: expected a sequence of strings, got {type(prompts).__name__}") from exc
    if not out:
        raise ParameterError(name, "[]", "at least one prompt")
    for i, p in enumerate(out):
        if not isinstance(p, str):
            raise ParameterTypeError(f"{name}[{i}]={p!r}: expected a string, got {type(p).__name__}")
    return out


@dataclass(frozen=True, kw_only=True, eq=False)
class HashedNgrams:
    """Hashed word n-grams and length features.

    Parameters
    ----------
    n_bits : int
        ``2**n_bits`` hash columns (default 16).
    ngram_max : int
        Longest n-gram, 1 or 2 (default 2).
    """

    n_bits: int = 16
    ngram_max: int = 2
    _cache: dict = field(default_factory=_HashCache, repr=False, compare=False)

    name = "hashed-ngrams"

    def __post_init__(self):
        object.__setattr__(self, "n_bits", integer("n_bits", self.n_bits, minimum=4))
        if self.n_bits > 26:
            raise ParameterError("n_bits", self.n_bits, "an integer in 4..26")
        object.__setattr__(self, "ngram_max", integer("ngram_max", self.ngram_max, minimum=1))
        if self.ngram_max > 2:
            raise ParameterError("ngram_max", self.ngram_max, "1 or 2")

    @property
    def n_sparse(self) -> int:
        return 1 << self.n_bits

    @property
    def n_features(self) -> int:
        return self.n_sparse + len(_DENSE_NAMES)

    @property
    def dense_names(self) -> tuple:
        return _DENSE_NAMES

    def transform(self, prompts) -> sp.csr_matrix:
        """The ``(n, n_features)`` CSR matrix of ``prompts`` (hashed n-grams, then the dense columns)."""
        m, dense = self.transform_parts(prompts)
        return sp.hstack([m, sp.csr_matrix(dense)], format="csr")

    def transform_parts(self, prompts):
        """``(sparse n-gram block, dense length features)`` of ``prompts``."""
        prompts = as_prompts(prompts)
        n = len(prompts)
        mask = np.int64(self.n_sparse - 1)
        cache = self._cache
        if len(cache) > 2_000_000:
            cache.clear()
        findall = _TOKEN.findall
        get = cache.__getitem__
        flat: list = []
        counts = np.empty(n, dtype=np.int64)
        rows_raw = []
        for i, text in enumerate(prompts):
            toks = findall(text.lower())
            flat.extend(map(get, toks))
            counts[i] = len(toks)
            rows_raw.append((len(text.split()), len(text), text.count("\n"), text.count("?"),
                             sum(map(text.count, "0123456789")), len(toks[0]) if toks else 0))
        raw = np.array(rows_raw, dtype=float).reshape(n, 6)
        dense = np.column_stack([np.log1p(raw[:, 0]), np.log1p(raw[:, 1]), np.log1p(raw[:, 2]),
                                 np.minimum(raw[:, 3], 5), raw[:, 4] / np.maximum(raw[:, 1], 1), np.log1p(raw[:, 5])])
        h = np.asarray(flat, dtype=np.int64)
        owner = np.repeat(np.arange(n, dtype=np.int64), counts)
        cols = [h & mask]
        rows = [owner]
        if self.ngram_max >= 2 and h.size > 1:
            same = owner[1:] == owner[:-1]                      # bigrams never cross two prompts
            bi = ((h[:-1] * np.int64(1_000_003) + h[1:] + np.int64(0x9E3779B1)) % np.int64(2**31)) & mask
            cols.append(bi[same])
            rows.append(owner[:-1][same])
        cols = np.concatenate(cols)
        rows = np.concatenate(rows)
        m = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(n, self.n_sparse))
        m.sum_duplicates()
        m.data = np.log1p(m.data)
        norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        m = sp.diags(1.0 / norms) @ m
        return m.tocsr(), dense

    def to_dict(self) -> dict:
        return {"backbone": self.name, "n_bits": self.n_bits, "ngram_max": self.ngram_max}
