"""Arguments shared by several commands: how to describe an engine and a workload, and the checks
every command makes on its options before any work (paths it will write, options it would ignore)."""
from __future__ import annotations

import argparse
import contextlib
import math
from pathlib import Path

from ..batchtime import Affine, PiecewiseLinear, Staircase
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Geometric, Poisson, Workload


#: vLLM's names for fluidq's engine and workload flags: ``{vLLM flag: fluidq (paper) flag}``.  Each pair
#: sets the same option (the same argparse ``dest``), so both give the same answer.  Only exact meanings
#: are listed: vLLM's ``--tensor-parallel-size`` and ``--gpu-memory-utilization`` size the KV cache
#: (``fluidq models kv`` takes them), which a measured batch-time profile already includes, and
#: ``--data-parallel-size`` routes by vLLM's own load balancer, not the join-the-shortest-queue router of
#: ``--engines``.
VLLM_ALIASES = {
    "--max-num-batched-tokens": "--b-max",   # the token budget per batch (scheduler iteration)
    "--max-num-seqs": "--k-max",             # requests per batch
    "--input-len": "--prompt",               # prompt tokens per request
    "--output-len": "--output",              # output tokens per request
    "--request-rate": "--rate",              # Poisson arrival rate, requests per second
    "--num-prompts": "--requests",           # the number of requests (benchmark_serving), simulate only
}


def as_typed(message: str, argv) -> str:
    """``message`` with each fluidq flag that the user gave by its vLLM name (in ``argv``) written as typed,
    so that a one-line error names the flag on the command line."""
    import re

    given = {str(t).split("=", 1)[0] for t in argv or () if str(t).startswith("--")}
    for alias, flag in VLLM_ALIASES.items():
        if alias in given and flag not in given:
            message = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", alias, message)
    return message


def add_engine_args(p: argparse.ArgumentParser, *, multi_engine: bool = False, fit: bool = False) -> None:
    """Engine options; ``multi_engine`` when the command understands ``--engines K`` (JSQ over K), ``fit``
    when it takes ``--fit CSV`` (the batch time fitted to one's own measurements)."""
    g = p.add_argument_group("engine (a built-in profile, the batch-time constants" + (", or --fit CSV" if fit else "")
                             + "; vLLM's names beside fluidq's)")
    g.add_argument("--profile", default=None, help="built-in profile name (see `fluidq profiles`); "
                   "default: the paper's CodeLlama-34B/A100 fit")
    if fit:
        g.add_argument("--fit", default=None, metavar="CSV",
                       help="measured batch times, a CSV with the header tokens,seconds[,kv_tokens] (as `fluidq "
                            "fit` reads): the form with the lowest held-out error is fitted and used, and the "
                            "answer states it with that error; needs --b-max")
    g.add_argument("--model", choices=["staircase", "piecewise-linear", "affine"], default=None,
                   help="batch-time form of the constants --c-ms/--a-ms/--b0 (default staircase; affine "
                        "t(b) = c + a*b takes --c-ms and --a-ms per token, no --b0)")
    g.add_argument("--c-ms", type=float, default=None, help="fixed cost per batch, ms (paper: 11.28)")
    g.add_argument("--a-ms", type=float, default=None, help="cost per block (staircase) or per token, ms (paper: 35.47)")
    g.add_argument("--b0", type=int, default=None, help="block size / knee in tokens (paper: 128)")
    g.add_argument("--b-max", "--max-num-batched-tokens", dest="b_max", type=int, default=None,
                   help="token budget per batch (vLLM's --max-num-batched-tokens; default: the profile's; "
                        "required with --c-ms/--a-ms/--b0" + (" or --fit" if fit else "") + ")")
    g.add_argument("--k-max", "--max-num-seqs", dest="k_max", type=int, default=None,
                   help="batch-size limit, requests per batch (vLLM's --max-num-seqs)")
    g.add_argument("--engines", type=int, default=1,
                   help="identical engines behind a JSQ router" if multi_engine else argparse.SUPPRESS)
    p.set_defaults(_multi_engine=multi_engine)
    if not fit:
        p.set_defaults(fit=None)


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
    fit = getattr(args, "fit", None)
    if fit is not None:
        for opt, given in (("--profile", args.profile is not None), ("--model", args.model is not None),
                           ("--c-ms/--a-ms/--b0", any(v is not None for v in consts))):
            if given:
                raise ParameterError("--fit", fit, f"either --fit or {opt}, not both (--fit is the batch time)")
        if args.b_max is None:
            from . import CliError

            raise CliError("--fit needs --b-max B (the token budget per batch, vLLM's --max-num-batched-tokens: "
                           "measured batch times do not say it)")
        from .commands.fit import fit_csv

        unread: list = []
        res = fit_csv(fit, "--fit", unread=unread, command=getattr(args, "command", None))
        args._fit_result, args._fit_unread = res, unread
        return Engine(batch_time=res.model, b_max=args.b_max, k_max=args.k_max, name="fitted")
    if any(v is not None for v in consts):
        if args.profile is not None:
            raise ParameterError("--profile", args.profile, "either --profile or --c-ms/--a-ms/--b0, not both")
        if model == "affine":
            reject_ignored(f"--b0 {args.b0}", args.b0 is not None,
                           "by --model affine (t(b) = c + a*b has no block size or knee)")
            if args.a_ms is None:
                from . import CliError

                raise CliError("--a-ms is required with --model affine (the cost per token in ms; the paper's "
                               "35.47 ms is per 128-token block of the staircase, so it is not a default here)")
        c = 11.28 if args.c_ms is None else args.c_ms
        a = 35.47 if args.a_ms is None else args.a_ms
        b0 = 128 if args.b0 is None else args.b0
        _batch_constants_ms(model, c, a)
        if args.b_max is None:  # a custom engine has no budget of its own (the paper's 512 was taken silently)
            from . import CliError

            raise CliError("--c-ms/--a-ms/--b0 need --b-max B (the token budget per batch, vLLM's "
                           "--max-num-batched-tokens; a custom engine has no default: the paper's is --b-max 512)")
        if model == "staircase":
            bt = Staircase(c=c / 1e3, a=a / 1e3, b0=b0)
        elif model == "piecewise-linear":
            bt = PiecewiseLinear(c=c / 1e3, a=a / 1e3, b0=b0)
        else:
            bt = Affine(c=c / 1e3, a=a / 1e3)
        return Engine(batch_time=bt, b_max=args.b_max, k_max=args.k_max, name="custom" + paper_defaults_note(args))
    reject_ignored(f"--model {args.model}", args.model is not None,
                   "without --c-ms/--a-ms/--b0 (it is the form of those constants; a profile has its own model)")
    prof = load_profile(DEFAULT_PROFILE if args.profile is None else args.profile, option="--profile")
    changes = {}
    if args.b_max is not None:
        changes["b_max"] = args.b_max
    if args.k_max is not None:
        changes["k_max"] = args.k_max
    return prof.engine(**changes)


