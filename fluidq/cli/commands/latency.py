"""``fluidq latency``: compare orderings (FCFS, PARS, SJF, SRPT, gamma-Boost, UNIBOOST) by simulation."""
from __future__ import annotations

from .. import CliError, emit
from ..common import add_engine_args, add_workload_args, engine_from_args, workload_from_args


def register(sub):
    p = sub.add_parser("latency", help="latency of scheduling orderings on a workload or trace",
                       description="Simulate several orderings on the same requests at given loads and compare "
                       "mean latency per token, P90/P99 time to last token, time to first token and preemptions "
                       "(PARS arXiv:2510.03243, UNIBOOST arXiv:2606.18431).")
    add_engine_args(p)
    add_workload_args(p)
    p.add_argument("--reasoning", action="store_true",
                   help="use the built-in heavy-tailed reasoning-like workload instead of --prompt/--output/--trace")
    p.add_argument("--kv-capacity", type=int, default=None, help="KV-cache capacity in tokens (memory, preemptions)")
    p.add_argument("--preemption", choices=["recompute", "swap"], default="recompute")
    p.add_argument("--swap-ms-per-token", type=float, default=None, help="swap cost per KV token, ms")
    p.add_argument("--orderings", default="fcfs,pars,sjf,srpt,gamma-boost,uniboost",
                   help="comma-separated: fcfs, pars, sjf, srpt, las, gamma-boost, uniboost, uniboost-nomemguard, "
                   "uniboost-ada")
    p.add_argument("--loads", default="0.5,0.7,0.9", help="comma-separated fractions of capacity")
    p.add_argument("--horizon", type=float, default=300.0, help="simulated seconds per run")
    p.add_argument("--replications", type=int, default=2)
    p.add_argument("--tau", type=float, default=0.6, help="Kendall tau of PARS's stand-in predictor, in (0, 1] (default 0.6)")
    p.add_argument("--gamma", type=float, default=None, help="gamma-Boost rate, 1/s (default: M/G/1 value)")
    p.add_argument("--seed", type=int, default=0, help="root seed (a non-negative integer)")
    p.add_argument("--metric", default="latency_per_token_mean_s", help="metric for --plot")
    p.add_argument("--plot", default=None, metavar="PNG", help="write a latency-load plot")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _floats(name, text):
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise CliError(f"{name}={text!r}: expected comma-separated numbers") from exc


def run(args):
    import math

    from ...errors import ParameterError
    from ...latency import METRICS, compare_orderings, reasoning_workload, standard_policies

    if not (math.isfinite(args.tau) and 0 < args.tau <= 1):
        raise ParameterError("--tau", args.tau, "a Kendall tau in (0, 1] (1 = the oracle's ranking)")
    if args.seed < 0:
        raise ParameterError("--seed", args.seed, "a non-negative integer")
    engine = engine_from_args(args)
    if args.kv_capacity is not None:
        engine = engine.with_(kv_capacity_tokens=args.kv_capacity)
    if args.reasoning:
        if args.trace is not None or args.prompt is not None or args.output is not None:
            raise CliError("--reasoning: give either it or --trace/--prompt/--output")
        workload = reasoning_workload()
    else:
        workload = workload_from_args(args, default_rate=1.0)
    if args.metric not in METRICS:
        raise CliError(f"--metric={args.metric!r}: expected one of {', '.join(METRICS)}")
    keys = [k.strip() for k in args.orderings.split(",") if k.strip()]
    pols = standard_policies(engine, workload, keys=keys, tau=args.tau, gamma_per_s=args.gamma, seed=args.seed)
    swap = None if args.swap_ms_per_token is None else args.swap_ms_per_token / 1e3
    res = compare_orderings(engine, workload, pols, loads=_floats("--loads", args.loads), horizon_s=args.horizon,
                            n_replications=args.replications, rng=args.seed, preemption=args.preemption,
                            swap_s_per_token=swap)
    if args.plot:
        res.plot(metric=args.metric, path=args.plot)
    lines = [f"engine    {engine.name}: {engine.batch_time.describe()}, b_max={engine.b_max}"
             + (f", kv={engine.kv_capacity_tokens} tokens" if engine.kv_capacity_tokens else ", unlimited KV"),
             f"workload  {workload.name}; capacity {res.inputs['capacity_requests_per_s']:.3f} req/s",
             f"runs      {res.n_replications} replication(s) x {args.horizon:g} s per policy and load "
             f"({res.seconds:.1f} s wall)"]
    for i, ld in enumerate(res.loads):
        lines += ["", f"load {ld:g} ({res.rates_per_s[i]:.3f} req/s)", res.table(i)]
    if args.plot:
        lines.append(f"\nplot written to {args.plot}")
    emit(args, res, "\n".join(lines))
