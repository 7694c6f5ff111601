"""``fluidq capacity``: the maximum throughput of a deployment (Theorem 2)."""
from __future__ import annotations

from ...capacity import max_throughput
from .. import emit
from ..common import add_engine_args, add_workload_args, engine_from_args, workload_from_args


def register(sub):
    p = sub.add_parser("capacity", help="maximum throughput of one or more engines",
                       description="Maximum tokens/s (and requests/s for a workload's mean lengths): "
                       "sup_{b<=b_max} b/t(b), Theorem 2 of arXiv:2504.07347.")
    add_engine_args(p, multi_engine=True)
    add_workload_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args):
    engine = engine_from_args(args)
    workload = None
    if args.prompt is not None or args.output is not None or args.trace is not None:
        workload = workload_from_args(args, default_rate=1.0)
    res = max_throughput(engine, workload, n_engines=args.engines)
    lines = [f"engine          {engine.name}: {engine.batch_time.describe()}, b_max={engine.b_max}"
             + (f", k_max={engine.k_max}" if engine.k_max else ""),
             f"engines         {args.engines}",
             f"batch tokens    {res.batch_tokens}",
             f"capacity        {res.tokens_per_s:,.3f} tokens/s  ({res.tokens_per_s / 1e3:.6f} tokens/ms)"]
    if res.requests_per_s is not None:
        lines.append(f"requests        {res.requests_per_s:.4f} req/s for m_p+m_d = {workload.mean_tokens:g} tokens"
                     f"  (lambda* = {res.requests_per_s / 1e3:.7f} req/ms)")
    lines.append(f"why             {res.reason}")
    emit(args, res, "\n".join(lines))
