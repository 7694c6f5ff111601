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
    from ...capacity import offered_tokens_per_s
    from ...plotting.sim import plot_trajectories
    from ...sim import simulate
    from .s20_verdicts import verdict_workload
    from ...results import fmt_value, is_defined
    from ..reference import OWN_LOAD_SHOWN_MAX, fmt4

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    cap = ref.capacity
    # the fluid prediction's capacity: the basis the loads are fractions of, as `fluidq simulate` reads it (the KV
    # rules or the flow balance where the load basis is one of them; Theorem 2's full batches only where it is
    # max_throughput) -- max_throughput's mean-footprint batch where the cache binds called a load above capacity
    # bounded (prediction 0)
    if ref.basis_name == "max_throughput":
        full, full_words = cap.work_conserving_tokens_per_s or cap.tokens_per_s, "Theorem 2"
    else:
        full, full_words = ref.tokens_per_s, f"the load basis, {fmt4(ref.tokens_per_s)} tokens/s: {ref.basis_words}"
    pred_basis = ref.basis_name  # the JSON's prediction_basis: one of fluidq.dtmc.load_basis.BASES
    load = ref.offered_load
    horizon = 60.0 if ctx.quick else 240.0
    # the operating point (one of the deployment's engines) and the load above capacity (one engine fewer);
    # the workload's own rate too when one engine serves it all and it coincides with neither
    LOW, HIGH = ref.low, ref.high
    above = "one engine fewer" if ref.high_is_fewer else "above capacity"
    cases = [(f"operating point: one of {ref.n_engines} engine{'s' if ref.n_engines > 1 else ''}, load {fmt4(LOW)}", ref.rate(LOW), LOW, True),
             (f"{above}: load {fmt4(HIGH)}", ref.rate(HIGH), HIGH, True)]
    if ref.n_engines == 1 and min(abs(load - LOW), abs(load - HIGH)) > 0.02:
        cases.append(("report workload", w.arrival_rate_per_s, load, load <= OWN_LOAD_SHOWN_MAX))
    pols = [ref.policies[n] for n in POLICIES]
    figs, parts, data = [], [], {}
    is_trace = w.trace is not None
    far = load > OWN_LOAD_SHOWN_MAX
    parts.append(f"The verdicts above are theorems, or seeded simulations where the theory said unknown (marked "
                 f"*(sim)*); this section checks them by iteration-level "
                 f"simulation (`fluidq.simulate`, FCFS, {horizon:g} s simulated, seed {SEED}) of "
                 f"each scheduler on the same arrivals, at the operating point load {fmt4(LOW)} and at load "
                 f"{fmt4(HIGH)} ({above}) of the reference `lambda* = {fmt4(ref.requests_per_s)} req/s`"
                 + (f", and at the workload's own rate (load {fmt4(load)})" if cases[-1][0] == "report workload" else "")
                 + ("; the workload's own rate is far beyond one engine's capacity, so that case is a table only "
                    "(every backlog grows)" if far else "")
                 + f". {ref.policy_short} Latencies are over the requests that finished (\u2013: no request "
                 "finished); TTFT counts from arrival to the first *decode* token (the paper's model); TTLT to the "
                 "last token.")
    if is_trace:
        # Replaying a trace from its start offers what its first seconds hold, not its mean rate, so a
        # stated load would be wrong.  Run the load-scaled views with Poisson arrivals at the stated rate
        # and the trace's length distributions, and say what a replay would have offered.
        rep = {label: _window(w.with_rate(rate), horizon, ref.tokens_per_s) for label, rate, _, _ in cases}
        parts += ["", "**Arrivals.** The workload is a trace, but these runs do *not* replay its arrival times: "
                  "a replay starts at the trace's beginning, and the first "
                  f"{horizon:g} s of this one are not representative of its mean rate ("
                  + "; ".join(f"{label}: a replay would offer {r['arrivals']} arrivals = {fmt4(r['requests_per_s'])} "
                              f"req/s, effective load {fmt4(r['effective_load'])} instead of {fmt4(ld)}"
                              for (label, _, ld, _), r in zip(cases, rep.values()))
                  + "). Each view therefore draws **Poisson arrivals at the stated rate** with prompt and output "
                  "lengths drawn independently from the trace's empirical distributions "
                  f"(m_p = {fmt4(w.mean_prompt_tokens)}, m_d = {fmt4(w.mean_output_tokens)} tokens), so the stated "
                  "load is the load offered. `fluidq simulate --trace ...` replays the trace itself and prints the "
                  "replayed window's effective load."]
        data["replay_windows"] = rep
    for i, (label, rate, ld, drawn) in enumerate(cases):
        wl = verdict_workload(w, rate)  # a trace: Poisson arrivals at the rate, the trace's lengths
        runs = {p.name: simulate(e, wl, p, horizon_s=horizon, rng=SEED) for p in pols}
        first = next(iter(runs.values()))
        off = first.offered()
        eff = off["tokens_per_s"] / ref.tokens_per_s  # of the report's lambda* (the load basis)
        fluid = first.fluid_backlog_slope(full)
        big = max(int(r.backlog["requests"].max()) for r in runs.values())
        small = min(max(1, int(r.backlog["requests"].max())) for r in runs.values())
        kind = "Poisson arrivals, trace lengths" if is_trace else type(wl.arrival).__name__
        if drawn:
            title = f"load {fmt4(ld)} of lambda* = {fmt4(ref.requests_per_s)} req/s ({fmt4(rate)} req/s)"
            figs.append(plot_trajectories(runs, key="requests", logy=big > 20 * small, title=title,
                                          path=ctx.figure(f"sim_trajectories_{i}")))
        head = (f"**{label}** ({fmt4(rate)} req/s, {kind}; the simulated window held "
                f"{off['arrivals']} arrivals = {fmt4(off['requests_per_s'])} req/s, effective load "
                f"{fmt4(eff)}):")
        parts += ["", head, "",
                  ("| scheduler | finished | in system at end | token slope [tok/s] | TTFT p50 [s] | TTFT p99 [s] "
                   "| TTLT p50 [s] | TTLT p99 [s] | mixed batches |"), "|---|---|---|---|---|---|---|---|---|"]
        rows = {}
        for name, r in runs.items():
            s = r.summary()
            rows[name] = s
            parts.append(f"| {name} | {s['finished']} | {s['final_requests_in_system']} | "
                         f"{fmt4(s['token_backlog_slope_per_s'])} | {fmt4(s['ttft_s_p50'])} | {fmt4(s['ttft_s_p99'])} | "
                         f"{fmt4(s['ttlt_s_p50'])} | {fmt4(s['ttlt_s_p99'])} | "
                         f"{fmt4(s['mixed_batch_fraction'])} |")
        data[label] = rows
        pred = max(0.0, offered_tokens_per_s(e, wl) - full)
        # predicted_growth_tokens_per_s: max(0, offered - prediction_capacity_tokens_per_s), the capacity of
        # prediction_basis; its old name theorem2_slope_tokens_per_s (Theorem 2's only on the max_throughput basis)
        # stays one release as an alias of the same number (docs/how-to/report.md)
        data.setdefault("windows", {})[label] = {"rate_per_s": rate, "load": ld, "effective_load": eff,
                                                 "arrivals": off["arrivals"], "fluid_slope_tokens_per_s": fluid,
                                                 "predicted_growth_tokens_per_s": pred,
                                                 "prediction_basis": pred_basis,
                                                 "prediction_capacity_tokens_per_s": full,
                                                 "theorem2_slope_tokens_per_s": pred}
        if is_defined(eff) and (eff - 1) * (ld - 1) < 0:
            longer = " (the full report simulates 240 s)" if ctx.quick else ""
            parts += ["", (f"*Note:* the simulated window's effective load {fmt4(eff)} lies on the other side of "
                           f"capacity than the stated load {fmt4(ld)} (sampling noise of a {horizon:g} s window of "
                           f"random lengths); the trend at the stated load needs a longer horizon{longer}.")]
        parts += ["", (f"Fluid prediction for a work-conserving scheduler: backlog slope {fmt4(pred)} tokens/s at the "
                       f"stated rate ({full_words}); {fmt4(fluid)} tokens/s for the arrivals actually simulated (the fluid "
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
