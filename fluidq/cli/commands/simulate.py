"""``fluidq simulate``: iteration-level simulation of one engine under one or more schedulers."""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace

from ...errors import ParameterError
from ...results import fmt_load
from ._profile_dir_args import add_profile_dir_args, profile_dir_engine, reject_profile_dir_flags
from ..progress import clear, draw
from ._roofline_args import add_roofline_args, engine_for_command, max_model_len_line
from .. import CliError, emit
from ..common import (
    add_engine_args,
    add_swap_args,
    add_workload_args,
    distinct_policies,
    engine_text,
    fit_json,
    fit_lines,
    fmt_tokens,
    output_file,
    reject_ignored,
    swap_cost,
    workload_from_args,
    write_late,
)


def register(sub):
    p = sub.add_parser("simulate", help="simulate the engine iteration by iteration",
                       description="Simulate one engine under each --policy on the same arrivals: queue "
                       "trajectories, latency metrics (TTFT, TTLT, TPOT), throughput and, with --replications, "
                       "a backlog-growth verdict against the fluid prediction (Theorem 2 of arXiv:2504.07347).")
    add_engine_args(p, fit=True)
    add_workload_args(p)
    g = p.add_argument_group("simulation")
    g.add_argument("--load", type=float, default=None,
                   help="arrival rate as a fraction of the capacity lambda* (Theorem 2's b/t(b), or lower where --k-max "
                        "binds: what `fluidq capacity` gives for the same flags, with --gpu its 'region' line; where the "
                        "KV cache binds, the capacity under its rules, whole-prompt admission and recompute "
                        "preemptions, fluidq.dtmc.kv_basis.kv_capacity, as `fluidq check --load`; instead of --rate); "
                        "default: 0.9 without --trace, the trace's own rate with --trace")
    g.add_argument("--arrival", choices=["replay", "poisson", "periodic", "gamma"], default=None,
                   help="arrival process (gamma: bursty, see --cv); default poisson, or with --trace 'replay' "
                        "(the trace's own arrival times, time-scaled to the rate: the replayed window's effective "
                        "load is shown, as a trace's start may be sparser than its mean); with --trace, "
                        "poisson/periodic/gamma draw that process at the rate with the trace's length distributions")
    g.add_argument("--cv", type=float, default=None,
                   help="coefficient of variation of the inter-arrival times, with --arrival gamma (default 2)")
    g.add_argument("--policy", action="append", default=None,
                   help="scheduler (repeatable): fastertransformer, vllm, orca, sarathi, vllm-chunked "
                        "(default: sarathi and fastertransformer; vllm-chunked with --profile-dir)")
    g.add_argument("--chunk-long-prompts", action=argparse.BooleanOptionalAction, default=True,
                   help="let non-chunking schedulers split prompts longer than b_max (default on, as in "
                        "`fluidq check` and the report; --no-chunk-long-prompts: the literal schedulers, which "
                        "never schedule such a prompt)")
    g.add_argument("--horizon", type=float, default=None,
                   help="simulated seconds: arrivals up to it, and the run stops there (default 90 unless --requests)")
    g.add_argument("--requests", "--num-prompts", dest="requests", type=int, default=None,
                   help="number of arrivals (vLLM benchmark's --num-prompts); without --horizon the run lasts until they finish, with --horizon "
                        "it stops at the horizon (requests unfinished by then count in 'in sys'); not with --replications")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument("--replications", type=int, default=1,
                   help="independent runs per policy; >= 2 adds the slope CI and a growing/bounded verdict (each run "
                        "lasts --horizon)")
    g.add_argument("--kv-capacity", type=int, default=None, help="KV-cache capacity in tokens")
    g.add_argument("--preemption", choices=["recompute", "swap"], default=None,
                   help="what happens to a request evicted when the KV cache (--kv-capacity) is full: its KV "
                        "is recomputed (default) or swapped out and back")
    add_swap_args(g)
    g.add_argument("--warmup", type=float, default=0.0, help="seconds left out of the latency metrics")
    p.add_argument("--plot", default=None, metavar="PATH", help="write a queue-trajectory plot to PATH (format from "
                   "the extension: png, pdf, svg...; none: .png)")
    add_roofline_args(p)
    add_profile_dir_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress indicator on stderr")
    p.set_defaults(func=run)


