"""``fluidq models``: model facts (shipped or from a config.json) and vLLM's KV capacity, estimated."""
from __future__ import annotations

from .. import emit
from ..common import parameters_as_flags, reject_ignored

_KV_OPTIONS = {  # dest -> flag: options of 'kv' only
    "gpu_memory_gib": "--gpu-memory-gib", "gpu_memory_utilization": "--gpu-memory-utilization",
    "tensor_parallel_size": "--tensor-parallel-size", "expert_parallel_size": "--expert-parallel-size",
    "block_size": "--block-size", "activation_reserve_gib": "--activation-reserve-gib",
    "max_num_batched_tokens": "--max-num-batched-tokens", "max_num_seqs": "--max-num-seqs",
    "max_model_len": "--max-model-len", "kv_cache_dtype": "--kv-cache-dtype",
}


def register(sub):
    p = sub.add_parser(
        "models", help="model facts (layers, heads, sizes) and vLLM's KV capacity, estimated",
        description="Model facts: the shapes of a model (layers, hidden size, heads, KV heads, experts, number "
        "format) and what follows (parameters, total and active; weight bytes; KV bytes per token, per GPU "
        "under tensor parallelism). 'list' (the default) prints the shipped models; 'show NAME' or "
        "'show --config config.json' one model; 'kv NAME --gpu-memory-gib G' estimates the KV-cache capacity "
        "vLLM's memory planner gives each GPU (memory x utilization - weights - activation reserve, over the "
        "KV bytes per token, in blocks). A config.json is read from the path given; nothing is downloaded.")
    p.add_argument("action", nargs="?", choices=["list", "show", "kv"], default="list",
                   help="list the shipped models (default), show one, or estimate its KV capacity")
    p.add_argument("name", nargs="?", default=None, help="a shipped model (see 'list'); or give --config")
    p.add_argument("--config", default=None, help="a Hugging Face config.json (a local path) instead of NAME")
    p.add_argument("--dtype", default=None, choices=["bfloat16", "float16", "float32"],
                   help="number format of weights and activations instead of the config's torch_dtype (vLLM's --dtype)")
    g = p.add_argument_group("kv (vLLM's options)")
    g.add_argument("--gpu-memory-gib", type=float, default=None, help="memory of one GPU, GiB (required for kv)")
    g.add_argument("--gpu-memory-utilization", type=float, default=None, help="fraction in (0, 1]; default 0.9")
    g.add_argument("--tensor-parallel-size", type=int, default=None, help="GPUs per model copy; default 1")
    g.add_argument("--expert-parallel-size", type=int, default=None,
                   help="GPUs the experts are spread over (tp x dp with --enable-expert-parallel); default tp")
    g.add_argument("--block-size", type=int, default=None, help="tokens per KV block; default 16")
    g.add_argument("--activation-reserve-gib", type=float, default=None,
                   help="reserve besides the weights, GiB; default: fluidq's estimate (see the docs)")
    g.add_argument("--max-num-batched-tokens", type=int, default=None,
                   help="token budget of the profiling pass, for the default reserve; default 2048")
    g.add_argument("--max-num-seqs", type=int, default=None,
                   help="sequences of the sampler's profiling pass, for the default reserve; default 256")
    g.add_argument("--max-model-len", type=int, default=None,
                   help="refuse, as vLLM does, when one request of this many tokens does not fit in the cache")
    g.add_argument("--kv-cache-dtype", choices=["auto", "fp8"], default=None,
                   help="auto (default): the model's dtype; fp8: one byte per cached value")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _model(args):
    from ...models import ModelFacts, load_model
    from .. import CliError

    if args.name is not None and args.config is not None:
        raise CliError(f"NAME {args.name!r} and --config {args.config!r}: give one of them, not both")
    if args.config is not None:
        return ModelFacts.from_config(args.config, option="--config", dtype=args.dtype)
    if args.name is None:
        raise CliError(f"{args.action} needs a model: `fluidq models {args.action} NAME` (names: `fluidq models "
                       "list`) or `--config config.json`")
    m = load_model(args.name, option="NAME")
    return m if args.dtype is None else m.replace(dtype=args.dtype)


def _gib(x: int) -> str:
    return f"{x / 2**30:,.2f} GiB"


def _context(m) -> str:
    """The longest request vLLM accepts by default: the derived length (``max_position_embeddings`` scaled by the
    config's ``rope_scaling``, :func:`fluidq.models.context.derived_max_model_len`, what ``capacity`` and the
    ``--max-model-len`` check use), with what it is derived from, named by the length key vLLM read (``max_len_key``)."""
    from ...models.context import derived_max_model_len, derived_words

    n = derived_max_model_len(m)
    key = m.max_len_key  # max_position_embeddings, or the length key vLLM read (n_positions, seq_length, ...)
    if n is None:
        return "not declared (no length key vLLM reads)"
    if n == m.max_position_embeddings:
        return f"{n:,} ({key}; vLLM's default --max-model-len)"
    words = derived_words(m)
    raw = "" if words.startswith(key) else f"; {key} {m.max_position_embeddings:,}"
    return f"{n:,} ({words}{raw}; vLLM's default --max-model-len)"


