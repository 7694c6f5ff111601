"""``fluidq latency``: compare orderings (FCFS, PARS, SJF, SRPT, gamma-Boost, UNIBOOST) by simulation."""
from __future__ import annotations

from .. import CliError, emit
from ._roofline_args import add_roofline_args, engine_for_command, max_model_len_line
from ..common import (
    add_engine_args,
    add_swap_args,
    add_workload_args,
    lengths_text,
    output_file,
    reject_ignored,
    swap_cost,
    workload_from_args,
    write_late,
)

#: replications per policy and load: the 95% half-width is t_{n-1} s / sqrt(n), 9.0 s with 2 runs (the old
#: default, intervals such as P99 83.98 ± 2.6e+02) and 1.24 s with 5; the default run takes some 35 s
DEFAULT_REPLICATIONS = 5

#: the default per-token SLO is this many full-batch iteration times t(b_max) (fluidq's choice: a request
#: meets it when it is served at least 1/SLO_FACTOR as fast as a request decoding one token per full batch)
SLO_FACTOR = 5.0


def register(sub):
    p = sub.add_parser("latency", help="latency of scheduling orderings on a workload or trace",
                       description="Simulate several orderings on the same requests at given loads and compare "
                       "mean latency per token, P90/P99 time to last token, time to first token and preemptions "
                       "(PARS arXiv:2510.03243, UNIBOOST arXiv:2606.18431).")
    add_engine_args(p)
    add_workload_args(p, rate=False)  # the --loads set the rates: --rate is refused, so not listed
    p.add_argument("--reasoning", action="store_true",
                   help="use the built-in heavy-tailed reasoning-like workload instead of --prompt/--output/--trace")
    p.add_argument("--family", default=None, choices=["reasoning", "gsm8k", "chat", "azure-conv", "azure-code"],
                   help="a named workload family from the shipped data (fluidq.latency.families): lengths of GSM8K, "
                        "AlpacaEval chat, the Azure traces, or the reasoning-like heavy tail; Poisson arrivals")
    p.add_argument("--kv-capacity", type=int, default=None, help="KV-cache capacity in tokens (memory, preemptions)")
    p.add_argument("--preemption", choices=["recompute", "swap"], default=None,
                   help="what happens to a request evicted when the KV cache (--kv-capacity) is full: "
                        "recomputed (default) or swapped")
    add_swap_args(p)
    p.add_argument("--orderings", default="fcfs,pars,sjf,srpt,gamma-boost,uniboost",
                   help="comma-separated: fcfs, pars, sjf, srpt, las, gamma-boost, uniboost, uniboost-nomemguard, "
                   "uniboost-ada, distboost (fluidq's reconstruction of the UNIBOOST paper's distribution-aware strawman)")
    p.add_argument("--burst", type=int, default=None, metavar="N",
                   help="the PARS burst experiment: N requests arrive at t=0 on an empty engine and every run drains "
                        "them all (no --loads/--horizon)")
    p.add_argument("--slo-per-token", type=float, default=None, metavar="S",
                   help="per-token latency SLO in seconds whose attainment is reported (default: fluidq's choice, "
                        f"{SLO_FACTOR:g} x the full-batch time t(b_max))")
    p.add_argument("--slo-ttlt", type=float, default=None, metavar="S",
                   help="time-to-last-token SLO in seconds whose attainment is reported (default: none)")
    p.add_argument("--loads", default=None, help="comma-separated fractions of the capacity lambda* that `fluidq check --load` "
                   "reads (fluidq.dtmc.load_basis: where the KV cache binds, the capacity under its rules; else "
                   "max_throughput), each finite and > 0 (above 1 an overload; a run too large to simulate is refused "
                   "with its size; they set the arrival rates, so there is no --rate)")
    p.add_argument("--horizon", type=float, default=None, help="simulated seconds per run (default 300)")
    p.add_argument("--replications", type=int, default=DEFAULT_REPLICATIONS,
                   help=f"seeded runs per policy and load (>= 1, default {DEFAULT_REPLICATIONS}: with 2 the Student-t "
                        "intervals are some 7 times wider)")
    p.add_argument("--tau", type=float, default=None,
                   help="Kendall tau of PARS's stand-in predictor, in (0, 1] (default 0.6; with the pars ordering)")
    p.add_argument("--gamma", type=float, default=None,
                   help="gamma-Boost / UNIBOOST rate, 1/s (default: M/G/1 value; with those orderings)")
    p.add_argument("--memguard-k", type=int, default=None, metavar="K",
                   help="MEMGUARD's first work level in tokens (fluidq's choice, default 32; with uniboost/uniboost-ada)")
    p.add_argument("--ada-every", type=int, default=None, metavar="N",
                   help="gamma-Ada's cadence: response times between gamma updates (fluidq's choice, default 50; "
                        "with uniboost-ada)")
    p.add_argument("--seed", type=int, default=0, help="root seed (a non-negative integer)")
    p.add_argument("--metric", default=None,
                   help="metric plotted by --plot (default latency_per_token_mean_s); given, it is also a column "
                        "of the tables and the ordering with its lowest value is named per load (saying when the others' 95 %% "
                        "intervals overlap it)")
    p.add_argument("--plot", default=None, metavar="PATH", help="write a latency-load plot to PATH (format from the "
                   "extension: png, pdf, svg...; none: .png)")
    add_roofline_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _floats(name, text):
    from ..common import comma_list

    try:
        return tuple(float(x) for x in comma_list(name, text, "numbers"))
    except ValueError as exc:
        raise CliError(f"{name} {text}: expected comma-separated numbers") from exc


