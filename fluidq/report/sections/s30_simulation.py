"""Simulated queue trajectories of the five engine schedulers at the report's workload."""
from __future__ import annotations

from .. import Section

POLICIES = ("sarathi", "orca", "vllm-chunked", "vllm", "fastertransformer")


def render(ctx):
    from ...capacity import max_throughput
    from ...plotting.sim import plot_trajectories
    from ...policies import resolve_policy
    from ...sim import simulate

    e, w = ctx.engine, ctx.workload
    cap = max_throughput(e, w)
    load = w.token_rate_per_s / cap.tokens_per_s
    horizon = 60.0 if ctx.quick else 240.0
    cases = [("report workload", w, load)]
    if load > 0.95 or load < 0.5:  # also show the schedulers where the work-conserving ones are stable
        cases.append(("rescaled to 0.8 of capacity", w.with_rate(0.8 * cap.requests_per_s), 0.8))
    pols = []
    for name in POLICIES:
        p = resolve_policy(name)
        if not p.chunked:  # prompts longer than b_max would otherwise wait forever
            p = p.with_(chunk_long_prompts=True)
        pols.append(p)
    figs, parts, data = [], [], {}
    parts.append(f"Iteration-level simulation (`fluidq.simulate`, FCFS, {horizon:g} s simulated, seed 30) of "
                 f"each scheduler on the same arrivals. FasterTransformer and vanilla vLLM may split prompts "
                 f"longer than b_max = {e.b_max} here (`chunk_long_prompts=True`); without it such prompts wait "
                 "forever. Latencies are over the requests that finished; TTFT counts from arrival to the first *decode* token "
                 "(the paper's model); TTLT to the "
                 "last token.")
    for i, (label, wl, ld) in enumerate(cases):
        runs = {p.name: simulate(e, wl, p, horizon_s=horizon, rng=30) for p in pols}
        big = max(int(r.backlog["requests"].max()) for r in runs.values())
        small = min(max(1, int(r.backlog["requests"].max())) for r in runs.values())
        fig = plot_trajectories(runs, key="requests", logy=big > 20 * small,
                                title=f"{label}: load {ld:.2f} of capacity ({wl.arrival_rate_per_s:.3g} req/s)",
                                path=ctx.figure(f"sim_trajectories_{i}"))
        figs.append(fig)
        parts += ["", f"**{label}** (load {ld:.2f}, {wl.arrival_rate_per_s:.3g} req/s):", "",
                  ("| scheduler | finished | in system at end | token slope [tok/s] | TTFT p50 [s] | TTFT p99 [s] "
                  "| TTLT p50 [s] | TTLT p99 [s] | mixed batches |"), "|---|---|---|---|---|---|---|---|---|"]
        rows = {}
        for name, r in runs.items():
            s = r.summary()
            rows[name] = s
            parts.append(f"| {name} | {s['finished']} | {s['final_requests_in_system']} | "
                         f"{s['token_backlog_slope_per_s']:,.0f} | {s['ttft_s_p50']:.2f} | {s['ttft_s_p99']:.2f} | "
                         f"{s['ttlt_s_p50']:.2f} | {s['ttlt_s_p99']:.2f} | {s['mixed_batch_fraction']:.2f} |")
        data[label] = rows
        pred = max(0.0, wl.token_rate_per_s - cap.tokens_per_s)
        parts += ["", (f"Fluid prediction for a work-conserving scheduler: backlog slope {pred:,.0f} tokens/s "
                      "(Theorem 2). A flat trajectory is bounded within the horizon; `fluidq simulate --replications` "
                      "gives the slope with a confidence interval and a verdict.")]
    ctx.results["simulation"] = data
    return Section("Simulated queue trajectories", "\n".join(parts), figs, data)
