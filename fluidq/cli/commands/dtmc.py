"""``fluidq dtmc``: build and solve the embedded Markov chain of one engine; its stability threshold."""
from __future__ import annotations

from .. import emit
from ..common import (
    add_engine_args,
    add_workload_args,
    engine_from_args,
    output_file,
    workload_from_args,
)


DEFAULT_MAX_STATES = 500_000

#: the library's parameter names -> this command's flags (errors raised below the CLI name the flag)
_FLAGS = {"max_prefill/max_decode": "--max-prefill/--max-decode", "max_prefill": "--max-prefill",
          "max_decode": "--max-decode", "max_states": "--max-states", "prompt_tokens": "--prompt",
          "output_tokens": "--output", "workload.arrival_rate_per_s": "--rate", "engine.b_max": "--b-max",
          "tolerance": "--tolerance", "k_max": "--k-max"}


#: a method's name in human output
METHOD_WORDS = {"closed_form": "the closed form", "direct": "a direct sparse solve", "renewal": "renewal-reward",
                "dtmc": "the Markov chain", "simulation": "simulation"}

def _count(flag):
    """Parser of a positive count, also written as an integral float (``1e8``); one line naming ``flag``."""

    def parse(text):
        from ...errors import ParameterError

        try:
            v = int(text)
        except ValueError:
            try:
                v = float(text)
            except ValueError:
                raise ParameterError(flag, text, "an integer >= 1") from None
        from ...dtmc.sizing import MAX_STATES_LIMIT
        from ..._validate import integer

        return integer(flag, v, minimum=1, maximum=MAX_STATES_LIMIT,
                       why="a chain is indexed with 32-bit integers")

    return parse


def _renamed(exc):
    """``exc`` with the library's parameter name replaced by this command's flag."""
    from ...errors import ParameterError

    flag = _FLAGS.get(exc.name)
    if flag is None:
        return exc
    return ParameterError(flag, exc.value, exc.expected, exc.hint)