def paper_defaults_note(args) -> str:
    """`` (--a-ms and --b0 the paper's by default)``: the batch-time constants a custom engine took from the
    paper because they were not given (empty when all were given), so that the answer says so."""
    if getattr(args, "model", None) == "affine":
        missing = [f for f, v in (("--c-ms", args.c_ms),) if v is None]
    else:
        missing = [f for f, v in (("--c-ms", args.c_ms), ("--a-ms", args.a_ms), ("--b0", args.b0)) if v is None]
    if not missing:
        return ""
    names = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
    return f" ({names} the paper's by default)"


def fit_lines(args, width: int = 16) -> list:
    """The human lines stating the batch time fitted by ``--fit`` (none without it)."""
    res = getattr(args, "_fit_result", None)
    if res is None:
        return []
    from ..batchtime.fit import percent_text
    from .commands.fit import unread_text

    label = "fit:" if width == 0 else "fit"
    return [f"{label:<{max(width - 1, 0)}} {args.fit}: {res.n_points} points, {res.kind} chosen by held-out error: "
            f"{res.model.describe()}; held-out MAPE {percent_text(res.mape_heldout)} "
            f"({res.folds}-fold), in sample {percent_text(res.mape)}"
            + (f"; --b-max {args.b_max} is beyond the largest measured batch ({int(res.tokens.max())} tokens): t(b) "
               "is extrapolated there" if args.b_max is not None and args.b_max > res.tokens.max() else "")
            + (f"; {unread_text(args._fit_unread)}" if getattr(args, "_fit_unread", None) else "")]


def fit_json(args):
    """The ``--fit`` result for the JSON answer (``None`` without it)."""
    res = getattr(args, "_fit_result", None)
    if res is None:
        return None
    d = res.to_dict()
    d.pop("residuals_s", None)
    if getattr(args, "_fit_unread", None):
        d["columns_not_read"] = list(args._fit_unread)
    return {"csv": str(args.fit), **d}


def add_kv_arg(p, help_text: str = "KV-cache capacity in tokens") -> None:
    """``--kv-capacity TOKENS`` (the engine's ``kv_capacity_tokens``); see :func:`kv_from_args`.

    Listed in ``--help`` with the engine options when :func:`add_engine_args` has made that group (it is
    the engine's memory), else among the command's own options."""
    group = next((g for g in getattr(p, "_action_groups", ()) if str(g.title or "").startswith("engine")), p)
    group.add_argument("--kv-capacity", type=int, default=None, help=help_text)


def kv_from_args(args, engine: Engine) -> Engine:
    """``engine`` with the ``--kv-capacity`` given (checked, named by its flag), or unchanged."""
    if args.kv_capacity is None:
        return engine
    from .._validate import KV_WHY, MAX_KV_TOKENS, integer

    integer("--kv-capacity", args.kv_capacity, minimum=1, maximum=MAX_KV_TOKENS, why=KV_WHY)
    return engine.with_(kv_capacity_tokens=args.kv_capacity)


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


