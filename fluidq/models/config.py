"""Reading a Hugging Face ``config.json`` into :class:`~fluidq.models.ModelFacts` (internal).

The file is read with :mod:`fluidq._io` (regular files only, size-limited, one ``DataError`` for any
malformed content).  Each family's keys are read strictly: a key the family needs that is missing,
or a value of the wrong kind, is one ``DataError`` naming the file and the key.  Two keys have the
defaults of the Hugging Face config classes, which their configs often omit: ``num_key_value_heads``
(missing or null: one KV head per query head) and ``head_dim`` (missing or null:
``hidden_size / num_attention_heads``); ``tie_word_embeddings`` defaults to false and
``attention_bias`` to the family's (true for Qwen2, false otherwise).
"""
from __future__ import annotations

from pathlib import Path

from .._io import _shown, json_loads, read_text
from ..errors import DataError, FluidqError, ParameterError
from .facts import DTYPE_BYTES, ModelFacts

#: a config.json is a few kB; larger is no config
MAX_CONFIG_BYTES = 16 << 20

DENSE = ("llama", "mistral", "qwen2", "qwen3")
MOE = ("mixtral", "qwen3_moe")
MLA = ("deepseek_v2", "deepseek_v3")
FAMILIES = DENSE + MOE + MLA

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


def facts_from_config(path, *, name: str | None = None, dtype: str | None = None,
                      option: str = "path") -> ModelFacts:
    text = read_text(option, path, what="config.json", max_bytes=MAX_CONFIG_BYTES)
    where = f"{option} {_shown(path)}"
    cfg = json_loads(text, where=where)
    if not isinstance(cfg, dict):
        raise DataError(f"{where}: a JSON {type(cfg).__name__}, not the object of a config.json")
    r = _Reader(where, cfg)
    family = r.str("model_type")
    if family is None:
        r.fail("model_type", "missing (it names the model family: " + ", ".join(FAMILIES) + ")")
    if family not in FAMILIES:
        hint = " (a multimodal config: give the text model's config)" if "text_config" in cfg else ""
        r.fail("model_type", f"{family!r} is not a family fluidq reads; known: {', '.join(FAMILIES)}{hint}")
    if name is None:
        name = cfg.get("_name_or_path") if isinstance(cfg.get("_name_or_path"), str) else None
        if not name or not name.strip():
            p = Path(str(path))
            name = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
        name = name.rstrip("/").split("/")[-1] or family

    n_heads = r.int("num_attention_heads")
    hidden = r.int("hidden_size")
    kw = dict(name=name, architecture=family, n_layers=r.int("num_hidden_layers"), hidden_size=hidden,
              n_heads=n_heads, n_kv_heads=r.int("num_key_value_heads", default=n_heads),
              intermediate_size=r.int("intermediate_size"), vocab_size=r.int("vocab_size"),
              tie_word_embeddings=r.bool("tie_word_embeddings", False),
              max_position_embeddings=r.int("max_position_embeddings", default=None))
    kw["dtype"] = _dtype(r, dtype)
    kw["quantization"] = _quantization(r, family)

    if family in MLA:
        kw.update(_mla(r, family))
    else:
        head_dim = r.int("head_dim", default=None)
        if head_dim is None:
            if hidden % n_heads:
                r.fail("head_dim", f"missing, and hidden_size={hidden} is not a multiple of "
                       f"num_attention_heads={n_heads} to derive it")
            head_dim = hidden // n_heads
        kw["head_dim"] = head_dim
        kw["attention_bias"] = True if family == "qwen2" else r.bool("attention_bias", False)
        kw["qk_norm"] = family in ("qwen3", "qwen3_moe")
        if r.bool("mlp_bias", False):
            r.fail("mlp_bias", "true: MLP biases are not counted by fluidq (no supported family has them)")
    if family == "mixtral":
        kw.update(n_experts=r.int("num_local_experts"), experts_per_token=r.int("num_experts_per_tok"),
                  moe_intermediate_size=kw["intermediate_size"])
    elif family == "qwen3_moe":
        kw.update(n_experts=r.int("num_experts"), experts_per_token=r.int("num_experts_per_tok"),
                  moe_intermediate_size=r.int("moe_intermediate_size"))
        kw["n_dense_layers"] = _qwen_dense_layers(r, kw["n_layers"])
    try:
        return ModelFacts(**kw, source=f"config.json {_shown(path)}")
    except FluidqError as exc:
        field = getattr(exc, "name", None)
        key = _KEY_OF.get(field, field)
        if family == "mixtral" and field == "n_experts":
            key = "num_local_experts"
        elif family in MLA and field == "n_experts":
            key = "n_routed_experts"
        elif field == "n_experts":
            key = "num_experts"
        raise DataError(f"{where}: key {key!r}: {exc}" if key else f"{where}: {exc}") from None


def _dtype(r: _Reader, override):
    if override is not None:
        if override not in DTYPE_BYTES:
            raise ParameterError("dtype", override, f"one of {', '.join(DTYPE_BYTES)}")
        return override
    key = "torch_dtype" if "torch_dtype" in r.cfg else "dtype"  # newer transformers write "dtype"
    v = r.str(key)
    if v is None:
        r.fail("torch_dtype", "missing (the number format of the weights: " + ", ".join(DTYPE_BYTES) +
               "; or pass dtype=)")
    v = v.removeprefix("torch.")
    if v not in DTYPE_BYTES:
        r.fail(key, f"{v!r} is not a format fluidq knows; known: {', '.join(DTYPE_BYTES)}")
    return v


def _quantization(r: _Reader, family: str):
    q = r.cfg.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, dict):
        r.fail("quantization_config", f"{q!r} is not an object")
    method = q.get("quant_method")
    if method == "fp8":
        return "fp8"
    r.fail("quantization_config", f"quant_method {method!r}: only fp8 weights are sized by fluidq (AWQ, GPTQ "
           "and other packed formats are not)")


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
