"""Latency of scheduling orderings at the report's workload (simulation, seconds of wall time)."""
from __future__ import annotations

from .. import Section

KEYS = ("fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost")


def render(ctx):
    from ...latency import compare_orderings, standard_policies

    e, w = ctx.engine, ctx.workload
    if e.kv_capacity_tokens is None:
        e_mem = e.with_(kv_capacity_tokens=50_000)
        mem_note = ("The engine has no KV-cache capacity; this section assumes **50,000 KV tokens** (about what "
                    "a 34B model leaves on an 80 GB card) so that admission and preemption matter.")
    else:
        e_mem = e
        mem_note = f"KV-cache capacity: {e.kv_capacity_tokens:,} tokens."
    # at least two loads, quick mode included: the latency-load plot draws lines on a log axis
    loads = (0.5, 0.8)
    horizon = 40.0 if ctx.quick else 240.0
    keys = ("fcfs", "pars", "srpt", "uniboost") if ctx.quick else KEYS
    pols = standard_policies(e_mem, w, keys=keys, tau=0.5)
    res = compare_orderings(e_mem, w, pols, loads=loads, horizon_s=horizon, n_replications=1, rng=50)
    ctx.results["latency"] = res
    fig = res.plot(metric="latency_per_token_mean_s", path=ctx.figure("latency_per_token"))
    last = len(loads) - 1
    best = min(res.policies, key=lambda p: res.value(p, "latency_per_token_mean_s", last))
    parts = [
        f"Each ordering runs on the same sampled requests ({horizon:g} s simulated per load, one replication: "
        "indicative, see `fluidq latency --replications` for intervals). PARS uses a stand-in predictor of "
        "Kendall tau 0.5 (the traces have no prompt text; the default PARS ranker reaches about 0.45 on "
        f"held-out AlpacaEval prompts). {mem_note}", ""]
    for i, ld in enumerate(loads):
        parts += [f"**Load {ld:g}** ({res.rates_per_s[i]:.3f} req/s):", "", res.table(i), ""]
    r = res.ratio("latency_per_token_mean_s", best, "fcfs", last)  # FCFS / best, >= 1
    if best == "fcfs":
        verdict = "**fcfs** itself: no ordering beats it"
    elif r < 1.005:
        verdict = (f"**{best}**, but no faster than FCFS within 0.5% (FCFS / {best} = {r:.3f}): at this load the "
                   "orderings barely differ in the mean")
    else:
        verdict = f"**{best}**, {100 * (1 - 1 / r):.1f}% below FCFS (FCFS / {best} = {r:.2f})"
    parts.append(f"Lowest mean latency per token at load {loads[last]:g}: {verdict}. "
                 "Orderings change who waits, not how full the batches are: on a work-conserving former each "
                 "keeps the Theorem 2 throughput (see docs/latency.md for the 0.95-capacity check).")
    return Section("Latency of scheduling orderings", "\n".join(parts), [fig], res.to_dict())
