"""``fluidq check``: a stability verdict for a scheduler at a load."""
from __future__ import annotations

import argparse

from ...policies import POLICY_NAMES
from ...stability import check_stability
from .. import emit
from ._profile_dir_args import add_profile_dir_args, profile_dir_engine, reject_profile_dir_flags
from ._roofline_args import add_roofline_args, engine_for_command, max_model_len_line
from ..common import (
    add_engine_args,
    add_kv_arg,
    add_workload_args,
    distinct_policies,
    fit_json,
    fit_lines,
    fmt_tokens,
    kv_from_args,
    shared_reasons,
    workload_from_args,
)

#: the report's choice (fluidq.report.reference): FasterTransformer and vanilla vLLM may split a prompt
#: longer than b_max into chunks, else such a prompt is never scheduled and they are unstable at every rate
CHUNK_LONG_PROMPTS_DEFAULT = True


def register(sub):
    p = sub.add_parser("check", help="is a scheduler stable at this load?",
                       description="Stability verdict (stable / unstable / critical / unknown) with the load "
                       "and the reason, for each scheduler asked.")
    add_engine_args(p, multi_engine=True, fit=True)
    add_workload_args(p, rate_required=False)
    add_kv_arg(p, "KV-cache capacity in tokens per engine: where it binds, fewer requests decode together, "
               "which lowers the capacity the verdicts compare the load with (default: unlimited; with --gpu or "
               "--profile-dir, vLLM's memory planner estimate); taken as the tokens held at the workload's "
               "context: for a sliding-window model more than vLLM logs")
    p.add_argument("--chunk-long-prompts", action=argparse.BooleanOptionalAction, default=CHUNK_LONG_PROMPTS_DEFAULT,
                   help="let the schedulers that do not chunk (fastertransformer, vllm) split a prompt longer than "
                        "b_max into chunks; without it such a prompt is never scheduled (default: on, as in "
                        "`fluidq report`)")
    p.add_argument("--load", type=float, default=None,
                   help="offered load as a fraction of the capacity lambda* (instead of --rate): max_throughput's; "
                        "on an engine with a KV cache where the cache or max_num_seqs binds, the capacity under the "
                        "cache's rules (whole-prompt admission, recompute preemptions while the cache binds: "
                        "fluidq.dtmc.kv_basis.kv_capacity, where seeded simulations saturate); with "
                        "--profile-dir, vLLM's flow balance for the folder")
    p.add_argument("--policy", action="append", default=None,
                   help=f"scheduler (repeatable; default: all of {', '.join(POLICY_NAMES)})")
    p.add_argument("--tolerance", type=float, default=0.02,
                   help="relative band around load 1 called critical, in [0, 1) (default 0.02)")
    p.add_argument("--method", choices=("auto", "analytic", "simulation"), default="auto",
                   help="auto (default): the analytic verdict, and seeded replications (fluidq.replicate, the "
                        "shared growth test) only where it is unknown, labelled 'decided by simulation' with the "
                        "interval and horizon, within --sim-budget seconds in all; analytic: the theory only; "
                        "simulation: replications decide every verdict")
    p.add_argument("--sim-budget", type=float, default=60.0, metavar="SECONDS",
                   help="with --method auto, the wall-clock seconds of simulation this call may start: no new "
                        "simulation starts once it is spent (one already running finishes, so the total can "
                        "exceed it); a verdict left then stays unknown, saying so (default 60)")
    p.add_argument("--replications", type=int, default=4,
                   help="seeded replications per simulated verdict (>= 2; default 4; seeds 0, 1, ... from root 0)")
    add_roofline_args(p)
    add_profile_dir_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _load(x: float) -> str:
    """A load for the human line: :func:`fluidq.results.fmt_load` (4 significant digits, as the reasons and
    the report print it); "–" when undefined."""
    import math

    from ...results import fmt_load

    return fmt_load(x) if math.isfinite(x) else "–"


