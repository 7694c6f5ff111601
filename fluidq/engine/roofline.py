"""A deployment without profiles as an :class:`~fluidq.Engine`: the calibrated roofline batch time of a model
on a GPU, context-aware, with vLLM's planned KV cache and vLLM's budgets -- the engine the command line's
``--gpu``/``--model`` options describe (``fluidq check --gpu H100 --model Llama-3.1-70B``), and a network case
file's ``batch_time = { kind = "roofline", ... }``.  See docs/reference/roofline.md."""
from __future__ import annotations

__all__ = ["roofline_engine"]


def roofline_engine(model, gpu, tensor_parallel_size: int = 1, *, b_max: int = 2048, k_max: int | None = 256,
                    kv_capacity_tokens: int | None = None, gpu_memory_utilization: float = 0.9,
                    gpu_memory_gib: float | None = None, dtype: str | None = None, name: str | None = None,
                    context_tokens: float | None = None, max_model_len: int | None = None, block_size: int = 16):
    """The engine of ``model`` on ``tensor_parallel_size`` GPUs ``gpu``, as vLLM runs it.

    Parameters
    ----------
    model : str or ModelFacts
        A model name of ``fluidq models list`` (Hugging Face ids, ``-Instruct``, ``-FP8`` work), a
        ``config.json`` path, or :class:`~fluidq.models.ModelFacts`.
    gpu : str or GPU
        A GPU of ``fluidq gpus``.
    tensor_parallel_size : int
        GPUs per engine.
    b_max, k_max : int
        vLLM's ``--max-num-batched-tokens`` (default 2048) and ``--max-num-seqs`` (default 256).
    kv_capacity_tokens : int, optional
        The KV cache; default: vLLM's memory planner (:func:`fluidq.models.kv_capacity_estimate`) on the GPU
        table's memory (or ``gpu_memory_gib``) times ``gpu_memory_utilization``.
    context_tokens : float, optional
        The mean context a request holds (prompt + output / 2): for a model with sliding-window layers the
        planned cache then holds :meth:`~fluidq.models.KVCapacityEstimate.tokens_at_context` tokens (vLLM's
        hybrid allocator frees what falls out of a window); default, and for other models, the planner's tokens.
    dtype : str, optional
        The model's number format instead of its config's (``"float16"``, ``"fp8"``... see ModelFacts).
    name : str, optional
        The engine's label (default ``"roofline MODEL on N x GPU"``).
    max_model_len : int, optional
        vLLM's ``--max-model-len``: at most the length vLLM derives from the model's config.json
        (:func:`fluidq.models.context.derived_max_model_len`: ``max_position_embeddings`` scaled by its
        ``rope_scaling``; vLLM refuses more), and like
        vLLM refused when the KV cache cannot hold one request of that many tokens
        (:meth:`~fluidq.models.KVCapacityEstimate.longest_request`; a given ``kv_capacity_tokens`` in whole blocks
        of ``block_size``).  Default: not checked (vLLM's own default is that derived length).
    block_size : int
        vLLM's ``--block-size`` (default 16): the planned cache's blocks and the whole blocks a request of
        ``max_model_len`` tokens needs.

    Returns
    -------
    Engine
        ``batch_time`` the roofline as a context-aware ``t(b, 0) + s kv`` (:meth:`Roofline.context_aware`;
        its ``base`` is the :class:`~fluidq.batchtime.roofline.Roofline`), ``kv_capacity_tokens`` the planned
        cache, and ``prefill_emits_token=True`` (vLLM's iteration completing a prefill emits the first token).
        Its ``memory`` is token memory (``Memory()``: a request holds its tokens, blocks of 1), not vLLM's paged
        blocks of ``block_size`` (:data:`fluidq.engine.VLLM`), which the planned cache and ``fluidq capacity
        --gpu``'s flow balance count in: measured on four KV-bound deployments (validation/RESULTS.md,
        2026-12-07, user6a), simulating vLLM's memory moved the seeded saturation by -1.3 to +2.9 % and brought
        it no closer to that capacity line (3 of 4 farther), so the engine keeps token memory and the
        command line says so.
        ``fluidq.max_throughput(roofline_engine(...), workload)`` is the ``region`` line of
        ``fluidq capacity --gpu``, the ``lambda*`` of ``fluidq check --gpu``.
    """
    from dataclasses import replace

    from ..batchtime.roofline import roofline
    from ..models import ModelFacts, kv_capacity_estimate, load_gpu, load_model
    from . import Engine

    if isinstance(model, str):
        model = ModelFacts.from_config(model) if model.endswith(".json") else load_model(model, option="model")
    if dtype is not None:
        model = replace(model, dtype=dtype)  # ModelFacts checks it (a ParameterError naming dtype)
    if isinstance(gpu, str):
        gpu = load_gpu(gpu)
    rf = roofline(model, gpu, tensor_parallel_size)
    from .._validate import BUDGET_WHY, MAX_BUDGET_TOKENS, integer

    block_size = integer("block_size", block_size, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
    b_max = integer("b_max", b_max, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
    if k_max is not None:
        from .._validate import budget_holds_seqs

        budget_holds_seqs("b_max", b_max, integer("k_max", k_max, minimum=1, maximum=MAX_BUDGET_TOKENS))
    if max_model_len is not None:
        from ..models.context import check_fits_cache, check_max_model_len, longest_in_blocks

        max_model_len = check_max_model_len(model, max_model_len)
        if kv_capacity_tokens is not None:
            check_fits_cache(max_model_len, longest_in_blocks(kv_capacity_tokens, block_size),
                             f"the given KV cache ({kv_capacity_tokens:,} tokens, blocks of {block_size})",
                             "a larger cache")
    if kv_capacity_tokens is None:
        kv_capacity_tokens = kv_capacity_estimate(
            model, gpu_memory_gib=rf.gpu.memory_gib if gpu_memory_gib is None else gpu_memory_gib,
            gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=rf.tensor_parallel_size,
            # no sequence limit: vLLM's default 256, or as many sequences as the budget holds
            max_num_batched_tokens=b_max, max_num_seqs=k_max or min(256, b_max), max_model_len=max_model_len,
            block_size=block_size)
        kv_capacity_tokens = (kv_capacity_tokens.tokens if context_tokens is None
                              else kv_capacity_tokens.tokens_at_context(context_tokens))
    # vLLM's engine: the iteration that completes a prefill emits the first output token (as
    # fluidq.validate.replay.vllm_engine and predict_capacity's flow balance, m_d - 1 decode iterations)
    return Engine(batch_time=rf.context_aware(), b_max=b_max, k_max=k_max, kv_capacity_tokens=kv_capacity_tokens,
                  prefill_emits_token=True,
                  name=name or f"roofline {model.name} on {rf.tensor_parallel_size} x {rf.gpu.name}")
