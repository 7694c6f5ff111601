"""Latency of request orderings on one engine of the deployment: at its operating point and at a busier load,
with confidence intervals over replications, which orderings separate from FCFS, and what is unfinished."""
from __future__ import annotations

from .. import Section

KEYS = ("fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost")
MAX_KV_LOAD = 0.95  # the largest load of the KV-limited engine this section simulates
BUSY = 0.92  # the busier load, a fraction of the KV-limited engine's own capacity
HORIZON_S, REPLICATIONS = 400.0, 4  # the full report's runs per load and ordering (at most HORIZON_S)
# a faster engine sees more requests per second: its horizon is cut to about this many arrivals per run
# at the busier load (never below MIN_HORIZON_S), so that the report's cost does not grow with its speed
ARRIVALS_PER_RUN, MIN_HORIZON_S = 900, 120.0


def separated(res, metric: str, i: int, baseline: str = "fcfs") -> dict:
    """Which orderings' confidence intervals of ``metric`` at load index ``i`` lie wholly below
    (``better``) or above (``worse``) the baseline's, and which overlap it (``same``)."""
    from ...results import is_defined

    v0, h0 = res.values[baseline][metric][i]
    out = {"better": [], "worse": [], "same": []}
    for p in res.policies:
        if p == baseline:
            continue
        v, h = res.values[p][metric][i]
        if not (is_defined(v) and is_defined(v0)):
            out["same"].append(p)
            continue
        h, hb = (h if is_defined(h) else float("inf")), (h0 if is_defined(h0) else float("inf"))
        if v + h < v0 - hb:
            out["better"].append(p)
        elif v - h > v0 + hb:
            out["worse"].append(p)
        else:
            out["same"].append(p)
    return out


def _dash_nan(table: str) -> str:
    """A Markdown table with ``nan`` cells shown as an en dash (nothing finished), plus a note."""
    import re

    out, n = re.subn(r"(?<=\| )nan( ± nan)?(?= \|)", "\u2013", table)
    return out + ("\n\n\u2013: no request finished." if n else "")