#: what ``--trace`` reads (every command's help says the same; docs/reference/descriptions.md, "Trace files")
TRACE_FILE_HELP = ("a trace file: CSV with header arrival_s,prompt_tokens,output_tokens (seconds >= 0, whole tokens "
                   ">= 1, rows in time order), Azure's CSV (TIMESTAMP,ContextTokens,GeneratedTokens; TIMESTAMP an "
                   "ISO date or seconds) or Mooncake JSONL (timestamp ms, input_length, output_length), gzipped or not,")


def add_workload_args(p: argparse.ArgumentParser, *, rate_required: bool = False, rate: bool = True,
                      trace_help: str | None = None) -> None:
    """Workload options; ``rate=False`` when the command sets the arrival rates itself (``--rate`` is then
    refused with the reason, and not listed in ``--help``); ``trace_help`` replaces ``--trace``'s help (a command
    that refuses a trace says why)."""
    g = p.add_argument_group("workload (vLLM's benchmark names beside fluidq's)")
    g.add_argument("--rate", "--request-rate", dest="rate", type=float, default=None, required=rate_required,
                   help="arrival rate, requests per second (Poisson; vLLM's --request-rate)" if rate
                   else argparse.SUPPRESS)
    g.add_argument("--prompt", "--input-len", dest="prompt", type=float, default=None,
                   help="prompt tokens per request (mean; default 100; vLLM's --input-len)")
    g.add_argument("--output", "--output-len", dest="output", type=float, default=None,
                   help="output tokens per request (mean; default 100; vLLM's --output-len)")
    g.add_argument("--geometric", action="store_true", help="geometric lengths with the given means "
                   "(default: deterministic)")
    g.add_argument("--trace", default=None, help=trace_help or f"{TRACE_FILE_HELP} or 'azure-conv' / "
                   "'azure-code'; lengths and arrival pattern from it")


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
        from . import CliError

        alt = " or --load L (a fraction of capacity)" if hasattr(args, "load") else ""
        raise CliError(f"give --rate R (an arrival rate in requests per second){alt}")
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
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        return False


def _lstat(option: str, text: str, what: str):
    """``os.lstat`` of a path given as an output (``None`` when nothing is there); one line otherwise."""
    import os

    from .._io import _os_reason, _shown
    from . import CliError

    try:
        return os.lstat(text)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # a loop or a file in the path, a name too long, an embedded NUL
        why = _os_reason(exc) if isinstance(exc, OSError) else "not a valid path"
        raise CliError(f"{option} {_shown(text)}: cannot write the {what} there ({why})") from None


def _link_text(text: str) -> str:
    """What a symlink points to, in words: a folder, a file, nothing (dangling), or itself (a loop)."""
    import errno
    import os

    try:
        st = os.stat(text)
    except OSError as exc:
        return "a symlink loop" if exc.errno == errno.ELOOP else "a dangling symlink (it points to nothing)"
    import stat

    return f"a symlink to a {'folder' if stat.S_ISDIR(st.st_mode) else 'file'}"


