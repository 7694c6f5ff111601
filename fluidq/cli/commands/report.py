"""``fluidq report``: the main job -- a report folder for a deployment and workload."""
from __future__ import annotations

from .. import emit

MARKER = ".fluidq-report"


def register(sub):
    p = sub.add_parser("report", help="write the report folder (Markdown, HTML, PNG plots)",
                       description="The main job. With no options: the paper's CodeLlama-34B/A100 fit and the "
                       "embedded Azure conversation workload.")
    p.add_argument("--out", default="fluidq-report",
                   help="output folder (default: ./fluidq-report): a new folder in an existing one, an empty "
                        "folder, or one an earlier `fluidq report` wrote (its files are replaced); a folder with "
                        "other files is refused")
    p.add_argument("--profile", default=None, help="built-in profile (see `fluidq profiles`)")
    p.add_argument("--trace", default=None, help="trace file or embedded name ('azure-conv', 'azure-code')")
    p.add_argument("--rate", type=float, default=None, help="arrival rate, req/s (default: the trace's own)")
    p.add_argument("--quick", action="store_true", help="shorter simulations")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args):
    from ...profiles import DEFAULT_PROFILE, load_profile
    from ...report import build_report
    from ..common import finite_positive, load_cli_trace, mark_folder, output_folder

    finite_positive("--rate", args.rate, "a finite rate > 0 (requests per second)")
    out = output_folder("--out", args.out, marker=MARKER, what="report")
    prof = load_profile(DEFAULT_PROFILE if args.profile is None else args.profile, option="--profile")
    trace = "azure-conv" if args.trace is None else args.trace  # an empty --trace is refused by the loader
    workload = load_cli_trace("--trace", trace, rate_per_s=args.rate)

    from ..progress import Steps

    steps = Steps(28, enabled=not args.json)  # redrawn on a terminal, one line per step in a log
    progress = steps.step

    try:
        res = build_report(str(out), prof.engine(), workload, quick=args.quick, profile_name=prof.name,
                           progress=progress)
    finally:  # even a report cut short is fluidq's: the next run may write over it
        mark_folder(out, MARKER, "report")
    steps.done()
    emit(args, res, f"report written to {res['html']}\n  markdown: {res['markdown']}\n  "
                    f"{len(res['figures'])} figures in the same folder")