def _show_table(m) -> str:
    rows = [("name", m.name), ("architecture", m.architecture), ("layers", m.n_layers),
            ("hidden size", m.hidden_size), ("heads (query / KV)", f"{m.n_heads} / {m.n_kv_heads}"),
            ("head dim", m.head_dim), ("intermediate size", m.intermediate_size), ("vocabulary", m.vocab_size)]
    if m.is_moe:
        rows += [("experts (routed, top-k)", f"{m.n_experts}, top-{m.experts_per_token}"),
                 ("expert width", m.moe_intermediate_size)]
        if m.n_shared_experts:
            rows.append(("shared experts", m.n_shared_experts))
        if m.n_dense_layers:
            rows.append(("dense layers", m.n_dense_layers))
    if m.is_mla:
        rows.append(("MLA (q / kv rank, rope)", f"{m.q_lora_rank} / {m.kv_lora_rank}, {m.qk_rope_head_dim}"))
    from ...models.config import FLOAT32_SERVED

    served = (" (the config.json says float32: vLLM's --dtype auto serves it in bfloat16; --dtype float32 keeps it)"
              if FLOAT32_SERVED in (m.source or "") else "")
    rows += [("dtype", m.dtype + (f" (weights {m.quantization})" if m.quantization else "") + served),
             ("tied embeddings", m.tie_word_embeddings), ("max context", _context(m)),
             ("parameters", f"{m.param_count:,} ({m.param_count / 1e9:.2f} B)")]
    if m.is_moe:
        rows.append(("active parameters", f"{m.active_param_count:,} ({m.active_param_count / 1e9:.2f} B)"))
    rows += [("weights", _gib(m.weight_bytes)),
             ("KV per token", f"{m.kv_bytes_per_token():,} B ({m.kv_bytes_per_token() / 1024:g} KiB)"),
             ("KV rule", m.kv_rule), ("source", m.source)]
    return "\n".join(f"{k:<24} {v}" for k, v in rows)


def _kv(args, m):
    from ...models import kv_bytes_per_value, kv_capacity_estimate
    from .. import CliError

    if args.gpu_memory_gib is None:
        raise CliError("kv needs --gpu-memory-gib G (the memory of one GPU, GiB)")
    if args.block_size is not None:  # vLLM's set (kv_capacity_estimate also plans a run's recorded block size)
        from ..._validate import vllm_block_size

        with parameters_as_flags(_KV_OPTIONS):
            vllm_block_size("block_size", args.block_size)
    kw = {dest: getattr(args, dest) for dest in _KV_OPTIONS if getattr(args, dest) is not None}
    per_value = kv_bytes_per_value(kw.pop("kv_cache_dtype", None))
    if per_value is not None:
        kw["kv_bytes_per_value"] = per_value
    with parameters_as_flags(_KV_OPTIONS):
        return kv_capacity_estimate(m, **kw)


def run(args):
    from ...models import list_models
    from .. import CliError

    if args.action != "kv":
        for dest, flag in _KV_OPTIONS.items():
            reject_ignored(flag, getattr(args, dest) is not None, f"by '{args.action}' (it is an option of 'kv')")
    if args.action == "list":
        reject_ignored(f"--dtype {args.dtype}", args.dtype is not None, "by 'list' (it lists the shipped facts)")
        if args.name is not None or args.config is not None:
            what = f"NAME {args.name!r}" if args.name is not None else f"--config {args.config!r}"
            raise CliError(f"{what} is ignored by 'list' (it lists every shipped model); to see one: "
                           "`fluidq models show NAME` or `fluidq models show --config PATH`")
        models = list_models()
        w = max(len(m.name) for m in models)
        lines = [f"{'name':<{w}}  {'architecture':<12} {'params':>8} {'active':>8} {'layers':>6} {'KV/token':>9}"]
        for m in models:
            lines.append(f"{m.name:<{w}}  {m.architecture:<12} {m.param_count / 1e9:7.2f}B "
                         f"{m.active_param_count / 1e9:7.2f}B {m.n_layers:>6} {m.kv_bytes_per_token() / 1024:>7g}Ki")
        emit(args, [m.to_dict(derived=True) for m in models], "\n".join(lines))
        return
    m = _model(args)
    if args.action == "show":
        from ...models.context import derived_max_model_len

        d = m.to_dict(derived=True)
        d["derived"]["max_model_len"] = derived_max_model_len(m)  # the rope-scaled length, vLLM's default
        emit(args, d, _show_table(m))
        return
    est = _kv(args, m)
    table = "\n".join([
        f"{'model':<24} {m.name}",
        f"{'KV capacity':<24} {est.tokens:,} tokens ({est.blocks:,} blocks of {est.block_size}) per GPU (estimate)",
        f"{'KV per token per GPU':<24} {est.kv_bytes_per_token_per_gpu:,} B",
        f"{'weights per GPU':<24} {_gib(est.weight_bytes_per_gpu)}",
        f"{'reserve':<24} {_gib(est.reserve_bytes)} ({'estimated' if est.reserve_estimated else 'given'})",
        f"{'usable memory':<24} {_gib(est.usable_bytes)}",
        f"{'how':<24} {est.reason}",
    ])
    emit(args, est.to_dict(), table)
