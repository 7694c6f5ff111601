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
    from ...plotting.sim import plot_trajectories
    from ...sim import simulate
    from ...workload import Poisson, Workload
    from ...results import fmt_value, is_defined
    from ..reference import HIGH, LOW, OWN_LOAD_SHOWN_MAX, fmt_num

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    cap = ref.capacity
    load = ref.offered_load
    horizon = 60.0 if ctx.quick else 240.0
    # one load below and one above capacity, whatever the workload offers; its own rate too, unless it
    # coincides with one of them (its trajectory is drawn only when it is not far beyond capacity)
    cases = [(f"rescaled to {LOW:g} of capacity", ref.rate(LOW), LOW, True),
             (f"rescaled to {HIGH:g} of capacity", ref.rate(HIGH), HIGH, True)]
    if min(abs(load - LOW), abs(load - HIGH)) > 0.02:
        cases.append(("report workload", w.arrival_rate_per_s, load, load <= OWN_LOAD_SHOWN_MAX))
    pols = [ref.policies[n] for n in POLICIES]
    figs, parts, data = [], [], {}
    is_trace = w.trace is not None
    far = load > OWN_LOAD_SHOWN_MAX
    parts.append(f"Iteration-level simulation (`fluidq.simulate`, FCFS, {horizon:g} s simulated, seed {SEED}) of "
                 f"each scheduler on the same arrivals, at load {LOW:g} (below capacity) and {HIGH:g} (above) of "
                 f"the reference `lambda* = {ref.requests_per_s:.3f} req/s`"
                 + (f", and at the workload's own rate (load {load:.2f})" if cases[-1][0] == "report workload" else "")
                 + ("; the workload's own rate is far beyond one engine's capacity, so that case is a table only "
                    "(every backlog grows)" if far else "")
                 + f". {ref.policy_short} Latencies are over the requests that finished (\u2013: no request "
                 "finished); TTFT counts from arrival to the first *decode* token (the paper's model); TTLT to the "
                 "last token.")
    if is_trace:
        # Replaying a trace from its start offers what its first seconds hold, not its mean rate, so a
        # stated load would be wrong.  Run the load-scaled views with Poisson arrivals at the stated rate
        # and the trace's length distributions, and say what a replay would have offered.
        rep = {label: _window(w.with_rate(rate), horizon, cap.tokens_per_s) for label, rate, _, _ in cases}
        parts += ["", "**Arrivals.** The workload is a trace, but these runs do *not* replay its arrival times: "
                  "a replay starts at the trace's beginning, and the first "
                  f"{horizon:g} s of this one are not representative of its mean rate ("
                  + "; ".join(f"{label}: a replay would offer {r['arrivals']} arrivals = {r['requests_per_s']:.3g} "
                              f"req/s, effective load {r['effective_load']:.2f} instead of {ld:.2f}"
                              for (label, _, ld, _), r in zip(cases, rep.values()))
                  + "). Each view therefore draws **Poisson arrivals at the stated rate** with prompt and output "
                  "lengths drawn independently from the trace's empirical distributions "
                  f"(m_p = {w.mean_prompt_tokens:.1f}, m_d = {w.mean_output_tokens:.1f} tokens), so the stated "
                  "load is the load offered. `fluidq simulate --trace ...` replays the trace itself and prints the "
                  "replayed window's effective load."]
        data["replay_windows"] = rep
    for i, (label, rate, ld, drawn) in enumerate(cases):
        if is_trace:
            wl = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=w.prompt_tokens,
                          output_tokens=w.output_tokens, name=f"{w.name} (Poisson, trace lengths)")
        else:
            wl = w.with_rate(rate)
        runs = {p.name: simulate(e, wl, p, horizon_s=horizon, rng=SEED) for p in pols}
        first = next(iter(runs.values()))
        off = first.offered()
        eff = off["tokens_per_s"] / cap.tokens_per_s
        fluid = first.fluid_backlog_slope(cap.work_conserving_tokens_per_s or cap.tokens_per_s)
        big = max(int(r.backlog["requests"].max()) for r in runs.values())
        small = min(max(1, int(r.backlog["requests"].max())) for r in runs.values())
        kind = "Poisson arrivals, trace lengths" if is_trace else type(wl.arrival).__name__
        if drawn:
            title = f"load {ld:.2f} of lambda* = {ref.requests_per_s:.3g} req/s ({rate:.3g} req/s)"
            figs.append(plot_trajectories(runs, key="requests", logy=big > 20 * small, title=title,
                                          path=ctx.figure(f"sim_trajectories_{i}")))
        head = (f"**{label}** (load {ld:.2f}, {rate:.3g} req/s, {kind}; the simulated window held "
                f"{off['arrivals']} arrivals = {fmt_value(off['requests_per_s'], '.3g')} req/s, effective load "
                f"{fmt_value(eff, '.2f')}):")
        parts += ["", head, "",
                  ("| scheduler | finished | in system at end | token slope [tok/s] | TTFT p50 [s] | TTFT p99 [s] "
                   "| TTLT p50 [s] | TTLT p99 [s] | mixed batches |"), "|---|---|---|---|---|---|---|---|---|"]
        rows = {}
        for name, r in runs.items():
            s = r.summary()
            rows[name] = s
            parts.append(f"| {name} | {s['finished']} | {s['final_requests_in_system']} | "
                         f"{fmt_value(s['token_backlog_slope_per_s'], ',.0f')} | {fmt_num(s['ttft_s_p50'])} | {fmt_num(s['ttft_s_p99'])} | "
                         f"{fmt_num(s['ttlt_s_p50'])} | {fmt_num(s['ttlt_s_p99'])} | "
                         f"{fmt_num(s['mixed_batch_fraction'])} |")
        data[label] = rows
        pred = max(0.0, wl.token_rate_per_s - (cap.work_conserving_tokens_per_s or cap.tokens_per_s))
        data.setdefault("windows", {})[label] = {"rate_per_s": rate, "load": ld, "effective_load": eff,
                                                 "arrivals": off["arrivals"], "fluid_slope_tokens_per_s": fluid,
                                                 "theorem2_slope_tokens_per_s": pred}
        if is_defined(eff) and (eff - 1) * (ld - 1) < 0:
            longer = " (the full report simulates 240 s)" if ctx.quick else ""
            parts += ["", (f"*Note:* the simulated window's effective load {eff:.2f} lies on the other side of "
                           f"capacity than the stated load {ld:.2f} (sampling noise of a {horizon:g} s window of "
                           f"random lengths); the trend at the stated load needs a longer horizon{longer}.")]
        parts += ["", (f"Fluid prediction for a work-conserving scheduler: backlog slope {fmt_value(pred, ',.0f')} tokens/s at the "
                       f"stated rate (Theorem 2); {fmt_value(fluid, ',.0f')} tokens/s for the arrivals actually simulated (the fluid "
                       "path they drive, fitted over the same second half of the run as the table's slope). A flat "
                       "trajectory is bounded within the horizon; `fluidq simulate --replications` gives the slope "
                       "with a confidence interval and a verdict.")]
    if any(r["finished"] == 0 for rows in (data[c[0]] for c in cases) for r in rows.values()):
        parts += ["", "\u2013 in a latency column: no request finished within the horizon."]
    if any(not is_defined(r["token_backlog_slope_per_s"]) for rows in (data[c[0]] for c in cases) for r in rows.values()):
        parts += ["", "\u2013 in the token slope column: the run is too short to fit a slope."]
    data["reference"] = ref.to_dict()
    ctx.results["simulation"] = data
    return Section("Simulated queue trajectories", "\n".join(parts), figs, data)
