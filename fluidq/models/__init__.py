"""Model facts: the shapes of open LLMs, their sizes, and vLLM's KV-cache capacity from them.

* :class:`ModelFacts` -- layers, widths, heads, experts, number format; derived parameter counts
  (MoE: total and active), weight bytes, KV bytes per token, and both per GPU under tensor and
  expert parallelism.  ``ModelFacts.from_config(path)`` reads a Hugging Face ``config.json``
  (a local file; nothing is downloaded).
* ``load_model(name)`` / ``list_models()`` -- a shipped table (``facts.json``, provenance in
  ``PROVENANCE.md``) of the models in the shared data and common open families.
* :func:`kv_capacity_estimate` -- vLLM's memory planner, estimated: GPU memory x utilization -
  weights per GPU - activation reserve, divided by KV bytes per token per GPU, floored to blocks.

>>> m = load_model("Llama-3.1-8B")
>>> m.param_count, m.kv_bytes_per_token()
(8030261248, 131072)
"""
from __future__ import annotations

from importlib import resources

from ..errors import DataError, ParameterError, UnknownNameError
from .facts import DTYPE_BYTES, ModelFacts
from .memory import KVCapacityEstimate, activation_reserve_bytes, kv_capacity_estimate

__all__ = ["ModelFacts", "KVCapacityEstimate", "kv_capacity_estimate", "activation_reserve_bytes", "find_model", "load_model",
           "list_models", "DTYPE_BYTES"]

_CACHE: dict[str, ModelFacts] = {}


def _table() -> dict[str, ModelFacts]:
    if not _CACHE:
        import json

        raw = resources.files(__name__).joinpath("facts.json").read_text()
        for row in json.loads(raw):
            m = ModelFacts(**row)
            if m.name in _CACHE:
                raise DataError(f"fluidq/models/facts.json: model {m.name!r} twice")  # a packaging bug
            _CACHE[m.name] = m
    return _CACHE


def list_models() -> list[ModelFacts]:
    """Every model of the shipped table, in its order."""
    return list(_table().values())


def load_model(name: str, *, option: str = "name") -> ModelFacts:
    """The shipped facts of the model called ``name`` (see :func:`list_models`).

    The match ignores case (``"llama-3.1-8b"`` works); an unknown name is an
    :class:`~fluidq.errors.UnknownNameError` listing the known ones.  ``option`` is the parameter
    the messages name (the command line passes ``NAME``).
    """
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(option, name, "a model name (see `fluidq models list`)")
    table = _table()
    if name in table:
        return table[name]
    folded = {k.casefold(): v for k, v in table.items()}
    if name.casefold() in folded:
        return folded[name.casefold()]
    raise UnknownNameError("model", name, table)


def find_model(model_id: str) -> ModelFacts | None:
    """The shipped facts a Hugging Face id names (``"meta-llama/Llama-2-70b-hf"``), or ``None``: the
    longest shipped name the id's last part starts with, ignoring case."""
    key = str(model_id).split("/")[-1].casefold()
    best = None
    for m in list_models():
        k = m.name.casefold()
        if key.startswith(k) and (best is None or len(k) > len(best.name)):
            best = m
    return best

from .gpus import GPU, list_gpus, load_gpu  # noqa: E402  (the GPU table, beside the model table)

__all__ += ["GPU", "list_gpus", "load_gpu"]
