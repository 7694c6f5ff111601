"""``ModelFacts``: the sizes of a decoder-only transformer, and what follows from them.

Only the shapes are described (layers, widths, heads, experts, the number format); the derived
quantities are exact products of those shapes:

* parameters: embedding (and, when not tied, the LM head) + per layer (attention projections, MLP or
  experts and router, RMS norms) + the final norm.  MoE: *total* counts every expert, *active* only
  the ``experts_per_token`` routed ones (plus shared experts) that one token goes through.  Not
  counted: bias vectors other than Qwen2's q/k/v biases (DeepSeek-V3's router score-correction
  bias, 256 values per MoE layer) and DeepSeek-V3's multi-token-prediction layer;
* weight bytes: parameters x bytes per parameter (``quantization="fp8"``: the decoder layers'
  projection matrices at 1 byte, everything else in ``dtype``);
* KV bytes per token: ``2 x n_layers x n_kv_heads x head_dim x bytes`` (one key and one value vector per
  KV head per layer).  Multi-head latent attention (DeepSeek-V2/V3) caches one compressed vector of
  ``kv_lora_rank + qk_rope_head_dim`` values per layer instead: ``n_layers x (kv_lora_rank +
  qk_rope_head_dim) x bytes``, as vLLM stores it;
* per GPU under tensor parallelism ``tp``: query heads and the MLP are split ``tp`` ways; the KV heads
  too when ``n_kv_heads >= tp`` (``tp`` must divide them), and when ``n_kv_heads < tp`` each GPU holds one
  replicated KV head (``tp`` must be a multiple of ``n_kv_heads``): KV heads per GPU =
  ``max(1, n_kv_heads // tp)``.  This is vLLM's rule (``QKVParallelLinear``).  The MLA latent cache is
  replicated on every GPU.  Experts are split over ``expert_parallel_size`` GPUs (vLLM's
  ``--enable-expert-parallel`` uses tp x dp of them); without expert parallelism they are split ``tp``
  ways like any MLP.

References
----------
Vaswani et al., "Attention Is All You Need", arXiv:1706.03762 (the layer); Ainslie et al., "GQA:
Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints", arXiv:2305.13245
(KV heads); DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language
Model", arXiv:2405.04434 (MLA); Shoeybi et al., "Megatron-LM", arXiv:1909.08053 (the tensor-parallel
split).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from numbers import Integral

from ..errors import ParameterError, ParameterTypeError

__all__ = ["ModelFacts", "DTYPE_BYTES", "MAX_DIMENSION", "MAX_LAYERS", "MAX_PARALLEL", "MAX_LEN_KEYS"]

#: bytes per value of each number format a config may name (``torch_dtype``)
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}

#: the quantizations whose weight size is known, and the bytes each decoder-layer projection matrix's
#: parameter takes: ``fp8`` (and fbgemm/compressed-tensors FP8) 1 byte; ``int8`` weight-only 1 byte; ``int4``
#: (AWQ, GPTQ, compressed-tensors W4A16) half a byte plus a 16-bit scale and a 4-bit zero point per group
#: of 128 weights (the formats' default group); ``mxfp4`` (the OCP microscaling format GPT-OSS ships its
#: experts in) half a byte plus one 8-bit shared exponent per block of 32.  Embedding, LM head, norms and
#: routers stay in ``dtype``.
QUANTIZATIONS = {"fp8": 1.0, "int8": 1.0, "int4": 0.5 + (2 + 0.5) / 128, "mxfp4": 0.5 + 1 / 32}

#: Largest width (hidden size, head dim, MLP width, vocabulary): 2**24.  Today's largest hidden
#: sizes are about 2**14 and vocabularies about 2**18; products of a few such widths stay exact ints.
MAX_DIMENSION = 2**24
DIMENSION_WHY = "today's models have widths up to about 2**14 and vocabularies up to about 2**18"

#: Most layers, heads or experts: 2**16 (models have at most a few hundred layers and experts).
MAX_LAYERS = 2**16
LAYERS_WHY = "models have at most a few hundred layers, heads or experts"

#: Most GPUs a model is split over (tensor or expert parallel): 2**16.
MAX_PARALLEL = 2**16
PARALLEL_WHY = "no deployment splits one model over more than 65,536 GPUs"


#: The config.json keys a model's length is read from, in vLLM's order (vllm/config, ``_get_and_verify_max_len``:
#: OPT and most, GPT-2, MPT, ChatGLM2, Command-R, Whisper, others): the smallest present is the length, except that a
#: ``model_max_length`` (Command-R / Cohere) is taken whatever the others say.
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")


def _int(name: str, value, *, minimum: int = 1, maximum: int = MAX_DIMENSION, why: str = DIMENSION_WHY,
         allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ParameterTypeError(f"{name}={value!r}: expected an integer, got {type(value).__name__}")
    v = int(value)
    if v < minimum:
        raise ParameterError(name, value, f"an integer >= {minimum}")
    if v > maximum:
        raise ParameterError(name, value, f"an integer <= {maximum:,}", why)
    return v


@dataclass(frozen=True, kw_only=True)
class ModelFacts:
    """The shapes of a decoder-only transformer (dense or mixture-of-experts).

    Parameters
    ----------
    name : str
        The model's name (e.g. ``"Llama-3.1-8B"``).
    architecture : str
        The Hugging Face ``model_type`` (``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``mixtral``,
        ``qwen3_moe``, ``deepseek_v2``, ``deepseek_v3``).
    n_layers, hidden_size, n_heads, n_kv_heads, head_dim : int
        Decoder layers, model width, query heads, key/value heads (grouped-query attention when fewer
        than ``n_heads``; ``n_heads`` must be a multiple), width of one head.
    intermediate_size : int
        Width of a dense MLP (SwiGLU: three ``hidden x intermediate`` matrices).  In a MoE model it is
        the width of the dense layers' MLP (``n_dense_layers`` of them; unused when there are none).
    vocab_size : int
        Vocabulary (rows of the embedding and of the LM head).
    n_experts, experts_per_token, moe_intermediate_size : int or None
        Routed experts per MoE layer, the top-k each token goes to, and one expert's MLP width;
        ``None`` for a dense model (all three, or none).
    n_shared_experts : int
        Experts every token goes through besides the routed ones (DeepSeek), each of width
        ``moe_intermediate_size``.
    n_dense_layers : int
        Layers of a MoE model with a dense MLP instead of experts (DeepSeek's first
        ``first_k_dense_replace``); 0 for a dense model.
    dtype : str
        Number format of weights, activations and (vLLM's ``kv_cache_dtype="auto"``) the KV cache; one
        of :data:`DTYPE_BYTES`.
    quantization : str or None
        ``"fp8"``: the decoder layers' projection matrices are stored at 1 byte per parameter
        (DeepSeek-V3's checkpoint; block scales, about 0.006 % more, are not counted) and multiplied at
        the GPU's FP8 rate; ``"int8"`` / ``"int4"``: weight-only integer formats (GPTQ, AWQ,
        compressed-tensors W8A16/W4A16), 1 byte / about 0.52 byte per parameter (:data:`QUANTIZATIONS`),
        multiplied at the ``dtype`` rate after dequantisation; ``"mxfp4"``: 4-bit floats with a shared
        8-bit exponent per 32 (GPT-OSS's experts), about 0.53 byte per parameter, multiplied at the ``dtype``
        rate.
    quantize_attention : bool
        The quantization covers the attention projections too (the default); ``False`` when the checkpoint
        keeps them in ``dtype`` (GPT-OSS's ``modules_to_not_convert: self_attn``): only the MLPs and
        experts are in the quantized format.
    tie_word_embeddings : bool
        The LM head shares the embedding matrix.
    attention_bias : bool
        The query, key and value projections have biases (Qwen2).
    qk_norm : bool
        RMS norms on each query and key head (Qwen3).
    q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim : int or None
        Multi-head latent attention (DeepSeek-V2/V3); ``kv_lora_rank`` set means MLA (``q_lora_rank``
        may stay ``None``: a direct query projection).
    max_position_embeddings : int or None
        The longest context the config declares: its ``max_position_embeddings``, or where vLLM reads another of
        its length keys (:data:`MAX_LEN_KEYS`: GPT-2's ``n_positions``, ChatGLM's ``seq_length``...) that one.
    max_len_key : str
        The config key ``max_position_embeddings`` was read from (one of :data:`MAX_LEN_KEYS`).
    rope_scaling : tuple or None
        The config's ``rope_scaling`` as vLLM reads it for the context length: ``(rope_type, factor,
        original_max_position_embeddings)`` (:func:`fluidq.models.context.rope_scaling_from_config`); vLLM's
        derived ``max_model_len`` scales ``max_position_embeddings`` by it
        (:func:`fluidq.models.context.derived_max_model_len`).
    gated_mlp : bool
        The MLP has a gate (SwiGLU/GeGLU: three ``hidden x intermediate`` matrices; Llama, Qwen, Mistral,
        Gemma, Phi-3); ``False``: two (up and down; GPT-NeoX, OPT, Falcon, Phi-2).
    linear_bias : bool
        Every projection has a bias (GPT-NeoX, OPT, Phi-2); Qwen2's q/k/v biases are ``attention_bias``.
    norms_per_layer : int
        Norms in one decoder layer: 2 (before attention and before the MLP), 4 (Gemma-2/3: also after
        each), 1 (Falcon-7B's and Phi-2's parallel attention and MLP share one).
    norm_bias : bool
        The norms are LayerNorms with a bias (GPT-NeoX, OPT, Falcon, Phi-2), not RMS norms.
    position_embeddings : int
        Rows of a learned absolute-position table (OPT: ``max_position_embeddings + 2``); 0 for rotary.
    sliding_window : int or None
        The attention window of the layers that use one (Mistral-7B-v0.1, Gemma-2/3, GPT-OSS).
    n_sliding_layers : int
        How many layers attend within ``sliding_window`` (the others attend to the whole context): all of
        Mistral-7B-v0.1's, every other of Gemma-2's and GPT-OSS's, five in six of Gemma-3's.  The KV bytes
        per token count every layer in full (what vLLM logs as its "GPU KV cache size"); a request longer
        than the window holds less, which :meth:`~fluidq.models.KVCapacityEstimate.tokens_at_context` says.
    source : str
        Where the numbers come from.
    """

    name: str
    architecture: str = "llama"
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    n_experts: int | None = None
    experts_per_token: int | None = None
    moe_intermediate_size: int | None = None
    n_shared_experts: int = 0
    n_dense_layers: int = 0
    dtype: str = "bfloat16"
    quantization: str | None = None
    quantize_attention: bool = True
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    max_position_embeddings: int | None = None
    max_len_key: str = "max_position_embeddings"
    rope_scaling: tuple | None = None
    gated_mlp: bool = True
    linear_bias: bool = False
    norms_per_layer: int = 2
    norm_bias: bool = False
    position_embeddings: int = 0
    sliding_window: int | None = None
    n_sliding_layers: int = 0
    source: str = ""

    def __post_init__(self):
        for f in ("name", "architecture", "source"):
            if not isinstance(getattr(self, f), str):
                raise ParameterTypeError(f"{f}={getattr(self, f)!r}: expected a string")
        if not self.name.strip():
            raise ParameterError("name", self.name, "a non-empty model name")
        _int("n_layers", self.n_layers, maximum=MAX_LAYERS, why=LAYERS_WHY)
        _int("n_heads", self.n_heads, maximum=MAX_LAYERS, why=LAYERS_WHY)
        _int("n_kv_heads", self.n_kv_heads, maximum=MAX_LAYERS, why=LAYERS_WHY)
        for f in ("hidden_size", "head_dim", "intermediate_size", "vocab_size"):
            _int(f, getattr(self, f))
        if self.n_heads % self.n_kv_heads:
            raise ParameterError("n_kv_heads", self.n_kv_heads, f"a divisor of n_heads={self.n_heads}",
                                 "each KV head serves a whole group of query heads")
        moe = (self.n_experts, self.experts_per_token, self.moe_intermediate_size)
        if any(v is not None for v in moe):
            if any(v is None for v in moe):
                missing = [n for n, v in zip(("n_experts", "experts_per_token", "moe_intermediate_size"), moe)
                           if v is None]
                raise ParameterError(missing[0], None, "an integer >= 1 for a MoE model",
                                     "a MoE model gives n_experts, experts_per_token and moe_intermediate_size")
            _int("n_experts", self.n_experts, maximum=MAX_LAYERS, why=LAYERS_WHY)
            _int("experts_per_token", self.experts_per_token, maximum=MAX_LAYERS, why=LAYERS_WHY)
            _int("moe_intermediate_size", self.moe_intermediate_size)
            if self.experts_per_token > self.n_experts:
                raise ParameterError("experts_per_token", self.experts_per_token,
                                     f"at most n_experts={self.n_experts}")
            _int("n_shared_experts", self.n_shared_experts, minimum=0, maximum=MAX_LAYERS, why=LAYERS_WHY)
            _int("n_dense_layers", self.n_dense_layers, minimum=0, maximum=MAX_LAYERS, why=LAYERS_WHY)
            if self.n_dense_layers >= self.n_layers:
                raise ParameterError("n_dense_layers", self.n_dense_layers,
                                     f"fewer than n_layers={self.n_layers} (a MoE model has a MoE layer)")
        else:
            for f in ("n_shared_experts", "n_dense_layers"):
                if getattr(self, f) != 0:
                    raise ParameterError(f, getattr(self, f), "0 for a dense model (n_experts=None)")
        if self.dtype not in DTYPE_BYTES:
            raise ParameterError("dtype", self.dtype, f"one of {', '.join(DTYPE_BYTES)}")
        if self.quantization is not None and self.quantization not in QUANTIZATIONS:
            raise ParameterError("quantization", self.quantization, f"None or one of {', '.join(QUANTIZATIONS)}",
                                 "other quantized formats (FP4, NF4...) have sizes fluidq does not compute")
        _int("norms_per_layer", self.norms_per_layer, minimum=0, maximum=8, why="a decoder layer has at most 4 norms")
        _int("position_embeddings", self.position_embeddings, minimum=0, maximum=2**40,
             why="no model has a context of more than 2**40 tokens")
        _int("sliding_window", self.sliding_window, allow_none=True, maximum=2**40,
             why="no model has a context of more than 2**40 tokens")
        _int("n_sliding_layers", self.n_sliding_layers, minimum=0, maximum=self.n_layers,
             why=f"a model of n_layers={self.n_layers} has no more windowed layers")
        if self.n_sliding_layers and self.sliding_window is None:
            raise ParameterError("n_sliding_layers", self.n_sliding_layers, "0 without a sliding_window")
        for f in ("tie_word_embeddings", "attention_bias", "qk_norm", "gated_mlp", "linear_bias", "norm_bias",
                  "quantize_attention"):
            if not isinstance(getattr(self, f), bool):
                raise ParameterTypeError(f"{f}={getattr(self, f)!r}: expected True or False")
        mla = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        if self.kv_lora_rank is not None or self.q_lora_rank is not None:
            for f in mla:
                if getattr(self, f) is None:
                    raise ParameterError(f, None, "an integer >= 1 for multi-head latent attention",
                                         f"MLA needs {', '.join(mla)}")
                _int(f, getattr(self, f))
            _int("q_lora_rank", self.q_lora_rank, allow_none=True)
            if self.head_dim != self.qk_nope_head_dim + self.qk_rope_head_dim:
                raise ParameterError("head_dim", self.head_dim,
                                     f"qk_nope_head_dim + qk_rope_head_dim = "
                                     f"{self.qk_nope_head_dim + self.qk_rope_head_dim} for MLA")
        else:
            for f in mla:
                if getattr(self, f) is not None:
                    raise ParameterError(f, getattr(self, f), "None without kv_lora_rank (no MLA)")
        _int("max_position_embeddings", self.max_position_embeddings, allow_none=True, maximum=2**40,
             why="no model has a context of more than 2**40 tokens")
        if self.max_len_key not in MAX_LEN_KEYS:
            raise ParameterError("max_len_key", self.max_len_key, f"one of {', '.join(MAX_LEN_KEYS)}",
                                 "the config.json keys vLLM reads a model's length from")
        if self.rope_scaling is not None:  # (rope_type, factor, original_max_position_embeddings or None)
            rs = self.rope_scaling
            ok = (isinstance(rs, (tuple, list)) and len(rs) == 3 and isinstance(rs[0], str)
                  and isinstance(rs[1], (int, float)) and not isinstance(rs[1], bool) and 0 < rs[1] < float("inf")
                  and (rs[2] is None or isinstance(rs[2], int) and not isinstance(rs[2], bool) and rs[2] >= 1))
            if not ok:
                raise ParameterError("rope_scaling", rs, "None or (rope_type, factor > 0, "
                                     "original_max_position_embeddings or None)")
            object.__setattr__(self, "rope_scaling", (rs[0], float(rs[1]), rs[2]))  # (a JSON list: a tuple)

    # ------------------------------------------------------------------------------------------------
    # what kind of model
    # ------------------------------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        """Whether the model has experts."""
        return self.n_experts is not None

    @property
    def is_mla(self) -> bool:
        """Whether the model uses multi-head latent attention (DeepSeek-V2/V3)."""
        return self.kv_lora_rank is not None

    @property
    def bytes_per_value(self) -> int:
        """Bytes of one value in ``dtype`` (activations and, by default, the KV cache)."""
        return DTYPE_BYTES[self.dtype]

    @property
    def n_moe_layers(self) -> int:
        """Layers with experts (0 for a dense model)."""
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    # ------------------------------------------------------------------------------------------------
    # parameter counts, by part (one layer unless said)
    # ------------------------------------------------------------------------------------------------
    def _attention_matrices(self) -> dict[str, int]:
        """Parameters of each attention projection matrix of one layer (biases apart)."""
        h = self.hidden_size
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            out = {}
            if self.q_lora_rank is None:
                out["q"] = h * self.n_heads * qk
            else:
                out["q_a"] = h * self.q_lora_rank
                out["q_b"] = self.q_lora_rank * self.n_heads * qk
            out["kv_a"] = h * (self.kv_lora_rank + self.qk_rope_head_dim)
            out["kv_b"] = self.kv_lora_rank * self.n_heads * (self.qk_nope_head_dim + self.v_head_dim)
            out["o"] = self.n_heads * self.v_head_dim * h
            return out
        return {"q": h * self.n_heads * self.head_dim, "k": h * self.n_kv_heads * self.head_dim,
                "v": h * self.n_kv_heads * self.head_dim, "o": self.n_heads * self.head_dim * h}

    def _attention_small(self) -> int:
        """Attention parameters outside the matrices: q/k/v biases, per-head norms, MLA's low-rank norms."""
        n = 0
        if self.attention_bias:
            n += (self.n_heads + 2 * self.n_kv_heads) * self.head_dim
        if self.qk_norm:
            n += 2 * self.head_dim
        if self.is_mla:
            n += self.kv_lora_rank + (self.q_lora_rank or 0)
        if self.linear_bias:  # q, k, v and output biases
            n += (self.n_heads + 2 * self.n_kv_heads) * self.head_dim + self.hidden_size
        return n

    @property
    def attention_params_per_layer(self) -> int:
        """Parameters of one layer's attention (projections, biases, per-head or low-rank norms)."""
        return sum(self._attention_matrices().values()) + self._attention_small()

    @property
    def mlp_matrices(self) -> int:
        """``hidden x intermediate`` matrices of one MLP: 3 with a gate (SwiGLU/GeGLU), else 2."""
        return 3 if self.gated_mlp else 2

    @property
    def dense_mlp_params(self) -> int:
        """Parameters of one dense MLP: ``3 x hidden_size x intermediate_size`` (gated; 2 x without a
        gate), plus its biases when ``linear_bias``."""
        bias = self.intermediate_size * (self.mlp_matrices - 1) + self.hidden_size if self.linear_bias else 0
        return self.mlp_matrices * self.hidden_size * self.intermediate_size + bias

    @property
    def expert_params(self) -> int:
        """Parameters of one expert: ``3 x hidden_size x moe_intermediate_size`` (0 for a dense model)."""
        return self.mlp_matrices * self.hidden_size * self.moe_intermediate_size if self.is_moe else 0

    @property
    def router_params(self) -> int:
        """Parameters of one MoE layer's router: ``hidden_size x n_experts`` (0 for a dense model)."""
        return self.hidden_size * self.n_experts if self.is_moe else 0

    @property
    def embedding_params(self) -> int:
        """The embedding plus, unless tied, the LM head: ``vocab x hidden`` once or twice (plus a learned
        position table of ``position_embeddings x hidden``)."""
        return (self.vocab_size * (1 if self.tie_word_embeddings else 2) + self.position_embeddings) * self.hidden_size

    @property
    def norm_params(self) -> int:
        """Every layer's norms (``norms_per_layer``, usually two) and the final norm: vectors of
        ``hidden_size``, twice that for LayerNorms with a bias."""
        return (self.norms_per_layer * self.n_layers + 1) * self.hidden_size * (2 if self.norm_bias else 1)

    def _counts(self) -> dict[str, int]:
        """Total parameters by part, summed over the layers."""
        L = self.n_layers
        dense_layers = L if not self.is_moe else self.n_dense_layers
        moe_layers = self.n_moe_layers
        return {
            "embedding": self.embedding_params,
            "norms": self.norm_params,
            "attention_matrices": L * sum(self._attention_matrices().values()),
            "attention_small": L * self._attention_small(),
            "dense_mlp": dense_layers * self.dense_mlp_params,
            "routed_experts": moe_layers * (self.n_experts or 0) * self.expert_params,
            "shared_experts": moe_layers * self.n_shared_experts * self.expert_params,
            "routers": moe_layers * self.router_params,
        }

    @property
    def param_count(self) -> int:
        """Every parameter of the model (MoE: all experts)."""
        return sum(self._counts().values())

    @property
    def active_param_count(self) -> int:
        """Parameters one token goes through: all but the routed experts it is not sent to.

        Equal to :attr:`param_count` for a dense model.
        """
        c = self._counts()
        if self.is_moe:
            c["routed_experts"] = self.n_moe_layers * self.experts_per_token * self.expert_params
        return sum(c.values())

    # ------------------------------------------------------------------------------------------------
    # bytes
    # ------------------------------------------------------------------------------------------------
    @property
    def matrix_bytes_per_param(self) -> float:
        """Bytes one parameter of a decoder layer's projection matrices takes: the ``dtype``'s, or the
        quantized format's (:data:`QUANTIZATIONS`)."""
        return QUANTIZATIONS[self.quantization] if self.quantization else float(self.bytes_per_value)

    @property
    def attention_bytes_per_param(self) -> float:
        """Bytes one parameter of the attention projections takes: :attr:`matrix_bytes_per_param`, or the
        ``dtype``'s when the quantization leaves attention out (``quantize_attention=False``)."""
        return self.matrix_bytes_per_param if self.quantize_attention else float(self.bytes_per_value)

    def _bytes(self, counts: dict[str, int]) -> int:
        b = self.bytes_per_value
        if self.quantization:  # the layers' projection matrices in the quantized format, the rest in dtype
            q = self.matrix_bytes_per_param
            matrices = ("attention_matrices",) * self.quantize_attention + ("dense_mlp", "routed_experts",
                                                                            "shared_experts")
            return int(round(sum(v * (q if k in matrices else b) for k, v in counts.items())))
        return b * sum(counts.values())

    @property
    def weight_bytes(self) -> int:
        """Bytes of all weights (see ``quantization``)."""
        return self._bytes(self._counts())

    @property
    def kv_values_per_token_per_layer(self) -> int:
        """Values cached per token per layer: ``2 x n_kv_heads x head_dim``, or MLA's
        ``kv_lora_rank + qk_rope_head_dim``."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.n_kv_heads * self.head_dim

    def kv_bytes_per_token(self, *, kv_bytes_per_value: int | None = None) -> int:
        """Bytes of KV cache one token takes over all layers, on one GPU holding the whole model.

        ``2 x n_layers x n_kv_heads x head_dim x bytes`` (MLA: ``n_layers x (kv_lora_rank +
        qk_rope_head_dim) x bytes``); ``kv_bytes_per_value`` defaults to the bytes of ``dtype``
        (vLLM's ``kv_cache_dtype="auto"``; 1 for an fp8 cache).
        """
        b = self._kv_bytes(kv_bytes_per_value)
        return self.n_layers * self.kv_values_per_token_per_layer * b

    def _kv_bytes(self, kv_bytes_per_value):
        if kv_bytes_per_value is None:
            return self.bytes_per_value
        return _int("kv_bytes_per_value", kv_bytes_per_value, maximum=8, why="no number format has more than 8 bytes")

    def kv_heads_per_gpu(self, tensor_parallel_size: int = 1) -> int:
        """KV heads each GPU holds under tensor parallelism: ``max(1, n_kv_heads // tp)``.

        ``tp`` must divide ``n_heads``; when ``n_kv_heads >= tp`` it must divide ``n_kv_heads`` too,
        and when ``n_kv_heads < tp`` it must be a multiple of ``n_kv_heads`` (each KV head is then
        replicated on ``tp / n_kv_heads`` GPUs).  MLA: the one latent vector, on every GPU.
        """
        tp = self._tp(tensor_parallel_size)
        if self.is_mla:
            return 1
        if self.n_kv_heads >= tp:
            return self.n_kv_heads // tp
        return 1

    def _tp_problem(self, tp: int) -> tuple[str, str] | None:
        """``(expected, why)`` when vLLM would refuse ``tp`` for this model, else ``None``."""
        if self.n_heads % tp:
            return f"a divisor of n_heads={self.n_heads}", "each GPU holds a whole number of query heads"
        if not self.is_mla:
            if self.n_kv_heads >= tp and self.n_kv_heads % tp:
                return f"a divisor of n_kv_heads={self.n_kv_heads}", "each GPU holds a whole number of KV heads"
            if self.n_kv_heads < tp and tp % self.n_kv_heads:
                return (f"a multiple of n_kv_heads={self.n_kv_heads} when larger",
                        "the KV heads are then replicated evenly")
        dense = not self.is_moe or self.n_dense_layers
        if dense and self.intermediate_size % tp:
            return (f"a divisor of intermediate_size={self.intermediate_size}",
                    "each GPU holds an equal slice of the MLP (vLLM's column-parallel split)")
        if self.is_moe and self.moe_intermediate_size % tp:
            return (f"a divisor of moe_intermediate_size={self.moe_intermediate_size}",
                    "without expert parallelism each expert's MLP is split over the GPUs")
        return None

    def tensor_parallel_sizes(self, up_to: int = 64) -> list[int]:
        """The tensor-parallel sizes up to ``up_to`` that split this model (heads, KV heads, MLP widths)."""
        return [t for t in range(1, int(up_to) + 1) if self._tp_problem(t) is None]

    def _tp(self, tp) -> int:
        tp = _int("tensor_parallel_size", tp, maximum=MAX_PARALLEL, why=PARALLEL_WHY)
        problem = self._tp_problem(tp)
        if problem is not None:
            ok = ", ".join(str(t) for t in self.tensor_parallel_sizes(64))
            raise ParameterError("tensor_parallel_size", tp, f"{problem[0]} ({self.name}; sizes that split it: {ok})",
                                 problem[1])
        return tp

    def kv_bytes_per_token_per_gpu(self, tensor_parallel_size: int = 1, *,
                                   kv_bytes_per_value: int | None = None) -> int:
        """Bytes of KV cache one token takes on each GPU under tensor parallelism ``tp``.

        ``2 x n_layers x max(1, n_kv_heads // tp) x head_dim x bytes``: the KV heads are split over
        the GPUs, and replicated when there are fewer of them than GPUs (see :meth:`kv_heads_per_gpu`).
        MLA: the latent cache is not split, every GPU holds :meth:`kv_bytes_per_token`.
        """
        heads = self.kv_heads_per_gpu(tensor_parallel_size)
        b = self._kv_bytes(kv_bytes_per_value)
        if self.is_mla:
            return self.kv_bytes_per_token(kv_bytes_per_value=kv_bytes_per_value)
        return 2 * self.n_layers * heads * self.head_dim * b

    def weight_bytes_per_gpu(self, tensor_parallel_size: int = 1, *,
                             expert_parallel_size: int | None = None) -> int:
        """Bytes of weights on each GPU under tensor (and, for experts, expert) parallelism.

        Split ``tp`` ways: the query and output projections (by head), the key and value projections
        (by KV head; one replicated KV head per GPU when ``n_kv_heads < tp``), dense MLPs and shared
        experts, the embedding and the LM head (by vocabulary row; vLLM's padding of the vocabulary
        to a multiple of 64 per GPU is not counted).  Not split: the norms, the routers, MLA's two
        down-projections ``q_a``/``kv_a``.  Routed experts: split over ``expert_parallel_size`` GPUs
        (default ``tp``: no expert parallelism, each expert tensor-parallel); with vLLM's
        ``--enable-expert-parallel`` pass ``tp x data_parallel_size``.
        """
        tp = self._tp(tensor_parallel_size)
        ep = tp if expert_parallel_size is None else _int("expert_parallel_size", expert_parallel_size,
                                                          maximum=MAX_PARALLEL, why=PARALLEL_WHY)
        if expert_parallel_size is not None and not self.is_moe and ep != 1:
            raise ParameterError("expert_parallel_size", ep, "None or 1 for a dense model (it has no experts)")
        if expert_parallel_size is not None and self.is_moe and self.n_experts % ep and ep % self.n_experts:
            raise ParameterError("expert_parallel_size", ep, f"a divisor of n_experts={self.n_experts}",
                                 "each GPU holds a whole number of experts")
        c = self._counts()
        mats = self._attention_matrices()
        L = self.n_layers
        per_gpu = dict(c)
        if self.is_mla:
            split = sum(v for k, v in mats.items() if k in ("q", "q_b", "kv_b", "o"))
            kept = sum(v for k, v in mats.items() if k in ("q_a", "kv_a"))
            per_gpu["attention_matrices"] = L * (-(-split // tp) + kept)
        else:
            kvh = self.kv_heads_per_gpu(tp)
            h, d = self.hidden_size, self.head_dim
            per_gpu["attention_matrices"] = L * (-(-(mats["q"] + mats["o"]) // tp) + 2 * h * kvh * d)
            if self.attention_bias:
                per_gpu["attention_small"] = L * ((self.n_heads // tp + 2 * kvh) * d
                                                  + (2 * d if self.qk_norm else 0))
        for k in ("dense_mlp", "shared_experts", "embedding"):
            per_gpu[k] = -(-c[k] // tp)
        per_gpu["routed_experts"] = -(-c["routed_experts"] // ep) if self.is_moe else 0
        return self._bytes(per_gpu)

    # ------------------------------------------------------------------------------------------------
    def replace(self, **changes) -> "ModelFacts":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self, *, derived: bool = False) -> dict:
        """The fields; with ``derived``, also the counts and sizes (one GPU)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if derived:
            d["derived"] = {"param_count": self.param_count, "active_param_count": self.active_param_count,
                            "weight_bytes": self.weight_bytes, "kv_bytes_per_token": self.kv_bytes_per_token(),
                            "kv_rule": self.kv_rule}
        return d

    @property
    def kv_rule(self) -> str:
        """The KV-size formula used for this model, in words."""
        if self.is_mla:
            return (f"MLA latent cache: n_layers x (kv_lora_rank + qk_rope_head_dim) x bytes = {self.n_layers} x "
                    f"({self.kv_lora_rank} + {self.qk_rope_head_dim}) x {self.bytes_per_value}; replicated on every "
                    "tensor-parallel GPU")
        rule = (f"2 x n_layers x n_kv_heads x head_dim x bytes = 2 x {self.n_layers} x {self.n_kv_heads} x "
                f"{self.head_dim} x {self.bytes_per_value}; per GPU max(1, n_kv_heads // tp) KV heads")
        if self.n_sliding_layers:
            rule += (f"; the {self.n_sliding_layers} of {self.n_layers} layers with a {self.sliding_window}-token "
                     "sliding window counted in full, as vLLM logs its KV cache size (a request longer than the "
                     "window holds less: KVCapacityEstimate.tokens_at_context)")
        return rule

    @classmethod
    def from_config(cls, path, *, name: str | None = None, dtype: str | None = None,
                    option: str = "path") -> "ModelFacts":
        """Read a Hugging Face ``config.json`` (a local path, or a model folder holding one; nothing is
        downloaded).

        Families: Llama (2/3/3.x, CodeLlama, Yi, Granite), Mistral, Qwen2/2.5 (and -VL), Qwen3, Gemma
        1/2/3, Phi-3, Mixtral, Qwen2-MoE, Qwen3-MoE, Llama-4, DeepSeek-V2/V3 and Kimi-K2 (MLA), GPT-NeoX,
        OPT, Falcon, Phi-2; a multimodal wrapper's ``text_config`` (see :mod:`fluidq.models.config`).
        ``quantization_config``: FP8 and AWQ/GPTQ/compressed-tensors int4/int8 weights.  ``name`` defaults to the config's ``_name_or_path`` or the
        folder's name; ``dtype`` overrides ``torch_dtype`` (vLLM's ``--dtype``).  A missing or
        malformed key, an unknown family, a file that is not JSON: one
        :class:`~fluidq.errors.DataError` naming the file and the key.  ``option`` is the parameter
        the messages name (the command line passes ``--config``).
        """
        from .config import facts_from_config

        return facts_from_config(path, name=name, dtype=dtype, option=option)