def output_file(option: str, path: str, *, inputs=(), figure: bool = True, suffixes=None, what: str = "file",
                hint: str | None = None, replaceable=None) -> str:
    """Check a path a command will write, before any work; return the path that will be written.

    Every CLI option that writes a file (``--plot``, ``--plot-network``, ``--csv``, ``--save``...) goes
    through here.  Refused, in one line naming ``option``: an empty name, a name that is a folder
    (``/``, ``dir/``, ``dir/.``, an existing folder), a symlink (fluidq neither writes through a link nor
    replaces one a user gave: a loop, a dangling link or a link to a file), a FIFO, a device (``/dev/null``)
    or a socket, a path in a folder that does not exist or in which no file can be created (read-only,
    no permission: a file is created there and removed, :func:`_probe_folder`), one of the command's input
    files.  A write the file system refuses all the same after the work goes through :func:`write_late`:
    the results are printed, then the command fails naming ``option``.

    ``inputs`` are ``(option, path)`` pairs the command reads (a path that is not an existing file,
    such as an embedded trace name, is skipped): the output may not be one of them.  ``suffixes``
    (with the dots) limits the extension of a file that is not a ``figure``; a figure's format is
    the one matplotlib takes from the extension: a path without one gets ``.png`` (what matplotlib
    writes), and the returned path says so; that ``.png`` file may not exist already (it is not the
    name the user gave).  An existing regular file given as the output is replaced (it is the output
    asked for) when it is empty or fluidq can tell it wrote it; else it is refused, naming ``option``, and
    left as it was.  A figure fluidq wrote carries matplotlib's mark (PNG, PDF, SVG, EPS, PS, PGF) or the one
    fluidq writes where matplotlib leaves none (JPEG, TIFF, GIF, WebP, AVIF): a user's photo ``x.png`` or
    ``x.jpg``, a PDF paper or a text file so named is refused; so is any existing raw or RGBA pixel dump
    (those formats carry no mark).  Any other output says what it wrote with ``replaceable = (test, kind)``:
    ``test(path)`` is true for a file fluidq wrote (it may raise ``OSError``: the refusal says why it could
    not read the file), ``kind`` names such a file in the refusal ("a sweep table"); without it any
    existing file is replaced.
    The file itself is written later by a temporary file and a rename
    (:func:`fluidq._io.write_output`).
    """
    import os
    import stat

    from . import CliError

    text = str(path) if path is not None else ""
    if not text.strip() or "\x00" in text:
        raise ParameterError(option, path, f"a {what} path")
    base = os.path.basename(text)
    if not base or base in (".", "..") or text.endswith(os.sep):
        raise ParameterError(option, text, f"a {what} name, not a folder", "give a file name in that folder")

    def not_an_input(q: Path) -> None:
        for in_opt, in_path in inputs:
            if in_path is not None and Path(str(in_path)).is_file() and _same_file(q, Path(str(in_path))):
                raise ParameterError(option, text, f"a {what} other than the input {in_opt} (writing it would "
                                     "overwrite that file)")

    def checked(q: Path, *, given: bool):
        st = _lstat(option, str(q), what)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            raise CliError(f"{option} {text}: {'' if given else str(q) + ' is '}{_link_text(str(q))}; fluidq "
                           f"neither writes through a link nor replaces one: give the {what}'s own path or a new name")
        if stat.S_ISDIR(st.st_mode):
            raise ParameterError(option, text, f"a {what} name (this is a folder)")
        if not stat.S_ISREG(st.st_mode):
            from .._io import _kind

            raise CliError(f"{option} {text}: {'' if given else str(q) + ' is '}{_kind(st.st_mode)}, not a file; "
                           f"fluidq writes only regular files (give a file name)")
        return st

    p = Path(text)
    not_an_input(p)
    st = checked(p, given=True)
    suffix = p.suffix.lower()
    if figure:
        formats = figure_formats()
        if not suffix:
            p = p.with_name(p.name + ".png")
            not_an_input(p)
            if checked(p, given=False) is not None:
                raise CliError(f"{option} {text}: the figure would be written to {p} (a figure name needs an "
                               f"extension), which exists already; give {p} itself to replace it, or a new name")
        elif suffix.lstrip(".") not in formats:
            raise ParameterError(option, text, "a file name ending in one of "
                                 + ", ".join("." + f for f in sorted(formats)), "the figure format comes from "
                                 "the extension")
        elif st is not None:
            _check_replaceable(option, text, p, st, _replaceable_figure, f"a {suffix[1:].upper()} figure")
    elif suffixes is not None and suffix not in suffixes:
        raise ParameterError(option, text, f"a file name ending in {' or '.join(suffixes)}", hint)
    elif st is not None and replaceable is not None:
        _check_replaceable(option, text, p, st, *replaceable)
    parent = p.parent
    if not parent.is_dir():
        raise ParameterError(option, text, f"a path in an existing folder (there is no folder {str(parent)!r})")
    _probe_folder(option, text, parent, what)
    return str(p)


def _probe_folder(option: str, text: str, parent: Path, what: str) -> None:
    """Refuse now, naming ``option``, an output file in a folder where no file can be created
    (:func:`fluidq._io.probe_folder`; the file is written by a temporary file in that folder and a rename,
    :func:`fluidq._io.atomic_write`), before the command's work, as :func:`output_folder` does for a folder.
    A write that fails later all the same (a full disk, a file too large) does not lose the results: see
    :func:`write_late`."""
    from .._io import probe_folder
    from . import CliError

    reason = probe_folder(parent)
    if reason is not None:
        raise CliError(f"{option} {text}: cannot write a {what} in the folder {str(parent)!r} "
                       f"({reason}); give a path in a folder you can write")


def write_late(args, option: str, path, write):
    """Write a file the command was asked for (``write()`` writes it and returns the path written), after the
    work, without losing the work: :func:`output_file` checked ``path`` before the work, but the file system
    may still refuse the write (a full disk, a file too large, a folder made read-only meanwhile).  Such a
    failure is kept on ``args`` and ``None`` returned (the command says no path); :func:`fluidq.cli.emit`
    prints the results all the same, then the command fails naming ``option`` and the file (exit 2)."""
    from ..errors import DataError

    try:
        return write()
    except (DataError, OSError) as exc:
        if isinstance(exc, DataError):
            reason = str(exc)
        else:
            from .._io import _os_reason

            reason = f"cannot write it ({_os_reason(exc)})"
        text = str(path)
        said = f"{option}: {reason}" if text in reason else f"{option} {text}: {reason}"
        args._unwritten = [*getattr(args, "_unwritten", ()), said]
        return None


def _check_replaceable(option: str, text: str, p: Path, st, test, kind: str) -> None:
    """The one refusal of an existing output file fluidq cannot tell it wrote (``test(p)`` false): an empty
    file is replaced (nothing is lost), any other is left as it was, naming ``option``."""
    from .._io import _os_reason
    from . import CliError

    if st.st_size == 0:
        return
    try:
        ours = test(p)
    except OSError as exc:
        raise CliError(f"{option} {text}: cannot read the existing file to check that fluidq wrote it "
                       f"({_os_reason(exc)}), so it is not replaced; remove it or give a new name") from None
    if not ours:
        raise CliError(f"{option} {text}: an existing file that is not {kind} (fluidq did not write it), so it is "
                       "not replaced; remove it or give a new name")


