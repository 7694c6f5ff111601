"""Reading a Hugging Face ``config.json`` into :class:`~fluidq.models.ModelFacts` (internal).

The file is read with :mod:`fluidq._io` (regular files only, size-limited, one ``DataError`` for any
malformed content).  Each family's keys are read strictly: a key the family needs that is missing,
or a value of the wrong kind, is one ``DataError`` naming the file and the key.  Two keys have the
defaults of the Hugging Face config classes, which their configs often omit: ``num_key_value_heads``
(missing or null: one KV head per query head) and ``head_dim`` (missing or null:
``hidden_size / num_attention_heads``); ``tie_word_embeddings`` defaults to false (true for Gemma, OPT
and Falcon, as their config classes) and ``attention_bias`` to the family's (true for Qwen2, false
otherwise).

Families: the Llama layout (``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``gemma``, ``gemma2``,
``gemma3_text``, ``phi3``), its mixtures of experts (``mixtral``, ``qwen2_moe``, ``qwen3_moe``, ``llama4_text``,
``gpt_oss``), MLA
(``deepseek_v2``, ``deepseek_v3``), and the classic layouts with LayerNorms, biases and an MLP without a
gate (``gpt_neox``, ``opt``, ``falcon``, ``phi``).  A multimodal wrapper's text model is read from its
``text_config`` (Llama-4, Gemma-3, LLaVA, Mistral-3) or from the top level (Qwen2-VL, Qwen2.5-VL); its vision
encoder is not counted.  ``torch_dtype`` or ``dtype``: a float32 checkpoint, or a config with neither key, is
served in bfloat16, as vLLM's ``--dtype auto`` does.  ``quantization_config``: FP8 (``fp8``, ``fbgemm_fp8``,
compressed-tensors, modelopt), MXFP4 (``mxfp4``, GPT-OSS) and 4/8-bit integer weights (``awq``, ``gptq``,
compressed-tensors); others are refused by name; modules it leaves out (``modules_to_not_convert``, ``ignore``)
that name ``self_attn`` keep the attention projections in ``dtype``.  Keys a family's published configs omit
take the default of its config class, listed in :data:`CLASS_DEFAULTS` and named in the facts' ``source``.
"""
from __future__ import annotations

from pathlib import Path

from .._io import _shown, json_loads, read_text
from ..errors import DataError, FluidqError, ParameterError
from .context import rope_scaling_from_config
from .facts import DTYPE_BYTES, MAX_LEN_KEYS, ModelFacts

#: a config.json is a few kB; larger is no config
MAX_CONFIG_BYTES = 16 << 20

DENSE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3", "gpt_neox", "opt",
         "falcon", "phi")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "llama4_text", "gpt_oss")
MLA = ("deepseek_v2", "deepseek_v3")
FAMILIES = DENSE + MOE + MLA

#: other spellings of a family read the same way (the text model of a multimodal wrapper, older names)
ALIASES = {"qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2", "qwen2_vl_text": "qwen2", "qwen2_5_vl_text": "qwen2",
           "gemma3": "gemma3_text", "llama4": "llama4_text", "RefinedWeb": "falcon", "RefinedWebModel": "falcon",
           "mistral3": "mistral", "llava": "llama", "llava_next": "llama", "pixtral": "mistral", "kimi_vl": "deepseek_v3",
           "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe", "kimi_k2": "deepseek_v3",
           "granite": "llama"}

#: keys a family's published configs omit, with the default of its Hugging Face config class (transformers
#: fills them in the same way): Gemma-3's multimodal checkpoints (gemma-3-4b/12b/27b-it) give only the widths and
#: layers under ``text_config``.  A key not listed here is never defaulted: a config without ``hidden_size`` is
#: refused naming it.
CLASS_DEFAULTS = {"gemma3_text": {"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4,
                                  "head_dim": 256, "max_position_embeddings": 131072},
                  "falcon": {"max_position_embeddings": 2048}}  # FalconConfig's; falcon-7b/40b's files omit it

