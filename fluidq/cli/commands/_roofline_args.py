"""Options shared by the commands that take a deployment without profiles (``--gpu`` + ``--model`` or
``--model-config``): the model facts with close-name suggestions, and the roofline engine."""
from __future__ import annotations

import contextlib

FORMS = ("staircase", "piecewise-linear", "affine")

#: the roofline's Python parameter names -> the flags that set them (an error raised below the CLI names the flag)
FLAGS = {"input_tokens": "--input-len", "output_tokens": "--output-len", "tensor_parallel_size": "--tensor-parallel-size",
         "gpu_memory_utilization": "--gpu-memory-utilization",
         "max_num_seqs": "--max-num-seqs", "max_num_batched_tokens": "--max-num-batched-tokens",
         "kv_capacity_tokens": "--kv-capacity", "block_size": "--block-size", "tp": "--tensor-parallel-size",
         "max_model_len": "--max-model-len", "b_max": "--max-num-batched-tokens", "k_max": "--max-num-seqs"}


@contextlib.contextmanager
def named_by_flag(extra=None, args=None):
    """Re-raise a :class:`~fluidq.errors.ParameterError` of the roofline's Python names under the flag that
    set the value (``tensor_parallel_size=0`` -> ``--tensor-parallel-size=0``); ``extra`` adds names (a value
    the GPU table gave, such as its memory, keeps its Python name unless the user's flag set it).  With
    ``args``, a KV cache the user did not give (vLLM's memory planner's estimate, :func:`kv_estimated`) is
    named as that estimate and what it came from, not as ``--kv-capacity``."""
    from ..common import parameters_as_flags  # the CLI's one mapping, with the roofline's flags

    with parameters_as_flags({**FLAGS, **(extra or {})}, args=args):
        yield


def kv_estimated(args, source: str) -> None:
    """Record on ``args`` that the KV cache is vLLM's memory planner's estimate from ``source`` (no
    ``--kv-capacity`` given), so that an error about it says so (:func:`estimate_error`)."""
    if getattr(args, "kv_capacity", None) is None:
        args.kv_estimate = source


def estimate_error(args, value, expected: str, hint: str | None = None) -> None:
    """Raise the one-line error about a KV cache of ``value`` tokens that the user did not give: it names the
    planner's estimate and its inputs (``args.kv_estimate``) and ``--kv-capacity`` as the way to set it.
    Returns (raising nothing) when ``--kv-capacity`` was given or no estimate was recorded."""
    from .. import CliError

    source = getattr(args, "kv_estimate", None)
    if source is None or getattr(args, "kv_capacity", None) is not None:
        return
    shown = f"{value:,}" if isinstance(value, int) else str(value)
    raise CliError(f"the KV cache, {shown} tokens, is vLLM's memory planner's estimate ({source}); no --kv-capacity "
                   f"was given: expected {expected}" + (f" ({hint})" if hint else "")
                   + "; give --kv-capacity, more GPU memory, or shorter requests")


def _reject_max_model_len(args) -> None:
    """``--max-model-len`` without ``--gpu``: refused (it is checked against the planned KV cache of ``--gpu``)."""
    from .. import CliError

    if getattr(args, "max_model_len", None) is not None and getattr(args, "gpu", None) is None:
        raise CliError("--max-model-len is read only with --gpu (a deployment without profiles; it would be ignored)")


def context_limit(args, facts):
    """``(limit, words)``: the longest request vLLM accepts -- ``--max-model-len`` when given, else the length vLLM
    derives from the model's config.json (its default ``--max-model-len``: ``max_position_embeddings`` scaled by
    its ``rope_scaling``, :func:`fluidq.models.context.derived_max_model_len`); ``(None, None)`` when neither is
    known.  Like vLLM, a ``--max-model-len`` above that length is refused
    (:func:`fluidq.models.context.check_max_model_len`; vLLM's ``_get_and_verify_max_len`` raises unless
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``, which fluidq does not model)."""
    from ...models.context import check_max_model_len, derived_max_model_len, derived_words
    from ..common import parameters_as_flags

    _reject_max_model_len(args)
    given = getattr(args, "max_model_len", None)
    if given is None:
        derived = derived_max_model_len(facts)
        if derived is None:
            return None, None
        return derived, (f"{facts.name}'s context ({derived_words(facts)} of its config.json, vLLM's default "
                         "--max-model-len; vLLM refuses a longer request)")
    with parameters_as_flags({"max_model_len": "--max-model-len"}):
        mml = check_max_model_len(facts, given)
    return mml, "--max-model-len (vLLM refuses a longer request)"


