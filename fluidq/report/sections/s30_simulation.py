"""Simulated queue trajectories of the five engine schedulers at the report's workload."""
from __future__ import annotations

from .. import Section

POLICIES = ("sarathi", "orca", "vllm-chunked", "vllm", "fastertransformer")
SEED = 30


def _window(wl, horizon, cap_tokens_per_s):
    """Arrivals, rate and effective load of the first ``horizon`` seconds of ``wl`` (a replay is deterministic)."""
    import numpy as np

    a, p, d = wl.sample(np.random.default_rng(SEED), horizon_s=horizon)
    tok = float(np.sum(p) + np.sum(d)) / horizon
    return {"arrivals": len(a), "requests_per_s": len(a) / horizon, "tokens_per_s": tok,
            "effective_load": tok / cap_tokens_per_s}


def render(ctx):
    from ...capacity import max_throughput
    from ...plotting.sim import plot_trajectories
    from ...policies import resolve_policy
    from ...sim import simulate
    from ...workload import Poisson, Workload

    e, w = ctx.engine, ctx.workload
    cap = max_throughput(e, w)
    load = w.token_rate_per_s / cap.tokens_per_s
    horizon = 60.0 if ctx.quick else 240.0
    cases = [("report workload", w.arrival_rate_per_s, load)]
    if load > 0.95 or load < 0.5:  # also show the schedulers where the work-conserving ones are stable
        cases.append(("rescaled to 0.8 of capacity", 0.8 * cap.requests_per_s, 0.8))
    pols = []
    for name in POLICIES:
        p = resolve_policy(name)
        if not p.chunked:  # prompts longer than b_max would otherwise wait forever
            p = p.with_(chunk_long_prompts=True)
        pols.append(p)
    figs, parts, data = [], [], {}
    is_trace = w.trace is not None
    parts.append(f"Iteration-level simulation (`fluidq.simulate`, FCFS, {horizon:g} s simulated, seed {SEED}) of "
                 f"each scheduler on the same arrivals. FasterTransformer and vanilla vLLM may split prompts "
                 f"longer than b_max = {e.b_max} here (`chunk_long_prompts=True`); without it such prompts wait "
                 "forever. Latencies are over the requests that finished; TTFT counts from arrival to the first "
                 "*decode* token (the paper's model); TTLT to the last token.")
    if is_trace:
        # Replaying a trace from its start offers what its first seconds hold, not its mean rate, so a
        # stated load would be wrong.  Run the load-scaled views with Poisson arrivals at the stated rate
        # and the trace's length distributions, and say what a replay would have offered.
        rep = {label: _window(w.with_rate(rate), horizon, cap.tokens_per_s) for label, rate, _ in cases}
        parts += ["", "**Arrivals.** The workload is a trace, but these runs do *not* replay its arrival times: "
                  "a replay starts at the trace's beginning, and the first "
                  f"{horizon:g} s of this one are not representative of its mean rate ("
                  + "; ".join(f"{label}: a replay would offer {r['arrivals']} arrivals = {r['requests_per_s']:.3g} "
                              f"req/s, effective load {r['effective_load']:.2f} instead of {ld:.2f}"
                              for (label, _, ld), r in zip(cases, rep.values()))
                  + "). Each view therefore draws **Poisson arrivals at the stated rate** with prompt and output "
                  "lengths drawn independently from the trace's empirical distributions "
                  f"(m_p = {w.mean_prompt_tokens:.1f}, m_d = {w.mean_output_tokens:.1f} tokens), so the stated "
                  "load is the load offered. `fluidq simulate --trace ...` replays the trace itself and prints the "
                  "replayed window's effective load."]
        data["replay_windows"] = rep
    for i, (label, rate, ld) in enumerate(cases):
        if is_trace:
            wl = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=w.prompt_tokens,
                          output_tokens=w.output_tokens, name=f"{w.name} (Poisson, trace lengths)")
        else:
            wl = w.with_rate(rate)
        runs = {p.name: simulate(e, wl, p, horizon_s=horizon, rng=SEED) for p in pols}
        first = next(iter(runs.values()))
        off = first.offered()
        eff = off["tokens_per_s"] / cap.tokens_per_s
        fluid = first.fluid_backlog_slope(cap.tokens_per_s)
        big = max(int(r.backlog["requests"].max()) for r in runs.values())
        small = min(max(1, int(r.backlog["requests"].max())) for r in runs.values())
        kind = "Poisson arrivals, trace lengths" if is_trace else type(wl.arrival).__name__
        fig = plot_trajectories(runs, key="requests", logy=big > 20 * small,
                                title=f"{label}: load {ld:.2f} of capacity ({rate:.3g} req/s, {kind})",
                                path=ctx.figure(f"sim_trajectories_{i}"))
        figs.append(fig)
        head = (f"**{label}** (load {ld:.2f}, {rate:.3g} req/s, {kind}; the simulated window held "
                f"{off['arrivals']} arrivals = {off['requests_per_s']:.3g} req/s, effective load {eff:.2f}):")
        parts += ["", head, "",
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
        data.setdefault("windows", {})[label] = {"rate_per_s": rate, "load": ld, "effective_load": eff,
                                                 "arrivals": off["arrivals"], "fluid_slope_tokens_per_s": fluid,
                                                 "theorem2_slope_tokens_per_s": pred}
        parts += ["", (f"Fluid prediction for a work-conserving scheduler: backlog slope {pred:,.0f} tokens/s at the "
                       f"stated rate (Theorem 2); {fluid:,.0f} tokens/s for the arrivals actually simulated (the fluid "
                       "path they drive, fitted over the same second half of the run as the table's slope). A flat "
                       "trajectory is bounded within the horizon; `fluidq simulate --replications` gives the slope "
                       "with a confidence interval and a verdict.")]
    ctx.results["simulation"] = data
    return Section("Simulated queue trajectories", "\n".join(parts), figs, data)
