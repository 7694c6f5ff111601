"""``fluidq capacity``: the maximum throughput of a deployment (Theorem 2)."""
from __future__ import annotations

from ...capacity import max_throughput, tokens_per_request
# the words of which limit binds (h-words), written once for every face
from ...dtmc.load_basis import K_MAX_BINDS, KV_CACHE_BINDS_PART, bound_words, kv_rules_case, load_basis_binding
from .. import emit
from ._roofline_args import (_held_context, add_roofline_args, check_context, check_max_model_len,
                             check_model_option, kv_estimated, max_model_len_line, memory_named, model_from_args,
                             named_by_flag, planner_source, roofline_engine, sync_note)
from ._profile_dir_args import add_link_args, check_profile_dir, profiled_model
from ..common import (
    add_engine_args,
    add_kv_arg,
    add_workload_args,
    check_kv_fits,
    engine_from_args,
    finite_positive,
    fit_json,
    fit_lines,
    fmt_tokens,
    kv_from_args,
    load_cli_trace,
    parameters_as_flags,
    profile_dir_flags,
    workload_from_args,
)


def register(sub):
    p = sub.add_parser("capacity", help="maximum throughput of one or more engines",
                       description="Maximum tokens/s, and requests/s for the workload's mean lengths (--prompt/"
                       "--output, default 100 each, or a --trace): sup_{b<=b_max} b/t(b), Theorem 2 of "
                       "arXiv:2504.07347; with --gpu or --profile-dir, vLLM's flow balance over the lengths themselves "
                       "(a trace's rows; with --geometric 4,096 seeded draws, as `fluidq check --load` reads them). "
                       "With --rate, also the offered load: rate x (m_p + m_d) / capacity.")
    add_engine_args(p, multi_engine=True, fit=True)
    add_workload_args(p)
    add_kv_arg(p, "KV-cache capacity in tokens per engine: where it binds, fewer requests decode together and the "
               "capacity is lower (default: unlimited; with --gpu or --profile-dir, vLLM's memory planner estimate); "
               "taken as the tokens held at the workload's context: for a sliding-window model more than vLLM "
               "logs")
    g = p.add_argument_group("a vLLM deployment from its operator-profile folder (no run needed)")
    g.add_argument("--profile-dir", default=None, metavar="DIR",
                   help="an operator-profile folder in LLMServingSim's layout (profile_meta.yaml, profile_tp1_*.csv): "
                        "capacity and binding limit of vLLM with --max-num-batched-tokens (default 2048), "
                        "--max-num-seqs (default 256) and the KV cache (--kv-capacity, or vLLM's memory planner "
                        "from --gpu-memory-gib)")
    g.add_argument("--gpu-memory-gib", type=float, default=None,
                   help="with --profile-dir: one GPU's memory, GiB (default: the folder's peer_sim_config.json)")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.9,
                   help="with --profile-dir: vLLM's --gpu-memory-utilization (default 0.9)")
    g.add_argument("--block-size", type=int, default=16, help="with --profile-dir: vLLM's --block-size (default 16)")
    g.add_argument("--tensor-parallel-size", type=int, default=1,
                   help="with --profile-dir: vLLM's --tensor-parallel-size (reads the folder's profile_tp{N}_*.csv and "
                        "adds two all-reduces per layer from the communication model below); with --gpu: GPUs per model copy")
    g.add_argument("--pipeline-parallel-size", type=int, default=1,
                   help="with --profile-dir: vLLM's --pipeline-parallel-size (stages, their bubble and the activations "
                        "sent between them); with --gpu refused (the roofline has no pipeline stages)")
    g.add_argument("--data-parallel-size", type=int, default=1,
                   help="with --profile-dir or --gpu: vLLM's --data-parallel-size (replicas behind the router; capacity = "
                        "sum; a MoE model's ranks in lockstep with --profile-dir only)")
    g.add_argument("--enable-expert-parallel", action="store_true",
                   help="with --profile-dir, a MoE model: spread the experts over the GPUs (two all-to-alls per MoE layer)")
    add_link_args(g, "with --profile-dir and GPUs that communicate")
    g.add_argument("--method", choices=("fluid", "simulate"), default=None,
                   help="with --profile-dir: 'fluid' (default, instant) the flow-balance formula; 'simulate' the "
                        "served tokens/s of fluidq.simulate on the same vLLM engine under overload (recompute "
                        "preemption, admission and the lockstep MoE ranks' slowest rank counted), mean and 95 %% CI "
                        "over --replications seeded runs; with --rate, Poisson arrivals at that rate (a benchmark's "
                        "--request-rate) of the --trace's requests each once, else 1.5 x the fluid capacity, doubled (at most "
                        "3 times) while the served rate is not clearly below the offered one; an answer that did not "
                        "saturate the engine says NOT SATURATED (a lower bound)")
    g.add_argument("--replications", type=int, default=None,
                   help="with --method simulate: seeded replications (default 5)")
    g.add_argument("--enable-prefix-caching", action="store_true",
                   help="with --method simulate: vLLM's --enable-prefix-caching (a preempted request reuses its blocks)")
    g.add_argument("--kv-cache-dtype", choices=["auto", "fp8"], default=None,
                   help="with --gpu or --profile-dir: vLLM's --kv-cache-dtype for the memory planner's KV cache: auto "
                        "(default) the model's dtype, fp8 one byte per cached value (the KV capacity follows it; the "
                        "batch time's KV reads stay at the model's dtype)")
    add_roofline_args(p, tp=False)  # --tensor-parallel-size and --gpu-memory-utilization are above
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _capacity_lengths(args):
    """``(trace or None, lengths)`` that ``--gpu`` and ``--profile-dir`` size on: a ``--trace``'s requests, each
    its own pair (loaded with the command line's checks: FIFO, order, ...); with ``--geometric`` the lengths as the
    load basis reads them (:func:`fluidq.dtmc.flow_basis.length_rows`: 4,096 seeded draws of the geometric laws;
    the flow balance is not linear in the lengths), so this line and the region line's basis differ only by their
    iteration models, as for fixed lengths (before, the means went in: Gemma-2-9B / A10G at 2000 + 100 gave
    0.2970 req/s against the basis' 0.4240, "42.8 % above"; --profile-dir on tests/stability/test_flow_basis.py's
    folder at geometric 100 + 100, 480.3 req/s against check's flow-balance basis 412.7); else the fixed
    ``--prompt`` and ``--output`` (100 each by default)."""
    if args.trace is not None:
        import numpy as np

        tr = load_cli_trace("--trace", args.trace).trace
        return tr, (np.asarray(tr.prompt_tokens), np.asarray(tr.output_tokens))
    if args.geometric:
        from ...dtmc.flow_basis import length_rows

        return None, length_rows(workload_from_args(args, default_rate=1.0))
    return None, (100 if args.prompt is None else args.prompt, 100 if args.output is None else args.output)