# the config key each ModelFacts field comes from (for messages about values the dataclass refuses)
_KEY_OF = {"n_layers": "num_hidden_layers", "hidden_size": "hidden_size", "n_heads": "num_attention_heads",
           "n_kv_heads": "num_key_value_heads", "head_dim": "head_dim", "intermediate_size": "intermediate_size",
           "vocab_size": "vocab_size", "experts_per_token": "num_experts_per_tok",
           "moe_intermediate_size": "moe_intermediate_size", "n_shared_experts": "n_shared_experts",
           "n_dense_layers": "first_k_dense_replace", "dtype": "torch_dtype", "q_lora_rank": "q_lora_rank",
           "kv_lora_rank": "kv_lora_rank", "qk_rope_head_dim": "qk_rope_head_dim",
           "qk_nope_head_dim": "qk_nope_head_dim", "v_head_dim": "v_head_dim",
           "max_position_embeddings": "max_position_embeddings"}


class _Reader:
    def __init__(self, where: str, cfg: dict):
        self.where, self.cfg = where, cfg

    def fail(self, key: str, why: str):
        raise DataError(f"{self.where}: key {key!r}: {why}")

    def int(self, key: str, *, default=..., minimum: int = 1):
        if key not in self.cfg or self.cfg[key] is None:
            if default is not ...:
                return default
            self.fail(key, "missing (it is needed for this model family)")
        v = self.cfg[key]
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(key, f"{v!r} is not an integer")
        if v < minimum:
            self.fail(key, f"{v!r}: expected an integer >= {minimum}")
        return v

    def bool(self, key: str, default: bool) -> bool:
        v = self.cfg.get(key, default)
        if v is None:
            return default
        if not isinstance(v, bool):
            self.fail(key, f"{v!r} is not true or false")
        return v

    def str(self, key: str):
        v = self.cfg.get(key)
        if v is not None and not isinstance(v, str):
            self.fail(key, f"{v!r} is not a string")
        return v


def _max_len(r: _Reader) -> dict:
    """The model's declared length as vLLM reads it (``_get_and_verify_max_len``): the smallest of the length keys
    present (:data:`~fluidq.models.facts.MAX_LEN_KEYS`, in vLLM's order; the first key at that value names it),
    but ``model_max_length`` whenever it is set (Command-R / Cohere); a key that is absent, null or 0 is not a
    length.  ``{"max_position_embeddings": length or None, "max_len_key": key}``."""
    length, key = None, "max_position_embeddings"
    for k in MAX_LEN_KEYS:
        v = r.int(k, default=None, minimum=0)
        if v and (length is None or v < length):
            length, key = v, k
    cmd = r.int("model_max_length", default=None, minimum=0)
    if cmd:
        length, key = cmd, "model_max_length"
    return {"max_position_embeddings": length, "max_len_key": key}


def _text_config(r: _Reader, cfg: dict) -> dict:
    """A multimodal wrapper's text model: ``text_config`` (or ``llm_config``) over the top level, whose
    ``torch_dtype`` and ``quantization_config`` it inherits when it has none."""
    for key in ("text_config", "llm_config"):
        sub = cfg.get(key)
        if sub is None:
            continue
        if not isinstance(sub, dict):
            r.fail(key, f"{type(sub).__name__}, not an object (the text model's config)")
        outer = {k: v for k, v in cfg.items() if k in ("torch_dtype", "dtype", "quantization_config",
                                                        "tie_word_embeddings", "_name_or_path")}
        merged = {**outer, **{k: v for k, v in sub.items() if v is not None}}
        if "model_type" not in sub:
            merged["model_type"] = cfg.get("model_type")
        return merged
    return cfg