#: a share of geometric draws over the context limit below this is not printed (the JSON field still holds it)
GEOMETRIC_SHARE_SHOWN = 1e-6


def geometric_share_over(mean_prompt: float, mean_output: float, limit: int) -> float:
    """``P(P + D > limit)`` for independent geometric lengths on ``{1, 2, ...}`` with means ``mean_prompt`` and
    ``mean_output`` (:class:`fluidq.workload.lengths.Geometric`: ``P(L = k) = p (1-p)^(k-1)``, ``p = 1/mean``),
    exactly: ``sum_{k=1}^{limit-1} P(P = k) P(D > limit - k) + P(P >= limit)`` with ``P(D > m) = q_d^m``, summed in
    closed form (a geometric series in the ratio of the two ``q``; the law of ``P + D`` is symmetric, so the
    smaller ratio is summed) and in logarithms, so that a tiny share is not lost to underflow."""
    import math

    limit = int(limit)
    if limit < 2:
        return 1.0  # every request has at least 2 tokens
    p1, p2 = sorted((1.0 / float(mean_prompt), 1.0 / float(mean_output)), reverse=True)  # q1 = 1 - p1 <= q2
    if p2 == 1.0:  # both lengths are 1 token: 2 tokens <= limit
        return 0.0
    n = limit - 1
    lq1 = math.log1p(-p1) if p1 < 1 else -math.inf
    lq2 = math.log1p(-p2)
    if p1 == p2:
        head = math.log(p1) + n * lq2 + math.log(n)
    else:  # p1 q2^n sum_{j<n} r^j = p1 q2^n (1 - r^n) / (1 - r), r = q1 / q2 < 1, 1 - r = (p1 - p2) / q2
        one_less_r = (p1 - p2) / (1.0 - p2)
        lr = math.log1p(-one_less_r) if one_less_r < 1 else -math.inf
        head = math.log(p1) + n * lq2 + math.log(-math.expm1(n * lr)) - math.log(one_less_r)
    tail = n * lq1  # P(P >= limit) = q1^(limit-1) (-inf when P is always 1 token)
    m = max(head, tail)
    return min(1.0, math.exp(m) * (math.exp(head - m) + math.exp(tail - m)))


def check_context(args, facts, trace=None) -> None:
    """Refuse ``--prompt`` + ``--output`` beyond the context limit (:func:`context_limit`): ``--max-model-len``
    when given, else the length vLLM derives from the model's config.json (its length key, ``max_position_embeddings`` or another vLLM reads, scaled by
    its ``rope_scaling``), vLLM's default ``--max-model-len`` (vLLM refuses a longer request).  With ``--geometric`` the means are checked (refused when they do not
    fit) and the share of draws longer than the limit, exact from the geometric laws (:func:`geometric_share_over`),
    is kept on ``args.geometric_over_limit`` for the answer's note and JSON; with
    ``--trace`` every request (``trace``: the trace the caller already loaded, else it is read here; checked once
    per command; tests/cli/test_trace_read_once.py counts it)."""
    import math

    from ...errors import ParameterError

    limit, words = context_limit(args, facts)
    if limit and getattr(args, "trace", None) is not None:
        _check_trace_context(args.trace, int(limit), words, trace)
        return
    if not limit or not hasattr(args, "prompt"):
        return
    mp = 100.0 if args.prompt is None else args.prompt
    md = 100.0 if getattr(args, "output", None) is None else args.output
    try:
        total = float(mp) + float(md)
    except (TypeError, ValueError):
        return
    if not math.isfinite(total) or total <= limit:
        if getattr(args, "geometric", False) and math.isfinite(total):
            args.geometric_over_limit = {"limit": int(limit), "share": geometric_share_over(mp, md, int(limit))}
        return
    flag = "--prompt" if args.prompt is not None or getattr(args, "output", None) is None else "--output"
    mean = "mean " if getattr(args, "geometric", False) else ""
    given = args.prompt if flag == "--prompt" else args.output
    raise ParameterError(flag, int(given) if float(given).is_integer() else given,
                         f"--prompt + --output at most {limit:,} tokens, {words}",
                         f"here {mean}--prompt {float(mp):g} + --output {float(md):g} = {total:,.0f} tokens")


