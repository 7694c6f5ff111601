"""Verdict per scheduler at a few loads (fractions of the report's reference capacity)."""
from __future__ import annotations

from ...stability import check_stability
from .. import Section

LOADS = (0.5, 0.8, 0.95, 1.0, 1.1)


def render(ctx):
    from ...plotting import plot_verdicts

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    grid = {name: [check_stability(e, w.with_rate(ref.rate(x)), pol) for x in LOADS]
            for name, pol in ref.policies.items()}
    ctx.results["verdicts"] = grid
    head = "| scheduler | " + " | ".join(f"load {x:g}" for x in LOADS) + " |"
    sep = "|---" * (len(LOADS) + 1) + "|"
    rows = [f"| {p} | " + " | ".join(r.status.value for r in rs) + " |" for p, rs in grid.items()]
    i08 = LOADS.index(0.8)
    notes = [f"- **{p}**: {rs[i08].reason}" for p, rs in grid.items()]
    # the paper's literal FasterTransformer / vLLM, for comparison only (the table above is not this)
    literal = []
    if ref.long_prompt_fraction:
        for name, pol in ref.policies.items():
            if pol.chunk_long_prompts:
                r = check_stability(e, w.with_rate(ref.rate(0.8)), pol.with_(chunk_long_prompts=False))
                literal.append((name, r.status.value))
    intro = (f"Loads are fractions of the reference capacity `lambda* = {ref.requests_per_s:.3f} req/s`; the "
             f"workload's own rate is load {ref.offered_load:.3f}. {ref.policy_short} `unknown` means the theory "
             "gives no verdict for that scheduler below capacity: the simulation section shows what it does.")
    md = [intro, "", head, sep, *rows, "", "At load 0.8:", "", *notes]
    if literal:
        why = (" -- a prompt longer than `b_max` is never scheduled, so it waits forever at any rate"
               if all(v == "unstable" for _, v in literal) else "")
        md += ["", ("For comparison only, the paper's literal schedulers that never split a prompt "
                    f"(`chunk_long_prompts=False`) at load 0.8: {', '.join(f'`{n}` {v}' for n, v in literal)}"
                    f"{why}.")]
    fig = plot_verdicts(grid, LOADS, reference_rate_per_s=ref.requests_per_s,
                        title="FasterTransformer and vLLM with chunk_long_prompts=True", path=ctx.figure("verdicts"))
    return Section("Stability verdict per scheduler", "\n".join(md), [fig],
                   {"reference": ref.to_dict(), **{p: [r.status.value for r in rs] for p, rs in grid.items()}})
