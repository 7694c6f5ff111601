"""Verdict per scheduler at the report's operating point and a few loads around it (fractions of ``lambda*``)."""
from __future__ import annotations

from ...stability import check_stability
from .. import Section

LOADS = (0.5, 0.95, 1.0)  # besides the report's operating point and its load above capacity
#: wall-clock seconds the table's simulations (only where the analytic verdict is unknown) may take together
SIM_BUDGET_S = 60.0
#: seeded replications per simulated cell
REPLICATIONS = 4


def verdict_workload(w, rate):
    """The workload judged (and simulated, :mod:`.s30_simulation`) at ``rate``: ``w.with_rate(rate)``, except for
    a trace: Poisson arrivals at ``rate`` with the prompt and output lengths of the trace's empirical
    distributions.  A trace replayed from its start offers what its first seconds hold, not the stated load (the
    default's operating point 0.7532 replayed at an effective 0.489), and its seeded replications are one sample
    path each time, so they could not differ."""
    if w.trace is None:
        return w.with_rate(rate)
    from ...workload import Poisson, Workload

    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                    name=f"{w.name} (Poisson, trace lengths)")


def _cell(r) -> str:
    """A table cell: the status, marked *(sim)* when simulation decided it."""
    return f"{r.status.value} *(sim)*" if r.method == "simulation" else r.status.value


def loads_of(ref) -> tuple:
    """The loads judged: :data:`LOADS`, the operating point and the load with one engine fewer, sorted."""
    return tuple(sorted({round(x, 12) for x in (*LOADS, ref.low, ref.high)}))


def proven_stable(stable) -> str:
    """The summary's subject and verb: ``**orca, sarathi** are proven stable``, ``**orca** is ...``, and with
    none ``**no scheduler** is ...`` (it said "no scheduler are")."""
    return f"**{', '.join(stable) or 'no scheduler'}** {'are' if len(stable) > 1 else 'is'} proven stable"


def stable_words(stable, simulated) -> str:
    """Who is stable at the operating point: proven (analytic) and by simulation, never "no scheduler is proven
    stable" when simulation found some stable."""
    sim_what = f"**{', '.join(simulated)}** {'are' if len(simulated) > 1 else 'is'} stable by simulation"
    if stable and simulated:
        return f"{proven_stable(stable)} and {sim_what}"
    if simulated:
        return f"{sim_what} (none is proven stable analytically)"
    return proven_stable(stable)


def _too_long(e, w) -> str:
    """Words on a trace's requests whose prompt + output exceed the engine's KV cache (none: ``""``): they never
    finish under its rules, so the backlog grows at every load whatever lambda* is."""
    if not e.kv_capacity_tokens or w.trace is None:
        return ""
    import numpy as np

    total = np.asarray(w.trace.prompt_tokens, dtype=float) + np.asarray(w.trace.output_tokens, dtype=float)
    over = int(np.count_nonzero(total > e.kv_capacity_tokens))
    if not over:
        return ""
    return (f" {over:,} of the trace's {total.size:,} requests have a prompt + output longer than the KV cache's "
            f"{e.kv_capacity_tokens:,} tokens: they cannot finish on this engine, so its backlog grows at any load "
            "(leave them out of the trace, or give the engine a larger cache).")


