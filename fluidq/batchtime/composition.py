"""A batch time that reads the batch's composition: the operator-profile iteration model as a ``BatchTime``.

``Composition(model=IterationModel)`` answers the usual ``t(b)`` / ``t(b, kv)`` (so every analysis
that needs a function of batch tokens can use it) and, for the simulator's kernel, the time of a
batch given what is in it: :meth:`Composition.composition_time` takes the prefill chunks with the
context each already has and the contexts of the decoding requests (attention cost grows with
them, linear layers with the tokens).  The kernel calls it whenever a batch time offers it.

``t(b)`` is one prefill chunk of ``b`` tokens with no prior context; ``t(b, kv)`` is ``b`` decoding
requests that read ``kv`` cached tokens between them (mean context ``kv / b``).  ``t(b)`` counts no
decode cost (no KV read, one LM-head row), so at a vLLM engine's capacity operating point it is a lower
bound on the iteration time: 0.50-0.83 of the flow-balance iteration and 0.60-0.80 of the simulated one
on the shipped LLMServingSim folders (tests/validation/test_deployment_tb_bound.py), and a load or
capacity from ``b / t(b)`` overstates what the engine serves; the flow-balance capacity
(:func:`fluidq.validate.predict.predict_capacity`, ``fluidq capacity --profile-dir``) is the basis.  ``to_dict`` names
the model; it cannot be read back from a dict (the model is built from its operator profiles).
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import ParameterError
from .models import BatchTime, _out, _tokens

__all__ = ["Composition"]


@functools.cache
def takes_bound(cls) -> bool:
    """Whether ``cls.kernel_table`` takes ``max_batch_tokens`` (read once per class)."""
    f = getattr(cls, "kernel_table", None)
    try:
        return callable(f) and "max_batch_tokens" in inspect.signature(f).parameters
    except (TypeError, ValueError):  # (a callable without a signature)
        return False


@dataclass(frozen=True, kw_only=True)
class Composition(BatchTime):
    """Seconds per iteration from the batch composition (an operator-profile iteration model).

    Parameters
    ----------
    model : IterationModel
        Anything with ``time(prefill_chunks, decode_contexts) -> seconds`` and a vectorised
        ``time_shape(prefill_tokens, kv_prefill, n_decode, kv_decode)``, e.g.
        :func:`fluidq.batchtime.operators.lss_iteration_model`.
    """

    kind: ClassVar[str] = "composition"
    model: object = field(compare=True)

    def __post_init__(self):
        if not (callable(getattr(self.model, "time", None)) and callable(getattr(self.model, "time_shape", None))):
            raise ParameterError("model", self.model, "an iteration model with time() and time_shape() "
                                 "(fluidq.batchtime.operators.lss_iteration_model or vidur_iteration_model)")

    def _eval(self, b):
        return np.asarray(self.model.time_shape(b, 0.0, 0.0, 0.0), dtype=float)

    def __call__(self, tokens, kv_tokens=None):
        b = _tokens(tokens)
        if kv_tokens is None:
            return _out(self._eval(b), tokens)
        kv = np.asarray(kv_tokens, dtype=float)
        if kv.size and (not np.all(np.isfinite(kv)) or np.any(kv < 0)):
            raise ParameterError("kv_tokens", kv_tokens, "finite KV token counts >= 0")
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(b > 0, kv / np.maximum(b, 1), 0.0)
        return _out(np.asarray(self.model.time_shape(0.0, 0.0, b, mean), dtype=float), tokens)

    def composition_time(self, prefill_chunks, decode_contexts) -> float:
        """Seconds for one batch: ``prefill_chunks`` is a sequence of ``(chunk_tokens, prior_context)``,
        ``decode_contexts`` the cached tokens each decoding request reads."""
        return float(self.model.time(prefill_chunks, decode_contexts))

    def kernel_table(self, max_batch_tokens=None):
        """The model's tables as one flat array for the compiled kernel (``IterationModel.kernel_table``), or
        ``None`` when the model offers none (then the simulation runs on the generic path).
        ``max_batch_tokens`` (an engine's token budget) bounds the batches the table must cover: a model whose
        terms depend on the batch size (tensor/pipeline parallel communication, MoE experts) tabulates them up
        to it and offers no table without it."""
        f = getattr(self.model, "kernel_table", None)
        if not callable(f):
            return None
        if max_batch_tokens is not None and takes_bound(type(self.model)):
            return f(max_batch_tokens=max_batch_tokens)
        return f()

    @property
    def params(self) -> dict:
        return {"model": getattr(self.model, "name", type(self.model).__name__),
                "source": getattr(self.model, "source", "")}

    def describe(self) -> str:
        return f"operator-profile iteration model {self.params['model']} (reads the batch composition)"
