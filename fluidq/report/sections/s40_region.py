"""Stability region in (prefill, decode) tokens/s and where the workload sits in it (paper §6)."""
from __future__ import annotations

from .. import Section

# a common max_num_seqs, shown when the engine has no batch-size limit of its own
ILLUSTRATIVE_K_MAX = 256


def render(ctx):
    from ...plotting.region import plot_region
    from ...region import policy_region, region_mix, stability_region
    from ...results import fmt_value
    from ...results import round_numbers
    from ..reference import fmt4

    def inv(x, spec):  # a load relative to a region: 1 / scale, '–' where the scale is 0 or undefined
        try:
            return fmt_value(1 / x, spec)
        except (TypeError, ZeroDivisionError):
            return fmt_value(None)

    e, w, ref = ctx.engine, ctx.workload, ctx.reference
    # the operating point is one engine of the deployment: the workload's rate split n_engines ways
    from ...capacity import request_work

    # a request's batch work: (m_p, m_d), or (m_p, m_d - 1) on an engine whose prefill emits the first token
    # (vLLM, the --gpu roofline engine), the ray max_throughput, check and `fluidq region` read
    lam, (mp, md) = ref.rate(ref.low), request_work(e, w)
    point = (lam * mp, lam * md)
    whole = (w.arrival_rate_per_s * mp, w.arrival_rate_per_s * md)
    shown = e if e.k_max is not None else e.with_(k_max=ILLUSTRATIVE_K_MAX)
    # a context-aware batch time is evaluated at the workload's mean decode context, as max_throughput does
    # (so the region's corner and the report's reference capacity agree)
    from ...batchtime import ContextAware
    from ...capacity import mean_decode_context

    kv = mean_decode_context(e, w) if isinstance(e.batch_time, ContextAware) else None
    region = stability_region(shown, kv_tokens=kv)
    plain_region = stability_region(e.with_(k_max=None), kv_tokens=kv)
    others = {"no k_max (Theorem 2)": plain_region} if e.k_max is None else {}
    for pol in ("sarathi", "orca", "fastertransformer"):
        pr = policy_region(shown, ref.policies[pol])  # the report's scheduler configuration
        others[pr.label] = pr
    simulated = {}
    if not ctx.quick:  # the region Sarathi-Serve actually sustains, by simulation along rays
        from ...region.simulated import simulated_region

        sr = simulated_region(shown, "sarathi", n_rays=5, horizon_s=150.0, rng=0)
        simulated[f"sarathi-{shown.b_max}"] = sr
    above = "one engine fewer" if ref.high_is_fewer else "above capacity"
    marks = {f"load {fmt4(ref.high)} ({above})": (ref.rate(ref.high) * mp, ref.rate(ref.high) * md, "X")}
    fig = plot_region(region, point=point, others=others, simulated=simulated or None, points=marks,
                      path=ctx.figure("stability_region"),
                      title=f"stability region, k_max={shown.k_max}" +
                      (" (illustrative: the engine has none)" if e.k_max is None else ""))
    s = region.scale_of(point)
    lam_star = region.max_request_rate(mp, md)
    lam_plain = plain_region.max_request_rate(mp, md)
    mix = region_mix(region, point)
    rows = "\n".join(f"| {i} | {fmt4(v[0])} | {fmt4(v[1])} | ({sh[0]}, {sh[1]}) | {fmt4(t * 1e3)} |"
                     for i, (v, sh, t) in enumerate(zip(region.vertices, region.shapes, region.batch_seconds)))
    mix_rows = "\n".join(f"| ({sh[0]}, {sh[1]}) | {fmt4(f)} | {fmt4(bf)} |"
                         for sh, f, bf in zip(mix.shapes, mix.time_fractions, mix.batch_fractions))
    binds = lam_star < lam_plain * (1 - 1e-9)
    pol_lines = "\n".join(f"- **{lab}**: the operating point is {'inside' if o.scale_of(point) >= 1 else 'outside'} "
                          f"its backlog region (load {inv(o.scale_of(point), '.4g')} relative to it)"
                          for lab, o in others.items() if lab != "no k_max (Theorem 2)")
    if simulated:
        for lab, sr in simulated.items():
            fr = ", ".join(f"({sp}, {sd}): {inv(sc, '.4g')}" for (sp, sd), sc in zip(sr.request_shapes, sr.engine_scale))
            pol_lines += (f"\n- **{lab}, simulated** (deterministic arrivals, threshold bracketed by bisection) -- "
                          f"threshold as a fraction of the region's boundary per request shape (m_p, m_d): {fr}")
    no_limit = ("" if e.k_max is not None else
                "The engine has no batch-size limit, so its own region is the triangle `x + y <= "
                f"{fmt4(plain_region.capacity_tokens_per_s)}` tokens/s of Theorem 2; the filled region shows what "
                f"`k_max = {ILLUSTRATIVE_K_MAX}` (a common `max_num_seqs`) would cost.")
    mix_head = ("Time-sharing of batch shapes that serves the operating point" if mix.feasible else
                "The operating point is outside the region; the time-sharing that serves the most of it "
                f"(x{fmt4(mix.scale)}) along its direction")
    point_where = "inside" if s >= 1 else "outside"
    md_text = f"""
The simulations ran one engine at the workload's one mix of prompt and output tokens; the region shows
where that operating point sits among all mixes, and how much room it leaves in each direction.
With at most `k_max` requests per batch the capacity is a region in the (prefill tokens/s,
decode tokens/s) plane: the downward-closed convex hull of the rate points `(x, y)/t(x+y)` of the
admissible batch shapes (Li, Dai, Peng, arXiv:2504.07347, §6; admissibility rule
*reconstructed*: `x + y <= b_max`, `y + n_p <= k_max` with `n_p >= 1` prefilling requests).
{no_limit} The star is the report's operating point, one engine of the deployment ({ref.n_engines} in all) at load
{fmt4(ref.low)} of the reference `lambda* = {fmt4(ref.requests_per_s)} req/s` ({point_where} the region, as the
verdicts said); the cross marks load {fmt4(ref.high)} ({above}) along the same mix, outside it. The workload on a
single engine would sit at ({fmt4(whole[0])}, {fmt4(whole[1])}) tokens/s, load {fmt4(ref.offered_load)}.

| vertex | prefill tokens/s | decode tokens/s | batch shape (prefill, decode) | t (ms) |
|---|---|---|---|---|
{rows}

| quantity | value |
|---|---|
| operating point `(lambda m_p, lambda m_d)`, one engine | ({fmt4(point[0])}, {fmt4(point[1])}) tokens/s |
| load relative to the region along the workload's mix | {inv(s, '.4g')} (of the region's `lambda*` below; the reference `lambda* = {fmt4(ref.requests_per_s)} req/s` gives {fmt4(ref.low)}) |
| largest request rate in the region `lambda*` | {fmt4(lam_star)} req/s (without `k_max`: {fmt4(lam_plain)}) |
| does `k_max = {shown.k_max}` bind for this mix? | {"yes" if binds else "no"} |

{mix_head} ({round_numbers(mix.reason)}):

| batch shape (prefill, decode) | share of time | share of batches |
|---|---|---|
{mix_rows}

Dashed: the regions of the batches each scheduler forms once a backlog exists (an outer estimate by
a fluid argument, ours: outside its region a scheduler's backlog grows once formed; Sarathi with
`b_max = 1024` diverges at vertex C of the paper's example for this reason). Inside it the
scheduler's own dynamics set its time shares, so what it sustains can be less; the simulated
thresholds (markers, full report only) show how much. The region-aware scheduler
(`fluidq.policies.region_aware.RegionAware`) runs the shapes of the mix above instead of filling
batches to `b_max`.

{pol_lines}
"""
    data = {"simulated": {k: v.to_dict() for k, v in simulated.items()}, "k_max": shown.k_max,
            "illustrative_k_max": e.k_max is None, "vertices": region.to_dict()["vertices_tokens_per_s"],
            "shapes": region.shapes.tolist(), "operating_point": list(point), "load": 1 / s, "inside": bool(s >= 1),
            "marks": {k: list(v[:2]) for k, v in marks.items()},
            "max_request_rate_per_s": lam_star, "k_max_binds": binds, "mix": mix.to_dict(),
            "reference": ref.to_dict()}
    ctx.results["region"] = region
    return Section("Stability region under a batch-size limit", md_text, [fig], data)