def _check_trace_context(name, limit: int, words: str, tr=None) -> None:
    """Refuse a ``--trace`` with a request whose prompt + output passes the context limit ``limit`` (``words``
    say what it is; vLLM refuses such a request), naming how many and the first in time order."""
    import numpy as np

    from ...errors import ParameterError
    from ..common import load_cli_trace

    if tr is None:
        tr = load_cli_trace("--trace", name).trace
    total = np.asarray(tr.prompt_tokens, dtype=float) + np.asarray(tr.output_tokens, dtype=float)
    over = np.flatnonzero(total > limit)
    if over.size:
        i = int(over[0])
        raise ParameterError("--trace", name, f"every request's prompt + output at most {limit:,} tokens, "
                             f"{words}",
                             f"{over.size:,} of its {total.size:,} requests are longer; the first in time order, "
                             f"request {i + 1}, has {int(tr.prompt_tokens[i]):,} + {int(tr.output_tokens[i]):,} = "
                             f"{int(total[i]):,} tokens; "
                             + ("raise --max-model-len, " if words.startswith("--max-model-len") else
                                "give a model with a longer context ")
                             + "or leave those rows out")


def longest_fitting(estimate, tokens: int | None = None) -> int | None:
    """The longest request (tokens) a KV cache holds, as vLLM's start-up check counts it: a given
    ``--kv-capacity`` of ``tokens`` floored to whole blocks, else the planner's
    :meth:`~fluidq.models.KVCapacityEstimate.longest_request` (``None``: no length is too long)."""
    from ...models.context import longest_in_blocks

    if tokens is not None:
        return longest_in_blocks(tokens, estimate.block_size)
    return estimate.longest_request()