def _roofline(args):
    """``--gpu``: vLLM's capacity from the roofline batch time (fluidq.validate.roofline)."""
    import numpy as np

    from ...validate.roofline import predict_roofline_deployment
    from .. import CliError

    given = [o for o, v in (("--profile", args.profile), ("--fit", getattr(args, "fit", None)), ("--c-ms", args.c_ms),
                            ("--a-ms", args.a_ms), ("--b0", args.b0), ("--profile-dir", args.profile_dir)) if v is not None]
    for opt, v, default in (("--enable-expert-parallel", args.enable_expert_parallel, False),
                            ("--link-bandwidth-gbps", args.link_bandwidth_gbps, None),
                            ("--link-latency-us", args.link_latency_us, None),
                            ("--all-reduce-csv", args.all_reduce_csv, None)):
        if v != default:
            given.append(opt)  # the roofline reads its links from the GPU table; EP is --profile-dir's
    if given:
        raise CliError(f"--gpu describes the engine itself (a roofline estimate): give it without {', '.join(given)}")
    # --method simulate and its options are --profile-dir's: with --gpu the answer is the flow balance, and an
    # option it would not read is refused (before: --method simulate --replications 3 answered method "fluid")
    ignored = [o for o, v in (("--method simulate", args.method == "simulate"),
                              ("--replications", args.replications is not None),
                              ("--enable-prefix-caching", args.enable_prefix_caching)) if v]
    if ignored:
        raise CliError(f"{', '.join(ignored)}: read only with --profile-dir (with --gpu it would be ignored: the "
                       "answer is the flow balance); to simulate this engine run `fluidq simulate` with the same "
                       "--gpu/--model and --load or --rate (--replications there too)")
    from ...errors import ParameterError
    from ..._validate import integer

    with parameters_as_flags(_DEPLOYMENT_FLAGS):
        pp = integer("pipeline_parallel_size", args.pipeline_parallel_size, minimum=1, maximum=1024)
        dp = integer("data_parallel_size", args.data_parallel_size, minimum=1, maximum=1024)
    if pp > 1:
        raise ParameterError("--pipeline-parallel-size", pp, "1 with --gpu",
                             "the roofline batch time (fluidq.batchtime.roofline) is one engine's iteration: it has "
                             "no pipeline stages, their bubble or the activations sent between them; a pipeline "
                             "deployment is predicted from operator profiles with --profile-dir")
    finite_positive("--rate", args.rate, "a finite rate > 0 (requests per second)")
    model = model_from_args(args)
    if dp > 1 and model.is_moe:
        raise ParameterError("--data-parallel-size", dp, "1 for the mixture-of-experts model " + model.name
                             + " with --gpu",
                             "vLLM steps a MoE model's data-parallel ranks in lockstep (every MoE layer "
                             "synchronises them), which the roofline does not model; --engines N for N separate "
                             "vLLM servers (the sum), or --profile-dir for the lockstep group")
    from ..._validate import ENGINES_WHY, MAX_ENGINES

    integer("--engines", args.engines, minimum=1, maximum=MAX_ENGINES, why=ENGINES_WHY)
    n = args.engines * dp  # identical engines behind vLLM's router (or a JSQ router over servers): the sum
    integer("--engines x --data-parallel-size", n, minimum=1, maximum=MAX_ENGINES, why=ENGINES_WHY)
    tr, lengths = _capacity_lengths(args)
    gpu = _gpu(args.gpu)
    check_context(args, model, tr)
    kv_estimated(args, planner_source(model.name, gpu, args.tensor_parallel_size, args.gpu_memory_gib,
                                      args.gpu_memory_utilization))
    check_max_model_len(args, model, gpu, b_max=2048 if args.b_max is None else args.b_max,
                        k_max=256 if args.k_max is None else args.k_max, kv_capacity=args.kv_capacity,
                        block_size=args.block_size)
    from ...models import kv_bytes_per_value

    with named_by_flag(args=args), memory_named(gpu.name, args.tensor_parallel_size, args.gpu_memory_gib):
        one = predict_roofline_deployment(
            model, gpu, input_tokens=lengths[0], output_tokens=lengths[1],
            tensor_parallel_size=args.tensor_parallel_size, max_num_seqs=256 if args.k_max is None else args.k_max,
            max_num_batched_tokens=2048 if args.b_max is None else args.b_max, kv_capacity_tokens=args.kv_capacity,
            gpu_memory_gib=args.gpu_memory_gib, gpu_memory_utilization=args.gpu_memory_utilization,
            block_size=args.block_size, kv_bytes_per_value=kv_bytes_per_value(args.kv_cache_dtype),
            # the context check/simulate size a windowed model's cache at (the laws' means with --geometric, the
            # logged tokens with a --trace), so that the load basis below is the one they read (h-consist)
            context_tokens=_held_context(args))
    from dataclasses import replace

    res = replace(one, tokens_per_s=n * one.tokens_per_s, requests_per_s=n * one.requests_per_s,
                  residents=n * one.residents, limits={k: n * v for k, v in one.limits.items()},
                  inputs={**one.inputs, "engines": args.engines, "data_parallel_size": dp, "n_engines": n,
                          "kv_cache_dtype": args.kv_cache_dtype or "auto"})
    i = res.inputs
    if n > 1:
        copies = " x ".join(w for w in ((f"{args.engines} servers" if args.engines > 1 else ""),
                                        (f"DP{dp}" if dp > 1 else "")) if w)
        deployment = (f"{n} identical engines ({copies}), each {i['model']} on {i['tensor_parallel_size']} x "
                      f"{i['gpu']} (roofline batch time); capacity = the sum (a router over identical engines)")
        why = f"each of the {n} engines: {_limits_in_words(one.reason, one.limits)}"
    else:
        deployment = f"{i['model']} on {i['tensor_parallel_size']} x {i['gpu']} (roofline batch time)"
        why = _limits_in_words(res.reason, res.limits)
    lines = [f"deployment      {deployment}",
             f"vLLM            max_num_batched_tokens={i['max_num_batched_tokens']}, max_num_seqs={i['max_num_seqs']}, "
             f"block_size={i['block_size']}, tensor_parallel_size={i['tensor_parallel_size']}"
             + (f", data_parallel_size={dp}" if dp > 1 else "")
             + (f", kv_cache_dtype={args.kv_cache_dtype}" if args.kv_cache_dtype else ""),
             f"KV cache        {i['kv_capacity_tokens']:,} tokens"
             + (" per engine" if n > 1 else "") + f" ({i['kv_source']})",
             f"capacity        {_n(res.tokens_per_s)} tokens/s, {_n(res.requests_per_s)} req/s"
             + (f" ({n} x {_n(one.tokens_per_s)} tokens/s)" if n > 1 else "")
             + f" (m_p + m_d = {_residents(round(_per_request(res), 6))} tokens a request"
             + (f" served, over {len(lengths[0]):,} seeded draws of the geometric lengths as the load basis reads them"
                if args.geometric else "") + ")",
             f"binding         {res.binding} (residents allowed"
             + (f" summed over the {n} engines" if n > 1 else "") + ": "
             + ", ".join(f"{_LIMIT_WORDS.get(k, k)} {_residents(v)}" for k, v in res.limits.items()) + ")",
             f"estimate        {i['estimate']}",
             f"why             {why}"]
    sync = sync_note(gpu, i["tensor_parallel_size"], i["batch_time"]["sync_step_us"])
    if sync:
        lines.insert(-1, f"sync            {sync}")
    lines[3:3] = max_model_len_line(args)  # after the KV cache: vLLM with its default would not start
    out = res.to_dict()
    out["max_model_len"] = args.max_model_len_info
    # the other commands (check, region, simulate --load) take the same roofline as a context-aware engine. Where the
    # KV cache does not bind, their lambda* (where the mix leaves its stability region) and the flow balance above are
    # one number up to the models (Llama-3.1-8B on an H100 at 100 + 100 tokens: 172.7 against 171.0 req/s, 2026-12-06,
    # and seeded simulation 171.7), of which a prefill chunk's causal attention grows with the prompt: where the token
    # budget binds the flow balance lay 0-9.4 % below on 13 random deployments, 35 % at 5,616-token prompts on a 0.5B
    # model (h-consist, validation/RESULTS.md "one deployment, every face"). Where it binds, the region's figure takes the batch that mean footprints allow and
    # overstates what the engine serves under the cache's rules by 5-46 % (Qwen2.5-7B on an L4 at 1000 + 200: 3.338
    # against 2.352 req/s, simulated 2.364; validation/RESULTS.md, "the load basis where the KV cache binds"), so
    # check/simulate --load read fluidq.dtmc.kv_basis.kv_capacity there and this line says so. That basis is the
    # capacity line's flow balance on another iteration model, the engine the simulator runs: t(b, 0) + s kv (no
    # attention of a prefill chunk to its own tokens, one LM head an iteration) and token memory, where the capacity
    # line reads the full roofline and vLLM's blocks: 2.352 against 2.327 req/s there (+1.11 % without the chunk's
    # attention, +0.14 % one LM head, -0.18 % tokens for blocks of 16; 2026-12-07,
    # tests/cli/test_capacity_headline_vs_kv_rules.py), and the region line says how far apart they are. Where
    # max_num_seqs binds instead (the basis' binding "k_max", h-basis) the region's figure is the stability region's
    # bound over every scheduler, not a mean-footprint batch, and the lines say that limit and the band measured
    # there (SATURATION_WHERE_K_MAX_BINDS; h-words)
    engine, _ = roofline_engine(args, b_max=i["max_num_batched_tokens"], k_max=i["max_num_seqs"],
                                kv_capacity=i["kv_capacity_tokens"], context_checked=True)  # checked above
    from ...dtmc.load_basis import load_basis
    from ...stability.measured import SATURATION_PER_BASIS

    shape = workload_from_args(args, default_rate=1.0)
    lb = load_basis(engine, shape, n_engines=n)  # what check --load reads: the KV rules' capacity where it binds
    reg = lb.max_throughput(engine, shape, n_engines=n)
    kvr = lb.capacity if lb.basis == "kv_rules" else None
    kv_band = SATURATION_PER_BASIS["kv_rules"]  # the measured band the verdicts quote, not a range written here
    # two counts of a request's tokens (user6a, finding 5): the capacity line's vLLM flow balance counts the
    # m_p + m_d tokens a request holds, the region's batch work m_p + m_d - 1 (the iteration that ends a prefill
    # emits the first output token, no decode step for it); each line says its count, the JSON has both
    out["tokens_per_request"] = _per_request(res)
    out["stability_region"] = {"tokens_per_s": reg.tokens_per_s, "requests_per_s": reg.requests_per_s,
                               "tokens_per_request": _per_request(reg), "reason": reg.reason,
                               "kv_rules_requests_per_s": None if kvr is None else kvr.requests_per_s}
    lines.insert(_after_capacity(lines),
                 f"region          {_n(reg.tokens_per_s)} tokens/s, {_n(reg.requests_per_s)} req/s "
                 f"(m_p + m_d - 1 = {_residents(round(_per_request(reg), 6))} tokens a request: the iteration that ends a prefill "
                 "emits the first output token): where the "
                 "workload's mix leaves the stability region of the same engine (a fluid model of batch shapes, not "
                 "the flow balance above; "
                 + ("the lambda* of `fluidq check`, `region` and `simulate --load`" + _attention_gap(reg, res) + ")"
                    if kvr is None else
                    _region_binds(lb, reg, roofline=True) +
                    f"`fluidq check --load` and `simulate --load` read {_n(kvr.requests_per_s)} req/s, "
                    f"{_gap(kvr.requests_per_s, res.requests_per_s)} the capacity line: the flow balance above on the "
                    "engine they simulate, whose t(b, kv) = t(b, 0) + s kv leaves out a prefill chunk's attention to "
                    f"its own tokens and charges one LM head an iteration, its KV cache in tokens, not blocks of "
                    f"{i['block_size']} (vLLM's blocks simulated instead moved the saturation -1.3 to +2.9 %); "
                    f"{_region_band(lb, kv_band)}; here the cache holds "
                    f"{_n(one.limits.get('kv_cache', float('nan')))} requests)"))
    out.update(lb.to_dict())
    out["load_basis_binding"] = load_basis_binding(lb)
    out["load_basis_load"] = _basis_load(lb, args.rate)
    if lb.basis != "max_throughput":
        lines.insert(_after_capacity(lines) + 1,
                     _basis_line(lb, res, out["load_basis_load"], against="the capacity line",
                                 figure="the region line", caveat_in="the region line", figure_res=reg))
    if args.rate is None:
        emit(args, out, "\n".join(lines))
        return 0
    # --rate: the offered load, as without --gpu (rate x mean tokens over the capacity)
    # in requests: the capacity line's tokens count the requests it serves, which leaves out those no cache holds
    # (varied lengths), so its tokens/s over the workload's mean tokens would misstate the load
    mean_tokens = shape.mean_prompt_tokens + shape.mean_output_tokens
    offered, line = _offered(args.rate, mean_tokens, res.requests_per_s * mean_tokens)
    lines.insert(_after_capacity(lines), line)
    out["offered"] = offered
    emit(args, out, "\n".join(lines))
    return 0