def file_head(p, n: int = 1 << 16) -> bytes:
    """The first ``n`` bytes of an existing output file, read without blocking (a path swapped for a FIFO
    since :func:`output_file`'s check cannot hang the command); ``OSError`` when it cannot be read."""
    import os

    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        return os.read(fd, n)
    finally:
        os.close(fd)


def file_tail(p, n: int = 1 << 16) -> bytes:
    """The last ``n`` bytes of an existing output file (as :func:`file_head`; a WebP figure's mark is at its
    end); ``OSError`` when it cannot be read."""
    import os

    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, n, max(0, size - n))
    finally:
        os.close(fd)


def _replaceable_figure(p: Path) -> bool:
    """Whether an existing file given as a figure may be replaced: it carries matplotlib's mark (PNG's
    ``Software`` text chunk; the creator field of PDF, SVG, EPS, PS, PGF) or fluidq's (the text field
    fluidq writes in JPEG, TIFF, GIF, WebP and AVIF, where matplotlib leaves none:
    :data:`fluidq.plotting._PIL_MARK`), in its first or last 64 KiB; a user's own image of any format,
    or a document or data file that only has such a name, is not (``OSError``: the file cannot be read)."""
    import zlib

    head = file_head(p)
    if p.suffix.lower() == ".svgz" and head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 1 << 16)
        except zlib.error:
            return False
    return b"matplotlib" in head.lower() or b"matplotlib" in file_tail(p).lower()


def output_folder(option: str, path: str, *, marker: str, what: str) -> Path:
    """Check a folder a command will fill (``what``: the command, "report" or "validate"), before any work.

    The folder may be new (in an existing parent folder, like every output path), empty, or one that
    fluidq wrote before (it holds ``marker``, a regular file: a symlink named so does not count); a
    folder with other files is refused rather than overwritten.  ``option`` itself may not be a
    symlink (to a folder, dangling, or a loop): fluidq does not write through links.  Call
    :func:`mark_folder` once the command has written it.
    """
    import stat

    from . import CliError

    text = str(path) if path is not None else ""
    if not text.strip() or "\x00" in text:
        raise ParameterError(option, path, f"a folder for the files of fluidq {what}")
    import os

    given, text = text, text.rstrip(os.sep) or os.sep  # "link/" would name the folder the link points to
    p = Path(text)
    st = _lstat(option, text, f"{what} folder")
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise CliError(f"{option} {given}: {_link_text(text)}; fluidq does not write through links: give the "
                       f"folder itself (its real path) or a new folder name")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        from .._io import _kind

        kind = "an existing file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
        raise ParameterError(option, given, f"a folder for the files of fluidq {what}, not {kind}", "give a new folder name")
    if st is None:
        if not p.parent.is_dir():
            raise ParameterError(option, text, "a folder in an existing folder (there is no folder "
                                 f"{str(p.parent)!r}; create it first)")
        try:  # a folder the file system refuses to create (read-only, no permission, /proc): said now, named
            p.mkdir()
            p.rmdir()
        except OSError as exc:
            raise CliError(f"{option} {text}: cannot create the {what} folder there "
                           f"({exc.strerror or type(exc).__name__})") from None
        return p
    mst = _lstat(option, str(p / marker), f"{what} folder")
    if mst is not None and stat.S_ISREG(mst.st_mode):
        return p
    if mst is not None:
        raise CliError(f"{option} {text}: its {marker} is not the file `fluidq {what}` leaves there (it is "
                       f"{_link_text(str(p / marker)) if stat.S_ISLNK(mst.st_mode) else 'not a regular file'}), so "
                       "the folder is not written over; give a new or empty folder")
    try:
        names = sorted(q.name for q in p.iterdir())
    except OSError as exc:
        from .._io import _os_reason

        raise CliError(f"{option} {text}: cannot list the folder ({_os_reason(exc)})") from None
    if names:
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        raise CliError(f"{option} {text}: the folder already holds files ({shown}) and no {marker} file saying "
                       f"`fluidq {what}` wrote it, so they are not replaced; give a new or empty folder, or remove "
                       f"those files (a folder fluidq wrote has that file and is written over)")
    return p