def facts_from_config(path, *, name: str | None = None, dtype: str | None = None,
                      option: str = "path") -> ModelFacts:
    try:  # a model's folder (a Hugging Face snapshot): its config.json
        if isinstance(path, (str, Path)) and Path(path).is_dir() and (Path(path) / "config.json").is_file():
            path = Path(path) / "config.json"
    except (OSError, ValueError):
        pass  # read_text names what is wrong with the path
    text = read_text(option, path, what="config.json", max_bytes=MAX_CONFIG_BYTES)
    where = f"{option} {_shown(path)}"
    cfg = json_loads(text, where=where)
    if not isinstance(cfg, dict):
        raise DataError(f"{where}: a JSON {type(cfg).__name__}, not the object of a config.json")
    cfg = _text_config(_Reader(where, cfg), cfg)
    r = _Reader(where, cfg)
    family = r.str("model_type")
    if family is None:
        r.fail("model_type", "missing (it names the model family: " + ", ".join(FAMILIES) + ")")
    family = ALIASES.get(family, family)
    if family not in FAMILIES:
        r.fail("model_type", f"{family!r} is not a family fluidq reads; known: {', '.join(FAMILIES)} "
               f"(and {', '.join(ALIASES)}); a model of the same shapes can be given as one of them")
    defaulted = [k for k in CLASS_DEFAULTS.get(family, {}) if cfg.get(k) is None]
    if defaulted:
        cfg = {**cfg, **{k: CLASS_DEFAULTS[family][k] for k in defaulted}}
        r = _Reader(where, cfg)
    if dtype is None and cfg.get("torch_dtype") is None and cfg.get("dtype") is None:
        defaulted.append("torch_dtype")  # vLLM reads no torch_dtype as float32, which --dtype auto serves in bf16
    if name is None:
        name = cfg.get("_name_or_path") if isinstance(cfg.get("_name_or_path"), str) else None
        if not name or not name.strip():
            p = Path(str(path))
            name = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
        name = name.rstrip("/").split("/")[-1] or family
    if family in ("gpt_neox", "opt", "falcon", "phi"):
        kw = _classic(r, family)
    else:
        kw = _modern(r, family)
    quant, quant_attention = _quantization(r, family)
    kw.update(name=name, architecture=family, dtype=_dtype(r, dtype), quantization=quant,
              quantize_attention=quant_attention,
              **_max_len(r),
              rope_scaling=rope_scaling_from_config(cfg.get("rope_scaling"), r.fail))
    sw = cfg.get("sliding_window")
    if isinstance(sw, int) and not isinstance(sw, bool) and sw > 0 and cfg.get("use_sliding_window", True) is not False:
        kw["sliding_window"] = sw
        kw["n_sliding_layers"] = _sliding_layers(r, family, kw["n_layers"])
    try:
        source = f"config.json {_shown(path)}"
        if dtype is None and _file_dtype(cfg) == "float32":  # served in 16 bits: say so (models show's dtype row)
            source += FLOAT32_SERVED
        if defaulted:
            source += ("; not in the file, the defaults of its config class (as transformers and vLLM read it): "
                       + ", ".join(f"{k}={CLASS_DEFAULTS.get(family, {}).get(k, 'bfloat16')}" for k in defaulted))
        return ModelFacts(**kw, source=source)
    except FluidqError as exc:
        field = getattr(exc, "name", None)
        key = kw.get("max_len_key") if field == "max_position_embeddings" else _KEY_OF.get(field, field)
        if family == "mixtral" and field == "n_experts":
            key = "num_local_experts"
        elif family in MLA and field == "n_experts":
            key = "n_routed_experts"
        elif field == "n_experts":
            key = "num_experts"
        raise DataError(f"{where}: key {key!r}: {exc}" if key else f"{where}: {exc}") from None