def _load_basis(args, engine, workload):
    """:func:`fluidq.dtmc.load_basis.load_basis` of the engine(s) and lengths, as ``fluidq check --load`` reads it."""
    from ...dtmc.load_basis import load_basis

    return load_basis(engine, workload, n_engines=args.engines)


def _basis_load(lb, rate) -> float | None:
    """``--rate``'s load on the load basis ``lb`` (the JSON's ``load_basis_load``): ``None`` without a rate or
    where the basis serves nothing."""
    return None if rate is None or not lb.requests_per_s > 0 else rate / lb.requests_per_s


def _basis_line(lb, res, load, *, against: str = "the requests line", figure: str = "the capacity above",
                caveat_in: str | None = None, figure_res=None) -> str:
    """The ``load basis`` line where the load basis ``lb`` is not :func:`fluidq.max_throughput`: the basis' figure
    in the words of :data:`fluidq.dtmc.load_basis.BASIS_WORDS`, how far from ``res`` (the answer's line named
    ``against``), and, where the KV cache binds, where seeded simulations saturate against the max_throughput
    figure (``figure``: the capacity line without ``--gpu``, the region line with it) and against the basis
    (:data:`fluidq.stability.measured.SATURATION_PER_BASIS`); ``load``: ``--rate``'s load on the basis (``None``
    without ``--rate``).  Both paths of ``fluidq capacity`` print it.

    The mean-footprint caveat (that figure takes the batch mean request footprints allow, not the cache's rules) is
    said once in the answer (h-tidy5): where ``caveat_in`` names the line that says it (the why line, whose
    max_throughput reason states the mean-footprint bound; the region line with ``--gpu``) this line refers to it,
    else it says it here.

    Which limit binds is :func:`fluidq.dtmc.load_basis.kv_rules_case`'s (h-words): where ``max_num_seqs`` binds
    (``lb.capacity.binding == "k_max"``) the line says so, and quotes the band measured there
    (:data:`fluidq.stability.measured.SATURATION_WHERE_K_MAX_BINDS`), not the KV-bound engines'; where the cache
    binds but ``figure`` is not the batch of mean footprints (``figure_res``, the :func:`fluidq.max_throughput`
    result ``figure`` prints, ``res`` by default, has no ``kv_batch_tokens``) it says what that figure is."""
    from ...dtmc.load_basis import BASIS_WORDS
    from ...results import fmt_load

    line = (f"load basis      {_n(lb.requests_per_s)} req/s = {_n(lb.tokens_per_s)} tokens/s of batch work, "
            f"{_gap(lb.requests_per_s, res.requests_per_s)} {against}: {BASIS_WORDS[lb.basis]} "
            "(fluidq.dtmc.load_basis), what `fluidq check --load`, `simulate --load` and `latency --loads` are "
            "fractions of")
    reg = res if figure_res is None else figure_res
    case = kv_rules_case(lb, reg)
    who = "it" if caveat_in == figure else caveat_in  # the line that says what the figure is (None: this one)
    told = f"{figure} ({who} says what it is)"
    if case == "k_max":  # max_num_seqs binds: the cache holds its residents at full context; the band measured there
        from ...stability.measured import SATURATION_WHERE_K_MAX_BINDS

        kvk, mtk = SATURATION_WHERE_K_MAX_BINDS["kv_rules"], SATURATION_WHERE_K_MAX_BINDS["max_throughput"]
        said = f"{told} was" if caveat_in else f"{figure}, {bound_words(reg, roofline=False)}, was"
        line += (f"; {K_MAX_BINDS}: this basis is {kvk.within_words()}, where {said} {mtk.errors_words()} "
                 f"({kvk.source})")
    elif case == "kv_cache_bound":  # the cache binds for part of the residents' life; the figure is not its batch
        from ...stability.measured import SATURATION_PER_BASIS

        kvb = SATURATION_PER_BASIS["kv_rules"]
        said = told if caveat_in else f"{figure} is {bound_words(reg, roofline=False)}, not the cache's rules"
        line += (f"; {KV_CACHE_BINDS_PART}: {said}; {kvb.saturate_words()} (this basis; {kvb.source})")
    elif case == "kv_cache":
        from ...stability.measured import SATURATION_PER_BASIS

        mt, kvb = SATURATION_PER_BASIS["max_throughput"], SATURATION_PER_BASIS["kv_rules"]
        said = (f"the KV cache binds: on {mt.engines} KV-bound engines {figure} (the mean-footprint figure, as "
                f"{who} says) was" if caveat_in else
                f"the KV cache binds, and {figure} takes the batch its mean request footprints allow, not its rules: "
                f"on {mt.engines} KV-bound engines that figure was")
        line += (f"; {said} {mt.above_words()}, which lie at {kvb.sim_over_basis[0]:.2f}-{kvb.sim_over_basis[1]:.2f} "
                 f"times this basis ({kvb.source})")
    elif lb.basis == "flow_balance":
        line += f"; the engine's batch time reads the batch composition, so {figure} counts no decode cost"
    if load is not None:
        line += f"; --rate is load {fmt_load(load)} of it" + (" (above 1)" if load > 1 else "")
    return line