def check_max_model_len(args, model, gpu, *, b_max: int, k_max: int, kv_capacity: int | None,
                        block_size: int = 16) -> dict | None:
    """vLLM's start-up check of ``--max-model-len`` against the KV cache (``args.max_model_len_info``, returned).

    vLLM refuses to start when the cache cannot hold one request of ``max_model_len`` tokens
    (vllm/v1/core/kv_cache_utils.py, ``check_enough_kv_cache_memory``: "To serve at least one request with the
    model's max seq len ... larger than the available KV cache memory").  Given ``--max-model-len``, such a
    deployment is refused here too, naming the flag, the cache and what to change.  Not given, vLLM's default is
    the model's derived length (:func:`fluidq.models.context.derived_max_model_len`): where that does not fit, the answer is still given, with a note
    (``info["note"]``) that vLLM with its default would refuse to start and that the answer assumes
    ``--max-model-len`` at most the cache's tokens (whole blocks).  ``None`` when no limit is known."""
    from ...errors import ParameterError
    from ...models import kv_bytes_per_value, kv_capacity_estimate
    from ...models.context import derived_words
    from .. import CliError

    limit, _ = context_limit(args, model)
    given = getattr(args, "max_model_len", None) is not None
    if limit is None:
        args.max_model_len_info = None
        return None
    gib = getattr(args, "gpu_memory_gib", None)
    tp, util = args.tensor_parallel_size, args.gpu_memory_utilization

    def estimate(t, u=util):
        return kv_capacity_estimate(model, gpu_memory_gib=gpu.memory_gib if gib is None else gib,
                                    gpu_memory_utilization=u, tensor_parallel_size=t, block_size=block_size,
                                    max_num_batched_tokens=b_max, max_num_seqs=k_max,
                                    kv_bytes_per_value=kv_bytes_per_value(getattr(args, "kv_cache_dtype", None)))

    def holds(t, u=util) -> bool:
        try:
            room = longest_fitting(estimate(t, u))
        except ParameterError:
            return False
        return room is None or room >= limit

    with named_by_flag(), memory_named(gpu.name, tp, gib):
        est = estimate(tp)
    fits = longest_fitting(est, kv_capacity)
    source = "--kv-capacity" if kv_capacity is not None else "vLLM's memory planner, an estimate"
    key = model.max_len_key  # max_position_embeddings, or the length key vLLM read (n_positions, seq_length...)
    derived = (f"{key} (vLLM's default)" if limit == model.max_position_embeddings else
               f"{key} scaled by its rope_scaling (vLLM's default, its derived length)")
    geo = getattr(args, "geometric_over_limit", None)
    info = {"value": limit, "source": "--max-model-len" if given else derived,
            "longest_request_cached_tokens": fits, "cache_source": source,
            "vllm_starts": fits is None or limit <= fits, "assumed_at_most": None, "note": None,
            # --geometric: the share of drawn requests longer than the limit (vLLM refuses them; fluidq serves them)
            "geometric_share_over_limit": geo["share"] if geo and geo["limit"] == int(limit) else None}
    if info["vllm_starts"]:
        args.max_model_len_info = info
        return info
    cache = f"the KV cache ({source}) holds one request of at most {fits:,} tokens"
    if given:
        hint = [f"lower --max-model-len to at most {fits:,}"]
        if kv_capacity is None:
            u = next((u for u in (0.92, 0.95, 0.98) if u > util and holds(tp, u)), None)
            if u is not None:  # (the planner's reserve is an estimate: little headroom is left at 0.98)
                hint.append(f"raise --gpu-memory-utilization to {u:g}")
            t = next((t for t in model.tensor_parallel_sizes(64) if t > tp and holds(t)), None)
            if t is not None:
                hint.append(f"use --tensor-parallel-size {t}")
            hint.append("use a GPU with more memory")
        else:
            hint.append("give a larger --kv-capacity")
        raise CliError(f"--max-model-len {limit:,}: vLLM refuses to start: {cache} (one request of max_model_len "
                       f"tokens must fit, vLLM's check_enough_kv_cache_memory); to start it: " + ", ".join(hint[:-1])
                       + f" or {hint[-1]}")
    info["assumed_at_most"] = fits
    info["note"] = (f"vLLM with its default --max-model-len, {model.name}'s {derived_words(model)}"
                    + ("" if limit == model.max_position_embeddings else f" = {limit:,}") + ", would "
                    f"refuse to start: {cache}; this answer assumes --max-model-len <= {fits:,} (give it to vLLM)")
    args.max_model_len_info = info
    return info


def max_model_len_line(args, width: int = 16) -> list[str]:
    """The answer's note line about ``--max-model-len`` (:func:`check_max_model_len`), or no line."""
    info = getattr(args, "max_model_len_info", None)
    if not info:
        return []
    notes = [info["note"]] if info.get("note") else []
    share = info.get("geometric_share_over_limit")
    if share is not None and share >= GEOMETRIC_SHARE_SHOWN:
        what = "--max-model-len" if info["source"] == "--max-model-len" else "the model's context (vLLM's default)"
        notes.append(f"with --geometric a share {share:.4g} of the requests drawn (exact, from the geometric laws) "
                     f"have prompt + output > {info['value']:,} tokens, {what}: vLLM would refuse them, this answer "
                     "serves them (only means that do not fit are refused; lower the means or raise --max-model-len)")
    return [f"{'max-model-len':<{width}}{n}" if width else f"max-model-len: {n}" for n in notes]


@contextlib.contextmanager
def memory_named(gpu_name: str, tensor_parallel_size, gpu_memory_gib=None):
    """The planner's "the weights do not fit" (a ``ParameterError`` on ``gpu_memory_gib``) under the flags that
    chose the memory: ``--gpu NAME`` with ``--tensor-parallel-size N`` (the table's memory), or ``--gpu-memory-gib``
    when given.  The planner's numbers (usable memory, weights and reserve per GPU) stay in the message."""
    from ...errors import ParameterError

    try:
        yield
    except ParameterError as exc:
        if exc.name != "gpu_memory_gib":
            raise
        if gpu_memory_gib is not None:
            raise ParameterError("--gpu-memory-gib", exc.value, exc.expected, exc.hint) from None
        raise ParameterError("--gpu", f"{gpu_name} with --tensor-parallel-size {tensor_parallel_size}",
                             exc.expected.replace("more memory: ", "a deployment that fits: ", 1)
                             + f" [vLLM's planner on {exc.value:g} GiB per GPU as CUDA reports it]",
                             exc.hint) from None