def _basis_words(engine, workload, res) -> str:
    """What the loads are fractions of (the load basis, :func:`fluidq.dtmc.load_basis.load_basis`), in words.
    Where it is ``kv_rules``, which limit binds is :func:`fluidq.dtmc.load_basis.kv_rules_case`'s (h-words2): the
    mean-footprint words only where the cache binds at the mean footprints; where ``max_num_seqs`` binds it says
    so and quotes the band measured there (:data:`fluidq.stability.measured.SATURATION_WHERE_K_MAX_BINDS`)."""
    from ...dtmc.load_basis import BASIS_WORDS, K_MAX_BINDS, KV_CACHE_BINDS_PART, bound_words, kv_rules_case, load_basis
    from ...results import MEANINGFUL_DIGITS, fmt_value

    b = res.inputs.get("load_basis")
    if b == "kv_rules":
        # the basis compare_orderings read (kv_rules is read with recompute preemptions only), and the
        # max_throughput it computed on the way (LoadBasis.max_throughput: not computed again)
        lb = load_basis(engine, workload)
        cap = lb.max_throughput(engine, workload)
        case = kv_rules_case(lb, cap)
        mt = fmt_value(cap.requests_per_s, digits=MEANINGFUL_DIGITS)
        if case == "k_max":
            from ...stability.measured import SATURATION_WHERE_K_MAX_BINDS

            kvk = SATURATION_WHERE_K_MAX_BINDS["kv_rules"]
            return (f"{BASIS_WORDS[b]}, as `fluidq check --load` reads it: {K_MAX_BINDS}, and this basis is "
                    f"{kvk.within_words()}; max_throughput would give {mt} req/s, {bound_words(cap, roofline=False)}")
        if case == "kv_cache_bound":
            return (f"{BASIS_WORDS[b]}, as `fluidq check --load` reads it: {KV_CACHE_BINDS_PART}; max_throughput "
                    f"would give {mt} req/s, {bound_words(cap, roofline=False)}")
        return (f"{BASIS_WORDS[b]}, as `fluidq check --load` reads it; b/t(b) at the batch the cache allows from "
                f"mean footprints would give {mt} req/s, above where seeded simulations saturate")
    if b == "flow_balance":
        return f"{BASIS_WORDS[b]}, as `fluidq check --load` reads it"
    return (BASIS_WORDS["max_throughput"] + (", the KV cache not binding" if engine.kv_capacity_tokens else "")
            + ", as `fluidq check --load` reads it")


