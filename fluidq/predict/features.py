"""Backbones: prompt text -> feature matrix.

The default :class:`HashedNgrams` needs no download and no torch: lower-cased word uni- and
bi-grams hashed into ``2**n_bits`` columns (sub-linear term frequency, rows L2-normalised) plus a few
dense length features (log words, log characters, log lines, question marks, digits).  Word hashes
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
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

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

    def _word_hashes(self, words):
        cache = self._cache
        if len(cache) > 2_000_000:
            cache.clear()
        out = []
        for w in words:
            h = cache.get(w)
            if h is None:
                h = zlib.crc32(w.encode("utf-8"))
                cache[w] = h
            out.append(h)
        return out

    def transform(self, prompts) -> sp.csr_matrix:
        """The ``(n, n_features)`` CSR matrix of ``prompts``."""
        prompts = as_prompts(prompts)
        mask = np.int64(self.n_sparse - 1)
        hashes, owners, dense = [], [], np.empty((len(prompts), len(_DENSE_NAMES)))
        for i, text in enumerate(prompts):
            low = text.lower()
            toks = _TOKEN.findall(low)
            h = np.asarray(self._word_hashes(toks), dtype=np.int64)
            parts = [h & mask]
            if self.ngram_max >= 2 and h.size > 1:
                parts.append(((h[:-1] * np.int64(1_000_003) + h[1:] + np.int64(0x9E3779B1)) % np.int64(2**31)) & mask)
            hh = np.concatenate(parts) if len(parts) > 1 else parts[0]
            hashes.append(hh)
            owners.append(np.full(hh.size, i, dtype=np.int64))
            n_words = sum(1 for t in toks if t[0].isalnum())
            n_chars = len(text)
            dense[i] = (np.log1p(n_words), np.log1p(n_chars), np.log1p(text.count("\n")), min(text.count("?"), 5),
                        sum(c.isdigit() for c in text) / max(n_chars, 1), np.log1p(len(toks[0]) if toks else 0))
        cols = np.concatenate(hashes) if hashes else np.zeros(0, np.int64)
        rows = np.concatenate(owners) if owners else np.zeros(0, np.int64)
        m = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(prompts), self.n_sparse))
        m.sum_duplicates()
        m.data = np.log1p(m.data)
        norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        m = sp.diags(1.0 / norms) @ m
        return sp.hstack([m, sp.csr_matrix(dense)], format="csr")

    def to_dict(self) -> dict:
        return {"backbone": self.name, "n_bits": self.n_bits, "ngram_max": self.ngram_max}
