"""Arguments shared by several commands: how to describe an engine and a workload."""
from __future__ import annotations

import argparse

from ..batchtime import Affine, PiecewiseLinear, Staircase
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Geometric, Poisson, Workload


def add_engine_args(p: argparse.ArgumentParser, *, multi_engine: bool = False) -> None:
    """Engine options; ``multi_engine`` when the command understands ``--engines K`` (JSQ over K)."""
    g = p.add_argument_group("engine (a built-in profile, or the batch-time constants)")
    g.add_argument("--profile", default=None, help="built-in profile name (see `fluidq profiles`); "
                   "default: the paper's CodeLlama-34B/A100 fit")
    g.add_argument("--model", choices=["staircase", "piecewise-linear", "affine"], default="staircase",
                   help="batch-time form when constants are given")
    g.add_argument("--c-ms", type=float, default=None, help="fixed cost per batch, ms (paper: 11.28)")
    g.add_argument("--a-ms", type=float, default=None, help="cost per block (staircase) or per token, ms (paper: 35.47)")
    g.add_argument("--b0", type=int, default=None, help="block size / knee in tokens (paper: 128)")
    g.add_argument("--b-max", type=int, default=None, help="token budget per batch (default: the profile's)")
    g.add_argument("--k-max", type=int, default=None, help="batch-size limit, requests per batch")
    g.add_argument("--engines", type=int, default=1,
                   help="identical engines behind a JSQ router" if multi_engine else argparse.SUPPRESS)
    p.set_defaults(_multi_engine=multi_engine)


def engine_from_args(args) -> Engine:
    from ..profiles import DEFAULT_PROFILE, load_profile

    engines = getattr(args, "engines", 1)
    if engines != 1 and not getattr(args, "_multi_engine", False):
        raise ParameterError("--engines", engines, "1 for this command",
                             "parallel engines: `fluidq capacity`/`fluidq check --engines K`, or a JSQ network "
                             "case for `fluidq network`")
    if engines < 1:
        raise ParameterError("--engines", engines, "an integer >= 1")
    for flag, v in (("--b-max", args.b_max), ("--k-max", args.k_max)):
        if v is not None and v < 1:
            raise ParameterError(flag, v, "an integer >= 1")

    consts = [args.c_ms, args.a_ms, args.b0]
    if any(v is not None for v in consts):
        if args.profile is not None:
            raise ParameterError("--profile", args.profile, "either --profile or --c-ms/--a-ms/--b0, not both")
        c = 11.28 if args.c_ms is None else args.c_ms
        a = 35.47 if args.a_ms is None else args.a_ms
        b0 = 128 if args.b0 is None else args.b0
        for flag, v, ok in (("--c-ms", c, c >= 0), ("--a-ms", a, a > 0), ("--b0", b0, b0 >= 1)):
            if not (ok and v == v and abs(v) != float("inf")):
                raise ParameterError(flag, v, "a finite number >= 0" if flag == "--c-ms" else
                                     ("a finite number > 0" if flag == "--a-ms" else "an integer >= 1"))
        if args.model == "staircase":
            bt = Staircase(c=c / 1e3, a=a / 1e3, b0=b0)
        elif args.model == "piecewise-linear":
            bt = PiecewiseLinear(c=c / 1e3, a=a / 1e3, b0=b0)
        else:
            bt = Affine(c=c / 1e3, a=a / 1e3)
        return Engine(batch_time=bt, b_max=512 if args.b_max is None else args.b_max, k_max=args.k_max,
                      name="custom")
    prof = load_profile(args.profile or DEFAULT_PROFILE)
    changes = {}
    if args.b_max is not None:
        changes["b_max"] = args.b_max
    if args.k_max is not None:
        changes["k_max"] = args.k_max
    return prof.engine(**changes)


def add_workload_args(p: argparse.ArgumentParser, *, rate_required: bool = False) -> None:
    g = p.add_argument_group("workload")
    g.add_argument("--rate", type=float, default=None, required=rate_required,
                   help="arrival rate, requests per second")
    g.add_argument("--prompt", type=float, default=None, help="prompt tokens per request (mean; default 100)")
    g.add_argument("--output", type=float, default=None, help="output tokens per request (mean; default 100)")
    g.add_argument("--geometric", action="store_true", help="geometric lengths with the given means "
                   "(default: deterministic)")
    g.add_argument("--trace", default=None, help="a trace file (Azure CSV / Mooncake JSONL) or "
                   "'azure-conv' / 'azure-code'; lengths and arrival pattern from it")


def workload_from_args(args, *, default_rate: float | None = None) -> Workload:
    rate = args.rate if args.rate is not None else default_rate
    if args.trace is not None:
        if args.prompt is not None or args.output is not None:
            raise ParameterError("--trace", args.trace, "either --trace or --prompt/--output, not both")
        return Workload.from_trace(args.trace, rate_per_s=rate)
    if rate is None:
        hint = "or --load, a fraction of capacity" if hasattr(args, "load") else None
        raise ParameterError("--rate", None, "an arrival rate in requests per second", hint)
    if not (rate > 0 and rate != float("inf")):
        raise ParameterError("--rate", rate, "a finite rate > 0 (requests per second)")
    mp = 100.0 if args.prompt is None else args.prompt
    md = 100.0 if args.output is None else args.output
    for flag, v in (("--prompt", mp), ("--output", md)):
        if not (v >= 1 and v != float("inf")):
            raise ParameterError(flag, v, "a finite number of tokens >= 1")
    if args.geometric:
        lp, ld = Geometric(mean_tokens=mp), Geometric(mean_tokens=md)
    else:
        for name, v in (("--prompt", mp), ("--output", md)):
            if not float(v).is_integer():
                raise ParameterError(name, v, "a whole number of tokens (or add --geometric for a mean)")
        lp, ld = int(mp), int(md)
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=lp, output_tokens=ld)