#: what ``--model`` takes with ``--gpu``, said once in each command's help
MODEL_NAME_HELP = ("a model of `fluidq models list` (Hugging Face ids and -Instruct/-FP8/-AWQ names work) or a local "
                   "model folder or config.json")


def add_roofline_args(p, *, tp: bool = True) -> None:
    """``--gpu``, ``--model-config`` (and ``--tensor-parallel-size``, ``--gpu-memory-utilization`` when
    ``tp``); ``--model`` (added by ``add_engine_args`` with the batch-time forms as choices) also takes a
    model name, checked in :func:`check_model_option`."""
    r = p.add_argument_group("a deployment without profiles: a roofline estimate from the model and the GPU table")
    kv_flag = "--kv-capacity" in p._option_string_actions  # region and report have none: not offered there
    r.add_argument("--gpu", default=None, metavar="NAME",
                   help="a GPU of `fluidq gpus`: with --model NAME or --model-config, the engine is the calibrated "
                        "roofline batch time (context-aware: t(b) + s kv), its KV cache vLLM's memory "
                        f"planner (an estimate{', or --kv-capacity' if kv_flag else ''}), --max-num-seqs 256 and "
                        "--max-num-batched-tokens 2048 unless given (vLLM's defaults)")
    r.add_argument("--model-config", default=None, metavar="JSON",
                   help="with --gpu: a Hugging Face config.json (a local path) instead of --model NAME"
                        + ("; with --profile-dir: the profiled model's config.json, when `fluidq models list` lacks it"
                           if "--profile-dir" in p._option_string_actions else ""))
    r.add_argument("--max-model-len", type=int, default=None, metavar="N",
                   help="with --gpu: vLLM's --max-model-len, the longest request (prompt + output) it accepts (default: "
                        "the length vLLM derives from the model's config.json: max_position_embeddings, scaled by "
                        "its rope_scaling); like vLLM, refused when the KV cache cannot "
                        "hold one request of N tokens; not given, an answer whose default would not fit says so")
    if tp:
        r.add_argument("--tensor-parallel-size", type=int, default=1, help="with --gpu: GPUs per engine (default 1)")
        r.add_argument("--gpu-memory-utilization", type=float, default=0.9,
                       help="with --gpu: vLLM's --gpu-memory-utilization for the KV cache (default 0.9)")
    for a in p._actions:
        if a.dest == "model" and a.choices is not None:  # the batch-time forms (add_engine_args): also a name
            a.choices = None
            a.metavar = "FORM|NAME"
            a.help += "; with --gpu: " + MODEL_NAME_HELP
        elif a.dest == "model" and "--gpu" not in (a.help or ""):  # a name only (report): said once
            a.help = "with --gpu: " + MODEL_NAME_HELP


#: the link bandwidths (GB/s) the sync term is calibrated between: Splitwise's DGX-A100 (NVLink 3) and DGX-H100
#: (NVLink 4) profiles, the only tensor-parallel profiles shipped (docs/reference/roofline.md, Limitations)
CALIBRATED_LINKS_GBPS = (300.0, 450.0)


def sync_note(gpu, tensor_parallel_size: int, sync_step_us: float) -> str | None:
    """A line saying that the tensor-parallel sync is extrapolated, when it is: ``tp > 1`` on a link outside the
    two NVLink bandwidths it is calibrated between (a PCIe GPU's 32-64 GB/s makes it 5-9 times the A100's)."""
    lo, hi = CALIBRATED_LINKS_GBPS
    if tensor_parallel_size <= 1 or lo <= gpu.link_bandwidth_gbps <= hi:
        return None
    return (f"the all-reduce sync on {gpu.interconnect} ({gpu.link_bandwidth_gbps:g} GB/s) is {sync_step_us:.4g} us per "
            f"ring step, {2 * (tensor_parallel_size - 1) * sync_step_us:.4g} us per all-reduce (2 per layer): "
            f"extrapolated from the {lo:g}-{hi:g} GB/s NVLink profiles it is calibrated on, unmeasured "
            "(docs/reference/roofline.md, Limitations)")