def _region_binds(lb, reg, *, roofline: bool) -> str:
    """The ``--gpu`` region line's clause on what binds and what the region figure is, where the basis is
    ``kv_rules`` (ends with ": ")."""
    case = kv_rules_case(lb, reg)
    if case == "k_max":
        return f"{K_MAX_BINDS}, and this figure is {bound_words(reg, roofline=roofline)}: "
    if case == "kv_cache_bound":
        return f"{KV_CACHE_BINDS_PART}, and this figure is {bound_words(reg, roofline=roofline)}, not its rules: "
    return "the KV cache binds, and this figure takes the batch its mean footprints allow, not its rules: "


def _region_band(lb, kv_band) -> str:
    """The ``--gpu`` region line's measured band for the basis: where ``max_num_seqs`` binds, the band measured
    there (:data:`fluidq.stability.measured.SATURATION_WHERE_K_MAX_BINDS`), this figure's beside it; else where
    the cache binds (``kv_band``, ``SATURATION_PER_BASIS["kv_rules"]``)."""
    if kv_rules_case(lb, None) == "k_max":
        from ...stability.measured import SATURATION_WHERE_K_MAX_BINDS

        kvk, mtk = SATURATION_WHERE_K_MAX_BINDS["kv_rules"], SATURATION_WHERE_K_MAX_BINDS["max_throughput"]
        return f"that basis is {kvk.within_words()}, this figure {mtk.errors_words()} ({kvk.source})"
    return f"where they read that basis, {kv_band.saturate_words()} ({kv_band.source})"


