"""``fluidq dtmc``: build and solve the embedded Markov chain of one engine; its stability threshold.

With ``--network jsq`` or ``--network llm-rybko-stolyar`` it solves a chain of two Sarathi engines instead
(:func:`fluidq.dtmc.jsq_llm_engines`, :func:`fluidq.dtmc.llm_rybko_stolyar_chain`): JSQ over two engines,
or the LLM Rybko-Stolyar network (an entering and an exiting hop per engine, ``--priority`` order).
"""
from __future__ import annotations

from .. import emit
from ._roofline_args import add_refused_roofline_args, refuse_roofline_args
from ..common import (
    add_engine_args,
    add_workload_args,
    engine_from_args,
    output_file,
    workload_from_args,
    write_late,
)


DEFAULT_MAX_STATES = 500_000

#: the library's parameter names -> this command's flags (errors raised below the CLI name the flag)
_FLAGS = {"max_prefill/max_decode": "--max-prefill/--max-decode", "max_prefill": "--max-prefill",
          "max_decode": "--max-decode", "max_states": "--max-states", "prompt_tokens": "--prompt",
          "output_tokens": "--output", "workload.arrival_rate_per_s": "--rate", "engine.b_max": "--b-max",
          "tolerance": "--tolerance", "k_max": "--k-max",
          "max_prefill/max_decode/output_tokens": "--max-prefill/--max-decode/--output"}

#: the library's advice in Python -> the same on this command line (the fixed-output chains' size refusals)
_HINTS = {"pass max_decode=None": "drop --max-prefill/--max-decode (Orca: the adaptive chain)",
          "use a Geometric fit with fluidq.build_dtmc": "drop --fixed-output (geometric outputs of the same mean)",
          "lower max_decode or max_prefill": "lower --max-decode or --max-prefill", "max_states=": "--max-states ",
          "raise max_states": "raise --max-states"}


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
    expected, hint = exc.expected, exc.hint
    for py, cli in _HINTS.items():
        expected = expected.replace(py, cli)
        hint = None if hint is None else hint.replace(py, cli)
    return ParameterError(flag, exc.value, expected, hint)


