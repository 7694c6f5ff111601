"""Capacity of the deployment and the workload's operating point."""
from __future__ import annotations

import numpy as np

from .. import Section


def render(ctx):
    from ...plotting import plot_batch_time, plot_capacity_vs_bmax

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    cap = ref.capacity
    ctx.results["capacity"] = cap
    rho = ref.offered_load
    f1 = plot_batch_time(e.batch_time, b_max=e.b_max, path=ctx.figure("batch_time"))
    f2 = plot_capacity_vs_bmax(e, w, path=ctx.figure("capacity_vs_bmax"))
    over = ("" if rho <= 1 else f" One engine cannot serve it: it needs at least {int(np.ceil(rho - 1e-9))} such "
            "engines (`fluidq network`); the sections below therefore also look at loads just below and above "
            "one engine's capacity.")
    md = f"""
| quantity | value |
|---|---|
| batch-time model | `{e.batch_time.describe()}` |
| token budget `b_max` | {e.b_max} |
| batch-size limit `k_max` | {e.k_max if e.k_max else "none"} |
| capacity | {cap.tokens_per_s:,.1f} tokens/s at batches of {cap.batch_tokens} tokens |
| workload | {w.name}: `m_p` = {w.mean_prompt_tokens:.1f}, `m_d` = {w.mean_output_tokens:.1f} tokens |
| maximum request rate `lambda*` (the report's reference capacity) | {cap.requests_per_s:.3f} req/s |
| offered rate | {w.arrival_rate_per_s:.3f} req/s = load {rho:.3f} of `lambda*` |

{cap.reason}.

Load {rho:.3f} of `lambda*`.{over}
"""
    return Section("Capacity", md, [f1, f2], {**cap.to_dict(), "reference": ref.to_dict()})
