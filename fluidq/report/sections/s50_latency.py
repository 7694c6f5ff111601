"""Latency of scheduling orderings at the report's workload (simulation, seconds of wall time)."""
from __future__ import annotations

from .. import Section

KEYS = ("fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost")
LOADS = (0.5, 0.8)
MAX_KV_LOAD = 0.95  # the largest load of the KV-limited engine this section simulates


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
                    "kv_capacity_tokens for a real deployment) so that admission and preemption matter.")
    else:
        e_mem = e
        mem_note = f"KV-cache capacity: {e.kv_capacity_tokens:,} tokens."
    # at least two loads, quick mode included: the latency-load plot draws lines on a log axis.  They are
    # fractions of the report's reference lambda*, like every other load in the report, as long as the
    # KV-limited engine of this section can carry them; else fractions of its own (smaller) capacity.
    loads = LOADS
    lam_kv = max_throughput(e_mem, w).requests_per_s
    own = [x * ref.requests_per_s / lam_kv for x in loads]
    on_reference = max(own) <= MAX_KV_LOAD
    horizon = 40.0 if ctx.quick else 240.0
    keys = ("fcfs", "pars", "srpt", "uniboost") if ctx.quick else KEYS
    pols = standard_policies(e_mem, w, keys=keys, tau=0.5)
    # compare_orderings takes loads as fractions of the engine's token capacity b_max/t(b_max) (memory
    # aside); the rates wanted here are fractions of lambda* or of the KV-limited capacity
    from ...capacity import full_batch_rate

    unit = full_batch_rate(e_mem.with_(kv_capacity_tokens=None), w)[0] / w.mean_tokens
    rates = [x * (ref.requests_per_s if on_reference else lam_kv) for x in loads]
    res = compare_orderings(e_mem, w, pols, loads=tuple(r / unit for r in rates), horizon_s=horizon,
                            n_replications=1, rng=50)
    ctx.results["latency"] = res
    if on_reference:
        basis = (f"Loads are fractions of the report's reference `lambda* = {ref.requests_per_s:.3f} req/s`, as in "
                 f"the other sections. With the KV-cache limit this engine's own capacity is {lam_kv:.3f} req/s "
                 f"(`fluidq.max_throughput` with `kv_capacity_tokens`), so they are "
                 + ", ".join(f"{x:.3f}" for x in own) + " of that.")
        xlabel = f"load (fraction of the reference lambda* = {ref.requests_per_s:.3g} req/s)"
    else:
        as_ref = tuple(x * lam_kv / ref.requests_per_s for x in loads)
        basis = (f"**Loads in this section are fractions of the KV-limited capacity {lam_kv:.3f} req/s**, not of "
                 f"the report's reference `lambda* = {ref.requests_per_s:.3f} req/s` (the reference loads would "
                 "overload the KV cache); as fractions of the reference they are "
                 + ", ".join(f"{x:.3f}" for x in as_ref) + ".")
        xlabel = f"load (fraction of the KV-limited capacity {lam_kv:.3g} req/s)"
    fig = plot_latency_vs_load(res, metric="latency_per_token_mean_s", x=loads, xlabel=xlabel,
                               path=ctx.figure("latency_per_token"))
    last = len(loads) - 1
    from ...results import is_defined

    # the lowest defined mean (a NaN -- no request finished -- would make min() depend on the order)
    defined = [p for p in res.policies if is_defined(res.value(p, "latency_per_token_mean_s", last))]
    best = min(defined or res.policies, key=lambda p: res.value(p, "latency_per_token_mean_s", last))
    parts = [
        f"Each ordering runs on the same sampled requests ({horizon:g} s simulated per load, one replication: "
        "indicative, see `fluidq latency --replications` for intervals). PARS uses a stand-in predictor of "
        "Kendall tau 0.5 (the traces have no prompt text; the default PARS ranker reaches about 0.45 on "
        f"held-out AlpacaEval prompts). {mem_note} {basis}", ""]
    for i, ld in enumerate(loads):
        of = "of the reference lambda*" if on_reference else "of the KV-limited capacity"
        parts += [f"**Load {ld:g}** {of} ({res.rates_per_s[i]:.3f} req/s):", "", _dash_nan(res.table(i, heading=False)), ""]
    r = res.ratio("latency_per_token_mean_s", best, "fcfs", last)  # FCFS / best, >= 1
    if not defined:
        verdict = ("undefined (\u2013): no request finished under any ordering within the horizon, so there is "
                   "no mean to compare")
    elif best == "fcfs":
        verdict = "**fcfs** itself: no ordering beats it"
    elif not is_defined(r):
        verdict = (f"**{best}**; its ratio to FCFS is undefined (\u2013: no request finished under FCFS within "
                   "the horizon)")
    elif r < 1.005:
        verdict = (f"**{best}**, but no faster than FCFS within 0.5% (FCFS / {best} = {r:.3f}): at this load the "
                   "orderings barely differ in the mean")
    else:
        verdict = f"**{best}**, {100 * (1 - 1 / r):.1f}% below FCFS (FCFS / {best} = {r:.2f})"
    parts.append(f"Lowest mean latency per token at load {loads[last]:g}: {verdict}. "
                 "Orderings change who waits, not how full the batches are: on a work-conserving former each "
                 "keeps the Theorem 2 throughput (see docs/latency.md for the 0.95-capacity check).")
    return Section("Latency of scheduling orderings", "\n".join(parts), [fig],
                   {**res.to_dict(), "reference": ref.to_dict(), "loads_basis": "reference" if on_reference else "kv"})
