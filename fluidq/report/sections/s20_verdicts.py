"""Verdict per scheduler at a few loads."""
from __future__ import annotations

from ...capacity import max_throughput
from ...policies import POLICY_NAMES
from ...stability import check_stability
from .. import Section

LOADS = (0.5, 0.8, 0.95, 1.0, 1.1)


def render(ctx):
    from ...plotting import plot_verdicts

    e, w = ctx.engine, ctx.workload
    lam = max_throughput(e, w).requests_per_s
    grid = {p: [check_stability(e, w.with_rate(x * lam), p) for x in LOADS] for p in POLICY_NAMES}
    ctx.results["verdicts"] = grid
    head = "| scheduler | " + " | ".join(f"load {x:g}" for x in LOADS) + " |"
    sep = "|---" * (len(LOADS) + 1) + "|"
    rows = [f"| {p} | " + " | ".join(r.status.value for r in rs) + " |" for p, rs in grid.items()]
    notes = [f"- **{p}**: {rs[1].reason}" for p, rs in grid.items()]
    fig = plot_verdicts(grid, LOADS, path=ctx.figure("verdicts"))
    md = "\n".join([head, sep, *rows, "", "At load 0.8:", "", *notes])
    return Section("Stability verdict per scheduler", md, [fig],
                   {p: [r.status.value for r in rs] for p, rs in grid.items()})