def _per_request(res) -> float:
    """Tokens a request counts in ``res`` (tokens/s over req/s): ``m_p + m_d`` for the capacity line, the batch work
    ``m_p + m_d - 1`` for the region (``nan`` at zero capacity)."""
    return res.tokens_per_s / res.requests_per_s if res.requests_per_s > 0 else float("nan")


def _attention_gap(reg, res) -> str:
    """The ``--gpu`` region line's clause where the token budget binds (no KV-rules basis): how far the region's
    figure, the lambda* the other commands read, lies from the capacity line when that is 1 % or more -- mostly a
    prefill chunk's attention to its own tokens, which the capacity line's roofline charges and the simulated engine
    ``t(b, 0) + s kv`` leaves out (0-9.4 % on 13 random budget-bound deployments, 35 % at 5,616-token prompts on a
    0.5B model; validation/RESULTS.md, "one deployment, every face", h-consist); "" below 1 %."""
    if not (res.requests_per_s > 0 and abs(reg.requests_per_s / res.requests_per_s - 1) >= 0.01):  # NaN: no clause
        return ""
    return (f"; {_gap(reg.requests_per_s, res.requests_per_s)} the capacity line: the engine they simulate, "
            "t(b, kv) = t(b, 0) + s kv, leaves out a prefill chunk's attention to its own tokens, which the capacity "
            "line charges, and charges one LM head an iteration")