def mark_folder(folder: Path, marker: str, what: str) -> None:
    """Leave ``marker`` in a folder fluidq wrote, so that the next run may write over it.

    Written by a temporary file and a rename: a symlink planted under that name is replaced, not followed.
    """
    from .._io import write_output

    folder = Path(folder)
    if folder.is_dir() and not folder.is_symlink():
        write_output(folder / marker, f"This folder was written by `fluidq {what}`; running it again with the "
                     "same --out replaces its files.\n", what=f"{what} folder marker")


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
    key = _trace_key(name)
    if key is not None and _LAST_TRACE.get("key") == key:  # the context check read it already in this command
        w = _LAST_TRACE["workload"]
        return w if rate_per_s is None else w.with_rate(rate_per_s)
    if str(name) not in EMBEDDED_TRACES:  # a FIFO, a device, a loop...: one line naming the option
        try:
            os.lstat(str(name))
        except FileNotFoundError:
            pass  # the loader names the embedded traces
        except (OSError, ValueError):
            input_file(option, name, what="trace")
        else:
            input_file(option, name, what="trace")
    try:
        w = Workload.from_trace(name)
    except DataError as exc:  # the loader names the file; the line names the option too
        msg = str(exc)
        if msg.startswith(option):
            raise
        if msg.startswith(f"trace {name}"):  # (the file reader's own 'trace PATH: ...': the path once)
            msg = msg[len("trace "):]
        raise DataError(f"{option} {msg}" if msg.startswith(str(name)) else f"{option} {name}: {msg}") from None
    bad = w.trace.out_of_order if w.trace is not None else None
    if bad is not None and Path(str(name)).is_file():
        n1, n0, gap = bad
        raise DataError(f"{option} {name}: line {n1} arrives {gap:g} s before line {n0}: the rows must be "
                        "in time order (sort the file by its timestamp column)")
    if key is not None:
        _LAST_TRACE.update(key=key, workload=w)
    return w if rate_per_s is None else w.with_rate(rate_per_s)


#: the last trace ``load_cli_trace`` read (one slot): a command's context check and its workload read the same
#: ``--trace``, parsed once (it was parsed twice: 0.3 of 1.05 s of ``check --gpu ... --trace azure-conv``)
_LAST_TRACE: dict = {}


def _trace_key(name):
    """What identifies a trace's contents: an embedded trace by its name, a regular file by its path, size and
    modification time (an edited file is read again); None (never reused) for anything else."""
    import os

    from ..workload import EMBEDDED_TRACES

    if str(name) in EMBEDDED_TRACES:
        return ("embedded", str(name))
    try:
        st = os.stat(str(name))
    except (OSError, ValueError):
        return None
    import stat

    if not stat.S_ISREG(st.st_mode):
        return None
    return ("file", os.path.realpath(str(name)), st.st_size, st.st_mtime_ns)


def comma_list(option: str, text: str, what: str = "names") -> list[str]:
    """The comma-separated items of an option, stripped; an empty item (``',a,'``, ``'a,,b'``) is a typo
    and refused naming the option, never skipped."""
    items = [s.strip() for s in str(text).split(",")]
    if not all(items):
        raise ParameterError(option, text, f"comma-separated {what}, none empty")
    return items


def check_simulation_args(args) -> None:
    """``--seed``, ``--horizon`` and ``--replications`` (``fluidq network``, ``fluidq disagg``): each needs
    ``--simulate`` (else it would be ignored), a seed is >= 0, a horizon a finite number of seconds > 0, and at
    least two replications (an interval), at most ``MAX_RUNS``."""
    from .._validate import integer
    from ..sim.core import MAX_RUNS
    from . import CliError

    if args.seed is not None and args.seed < 0:
        raise ParameterError("--seed", args.seed, "an integer >= 0")
    if not args.simulate:
        for opt, v in (("--horizon", args.horizon), ("--replications", args.replications), ("--seed", args.seed)):
            if v is not None:
                raise CliError(f"{opt} {v:g} needs --simulate (without it nothing is simulated and {opt} "
                               "would be ignored)")
    if args.horizon is not None and not (math.isfinite(args.horizon) and args.horizon > 0):
        raise ParameterError("--horizon", args.horizon, "a finite number of seconds > 0")
    if args.replications is not None and args.replications < 2:
        raise ParameterError("--replications", args.replications, "an integer >= 2",
                             "a confidence interval needs at least two runs")
    if args.replications is not None:
        integer("--replications", args.replications, maximum=MAX_RUNS, why="the runs are kept for the verdict")


@contextlib.contextmanager
def parameters_as_flags(flags: dict, *, shown: dict | None = None, args=None, folders: tuple = ()):
    """Re-raise a library :class:`~fluidq.errors.ParameterError` under the command-line flag that set the value:
    ``flags`` is ``{Python name: flag}`` (``horizon_s`` -> ``--horizon``); an error on any other name passes
    unchanged.  ``shown`` gives, by Python name, the value to show in place of the library's (the path typed for
    ``--model-config`` where the library names the model it read).  With ``args``, a KV cache the user did not give
    (vLLM's memory planner's estimate, recorded by ``kv_estimated``) is named as that estimate, not as
    ``--kv-capacity``.  ``folders``: Python names whose flag takes a folder, said as ``--flag DIR: expected ...``.

    The one mapping of the CLI's commands: ``--profile-dir`` (:func:`profile_dir_flags`), the network runs'
    sizes, the KV estimate's options."""
    try:
        yield
    except ParameterError as exc:
        if exc.name == "kv_capacity_tokens" and args is not None:
            from .commands._roofline_args import estimate_error

            estimate_error(args, exc.value, exc.expected, exc.hint)  # raises when the cache is the estimate
        flag = flags.get(exc.name)
        if flag is None:
            raise
        if exc.name in folders:
            from . import CliError

            raise CliError(f"{flag} {exc.value}: expected {exc.expected}"
                           + (f" ({exc.hint})" if exc.hint else "")) from None
        expected, hint = _flag_words(exc.expected, flags), _flag_words(exc.hint, flags)
        value = (shown or {}).get(exc.name, exc.value)
        if value is None:  # a flag the user did not give (a link model, a GPU's memory): not "--flag=None"
            from . import CliError

            raise CliError(f"{flag} not given: expected {expected}" + (f" ({hint})" if hint else "")) from None
        raise ParameterError(flag, value, expected, hint) from None