def _modern(r: _Reader, family: str) -> dict:
    """Llama-like families: RMS norms, a gated MLP, rotary positions."""
    n_heads = r.int("num_attention_heads")
    hidden = r.int("hidden_size")
    gemma = family.startswith("gemma")
    kw = dict(n_layers=r.int("num_hidden_layers"), hidden_size=hidden, n_heads=n_heads,
              n_kv_heads=r.int("num_key_value_heads", default=n_heads),
              vocab_size=r.int("vocab_size"),
              # Gemma ties its LM head to the embedding unless told otherwise; the others do not
              tie_word_embeddings=r.bool("tie_word_embeddings", gemma))
    if family == "llama4_text":  # the experts' width is intermediate_size, the dense layers' intermediate_size_mlp
        kw["intermediate_size"] = r.int("intermediate_size_mlp", default=None) or r.int("intermediate_size")
    else:
        kw["intermediate_size"] = r.int("intermediate_size")
    if family in MLA:
        kw.update(_mla(r, family))
        return kw
    head_dim = r.int("head_dim", default=None)
    if head_dim is None:
        if hidden % n_heads:
            r.fail("head_dim", f"missing, and hidden_size={hidden} is not a multiple of "
                   f"num_attention_heads={n_heads} to derive it")
        head_dim = hidden // n_heads
    kw["head_dim"] = head_dim
    kw["attention_bias"] = True if family in ("qwen2", "qwen2_moe") else r.bool("attention_bias", False)
    kw["qk_norm"] = family in ("qwen3", "qwen3_moe", "gemma3_text")
    if family in ("gemma2", "gemma3_text"):
        kw["norms_per_layer"] = 4  # before and after attention, before and after the MLP
    if r.bool("mlp_bias", False):
        r.fail("mlp_bias", "true: MLP biases are not counted by fluidq (no supported family has them)")
    if family == "mixtral":
        kw.update(n_experts=r.int("num_local_experts"), experts_per_token=r.int("num_experts_per_tok"),
                  moe_intermediate_size=kw["intermediate_size"])
    elif family == "gpt_oss":  # every layer has experts of width intermediate_size; no shared expert
        kw.update(n_experts=r.int("num_local_experts"),
                  experts_per_token=r.int("num_experts_per_tok", default=None) or r.int("experts_per_token"),
                  moe_intermediate_size=kw["intermediate_size"])
    elif family == "qwen3_moe":
        kw.update(n_experts=r.int("num_experts"), experts_per_token=r.int("num_experts_per_tok"),
                  moe_intermediate_size=r.int("moe_intermediate_size"))
        kw["n_dense_layers"] = _qwen_dense_layers(r, kw["n_layers"])
    elif family == "qwen2_moe":  # one shared expert of its own width: counted as that many routed-width experts
        moe = r.int("moe_intermediate_size")
        shared = r.int("shared_expert_intermediate_size", default=0, minimum=0)
        if shared % moe:
            r.fail("shared_expert_intermediate_size", f"{shared} is not a multiple of moe_intermediate_size={moe}")
        kw.update(n_experts=r.int("num_experts"), experts_per_token=r.int("num_experts_per_tok"),
                  moe_intermediate_size=moe, n_shared_experts=shared // moe)
        kw["n_dense_layers"] = _qwen_dense_layers(r, kw["n_layers"])
    elif family == "llama4_text":
        step = r.int("interleave_moe_layer_step", default=1)
        moe_layers = r.cfg.get("moe_layers")
        if isinstance(moe_layers, list) and moe_layers:
            n_moe = len(moe_layers)
        else:
            n_moe = sum(1 for i in range(kw["n_layers"]) if (i + 1) % step == 0)
        kw.update(n_experts=r.int("num_local_experts"), experts_per_token=r.int("num_experts_per_tok"),
                  moe_intermediate_size=r.int("intermediate_size"), n_shared_experts=1,
                  n_dense_layers=kw["n_layers"] - n_moe)
    return kw


def _classic(r: _Reader, family: str) -> dict:
    """GPT-NeoX, OPT, Falcon, Phi-2: LayerNorms with biases, an ungated MLP, biases on the projections
    (Falcon: none unless ``bias``)."""
    get = r.cfg.get
    if family == "falcon":  # Falcon's configs use either naming
        layers = "num_hidden_layers" if "num_hidden_layers" in r.cfg else "n_layer"
        heads = "num_attention_heads" if "num_attention_heads" in r.cfg else "n_head"
    else:
        layers, heads = "num_hidden_layers", "num_attention_heads"
    n_layers, n_heads, hidden = r.int(layers), r.int(heads), r.int("hidden_size")
    if hidden % n_heads:
        r.fail("hidden_size", f"{hidden} is not a multiple of {heads}={n_heads}")
    kw = dict(n_layers=n_layers, hidden_size=hidden, n_heads=n_heads, head_dim=hidden // n_heads,
              vocab_size=r.int("vocab_size"), gated_mlp=False, norm_bias=True)
    if family == "gpt_neox":
        kw.update(n_kv_heads=n_heads, intermediate_size=r.int("intermediate_size"), linear_bias=True,
                  tie_word_embeddings=r.bool("tie_word_embeddings", False))
    elif family == "phi":
        kw.update(n_kv_heads=r.int("num_key_value_heads", default=n_heads), intermediate_size=r.int("intermediate_size"),
                  linear_bias=True, norms_per_layer=1, tie_word_embeddings=r.bool("tie_word_embeddings", False))
    elif family == "opt":
        proj = r.int("word_embed_proj_dim", default=hidden)
        if proj != hidden:
            r.fail("word_embed_proj_dim", f"{proj} differs from hidden_size={hidden} (OPT-350m's projected "
                   "embedding is not sized by fluidq)")
        kw.update(n_kv_heads=n_heads, intermediate_size=r.int("ffn_dim"), linear_bias=r.bool("enable_bias", True),
                  tie_word_embeddings=r.bool("tie_word_embeddings", True),
                  position_embeddings=r.int("max_position_embeddings") + 2)  # OPT's learned table has 2 extra rows
    else:  # falcon
        new = r.bool("new_decoder_architecture", False)
        if new:
            kv = r.int("num_kv_heads", default=None) or r.int("n_head_kv", default=n_heads)
        elif r.bool("multi_query", True):
            kv = 1
        else:
            kv = n_heads
        ffn = r.int("ffn_hidden_size", default=4 * hidden)
        parallel = r.bool("parallel_attn", True)
        kw.update(n_kv_heads=kv, intermediate_size=ffn, linear_bias=r.bool("bias", False),
                  norms_per_layer=2 if (new and get("num_ln_in_parallel_attn", 2) == 2) or not parallel else 1,
                  tie_word_embeddings=r.bool("tie_word_embeddings", True))
    return kw


#: what a config whose ``torch_dtype`` is float32 adds to its facts' ``source`` (``fluidq models show`` says it on
#: its dtype line too)
FLOAT32_SERVED = ("; torch_dtype float32 in the file, taken as bfloat16: vLLM's --dtype auto serves a float32 "
                  "checkpoint in 16 bits (--dtype float32 keeps it)")


def _file_dtype(cfg) -> str | None:
    """The number format the config.json states (``torch_dtype``, else ``dtype``), without ``torch.``."""
    v = cfg.get("torch_dtype") if cfg.get("torch_dtype") is not None else cfg.get("dtype")
    return v.removeprefix("torch.") if isinstance(v, str) else None


def _dtype(r: _Reader, override):
    if override is not None:
        if override not in DTYPE_BYTES:
            raise ParameterError("dtype", override, f"one of {', '.join(DTYPE_BYTES)}")
        return override
    key = "torch_dtype" if r.cfg.get("torch_dtype") is not None else "dtype"  # newer transformers write "dtype"
    v = r.str(key)
    if v is None:  # vLLM takes a config without torch_dtype as float32, which its --dtype auto serves in bf16
        return "bfloat16"
    v = v.removeprefix("torch.")
    if v not in DTYPE_BYTES:
        r.fail(key, f"{v!r} is not a format fluidq knows; known: {', '.join(DTYPE_BYTES)}")
    if v == "float32":  # vLLM's --dtype auto serves a float32 checkpoint in 16 bits (bfloat16 where supported)
        return "bfloat16"
    return v


def _quantization(r: _Reader, family: str):
    """``(format, attention too)``: the weight format of ``quantization_config`` (``fp8``, ``int8``, ``int4``,
    ``mxfp4``, or ``None``), and whether it covers the attention projections (``False`` when the modules it
    leaves out name ``self_attn``, as GPT-OSS's do)."""
    q = r.cfg.get("quantization_config")
    if q is None:
        return None, True
    if not isinstance(q, dict):
        r.fail("quantization_config", f"{q!r} is not an object")
    skipped = []
    for key in ("modules_to_not_convert", "ignore", "ignored_layers"):
        v = q.get(key)
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            skipped += [m for m in v if isinstance(m, str)]
    attention = not any("self_attn" in m for m in skipped)
    return _quant_format(r, q), attention


def _quant_format(r: _Reader, q: dict):
    method = q.get("quant_method")
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8"
    if method == "mxfp4":  # GPT-OSS: 4-bit floats, one 8-bit exponent per 32 (vLLM keeps them so)
        return "mxfp4"
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin", "marlin", "auto-round", "quark_int4"):
        bits = q.get("bits", q.get("w_bit", 4))
        if bits in (4, 8):
            return f"int{bits}"
        r.fail("quantization_config", f"{method} with {bits!r} bits: only 4- and 8-bit weights are sized")
    if method == "compressed-tensors":
        return _compressed_tensors(r, q)
    if method == "modelopt":
        algo = str(q.get("quant_algo") or (q.get("quantization") or {}).get("quant_algo") or "")
        if algo.upper() == "FP8":
            return "fp8"
    r.fail("quantization_config", f"quant_method {method!r}: fluidq sizes FP8 (fp8, fbgemm_fp8, "
           "compressed-tensors, modelopt FP8), MXFP4 (mxfp4) and 4/8-bit integer weights (awq, gptq, "
           "compressed-tensors); not NVFP4, NF4 (bitsandbytes) or other formats")


def _compressed_tensors(r: _Reader, q: dict):
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        r.fail("quantization_config", "compressed-tensors without config_groups")
    found = set()
    for g in groups.values():
        w = (g or {}).get("weights") or {}
        bits, kind = w.get("num_bits"), w.get("type")
        if kind == "float" and bits == 8:
            found.add("fp8")
        elif kind == "int" and bits in (4, 8):
            found.add(f"int{bits}")
        else:
            r.fail("quantization_config", f"compressed-tensors weights of {bits!r} bits, type {kind!r}: fluidq "
                   "sizes 8-bit float and 4/8-bit integer weights")
    if len(found) != 1:
        r.fail("quantization_config", f"compressed-tensors groups of different formats {sorted(found)}")
    return found.pop()


def _qwen_dense_layers(r: _Reader, n_layers: int) -> int:
    step = r.int("decoder_sparse_step", default=1)
    only = r.cfg.get("mlp_only_layers", []) or []
    if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        r.fail("mlp_only_layers", f"{only!r} is not a list of layer indices")
    # Qwen3-MoE's rule: layer i has experts unless listed in mlp_only_layers, and when (i + 1) % step == 0
    moe = sum(1 for i in range(n_layers) if i not in only and (i + 1) % step == 0)
    if moe == 0:
        r.fail("decoder_sparse_step", "no layer has experts with these decoder_sparse_step / mlp_only_layers")
    return n_layers - moe


def _mla(r: _Reader, family: str) -> dict:
    nope, rope = r.int("qk_nope_head_dim"), r.int("qk_rope_head_dim")
    out = dict(kv_lora_rank=r.int("kv_lora_rank"), q_lora_rank=r.int("q_lora_rank", default=None),
               qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=r.int("v_head_dim"),
               head_dim=nope + rope)
    experts = r.int("n_routed_experts", default=None)
    if experts is not None:
        freq = r.int("moe_layer_freq", default=1)
        if freq != 1:
            r.fail("moe_layer_freq", f"{freq}: only 1 (every layer after first_k_dense_replace has experts) is read")
        out.update(n_experts=experts, experts_per_token=r.int("num_experts_per_tok"),
                   moe_intermediate_size=r.int("moe_intermediate_size"),
                   n_shared_experts=r.int("n_shared_experts", default=0, minimum=0),
                   n_dense_layers=r.int("first_k_dense_replace", default=0, minimum=0))
    return out


def _sliding_layers(r: _Reader, family: str, n_layers: int) -> int:
    """How many layers attend within the sliding window: ``layer_types`` where the config lists them (GPT-OSS,
    newer Gemma/Qwen configs), else the family's rule -- Gemma-2 every other layer (the even ones), Gemma-3 all
    but every ``sliding_window_pattern``-th (default 6), Qwen2/3 with ``use_sliding_window`` the layers from
    ``max_window_layers`` on, any other family every layer (Mistral-7B-v0.1, Phi-3-mini), as vLLM does: a config
    with a ``sliding_window`` and no ``layer_types`` is not interleaved, so vLLM sets its model-wide
    ``CacheConfig.sliding_window`` from it (vllm/engine/arg_utils.py), and ``Attention`` applies that to every layer
    given no window of its own (vllm/attention/layer.py; Llama's attention, which serves Mistral and Phi-3, gives
    one only from ``layer_types``)."""
    types = r.cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers or not all(isinstance(t, str) for t in types):
            r.fail("layer_types", f"expected a list of {n_layers} strings, one per layer")
        return sum(1 for t in types if t == "sliding_attention")
    if family == "gemma2":
        return (n_layers + 1) // 2
    if family == "gemma3_text":
        pattern = r.int("sliding_window_pattern", default=6)
        return n_layers - n_layers // pattern
    if family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        return n_layers - min(n_layers, r.int("max_window_layers", default=n_layers, minimum=0))
    return n_layers