def register(sub):
    p = sub.add_parser("dtmc", help="exact Markov chain of one engine (memoryless lengths, or fixed outputs): solve, threshold",
                       description="Build the chain embedded at batch boundaries (Poisson arrivals, geometric "
                       "outputs, or fixed ones with --fixed-output; fixed or, for chunking schedulers, geometric "
                       "prompts), solve its stationary law and report size, time, truncation and the policy's "
                       "stability threshold.")
    add_engine_args(p)
    # the shared workload group offers --trace; the chain needs Poisson, memoryless input
    add_workload_args(p, rate_required=True,
                      trace_help="refused here: the chain needs Poisson arrivals and memoryless lengths (give a "
                      "trace's mean lengths as --prompt/--output; `fluidq check --trace` prints them)")
    p.add_argument("--policy", default="sarathi", help="scheduler (sarathi, orca, vllm, fastertransformer, vllm-chunked)")
    p.add_argument("--fixed-output", action="store_true",
                   help="outputs of exactly --output tokens instead of geometric ones with that mean: the state "
                   "holds each decoder's remaining tokens. Orca without --max-prefill/--max-decode builds the "
                   "adaptive ordered chain (the states holding the mass, grown until the boundary mass is below "
                   "--tolerance, within --max-states); other schedulers need both caps (the states grow as "
                   "C(max_decode + output, output)). Short outputs only: Orca with --output 8 at half load keeps "
                   "a boundary mass near 1e-2 at 800,000 states")
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
    g = p.add_argument_group("network chains (two Sarathi engines, prefill/decode batches, Erlang-k batch times "
                             "extrapolated to fixed ones)")
    g.add_argument("--network", choices=NETWORKS, default=None,
                   help="solve a network chain instead of one engine: jsq (two engines behind join-shortest-"
                   "queue) or llm-rybko-stolyar (type A enters at engine 1 and exits at engine 2, type B the "
                   "mirror; --rate is each type's rate). Lengths: fixed prompts (default "
                   f"{NETWORK_PROMPT} tokens), geometric outputs (default mean {NETWORK_OUTPUT}); "
                   "--max-prefill caps the waiting prompts, --max-decode the decoders, per engine (default 6 for jsq, 3 for "
                   "llm-rybko-stolyar)")
    g.add_argument("--exit-prompt", type=float, default=None,
                   help="llm-rybko-stolyar: prompt tokens of the exiting hops (default: --prompt)")
    g.add_argument("--exit-output", type=float, default=None,
                   help="llm-rybko-stolyar: mean output tokens of the exiting hops (default: --output)")
    g.add_argument("--priority", choices=["exit", "reversed"], default=None,
                   help="llm-rybko-stolyar: each engine serves its exiting hop first (exit, default; the "
                   "classical unstable order) or its entering hop (reversed)")
    g.add_argument("--phases", type=str, default=None,
                   help="Erlang phases k of the batch time; the chain is solved for k and 2k and extrapolated "
                   "(default 2 for jsq, 1 for llm-rybko-stolyar)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_refused_roofline_args(p, ROOFLINE_WHY)
    p.set_defaults(func=run)


#: why `fluidq dtmc` takes no --gpu: what the chain can hold and what a roofline engine is
ROOFLINE_WHY = ("the chain holds no KV cache and no context (its states are the residents' prefill and decode "
                "tokens, a few thousand states at small budgets), while the --gpu engine is a context-aware batch "
                "time with vLLM's KV cache and a 2048-token budget; analyse it with `fluidq check --gpu` or "
                "`fluidq simulate --gpu`")

NETWORKS = ("jsq", "llm-rybko-stolyar")
NETWORK_PROMPT, NETWORK_OUTPUT = 2, 3
#: default caps per engine (jsq, llm-rybko-stolyar): the Rybko-Stolyar pair of engines has more local states
NETWORK_CAPS = {"jsq": 6, "llm-rybko-stolyar": 3}


def run(args):
    from ...errors import ParameterError

    refuse_roofline_args(args, "fluidq dtmc")
    try:
        _run(args)
    except ParameterError as exc:
        raise _renamed(exc) from exc


def _run(args):
    import math

    if args.network is not None:
        return _run_network(args)
    from ...errors import ParameterError as _PE

    for flag, v in (("--exit-prompt", args.exit_prompt), ("--exit-output", args.exit_output),
                    ("--priority", args.priority), ("--phases", args.phases)):
        if v is not None:
            raise _PE(flag, v, "only with --network (it sets a network chain)",
                      "add --network llm-rybko-stolyar (or jsq for --phases)")
    if args.fixed_output and args.geometric:
        raise _PE("--fixed-output", True, "not with --geometric (fixed outputs, or geometric ones: one of them)")

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
    if args.fixed_output:
        from ...dtmc.build import scheduler_rules

        pol, _b = scheduler_rules(args.policy, engine)
        orca = pol.priority == "prefill" and pol.mixed
        if not orca and (args.max_prefill is None or args.max_decode is None):
            raise _PE("--fixed-output", True, f"--max-prefill and --max-decode with --policy {args.policy}",
                      "only Orca (prefill first, mixed batches) builds its fixed-output chain adaptively; for other "
                      "schedulers the states grow as C(max_decode + output, output): give small caps, or drop "
                      "--fixed-output for geometric outputs")
        note = ("fixed prompts and outputs (--fixed-output): the state holds each decoder's remaining tokens"
                + ("; Orca: in arrival order" if orca else ""))
    elif not args.geometric:
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
                                      max_states=args.max_states, method=args.solver,
                                      announce=_announce_adaptive if args.fixed_output else _announce)
        notes = [n.replace("max_states=", "--max-states ") for n in notes]  # (the library's notes name Python's)
        if "adaptive" in chain.inputs:  # a set of states, not a box: its caps are no flags to give back
            verb = "grown" if chain.n_states > 1 else "chosen"  # (an unservable load: the empty state only)
            caps_note = f"{verb} for this load (no --max-prefill/--max-decode): {'; '.join(notes)}"
        else:
            caps_note = (f"chosen for this load (no --max-prefill/--max-decode): {'; '.join(notes)}; final caps "
                         f"--max-prefill {chain.caps['max_prefill']}, --max-decode {chain.caps['max_decode']}")
    else:
        mp_cap = 40 if args.max_prefill is None else args.max_prefill
        md_cap = 400 if args.max_decode is None else args.max_decode
        from ...dtmc.build import chain_size
        from ...dtmc.sizing import ANNOUNCE_STATES

        if not args.fixed_output:  # (the fixed-output builders count their states and refuse by themselves)
            size = chain_size(engine, workload, args.policy, mp_cap, md_cap)  # the builder refuses a bad one
            if ANNOUNCE_STATES <= size.states <= args.max_states:
                _announce((mp_cap, md_cap), size)
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

        fig = write_late(args, "--plot", args.plot, lambda: plot_dtmc(res, path=args.plot))
    out = {"engine": engine.to_dict(), "workload": workload.to_dict(), "lengths": note,
           "result": res.to_dict(), "threshold": thr.to_dict() if thr is not None else None, "plot": fig,
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
             f"status          {res.status}: {_reason_in_flags(res.reason, 'adaptive' in chain.inputs)}",
             (f"requests        mean {f(res.mean_requests)} (prefill {f(res.mean_prefill)}, decode {f(res.mean_decode)}),"
             " quantiles " + (", ".join(f"{100 * q:g} % {v:,}" for q, v in res.requests_quantiles.items())
                              if isinstance(res.requests_quantiles, dict) and res.requests_quantiles
                              else f(res.requests_quantiles or None))),
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


def _reason_in_flags(reason: str, adaptive: bool) -> str:
    """A result's reason for this command line: its advice ``raise max_prefill/max_decode`` (Python names) names
    the flags, or for the adaptive chain (whose states are grown, not a box of caps) ``--max-states``; the caps it
    quotes (``caps max_prefill 13, max_decode 90``) read as the flags.  The JSON keeps the library's text."""
    advice = ("raise --max-states (the adaptive chain grows its states up to it)" if adaptive
              else "raise --max-prefill/--max-decode")
    reason = reason.replace("raise max_prefill/max_decode", advice)
    if not adaptive:
        reason = reason.replace("caps max_prefill ", "caps --max-prefill ").replace(", max_decode ", ", --max-decode ")
    return reason


def _announce(caps, size):
    """The size estimate of a long build, on stderr before it starts (stdout keeps the answer alone)."""
    import sys

    print(f"fluidq dtmc: building the chain with --max-prefill {caps[0]:,}, --max-decode {caps[1]:,}: "
          f"{size.describe()} (estimated)", file=sys.stderr, flush=True)


def _announce_adaptive(caps, size):
    """A round of the adaptive ordered chain (Orca, --fixed-output), on stderr: its states are a grown set, not
    the box of flags ``_announce`` names, and its build runs per state in Python, so the count chain's CPU
    estimate does not apply (measured: 500,000 states took 18 s to build where that estimate says 0.8 s)."""
    import sys

    print(f"fluidq dtmc: growing the adaptive chain to {size.states:,} states (up to {caps[1]:,} decoders; "
          f"--max-states caps the growth): up to about {size.bytes / 2**30:.3g} GiB of memory (estimated)",
          file=sys.stderr, flush=True)


def _run_network(args):
    """``--network``: a chain of two Sarathi engines (JSQ, or the LLM Rybko-Stolyar network)."""
    from ...errors import ParameterError
    from ..._validate import integer, real
    from ...results import MEANINGFUL_DIGITS, fmt_value
    from .. import CliError

    if args.trace is not None:
        raise CliError(f"--trace {args.trace}: a network chain needs Poisson arrivals and memoryless outputs; "
                       "give --rate/--prompt/--output")
    for flag, v, why in (("--policy", args.policy != "sarathi" and args.policy, "the engines run Sarathi-Serve"),
                         ("--geometric", args.geometric, "prompts are fixed and outputs geometric already"),
                         ("--plot", args.plot, "no plot of a network chain yet"),
                         ("--solver", args.solver != "auto" and args.solver, "the chain picks its solver")):
        if v:
            raise ParameterError(flag, v, f"not with --network ({why})")
    rybko = args.network == "llm-rybko-stolyar"
    if not rybko:
        for flag, v in (("--exit-prompt", args.exit_prompt), ("--exit-output", args.exit_output),
                        ("--priority", args.priority)):
            if v is not None:
                raise ParameterError(flag, v, "only with --network llm-rybko-stolyar")
    if args.engines != 1:
        raise ParameterError("--engines", args.engines, "1 with --network (the network has two engines of its own)")
    engine = engine_from_args(args)
    if args.rate is None:
        raise CliError("give --rate R (requests per second; for llm-rybko-stolyar each type's rate)")
    rate = real("--rate", args.rate, positive=True)

    def tokens(flag, v, default, whole):
        v = default if v is None else real(flag, v, minimum=1.0)
        if whole and not float(v).is_integer():
            raise ParameterError(flag, v, "a whole number of tokens (prompts are fixed in the chain)")
        return int(v) if whole else float(v)

    P = tokens("--prompt", args.prompt, NETWORK_PROMPT, True)
    M = tokens("--output", args.output, NETWORK_OUTPUT, False)
    W = NETWORK_CAPS[args.network] if args.max_prefill is None else _count("--max-prefill")(args.max_prefill)
    D = NETWORK_CAPS[args.network] if args.max_decode is None else _count("--max-decode")(args.max_decode)
    k = (1 if rybko else 2) if args.phases is None else integer("--phases", _num(args.phases, "--phases"), minimum=1)
    flags = {"prompt_tokens": "--prompt", "mean_output_tokens": "--output", "entering[0]": "--prompt",
             "entering[1]": "--output", "exiting[0]": "--exit-prompt", "exiting[1]": "--exit-output",
             "max_waiting": "--max-prefill", "max_decode": "--max-decode", "phases": "--phases",
             "rate_per_s": "--rate", "arrival_rate_per_s": "--rate"}
    try:
        if rybko:
            from ...dtmc.llm_rybko import llm_rybko_stolyar_chain

            PX = tokens("--exit-prompt", args.exit_prompt, P, True)
            MX = tokens("--exit-output", args.exit_output, M, False)
            res = llm_rybko_stolyar_chain(engine, rate_per_s=rate, entering=(P, M), exiting=(PX, MX),
                                          priority=args.priority or "exit", phases=k, max_waiting=W, max_decode=D)
        else:
            from ...dtmc.llm_network import jsq_llm_engines

            res = jsq_llm_engines(engine, arrival_rate_per_s=rate, prompt_tokens=P, mean_output_tokens=M,
                                  phases=k, max_waiting=W, max_decode=D)
    except ParameterError as exc:
        if exc.name == "max_waiting" and "phases giving at most" in exc.expected:
            # the size of the caps, prompts and phases together: named by the flags given among them (a default
            # cap the user never typed is not the culprit of --phases 1000)
            given = [(fl, v) for fl, v, typed in (("--max-prefill", W, args.max_prefill),
                                                  ("--max-decode", D, args.max_decode), ("--phases", k, args.phases),
                                                  ("--prompt", P, args.prompt),
                                                  ("--exit-prompt", args.exit_prompt, args.exit_prompt))
                     if typed is not None]
            given = given or [("--max-prefill", W), ("--max-decode", D)]
            hint = (exc.hint or "").replace("prompt_tokens", "--prompt").replace("the caps", "the caps "
                                                                                  "(--max-prefill/--max-decode)")
            raise ParameterError("/".join(f for f, _ in given),
                                 given[0][1] if len(given) == 1 else tuple(v for _, v in given),
                                 exc.expected, hint or None) from exc
        flag = flags.get(exc.name)
        if flag is None:
            raise
        raise ParameterError(flag, exc.value, exc.expected, exc.hint) from exc

    def f(x):
        return fmt_value(x, digits=MEANINGFUL_DIGITS)

    k1, k2 = res.phases
    lines = [f"engine          {engine.batch_time.describe()}, b_max={engine.b_max}, two copies (Sarathi-Serve)"]
    if rybko:
        lines += [f"network         LLM Rybko-Stolyar, priority to the "
                  f"{'exiting' if (args.priority or 'exit') == 'exit' else 'entering'} hop; lambda={rate:g} req/s "
                  "per type",
                  f"hops            entering (A.1, B.1): prompt {P}, output geometric mean {M:g}; exiting (A.2, "
                  f"B.2): prompt {PX}, output geometric mean {MX:g}",
                  f"load            {f(res.inputs['load'])} per engine"]
    else:
        lines += [f"network         two engines behind JSQ (ties to engine 1); lambda={rate:g} req/s",
                  f"lengths         prompt {P}, output geometric mean {M:g}"]
    lines += [f"chain           {res.n_states[k1]:,} states ({k1} phases), {res.n_states[k2]:,} ({k2} phases); caps "
              f"--max-prefill {W}, --max-decode {D} per engine",
              f"truncation      lost mass {res.lost_mass[k1]:.1e} / {res.lost_mass[k2]:.1e}, residual "
              f"{max(res.residual.values()):.1e}",
              f"requests        engine 1 {f(res.extrapolated[0])}, engine 2 {f(res.extrapolated[1])} (extrapolated "
              f"to fixed batch times; {k1} phases: {f(res.mean_requests[k1][0])}, {f(res.mean_requests[k1][1])})"]
    if rybko:
        lines.append("per hop         " + ", ".join(f"{h} {f(res.extrapolated_hops[h])} req / "
                                                    f"{f(res.extrapolated_tokens[h])} tokens" for h in res.extrapolated_hops))
    lost = max(res.lost_mass.values())
    if lost > 1e-3:
        lines.append(f"warning         lost mass {lost:.1e} > 1e-3: raise --max-prefill/--max-decode (or the load is "
                     "beyond what the caps hold)")
    emit(args, {"network": args.network, "engine": engine.to_dict(), "result": res.to_dict()}, "\n".join(lines))


def _num(text, flag):
    from ...errors import ParameterError

    try:
        return int(text)
    except ValueError:
        raise ParameterError(flag, text, "an integer >= 1") from None
