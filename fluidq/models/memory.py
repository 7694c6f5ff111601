"""An estimate of vLLM's KV-cache capacity from the model's shapes and the GPU's memory.

vLLM (arXiv:2309.06180, "Efficient Memory Management for Large Language Model Serving with
PagedAttention") gives the KV cache what is left of ``gpu_memory_utilization`` x the GPU's memory
after the weights and the peak of one profiling forward pass (activations of
``max_num_batched_tokens`` tokens, the sampler's logits for ``max_num_seqs`` sequences, memory
outside PyTorch's allocator such as the CUDA context), and cuts it into blocks of ``block_size``
tokens.  fluidq does not run that profile: it *estimates* the reserve with a stated rule
(:func:`activation_reserve_bytes`), so the answer is an estimate and says so.

Checked against the one shared run that records its capacity (RTX 4090, Llama-3.1-8B, vLLM 0.19.0,
utilization 0.9, 2,048 batched tokens, 256 sequences: 2,588 blocks = 41,408 tokens), the estimate is
2,680 blocks = 42,880 tokens, **3.6 % too many**: vLLM reserved about 1.15 GiB besides the weights,
the rule 0.97 GiB.  The rule's constants were not fitted to that run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .._validate import BUDGET_WHY, MAX_BUDGET_TOKENS, budget_holds_seqs, integer, real
from ..errors import ParameterError
from .context import check_fits_cache
from .facts import MAX_PARALLEL, PARALLEL_WHY, ModelFacts

__all__ = ["KVCapacityEstimate", "kv_capacity_estimate", "kv_bytes_per_value", "activation_reserve_bytes", "sliding_note", "kv_cache_groups",
           "GIB", "NON_TORCH_OVERHEAD_GIB", "MAX_GPU_MEMORY_GIB", "GROUP_SIZE_SPREAD"]

GIB = 1 << 30

#: vLLM's default ``--gpu-memory-utilization``
DEFAULT_UTILIZATION = 0.9

#: Memory outside PyTorch's allocator that vLLM counts before sizing the cache (the CUDA context,
#: cuBLAS/cuDNN workspaces): 0.5 GiB, a round figure of the size a CUDA context takes on current
#: GPUs.  CUDA-graph memory is not included.
NON_TORCH_OVERHEAD_GIB = 0.5

#: Activation tensors of one layer alive together at the peak, in units of the hidden width per
#: token (residual stream, normed input, attention output, MLP output) ...
HIDDEN_COPIES = 4
#: ... and in units of the MLP's intermediate width per token (SwiGLU's gate and up projections
#: and their product).
INTERMEDIATE_COPIES = 3
#: fp32 logits of the sampler's dummy run, and one copy of the same size (its probabilities).
LOGITS_COPIES = 2

#: The most GPU memory one GPU is said to have: 2**20 GiB (a PiB; today's GPUs have under 300 GiB).
MAX_GPU_MEMORY_GIB = float(2**20)
GPU_MEMORY_WHY = "today's GPUs have less than 300 GiB; more than a PiB is no GPU"

#: vLLM's KV-cache groups take the larger layer count as their size when it is under this many times the smaller
#: (``_get_kv_cache_groups_uniform_page_size``: 1.5 in current vLLM, 1.25 up to v0.14; no shipped model lies between).
GROUP_SIZE_SPREAD = 1.5


def kv_cache_groups(n_layers: int, n_sliding_layers: int) -> tuple[int, int, int]:
    """``(group_size, full_groups, sliding_groups)``: how vLLM's KV-cache manager groups a model's attention layers.

    One attention type (every layer full, or every layer windowed) is one group of all the layers.  Two types
    (vllm/v1/core/kv_cache_utils.py, ``_get_kv_cache_groups_uniform_page_size``): every group holds ``group_size``
    layers -- the smaller type's layer count, or the larger's when that is under :data:`GROUP_SIZE_SPREAD` times the
    smaller -- and each type fills ``ceil(layers / group_size)`` groups, the last one padded with empty layer slots
    ("Add %d padding layers, may waste ... KV cache memory").  Gemma-3-27B (10 full, 52 windowed layers): groups of
    10, 1 full + 6 windowed = 70 slots for 62 layers.  A block of the shared pool holds one page in each of the
    ``group_size`` slots, so the memory is cut into ``memory // (page x group_size)`` blocks, shared by all groups."""
    full = n_layers - n_sliding_layers
    if not full or not n_sliding_layers:
        return n_layers, int(full > 0), int(n_sliding_layers > 0)
    lo, hi = min(full, n_sliding_layers), max(full, n_sliding_layers)
    size = hi if hi < lo * GROUP_SIZE_SPREAD else lo
    return size, -(-full // size), -(-n_sliding_layers // size)


@dataclass(frozen=True, kw_only=True)
class KVCapacityEstimate:
    """vLLM's KV-cache capacity on each GPU, as fluidq estimates it.

    Attributes
    ----------
    tokens : int
        Tokens the cache holds (``blocks x block_size``): the ``kv_capacity_tokens`` of an engine, and what vLLM
        logs as its "GPU KV cache size" (``num_blocks // KV-cache groups x block_size``).
    blocks : int
        ``tokens / block_size``: vLLM's ``num_gpu_blocks`` for a model with one KV-cache group; a model with
        full and sliding-window layers shares a pool of :attr:`pool_blocks` among its groups.
    block_size : int
        Tokens per block.
    kv_bytes_per_token_per_gpu : int
        KV bytes one token takes on each GPU.
    weight_bytes_per_gpu : int
        Weights on each GPU.
    reserve_bytes : int
        Activation and non-PyTorch reserve subtracted (estimated unless given).
    usable_bytes : int
        ``gpu_memory x gpu_memory_utilization``.
    kv_bytes : int
        What is left for the cache before flooring to blocks.
    inputs : dict
        Every input, for provenance.
    reason : str
        That this is an estimate, and the formula with its numbers.
    n_layers, n_sliding_layers, sliding_window : int, int, int or None
        The model's layers, how many of them attend within a sliding window, and the window (for
        :meth:`tokens_at_context`).
    group_size, full_groups, sliding_groups, pool_blocks : int
        vLLM's KV-cache groups (:func:`kv_cache_groups`) and the blocks of the pool they share (each block one
        page in each of ``group_size`` layer slots).  One group of every layer for a model with one attention type.
    """

    tokens: int
    blocks: int
    block_size: int
    kv_bytes_per_token_per_gpu: int
    weight_bytes_per_gpu: int
    reserve_bytes: int
    usable_bytes: int
    kv_bytes: int
    reserve_estimated: bool
    inputs: dict
    reason: str
    method: str = "estimate"
    n_layers: int = 0
    n_sliding_layers: int = 0
    sliding_window: int | None = None
    group_size: int = 0
    full_groups: int = 0
    sliding_groups: int = 0
    pool_blocks: int = 0

    def tokens_at_context(self, context_tokens: float) -> int:
        """Context tokens the cache holds when each request has ``context_tokens``: :attr:`tokens` for a model
        without sliding-window layers or requests within the window; more for longer requests.

        :attr:`tokens` is what vLLM logs as its "GPU KV cache size": the pool's blocks shared evenly among the
        KV-cache groups (:func:`kv_cache_groups`).  vLLM's hybrid allocator (v0.10 on) draws every group's blocks
        from that pool and frees a windowed group's blocks that fall out of the window, so a request of ``n``
        tokens takes ``G_full x n + G_sliding x min(n, window + block_size)`` group-tokens of the pool's
        ``pool_blocks x block_size``.  Hence ``pool_blocks x block_size / (G_full + G_sliding x min(1, (window +
        block_size) / n))``, floored to blocks: up to ``(G_full + G_sliding) / G_full`` times :attr:`tokens`
        (GPT-OSS 2x, Gemma-3-27B 7x) for requests much longer than the window.  An approximation: every request is
        taken at the same ``n``, and ``window + block_size`` bounds the blocks a windowed layer keeps.
        """
        c = real("context_tokens", context_tokens, positive=True, maximum=float(MAX_BUDGET_TOKENS) * 64,
                 why="no model has a context of more than 2**30 tokens")
        if not self.n_sliding_layers:
            return self.tokens
        kept = min(1.0, (self.sliding_window + self.block_size) / c)
        blocks = self.pool_blocks / (self.full_groups + self.sliding_groups * kept)
        return int(blocks) * self.block_size

    def longest_request(self) -> int | None:
        """The longest ``max_model_len`` (tokens, whole blocks) vLLM starts with on this cache.

        vLLM refuses to start when the cache cannot hold one request of ``max_model_len`` tokens
        (vllm/v1/core/kv_cache_utils.py, ``check_enough_kv_cache_memory`` with ``_max_memory_usage_bytes_from_groups``,
        which counts the groups' padding): each full-attention group needs ``ceil(n / block_size)`` blocks of the
        pool, each sliding-window group ``ceil(min(window - 1 + max_num_batched_tokens, n) / block_size) + 1``
        (``SlidingWindowSpec.max_memory_usage_bytes``), against the pool's :attr:`pool_blocks`.  Without
        sliding-window layers that is :attr:`tokens`; ``None`` when every layer is windowed and that fits (no length
        is too long); else, every layer windowed, the longest ``n`` whose ``ceil(n / block_size) + 1`` blocks per
        group fit (a window longer than the context -- Phi-3-mini-128k's 262,144 tokens -- caps nothing, so the
        layers hold the whole request, as full attention does, plus vLLM's one block); 0 when no request fits."""
        bs = self.block_size
        if not self.n_sliding_layers:
            return self.tokens
        pool, full, slid = self.pool_blocks, self.full_groups, self.sliding_groups
        cap = self.sliding_window - 1 + int(self.inputs.get("max_num_batched_tokens", 2048))
        cap_blocks = -(-cap // bs) + 1  # what a windowed group needs at most
        if full == 0:
            if slid * cap_blocks <= pool:
                return None
            k = max(0, pool // slid - 1)  # n's ceil(n / bs) + 1 blocks in each windowed group; below the cap
            return int(min(k * bs, cap))
        k = (pool - slid * cap_blocks) // full  # blocks per full group, at or past the cap
        if k * bs >= cap:
            return int(k) * bs
        k = max(0, (pool - slid) // (full + slid))  # shorter than the cap: n's blocks in every group, +1
        return int(min(k * bs, cap))

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "blocks": self.blocks, "block_size": self.block_size,
                "kv_bytes_per_token_per_gpu": self.kv_bytes_per_token_per_gpu,
                "weight_bytes_per_gpu": self.weight_bytes_per_gpu, "reserve_bytes": self.reserve_bytes,
                "reserve_estimated": self.reserve_estimated, "usable_bytes": self.usable_bytes,
                "kv_bytes": self.kv_bytes, "method": self.method, "inputs": dict(self.inputs),
                "reason": self.reason}

    def to_frame(self):
        import pandas as pd

        d = self.to_dict()
        d.pop("inputs")
        return pd.DataFrame([d])


#: the largest tensor-parallel size a refusal suggests (one node of 8 GPUs, or a few)
MAX_TP_HINT = 64


def activation_reserve_bytes(model: ModelFacts, *, max_num_batched_tokens: int = 2048, max_num_seqs: int = 256,
                             tensor_parallel_size: int = 1) -> int:
    """The reserve fluidq assumes vLLM's profiling run takes besides the weights (an approximation).

    ``max_num_batched_tokens x (4 x hidden + 3 x ffn / tp) x bytes`` (one layer's live activations:
    four hidden-width tensors, SwiGLU's three intermediate-width ones, split over tensor-parallel
    GPUs; ``ffn`` is ``intermediate_size``, or for a MoE model ``(experts_per_token + n_shared_experts)
    x moe_intermediate_size``, the larger when dense layers exist)
    + ``max_num_seqs x vocab_size x 4 x 2`` (fp32 logits and one copy in the sampler)
    + :data:`NON_TORCH_OVERHEAD_GIB` (the CUDA context and library workspaces).

    The real reserve is measured by vLLM in a profiling run; it also holds attention workspaces,
    allocator fragmentation and (depending on the version) CUDA-graph memory, which this rule does
    not model.  For the RTX 4090 / Llama-3.1-8B run it gives 0.97 GiB where vLLM took about 1.15 GiB.
    """
    tp = integer("tensor_parallel_size", tensor_parallel_size, minimum=1, maximum=MAX_PARALLEL, why=PARALLEL_WHY)
    t = integer("max_num_batched_tokens", max_num_batched_tokens, minimum=1, maximum=MAX_BUDGET_TOKENS,
                why=BUDGET_WHY)
    s = integer("max_num_seqs", max_num_seqs, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
    ffn = model.intermediate_size
    if model.is_moe:
        moe_ffn = (model.experts_per_token + model.n_shared_experts) * model.moe_intermediate_size
        ffn = max(moe_ffn, model.intermediate_size) if model.n_dense_layers else moe_ffn
    act = t * (HIDDEN_COPIES * model.hidden_size + INTERMEDIATE_COPIES * -(-ffn // tp)) * model.bytes_per_value
    logits = s * model.vocab_size * 4 * LOGITS_COPIES
    return int(act + logits + NON_TORCH_OVERHEAD_GIB * GIB)


def kv_bytes_per_value(kv_cache_dtype):
    """vLLM's ``--kv-cache-dtype`` as the planner's bytes per cached value: ``None`` (the model's dtype) for
    ``"auto"`` or ``None``, 1 for ``"fp8"``."""
    return 1 if kv_cache_dtype == "fp8" else None


def kv_capacity_estimate(model: ModelFacts, *, gpu_memory_gib: float, gpu_memory_utilization: float = 0.9,
                         tensor_parallel_size: int = 1, expert_parallel_size: int | None = None,
                         block_size: int = 16, activation_reserve_gib: float | None = None,
                         max_num_batched_tokens: int = 2048, max_num_seqs: int = 256,
                         kv_bytes_per_value: int | None = None,
                         max_model_len: int | None = None) -> KVCapacityEstimate:
    """Estimate the KV-cache capacity vLLM's memory planner gives each GPU.

    ``blocks = floor((gpu_memory x gpu_memory_utilization - weights per GPU - reserve) /
    (kv_bytes_per_token_per_gpu x block_size))``, ``tokens = blocks x block_size``.

    Parameters
    ----------
    model : ModelFacts
        The model (:func:`~fluidq.models.load_model` or :meth:`ModelFacts.from_config`).
    gpu_memory_gib : float
        Memory of one GPU, GiB (2**30 bytes; an "80 GB" H100 has 79.2 GiB as CUDA reports it).
    gpu_memory_utilization : float
        vLLM's ``--gpu-memory-utilization``, in (0, 1].
    tensor_parallel_size : int
        vLLM's ``--tensor-parallel-size`` (see :meth:`ModelFacts.kv_bytes_per_token_per_gpu`).
    expert_parallel_size : int, optional
        GPUs the routed experts are spread over (``tp x dp`` with ``--enable-expert-parallel``;
        default ``tp``).
    block_size : int
        Tokens per KV block (vLLM's ``--block-size``, default 16).
    activation_reserve_gib : float, optional
        The reserve to subtract, GiB; default: :func:`activation_reserve_bytes` (an approximation).
    max_num_batched_tokens, max_num_seqs : int
        vLLM's budgets, used by the default reserve only.  2048 is the value of the shared runs;
        256 is vLLM's default ``max_num_seqs``.
    kv_bytes_per_value : int, optional
        Bytes per cached value (default: the model's ``dtype``; 1 for an fp8 KV cache).
    max_model_len : int, optional
        vLLM's ``--max-model-len``: vLLM refuses to start when the cache cannot hold one request
        of that many tokens, and so does this estimate (naming ``max_model_len``).

    Returns
    -------
    KVCapacityEstimate

    Raises
    ------
    ParameterError
        Naming the parameter: a utilization outside (0, 1], a tensor-parallel size that does not
        split the heads, weights (plus reserve) that do not fit, a cache of less than one block.

    References
    ----------
    Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention",
    arXiv:2309.06180 (blocks of KV cache; vLLM sizes their number from the memory left after a
    profiling run).
    """
    if not isinstance(model, ModelFacts):
        raise ParameterError("model", model, "a ModelFacts (fluidq.models.load_model or ModelFacts.from_config)")
    mem = real("gpu_memory_gib", gpu_memory_gib, positive=True, maximum=MAX_GPU_MEMORY_GIB, why=GPU_MEMORY_WHY)
    util = real("gpu_memory_utilization", gpu_memory_utilization)
    if not 0 < util <= 1:
        raise ParameterError("gpu_memory_utilization", gpu_memory_utilization, "a fraction in (0, 1]",
                             "vLLM's --gpu-memory-utilization: 0.9 is its default")
    tp = integer("tensor_parallel_size", tensor_parallel_size, minimum=1, maximum=MAX_PARALLEL, why=PARALLEL_WHY)
    bs = integer("block_size", block_size, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
    # checked even when a given reserve leaves them unused: they are recorded in ``inputs``
    max_num_batched_tokens = integer("max_num_batched_tokens", max_num_batched_tokens, minimum=1,
                                     maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
    max_num_seqs = integer("max_num_seqs", max_num_seqs, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
    budget_holds_seqs("max_num_batched_tokens", max_num_batched_tokens, max_num_seqs)  # vLLM's scheduler refuses it
    if activation_reserve_gib is None:
        reserve_given = None
        how = (f"estimated: {max_num_batched_tokens} batched tokens x (4 x hidden + 3 x ffn/tp) x "
               f"{model.bytes_per_value} B + {max_num_seqs} seqs x vocab x 8 B (fp32 logits, 2 copies) + "
               f"{NON_TORCH_OVERHEAD_GIB} GiB non-PyTorch memory")
    else:
        r = real("activation_reserve_gib", activation_reserve_gib, nonnegative=True, maximum=MAX_GPU_MEMORY_GIB,
                 why=GPU_MEMORY_WHY)
        reserve_given = int(r * GIB)
        how = "given"
    usable = int(mem * util * GIB)

    def plan(t: int) -> tuple[int, int, int, int]:
        """``(kv bytes per token per GPU, weights per GPU, reserve, bytes left for the cache)`` on ``t`` GPUs:
        the one calculation, for the answer and for the tensor-parallel size a refusal suggests."""
        per_token = model.kv_bytes_per_token_per_gpu(t, kv_bytes_per_value=kv_bytes_per_value)
        weights = model.weight_bytes_per_gpu(t, expert_parallel_size=expert_parallel_size if t == tp else None)
        reserve = reserve_given if reserve_given is not None else activation_reserve_bytes(
            model, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, tensor_parallel_size=t)
        return per_token, weights, reserve, usable - weights - reserve

    group_size, full_groups, sliding_groups = kv_cache_groups(model.n_layers, model.n_sliding_layers)
    slots = group_size * (full_groups + sliding_groups)  # layer slots, padding included

    def one_block(per_token_bytes: int) -> int:
        """Bytes of one block in every group: a page (``per_token x block_size / n_layers``) in each slot."""
        return per_token_bytes * bs * slots // model.n_layers

    per_token, weights, reserve, left = plan(tp)
    if left < one_block(per_token):
        what = "the weights do not fit" if weights >= usable else \
            "the weights and reserve leave less than one KV block"
        hint = "raise --gpu-memory-utilization or --tensor-parallel-size, or use a larger GPU"
        if expert_parallel_size is None:  # the smallest tensor-parallel size that leaves a block on this GPU
            for t in model.tensor_parallel_sizes(MAX_TP_HINT):
                if t > tp:
                    tok, _, _, room = plan(t)
                    if room >= one_block(tok):
                        hint += f"; it fits from --tensor-parallel-size {t}"
                        break
        if model.quantization is None and model.bytes_per_value >= 2 and weights >= usable:  # the weights alone
            fp8 = model.replace(quantization="fp8").weight_bytes_per_gpu(
                tp, expert_parallel_size=expert_parallel_size)
            fits = usable - fp8 - reserve >= one_block(per_token)
            hint += (f"; an FP8 checkpoint of the model takes {fp8 / GIB:.2f} GiB per GPU"
                     + (" and fits at this size" if fits else ""))
        if reserve_given is None and weights < usable:  # the estimated reserve is what leaves no room
            hint += (f"; the reserve grows with --max-num-seqs ({max_num_seqs} x vocab {model.vocab_size} x 8 B of "
                     f"logits) and --max-num-batched-tokens ({max_num_batched_tokens}): lower them")
        need = weights + reserve + one_block(per_token)  # what a utilization must leave usable
        if util < DEFAULT_UTILIZATION and need <= int(mem * DEFAULT_UTILIZATION * GIB):
            # a lowered utilization is what leaves no room: name it, not the GPU (it fits at vLLM's default)
            least = math.ceil(need / (mem * GIB) * 100) / 100
            raise ParameterError(
                "gpu_memory_utilization", util,
                f"a utilization that leaves room for the KV cache: {what} ({mem:g} GiB x {util:g} = "
                f"{usable / GIB:.2f} GiB usable; weights {weights / GIB:.2f} GiB per GPU, reserve "
                f"{reserve / GIB:.2f} GiB, one block {one_block(per_token) / GIB:.4f} GiB)",
                f"it fits from --gpu-memory-utilization {least:g} (vLLM's default is {DEFAULT_UTILIZATION:g})")
        raise ParameterError(
            "gpu_memory_gib", gpu_memory_gib,
            f"more memory: {what} ({mem:g} GiB x {util:g} = {usable / GIB:.2f} GiB usable; weights "
            f"{weights / GIB:.2f} GiB per GPU, reserve {reserve / GIB:.2f} GiB, one block "
            f"{one_block(per_token) / GIB:.4f} GiB)", hint)
    page = per_token * bs // model.n_layers  # one layer's block
    pool = left // (page * group_size)  # vLLM's num_blocks: one page in each of the group_size slots
    groups = full_groups + sliding_groups
    blocks = pool // groups  # what vLLM logs, in blocks
    tokens = blocks * bs
    mml = integer("max_model_len", max_model_len, minimum=1, allow_none=True, maximum=MAX_BUDGET_TOKENS * 64,
                  why="no model has a context of more than 2**30 tokens")
    inputs = {"model": model.name, "gpu_memory_gib": mem, "gpu_memory_utilization": util,
              "tensor_parallel_size": tp, "expert_parallel_size": expert_parallel_size, "block_size": bs,
              "activation_reserve_gib": activation_reserve_gib, "max_num_batched_tokens": max_num_batched_tokens,
              "max_num_seqs": max_num_seqs, "kv_bytes_per_value": kv_bytes_per_value,
              "max_model_len": max_model_len}
    reason = (f"an estimate of vLLM's memory planner, not a measurement: ({mem:g} GiB x {util:g} - weights "
              f"{weights / GIB:.2f} GiB per GPU - reserve {reserve / GIB:.2f} GiB [{how}]) / "
              f"{per_token:,} B per token per GPU [{model.kv_rule}], floored to {blocks:,} blocks of {bs}")
    if groups > 1:
        pad = slots - model.n_layers
        reason += (f"; vLLM's KV-cache groups: {full_groups} full + {sliding_groups} sliding-window of {group_size} "
                   f"layers ({slots} slots for {model.n_layers} layers"
                   + (f", {pad} padding" if pad else "") + f"): a pool of {pool:,} blocks of "
                   f"{page * group_size:,} B, {blocks:,} per group")
    est = KVCapacityEstimate(tokens=int(tokens), blocks=int(blocks), block_size=bs,
                             kv_bytes_per_token_per_gpu=per_token, weight_bytes_per_gpu=weights,
                             reserve_bytes=reserve, usable_bytes=usable, kv_bytes=left,
                             reserve_estimated=activation_reserve_gib is None, inputs=inputs, reason=reason,
                             n_layers=model.n_layers, n_sliding_layers=model.n_sliding_layers,
                             sliding_window=model.sliding_window, group_size=group_size,
                             full_groups=full_groups, sliding_groups=sliding_groups, pool_blocks=int(pool))
    if mml is not None:
        check_fits_cache(mml, est.longest_request(),
                         f"the estimated KV cache ({tokens:,} tokens, vLLM's memory planner)", "more memory")
    return est


def sliding_note(estimate: KVCapacityEstimate, tokens: int) -> str:
    """Words for a KV cache of ``tokens`` taken from :meth:`KVCapacityEstimate.tokens_at_context` rather than the
    logged :attr:`~KVCapacityEstimate.tokens` (a model with sliding-window layers)."""
    return (f"; {tokens:,} context tokens at the workload's mean context where vLLM logs {estimate.tokens:,}: "
            f"{estimate.n_sliding_layers} of {estimate.n_layers} layers keep only their last "
            f"{estimate.sliding_window} + {estimate.block_size} tokens (vLLM's hybrid KV-cache allocator; "
            "every request taken at the mean)")