def _shows_progress(args) -> bool:
    """Whether a progress line goes to stderr: a terminal, and neither --no-progress nor --json."""
    return not (args.no_progress or args.json) and sys.stderr.isatty()


def _progress(args, label, horizon):
    if not _shows_progress(args):
        return None
    last = [0.0]

    def cb(t, n):
        now = time.monotonic()
        if now - last[0] < 0.2:
            return
        last[0] = now
        frac = f"{100 * t / horizon:5.1f}%" if horizon else f"t={t:,.0f}s"
        draw(f"{label:<20} {frac}  {n:,} arrivals")

    return cb


def _replication_progress(args, label):
    """``progress(done, total)`` for :func:`~fluidq.replicate`: the replications done, on stderr (as
    :func:`_progress` for a single run)."""
    if not _shows_progress(args):
        return None

    def cb(i, n):
        draw(f"{label:<20} {i}/{n} replications done")

    return cb


def _check_flags(args):
    """Bad values of this command's own flags, reported under the flag the user typed."""
    from ...sim.core import MAX_ARRIVALS as MAX_RUN_ARRIVALS  # one run's limit: the one simulate says too

    def finite(v):
        return math.isfinite(v)

    for flag, v, ok, want in (
            ("--horizon", args.horizon, args.horizon is None or (finite(args.horizon) and args.horizon > 0),
             "a finite number of seconds > 0"),
            ("--requests", args.requests, args.requests is None or 1 <= args.requests <= MAX_RUN_ARRIVALS,
             f"a run of 1 to {MAX_RUN_ARRIVALS:,} arrivals (the most one run takes)"),
            ("--load", args.load, args.load is None or (finite(args.load) and args.load > 0),
             "a finite fraction > 0 of the capacity"),
            ("--rate", args.rate, args.rate is None or (finite(args.rate) and args.rate > 0),
             "a finite rate > 0 (requests per second)"),
            ("--cv", args.cv, args.cv is None or (finite(args.cv) and args.cv > 0),
             "a finite coefficient of variation > 0"),
            ("--kv-capacity", args.kv_capacity, args.kv_capacity is None or args.kv_capacity >= 1,
             "an integer number of tokens >= 1")):
        if not ok:
            raise ParameterError(flag, v, want)
    if args.kv_capacity is not None:
        from ..._validate import KV_WHY, MAX_KV_TOKENS, integer

        integer("--kv-capacity", args.kv_capacity, maximum=MAX_KV_TOKENS, why=KV_WHY)
    swap_flag, swap_typed, args.swap_us = swap_cost(args, "us")  # this command's unit: microseconds
    if args.preemption == "swap" and swap_flag is None:
        raise CliError("--preemption swap needs --swap-ms-per-token MS (the swap cost in milliseconds per KV "
                       "token; or its alias --swap-us-per-token US, in microseconds)")
    reject_ignored(f"{swap_flag} {swap_typed}", swap_flag is not None and args.preemption != "swap",
                   "without --preemption swap (recomputed requests are not swapped)")
    arrival = args.arrival or ("replay" if args.trace is not None else "poisson")
    reject_ignored(f"--cv {args.cv}", args.cv is not None and arrival != "gamma",
                   f"with --arrival {arrival} (it is the variability of --arrival gamma's inter-arrival times)")
    if args.replications >= 2 and args.horizon is None and args.requests is not None:
        raise CliError("--replications needs --horizon, not --requests (the backlog growth is measured over a fixed time)")
    reject_ignored(f"--requests {args.requests}", args.replications >= 2 and args.requests is not None,
                   f"with --replications {args.replications} (each replication draws arrivals up to --horizon, "
                   "the backlog growth being measured over that time): give --horizon alone")
    if args.seed < 0:
        raise ParameterError("--seed", args.seed, "a seed >= 0")
    if args.replications < 1:
        raise ParameterError("--replications", args.replications, "an integer >= 1 (>= 2 adds the verdict)")
    from ...sim.core import MAX_RUNS, check_gamma_cv, check_size  # the simulator: imported when it runs

    if args.replications > MAX_RUNS:
        raise ParameterError("--replications", args.replications, f"an integer <= {MAX_RUNS:,}",
                             "every run is kept in memory for the verdict")
    if args.cv is not None:
        check_gamma_cv(args.cv, "--cv")
    if not (finite(args.warmup) and args.warmup >= 0):
        raise ParameterError("--warmup", args.warmup, "a finite number of seconds >= 0")
    if args.horizon is not None and args.warmup >= args.horizon:
        raise ParameterError("--warmup", args.warmup, f"seconds < --horizon={args.horizon:g}",
                             "a warm-up this long leaves every request out of the latency metrics")
    if args.plot is not None:
        args.plot = output_file("--plot", args.plot, inputs=[("--trace", args.trace)])


