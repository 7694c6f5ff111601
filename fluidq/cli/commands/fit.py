"""``fluidq fit``: fit a batch-time model to a CSV of measured iteration times."""
from __future__ import annotations

import csv
import math

from .. import emit

_KINDS = ["auto", "staircase", "piecewise-linear", "affine", "tabulated", "context-aware"]


def register(sub):
    p = sub.add_parser("fit", help="fit t(b) (or t(b, kv)) to measured batch times from a CSV",
                       description="Fit a batch-time model to a CSV with columns tokens,seconds (and optionally "
                       "kv_tokens). The form is chosen by held-out error with --kind auto.")
    p.add_argument("csv", help="CSV file with a header: tokens,seconds[,kv_tokens]")
    p.add_argument("--kind", choices=_KINDS, default="auto", help="model form (default: auto, by held-out error)")
    p.add_argument("--loss", choices=["relative", "absolute"], default="relative",
                   help="least squares on relative errors (default) or on seconds")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds for the held-out error (>= 2)")
    p.add_argument("--plot", default=None, metavar="PATH", help="write a plot of the fit to PATH (format from the "
                   "extension: png, pdf, svg...; none: .png)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def read_fit_csv(path, option: str = "csv") -> dict:
    """Columns ``tokens``, ``seconds`` and optional ``kv_tokens`` of a CSV, as float lists, and under
    ``unread`` the names of the header's other columns (not read).

    ``option`` names the file in every message (``csv`` for ``fluidq fit``, ``--fit`` for the commands
    that fit their engine from a CSV).

    Only a regular text file is read (a FIFO or device is refused: it could block; a gzipped file is
    decompressed).  Every value is checked where it stands, so each problem is one line naming the
    file, the line and the column: token counts are whole numbers in ``[1, MAX_FIT_TOKENS]`` (``kv_tokens``
    may be 0, at most ``MAX_FIT_KV_TOKENS``), times are finite seconds in ``[MIN_FIT_SECONDS,
    MAX_FIT_SECONDS]``; without ``kv_tokens`` the sizes must be strictly increasing.
    """
    from ..._io import read_text
    from ...batchtime.fit import MAX_FIT_KV_TOKENS, MAX_FIT_SECONDS, MAX_FIT_TOKENS, MIN_FIT_SECONDS
    from ...errors import DataError

    name = f"{option}={str(path)!r}"
    text = read_text(option, path, what="CSV file")
    reader = csv.reader(text.splitlines())
    rows, lines = [], []  # the non-blank rows and their line numbers in the file (1-based)
    try:
        for r in reader:
            if r and any(c.strip() for c in r):
                rows.append(r)
                lines.append(reader.line_num)
    except csv.Error as exc:
        raise DataError(f"{name}: line {reader.line_num + 1} is not a CSV row ({exc})") from None
    if not rows:
        raise DataError(f"{name}: empty file (expected a header tokens,seconds[,kv_tokens])")
    header = [h.strip().lower() for h in rows[0]]
    shown = ",".join(header)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    for col in ("tokens", "seconds", "kv_tokens"):
        if header.count(col) > 1:
            raise DataError(f"{name}: the header has the column {col!r} {header.count(col)} times (header: {shown})")
    for col in ("tokens", "seconds"):
        if col not in header:
            raise DataError(f"{name}: no {col!r} column (header: {shown}); expected tokens,seconds[,kv_tokens]")
    if len(rows) == 1:
        raise DataError(f"{name}: header but no data rows")
    bounds = {"tokens": (1, MAX_FIT_TOKENS, "a whole number of tokens"),
              "kv_tokens": (0, MAX_FIT_KV_TOKENS, "a whole number of cached KV tokens"),
              "seconds": (MIN_FIT_SECONDS, MAX_FIT_SECONDS, "a time in seconds")}
    cols = {c: [] for c in ("tokens", "seconds", "kv_tokens") if c in header}
    # the other columns are not read; the answer names them (a 'kv' or 'context_tokens' column meant as
    # kv_tokens would otherwise give a t(b) fit without a word)
    cols["unread"] = [h for h in header if h not in cols]
    for i, r in zip(lines[1:], rows[1:]):
        if len(r) != len(header):
            raise DataError(f"{name}: line {i} has {len(r)} fields, the header {len(header)}")
        for c in cols:
            if c == "unread":
                continue
            v = r[header.index(c)].strip()
            shown_v = v if len(v) <= 40 else v[:37] + "..."
            try:
                x = float(v)
            except ValueError:
                raise DataError(f"{name}: line {i}, column {c!r}: {shown_v!r} is not a number") from None
            if not math.isfinite(x):
                raise DataError(f"{name}: line {i}, column {c!r}: {shown_v!r} is not finite")
            lo, hi, what = bounds[c]
            if c != "seconds" and x != int(x):
                raise DataError(f"{name}: line {i}, column {c!r}: {shown_v!r} is not a whole number "
                                "(token counts are integers)")
            if x < lo:
                raise DataError(f"{name}: line {i}, column {c!r}: {shown_v!r} is below {lo:g}; expected {what} "
                                f">= {lo:g}")
            if x > hi:
                why = ("the b0 search would need a grid of more than 16,000 block sizes" if c == "tokens" else
                       "a batch time beyond 11 days is not a measurement in seconds" if c == "seconds" else
                       "larger counts lose precision in the least squares")
                raise DataError(f"{name}: line {i}, column {c!r}: {shown_v!r} is above {hi:,}, the most fluidq fits "
                                f"({why})")
            cols[c].append(x)
    if "kv_tokens" not in cols:  # t(b): one time per size, sizes in increasing order (file line numbers)
        b = cols["tokens"]
        for k in range(1, len(b)):
            if b[k] == b[k - 1]:
                raise DataError(f"{name}: lines {lines[k]} and {lines[k + 1]} both have tokens={b[k]:g} (duplicate size): "
                                "average repeated measurements of a size into one row")
            if b[k] < b[k - 1]:
                raise DataError(f"{name}: line {lines[k + 1]} has tokens={b[k]:g} after tokens="
                                f"{b[k - 1]:g} on line {lines[k]}: sizes must be strictly increasing; sort the data rows by "
                                "tokens (e.g. keep the header and run: sort -t, -k1,1n)")
    need = 4 if "kv_tokens" in cols else 3
    n = len(cols["tokens"])
    if n < need:
        raise DataError(f"{name}: {n} data row{'s' if n != 1 else ''}; a fit needs at least {need} measured points"
                        + (" (with kv_tokens)" if need == 4 else " (sizes)"))
    return cols


def unread_text(unread) -> str:
    """The columns of a fit CSV that were not read, in words."""
    return (f"column{'s' if len(unread) > 1 else ''} not read: {', '.join(repr(c) for c in unread)} "
            "(only tokens, seconds and kv_tokens are)")


#: the longest time one iteration of an LLM engine plausibly takes, seconds: a few seconds at most for a
#: whole budget of prompt tokens on one engine (the shipped profiles stay under 2 s); a "seconds" column above
#: it is likely milliseconds or microseconds (fluidq fit still fits it: a slow engine is not refused)
PLAUSIBLE_ITERATION_S = 10.0


def unit_warning(seconds, option: str, path) -> str | None:
    """One line when the batch times of a fit CSV are implausible for one iteration (some above
    :data:`PLAUSIBLE_ITERATION_S`), naming the unit they are more likely in; ``None`` otherwise."""
    import numpy as np

    t = np.asarray(seconds, dtype=float)
    if t.size == 0 or not float(t.max()) > PLAUSIBLE_ITERATION_S:
        return None
    med = float(np.median(t))
    unit = ("milliseconds (divide by 1,000)" if med / 1e3 <= PLAUSIBLE_ITERATION_S else
            "microseconds (divide by 1,000,000)" if med / 1e6 <= PLAUSIBLE_ITERATION_S else "another unit")
    return (f"{option}={str(path)!r}: batch times up to {float(t.max()):,.4g} s (median {med:,.4g} s) per iteration; "
            f"one iteration of an LLM engine takes milliseconds to a few seconds (above {PLAUSIBLE_ITERATION_S:g} s is "
            f"implausible): is the 'seconds' column in {unit}? (fitted as seconds)")


def fit_csv(path, option: str = "csv", *, kind: str = "auto", folds: int = 5, loss: str = "relative",
            unread: list | None = None, command: str | None = None):
    """Read ``path`` (:func:`read_fit_csv`) and fit it (:func:`fluidq.batchtime.fit.fit_batch_time`);
    every problem with the data is one line naming ``option`` and the file.  ``unread``, a list, receives
    the names of the columns not read.  Times implausible for one iteration (:func:`unit_warning`) are
    one warning line on stderr (``fluidq COMMAND: warning: ...``) after a fit that succeeds (the fit is
    returned as usual; a fit that fails is its own one-line error)."""
    import sys

    from ...batchtime.fit import fit_batch_time
    from ...errors import DataError, ParameterError

    cols = read_fit_csv(path, option)
    if unread is not None:
        unread.extend(cols["unread"])
    try:
        res = fit_batch_time(cols["tokens"], cols["seconds"], kind=kind, kv_tokens=cols.get("kv_tokens"),
                             folds=folds, loss=loss)
    except (DataError, ParameterError) as exc:  # about the data: say which file
        raise DataError(f"{option}={str(path)!r}: {exc}") from None
    # worse than the mean time: no form describes the data.  A hair below 0 is the mean itself (flat times
    # fitted by relative least squares: t(b) = c + 0*b lands a little off their plain mean), so it passes
    if res.kind != "tabulated" and not res.r2 >= -1e-3:
        raise DataError(f"{option}={str(path)!r}: no batch-time form fits these times: the best ({res.kind}: "
                        f"{res.model.describe()}) has R^2 = {res.r2:.3g} < 0 (worse than their mean); do the times "
                        "increase with the batch size?" + (" (--kind tabulated interpolates any data)"
                                                           if option == "csv" else ""))
    warn = unit_warning(cols["seconds"], option, path)  # (after the fit: a failed one is its own one line)
    if warn:
        print(f"fluidq{' ' + command if command else ''}: warning: {warn}", file=sys.stderr)
    return res


def run(args):
    from ...errors import ParameterError
    from ..common import output_file, write_late

    if args.folds < 2:
        raise ParameterError("--folds", args.folds, "an integer >= 2 (one fold is held out at a time)")
    if args.plot is not None:
        args.plot = output_file("--plot", args.plot, inputs=[("CSV", args.csv)])
    unread: list = []
    res = fit_csv(args.csv, kind=args.kind, folds=args.folds, loss=args.loss, unread=unread, command="fit")
    from ...results import fmt_value

    from ...batchtime.fit import percent_text

    def pct(x, spec=None):
        return percent_text(x)

    def ms(x):
        return None if x is None else 1e3 * x

    lines = [f"data            {args.csv}: {res.n_points} points, {res.tokens.min():g}..{res.tokens.max():g} tokens"
             + (f"; {unread_text(unread)}" if unread else ""),
             f"model           {res.kind}: {res.model.describe()}",
             f"R^2             {fmt_value(res.r2, '.5f')}",
             f"MAPE            {pct(res.mape)} in sample, {pct(res.mape_heldout)} held out "
             f"({res.folds}-fold)",
             f"max error       {pct(res.max_rel_error)}  ({'< 0.001' if res.max_abs_error_s is not None and abs(res.max_abs_error_s) < 1e-6 else fmt_value(ms(res.max_abs_error_s))} ms)"]
    if res.candidates:
        lines.append("candidates      " + ", ".join(f"{k} {pct(v)}" for k, v in
                                                  sorted(res.candidates.items(), key=lambda kv: kv[1])))
    out = res.to_dict()
    if unread:
        out["columns_not_read"] = unread
    if args.plot:
        out["plot"] = write_late(args, "--plot", args.plot, lambda: res.plot(path=args.plot))
        if out["plot"]:
            lines.append(f"plot            {out['plot']}")
    emit(args, out, "\n".join(lines))