def run(args):
    import math

    from ...errors import ParameterError
    from ...latency import (
        METRICS,
        compare_orderings,
        reasoning_workload,
        standard_policies,
    )

    from ..common import comma_list

    keys = comma_list("--orderings", args.orderings, "orderings")
    from ...errors import UnknownNameError
    from ...latency import POLICY_KEYS

    if not keys:
        raise ParameterError("--orderings", args.orderings, "comma-separated orderings, e.g. fcfs,pars")
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ParameterError("--orderings", args.orderings, "distinct orderings", f"{', '.join(twice)} given twice")
    for k in keys:
        if k not in POLICY_KEYS:
            raise UnknownNameError("policy key (--orderings)", k, POLICY_KEYS)
    if args.burst is not None:
        from ..._validate import integer
        from ...sim.core import MAX_ARRIVALS

        integer("--burst", args.burst, minimum=1, maximum=MAX_ARRIVALS)
        reject_ignored(f"--loads {args.loads}", args.loads is not None, "with --burst (all requests arrive at t=0)")
        reject_ignored(f"--horizon {args.horizon}", args.horizon is not None,
                       "with --burst (every run continues until all requests have finished)")
    for flag, v in (("--slo-per-token", args.slo_per_token), ("--slo-ttlt", args.slo_ttlt)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ParameterError(flag, v, "a finite number of seconds > 0")
    if args.horizon is None:
        args.horizon = 300.0
    loads = _floats("--loads", "0.5,0.7,0.9" if args.loads is None else args.loads)  # ('' is refused there)
    if not loads or not all(math.isfinite(x) and 0 < x for x in loads):
        raise CliError(f"--loads {args.loads}: expected comma-separated fractions of capacity, each finite and > 0")
    if len(set(loads)) != len(loads):
        raise CliError(f"--loads {args.loads}: expected distinct loads (one is given twice)")
    if args.tau is not None and not (math.isfinite(args.tau) and 0 < args.tau <= 1):
        raise ParameterError("--tau", args.tau, "a Kendall tau in (0, 1] (1 = the oracle's ranking)")
    if args.gamma is not None and not (math.isfinite(args.gamma) and args.gamma > 0):
        raise ParameterError("--gamma", args.gamma, "a finite rate > 0 per second")
    reject_ignored(f"--memguard-k {args.memguard_k}",
                   args.memguard_k is not None and not {"uniboost", "uniboost-ada"} & set(keys),
                   "without uniboost/uniboost-ada in --orderings (MEMGUARD is part of them)")
    reject_ignored(f"--ada-every {args.ada_every}", args.ada_every is not None and "uniboost-ada" not in keys,
                   "without uniboost-ada in --orderings (the cadence is gamma-Ada's)")
    if args.seed < 0:
        raise ParameterError("--seed", args.seed, "a non-negative integer")
    if not (math.isfinite(args.horizon) and args.horizon > 0):
        raise ParameterError("--horizon", args.horizon, "a finite number of seconds > 0")
    if args.replications < 1:
        raise ParameterError("--replications", args.replications, "an integer >= 1")
    if args.kv_capacity is not None and args.kv_capacity < 1:
        raise ParameterError("--kv-capacity", args.kv_capacity, "an integer number of tokens >= 1")
    if args.kv_capacity is not None:
        from ..._validate import KV_WHY, MAX_KV_TOKENS, integer

        integer("--kv-capacity", args.kv_capacity, maximum=MAX_KV_TOKENS, why=KV_WHY)
    swap_flag, swap_typed, args.swap_ms = swap_cost(args, "ms")  # this command's unit: ms
    if args.metric is not None and args.metric not in METRICS:
        raise CliError(f"--metric={args.metric!r}: expected one of {', '.join(METRICS)}")
    reject_ignored(f"--rate {args.rate}", args.rate is not None,
                   "by `fluidq latency`: the arrival rates are the --loads fractions of capacity")
    reject_ignored(f"--tau {args.tau}", args.tau is not None and "pars" not in keys,
                   "without the pars ordering in --orderings (it is the accuracy of PARS's predictor)")
    reject_ignored(f"--gamma {args.gamma}",
                   args.gamma is not None and not {"gamma-boost", "uniboost", "uniboost-nomemguard"} & set(keys),
                   "without gamma-boost/uniboost/uniboost-nomemguard in --orderings (it is their boost rate)")
    if args.preemption == "swap" and swap_flag is None:
        raise CliError("--swap-ms-per-token is required with --preemption swap (the swap cost in ms per KV token; "
                       "or --swap-us-per-token in microseconds)")
    reject_ignored(f"{swap_flag} {swap_typed}", swap_flag is not None and args.preemption != "swap",
                   "without --preemption swap (recomputed requests are not swapped)")
    if args.family is not None:
        if args.reasoning or args.trace is not None or args.prompt is not None or args.output is not None:
            raise CliError("--family: give either it or --reasoning/--trace/--prompt/--output")
        reject_ignored("--geometric", args.geometric, "with --family (its lengths come from the shipped data)")
    if args.reasoning:
        if args.trace is not None or args.prompt is not None or args.output is not None:
            raise CliError("--reasoning: give either it or --trace/--prompt/--output")
        reject_ignored("--geometric", args.geometric, "with --reasoning (its lengths are heavy-tailed, built in)")
    if args.plot is not None:
        args.plot = output_file("--plot", args.plot, inputs=[("--trace", args.trace)])
    engine, note = engine_for_command(args)  # --gpu: the roofline engine, its KV cache planned (or --kv-capacity)
    if args.kv_capacity is not None:
        engine = engine.with_(kv_capacity_tokens=args.kv_capacity)
    reject_ignored(f"--preemption {args.preemption}", args.preemption is not None and not engine.kv_capacity_tokens,
                   "without a KV-cache limit (--kv-capacity): nothing is ever preempted")
    if args.family is not None:
        from ...latency.families import workload_family

        workload = workload_family(args.family)
    elif args.reasoning:
        workload = reasoning_workload()
    else:
        workload = workload_from_args(args, default_rate=1.0)
    tau = 0.6 if args.tau is None else args.tau
    from ...capacity import min_footprint_tokens

    small = min_footprint_tokens(workload) if engine.kv_capacity_tokens else None
    if small is not None and small > engine.kv_capacity_tokens:
        raise ParameterError("--kv-capacity", engine.kv_capacity_tokens,
                             f"at least {small} tokens: no request fits (the smallest holds {small} KV tokens, "
                             "prompt + output, at its end)")
    from ...latency import _check_comparison_size, _load_rates

    from ..._validate import load_rate

    if args.burst is None:
        cap_req = _load_rates(engine, workload, loads, args.preemption or "recompute")[1]
        rates = tuple(load_rate("--loads", ld, cap_req) for ld in loads)  # each a representable rate
        _check_comparison_size(engine, workload.with_rate(max(rates)), args.horizon, max(loads), args.replications,
                               len(keys) * len(loads), names={"horizon_s": "--horizon",
                                                              "n_replications": "--replications"})
    extra = {"k_tokens": args.memguard_k} if args.memguard_k is not None else {}
    if args.ada_every is not None:
        extra["update_every"] = args.ada_every
    from ..._validate import MAX_REQUEST_TOKENS
    from ..._validate import integer as _int
    from ...policies.latency import MEMGUARD_K_WHY

    if "k_tokens" in extra:   # named as the flag, not as the API's k_tokens
        _int("--memguard-k", extra["k_tokens"], minimum=1, maximum=MAX_REQUEST_TOKENS, why=MEMGUARD_K_WHY)
    if "update_every" in extra:
        _int("--ada-every", extra["update_every"], minimum=1)
    pols = standard_policies(engine, workload, keys=keys, tau=tau, gamma_per_s=args.gamma, seed=args.seed, **extra)
    swap = None if args.swap_ms is None else args.swap_ms / 1e3
    slo = args.slo_per_token
    if slo is None:
        import numpy as np

        bt = engine.batch_time.base if hasattr(engine.batch_time, "base") else engine.batch_time
        slo = SLO_FACTOR * float(np.asarray(bt(np.array([float(engine.b_max)])), dtype=float)[0])
    if args.burst is not None:
        from ...latency import burst_comparison

        res = burst_comparison(engine, workload, pols, n_requests=args.burst, n_replications=args.replications,
                               rng=args.seed, preemption=args.preemption or "recompute", swap_s_per_token=swap,
                               slo_per_token_s=slo, slo_ttlt_s=args.slo_ttlt)
    else:
        res = compare_orderings(engine, workload, pols, loads=loads, horizon_s=args.horizon,
                                n_replications=args.replications, rng=args.seed,
                                preemption=args.preemption or "recompute", swap_s_per_token=swap,
                                slo_per_token_s=slo, slo_ttlt_s=args.slo_ttlt)
    # what the policies were built with (the JSON's inputs): PARS's tau, MEMGUARD's first level and
    # gamma-Ada's cadence where those orderings ran (the last two are fluidq's choices, 32 and 50, by default)
    res.inputs["tau"] = tau if "pars" in keys else None
    for k in ("uniboost", "uniboost-ada"):
        if k in pols:
            res.inputs["memguard_k_tokens"] = pols[k].order.k_tokens
    if "uniboost-ada" in pols:
        res.inputs["ada_update_every"] = pols["uniboost-ada"].order.base.update_every
    metric = args.metric or "latency_per_token_mean_s"
    from ...results import MEANINGFUL_DIGITS, fmt_value

    plotted = None
    if args.plot:
        plotted = write_late(args, "--plot", args.plot, lambda: res.plot(metric=metric, path=args.plot))
    cols = ("latency_per_token_mean_s", "ttlt_p90_s", "ttlt_p99_s", "ttft_mean_s", "preemptions_per_request",
            "finished_fraction", "slo_attainment_per_token", "slo_per_token_90_s", "slo_per_token_99_s")
    if args.slo_ttlt is not None:
        cols = cols + ("slo_attainment_ttlt",)
    if args.burst is not None:
        cols = cols + ("makespan_s",)
    if args.metric is not None and args.metric not in cols:
        cols = cols + (args.metric,)
    reps = f"{res.n_replications} replication{'s' if res.n_replications != 1 else ''}"
    lines = [f"engine    {engine.name}: {engine.batch_time.describe()}, b_max={engine.b_max}"
             + (f", KV cache {engine.kv_capacity_tokens:,} tokens" if engine.kv_capacity_tokens else ", no KV-cache limit"),
             f"workload  {workload.name if workload.name not in ('', 'workload') else 'lengths ' + lengths_text(workload)}; "
             f"capacity {fmt_value(res.inputs['capacity_requests_per_s'], digits=MEANINGFUL_DIGITS)} req/s ("
             + _basis_words(engine, workload, res)
             + ("" if args.burst is not None else "; loads are fractions of it") + ")",
             (f"runs      {reps} of a burst of {args.burst:,} requests at t=0, each drained "
              f"({res.seconds:.1f} s wall)" if args.burst is not None else
              f"runs      {reps} x {args.horizon:g} s per policy and load ({res.seconds:.1f} s wall)"),
             f"SLO       per token {fmt_value(slo)} s" + ("" if args.slo_per_token is not None else
                                                        f" (default: {SLO_FACTOR:g} x t(b_max))")
             + (f", TTLT {fmt_value(args.slo_ttlt)} s" if args.slo_ttlt is not None else "")]
    if note:  # --gpu: the roofline engine says what it is and the error it carries
        lines.insert(1, f"estimate  {note}")
        lines[2:2] = max_model_len_line(args, width=0)  # vLLM with its default --max-model-len would not start
        res.inputs["max_model_len"] = getattr(args, "max_model_len_info", None)
    for i, ld in enumerate(res.loads):
        lines += ["", res.table(i, metrics=cols, horizon_name="--horizon")]
        if args.metric is not None:
            vals = {p: res.values[p][metric][i][0] for p in res.policies}
            from ...results import is_defined
            vals = {p: v for p, v in vals.items() if is_defined(v)}  # an undefined cell picks no winner
            if vals:
                higher = metric in ("finished_fraction", "throughput_tokens_per_s")  # more is better for these
                best = (max if higher else min)(vals, key=vals.get)
                text = f"{'highest' if higher else 'lowest'} {METRICS[metric][0]}: {best} ({vals[best]:.4g})"
                hw = {p: res.values[p][metric][i][1] for p in vals}
                tied = [p for p in vals if p != best and (not is_defined(hw[p]) or not is_defined(hw[best])
                                                          or abs(vals[p] - vals[best]) <= hw[p] + hw[best])]
                if tied:  # a winner inside the others' intervals is not one these runs separate
                    text += (f", but its 95 % interval overlaps that of {', '.join(tied)}: not separated by these "
                             f"runs (more --replications or a longer --horizon)")
                lines.append(text)
    cells = [cell.strip() for ln in "\n".join(lines).splitlines() if ln.startswith("|") for cell in ln.split("|")]
    if any(c == "–" for c in cells):
        lines += ["", "–: undefined at that load (no request finished in the runs, or, in an SLO column, none "
                      "arrived after the warm-up: lengthen --horizon)"]
    if any(" to " in c or c.startswith(">= ") for c in cells):
        lines += ["", "SLO columns with bounds: a request unfinished at the horizon misses an SLO its wait already "
                      "exceeds and is undecided otherwise; 'a to b' is the fraction meeting the SLO with the undecided "
                      "counted as misses, then as met (means over the runs), and for a tightest SLO the least its "
                      "waits allow, then the value with every unfinished request a miss ('>= a': fewer than that "
                      "share finished); the exact value needs every request decided: lengthen --horizon"]
    first = res.values[res.policies[0]]
    keys = [k for c in cols for k in (c, c + "_low", c + "_high", c[:-2] + "_low_s") if k in first]  # with bounds
    same = all(res.values[p][k][i][0] == first[k][i][0] or (res.values[p][k][i][0] != res.values[p][k][i][0]
                                                            and first[k][i][0] != first[k][i][0])  # NaN alike
               for p in res.policies for k in keys for i in range(len(res.loads)))
    if same and len(res.policies) > 1:
        from ...workload.lengths import Fixed

        why = ("every request has the same lengths, so there is nothing to order"
               if all(isinstance(x, Fixed) for x in (workload.prompt_tokens, workload.output_tokens))
               else "at these loads the queue rarely holds two requests to order")
        lines += ["", f"note: every ordering gives the same numbers: {why}; to see them differ, give lengths "
                      "that vary and a load where queues form (e.g. --trace azure-conv --kv-capacity 50000, or "
                      "--reasoning)"]
    if plotted:
        lines.append(f"\nplot written to {plotted}")
    emit(args, res, "\n".join(lines))
