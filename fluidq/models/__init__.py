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
from .memory import KVCapacityEstimate, activation_reserve_bytes, kv_bytes_per_value, kv_capacity_estimate

__all__ = ["ModelFacts", "KVCapacityEstimate", "kv_capacity_estimate", "kv_bytes_per_value", "activation_reserve_bytes", "find_model", "load_model",
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


#: name parts that do not change a model's shapes (fine-tunes, packaging, context-length variants)
_DROP = {"instruct", "chat", "hf", "it", "base", "pretrained", "dynamic", "static", "original"}
#: name parts that say the checkpoint is quantized, and to what
_QUANT = {"fp8": "fp8", "awq": "int4", "int4": "int4", "w4a16": "int4", "gptq": "int4", "int8": "int8",
          "w8a16": "int8", "w8a8": "int8", "fp8dynamic": "fp8"}
#: published models with the shapes of a shipped one (distillations, re-releases)
_SAME_SHAPES = {"deepseek-r1": "DeepSeek-V3", "deepseek-r1-0528": "DeepSeek-V3", "deepseek-v3-0324": "DeepSeek-V3",
                "deepseek-v3.1": "DeepSeek-V3", "deepseek-r1-distill-llama-8b": "Llama-3.1-8B",
                "deepseek-r1-distill-llama-70b": "Llama-3.3-70B", "deepseek-r1-distill-qwen-7b": "Qwen2.5-7B",
                "deepseek-r1-distill-qwen-14b": "Qwen2.5-14B", "deepseek-r1-distill-qwen-32b": "Qwen2.5-32B",
                "llama-4-scout": "Llama-4-Scout-17B-16E", "mistral-7b": "Mistral-7B-v0.1",
                "mixtral-8x7b-v0.1": "Mixtral-8x7B", "mixtral-8x22b-v0.1": "Mixtral-8x22B",
                "qwq-32b": "Qwen2.5-32B", "codellama-34b-python": "CodeLlama-34B", "mistral-nemo": "Mistral-Nemo-12B",
                "mistral-small-24b": "Mistral-Small-24B", "mistral-small-3.1-24b": "Mistral-Small-24B"}


def _normalized(name: str) -> tuple[str, str | None]:
    """``(key, quantization)`` of a name as users type it: the Hugging Face id's last part, any case,
    ``-Instruct``/``-Chat``/``-hf``/``-it``/context-length parts dropped, a ``Meta-`` prefix dropped, a
    quantization part (``-FP8``, ``-AWQ``, ``-GPTQ-Int4``, ``quantized.w4a16``) read off."""
    import re

    key = str(name).strip().rstrip("/").split("/")[-1].casefold().replace("_", "-").replace(" ", "-")
    quant = None
    parts = []
    for t in key.split("-"):
        t = t.removeprefix("quantized.")
        if t in _QUANT:
            quant = _QUANT[t] if quant is None or t not in ("gptq",) else quant
            continue
        if t in _DROP or re.fullmatch(r"\d+[km]", t) or not t:
            continue
        parts.append(t)
    if parts and parts[0] == "meta" and len(parts) > 1:
        parts = parts[1:]
    return "-".join(parts), quant


_INDEX: list = []


def _name_index() -> tuple[dict, dict]:
    """``(casefolded name -> facts, normalized name or alias -> facts)`` of the shipped table, built once."""
    if not _INDEX:
        table = _table()
        index: dict = {}
        for k, v in table.items():
            index.setdefault(_normalized(k)[0], v)
        for alias, target in _SAME_SHAPES.items():
            index.setdefault(alias, table[target])
        _INDEX.append(({k.casefold(): v for k, v in table.items()}, index))
    return _INDEX[0]


def load_model(name: str, *, option: str = "name") -> ModelFacts:
    """The shipped facts of the model called ``name`` (see :func:`list_models`).

    The match ignores case (``"llama-3.1-8b"`` works) and reads the names users type: a Hugging Face id
    (``"meta-llama/Llama-3.1-70B-Instruct"``), ``-Instruct``/``-Chat``/``-hf``/``-it`` and context-length
    suffixes (shapes unchanged), ``Meta-Llama-3-...``, a quantization suffix (``-FP8``, ``-AWQ``,
    ``-GPTQ-Int4``/``-Int8``, ``quantized.w4a16``: the same shapes with that ``quantization``) and a few
    releases with a shipped model's shapes (DeepSeek-R1 and its Llama/Qwen distillations).  An unknown
    name is an :class:`~fluidq.errors.UnknownNameError` listing the known ones and the closest.
    ``option`` is the parameter the messages name (the command line passes ``--model``).
    """
    import difflib
    import re

    if not isinstance(name, str) or not name.strip():
        raise ParameterError(option, name, "a model name (see `fluidq models list`)")
    table = _table()
    if name in table:
        return table[name]
    folded, index = _name_index()
    if name.casefold() in folded:
        return folded[name.casefold()]
    key, quant = _normalized(name)
    hit = index.get(key)
    if hit is None:  # a release tag the table does not carry: -v0.1, -2407, -0528
        short = re.sub(r"-(v\d+(\.\d+)*|\d{4})$", "", key)
        hit = index.get(short)
    if hit is not None:
        if quant is not None and hit.quantization is None:
            hit = hit.replace(quantization=quant, name=f"{hit.name}-{quant.upper()}",
                              source=f"{hit.source}; weights {quant} as the name {name!r} says")
        return hit
    err = UnknownNameError("model", name, table)
    close = difflib.get_close_matches(key, list(index), n=3, cutoff=0.6)
    names = list(dict.fromkeys(index[c].name for c in close))
    msg = err.args[0] + (f"; did you mean {' or '.join(names)}?" if names else "")
    err.args = (f"{option}: {msg}" if option.startswith("--") else msg,)
    raise err


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
