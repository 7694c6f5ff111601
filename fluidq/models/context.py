"""vLLM's ``max_model_len``: the longest request a deployment accepts -- one rule, used by the roofline engine
(:func:`fluidq.engine.roofline_engine`) and the command line's ``--max-model-len``.

vLLM derives the model's length from its config.json (vllm/config, ``_get_and_verify_max_len``): the
``max_position_embeddings`` (the smallest of the config's length keys, ``n_positions``, ``seq_length``... in
:data:`fluidq.models.facts.MAX_LEN_KEYS`; ``model_max_length`` when set), scaled by the config's ``rope_scaling`` -- times its ``factor`` for every rope type
but ``su``/``longrope``/``llama3`` (whose ``max_position_embeddings`` is already the scaled length), and for
``yarn`` the ``original_max_position_embeddings`` times the factor; Gemma-3's config is already scaled and is
taken as it is.  A ``max_model_len`` above that length is refused (unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``,
which fluidq does not model), and so is one the KV cache cannot hold a request of (vLLM's
``check_enough_kv_cache_memory``; :meth:`~fluidq.models.KVCapacityEstimate.longest_request` for the planned
cache, :func:`longest_in_blocks` for a given one)."""
from __future__ import annotations

from numbers import Integral, Real

__all__ = ["derived_max_model_len", "derived_words", "check_max_model_len", "check_fits_cache", "longest_in_blocks",
           "rope_scaling_from_config", "NOT_SCALED"]

#: the rope types whose ``max_position_embeddings`` vLLM takes unscaled (``su`` is ``longrope``'s old name)
NOT_SCALED = ("su", "longrope", "llama3")


def rope_scaling_from_config(raw, fail):
    """A config.json's ``rope_scaling`` as :class:`~fluidq.models.ModelFacts` keeps it: ``(rope_type, factor,
    original_max_position_embeddings)`` (``None`` where absent), or ``None``.  The type is ``rope_type``, else the
    legacy ``type`` (vLLM's ``patch_rope_scaling``; ``mrope`` reads as ``default``); the factor defaults to 1.0
    (``default`` defines none).  ``fail(key, why)`` raises for a malformed entry (a yarn without its
    ``original_max_position_embeddings``: vLLM fails on it too)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        fail("rope_scaling", f"{type(raw).__name__}, not an object")
    kind = raw.get("rope_type", raw.get("type"))
    if not isinstance(kind, str):
        fail("rope_scaling", "has no 'rope_type' (or 'type') string")
    if "rope_type" in raw and "type" in raw and raw["type"] != raw["rope_type"]:
        fail("rope_scaling", f"'type' {raw['type']!r} and 'rope_type' {raw['rope_type']!r} differ")
    kind = {"su": "longrope", "mrope": "default"}.get(kind, kind)
    factor = raw.get("factor", 1.0)
    if isinstance(factor, bool) or not isinstance(factor, Real) or not 0 < factor < float("inf"):
        fail("rope_scaling", f"factor {factor!r}: expected a positive finite number")
    original = raw.get("original_max_position_embeddings")
    if original is not None and (isinstance(original, bool) or not isinstance(original, Integral) or original < 1):
        fail("rope_scaling", f"original_max_position_embeddings {original!r}: expected a positive integer")
    if kind == "yarn" and original is None:
        fail("rope_scaling", "a yarn scaling without original_max_position_embeddings (vLLM needs it)")
    return (kind, float(factor), None if original is None else int(original))


def derived_max_model_len(model) -> int | None:
    """vLLM's derived ``max_model_len`` of ``model`` (:class:`~fluidq.models.ModelFacts`): its default
    ``--max-model-len`` and the most it accepts; ``None`` when the config declares no length."""
    mpe = getattr(model, "max_position_embeddings", None)
    if not mpe:
        return None
    rope = getattr(model, "rope_scaling", None)
    if rope is None or "gemma3" in getattr(model, "architecture", "") or rope[0] in NOT_SCALED:
        return int(mpe)
    kind, factor, original = rope
    return int((original if kind == "yarn" else mpe) * factor)


def derived_words(model) -> str:
    """What :func:`derived_max_model_len` is, in words: ``max_position_embeddings`` (or the length key it was read
    from, :attr:`~fluidq.models.ModelFacts.max_len_key`), or the scaling on it."""
    rope = getattr(model, "rope_scaling", None)
    mpe = f"{getattr(model, 'max_len_key', 'max_position_embeddings')} {model.max_position_embeddings:,}"
    if rope is None or derived_max_model_len(model) == model.max_position_embeddings:
        return mpe
    kind, factor, original = rope
    base = f"original_max_position_embeddings {original:,}" if kind == "yarn" else mpe
    return f"{base} x its {kind} rope_scaling factor {factor:g}"


def check_max_model_len(model, max_model_len, *, name: str = "max_model_len") -> int:
    """``max_model_len`` checked as vLLM checks it against the model: an integer, at most the derived length
    (:func:`derived_max_model_len`); a :class:`~fluidq.errors.ParameterError` naming ``name`` otherwise."""
    from .._validate import MAX_BUDGET_TOKENS, integer
    from ..errors import ParameterError

    mml = integer(name, max_model_len, minimum=1, maximum=MAX_BUDGET_TOKENS * 64,
                  why="no model has a context of more than 2**30 tokens")
    limit = derived_max_model_len(model)
    if limit is not None and mml > limit:
        raise ParameterError(name, mml, f"at most {limit:,}, {model.name}'s derived length ({derived_words(model)}, "
                             "its config.json)", "vLLM refuses a longer max_model_len unless "
                             "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, past the positions the model was trained on; fluidq "
                             "does not model that")
    return mml


def check_fits_cache(max_model_len: int, longest: int | None, cache: str, remedy: str, *,
                     name: str = "max_model_len") -> None:
    """Refuse a ``max_model_len`` longer than ``longest``, the longest request the KV cache holds (``None``: no
    length is too long), as vLLM refuses to start when the cache cannot hold one request of ``max_model_len`` tokens
    (``check_enough_kv_cache_memory``): one wording for the planned cache
    (:func:`fluidq.models.kv_capacity_estimate`) and a given one (:func:`fluidq.engine.roofline_engine`).
    ``cache`` names the cache (``"the given KV cache (... tokens)"``), ``remedy`` what would hold a longer one."""
    from ..errors import ParameterError

    if longest is not None and longest < max_model_len:
        raise ParameterError(name, max_model_len, f"at most {longest:,} tokens, the longest request {cache} holds",
                             "vLLM refuses to start when one request of max_model_len tokens does not fit; lower it, "
                             f"or give {remedy}")


def longest_in_blocks(kv_capacity_tokens: int, block_size: int = 16) -> int:
    """The longest request a given KV cache of ``kv_capacity_tokens`` holds, as vLLM's start-up check counts
    it: whole blocks of ``block_size`` tokens."""
    return int(kv_capacity_tokens) // int(block_size) * int(block_size)