def _gap(x: float, ref: float) -> str:
    """``x`` against ``ref`` in words: "1.1 % above", "0.4 % below", "equal to"."""
    rel = x / ref - 1 if ref > 0 else float("nan")
    if not rel == rel:
        return "against"
    if abs(rel) < 5e-4:
        return "equal to"
    return f"{100 * abs(rel):.1f} % {'above' if rel > 0 else 'below'}"


def _after_capacity(lines: list[str]) -> int:
    """Where a line follows the answer's ``capacity`` line (the ``max-model-len`` note may come before it)."""
    return next(i for i, ln in enumerate(lines) if ln.startswith("capacity ")) + 1


def _offered(rate_per_s: float, mean_tokens: float, capacity_tokens_per_s: float):
    """``--rate``'s offered load, rate x (m_p + m_d) over the capacity: its JSON (``out["offered"]``) and its
    line of the human answer. No request can be served (capacity 0): the load is undefined, null in the JSON."""
    offered = rate_per_s * mean_tokens
    load = offered / capacity_tokens_per_s if capacity_tokens_per_s > 0 else None
    from ...results import fmt_load

    line = (f"load            {fmt_load(load)} of capacity: {rate_per_s:g} req/s x {mean_tokens:g} tokens = "
            f"{_n(offered)} tokens/s offered"
            + (" (above 1: no scheduler keeps up)" if load is not None and load > 1 else "")
            + (" (undefined: the capacity is 0, no request can be served)" if load is None else ""))
    return {"rate_per_s": rate_per_s, "tokens_per_s": offered, "load": load}, line


def _gpu(name):
    from ...models import load_gpu

    return load_gpu(name, option="--gpu")


def _deployment(args):
    """``--profile-dir``: vLLM's capacity from the folder's operator profiles (fluidq.validate.deployment)."""
    import numpy as np

    from ...validate.deployment import predict_deployment
    from .. import CliError

    method = args.method or "fluid"
    given = [o for o, v in (("--profile", args.profile), ("--fit", getattr(args, "fit", None)), ("--c-ms", args.c_ms),
                            ("--a-ms", args.a_ms), ("--b0", args.b0), ("--model", args.model),
                            ("--rate", args.rate if method == "fluid" else None)) if v is not None]
    if args.engines != 1:
        given.append("--engines")
    if given:
        raise CliError(f"--profile-dir describes the engine itself: give it without {', '.join(given)}"
                       + (" (--rate is read with --method simulate)" if "--rate" in given else ""))
    if method == "fluid":
        for opt, v in (("--replications", args.replications), ("--enable-prefix-caching", args.enable_prefix_caching or None)):
            if v is not None:
                raise CliError(f"{opt} is read only with --method simulate (it would be ignored)")
    sim_args = {}
    if method == "simulate":
        finite_positive("--rate", args.rate, "a finite rate > 0 (requests per second)")
        sim_args = dict(method="simulate", arrival_rate=args.rate, enable_prefix_caching=bool(args.enable_prefix_caching),
                        replications=5 if args.replications is None else args.replications,
                        n_requests=None if args.trace is not None else 2000)  # a trace's requests each once
    tr, lengths = _capacity_lengths(args)
    check_profile_dir(args.profile_dir)
    from ._profile_dir_args import profile_dir_context

    profile_dir_context(args, tr)  # --prompt + --output within the model's context; the KV estimate named as such
    named = profile_dir_flags(args)
    named["flags"] = {**named["flags"], **_DEPLOYMENT_FLAGS}
    with parameters_as_flags(**named):  # (a cache no request fits: its flag or the estimate)
        res = predict_deployment(args.profile_dir, input_tokens=lengths[0], output_tokens=lengths[1],
                                 model=profiled_model(args),
                                 max_num_seqs=256 if args.k_max is None else args.k_max,
                                 max_num_batched_tokens=2048 if args.b_max is None else args.b_max,
                                 tensor_parallel_size=args.tensor_parallel_size,
                                 pipeline_parallel_size=args.pipeline_parallel_size,
                                 data_parallel_size=args.data_parallel_size,
                                 enable_expert_parallel=bool(args.enable_expert_parallel),
                                 link_bandwidth_gbps=args.link_bandwidth_gbps, link_latency_us=args.link_latency_us,
                                 all_reduce_csv=args.all_reduce_csv, kv_capacity_tokens=args.kv_capacity,
                                 gpu_memory_gib=args.gpu_memory_gib, gpu_memory_utilization=args.gpu_memory_utilization,
                                 block_size=args.block_size, kv_cache_dtype=args.kv_cache_dtype or "auto",
                                 **sim_args)
    i = res.inputs
    lines = [f"deployment      {i['model']} from {i['profile_dir']} ({i['n_layers']} layers, from its model facts)",
             f"vLLM            max_num_batched_tokens={i['max_num_batched_tokens']}, max_num_seqs={i['max_num_seqs']}, "
             f"block_size={i['block_size']}, tensor_parallel_size={i['tensor_parallel_size']}, "
             f"pipeline_parallel_size={i['pipeline_parallel_size']}, data_parallel_size={i['data_parallel_size']}",
             f"layout          {i['layout']}" + (f"; communication {i['communication']}" if i["communication"] else ""),
             f"KV cache        {i['kv_capacity_tokens']:,} tokens ({i['kv_source']})",
             f"capacity        {_n(res.tokens_per_s)} tokens/s, {_n(res.requests_per_s)} req/s ({method}"
             + (f", 95 % CI {_n(res.ci[0])}-{_n(res.ci[1])} tokens/s over {len(res.replications)} replications"
                if res.ci is not None else "")
             + (f"; {len(lengths[0]):,} seeded draws of the geometric lengths, as the load basis reads them"
                if args.geometric else "") + ")"
             + ("; NOT SATURATED: the offered rate, a lower bound of the capacity (why)"
                if i.get("saturated") is False else ""),
             f"binding         {res.binding} (residents allowed: "
             + ", ".join(f"{_LIMIT_WORDS.get(k, k)} {_residents(v)}" for k, v in res.limits.items()) + ")",
             f"why             {_why_per_engine(res, i)}"]
    emit(args, res, "\n".join(lines))
    return 0