def _replay_line(rw) -> str:
    if not rw["window_s"] > 0:  # NaN or 0: no arrival replayed, no window to divide by
        return (f"replayed  {rw['arrivals']} arrivals: no replayed window, so no effective rate or load (–) "
                "(a replay starts at the trace's beginning)")
    return (f"replayed  {rw['arrivals']} arrivals in {rw['window_s']:g} s = {rw['requests_per_s']:.3g} req/s, "
            f"{rw['tokens_per_s']:,.0f} tokens/s: effective load {fmt_load(rw['effective_load'])} "
            "(a replay starts at the trace's beginning)")


def run(args):
    import numpy as np

    from ...capacity import offered_tokens_per_s
    from ...policies import resolve_policy
    from ...sim import replicate, simulate
    from ...sim.core import check_size
    from ...workload import Gamma, Periodic, Poisson

    _check_flags(args)
    # --gpu: a deployment without profiles (the context-aware roofline, vLLM's planned cache)
    if args.profile_dir is not None:  # a vLLM engine from its operator-profile folder (issue 16)
        engine, _ = profile_dir_engine(args)
    else:
        reject_profile_dir_flags(args)
        engine, _ = engine_for_command(args)
    if args.kv_capacity is not None:
        engine = engine.with_(kv_capacity_tokens=args.kv_capacity)
    reject_ignored(f"--preemption {args.preemption}", args.preemption is not None and not engine.kv_capacity_tokens,
                   "without a KV-cache limit (--kv-capacity): nothing is ever preempted")
    if args.rate is not None and args.load is not None:
        raise CliError("give --rate or --load, not both")
    # a trace replays at its own rate unless --rate/--load say otherwise; 1.0 is a placeholder that the
    # default load of 0.9 replaces below
    base = workload_from_args(args, default_rate=None if args.trace is not None else 1.0)
    from ..common import check_kv_fits

    check_kv_fits(engine, base, args)
    # the one lambda* every face reads (fluidq.dtmc.load_basis), computed once: the lengths set it, not the rate
    lb = _basis(args, engine, base)
    if args.rate is None and (args.trace is None or args.load is not None):
        from ..._validate import load_rate

        load = 0.9 if args.load is None else args.load
        base = base.with_rate(load_rate("--load", load, lb.requests_per_s))
    arrival = args.arrival or ("replay" if args.trace is not None else "poisson")
    if arrival == "replay" and args.trace is None:
        raise ParameterError("--arrival", "replay", "poisson, periodic or gamma without --trace",
                             "'replay' replays a --trace")
    replay = arrival == "replay"
    if not replay and (arrival != "poisson" or args.trace is not None):
        rate = base.arrival_rate_per_s
        arr = {"poisson": Poisson, "periodic": Periodic}[arrival](rate_per_s=rate) if arrival != "gamma" \
            else Gamma(rate_per_s=rate, cv=2.0 if args.cv is None else args.cv)
        base = replace(base, arrival=arr)  # lengths: the trace's rows drawn at random (joint distribution)
    horizon = args.horizon
    if horizon is None and args.requests is None:
        horizon = 90.0
    # refuse a run too large to simulate before drawing its arrivals; blame the flag the user typed
    blame = None
    if args.horizon is None and args.requests is None:
        blame = ("--rate", args.rate) if args.rate is not None else (("--load", args.load) if args.load is not None
                                                                     else None)
    # a vLLM engine from its profiles runs vLLM's scheduler unless --policy says otherwise
    names = args.policy or (["vllm-chunked"] if args.profile_dir is not None else ["sarathi", "fastertransformer"])
    distinct_policies("--policy", names)
    check_size(engine, base, horizon, args.requests, runs=args.replications, policies=len(names), blame=blame,
               names={"horizon_s": "--horizon", "n_requests": "--requests", "runs": "--replications"})
    # the arrivals every policy sees (simulate draws the same ones from the same seed)
    arr_s, p_tok, d_tok = base.sample(np.random.default_rng(args.seed), horizon_s=horizon, n=args.requests)
    if horizon is None and args.warmup > 0 and (len(arr_s) == 0 or args.warmup > float(arr_s[-1])):
        last = float(arr_s[-1]) if len(arr_s) else 0.0
        raise ParameterError("--warmup", args.warmup, f"seconds <= the last of the --requests arrivals ({last:g} s)",
                             "a warm-up this long leaves every request out of the latency metrics")
    pols = []
    for nm in names:
        pol = resolve_policy(nm, "--policy")
        if args.chunk_long_prompts and hasattr(pol, "with_") and not pol.chunked:
            pol = pol.with_(chunk_long_prompts=True)
        pols.append(pol)
    swap = None if args.swap_us is None else args.swap_us * 1e-6
    kw = {"preemption": args.preemption or "recompute", "swap_s_per_token": swap, "warmup_s": args.warmup}
    # max_throughput of these lengths: the basis computed it where it read it (the rate is not read)
    cap = lb.max_throughput(engine, base)
    # the capacity in batch work, the units of the offered tokens (m_p + m_d - 1 per request where the prefill
    # emits the first token)
    cap_tokens = lb.tokens_per_s
    offered = offered_tokens_per_s(engine, base)
    out = {"engine": engine.to_dict(), "workload": base.to_dict(), "capacity_tokens_per_s": cap_tokens,
           "load": offered / cap_tokens, "horizon_s": horizon,
           "n_requests": args.requests, "seed": args.seed, "policies": {}}
    out.update({k: v for k, v in lb.to_dict().items() if k != "load_basis_reason"})
    if lb.basis == "kv_rules":  # the load's basis where the KV cache binds (capacity_tokens_per_s is it, in batch work)
        out["kv_rules_requests_per_s"] = lb.requests_per_s
        out["kv_batch_capacity_tokens_per_s"] = cap.tokens_per_s
    if fit_json(args) is not None:
        out["fit"] = fit_json(args)
    if replay:
        window = horizon if horizon is not None else (float(arr_s[-1]) if len(arr_s) else math.nan)
        tok_rate = float(np.sum(p_tok) + np.sum(d_tok)) / window if window > 0 else math.nan
        out["replayed_window"] = {"window_s": window, "arrivals": len(arr_s),
                                  "requests_per_s": len(arr_s) / window if window > 0 else math.nan,
                                  "tokens_per_s": tok_rate, "effective_load": tok_rate / cap_tokens}
    # memory: a policy's run (with --replications, its first replication) is kept after its summary and
    # metrics only for --plot or when it is the first policy's (the fluid prediction below); replicate() keeps
    # no other replication (the verdict needs only each run's slopes and averages)
    runs = {}
    for pol in pols:
        t0 = time.perf_counter()
        cb = _progress(args, pol.name, horizon)
        if args.replications >= 2:
            if horizon is None:
                raise CliError("--replications needs --horizon")
            rcb = _replication_progress(args, pol.name)
            rep = replicate(engine, base, pol, n_replications=args.replications, horizon_s=horizon, rng=args.seed,
                            keep_runs=1, progress=rcb, **kw)
            res = rep.runs[0]
            entry = {"summary": res.summary(), "replications": rep.to_dict()}
            cb = cb or rcb
        else:
            res = simulate(engine, base, pol, horizon_s=horizon, n_requests=args.requests, rng=args.seed,
                           progress=cb, **kw)
            entry = {"summary": res.summary()}
        if cb is not None:
            clear()
        entry["wall_s"] = time.perf_counter() - t0
        entry["metrics"] = res.metrics
        out["policies"][pol.name] = entry
        if args.plot or not runs:  # (the first policy's run gives the fluid prediction for these arrivals)
            runs[pol.name] = res
        del res
    from ...results import MEANINGFUL_DIGITS, fmt_value

    if args.plot:
        from ...plotting.sim import plot_trajectories

        big = max(int(r.backlog["requests"].max()) for r in runs.values())
        small = min(max(1, int(r.backlog["requests"].max())) for r in runs.values())
        eff = (f" (replayed window {out['replayed_window']['effective_load']:.2f})" if replay else "")
        title = (f"{engine.name}, b_max={engine.b_max}, load {out['load']:.2f} of capacity{eff}, "
                 f"m_p={fmt_tokens(base.mean_prompt_tokens)}, m_d={fmt_tokens(base.mean_output_tokens)}")
        out["plot"] = write_late(args, "--plot", args.plot, lambda: plot_trajectories(
            runs, key="requests", path=args.plot, logy=big > 20 * small, title=title))
    lines = [f"engine    {engine_text(engine)}, b_max={engine.b_max}"
             + (f", k_max={engine.k_max}" if engine.k_max else "")
             + (f", KV {engine.kv_capacity_tokens:,} tokens ({kw['preemption']})" if engine.kv_capacity_tokens else ""),
             *fit_lines(args, width=10), *max_model_len_line(args, width=0),
             (f"workload  {base.arrival_rate_per_s:.4g} req/s ({type(base.arrival).__name__}), m_p={fmt_tokens(base.mean_prompt_tokens)}, "
             f"m_d={fmt_tokens(base.mean_output_tokens)}: load {fmt_load(out['load'])} of {fmt_value(cap_tokens, digits=MEANINGFUL_DIGITS)} tokens/s"
             + _basis_note(lb, cap, out["load"])
             + (" (nominal: the trace's mean rate)" if replay else "")),
             *([_replay_line(out["replayed_window"])] if replay else []),
             f"run       {f'{horizon:g} s' if horizon else ''}{', ' if horizon and args.requests else ''}"
             f"{f'{args.requests} requests' if args.requests else ''}, seed {args.seed}"
             + (f", {args.replications} replications" if args.replications >= 2 else ""), ""]
    hdr = (f"{'policy':<18} {'done':>7} {'in sys':>7} {'mean L':>8} {'slope tok/s':>12} {'req/s':>7} "
           f"{'TTFT p50':>9} {'TTFT p99':>9} {'TTLT p50':>9} {'TTLT p99':>9} {'TPOT ms':>8} {'busy':>5} {'mixed':>5}")
    lines.append(hdr)
    undefined: dict = {}  # column -> policies where it has no value (printed as –)

    def cell(name, col, v, width, spec=None):
        if v is None or not math.isfinite(v):
            undefined.setdefault(col, []).append(name)
            return f"{'–':>{width}}"
        if spec is None:  # meaningful digits, the same as every other human figure
            return f"{fmt_value(v, digits=MEANINGFUL_DIGITS):>{width}}"
        return f"{v:>{width}{spec}}"

    for name, e in out["policies"].items():
        s = e["summary"]
        tpot = s["tpot_s_mean"]
        lines.append(f"{name:<18} {s['finished']:>7,} {s['final_requests_in_system']:>7,} "
                     f"{cell(name, 'mean L', s['mean_requests_in_system'], 8)} "
                     f"{cell(name, 'slope', s['token_backlog_slope_per_s'], 12)} "
                     f"{cell(name, 'req/s', s['throughput_requests_per_s'], 7)} "
                     f"{cell(name, 'TTFT', s['ttft_s_p50'], 9)} {cell(name, 'TTFT', s['ttft_s_p99'], 9)} "
                     f"{cell(name, 'TTLT', s['ttlt_s_p50'], 9)} {cell(name, 'TTLT', s['ttlt_s_p99'], 9)} "
                     f"{cell(name, 'TPOT', 1e3 * tpot if tpot == tpot else tpot, 8)} "
                     f"{cell(name, 'busy', s['busy_fraction'], 5, '.2f')} {s['mixed_batch_fraction']:>5.2f}")
    if args.replications >= 2:
        lines.append(f"  (each row is the first of the {args.replications} replications, seed {args.seed}; the verdict "
                     "lines below read all of them)")
    after = " arriving after the warm-up" if args.warmup > 0 else ""
    why = {"mean L": "the run ends before the warm-up does", "slope": "the run is too short to fit a slope",
           "req/s": "no simulated time", "busy": "no simulated time",
           "TTFT": f"no request{after} got its first token in the run",
           "TTLT": f"no request{after} finished in the run",
           "TPOT": f"no request{after} with more than one output token finished in the run"}
    for col, who in undefined.items():
        who = sorted(set(who), key=who.index)
        none = all(out["policies"][p]["summary"]["requests"] == 0 for p in who) and col in ("TTFT", "TTLT", "TPOT")
        lines.append(f"  – {col}: undefined under {', '.join(who)}: "
                     + ("no request arrived in the run" if none else why[col]))
    for name, e in out["policies"].items():
        s = e["summary"]
        if "replications" in e:
            rp = e["replications"]
            lines.append(f"  {name}: {rp['verdict'].upper()} -- {rp['reason']}")
        if s["preemptions"] or s["rejected"]:
            lines.append(f"  {name}: {s['preemptions']} preemptions, {s['wasted_tokens']} tokens recomputed, "
                         f"{s['swap_tokens']} swapped, {s['rejected']} rejected (larger than the KV cache)")
        if s["blocked"]:
            lines.append(f"  {name}: {s['blocked']} requests can never be scheduled (prompt > b_max and the "
                         "scheduler does not chunk under --no-chunk-long-prompts)")
    first = next(iter(runs.values()))
    if first.end_s > 0:
        full = cap.work_conserving_tokens_per_s or cap.tokens_per_s
        # the figure is the load basis where Theorem 2 is not read (fluidq.dtmc.load_basis), and where k_max
        # binds along this mix (max_throughput's method "region": full batches would serve more than the
        # stability region's edge, so the work-conserving figure is that edge, max_throughput itself)
        on_basis = lb.basis != "max_throughput" or (
            cap.method == "region" and abs(full - cap_tokens) <= 1e-9 * cap_tokens)
        if on_basis:
            full, basis = cap_tokens, _fluid_basis(lb.basis) + (
                ", where k_max binds along this mix (the stability region's edge):"
                if lb.basis == "max_throughput" else ":")
        else:  # full batches under a backlog (Theorem 2(b))
            basis = cap.work_conserving_basis + " ="
        out["fluid_capacity_tokens_per_s"] = full
        out["fluid_slope_tokens_per_s"] = first.fluid_backlog_slope(full) if full > 0 else float("nan")
        fs = out["fluid_slope_tokens_per_s"]
        from ...policies.conservation import work_conserving_cached

        not_wc = [p.name for p in pols if not work_conserving_cached(p).work_conserving]
        lines.append(f"fluid prediction for a work-conserving scheduler ({basis} "
                     f"{fmt_value(full, digits=MEANINGFUL_DIGITS)} tokens/s): "
                     + (f"token slope {fmt_value(fs, digits=MEANINGFUL_DIGITS)} tokens/s for these arrivals (fitted "
                        "like the column)" if fs == fs else
                        "token slope – for these arrivals (the run is too short to fit one)")
                     + ("" if replay else f"; {fmt_value(max(0.0, offered - full), digits=MEANINGFUL_DIGITS)}"
                        f" at the nominal rate ({'on the load basis' if on_basis else 'Theorem 2'})")
                     + (f"; not a prediction for {', '.join(not_wc)} (not work-conserving: `fluidq check` gives "
                        f"{'their' if len(not_wc) > 1 else 'its'} own threshold)" if not_wc else ""))
        if args.replications < 2:
            lines.append("one run, no verdict: a slope early in a run is mostly warm-up; --replications N gives "
                         "a verdict with a confidence interval")
    lines.append("TTFT = first decode token - arrival; TTLT = last token - arrival; times in seconds")
    if args.plot and out["plot"]:
        lines.append(f"plot written to {out['plot']}")
    if args.gpu is not None:
        out["max_model_len"] = getattr(args, "max_model_len_info", None)
    emit(args, out, "\n".join(lines))


