"""Capacity of one engine (Theorem 2), the engines the workload needs and the per-engine operating point."""
from __future__ import annotations

import numpy as np

from .. import Section


def render(ctx):
    from ...capacity import capacity_vs_bmax
    from ...plotting import plot_batch_time, plot_capacity_vs_bmax

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    cap = ref.capacity
    ctx.results["capacity"] = cap
    rho = ref.offered_load
    f1 = plot_batch_time(e.batch_time, b_max=e.b_max, path=ctx.figure("batch_time"))
    f2 = plot_capacity_vs_bmax(capacity_vs_bmax(e, w), engines=ref.n_engines if ref.n_engines > 1 else None,
                               path=ctx.figure("capacity_vs_bmax"))
    from ...dtmc.load_basis import BASIS_WORDS, K_MAX_BINDS, KV_CACHE_BINDS_PART, bound_words, kv_rules_case
    from ...results import round_numbers
    from ..reference import TARGET_UTILISATION, fmt4

    n = ref.n_engines
    # which limit binds in the kv_rules basis (h-words2): the mean-footprint words only where the cache binds at the
    # mean footprints (cap.kv_batch_tokens); where max_num_seqs binds, or the cache for part of the residents'
    # life, max_throughput is a bound over every scheduler and the words say that
    case = None if ref.basis is None else kv_rules_case(ref.basis, cap)
    mean_fp = cap.kv_batch_tokens is not None
    what = "Theorem 2 at the batch the mean footprints allow" if mean_fp else (
        f"Theorem 2's max_throughput, {bound_words(cap, roofline=False)}")
    basis = f"{BASIS_WORDS[ref.basis_name]}, the load basis of `fluidq check --load`" + (
        "" if case is None else
        f"; {what}: {fmt4(cap.requests_per_s)} req/s" if case == "kv_cache" else
        f"; {K_MAX_BINDS if case == 'k_max' else KV_CACHE_BINDS_PART}; {what}: {fmt4(cap.requests_per_s)} req/s")
    # the row below is max_throughput's; where lambda* is another basis, the row says whose it is
    theorem2 = "" if ref.basis_name == "max_throughput" else (
        f" ({what})" if mean_fp else " (Theorem 2's max_throughput, a bound over every scheduler)")
    least = int(np.ceil(rho - 1e-9))
    over = (f" {'One engine cannot serve it: at least ' + str(least) + ' engines are needed for stability' if rho > 1 else 'One engine is stable at it'}"
            f"; at most load {TARGET_UTILISATION:g} per engine (headroom for bursts) it needs **{n}**, each then at "
            f"load {fmt4(ref.engine_load)} ({fmt4(ref.rate(ref.engine_load))} req/s). The next sections judge one "
            "of these engines at that load.")
    md = f"""
| quantity | value |
|---|---|
| batch-time model | `{e.batch_time.describe()}` |
| token budget `b_max` | {e.b_max} |
| batch-size limit `k_max` | {e.k_max if e.k_max else "none"} |
| capacity{theorem2} | {fmt4(cap.tokens_per_s)} tokens/s at batches of {cap.batch_tokens} tokens |
| workload | {w.name}: `m_p` = {fmt4(w.mean_prompt_tokens)}, `m_d` = {fmt4(w.mean_output_tokens)} tokens |
| maximum request rate `lambda*` (the report's reference capacity) | {fmt4(ref.requests_per_s)} req/s ({basis}) |
| offered rate | {fmt4(w.arrival_rate_per_s)} req/s = load {fmt4(rho)} of `lambda*` |
| engines needed (at most load {TARGET_UTILISATION:g} each) | {n} |
| load per engine (the operating point) | {fmt4(ref.engine_load)} |

{round_numbers(cap.reason)}.

Load {fmt4(rho)} of `lambda*`.{over}
"""
    return Section("Capacity and engines needed", md, [f1, f2], {**cap.to_dict(), "reference": ref.to_dict()})