def render(ctx):
    from ...plotting import plot_verdicts
    from ...results import round_numbers
    from ..reference import fmt4

    import time

    from ...stability import decide_stability

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    LOADS = loads_of(ref)
    i08 = LOADS.index(round(ref.low, 12))
    # the analytic verdict everywhere, then seeded replications where it is unknown (decide_stability), the
    # operating point first, within one wall-clock budget for the whole table (a cell left when it is spent
    # stays unknown, saying so)
    t0 = time.monotonic()
    deadline = t0 + SIM_BUDGET_S
    order = [i08] + [i for i in range(len(LOADS)) if i != i08]
    cells = {}
    for i in order:
        for name, pol in ref.policies.items():
            cells[name, i] = decide_stability(e, verdict_workload(w, ref.rate(LOADS[i])), pol, n_replications=REPLICATIONS,
                                              rng=0, deadline_s=deadline)
    took = time.monotonic() - t0
    grid = {name: [cells[name, i] for i in range(len(LOADS))] for name in ref.policies}
    ctx.results["verdicts"] = grid
    head = "| scheduler | " + " | ".join((f"**load {fmt4(x)}** (operating point)" if x == LOADS[i08] else f"load {fmt4(x)}")
                                  for x in LOADS) + " |"
    sep = "|---" * (len(LOADS) + 1) + "|"
    rows = [f"| {p} | " + " | ".join(_cell(r) for r in rs) + " |" for p, rs in grid.items()]
    notes = [f"- **{p}**: {round_numbers(rs[i08].reason)}" for p, rs in grid.items()]
    n_sim = sum(r.method == "simulation" for rs in grid.values() for r in rs)
    ran = sum(float(r.inputs.get("wall_s", 0.0)) for rs in grid.values() for r in rs)
    arrivals = (" Each column is judged at its own load: the workload is a trace, so its arrivals are **Poisson at "
                "the column's rate** with prompt and output lengths drawn from the trace's empirical distributions, "
                "as in the simulation section (a replay from the trace's start would offer another load)."
                if w.trace is not None else "")
    how = (f"Verdicts marked *(sim)* were decided by simulation ({n_sim} of {len(grid) * len(LOADS)}: the theory "
           f"said unknown there, and {REPLICATIONS} seeded replications at the automatic horizon decided by the "
           "shared growth test; a simulated `stable` is a bounded backlog over the horizon simulated, not a proof; "
           f"{ran:.1f} s of simulation, budget {SIM_BUDGET_S:g} s); the others are analytic."
           if n_sim else f"Every verdict is analytic ({ran:.1f} s of simulation tried where the theory said unknown, "
           f"budget {SIM_BUDGET_S:g} s).") + arrivals
    # the paper's literal FasterTransformer / vLLM, for comparison only (the table above is not this)
    literal = []
    if ref.long_prompt_fraction:
        for name, pol in ref.policies.items():
            if pol.chunk_long_prompts:
                r = check_stability(e, verdict_workload(w, ref.rate(ref.low)), pol.with_(chunk_long_prompts=False))
                literal.append((name, r.status.value))
    stable = [p for p, rs in grid.items() if rs[i08].status.value == "stable" and rs[i08].method != "simulation"]
    simulated = [p for p, rs in grid.items() if rs[i08].status.value == "stable" and rs[i08].method == "simulation"]
    high = LOADS.index(round(ref.high, 12))
    above = ("with one engine fewer" if ref.high_is_fewer else "above capacity")
    intro = (f"With {ref.n_engines} engine{'s' if ref.n_engines > 1 else ''} (the capacity section) each engine runs at load {fmt4(ref.low)} of "
             f"`lambda* = {fmt4(ref.requests_per_s)} req/s`"
             + (f", the workload's {fmt4(ref.offered_load)} split {ref.n_engines} ways" if ref.n_engines > 1 else "")
             + ". This section asks the theory which schedulers are stable there, and around it. "
             f"{ref.policy_short} `unknown` means the theory gives no verdict for that scheduler below capacity: "
             "simulation decides it where the budget allows (marked), and the simulation section that follows "
             "shows what it does.")
    summary = (f"At the operating point, {stable_words(stable, simulated)}; at load {fmt4(ref.high)} ({above}) "
               + ("every scheduler is unstable" if all(rs[high].status.value == "unstable" for rs in grid.values())
                  else "not every scheduler is unstable") + ".")
    # the sizing (ref.n_engines at load <= TARGET_UTILISATION of lambda*) assumes each engine is stable at the
    # operating point: where the report's own seeded simulations say otherwise, it says so first
    contra = [p for p, rs in grid.items() if rs[i08].status.value == "unstable" and rs[i08].method == "simulation"]
    warning = []
    if contra:
        warning = [f"**Warning: this report's own simulations contradict its sizing.** The deployment of "
                   f"{ref.n_engines} engine{'s' if ref.n_engines > 1 else ''} is sized for load {fmt4(ref.low)} of "
                   f"`lambda* = {fmt4(ref.requests_per_s)} req/s` ({ref.basis_name}: {ref.basis_words}), but "
                   f"seeded simulation found **{', '.join(contra)}** unstable there "
                   + ("(every scheduler)" if len(contra) == len(grid) else "")
                   + ": that lambda* is above what the simulated engine serves, so more engines are needed than "
                   "the capacity section says (`fluidq simulate --load` and `fluidq check --load` at this engine "
                   "measure where the backlog starts to grow)." + _too_long(e, w), ""]
    md = [*warning, intro, "", head, sep, *rows, "", how, "", summary, "",
          f"At the operating point (load {fmt4(ref.low)}):", "", *notes]
    if literal:
        why = (" -- a prompt longer than `b_max` is never scheduled, so it waits forever at any rate"
               if all(v == "unstable" for _, v in literal) else "")
        md += ["", ("For comparison only, the paper's literal schedulers that never split a prompt "
                    f"(`--no-chunk-long-prompts`) at load {fmt4(ref.low)}: {', '.join(f'`{n}` {v}' for n, v in literal)}"
                    f"{why}.")]
    fig = plot_verdicts(grid, LOADS, reference_rate_per_s=ref.requests_per_s,
                        title="FasterTransformer and vLLM splitting long prompts (--chunk-long-prompts)", mark=LOADS[i08],
                        path=ctx.figure("verdicts"))
    return Section("Stability verdict per scheduler", "\n".join(md), [fig],
                   {"reference": ref.to_dict(), **{p: [r.status.value for r in rs] for p, rs in grid.items()},
                    "decided_by": {p: [r.inputs.get("decided_by", "analytic") for r in rs] for p, rs in grid.items()},
                    "arrivals": "Poisson, trace lengths" if w.trace is not None else type(w.arrival).__name__,
                    "sizing_contradicted_by_simulation": contra,
                    "wall_s": ran})