def render(ctx):
    from ...capacity import max_throughput
    from ...latency import compare_orderings, standard_policies
    from ...plotting.latency import plot_latency_vs_load

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    if e.kv_capacity_tokens is None:
        e_mem = e.with_(kv_capacity_tokens=50_000)
        mem_note = ("The engine has no KV-cache capacity; this section assumes **50,000 KV tokens** (an "
                    "illustrative size: about what a 34B model leaves on an 80 GB card; give the engine its own "
                    "KV-cache capacity (`--kv-capacity`, `kv_capacity_tokens` in Python) for a real deployment) so that "
                    "admission and preemption matter.")
    else:
        e_mem = e
        mem_note = f"KV-cache capacity: {e.kv_capacity_tokens:,} tokens."
    # two loads: the operating point (one engine of the deployment) and a busier one, BUSY of the
    # KV-limited engine's own capacity, where queues are long enough for the ordering to matter.  Both are
    # stated as fractions of the report's reference lambda*, like every other load in the report.
    from ...results import is_defined
    from ..reference import fmt4

    cap_kv = max_throughput(e_mem, w)
    lam_kv = cap_kv.requests_per_s
    busy = BUSY * lam_kv / ref.requests_per_s
    op = min(ref.low, MAX_KV_LOAD * lam_kv / ref.requests_per_s)
    loads = (op, busy) if busy > op * 1.02 else (0.5 * op, op)
    own = [x * ref.requests_per_s / lam_kv for x in loads]
    busiest = max(loads) * ref.requests_per_s
    horizon = 80.0 if ctx.quick else max(MIN_HORIZON_S, min(HORIZON_S, ARRIVALS_PER_RUN / busiest))
    reps = 2 if ctx.quick else REPLICATIONS
    keys = ("fcfs", "pars", "srpt", "uniboost") if ctx.quick else KEYS
    pols = standard_policies(e_mem, w, keys=keys, tau=0.5)
    # compare_orderings takes loads as fractions of its load basis (fluidq.dtmc.load_basis: here, where the
    # cache binds, the capacity under its rules); the rates wanted here are fractions of lambda*
    from ...latency import _load_rates

    unit = _load_rates(e_mem, w, ())[1]  # (compare_orderings' own unit: its load basis's lambda*)
    rates = [x * ref.requests_per_s for x in loads]
    res = compare_orderings(e_mem, w, pols, loads=tuple(r / unit for r in rates), horizon_s=horizon,
                            n_replications=reps, rng=50)
    ctx.results["latency"] = res
    clamp = (f" (the operating point {fmt4(ref.low)} is beyond {MAX_KV_LOAD:g} of this KV-limited engine, so the "
             f"first load is {fmt4(op)})" if op < ref.low else "")
    basis = (f"Loads are fractions of the report's reference `lambda* = {fmt4(ref.requests_per_s)} req/s`, as in "
             f"the other sections. With the KV-cache limit this engine's own capacity (sup of b/t(b) under the cache) "
             f"is {fmt4(lam_kv)} req/s (`fluidq capacity --kv-capacity`; `fluidq.max_throughput` in Python), so they are "
             + " and ".join(fmt4(x) for x in own) + f" of that{clamp}."
             + (f" The cache binds (full batches of about {cap_kv.kv_batch_tokens} tokens), so this is a fluid estimate, "
                f"and a work-conserving scheduler that fills its batches serves about "
                f"{fmt4(cap_kv.work_conserving_requests_per_s)} req/s by the same estimate (loads "
                + " and ".join(fmt4(x * ref.requests_per_s / cap_kv.work_conserving_requests_per_s) for x in loads)
                + " of that); `fluidq check` leaves such loads undecided (the estimate's error band), and the "
                  "simulated runs below (their finished fractions) answer it."
                if cap_kv.kv_batch_tokens is not None and cap_kv.work_conserving_requests_per_s else ""))
    xlabel = f"load (fraction of the reference lambda* = {fmt4(ref.requests_per_s)} req/s)"
    metric = "latency_per_token_mean_s"
    fig = plot_latency_vs_load(res, metric=metric, x=loads, xlabel=xlabel, logy=False,
                               path=ctx.figure("latency_per_token"))
    parts = [
        f"The sections above say which schedulers keep up; this one asks, for a stable one, which request "
        f"ordering serves users best on one engine of the deployment. Each ordering runs on the same sampled "
        f"requests: {reps} independent replications of {horizon:g} s simulated per load (the first "
        f"{100 * res.inputs.get('warmup_frac', 0.1):g} % left out as warm-up); ± is the half-width of a "
        "95 % confidence interval over the replications. PARS uses a stand-in predictor of Kendall tau 0.5 (the "
        "traces have no prompt text; the default PARS ranker reaches about 0.45 on held-out AlpacaEval prompts). "
        f"{mem_note} {basis}", ""]
    seps = {}
    for i, ld in enumerate(loads):
        what = ("the operating point" if ld == op else "busier: " + fmt4(own[i]) + " of the KV-limited capacity")
        parts += [f"**Load {fmt4(ld)}** of the reference lambda* ({fmt4(res.rates_per_s[i])} req/s; {what}):", "",
                  _dash_nan(res.table(i, heading=False, horizon_name="the horizon (`fluidq latency --horizon`)")), ""]
        sep = separated(res, metric, i)
        seps[i] = sep
        done = [res.values[p]["finished_fraction"][i][0] for p in res.policies]
        done = [f for f in done if is_defined(f)]
        unfinished = (f"{fmt4(100 * (1 - max(done)))}–{fmt4(100 * (1 - min(done)))} % of the arrivals after the "
                      "warm-up were unfinished at the horizon: still queued or running when arrivals stop, about the "
                      "mean time in system over the "
                      f"{horizon * (1 - res.inputs.get('warmup_frac', 0.1)):g} s measured window for a stable "
                      "queue (Little's law), more where a backlog builds. Their latencies are missing from the "
                      "table, so its tails are underestimated" if done else
                      "no request finished")
        if sep["better"] or sep["worse"]:
            verdict = ("the intervals separate: "
                       + "; ".join(x for x in (
                           ("below FCFS: " + ", ".join(f"**{p}**" for p in sep["better"])) if sep["better"] else "",
                           ("above FCFS: " + ", ".join(f"**{p}**" for p in sep["worse"])) if sep["worse"] else "")
                           if x)
                       + (f"; indistinguishable from FCFS: {', '.join(sep['same'])}" if sep["same"] else ""))
        else:
            verdict = ("**the orderings are indistinguishable**: every interval overlaps FCFS's, so at this load "
                       "the ordering does not matter within what these replications resolve")
        parts += [f"At load {fmt4(ld)}, mean latency per token: {verdict}. Unfinished: {unfinished}.", ""]
    last = len(loads) - 1
    defined = [p for p in res.policies if is_defined(res.value(p, metric, last))]
    best = min(defined or res.policies, key=lambda p: res.value(p, metric, last))
    r = res.ratio(metric, best, "fcfs", last)  # FCFS / best, >= 1
    if not defined:
        verdict = ("undefined (\u2013): no request finished under any ordering within the horizon, so there is "
                   "no mean to compare")
    elif best == "fcfs":
        verdict = "**fcfs** itself: no ordering beats it"
    elif not is_defined(r):
        verdict = (f"**{best}**; its ratio to FCFS is undefined (\u2013: no request finished under FCFS within "
                   "the horizon)")
    elif best not in seps[last]["better"]:
        verdict = (f"**{best}**, but its interval overlaps FCFS's (FCFS / {best} = {fmt4(r)}): not a resolved "
                   "difference")
    else:
        verdict = f"**{best}**, {fmt4(100 * (1 - 1 / r))}% below FCFS (FCFS / {best} = {fmt4(r)})"
    parts.append(f"Lowest mean latency per token at load {fmt4(loads[last])}: {verdict}. "
                 "Orderings change who waits, not how full the batches are: on a work-conserving former each "
                 "keeps the Theorem 2 throughput (see docs/latency.md for the 0.95-capacity check).")
    data_sep = {f"{loads[i]:.12g}": v for i, v in seps.items()}
    return Section("Latency of scheduling orderings", "\n".join(parts), [fig],
                   {**res.to_dict(), "reference": ref.to_dict(), "loads_basis": "reference",
                    "loads_of_reference": list(loads), "separation": data_sep})
