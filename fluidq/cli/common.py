"""Arguments shared by several commands: how to describe an engine and a workload, and the checks
every command makes on its options before any work (paths it will write, options it would ignore)."""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..batchtime import Affine, PiecewiseLinear, Staircase
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Geometric, Poisson, Workload


def add_engine_args(p: argparse.ArgumentParser, *, multi_engine: bool = False) -> None:
    """Engine options; ``multi_engine`` when the command understands ``--engines K`` (JSQ over K)."""
    g = p.add_argument_group("engine (a built-in profile, or the batch-time constants)")
    g.add_argument("--profile", default=None, help="built-in profile name (see `fluidq profiles`); "
                   "default: the paper's CodeLlama-34B/A100 fit")
    g.add_argument("--model", choices=["staircase", "piecewise-linear", "affine"], default=None,
                   help="batch-time form of the constants --c-ms/--a-ms/--b0 (default staircase; affine "
                        "t(b) = c + a*b takes --c-ms and --a-ms per token, no --b0)")
    g.add_argument("--c-ms", type=float, default=None, help="fixed cost per batch, ms (paper: 11.28)")
    g.add_argument("--a-ms", type=float, default=None, help="cost per block (staircase) or per token, ms (paper: 35.47)")
    g.add_argument("--b0", type=int, default=None, help="block size / knee in tokens (paper: 128)")
    g.add_argument("--b-max", type=int, default=None, help="token budget per batch (default: the profile's)")
    g.add_argument("--k-max", type=int, default=None, help="batch-size limit, requests per batch")
    g.add_argument("--engines", type=int, default=1,
                   help="identical engines behind a JSQ router" if multi_engine else argparse.SUPPRESS)
    p.set_defaults(_multi_engine=multi_engine)


def engine_from_args(args) -> Engine:
    from ..profiles import DEFAULT_PROFILE, load_profile

    from .._validate import BUDGET_WHY, ENGINES_WHY, MAX_BUDGET_TOKENS, MAX_ENGINES, integer

    engines = getattr(args, "engines", 1)
    if engines != 1 and not getattr(args, "_multi_engine", False):
        raise ParameterError("--engines", engines, "1 for this command",
                             "parallel engines: `fluidq capacity`/`fluidq check --engines K`, or a JSQ network "
                             "case for `fluidq network`")
    integer("--engines", engines, minimum=1, maximum=MAX_ENGINES, why=ENGINES_WHY)
    for flag, v in (("--b-max", args.b_max), ("--k-max", args.k_max), ("--b0", args.b0)):
        integer(flag, v, minimum=1, allow_none=True, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)

    consts = [args.c_ms, args.a_ms, args.b0]
    model = args.model or "staircase"
    if any(v is not None for v in consts):
        if args.profile is not None:
            raise ParameterError("--profile", args.profile, "either --profile or --c-ms/--a-ms/--b0, not both")
        if model == "affine":
            reject_ignored(f"--b0 {args.b0}", args.b0 is not None,
                           "by --model affine (t(b) = c + a*b has no block size or knee)")
            if args.a_ms is None:
                raise ParameterError("--a-ms", None, "the cost per token in ms for --model affine",
                                     "the paper's 35.47 ms is per 128-token block of the staircase")
        c = 11.28 if args.c_ms is None else args.c_ms
        a = 35.47 if args.a_ms is None else args.a_ms
        b0 = 128 if args.b0 is None else args.b0
        _batch_constants_ms(model, c, a)
        if model == "staircase":
            bt = Staircase(c=c / 1e3, a=a / 1e3, b0=b0)
        elif model == "piecewise-linear":
            bt = PiecewiseLinear(c=c / 1e3, a=a / 1e3, b0=b0)
        else:
            bt = Affine(c=c / 1e3, a=a / 1e3)
        return Engine(batch_time=bt, b_max=512 if args.b_max is None else args.b_max, k_max=args.k_max,
                      name="custom")
    reject_ignored(f"--model {args.model}", args.model is not None,
                   "without --c-ms/--a-ms/--b0 (it is the form of those constants; a profile has its own model)")
    prof = load_profile(DEFAULT_PROFILE if args.profile is None else args.profile, option="--profile")
    changes = {}
    if args.b_max is not None:
        changes["b_max"] = args.b_max
    if args.k_max is not None:
        changes["k_max"] = args.k_max
    return prof.engine(**changes)


