"""``fluidq profiles``: the built-in deployments and their fit errors."""
from __future__ import annotations

from ...profiles import list_profiles, load_profile
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


def run(args):
    from .. import CliError

    if args.action == "show":
        if not args.name:
            raise CliError("show needs a profile NAME: `fluidq profiles show NAME` (names: `fluidq profiles list`)")
        prof = load_profile(args.name)
        d = prof.to_dict()
        table = "\n".join([f"{k:<19} {v}" for k, v in d.items() if k != "batch_time"]
                          + [f"{'batch time':<19} {prof.batch_time.describe()}"])
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
