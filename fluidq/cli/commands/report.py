"""``fluidq report``: the main job -- a report folder for a deployment and workload."""
from __future__ import annotations

from .. import emit
from ..common import TRACE_FILE_HELP
from ._roofline_args import add_roofline_args

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
    p.add_argument("--model", default=None, metavar="NAME", help=None)  # said by add_roofline_args
    p.add_argument("--max-num-seqs", "--k-max", dest="k_max", type=int, default=None,
                   help="with --gpu: vLLM's --max-num-seqs (default 256)")
    p.add_argument("--max-num-batched-tokens", "--b-max", dest="b_max", type=int, default=None,
                   help="with --gpu: vLLM's --max-num-batched-tokens (default 2048)")
    p.add_argument("--trace", default=None, help=f"{TRACE_FILE_HELP} or an embedded name ('azure-conv', "
                   "'azure-code'; default azure-conv)")
    p.add_argument("--rate", type=float, default=None, help="arrival rate, req/s (default: the trace's own)")
    p.add_argument("--quick", action="store_true", help="shorter simulations")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_roofline_args(p)
    p.set_defaults(func=run)


def _engine(args):
    """``(engine, profile name)``: the built-in profile, or with ``--gpu`` the roofline engine (no profile)."""
    from ...profiles import DEFAULT_PROFILE, load_profile
    from .. import CliError
    from ._roofline_args import roofline_engine

    if args.gpu is not None:
        if args.profile is not None:
            raise CliError("--gpu describes the engine itself (a roofline estimate): give it without --profile")
        engine, _ = roofline_engine(args, b_max=args.b_max or 2048, k_max=args.k_max or 256, kv_capacity=None)
        return engine, None
    for opt, v in (("--model", args.model), ("--model-config", args.model_config)):
        if v is not None:
            raise CliError(f"{opt} is read only with --gpu NAME (a deployment without profiles)")
    for opt, v, default in (("--tensor-parallel-size", args.tensor_parallel_size, 1),
                            ("--gpu-memory-utilization", args.gpu_memory_utilization, 0.9),
                            ("--max-num-seqs", args.k_max, None), ("--max-num-batched-tokens", args.b_max, None)):
        if v != default:
            raise CliError(f"{opt} is read only with --gpu (a built-in profile carries its own)")
    prof = load_profile(DEFAULT_PROFILE if args.profile is None else args.profile, option="--profile")
    return prof.engine(), prof.name


def run(args):
    from ...report import build_report
    from ..common import finite_positive, load_cli_trace, mark_folder, output_folder

    finite_positive("--rate", args.rate, "a finite rate > 0 (requests per second)")
    engine, name = _engine(args)
    import os

    existed = os.path.lexists(str(args.out))  # a folder this run creates is removed if it stops before writing
    out = output_folder("--out", args.out, marker=MARKER, what="report")
    trace = "azure-conv" if args.trace is None else args.trace  # an empty --trace is refused by the loader
    workload = load_cli_trace("--trace", trace, rate_per_s=args.rate)
    if args.gpu is not None:  # vLLM refuses a request longer than the model's context: as capacity --trace does
        from ._roofline_args import _check_trace_context, context_limit, model_from_args

        limit, words = context_limit(args, model_from_args(args))
        if limit:
            _check_trace_context(trace, int(limit), words, workload.trace)

    from ..progress import Steps

    steps = Steps(28, enabled=not args.json)  # redrawn on a terminal, one line per step in a log
    progress = steps.step

    done = False
    try:
        res = build_report(str(out), engine, workload, quick=args.quick, profile_name=name, progress=progress)
        done = True
    finally:  # even a report cut short is fluidq's: the next run may write over it
        if not done and not existed and _holds_nothing(out):
            _remove_empty(out)  # stopped before writing anything: no folder of only a marker is left behind
        else:
            mark_folder(out, MARKER, "report")
    steps.done()
    from ._roofline_args import max_model_len_line

    if args.gpu is not None:
        res["max_model_len"] = getattr(args, "max_model_len_info", None)
    emit(args, res, f"report written to {res['html']}\n  markdown: {res['markdown']}\n  "
                    f"{len(res['figures'])} figures in the same folder"
                    + "".join(f"\n  {line}" for line in max_model_len_line(args, width=0)))


def _holds_nothing(folder) -> bool:
    """The folder holds nothing but fluidq's marker (or nothing at all)."""
    import os

    try:
        return set(os.listdir(folder)) <= {MARKER}
    except OSError:
        return False


def _remove_empty(folder) -> None:
    import os

    try:
        if os.path.lexists(os.path.join(folder, MARKER)):
            os.remove(os.path.join(folder, MARKER))
        os.rmdir(folder)
    except OSError:  # something appeared meanwhile, or it cannot be removed: it stays
        pass