def check_model_option(args) -> None:
    """Without ``--gpu``: ``--model`` is a batch-time form, ``--model-config`` is refused."""
    from ...errors import ParameterError
    from .. import CliError

    if args.gpu is None:
        _reject_max_model_len(args)
        if args.model_config is not None and getattr(args, "profile_dir", None) is None:
            raise CliError("--model-config is read only with --gpu (a deployment without profiles)"
                           + (" or --profile-dir (the profiled model's config.json)" if hasattr(args, "profile_dir")
                              else ""))
        if args.model is not None and args.model not in FORMS:
            raise ParameterError("--model", args.model, f"a batch-time form ({', '.join(FORMS)}), or a model name "
                                 "together with --gpu NAME")


def model_from_args(args):
    """The ModelFacts of ``--model NAME`` or ``--model-config``; an unknown name suggests close ones."""
    from ...models import ModelFacts, load_model
    from .. import CliError

    if (args.model is None) == (args.model_config is None):
        raise CliError("--gpu needs the model: --model NAME (see `fluidq models list`) or --model-config "
                       "config.json, one of them")
    if args.model_config is not None:
        return ModelFacts.from_config(args.model_config, option="--model-config")
    from pathlib import Path

    given = Path(args.model)
    try:  # vLLM's --model also takes a local folder: read its config.json, as --model-config does
        local = given.suffix == ".json" and given.is_file() or (given / "config.json").is_file()
    except (OSError, ValueError):
        local = False
    if local:
        return ModelFacts.from_config(given, option="--model")
    return load_model(args.model, option="--model")  # HF ids, -Instruct, -FP8...; unknown: the closest names


def planner_source(model_name: str, gpu, tensor_parallel_size: int, gpu_memory_gib, utilization) -> str:
    """What vLLM's memory planner estimated a KV cache from, in words (for :func:`kv_estimated`)."""
    mem = (f"--gpu-memory-gib {gpu_memory_gib:g}" if gpu_memory_gib is not None
           else f"{gpu.memory_gib:g} GiB per GPU from the GPU table")
    return (f"{model_name} on {tensor_parallel_size} x {gpu.name}: {mem} x --gpu-memory-utilization {utilization:g}, "
            "less the weights and activations")


def roofline_engine(args, *, b_max: int, k_max: int | None, kv_capacity: int | None, context_checked: bool = False):
    """``(engine, note)``: the roofline of ``--model`` on ``--gpu`` as a context-aware batch time
    (:func:`fluidq.engine.roofline_engine`: :meth:`Roofline.context_aware`, vLLM's planned KV cache unless
    ``kv_capacity``, and like vLLM the prefill emits the first output token).  The requests are checked against
    the model's context (:func:`check_context`) unless the caller did (``context_checked``): once per command."""
    from ...engine import roofline_engine as engine_of
    from ...models import load_gpu

    model = model_from_args(args)
    if not context_checked:
        check_context(args, model)
    gib = getattr(args, "gpu_memory_gib", None)  # check and simulate have it (--profile-dir's); region and report not
    held = _held_context(args)
    with named_by_flag(), memory_named(args.gpu, args.tensor_parallel_size, gib):
        gpu = load_gpu(args.gpu, option="--gpu")
        if kv_capacity is None:
            kv_estimated(args, planner_source(model.name, gpu, args.tensor_parallel_size, gib,
                                              args.gpu_memory_utilization))
        eng = engine_of(model, gpu, args.tensor_parallel_size, b_max=b_max,
                        k_max=k_max, kv_capacity_tokens=kv_capacity, gpu_memory_gib=gib,
                        gpu_memory_utilization=args.gpu_memory_utilization, context_tokens=held)
        if not hasattr(args, "max_model_len_info"):  # (capacity checks it first, on its --kv-capacity)
            check_max_model_len(args, model, gpu, b_max=b_max, k_max=k_max or 256, kv_capacity=kv_capacity)
    bt = eng.batch_time
    rf = bt.base
    windowed = ""
    if kv_capacity is None and model.n_sliding_layers and held is not None:
        windowed = (f" at a mean context of {held:g} ({model.n_sliding_layers} of {model.n_layers} "
                    f"layers keep their last {model.sliding_window} tokens: vLLM's hybrid KV-cache allocator)")
    note = (f"{rf.describe()} + {bt.kv_s_per_token * 1e9:.4g} ns per KV token read; KV cache "
            f"{eng.kv_capacity_tokens:,} tokens{windowed}; a roofline estimate (docs/reference/roofline.md)")
    sync = sync_note(rf.gpu, rf.tensor_parallel_size, rf.sync_step_us)
    if sync:
        note += f"; {sync}"
    return eng, note