#: predict_deployment's parallel and simulation parameters as the flags of this command that set them (the
#: others in profile_dir_flags)
_DEPLOYMENT_FLAGS = {"pipeline_parallel_size": "--pipeline-parallel-size", "data_parallel_size": "--data-parallel-size",
                     "enable_expert_parallel": "--enable-expert-parallel", "replications": "--replications",
                     "arrival_rate": "--rate"}


def _why_per_engine(res, i) -> str:
    """The reason of a deployment prediction in words.  With PP or DP replicas (n identical engines) the
    reason is one engine's (its ``max_num_seqs = k_max // pp``) while ``limits`` are summed over the n:
    the line says so and quotes one engine's limits, not the sums beside one engine's ``max_num_seqs``."""
    k, pp, dp = i["max_num_seqs"], i["pipeline_parallel_size"], i["data_parallel_size"]
    n = pp * dp
    if n > 1 and "x one engine" in i["layout"]:
        per = {key: v / n for key, v in res.limits.items()}
        reason = res.reason
        if pp > 1:  # each virtual engine holds k // pp of the residents vLLM's --max-num-seqs allows
            reason = reason.replace(f"max_num_seqs = {k // pp} caps",
                                    f"max_num_seqs = {k} over {pp} pipeline virtual engines, {k // pp} each, caps")
        return f"each of the {n} engines: {_limits_in_words(reason, per)}"
    if dp > 1 and "lockstep" in i["layout"]:  # one group of dp ranks: its k_max is dp x --max-num-seqs
        reason = res.reason.replace(f"max_num_seqs = {dp * k} caps",
                                    f"max_num_seqs = {k} on each of the {dp} ranks ({dp * k} in the group) caps")
        return _limits_in_words(reason, res.limits)
    return _limits_in_words(res.reason, res.limits)


#: the words by which :func:`fluidq.max_throughput`'s reason states the mean-footprint caveat where the KV cache's
#: mean footprints bind (fluidq/capacity/__init__.py ``_batch_limit``; pinned by
#: tests/cli/test_capacity_prints_load_basis.py): the load basis line refers to the why line where they are in it
MEAN_FOOTPRINT_BOUND = "the mean-footprint bound"

#: the residents' limits of a deployment prediction, in words for the human answer (the JSON keeps the keys)
_LIMIT_WORDS = {"token_budget": "the token budget", "k_max": "k_max", "kv_cache": "the KV cache"}


def _residents(x) -> str:
    """A number of residents: a whole number as one (``256``), else its meaningful digits (``1,019``)."""
    return f"{int(x):,}" if float(x).is_integer() else _n(x)


def _limits_in_words(reason: str, limits: dict) -> str:
    """``reason`` with its ``token_budget allows 1018.9`` in words at 4 digits (``the token budget allows 1,019``),
    from the unrounded ``limits`` where they have the key."""
    import re

    return re.sub(r"\b(token_budget|k_max|kv_cache) allows (\d+(?:\.\d+)?)",
                  lambda m: f"{_LIMIT_WORDS[m.group(1)]} allows "
                            f"{_residents(limits.get(m.group(1), float(m.group(2))))}", reason)


