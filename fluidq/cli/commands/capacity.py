"""``fluidq capacity``: the maximum throughput of a deployment (Theorem 2)."""
from __future__ import annotations

from ...capacity import max_throughput
from .. import emit
from ..common import (
    add_engine_args,
    add_kv_arg,
    add_workload_args,
    engine_from_args,
    finite_positive,
    fit_json,
    fit_lines,
    kv_from_args,
    workload_from_args,
)


def register(sub):
    p = sub.add_parser("capacity", help="maximum throughput of one or more engines",
                       description="Maximum tokens/s, and requests/s for the workload's mean lengths (--prompt/"
                       "--output, default 100 each, or a --trace): sup_{b<=b_max} b/t(b), Theorem 2 of "
                       "arXiv:2504.07347. With --rate, also the offered load: rate x (m_p + m_d) / capacity.")
    add_engine_args(p, multi_engine=True, fit=True)
    add_workload_args(p)
    add_kv_arg(p, "KV-cache capacity in tokens per engine: where it binds, fewer requests decode together and the "
               "capacity is lower (default: unlimited)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _n(x) -> str:
    """A computed number for the human answer: its meaningful digits (the JSON has them all)."""
    from ...results import MEANINGFUL_DIGITS, fmt_value

    return fmt_value(x, digits=MEANINGFUL_DIGITS)


def run(args):
    finite_positive("--rate", args.rate, "a finite rate > 0 (requests per second)")
    engine = kv_from_args(args, engine_from_args(args))
    # the lengths default to 100 + 100 tokens (as --help says); without --rate or --trace the arrival
    # rate is a placeholder, left out of the JSON
    workload = workload_from_args(args, default_rate=1.0)
    if engine.kv_capacity_tokens is not None:
        from ...capacity import min_footprint_tokens

        small = min_footprint_tokens(workload)
        if small is not None and small > engine.kv_capacity_tokens:
            from ...errors import ParameterError

            raise ParameterError("--kv-capacity", engine.kv_capacity_tokens,
                                 f"at least {small} tokens: no request fits (the smallest holds {small} KV tokens, "
                                 "prompt + output, at its end)")
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
        lines.append(f"requests        {_n(res.requests_per_s)} req/s for m_p+m_d = {workload.mean_tokens:g} tokens"
                     f"  (lambda* = {_n(res.requests_per_s / 1e3)} req/ms)"
                     + (f"  ({' and '.join(o for o, v in (('--prompt', args.prompt), ('--output', args.output)) if v is None)}"
                        " 100 by default)" if defaults else ""))
    out = res.to_dict()
    if fit_json(args) is not None:
        out["fit"] = fit_json(args)
    wl = (out.get("inputs") or {}).get("workload")
    if args.rate is None and args.trace is None and isinstance(wl, dict):
        out["inputs"]["workload"] = {**wl, "arrival": None}  # no rate was given: none is reported
    if args.rate is not None:
        offered = workload.arrival_rate_per_s * workload.mean_tokens
        # no request can be served (capacity 0): the load is undefined, null in the JSON
        load = offered / res.tokens_per_s if res.tokens_per_s > 0 else None
        out["offered"] = {"rate_per_s": workload.arrival_rate_per_s, "tokens_per_s": offered, "load": load}
        load_txt = _n(load)
        lines.append(f"load            {load_txt} of capacity: {workload.arrival_rate_per_s:g} req/s x "
                     f"{workload.mean_tokens:g} tokens = {_n(offered)} tokens/s offered"
                     + (" (above 1: no scheduler keeps up)" if load is not None and load > 1 else "")
                     + (" (undefined: the capacity is 0, no request can be served)" if load is None else ""))
    lines.append(f"why             {res.reason}")
    emit(args, out, "\n".join(lines))