def _fluid_basis(basis: str) -> str:
    """The fluid prediction's capacity where the load basis is not max_throughput's: the basis itself, in the words
    of :data:`fluidq.dtmc.load_basis.BASIS_WORDS`."""
    from ...dtmc.load_basis import BASIS_WORDS

    return f"the load basis, {BASIS_WORDS[basis]}" + (", for this folder" if basis == "flow_balance" else "")


def _basis(args, engine, workload):
    """The load basis (:func:`fluidq.dtmc.load_basis.load_basis`; :func:`run` computes it once and passes it:
    the lengths set it, not the rate): vLLM's flow balance for a ``--profile-dir`` engine, the capacity under the
    KV cache's rules where it binds (not with ``--preemption swap``: the rules' capacity counts recomputation),
    else max_throughput."""
    from ...dtmc.load_basis import load_basis
    from ._roofline_args import named_by_flag

    with named_by_flag(args=args):  # (a cache no request fits, in whole blocks: its flag or the estimate)
        return load_basis(engine, workload, preemption=args.preemption or "recompute")


def _basis_note(lb, cap, load) -> str:
    """The workload line's words on the load basis ``lb`` where it is not ``cap`` (:func:`fluidq.max_throughput`):
    what ``cap`` would have said; ``load`` is the offered load of ``lb``.  Which limit binds in the ``kv_rules``
    basis is :func:`fluidq.dtmc.load_basis.kv_rules_case`'s: where ``max_num_seqs`` binds, or the cache binds while
    the mean footprints fit it, ``cap`` is not the batch the cache allows from mean footprints (h-words2)."""
    from ...dtmc.load_basis import BASIS_WORDS, K_MAX_BINDS, KV_CACHE_BINDS_PART, bound_words, kv_rules_case
    from ...results import MEANINGFUL_DIGITS, fmt_value

    cap_txt = fmt_value(cap.tokens_per_s, digits=MEANINGFUL_DIGITS)
    if lb.basis == "flow_balance":
        return (f" ({BASIS_WORDS['flow_balance']}, for this folder, as `fluidq capacity --profile-dir`; the "
                f"profile's t(b) bound, {cap_txt} tokens/s, counts no decode context)")
    case = kv_rules_case(lb, cap)
    if case is not None:
        other = (f"b/t(b) at the batch the KV cache allows from mean footprints, {cap_txt} tokens/s,"
                 if case == "kv_cache" else
                 f"{K_MAX_BINDS if case == 'k_max' else KV_CACHE_BINDS_PART}; max_throughput, "
                 f"{bound_words(cap, roofline=False)}, {cap_txt} tokens/s,")
        return (f" ({BASIS_WORDS['kv_rules']}: {lb.requests_per_s:.4g} req/s; {other} would give load "
                f"{fmt_load(load * lb.tokens_per_s / cap.tokens_per_s)})")
    return ""