def _n(x) -> str:
    """A computed number for the human answer: its meaningful digits (the JSON has them all)."""
    from ...results import MEANINGFUL_DIGITS, fmt_value

    return fmt_value(x, digits=MEANINGFUL_DIGITS)


def run(args):
    if args.gpu is not None:
        return _roofline(args)
    check_model_option(args)
    if args.profile_dir is not None:
        return _deployment(args)
    for opt, v, default in (("--gpu-memory-gib", args.gpu_memory_gib, None),
                            ("--gpu-memory-utilization", args.gpu_memory_utilization, 0.9),
                            ("--block-size", args.block_size, 16), ("--tensor-parallel-size", args.tensor_parallel_size, 1),
                            ("--pipeline-parallel-size", args.pipeline_parallel_size, 1),
                            ("--data-parallel-size", args.data_parallel_size, 1),
                            ("--enable-expert-parallel", args.enable_expert_parallel, False),
                            ("--link-bandwidth-gbps", args.link_bandwidth_gbps, None),
                            ("--link-latency-us", args.link_latency_us, None), ("--all-reduce-csv", args.all_reduce_csv, None),
                            ("--method", args.method, None), ("--replications", args.replications, None),
                            ("--kv-cache-dtype", args.kv_cache_dtype, None),
                            ("--enable-prefix-caching", args.enable_prefix_caching, False)):
        if v != default:
            from .. import CliError

            also = opt in ("--gpu-memory-gib", "--gpu-memory-utilization", "--block-size", "--tensor-parallel-size",
                           "--kv-cache-dtype", "--data-parallel-size", "--pipeline-parallel-size")
            raise CliError(f"{opt} is read only with --profile-dir{' or --gpu' if also else ''} (it would be ignored)")
    finite_positive("--rate", args.rate, "a finite rate > 0 (requests per second)")
    engine = kv_from_args(args, engine_from_args(args))
    # the lengths default to 100 + 100 tokens (as --help says); without --rate or --trace the arrival
    # rate is a placeholder, left out of the JSON
    workload = workload_from_args(args, default_rate=None if args.trace is not None else 1.0)
    check_kv_fits(engine, workload)
    res = max_throughput(engine, workload, n_engines=args.engines)
    defaults = args.trace is None and (args.prompt is None or args.output is None)
    bt = res.batch_tokens
    if isinstance(bt, tuple) and len(set(bt)) == 1:  # identical engines: one number, not a million
        bt = f"{bt[0]} on each of the {len(res.batch_tokens):,} engines"
    lines = [f"engine          {engine.name}: {engine.batch_time.describe()}, b_max={engine.b_max}"
             + (f", k_max={engine.k_max}" if engine.k_max else "")
             + (f", KV cache {engine.kv_capacity_tokens:,} tokens" if engine.kv_capacity_tokens else ""),
             *fit_lines(args),
             f"engines         {args.engines}",
             f"batch tokens    {bt}",
             f"capacity        {_n(res.tokens_per_s)} tokens/s  ({_n(res.tokens_per_s / 1e3)} tokens/ms)"]
    if res.requests_per_s is not None:
        per_req = tokens_per_request(engine, workload)
        lines.append(f"requests        {_n(res.requests_per_s)} req/s for "
                     + (f"m_p+m_d-1 = {fmt_tokens(per_req)} tokens (the prefill emits the first token)"
                        if engine.prefill_emits_token else f"m_p+m_d = {fmt_tokens(per_req)} tokens")
                     + f"  (lambda* = {_n(res.requests_per_s / 1e3)} req/ms)"
                     + (f"  ({' and '.join(o for o, v in (('--prompt', args.prompt), ('--output', args.output)) if v is None)}"
                        " 100 by default)" if defaults else ""))
    out = res.to_dict()
    if fit_json(args) is not None:
        out["fit"] = fit_json(args)
    wl = (out.get("inputs") or {}).get("workload")
    if args.rate is None and args.trace is None and isinstance(wl, dict):
        out["inputs"]["workload"] = {**wl, "arrival": None}  # no rate was given: none is reported
    if args.rate is not None:
        out["offered"], line = _offered(workload.arrival_rate_per_s, tokens_per_request(engine, workload), res.tokens_per_s)
        lines.append(line)
    # the lambda* that `check --load`, `simulate --load` and `latency --loads` are fractions of (fluidq.dtmc.load_basis):
    # where it is not this capacity (the KV cache binds: its rules' capacity) the answer says so beside it; before,
    # the capacity line alone overstated what a KV-bound engine serves (RTX 4090 profile, 41,408 KV tokens, 1000 +
    # 200: 4.579 req/s here, 3.837 under the cache's rules, where `check --load` reads its loads; 2026-12-07)
    lb = _load_basis(args, engine, workload)
    out.update(lb.to_dict())
    out["load_basis_binding"] = load_basis_binding(lb)
    out["load_basis_load"] = _basis_load(lb, workload.arrival_rate_per_s if args.rate is not None else None)
    if lb.basis != "max_throughput":
        # the why line (max_throughput's reason) states the mean-footprint bound where it binds: said there once
        lines.insert(_after_capacity(lines) + (1 if res.requests_per_s is not None else 0),
                     _basis_line(lb, res, out["load_basis_load"],
                                 caveat_in="the why line" if MEAN_FOOTPRINT_BOUND in res.reason else None))
    lines.append(f"why             {res.reason}")
    emit(args, out, "\n".join(lines))
