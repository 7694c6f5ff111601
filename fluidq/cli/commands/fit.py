"""``fluidq fit``: fit a batch-time model to a CSV of measured iteration times."""
from __future__ import annotations

import csv
import math
from pathlib import Path

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


def read_fit_csv(path) -> dict:
    """Columns ``tokens``, ``seconds`` and optional ``kv_tokens`` of a CSV, as float lists."""
    from ...errors import DataError

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"csv={str(p)!r}: no such file")
    try:
        text = p.read_text()
    except UnicodeDecodeError as exc:
        raise DataError(f"csv={str(p)!r}: not a text file") from exc
    reader = csv.reader(text.splitlines())
    rows, lines = [], []  # the non-blank rows and their line numbers in the file (1-based)
    for r in reader:
        if r and any(c.strip() for c in r):
            rows.append(r)
            lines.append(reader.line_num)
    if not rows:
        raise DataError(f"csv={str(p)!r}: empty file (expected a header tokens,seconds[,kv_tokens])")
    header = [h.strip().lower() for h in rows[0]]
    for col in ("tokens", "seconds"):
        if col not in header:
            raise DataError(f"csv={str(p)!r}: no {col!r} column (header: {','.join(header)}); "
                            "expected tokens,seconds[,kv_tokens]")
    if len(rows) == 1:
        raise DataError(f"csv={str(p)!r}: header but no data rows")
    cols = {c: [] for c in ("tokens", "seconds", "kv_tokens") if c in header}
    for i, r in zip(lines[1:], rows[1:]):
        if len(r) != len(header):
            raise DataError(f"csv={str(p)!r}: line {i} has {len(r)} fields, the header {len(header)}")
        for c in cols:
            v = r[header.index(c)].strip()
            try:
                x = float(v)
            except ValueError:
                raise DataError(f"csv={str(p)!r}: line {i}, column {c!r}: {v!r} is not a number") from None
            if not math.isfinite(x):
                raise DataError(f"csv={str(p)!r}: line {i}, column {c!r}: {v!r} is not finite")
            if c != "seconds" and x != int(x):
                raise DataError(f"csv={str(p)!r}: line {i}, column {c!r}: {v!r} is not a whole number "
                                "(token counts are integers)")
            cols[c].append(x)
    if "kv_tokens" not in cols:  # t(b): one time per size, sizes in increasing order (file line numbers)
        b = cols["tokens"]
        for k in range(1, len(b)):
            if b[k] == b[k - 1]:
                raise DataError(f"csv={str(p)!r}: lines {lines[k]} and {lines[k + 1]} both have tokens={b[k]:g} (duplicate size): "
                                "average repeated measurements of a size into one row")
            if b[k] < b[k - 1]:
                raise DataError(f"csv={str(p)!r}: line {lines[k + 1]} has tokens={b[k]:g} after tokens="
                                f"{b[k - 1]:g} on line {lines[k]}: sizes must be strictly increasing; sort the data rows by "
                                "tokens (e.g. keep the header and run: sort -t, -k1,1n)")
    return cols


def run(args):
    from ...batchtime.fit import fit_batch_time
    from ...errors import ParameterError
    from ..common import output_file

    if args.folds < 2:
        raise ParameterError("--folds", args.folds, "an integer >= 2 (one fold is held out at a time)")
    if args.plot:
        args.plot = output_file("--plot", args.plot, inputs=[("CSV", args.csv)])
    cols = read_fit_csv(args.csv)
    res = fit_batch_time(cols["tokens"], cols["seconds"], kind=args.kind, kv_tokens=cols.get("kv_tokens"),
                         folds=args.folds, loss=args.loss)
    lines = [f"data            {args.csv}: {res.n_points} points, {res.tokens.min():g}..{res.tokens.max():g} tokens",
             f"model           {res.kind}: {res.model.describe()}",
             f"R^2             {res.r2:.5f}",
             f"MAPE            {100 * res.mape:.3f}% in sample, {100 * res.mape_heldout:.3f}% held out "
             f"({res.folds}-fold)",
             f"max error       {100 * res.max_rel_error:.2f}%  ({1e3 * res.max_abs_error_s:.4g} ms)"]
    if res.candidates:
        lines.append("candidates      " + ", ".join(f"{k} {100 * v:.2f}%" for k, v in
                                                  sorted(res.candidates.items(), key=lambda kv: kv[1])))
    out = res.to_dict()
    if args.plot:
        out["plot"] = res.plot(path=args.plot)
        lines.append(f"plot            {out['plot']}")
    emit(args, out, "\n".join(lines))
