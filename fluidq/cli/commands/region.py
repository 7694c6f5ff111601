"""``fluidq region``: the stability region of one engine under a token budget and a batch-size limit."""
from __future__ import annotations

import math
import re

from ...errors import ParameterError
from .. import CliError, emit
from ._roofline_args import add_roofline_args, engine_for_command, max_model_len_line
from ..common import (
    add_engine_args,
    add_workload_args,
    engine_text,
    counted,
    fit_json,
    fit_lines,
    fmt_tokens,
    output_file,
    reject_ignored,
    workload_from_args,
    write_late,
)


def register(sub):
    p = sub.add_parser("region", help="stability region in (prefill, decode) tokens/s under b_max and k_max",
                       description="The stability region of one engine: the downward-closed convex hull of the "
                       "rate points of its admissible batch shapes (paper §6, arXiv:2504.07347). With --point, "
                       "the LP time-sharing of batch shapes that serves it (or the shortfall); with a workload "
                       "(--prompt/--output with --rate, or a --trace at its own rate), its operating point "
                       "(lambda m_p, lambda m_d).")
    add_engine_args(p, fit=True)
    add_roofline_args(p)
    add_workload_args(p)
    p.add_argument("--point", default=None, metavar="LP,LD",
                   help="target prefill,decode tokens per second, e.g. 620.3,2117.6 (a value starting with '-' "
                        "is read as the point too, e.g. --point -1,5, and then rejected as negative)")
    p.add_argument("--policies", default=None, metavar="NAMES",
                   help="comma-separated schedulers whose backlog regions to add (e.g. sarathi,orca,sarathi:128 "
                        "for Sarathi with its own b_max=128)")
    p.add_argument("--simulate", action="store_true",
                   help="also bracket each --policies scheduler's stability threshold by simulation along "
                        "rays (deterministic arrivals; seconds per scheduler)")
    p.add_argument("--rays", type=int, default=None, help="rays for --simulate (default 7)")
    p.add_argument("--seed", type=int, default=None, help="root seed for --simulate (default 0)")
    p.add_argument("--plot", default=None, metavar="PATH", help="write the region plot to PATH (format from the "
                   "extension: png, pdf, svg...; none: .png)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)
    # argparse reads "-1,5" as an option name (only "-1" or "-1.5" count as negative numbers), so a
    # negative --point failed inside argparse with "expected one argument"; let number lists through
    # so that the coordinates reach ``_point`` and are rejected there with fluidq's own message.
    if hasattr(p, "_negative_number_matcher"):
        p._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(,\s*[-+]?[\d.eE+-]*)*$")


def _point(text):
    parts = [s.strip() for s in text.split(",")]
    if len(parts) != 2:
        raise ParameterError("--point", text, "two numbers 'prefill_tokens_per_s,decode_tokens_per_s'")
    try:
        x, y = float(parts[0]), float(parts[1])
    except ValueError:
        raise ParameterError("--point", text, "two numbers 'prefill_tokens_per_s,decode_tokens_per_s'") from None
    if not (math.isfinite(x) and math.isfinite(y)) or x < 0 or y < 0:
        raise ParameterError("--point", text, "two finite non-negative token rates 'prefill,decode' per second")
    from ...region.region import as_points

    as_points((x, y), "--point")  # the library's bounds (1e-12 .. 1e18 tokens/s), named by the flag
    return x, y


def _policies(text):
    from ...policies import resolve_policy

    out = []
    from ..common import comma_list

    for item in comma_list("--policies", text, "scheduler names"):
        name, _, budget = item.partition(":")
        pol = resolve_policy(name, "--policies")
        if budget:
            try:
                pol = pol.with_(b_max=int(budget))
            except ValueError:
                raise ParameterError("--policies", item, "NAME or NAME:B_MAX with an integer budget") from None
        out.append(pol)
    return out


def _num(x: float, digits: int, style: str = "", *, tiny: bool = True) -> str:
    """A number for the human table: fixed-point with ``digits`` decimals (``style=","`` adds thousands
    separators, ``"g"`` is ``digits`` significant digits), 4 significant digits when too large or
    too small for that (``tiny=False``: a small value rounds to 0, e.g. LP round-off), and "–" for an
    undefined (NaN or infinite) value."""
    if not math.isfinite(x):
        return "–"
    if style == "g":
        return f"{x:.{digits}g}"
    if abs(x) >= 1e12 or (tiny and x != 0 and abs(x) < 10.0 ** -digits):
        return f"{x:.4g}"
    return f"{x:,.{digits}f}" if style == "," else f"{x:.{digits}f}"


def _distance(d: float, point) -> str:
    """The margin's distance at the tables' meaningful digits; LP round-off (below 1e-9 of the point's
    size) reads as 0."""
    if math.isfinite(d) and abs(d) <= 1e-9 * max(1.0, abs(point[0]) + abs(point[1])):
        return "0"
    from ...results import MEANINGFUL_DIGITS, fmt_value

    return fmt_value(d, digits=MEANINGFUL_DIGITS) if math.isfinite(d) else "–"


def given_number(x: float) -> str:
    """A number the user gave (a --point coordinate) as given: ``2400`` -> ``2,400``, ``600.0`` -> ``600``,
    ``2117.6`` -> ``2,117.6``; one with many digits (a computed point) at the tables' meaningful digits."""
    from ...results import MEANINGFUL_DIGITS, fmt_value

    if math.isfinite(x) and float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    text = repr(float(x))
    if math.isfinite(x) and "e" not in text and len(text.replace("-", "").replace(".", "").lstrip("0")) <= 8:
        whole, _, frac = text.partition(".")
        return f"{int(whole):,}.{frac}" if whole.lstrip("-") else text
    return fmt_value(x, digits=MEANINGFUL_DIGITS)


def _memory_lines(engine, workload, kvr) -> list[str]:
    """What the region's vertices assume about the KV cache, and (with a workload) the capacity under its rules
    where it binds, ``kvr`` (:func:`fluidq.dtmc.kv_basis.kv_capacity` of ``engine`` and ``workload``, ``None``
    where the cache does not bind or there is no workload): the lambda* of `check --load` and `simulate --load`
    then.  Only the lines: :func:`run` stores the number in the result."""
    kv = engine.kv_capacity_tokens
    head = (f"memory          the vertices assume no KV-cache limit on the batch shapes (up to b_max tokens and "
            f"k_max decodes); the engine's KV cache of {kv:,} tokens enters only through t(b, kv)'s context")
    if workload is None:
        return [head + "; give the workload (--prompt/--output or --trace) for the capacity under the cache's rules"]
    if kvr is None:
        return [head + "; for this workload the cache does not bind under its rules (another limit does), so "
                "leaving it out of the shapes changes nothing here"]
    from ...results import MEANINGFUL_DIGITS, fmt_value

    return [head + f"; for this workload the cache binds: it holds about {kvr.residents:.1f} decoding requests of "
            f"mean context {kvr.mean_context_tokens:,.0f} tokens, and under its rules (a request admitted only when "
            "its whole prompt fits, residents that outgrow it preempted and recomputed) the engine serves about "
            f"{fmt_value(kvr.requests_per_s, digits=MEANINGFUL_DIGITS)} "
            "req/s -- the lambda* of `fluidq check --load` and `fluidq simulate --load` here, where seeded simulations "
            "put the stability threshold; the region's lambda* above overstates what the engine serves"]


def _where(scale: float) -> str:
    if abs(scale - 1) <= 1e-6:
        return "on the boundary"
    return "inside" if scale > 1 else "OUTSIDE"


def run(args):
    from ...region import policy_region, region_mix, stability_region
    from ...results import MEANINGFUL_DIGITS, fmt_value
    from ...batchtime import ContextAware
    from ...region.capacity import fixed_prompt
    from ...validate.roofline import ERROR_NOTE
    from ...region.verdict import basis_band, basis_words, point_verdict

    if args.engines != 1:
        raise CliError(f"--engines={args.engines}: the region is per engine (use 1)")
    point = _point(args.point) if args.point is not None else None
    reject_ignored(f"--rate {args.rate}", point is not None and args.rate is not None,
                   "with --point: the rate places the workload's operating point (rate x m_p, rate x m_d), "
                   "--point another; give one of them (--prompt/--output without --rate still give lambda*)")
    for opt, v in (("--rays", args.rays), ("--seed", args.seed)):
        reject_ignored(f"{opt} {v}", v is not None and not args.simulate, "without --simulate (nothing is simulated)")
    if args.plot is not None:
        args.plot = output_file("--plot", args.plot, inputs=[("--trace", args.trace)])
    engine, note = engine_for_command(args)
    workload, point_computed = None, False
    if args.prompt is not None or args.output is not None or args.trace is not None or args.rate is not None:
        # a trace keeps its own rate (its arrivals); the lengths alone take a placeholder rate
        workload = workload_from_args(args, default_rate=None if args.trace is not None else 1.0)
        # the operating point at --rate, or at a trace's own rate (as check and simulate read it)
        if point is None and (args.rate is not None or args.trace is not None):
            point_computed = True
            point = (workload.arrival_rate_per_s * workload.mean_prompt_tokens,
                     workload.arrival_rate_per_s * workload.mean_output_tokens)
    pols = _policies(args.policies) if args.policies else []
    if pols:  # every scheduler's region is probed with up to b_max + 2 queued requests: refused before any work
        from ...region.policy import MAX_PROBE_TOKENS, PROBE_WHY

        size = max(engine.b_max, engine.k_max or 0)
        if size > MAX_PROBE_TOKENS or size * len(pols) > 2 * MAX_PROBE_TOKENS:
            raise ParameterError("--b-max", engine.b_max, f"a budget of at most {MAX_PROBE_TOKENS:,} tokens for one "
                                 f"--policies region and {2 * MAX_PROBE_TOKENS:,} over all of them",
                                 f"{PROBE_WHY}; {len(pols)} policies x {size:,} tokens")
    if args.simulate:  # validate before any work or progress line (stderr stays one line on error)
        if not pols:
            raise CliError("--simulate needs --policies")
        args.rays = 7 if args.rays is None else args.rays
        args.seed = 0 if args.seed is None else args.seed
        from ...region.simulated import check_rays

        check_rays(args.rays, len(pols), name="--rays", policies_name="--policies")
        if args.seed < 0:
            raise ParameterError("--seed", args.seed, "a non-negative integer")
    # prompts of one fixed length: a request brings at most that many prefill tokens to a batch, the
    # same region ``max_throughput`` (fluidq capacity) uses, so both give the same lambda*
    prompt = fixed_prompt(workload) if workload is not None else None
    # a context-aware batch time (the --gpu roofline, a context-aware --profile) is taken at the workload's
    # mean decode context, as `fluidq capacity` and the report take it (so lambda* agrees with them)
    kv = None
    if workload is not None and isinstance(engine.batch_time, ContextAware):
        from ...capacity import mean_decode_context

        kv = mean_decode_context(engine, workload)
    region = stability_region(engine, prompt_tokens=prompt, kv_tokens=kv)
    others = {}
    for pol in pols:
        pr = policy_region(engine, pol, prompt_tokens=prompt)
        others[pr.label] = pr
    mix = region_mix(region, point) if point is not None else None
    result = {"region": region.to_dict()}
    if fit_json(args) is not None:
        result["fit"] = fit_json(args)
    if note:
        result["roofline"] = note
    if args.gpu is not None:
        result["max_model_len"] = getattr(args, "max_model_len_info", None)
    if isinstance(engine.batch_time, ContextAware):
        result["kv_tokens_per_batch"] = 0.0 if kv is None else float(kv)
    lines = [f"engine          {engine_text(engine)}, b_max={engine.b_max}, "
             f"k_max={engine.k_max if engine.k_max else 'none'}",
             *fit_lines(args), *([f"estimate        {ERROR_NOTE}"] if note else []), *max_model_len_line(args),
             f"Theorem 2       {fmt_value(region.capacity_tokens_per_s, digits=MEANINGFUL_DIGITS)} tokens/s (x + y <= this without k_max)",
             f"candidates      {region.candidate_shapes} batch shapes enumerated",
             *([f"context         t(b, kv) taken at kv = 0, no cached context read (the decode rates are then upper "
                "bounds): give the workload (--prompt/--output or --trace) to take it at its mean decode context"]
               if kv is None and isinstance(engine.batch_time, ContextAware) else
               [f"context         t(b, kv) taken at the workload's mean decode context, {kv:,.0f} KV tokens per "
                "batch"] if kv is not None else []),
             "", region.table()]
    if workload is not None:
        from ...capacity import request_work

        mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
        # the ray of the token work a request brings (m_d - 1 decode tokens when the prefill emits the first
        # token, as vLLM's engine and the --gpu roofline engine): the lambda* of max_throughput and check
        lam = region.max_request_rate(*request_work(engine, workload))
        result["workload"] = {"m_p": mp, "m_d": md, "max_request_rate_per_s": lam}
        lines += ["", f"workload        m_p={fmt_tokens(mp)}, m_d={fmt_tokens(md)}: lambda* = {fmt_value(lam, digits=MEANINGFUL_DIGITS)} req/s "
                  f"(the ray of a request's batch work, {'(lambda m_p, lambda (m_d - 1)): its prefill emits the first token' if engine.prefill_emits_token else '(lambda m_p, lambda m_d)'}, leaves the region there)"]
    lb = band = None
    if workload is not None:  # the lambda* of `fluidq check --load` (where the KV cache binds, under its rules)
        from ...dtmc.load_basis import load_basis

        lb = load_basis(engine, workload)
        band = basis_band(lb, lam)
        result["workload"].update({k: v for k, v in lb.to_dict().items() if k != "load_basis_reason"})
        if band is not None:
            lines[-1] += (f"; `fluidq check --load` reads {fmt_value(lb.requests_per_s, digits=MEANINGFUL_DIGITS)} "
                          f"req/s ({basis_words(lb)}), which the vertices leave out")
    if engine.kv_capacity_tokens is not None:  # what the vertices assume about memory (issues 16, 20)
        kvr = None
        if workload is not None:  # the capacity under the cache's rules, where it binds (None where it does not)
            kvr = lb.capacity if lb.basis == "kv_rules" else None
            result["workload"]["kv_rules_requests_per_s"] = None if kvr is None else kvr.requests_per_s
        lines += ["", *_memory_lines(engine, workload, kvr)]
    if mix is not None:
        mg = region.margin(point)
        result["point"] = {"tokens_per_s": list(point), "margin": mg.to_dict(), "mix": mix.to_dict()}
        scale = fmt_value(mg.scale, digits=MEANINGFUL_DIGITS) if math.isfinite(mg.scale) else "– (the origin: any multiple of it fits)"
        shown = ((lambda x: fmt_value(x, digits=MEANINGFUL_DIGITS)) if point_computed else given_number)
        shapes = (f"load {_num(mg.load, 4)}, scale {scale}, distance {_distance(mg.distance_tokens_per_s, point)} "
                  "tokens/s")
        verdict = _where(mg.scale)
        if band is not None and verdict != "OUTSIDE":  # the vertices leave out what the load basis counts
            pv = point_verdict(point, workload, lb, band, mg.scale)
            verdict = pv["verdict"]
            result["point"]["load_basis"] = {**lb.to_dict(), **{k: pv[k] for k in pv if k != "verdict"}}
            v = (lambda x: fmt_value(x, digits=MEANINGFUL_DIGITS))
            said = (f"{verdict} on the load basis of `fluidq check`, load {_num(pv['load'], 4)}: "
                    f"{v(pv['request_rate_per_s'])} req/s of these requests against the {v(lb.requests_per_s)} req/s "
                    f"of the load basis ({basis_words(lb)})" + (", which binds" if pv["binds"] else "")
                    + f" (a fluid estimate: between {band[0]:g} and {band[1]:g} times it fluidq has no verdict, as "
                    f"`fluidq check`); the batch shapes alone: {_where(mg.scale)}, " + shapes)
        else:
            said = f"{verdict}, " + shapes
            if engine.kv_capacity_tokens is not None and workload is None and verdict != "OUTSIDE":
                said = (f"{verdict} (of the batch shapes, which leave out the KV cache: give --prompt/--output for "
                        "the verdict under its rules), " + shapes)
        result["point"]["verdict"] = verdict
        lines += ["", f"point           ({shown(point[0])}, {shown(point[1])}) tokens/s"
                  + (f" (lambda = {fmt_value(workload.arrival_rate_per_s, digits=MEANINGFUL_DIGITS)} req/s"
                     + (", the trace's own rate" if args.rate is None else "") + ")" if point_computed else "")
                  + ": " + said,
                  f"mix             {counted(mix.reason)}", mix.table()]
        if mix.feasible:
            lines.append("                (a scheduler serving this point time-shares these batch shapes in these "
                         "proportions: the region-aware policy of the Python API, RegionAware; none of the CLI's "
                         "--policy schedulers does)")
    if others:
        result["policies"] = {k: v.to_dict() for k, v in others.items()}
        lines += ["", "scheduler regions (batches formed under backlog; fluid argument):"]
        for lab, pr in others.items():
            txt = f"  {lab:<22} area {pr.area / region.area:6.1%} of the engine's"
            if point is not None:
                s = pr.scale_of(point)
                txt += f", point {_where(s).lower()} (scale {_num(s, 4) if math.isfinite(s) else '– (the origin)'})"
            lines.append(txt)
    sims = {}
    if args.simulate:
        import sys

        from ...region.simulated import simulated_region

        lines += ["", "simulated thresholds along rays (fraction of the engine region's boundary):"]
        for pol in pols:
            print(f"simulating {getattr(pol, 'name', pol)} ...", file=sys.stderr)
            sr = simulated_region(engine, pol, n_rays=args.rays, rng=args.seed)
            lab = f"{sr.label}-{min(getattr(pol, 'b_max', None) or engine.b_max, engine.b_max)}"
            sims[lab] = sr
            fr = ", ".join(f"({mp},{md}): {1 / s:.3f}" for (mp, md), s in zip(sr.request_shapes, sr.engine_scale))
            lines.append(f"  {lab:<22} {fr}")
        result["simulated"] = {k: v.to_dict() for k, v in sims.items()}
    if args.plot:
        path = write_late(args, "--plot", args.plot, lambda: region.plot(
            path=args.plot, point=point, mix=mix, others=others or None, simulated=sims or None))
        result["plot"] = path
        if path:
            lines += ["", f"plot            {path}"]
    emit(args, result, "\n".join(lines))
