"""Capacity of a vLLM deployment predicted from an operator-profile folder alone (issue 16 item 6).

``predict_deployment(profile_dir, input_tokens=..., output_tokens=..., max_num_seqs=...,
max_num_batched_tokens=..., gpu_memory_gib=...)`` answers "what is the maximum throughput of this
deployment" before any run: the iteration model of the folder's operator profiles
(:func:`~fluidq.validate.iteration.lss_iteration_model`), the decoder-layer count from the model's
facts (:mod:`fluidq.models`, found from ``profile_meta.yaml``'s ``model``), the KV capacity given, or
estimated by vLLM's memory planner (:func:`~fluidq.models.kv_capacity_estimate`) from the GPU memory
(given, or the folder's ``peer_sim_config.json``), and the capacity of a decode-first chunked-prefill
engine under the three limits (token budget, ``max_num_seqs``, KV cache) with the one that binds
(:func:`~fluidq.validate.predict.predict_capacity`).

Tensor parallelism is refused for these folders: LLMServingSim's ``profile_tp2_*`` files are measured
on one GPU with the model halved, so they hold no all-reduce, and fluidq has no communication model for
them yet (every TP > 1 prediction from them would be too optimistic).

The same code predicts the validation suite's serving runs, so ``fluidq validate`` scores this answer
(Li, Dai, Peng, arXiv:2504.07347, for the capacity argument; "Efficient Memory Management for Large
Language Model Serving with PagedAttention", arXiv:2309.06180, for the block KV cache).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from .._validate import MAX_BUDGET_TOKENS, MAX_KV_TOKENS, integer, real
from ..errors import DataError, ParameterError

__all__ = ["predict_deployment"]


def _lengths(name, v):
    a = np.atleast_1d(np.asarray(v, dtype=float))
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 1) or np.any(a != np.round(a)):
        raise ParameterError(name, v, "a whole number of tokens >= 1, or a non-empty array of them")
    return a


def _profile_model(folder: Path) -> str | None:
    from ..batchtime.loaders import _simple_yaml

    return _simple_yaml(folder / "profile_meta.yaml").get("model") or None


def _gpu_memory_from_folder(folder: Path) -> float | None:
    p = folder / "peer_sim_config.json"
    if not p.is_file():
        return None
    from .._io import json_loads, read_text

    doc = json_loads(read_text("peer_sim_config.json", p, what="JSON file"), where=str(p))
    stack = [doc]
    while stack:  # the first npu_mem.mem_size anywhere in the document
        v = stack.pop()
        if isinstance(v, dict):
            mem = v.get("npu_mem")
            if isinstance(mem, dict) and isinstance(mem.get("mem_size"), (int, float)):
                return float(mem["mem_size"])
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def predict_deployment(profile_dir, *, input_tokens, output_tokens, max_num_seqs: int = 256,
                       max_num_batched_tokens: int = 2048, tensor_parallel_size: int = 1,
                       kv_capacity_tokens: int | None = None, gpu_memory_gib: float | None = None,
                       gpu_memory_utilization: float = 0.9, block_size: int = 16, model: str | None = None):
    """Predicted capacity of a vLLM deployment from an LLMServingSim-layout operator-profile folder.

    Parameters
    ----------
    profile_dir : path
        A folder with ``profile_meta.yaml`` and ``profile_tp1_{dense,attention,per_sequence}.csv``.
    input_tokens, output_tokens : int or array_like
        The workload's prompt and output lengths (one value each, or an empirical sample).
    max_num_seqs, max_num_batched_tokens, block_size, gpu_memory_utilization : vLLM's options
    tensor_parallel_size : int
        Only 1 for these folders (see the module docstring).
    kv_capacity_tokens : int, optional
        The KV cache in tokens, when known (vLLM logs it); else estimated by vLLM's memory planner.
    gpu_memory_gib : float, optional
        One GPU's memory for the planner (default: the folder's ``peer_sim_config.json``).
    model : str, optional
        A model of :func:`fluidq.models.list_models` (default: found from ``profile_meta.yaml``).

    Returns
    -------
    CapacityPrediction
        ``tokens_per_s``, ``requests_per_s``, the ``binding`` limit and its ``reason``; ``inputs`` say
        where the layer count and the KV capacity came from.
    """
    from ..models import find_model, kv_capacity_estimate, load_model
    from ..batchtime.operators import lss_iteration_model
    from .predict import predict_capacity

    folder = Path(profile_dir)
    if not folder.is_dir():
        raise ParameterError("profile_dir", str(profile_dir), "a folder of operator profiles (profile_meta.yaml, "
                             "profile_tp1_*.csv)")
    tp = integer("tensor_parallel_size", tensor_parallel_size, minimum=1, maximum=1024)
    if tp != 1:
        raise ParameterError("tensor_parallel_size", tp, "1 for an LLMServingSim profile folder",
                             "its profile_tp2 files are measured on one GPU with the model halved and hold no "
                             "all-reduce; fluidq has no communication model for them yet")
    k_max = integer("max_num_seqs", max_num_seqs, minimum=1, maximum=MAX_BUDGET_TOKENS)
    b_max = integer("max_num_batched_tokens", max_num_batched_tokens, minimum=1, maximum=MAX_BUDGET_TOKENS)
    block = integer("block_size", block_size, minimum=1, maximum=4096)
    p, o = _lengths("input_tokens", input_tokens), _lengths("output_tokens", output_tokens)
    if p.size != o.size:
        if p.size == 1:
            p = np.full(o.size, p[0])
        elif o.size == 1:
            o = np.full(p.size, o[0])
        else:
            raise ParameterError("output_tokens", f"<{o.size} lengths>", f"{p.size} lengths, one per input")
    hf_id = _profile_model(folder)
    facts = load_model(model, option="model") if model is not None else (find_model(hf_id) if hf_id else None)
    if facts is None:
        raise DataError(f"{folder}: profile_meta.yaml names model {hf_id!r}, which the shipped model facts do not "
                        "hold; give model= (see `fluidq models list`)")
    from .cases import _plain_path

    it = lss_iteration_model(_plain_path(folder), n_layers=facts.n_layers, tp=tp)  # .gz tables read through
    if kv_capacity_tokens is not None:
        kv = integer("kv_capacity_tokens", kv_capacity_tokens, minimum=1, maximum=int(MAX_KV_TOKENS))
        kv_source = "given"
    else:
        mem = gpu_memory_gib if gpu_memory_gib is not None else _gpu_memory_from_folder(folder)
        if mem is None:
            raise ParameterError("gpu_memory_gib", None, "one GPU's memory in GiB (or kv_capacity_tokens)",
                                 f"{folder} has no peer_sim_config.json stating it")
        mem = real("gpu_memory_gib", mem, positive=True)
        est = kv_capacity_estimate(facts, gpu_memory_gib=mem, gpu_memory_utilization=gpu_memory_utilization,
                                   tensor_parallel_size=tp, block_size=block, max_num_batched_tokens=b_max,
                                   max_num_seqs=k_max)
        kv = est.tokens
        kv_source = (f"vLLM's memory planner, an estimate: {kv:,} tokens from {mem:g} GiB x "
                     f"{gpu_memory_utilization:g} ({'given' if gpu_memory_gib is not None else 'peer_sim_config.json'})")
    pred = predict_capacity(it, p, o, b_max=b_max, k_max=k_max, kv_capacity_tokens=kv, block_size=block)
    return replace(pred, inputs={**pred.inputs, "profile_dir": str(folder), "model": facts.name,
                                 "n_layers": facts.n_layers, "kv_capacity_tokens": kv, "kv_source": kv_source,
                                 "max_num_seqs": k_max, "max_num_batched_tokens": b_max, "block_size": block,
                                 "tensor_parallel_size": tp})
