"""``profile_meta.yaml`` of an LLMServingSim operator-profile folder, as validate's modules import it: the reader is
:mod:`fluidq.batchtime._yaml` (one parser for every reader of the file; batchtime sits below validate, so it lives
there, h-tidy5).  :func:`check_profile_meta` checks the types of the fields validate reads or that describe the
profiled engine (review revbad2 L2: ``tp_degrees: one``, ``block_size: sixteen`` were accepted without a word)."""
from __future__ import annotations

from pathlib import Path

from ..batchtime._yaml import parse_yaml, read_profile_meta
from ..errors import DataError

__all__ = ["read_profile_meta", "parse_yaml", "check_profile_meta"]

#: ``engine_effective`` keys that are a whole number >= 1 where the profiler writes them (vLLM's engine options)
_ENGINE_INTS = ("block_size", "tensor_parallel_size", "max_num_seqs", "max_num_batched_tokens")


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def check_profile_meta(folder) -> dict:
    """``folder``'s ``profile_meta.yaml`` (:func:`read_profile_meta`: invalid YAML and a key twice refused, naming the
    line), with the types checked of ``model`` (a name), ``tp_degrees`` (a list of whole numbers >= 1, or one),
    ``engine_effective`` (a mapping), its ``block_size``, ``tensor_parallel_size``, ``max_num_seqs``,
    ``max_num_batched_tokens`` (whole numbers >= 1) and ``hf_overrides`` (a mapping; the shapes validate compares,
    :data:`~fluidq.validate.deployment.OVERRIDE_SHAPES`, and ``num_hidden_layers`` whole numbers >= 1): a field of another type is a :class:`~fluidq.errors.DataError` naming the file, the key, its value
    and what is expected.  Absent fields are not required."""
    meta = read_profile_meta(folder)
    p = Path(folder) / "profile_meta.yaml"

    def bad(key, v, expected):
        shown = repr(v)
        raise DataError(f"{p}: {key} = {shown if len(shown) <= 60 else shown[:57] + '...'}: expected {expected}")

    m = meta.get("model")
    if m is not None and (isinstance(m, (bool, list, dict)) or not str(m).strip()):
        bad("model", m, "the profiled model's name (a Hugging Face id such as meta-llama/Llama-3.1-8B)")
    tps = meta.get("tp_degrees")
    if tps is not None and not (_whole(tps) or (isinstance(tps, list) and tps and all(_whole(t) for t in tps))):
        bad("tp_degrees", tps, "the tensor-parallel sizes profiled, a list of whole numbers >= 1 such as [1, 2]")
    eff = meta.get("engine_effective")
    if eff is None:
        return meta
    if not isinstance(eff, dict):
        bad("engine_effective", eff, "a mapping of the engine options the profiler ran vLLM with")
    for key in _ENGINE_INTS:
        if eff.get(key) is not None and not _whole(eff[key]):
            bad(f"engine_effective.{key}", eff[key], "a whole number >= 1")
    over = eff.get("hf_overrides")
    if over is not None:
        if not isinstance(over, dict):
            bad("engine_effective.hf_overrides", over, "a mapping of the model's shapes (num_attention_heads: 32, ...)")
        from .deployment import OVERRIDE_SHAPES  # the shapes validate compares (other overrides are not read)

        for key in ("num_hidden_layers",) + tuple(k for k, _, _ in OVERRIDE_SHAPES):
            v = over.get(key)
            if v is not None and not _whole(v):
                bad(f"engine_effective.hf_overrides.{key}", v, "a whole number >= 1 (a shape of the model)")
    return meta