def _batch_constants_ms(model: str, c: float, a: float) -> None:
    """``--c-ms``/``--a-ms`` within the batch-time bounds (in ms, as given), named by their flags."""
    from .._validate import MAX_BATCH_SECONDS, MIN_BATCH_SECONDS, SECONDS_WHY, real

    lo, hi = MIN_BATCH_SECONDS * 1e3, MAX_BATCH_SECONDS * 1e3
    c_zero_ok = model != "piecewise-linear"  # t(b) = c + a*max(0, b - b0) needs c > 0
    a_zero_ok = model == "affine"
    for flag, v, zero_ok in (("--c-ms", c, c_zero_ok), ("--a-ms", a, a_zero_ok)):
        real(flag, v, nonnegative=zero_ok, positive=not zero_ok, maximum=hi, why=SECONDS_WHY)
        # a tiny slope is harmless where t(b) >= c (piecewise-linear), a tiny fixed cost where t(b) >= a
        tiny_ok = (flag == "--a-ms" and model == "piecewise-linear") or (flag == "--c-ms" and model == "staircase")
        if v != 0 and v < lo and not tiny_ok:
            raise ParameterError(flag, v, f"{'0 or ' if zero_ok else ''}a time >= {lo:g} ms", SECONDS_WHY)
    if model == "affine" and c + a < lo:
        raise ParameterError("--a-ms", a, f"--c-ms + --a-ms >= {lo:g} ms (a batch of one token takes c + a)",
                             SECONDS_WHY)


def add_workload_args(p: argparse.ArgumentParser, *, rate_required: bool = False) -> None:
    g = p.add_argument_group("workload")
    g.add_argument("--rate", type=float, default=None, required=rate_required,
                   help="arrival rate, requests per second")
    g.add_argument("--prompt", type=float, default=None, help="prompt tokens per request (mean; default 100)")
    g.add_argument("--output", type=float, default=None, help="output tokens per request (mean; default 100)")
    g.add_argument("--geometric", action="store_true", help="geometric lengths with the given means "
                   "(default: deterministic)")
    g.add_argument("--trace", default=None, help="a trace file (Azure CSV / Mooncake JSONL) or "
                   "'azure-conv' / 'azure-code'; lengths and arrival pattern from it")


def workload_from_args(args, *, default_rate: float | None = None) -> Workload:
    rate = args.rate if args.rate is not None else default_rate
    if args.trace is not None:
        if args.prompt is not None or args.output is not None:
            raise ParameterError("--trace", args.trace, "either --trace or --prompt/--output, not both")
        reject_ignored("--geometric", args.geometric, "with --trace (the lengths are the trace's own)")
        if rate is not None:
            _rate_arg(rate)
        return load_cli_trace("--trace", args.trace, rate_per_s=rate)
    if rate is None:
        hint = "or --load, a fraction of capacity" if hasattr(args, "load") else None
        raise ParameterError("--rate", None, "an arrival rate in requests per second", hint)
    _rate_arg(rate)
    mp = 100.0 if args.prompt is None else args.prompt
    md = 100.0 if args.output is None else args.output
    from .._validate import MAX_REQUEST_TOKENS, REQUEST_WHY, real

    for flag, v in (("--prompt", mp), ("--output", md)):
        if not (v >= 1 and v != float("inf")):
            raise ParameterError(flag, v, "a finite number of tokens >= 1")
        real(flag, v, maximum=MAX_REQUEST_TOKENS, why=REQUEST_WHY)
    if args.geometric:
        lp, ld = Geometric(mean_tokens=mp), Geometric(mean_tokens=md)
    else:
        for name, v in (("--prompt", mp), ("--output", md)):
            if not float(v).is_integer():
                raise ParameterError(name, v, "a whole number of tokens (or add --geometric for a mean)")
        lp, ld = int(mp), int(md)
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=lp, output_tokens=ld)


def _rate_arg(rate, flag: str = "--rate") -> float:
    """An arrival rate given on the command line, within the bounds of :class:`fluidq.Poisson`."""
    from .._validate import MAX_RATE_PER_S, MIN_RATE_PER_S, RATE_WHY, real

    if not (rate > 0 and rate != float("inf")):
        raise ParameterError(flag, rate, "a finite rate > 0 (requests per second)")
    real(flag, rate, minimum=MIN_RATE_PER_S, maximum=MAX_RATE_PER_S, why=RATE_WHY)
    return rate


# ---------------------------------------------------------------------------------------------------
# checks made before any work: output paths, options that would be ignored
# ---------------------------------------------------------------------------------------------------