def _flag_words(text: str | None, flags: dict) -> str | None:
    """A library message's Python parameter names (those of ``flags`` with an underscore: identifiers, not
    words) as the flags that set them, and its own ``; on the command line ...`` clause (which says the same in
    flags) dropped: ``link_bandwidth_gbps and link_latency_us`` -> ``--link-bandwidth-gbps and --link-latency-us``."""
    if not text:
        return text
    import re

    text = text.split("; on the command line ", 1)[0]
    for name, flag in flags.items():
        if "_" in name:
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", flag, text)
    return text


def profile_dir_flags(args) -> dict:
    """``parameters_as_flags``'s arguments for a ``--profile-dir`` deployment (``predict_deployment``,
    ``deployment_engine``): vLLM's Python names as the flags that set them, the model as ``--model-config`` (the
    path typed), the folder as ``--profile-dir``, and a KV cache the user did not give as the planner's estimate."""
    from .commands._roofline_args import FLAGS

    return {"flags": {**FLAGS, "model": "--model-config", "profile_dir": "--profile-dir",
                      "link_bandwidth_gbps": "--link-bandwidth-gbps", "link_latency_us": "--link-latency-us",
                      "all_reduce_csv": "--all-reduce-csv", "gpu_memory_gib": "--gpu-memory-gib"},
            "shown": {} if getattr(args, "model_config", None) is None else {"model": args.model_config},
            "args": args, "folders": ("profile_dir",)}


def check_kv_fits(engine: Engine, workload: Workload, args=None) -> None:
    """Refuse a ``--kv-capacity`` smaller than the smallest request of ``workload`` (none could run).  With
    ``args`` whose KV cache is vLLM's memory planner's estimate (no ``--kv-capacity`` given), the error
    says it is the estimate and from what (:func:`~fluidq.cli.commands._roofline_args.estimate_error`)."""
    if engine.kv_capacity_tokens is None:
        return
    from ..capacity import min_footprint_tokens

    small = min_footprint_tokens(workload)
    if small is not None and small > engine.kv_capacity_tokens:
        expected = (f"at least {small} tokens: no request fits (the smallest holds {small} KV tokens, "
                    "prompt + output, at its end)")
        if args is not None:
            from .commands._roofline_args import estimate_error

            estimate_error(args, engine.kv_capacity_tokens, expected)
        raise ParameterError("--kv-capacity", engine.kv_capacity_tokens, expected)


def shared_reasons(reasons, *, min_chars: int = 80):
    """``(reasons, footnotes)``: ``reasons`` with a long tail that several of them repeat word for word (the
    part after one of their ``": "``, at least ``min_chars`` long) replaced by a reference ``see [1] below``,
    and the footnote lines ``[1] tail`` to print once after them.

    ``fluidq check --k-max 64`` gives each scheduler's verdict the same few hundred characters on why k_max
    binds; a table line per scheduler then reads as that sentence repeated.  Reasons that share nothing
    come back unchanged, with no footnotes."""
    out = [str(r) for r in reasons]
    notes = []
    while True:
        counts = {}
        for r in out:
            seen = set()
            i = r.find(": ")
            while i != -1:
                tail = r[i + 2:]
                if len(tail) >= min_chars and tail not in seen and not tail.startswith("see ["):
                    seen.add(tail)
                    counts[tail] = counts.get(tail, 0) + 1
                i = r.find(": ", i + 1)
        shared = [t for t, n in counts.items() if n >= 2]
        if not shared:
            return out, notes
        tail = max(shared, key=len)
        notes.append(f"[{len(notes) + 1}] {tail}")
        ref = f"see [{len(notes)}] below"
        out = [r[:-len(tail)] + ref if r.endswith(": " + tail) else r for r in out]


def counted(text: str) -> str:
    """``text`` with each ``N thing(s)`` whose count is written before it in the right form: ``1 batch
    shape(s)`` -> ``1 batch shape``, ``2 batch shape(s)`` -> ``2 batch shapes`` (messages of the Python
    API hedge the plural; a CLI answer knows the count).

    >>> counted("5 replication(s) of 2 batch shape(s), 1 run(s)")
    '5 replications of 2 batch shapes, 1 run'
    """
    import re

    def one(m):
        n, words, word = m.group(1), m.group(2), m.group(3)
        return f"{n} {words}{word}" + ("" if n.replace(",", "") == "1" else "s")

    return re.sub(r"(?<![\w.])(\d[\d,]*) ((?:[a-z-]+ ){0,2}?)([a-z-]+)\(s\)", one, str(text))