def _held_context(args):
    """The mean context a request holds, ``--prompt + --output / 2`` (100 each by default), for a planned KV cache
    of a model with sliding-window layers; ``None`` (the planner's logged tokens) with a ``--trace`` or without
    lengths (``report``)."""
    if getattr(args, "trace", None) is not None or not hasattr(args, "prompt"):
        return None
    try:
        p = 100.0 if args.prompt is None else float(args.prompt)
        o = 100.0 if getattr(args, "output", None) is None else float(args.output)
    except (TypeError, ValueError):
        return None
    return p + o / 2 if p + o / 2 > 0 else None


def engine_for_command(args):
    """``(engine, note)`` for a command that takes either ``--gpu`` (a roofline engine, refusing the
    options that describe a measured engine) or the usual engine options (refusing ``--gpu``'s own
    options, which would be ignored); ``note`` is ``None`` without ``--gpu``.  The engine from the usual
    options carries no KV cache: the caller applies ``--kv-capacity`` its own way."""
    from .. import CliError
    from ..common import engine_from_args

    if args.gpu is not None:
        given = [o for o, v in (("--profile", args.profile), ("--fit", args.fit), ("--c-ms", args.c_ms),
                                ("--a-ms", args.a_ms), ("--b0", args.b0)) if v is not None]
        if given:
            raise CliError(f"--gpu describes the engine itself (a roofline estimate): give it without "
                           f"{', '.join(given)}")
        return roofline_engine(args, b_max=args.b_max or 2048, k_max=args.k_max or 256,
                               kv_capacity=getattr(args, "kv_capacity", None))
    check_model_option(args)
    for opt, v, default in (("--tensor-parallel-size", args.tensor_parallel_size, 1),
                            ("--gpu-memory-utilization", args.gpu_memory_utilization, 0.9)):
        if v != default:
            raise CliError(f"{opt} is read only with --gpu (it would be ignored)")
    return engine_from_args(args), None


def add_refused_roofline_args(p, why: str, *, model: bool = False) -> None:
    """``--gpu`` and ``--model-config`` (and ``--model`` when ``model``) on a command whose analysis cannot take a
    roofline deployment: offered, so that giving them is refused saying ``why`` (:func:`refuse_roofline_args`)
    rather than as an unknown option."""
    r = p.add_argument_group("a deployment without profiles (--gpu/--model): not for this command")
    r.add_argument("--gpu", default=None, metavar="NAME", help=f"refused: {why}")
    r.add_argument("--model-config", default=None, metavar="JSON", help="refused, as --gpu")
    if model:
        r.add_argument("--model", default=None, metavar="NAME", help="refused, as --gpu")
    p.set_defaults(_roofline_refused=why)


def refuse_roofline_args(args, command: str) -> None:
    """Refuse ``--gpu``/``--model-config`` (and a ``--model`` name) on ``command``, saying why."""
    from .. import CliError

    why = getattr(args, "_roofline_refused", None)
    given = [o for o, v in (("--gpu", getattr(args, "gpu", None)), ("--model-config", getattr(args, "model_config", None)),
                            ("--model", getattr(args, "model", None) if getattr(args, "model", None) not in FORMS
                             else None)) if v is not None]
    if why is not None and given:
        raise CliError(f"{command} takes no {' or '.join(given)}: {why}")