def run(args):
    import math

    from ...capacity import max_throughput, offered_tokens_per_s
    from ...dtmc.kv_basis import kv_capacity
    from ...dtmc.flow_basis import flow_balance_capacity
    from ...dtmc.load_basis import load_basis
    from ...errors import ParameterError
    from ._roofline_args import named_by_flag
    from ...policies import resolve_policy

    for name in args.policy or []:
        resolve_policy(name, "--policy")  # an unknown name is named under its flag, before any work
    distinct_policies("--policy", args.policy)
    if not (math.isfinite(args.sim_budget) and args.sim_budget >= 0):
        raise ParameterError("--sim-budget", args.sim_budget, "a finite number of seconds >= 0")
    if args.replications < 2:
        raise ParameterError("--replications", args.replications, "an integer >= 2")
    if args.replications > 1000:  # (the simulator is imported only where its limit could bind: check starts fast)
        from ...sim.core import MAX_RUNS

        if args.replications > MAX_RUNS:  # (named here: replicate() would say n_replications)
            raise ParameterError("--replications", args.replications, f"an integer between 2 and {MAX_RUNS:,}",
                                 "each replication is a full simulation")
    if args.method == "simulation" and args.engines != 1:
        raise ParameterError("--method", "simulation", "auto or analytic with --engines > 1",
                             "simulate engines behind a router with `fluidq network --simulate`")
    if not (math.isfinite(args.tolerance) and 0 <= args.tolerance < 1):
        raise ParameterError("--tolerance", args.tolerance, "a relative tolerance in [0, 1)")
    if args.load is not None:
        if args.rate is not None:
            raise ParameterError("--load", args.load, "either --load or --rate, not both")
        if not (math.isfinite(args.load) and args.load > 0):
            raise ParameterError("--load", args.load, "a finite fraction of capacity > 0")
    if args.profile_dir is not None:  # a vLLM engine from its operator-profile folder (issue 16)
        engine, note = profile_dir_engine(args)
    else:
        reject_profile_dir_flags(args)
        engine, note = engine_for_command(args)
    if args.gpu is None:
        engine = kv_from_args(args, engine)
    dep = basis = None
    if args.load is not None:
        from ..._validate import load_rate

        shape = workload_from_args(args, default_rate=1.0)
        from ..common import check_kv_fits

        check_kv_fits(engine, shape, args)  # before its capacity: a cache no request fits is said as such
        # the one lambda* every face reads (fluidq.dtmc.load_basis): vLLM's flow balance for a --profile-dir
        # engine (fluidq capacity --profile-dir), the capacity under the KV cache's rules where the cache or
        # max_num_seqs binds (seeded simulations put the threshold there, the mean-footprint batch's b/t(b) 5-46 %
        # above it where the cache binds, the k_max region up to 31 % where max_num_seqs does: RESULTS.md), else
        # max_throughput
        with named_by_flag(args=args):  # (a cache no request fits, in whole blocks: its flag or the estimate)
            basis = load_basis(engine, shape, n_engines=args.engines)
        if basis.basis == "flow_balance":
            dep = basis.capacity
        lam_max = basis.requests_per_s
        if lam_max <= 0:
            raise ParameterError("--load", args.load, "--rate instead (the capacity is 0: no request can be "
                                 "served, so no load is a fraction of it)")
        workload = shape.with_rate(load_rate("--load", args.load, lam_max))  # (its lengths: checked above)
    else:
        from ..common import check_kv_fits

        workload = workload_from_args(args)
        check_kv_fits(engine, workload, args)
    pols, chunked = [], []
    for name in args.policy or POLICY_NAMES:
        pol = resolve_policy(name, "--policy")
        if not pol.chunked and hasattr(pol, "with_"):
            pol = pol.with_(chunk_long_prompts=args.chunk_long_prompts)
            chunked.append(pol.name)
        pols.append(pol)
    import time

    t0 = time.monotonic()
    if args.method == "auto":  # the library's method="auto" (fluidq.decide_stability), one budget for all
        deadline = t0 + args.sim_budget
        results = [check_stability(engine, workload, p, tolerance=args.tolerance, n_engines=args.engines,
                                   method="auto", n_replications=args.replications, rng=0, deadline_s=deadline)
                   for p in pols]
    elif args.method == "simulation":
        results = [check_stability(engine, workload, p, tolerance=args.tolerance, method="simulation",
                                   n_replications=args.replications, rng=0) for p in pols]
    else:
        results = [check_stability(engine, workload, p, tolerance=args.tolerance, n_engines=args.engines)
                   for p in pols]
    took = time.monotonic() - t0
    width = max(len(r.policy) for r in results)
    # (with --load the basis computed it where it read it: same engine, lengths and engines, the rate not read)
    cap = (basis.max_throughput(engine, workload, n_engines=args.engines) if basis is not None
           else max_throughput(engine, workload, n_engines=args.engines))
    off = offered_tokens_per_s(engine, workload)
    full = cap.work_conserving_tokens_per_s or cap.tokens_per_s
    if cap.tokens_per_s <= 0:
        load_txt = "load – (undefined: no request can be served)"
    elif abs(full - cap.tokens_per_s) <= 1e-9 * cap.tokens_per_s:
        load_txt = f"load {_load(off / cap.tokens_per_s)}"
    else:  # b/t(b) peaks below b_max: the two loads differ (each verdict says which it uses)
        from ...results import MEANINGFUL_DIGITS, fmt_value

        load_txt = (f"load {_load(off / cap.tokens_per_s)} of sup b/t(b) = "
                    f"{fmt_value(cap.tokens_per_s, digits=MEANINGFUL_DIGITS)} tokens/s, "
                    f"{_load(off / full) if full > 0 else '–'} of {fmt_value(full, digits=MEANINGFUL_DIGITS)} "
                    f"(work-conserving schedulers: {cap.work_conserving_basis})")
    if basis is not None:  # --load: load_basis has read it already (kv_rules exactly where it is not None)
        kvr = basis.capacity if basis.basis == "kv_rules" else None
    else:
        kvr = kv_capacity(engine, workload, n_engines=args.engines) if cap.tokens_per_s > 0 else None
    if kvr is not None and args.profile_dir is None:  # the cache or max_num_seqs binds: the load on the KV rules
        from ...capacity import tokens_per_request
        from ...results import MEANINGFUL_DIGITS, fmt_value
        from ...dtmc.load_basis import K_MAX_BINDS, KV_CACHE_BINDS_PART, bound_words as _bound_words

        kv_tok = kvr.requests_per_s * tokens_per_request(engine, workload)
        roofline = args.gpu is not None
        if kvr.binding == "k_max":  # max_num_seqs binds (h-words): not the cache; the band measured there
            from ...stability.measured import SATURATION_WHERE_K_MAX_BINDS

            band = SATURATION_WHERE_K_MAX_BINDS["kv_rules"]
            rules = (f"{K_MAX_BINDS}; the basis of --load and of the verdicts, {band.within_words()}, "
                     f"{band.source}")
            other = f"max_throughput, {_bound_words(cap, roofline=roofline)}"
        elif cap.kv_batch_tokens is not None:  # the cache binds at the mean footprints too (as before)
            rules = "whole-prompt admission, recompute preemptions; the basis of --load and of the verdicts"
            other = "max_throughput's mean-footprint estimate, b/t(b) at the batch the KV cache allows"
        else:  # the cache binds for part of the residents' life; max_throughput is not its mean-footprint batch
            rules = (f"whole-prompt admission, recompute preemptions: {KV_CACHE_BINDS_PART}; the basis of --load "
                     "and of the verdicts")
            other = f"max_throughput, {_bound_words(cap, roofline=roofline)}"
        load_txt = (f"load {_load(workload.arrival_rate_per_s / kvr.requests_per_s)} of the capacity under the KV "
                    f"cache's rules, {kvr.requests_per_s:.4g} req/s = {fmt_value(kv_tok, digits=MEANINGFUL_DIGITS)} "
                    f"tokens/s of batch work ({rules}); {other}, would give {load_txt}")
    if args.profile_dir is not None:  # the load against vLLM's flow balance, as --load and the verdicts read it
        from ...results import MEANINGFUL_DIGITS, fmt_value

        with named_by_flag(args=args):
            dep = dep if dep is not None else flow_balance_capacity(engine, workload, n_engines=args.engines)
        # (read in requests/s, as --load and the verdicts read it: the flow balance's tokens/s count only the
        # requests that fit the KV cache, when some do not)
        load_txt = (f"load {_load(workload.arrival_rate_per_s / dep.requests_per_s)} of vLLM's flow balance for this folder, "
                    f"{fmt_value(dep.tokens_per_s, digits=MEANINGFUL_DIGITS)} tokens/s (as `fluidq capacity "
                    f"--profile-dir`), the basis of the verdicts; the profile's t(b), which counts no decode context, "
                    f"would give {load_txt}")
    lines = [f"arrival rate {workload.arrival_rate_per_s:.4g} req/s, m_p={fmt_tokens(workload.mean_prompt_tokens)}, "
             f"m_d={fmt_tokens(workload.mean_output_tokens)}, {load_txt}"]
    lines[:0] = fit_lines(args, width=0) + ([f"engine: {note}"] if note else []) + max_model_len_line(args, width=0)
    # a long explanation several verdicts share is printed once, as a footnote
    reasons, notes = shared_reasons([r.reason for r in results])
    lines += [f"  {r.policy:<{width}}  {r.status.value:<9} {why}" for r, why in zip(results, reasons)]
    lines += notes
    simulated = [r.policy for r in results if r.inputs.get("decided_by") == "simulation"]
    tried = [r.policy for r in results if r.inputs.get("decided_by") == "none" and "wall_s" in r.inputs]
    if args.method == "analytic":
        lines.append("verdicts: analytic only (--method analytic)")
    elif args.method == "simulation":
        lines.append(f"verdicts: every one decided by simulation (--method simulation), {took:.1f} s")
    else:
        ran = sum(float(r.inputs.get("wall_s", 0.0)) for r in results)
        analytic = [r.policy for r in results if r.inputs.get("decided_by") == "analytic"]
        parts = [f"analytic: {', '.join(analytic) if analytic else 'none'}",
                 f"decided by simulation where the theory said unknown: {', '.join(simulated) if simulated else 'none'}"]
        if tried:
            parts.append(f"simulated but inconclusive: {', '.join(tried)}")
        lines.append(f"verdicts: {'; '.join(parts)} ({ran:.1f} s of simulation, budget {args.sim_budget:g} s)")
    if chunked:
        lines.append(f"long prompts: {'--chunk-long-prompts' if args.chunk_long_prompts else '--no-chunk-long-prompts'}"
                     f" ({' and '.join([', '.join(chunked[:-1]), chunked[-1]] if len(chunked) > 2 else chunked)}"
                     f" {'split' if args.chunk_long_prompts else 'never schedule'}"
                     f"{'' if len(chunked) > 1 else 's'} a prompt "
                     f"longer than b_max={engine.b_max}{' into chunks' if args.chunk_long_prompts else ''}; the "
                     "default, as in `fluidq report`, is to split)")
    if engine.kv_capacity_tokens is not None:
        lines.append(f"KV cache {engine.kv_capacity_tokens:,} tokens per engine "
                     + ("(--kv-capacity)" if args.kv_capacity is not None else "(vLLM's memory planner, an estimate)"))
    # the inputs with every verdict (StabilityResult.to_dict has the numbers, not what they came from)
    inputs = {"engine": engine.to_dict(), "workload": workload.to_dict(),
              "arrival_rate_per_s": workload.arrival_rate_per_s, "n_engines": args.engines,
              "load_given": args.load, "tolerance": args.tolerance, "chunk_long_prompts": args.chunk_long_prompts,
              "method": args.method, "sim_budget_s": args.sim_budget, "replications": args.replications,
              "wall_s": took}
    if fit_json(args) is not None:
        inputs["fit"] = fit_json(args)
    if note:
        inputs["profile_dir" if args.profile_dir is not None else "roofline"] = note
    if args.gpu is not None:
        inputs["max_model_len"] = getattr(args, "max_model_len_info", None)
    if dep is not None:  # --load's basis with --profile-dir
        inputs["flow_balance_tokens_per_s"] = dep.tokens_per_s
    if kvr is not None and args.profile_dir is None:  # --load's basis where the KV cache or max_num_seqs binds
        inputs["kv_rules_requests_per_s"] = kvr.requests_per_s
        inputs["load_basis_binding"] = kvr.binding  # "kv_cache" or "k_max": which the load line says binds
    if basis is not None:  # which lambda* --load was a fraction of (fluidq.dtmc.load_basis, as every face says)
        inputs.update({k: v for k, v in basis.to_dict().items() if k != "load_basis_reason"})
        from ...dtmc.load_basis import load_basis_binding

        inputs["load_basis_binding"] = load_basis_binding(basis)  # (the limit its reason names)
    out = [{**r.to_dict(), "inputs": inputs} for r in results]
    emit(args, out if len(out) > 1 else out[0], "\n".join(lines))