def fmt_tokens(x) -> str:
    """A mean number of tokens for people: :data:`~fluidq.results.MEANINGFUL_DIGITS` significant digits, a
    whole number without decimals (``211.126`` -> ``211.1``, ``1154.7`` -> ``1,155``, ``100.0`` -> ``100``, and
    ``224.99999999999997``, a mean within float noise of a whole number, -> ``225``);
    what ``fluidq check`` should print for ``m_p``/``m_d``."""
    from ..results import MEANINGFUL_DIGITS, fmt_value

    if isinstance(x, (int, float)) and math.isfinite(x) and abs(x) < 1e15 and (
            float(x).is_integer() or abs(x - round(x)) <= 1e-9 * max(1.0, abs(x))):  # a mean within float noise of one
        return f"{round(x):,}"
    return fmt_value(x, digits=MEANINGFUL_DIGITS)


def lengths_text(workload) -> str:
    """A workload's prompt / output lengths in words for a human line: ``100 / 100 tokens (fixed)``,
    ``mean 100 / 200 tokens (geometric)``; other length laws by their means (never a Python repr such as
    ``Fixed(n=100)``)."""
    from ..workload import Fixed, Geometric

    p, o = workload.prompt_tokens, workload.output_tokens
    if isinstance(p, Fixed) and isinstance(o, Fixed):
        return f"{p.n:,} / {o.n:,} tokens (fixed)"
    if isinstance(p, Geometric) and isinstance(o, Geometric):
        return f"mean {fmt_tokens(p.mean)} / {fmt_tokens(o.mean)} tokens (geometric)"

    def one(x):
        if isinstance(x, Fixed):
            return f"{x.n:,} (fixed)"
        kind = type(x).__name__.lower()
        return f"mean {fmt_tokens(x.mean)} ({kind})"

    return f"{one(p)} / {one(o)} tokens"


def engine_text(engine: Engine) -> str:
    """``name: t(b) description`` for a human line, the name once: a roofline engine's batch time already
    begins with it (``roofline Llama-3.1-8B on 1 x H100-SXM5-80GB (compute ...)``)."""
    bt = engine.batch_time.describe()
    if not engine.name or bt.startswith(engine.name):
        return bt
    return f"{engine.name}: {bt}"


#: the swap cost of a KV token (``--preemption swap``): one option, ``--swap-ms-per-token`` (milliseconds, as
#: every other time of the command line: ``--c-ms``, ``--a-ms``), with ``--swap-us-per-token`` (microseconds)
#: as its alias in every command that takes it; ``{flag: (unit, units per ms)}``
SWAP_FLAGS = {"--swap-ms-per-token": ("ms", 1.0), "--swap-us-per-token": ("us", 1e3)}


def add_swap_args(g) -> None:
    """``--swap-ms-per-token MS`` and its alias ``--swap-us-per-token US`` (the same cost; give one)."""
    g.add_argument("--swap-ms-per-token", type=float, default=None, metavar="MS",
                   help="swap cost per KV token, ms (with --preemption swap); --swap-us-per-token US gives it in "
                        "microseconds (1 ms = 1000 us)")
    g.add_argument("--swap-us-per-token", type=float, default=None, metavar="US",
                   help="the swap cost per KV token in microseconds: an alias of --swap-ms-per-token")


def swap_cost(args, unit: str):
    """``(flag, value as typed, value in unit)`` of the swap cost given (``unit`` ``"ms"`` or ``"us"``, the
    command's own), or ``(None, None, None)``.  The value is checked under the flag typed: finite, >= 0 and at
    most the longest batch time; both spellings at once are refused.  A value typed in ``unit`` is returned
    unchanged; the other spelling's is multiplied or divided by 1000 (one rounding)."""
    from . import CliError

    given = [(flag, getattr(args, flag[2:].replace("-", "_"), None)) for flag in SWAP_FLAGS]
    given = [(flag, v) for flag, v in given if v is not None]
    if len(given) > 1:
        raise CliError("--swap-ms-per-token and --swap-us-per-token are one swap cost in two units "
                       "(1 ms = 1000 us): give one of them")
    if not given:
        return None, None, None
    flag, v = given[0]
    typed_unit, per_ms = SWAP_FLAGS[flag]
    if not (math.isfinite(v) and v >= 0):
        raise ParameterError(flag, v, "a finite number of " + ("ms" if typed_unit == "ms" else "microseconds")
                             + " >= 0")
    from .._validate import MAX_BATCH_SECONDS, real

    real(flag, v, maximum=MAX_BATCH_SECONDS * 1e3 * per_ms,
         why="swapping one KV token costs at most the longest batch time, 1e6 s; a larger cost overflows the "
             "simulated times and their squares")
    if typed_unit == unit:
        return flag, v, v
    return flag, v, (v * 1e3 if unit == "us" else v / 1e3)


def distinct_policies(flag: str, names) -> None:
    """Refuse a policy given twice (``--policy sarathi --policy SARATHI``), as ``latency --loads`` refuses a load
    given twice: the same verdict would be computed and printed twice."""
    keys = [str(n).strip().lower().replace("_", "-") for n in names or ()]
    twice = [n for i, n in enumerate(names or ()) if keys[i] in keys[:i]]
    if twice:
        raise ParameterError(flag, twice[0], "distinct policies", f"{twice[0]!r} is given twice")
