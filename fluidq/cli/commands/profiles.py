"""``fluidq profiles``: the built-in deployments and their fit errors."""
from __future__ import annotations

from ...profiles import list_profiles, load_profile
from ...results import MEANINGFUL_DIGITS, fmt_value
from .. import emit


def register(sub):
    p = sub.add_parser("profiles", help="list or show the built-in deployment profiles",
                       description="The built-in deployment profiles: a batch-time model fitted to measured "
                       "iteration times of one model on one deployment (GPU type, tensor parallelism), with its token budget b_max, batch-size limit "
                       "k_max and fit error. 'list' (the default) prints one line per profile; 'show NAME' prints "
                       "one profile's model, limits, data source and fit. Any command taking --profile NAME "
                       "uses them.")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list",
                   help="list the profiles (default) or show one")
    p.add_argument("name", nargs="?", default=None, help="profile to show (with 'show')")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _fit_text(fit: dict) -> str:
    if "mape_heldout" in fit:
        return f"MAPE {100 * fit['mape_heldout']:.2f}% (held out)"
    if "r2_reported" in fit:
        return f"R^2 > {fit['r2_reported']} (reported)"
    return "-"


def _value(v) -> str:
    """A profile field for people: ``none`` for an unset limit, never a Python repr."""
    if v is None:
        return "none"
    if isinstance(v, float):
        return fmt_value(v, digits=MEANINGFUL_DIGITS)
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}" if v >= 10000 else str(v)
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v)
    return str(v)


def _fit_details(fit: dict) -> str:
    """The fit of ``profiles show`` in words: its error as ``list`` prints it, then the fit's own figures
    (the constants are on the batch time line; ``--json`` has everything)."""
    parts = [t for t in [_fit_text(fit)] if t != "-"]
    if "kind" in fit:
        parts.append(f"{fit['kind']} fit")
    if "r2" in fit:
        parts.append(f"R^2 {fmt_value(fit['r2'], digits=MEANINGFUL_DIGITS)}")
    if "max_rel_error" in fit:
        parts.append(f"worst error {100 * fit['max_rel_error']:.1f}%")
    if "n_points" in fit:
        parts.append(f"{fit['n_points']} points")
    return ", ".join(parts) or "none"


def run(args):
    from .. import CliError

    if args.action == "show":
        if not args.name:
            raise CliError("show needs a profile NAME: `fluidq profiles show NAME` (names: `fluidq profiles list`)")
        prof = load_profile(args.name)
        d = prof.to_dict()
        # the profile's fields under the names a CLI user knows (the flags that set them)
        label = {"b_max": "b_max (--b-max)", "k_max": "k_max (--k-max)", "kv_capacity_tokens": "KV cache (--kv-capacity)",
                 "tp": "tensor parallel"}
        table = "\n".join([f"{label.get(k, k):<25} {_fit_details(v) if k == 'fit' else _value(v)}"
                            for k, v in d.items() if k != "batch_time"]
                          + [f"{'batch time':<25} {prof.batch_time.describe()}"])
        emit(args, d, table)
        return
    if args.name is not None:
        raise CliError(f"NAME {args.name!r} is ignored by 'list' (it lists every profile); to see one: "
                       f"`fluidq profiles show {args.name}`")
    profs = list_profiles()
    w = max(len(p.name) for p in profs)
    lines = [f"{'name':<{w}}  {'model':<16} {'gpu':<22} tp  b_max  fit"]
    for p in profs:
        lines.append(f"{p.name:<{w}}  {p.model:<16} {p.gpu:<22} {p.tp:<3} {p.b_max:<6} {_fit_text(p.fit)}")
    emit(args, [p.to_dict() for p in profs], "\n".join(lines))
