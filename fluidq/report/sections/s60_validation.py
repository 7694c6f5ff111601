"""Validation status of the report's profile: its fit error and the measured runs it was checked against."""
from __future__ import annotations

from .. import Section

TARGET_MAPE = 0.05


def render(ctx):
    from ...profiles import load_profile
    from ...errors import FluidqError

    name = ctx.profile_name
    lead = ("Every number above follows from the engine's batch-time model; this section says how well that "
            "model is checked against measurements.")
    lines, data = [lead, ""], {"profile": name, "rows": []}
    prof = None
    if name:
        try:
            prof = load_profile(name)
        except FluidqError:
            prof = None
    bt = getattr(ctx.engine.batch_time, "base", ctx.engine.batch_time)
    if prof is None and getattr(bt, "kind", None) == "roofline":  # a deployment without profiles (--gpu)
        from ...validate.roofline import ERROR_NOTE

        data["roofline"] = ERROR_NOTE
        return Section("Validation", lead + f" The engine is {ERROR_NOTE}.", [], data)
    if prof is None:
        return Section("Validation", lead + " The engine is not a built-in profile: no validation status. "
                       "`fluidq validate` checks the built-in profiles against measured runs.", [], data)
    mape = prof.fit.get("mape_heldout")
    if mape is not None:
        ok = "meets" if mape <= TARGET_MAPE else "**misses**"
        lines.append(f"- Batch-time fit of `{name}`: held-out MAPE {100 * mape:.1f} % ({ok} the "
                     f"{100 * TARGET_MAPE:.0f} % target).")
        data["fit_mape_heldout"] = mape
    elif prof.fit:
        lines.append(f"- Batch-time fit of `{name}`: {prof.description or prof.source} (no held-out error recorded).")
    try:
        from ...validate import validation_dir
        from ...validate.cases import load_cases, run_case

        vd = validation_dir()
        cases = [c for c in load_cases(vd / "cases") if name in c.spec.get("profiles", [])]
    except FluidqError:
        vd, cases = None, []
    if vd is None:
        lines.append("- The validation data is not installed (it lives in the source checkout's `validation/`).")
    elif not cases:
        lines.append(f"- No measured serving run or peer simulation checks `{name}` yet "
                     "(see `fluidq validate` for the profiles that are checked).")
    for c in cases:
        res = run_case(c, vd / "data", fast=True, fast_replay_skip=True)
        for r in res.rows:
            if r.status in ("pass", "miss") and r.error_pct is not None or r.quantity == "binding limit":
                from ...results import fmt_value

                err = "" if r.error_pct is None else f", error {fmt_value(r.error_pct, '+.1f')} %"
                verdict = "pass" if r.status == "pass" else "**MISS**"
                from ...validate import _fmt

                pv, mv = _fmt(r.predicted), _fmt(r.measured)
                lines.append(f"- `{c.name}` ({c.source}): {r.quantity}: predicted {pv}, measured {mv} {r.unit}"
                             f"{err} -- {verdict}.")
                data["rows"].append(r.to_dict())
    lines.append("")
    if data["rows"]:
        lines.append("Quick check (capacity and binding limit only); `fluidq validate` runs every case, with the "
                     "latency of replayed arrivals, and writes the full table.")
    return Section("Validation", "\n".join(lines), [], data)