def figure_formats() -> dict:
    """The file formats matplotlib can write here, ``{extension: description}``."""
    from matplotlib.figure import Figure

    return Figure().canvas.get_supported_filetypes()


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def output_file(option: str, path: str, *, inputs=(), figure: bool = True, suffixes=None, what: str = "file",
                hint: str | None = None) -> str:
    """Check a path a command will write, before any work; return the path that will be written.

    ``inputs`` are ``(option, path)`` pairs the command reads (a path that is not an existing file,
    such as an embedded trace name, is skipped): the output may not be one of them.  ``suffixes``
    (with the dots) limits the extension of a file that is not a ``figure``; a figure's format is
    the one matplotlib takes from the extension: a path without one gets ``.png`` (what matplotlib
    writes), and the returned path says so.
    """
    text = str(path)
    if not text.strip():
        raise ParameterError(option, path, f"a {what} path")

    def not_an_input(q: Path) -> None:
        for in_opt, in_path in inputs:
            if in_path is not None and Path(str(in_path)).is_file() and _same_file(q, Path(str(in_path))):
                raise ParameterError(option, text, f"a {what} other than the input {in_opt} (writing it would "
                                     "overwrite that file)")

    p = Path(text)
    not_an_input(p)
    suffix = p.suffix.lower()
    if figure:
        formats = figure_formats()
        if not suffix:
            p = p.with_name(p.name + ".png")
            not_an_input(p)
        elif suffix.lstrip(".") not in formats:
            raise ParameterError(option, text, "a file name ending in one of "
                                 + ", ".join("." + f for f in sorted(formats)), "the figure format comes from "
                                 "the extension")
    elif suffixes is not None and suffix not in suffixes:
        raise ParameterError(option, text, f"a file name ending in {' or '.join(suffixes)}", hint)
    parent = p.parent
    if not parent.is_dir():
        raise ParameterError(option, text, f"a path in an existing folder (there is no folder {str(parent)!r})")
    if p.is_dir():
        raise ParameterError(option, text, f"a {what} name (this is a folder)")
    return str(p)


def output_folder(option: str, path: str, *, marker: str, what: str) -> Path:
    """Check a folder a command will fill (``what``: the command, "report" or "validate"), before any work.

    The folder may be new (in an existing parent folder, like every output path), empty, or one that
    fluidq wrote before (it holds ``marker``); a folder with other files is refused rather than
    overwritten.  Call :func:`mark_folder` once the command has written it.
    """
    text = str(path)
    if not text.strip():
        raise ParameterError(option, path, f"a folder for the {what}")
    p = Path(text)
    if p.exists() and not p.is_dir():
        raise ParameterError(option, text, f"a folder for the {what}, not an existing file",
                             "give a new folder name")
    if not p.exists():
        if not p.parent.is_dir():
            raise ParameterError(option, text, "a folder in an existing folder (there is no folder "
                                 f"{str(p.parent)!r}; create it first)")
        return p
    if (p / marker).is_file():
        return p
    names = sorted(q.name for q in p.iterdir())
    if names:
        from . import CliError

        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        raise CliError(f"{option} {text}: the folder already holds files ({shown}) and no {marker} file saying "
                       f"`fluidq {what}` wrote it, so they are not replaced; give a new or empty folder, or remove "
                       f"those files (a folder fluidq wrote has that file and is written over)")
    return p


def mark_folder(folder: Path, marker: str, what: str) -> None:
    """Leave ``marker`` in a folder fluidq wrote, so that the next run may write over it."""
    folder = Path(folder)
    if folder.is_dir():
        (folder / marker).write_text(f"This folder was written by `fluidq {what}`; running it again with the "
                                     "same --out replaces its files.\n")


def reject_ignored(option: str, given: bool, why: str) -> None:
    """One line for an option the command would otherwise silently ignore."""
    if given:
        from . import CliError

        raise CliError(f"{option} is ignored {why}")


def finite_positive(option: str, value, what: str = "a finite number > 0") -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ParameterError(option, value, what)


def load_cli_trace(option: str, name: str, rate_per_s=None) -> Workload:
    """``Workload.from_trace`` for a trace named on the command line, refusing an unsorted file.

    The loader sorts the rows by time and records the first one out of order (``Trace.out_of_order``);
    for a file given on the command line that is more likely a mistake (a file edited or concatenated by
    hand), so the command names it instead.
    """
    from ..errors import DataError

    import os

    from .._io import input_file
    from ..workload import EMBEDDED_TRACES

    if rate_per_s is not None and not (math.isfinite(rate_per_s) and rate_per_s > 0):
        raise ParameterError("--rate", rate_per_s, "a finite rate > 0 (requests per second)")
    if str(name) not in EMBEDDED_TRACES:  # a FIFO, a device, a loop...: one line naming the option
        try:
            os.lstat(str(name))
        except FileNotFoundError:
            pass  # the loader names the embedded traces
        except (OSError, ValueError):
            input_file(option, name, what="trace")
        else:
            input_file(option, name, what="trace")
    w = Workload.from_trace(name, rate_per_s=rate_per_s)
    bad = w.trace.out_of_order if w.trace is not None else None
    if bad is not None and Path(str(name)).is_file():
        n1, n0, gap = bad
        raise DataError(f"{option} {name}: line {n1} arrives {gap:g} s before line {n0}: the rows must be "
                        "in time order (sort the file by its timestamp column)")
    return w