def register(sub):
    p = sub.add_parser("dtmc", help="exact Markov chain of one engine (memoryless lengths): solve, threshold",
                       description="Build the chain embedded at batch boundaries (Poisson arrivals, geometric "
                       "outputs; fixed or, for chunking schedulers, geometric prompts), solve its stationary law "
                       "and report size, time, truncation and the policy's stability threshold.")
    add_engine_args(p)
    add_workload_args(p, rate_required=True)
    p.add_argument("--policy", default="sarathi", help="scheduler (sarathi, orca, vllm, fastertransformer, vllm-chunked)")
    p.add_argument("--max-prefill", type=str, default=None,
                   help="cap on requests in prefill (default: chosen for the load, see below)")
    p.add_argument("--max-decode", type=str, default=None,
                   help="cap on requests decoding (default: chosen for the load: caps start from a fluid "
                   "estimate of the mean requests and grow until the mass lost at the truncation boundary is "
                   "below --tolerance, within --max-states and the memory available)")
    p.add_argument("--max-states", type=str, default=DEFAULT_MAX_STATES,
                   help=f"refuse larger chains (default {DEFAULT_MAX_STATES:,}; chains that would not fit in the "
                   "memory available are refused too)")
    p.add_argument("--tolerance", type=float, default=1e-6, help="boundary mass above which the result is inaccurate")
    p.add_argument("--solver", default="auto", choices=["auto", "direct", "arnoldi", "gmres", "ilu", "power"],
                   help="stationary solver (default auto; ilu: GMRES preconditioned by an incomplete LU, for "
                   "nearly decomposable chains; the answer names the solver used and its residual)")
    p.add_argument("--plot", default=None, metavar="PATH", help="write the stationary distribution and drift field "
                   "to PATH (format from the extension: png, pdf, svg...; none: .png)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args):
    from ...errors import ParameterError

    try:
        _run(args)
    except ParameterError as exc:
        raise _renamed(exc) from exc


def _run(args):
    import math

    from ...dtmc import build_dtmc
    from ...dtmc.threshold import ThresholdUnavailable, stability_threshold
    from ...errors import ParameterError

    # counts are parsed here, not by argparse, so that a bad one is this command's one line naming the flag
    args.max_prefill = None if args.max_prefill is None else _count("--max-prefill")(args.max_prefill)
    args.max_decode = None if args.max_decode is None else _count("--max-decode")(args.max_decode)
    args.max_states = _count("--max-states")(str(args.max_states))
    if not (math.isfinite(args.tolerance) and 0 < args.tolerance < 1):
        raise ParameterError("--tolerance", args.tolerance, "a boundary mass in (0, 1)")
    from ...dtmc.kernels import MIN_TOLERANCE

    if args.tolerance < MIN_TOLERANCE:
        raise ParameterError("--tolerance", args.tolerance, f"a boundary mass >= {MIN_TOLERANCE:g}",
                             "the kernels fold tails of 1e-12 and the solver's residual is about 1e-10: a smaller "
                             "mass is round-off, and ever larger caps would be built chasing it")
    from ...policies import resolve_policy

    resolve_policy(args.policy, "--policy")
    if args.trace is not None:
        from .. import CliError

        raise CliError(f"--trace {args.trace}: the chain needs Poisson arrivals and memoryless lengths; describe the "
                       "workload with --rate/--prompt/--output (e.g. the trace's mean lengths: `fluidq check "
                       "--trace` prints m_p and m_d)")
    if args.plot is not None:
        args.plot = output_file("--plot", args.plot)
    engine = engine_from_args(args)
    if args.engines != 1:
        raise ParameterError("--engines", args.engines, "1 for `fluidq dtmc` (network chains: fluidq.dtmc.networks)")
    workload = workload_from_args(args)
    note = None
    if not args.geometric:
        # the chain needs memoryless outputs: --geometric makes both lengths geometric; keep the
        # prompt fixed otherwise (fine for every scheduler) and make the output geometric
        from ...workload import Geometric, Workload

        workload = Workload(arrival=workload.arrival, prompt_tokens=workload.prompt_tokens,
                            output_tokens=Geometric(mean_tokens=workload.mean_output_tokens))
        note = "fixed prompts; outputs geometric with the given mean (the chain needs memoryless outputs)"
    caps_note = None
    if args.max_prefill is None and args.max_decode is None:
        from ...dtmc.sizing import auto_caps

        chain, res, notes = auto_caps(engine, workload, args.policy, tolerance=args.tolerance,
                                      max_states=args.max_states, method=args.solver)
        caps_note = (f"chosen for this load (no --max-prefill/--max-decode): {'; '.join(notes)}; final caps "
                     f"--max-prefill {chain.caps['max_prefill']}, --max-decode {chain.caps['max_decode']}")
    else:
        mp_cap = 40 if args.max_prefill is None else args.max_prefill
        md_cap = 400 if args.max_decode is None else args.max_decode
        chain = build_dtmc(engine, workload, args.policy, max_prefill=mp_cap, max_decode=md_cap,
                           tolerance=args.tolerance, max_states=args.max_states)
        res = chain.solve(args.solver)
    try:
        thr = stability_threshold(engine, workload, args.policy)
    except ThresholdUnavailable as exc:
        thr = None
        thr_note = str(exc)
    fig = None
    if args.plot:
        from ...plotting.dtmc import plot_dtmc

        fig = plot_dtmc(res, path=args.plot)
    out = {"result": res.to_dict(), "threshold": thr.to_dict() if thr is not None else None, "plot": fig,
           "caps": {**chain.caps, "chosen": caps_note is not None, "how": caps_note}}

    from ...results import MEANINGFUL_DIGITS as _DIGITS, fmt_value as _fmt
    from ..common import lengths_text

    def f(x, spec=None):
        if x is None:
            return "–"
        return _fmt(x, digits=_DIGITS) if spec is None else format(x, spec)

    lines = [f"engine          {engine.batch_time.describe()}, b_max={engine.b_max}",
             f"workload        lambda={workload.arrival_rate_per_s:g} req/s, prompt / output {lengths_text(workload)}",
             *([f"lengths         {note}"] if note else []),
             f"policy          {res.policy}",
             f"chain           {res.n_states:,} states, {res.nnz:,} non-zeros, caps "
             + ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in chain.caps.items()),
             *([f"caps            {caps_note}"] if caps_note else []),
             f"time            build {res.build_s:.3f} s, solve {res.solve_s:.3f} s ({res.method})",
             f"truncation      boundary mass {f(res.lost_mass, '.1e')} (tolerance {res.tolerance:g})",
             f"status          {res.status}: {res.reason}",
             (f"requests        mean {f(res.mean_requests)} (prefill {f(res.mean_prefill)}, decode {f(res.mean_decode)}),"
             " quantiles " + (", ".join(f"{100 * q:g} % {v:,}" for q, v in res.requests_quantiles.items())
                              if isinstance(res.requests_quantiles, dict) else f(res.requests_quantiles))),
             f"tokens          mean unprocessed {f(res.mean_unprocessed_tokens)}",
             f"throughput      {f(res.throughput_requests_per_s)} req/s, {f(res.throughput_tokens_per_s)} tokens/s"]
    if thr is not None:
        from ...results import MEANINGFUL_DIGITS, fmt_value

        lines.append(f"threshold       {fmt_value(thr.arrival_rate_per_s, digits=MEANINGFUL_DIGITS)} req/s by {METHOD_WORDS.get(thr.method, thr.method)} "
                     f"(± {thr.error_bound_per_s:.2g}; {thr.fraction_of_capacity:.1%} of Theorem 2's bound)")
    else:
        lines.append(f"threshold       unavailable: {thr_note}")
    if fig:
        lines.append(f"plot            {fig}")
    emit(args, out, "\n".join(lines))
