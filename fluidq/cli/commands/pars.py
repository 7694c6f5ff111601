"""``fluidq pars``: train, evaluate and save a PARS length ranker (pairwise learning-to-rank)."""
from __future__ import annotations

import math

import numpy as np

from .. import CliError, emit


def register(sub):
    p = sub.add_parser("pars", help="train/evaluate a PARS response-length ranker",
                       description="Train a length ranker on a length table and report Kendall's tau_b on held-out "
                       "prompts, within-model and optionally cross-model (arXiv:2510.03243). The default ranker "
                       "('cues') is a ridge regression of the ranks' normal scores on instruction cues and hashed "
                       "word and character n-grams; 'pairwise' is PARS's training (hashed word n-grams, pairwise "
                       "hinge with margin 1.0, pairs filtered at delta=0.2).")
    p.add_argument("--data", default="alpaca_eval", help="'alpaca_eval', 'gsm8k' or a JSONL path")
    p.add_argument("--unit", choices=["words", "chars"], default="words")
    p.add_argument("--model", default=None, help="model whose lengths to learn (default: the first)")
    p.add_argument("--cross", default=None, help="comma-separated models for a cross-model tau matrix")
    p.add_argument("--pool", default=None, metavar="MODELS",
                   help="comma-separated other models whose lengths also train the ranker (--ranker cues): the "
                        "target is half --model's rank scores, half the mean of these models' (pooling)")
    p.add_argument("--test-fraction", type=float, default=0.25, help="share of prompts held out, in (0, 1) "
                   "(default 0.25)")
    p.add_argument("--ranker", choices=["cues", "pairwise"], default="cues",
                   help="cues (default: instruction cues + word and character n-grams, ridge on rank scores) or "
                        "pairwise (PARS's pairwise hinge on word n-grams, the default before 2026-12)")
    p.add_argument("--delta", type=float, default=None,
                   help="training pairs kept when their lengths differ by this relative amount, in [0, 1) "
                        "(default 0.2; with --ranker pairwise only, not with --load)")
    p.add_argument("--seed", type=int, default=0, help="seed of the split and the training (an integer >= 0)")
    p.add_argument("--save", default=None, metavar="NPZ",
                   help="write the ranker to NPZ, a NumPy archive whose name must end in .npz (no pickle)")
    p.add_argument("--load", default=None, metavar="NPZ", help="evaluate a saved ranker instead of training")
    p.add_argument("--plot", default=None, metavar="PATH", help="cross-model heat map to PATH (with --cross; format "
                   "from the extension: png, pdf, svg...; none: .png)")
    p.add_argument("--baselines", default=None, metavar="LIST",
                   help="comma-separated rankers to score beside the one trained: pointwise (length regression), "
                        "bucket (ordinal classes), listwise (ListNet), random, and the other of cues/pairwise")
    p.add_argument("--splits", type=int, default=None, metavar="N",
                   help="report tau_b as mean, 95%% interval and sd over N >= 2 seeded train/test splits "
                        "(seeds from --seed) instead of one split")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


#: most seeded train/test splits of --splits (each trains a ranker: 1,000 take some minutes)
MAX_SPLITS = 1000


def run(args):
    from ...errors import ParameterError
    from ...predict import LengthRanker, cross_model, evaluate_ranker, load_lengths
    from ..common import output_file, reject_ignored, write_late

    if not (math.isfinite(args.test_fraction) and 0 < args.test_fraction < 1):
        raise ParameterError("--test-fraction", args.test_fraction, "a fraction in (0, 1)")
    if args.delta is not None and not (math.isfinite(args.delta) and 0 <= args.delta < 1):
        raise ParameterError("--delta", args.delta, "a relative difference in [0, 1)")
    if args.seed < 0:
        raise ParameterError("--seed", args.seed, "an integer >= 0")
    for flag, v, what in (("--model", args.model, "a model of the length table"),
                          ("--cross", args.cross, "comma-separated models"),
                          ("--pool", args.pool, "comma-separated models"),
                          ("--load", args.load, "the path of a saved ranker (.npz)")):
        if v is not None and not v.strip():  # an empty value is a mistake, not the default
            raise ParameterError(flag, v, what)
    reject_ignored(f"--delta {args.delta}", args.delta is not None and args.load is not None and not args.cross,
                   "with --load (it filters training pairs; a loaded ranker is not trained)")
    reject_ignored(f"--pool {args.pool}", args.pool is not None and args.ranker != "cues",
                   f"with --ranker {args.ranker} (pooled lengths train the cues ranker only)")
    reject_ignored(f"--pool {args.pool}", args.pool is not None and args.load is not None,
                   "with --load (a loaded ranker is not trained)")
    reject_ignored(f"--pool {args.pool}", args.pool is not None and bool(args.cross),
                   "with --cross (the matrix trains one ranker per model on its own lengths)")
    reject_ignored(f"--delta {args.delta}", args.delta is not None and args.ranker != "pairwise",
                   f"with --ranker {args.ranker} (it filters the pairs of --ranker pairwise)")
    reject_ignored(f"--plot {args.plot}", args.plot is not None and not args.cross,
                   "without --cross (the plot is the cross-model heat map)")
    from ...predict.baselines import BASELINES

    kinds = ()
    if args.baselines is not None:
        from ..common import comma_list

        kinds = tuple(comma_list("--baselines", args.baselines, "baseline rankers"))
        allowed = BASELINES + ("random",) + tuple(r for r in ("cues", "pairwise") if r != args.ranker)
        bad = [k for k in kinds if k not in allowed]
        if bad:
            raise ParameterError("--baselines", args.baselines, f"comma-separated names among {', '.join(allowed)}",
                                 f"{bad[0]!r} is not one")
        if len(set(kinds)) != len(kinds):
            raise ParameterError("--baselines", args.baselines, "each baseline named once")
    if args.splits is not None and args.splits < 2:
        raise ParameterError("--splits", args.splits, "an integer >= 2 (an interval needs two splits)")
    if args.splits is not None and args.splits > MAX_SPLITS:
        raise ParameterError("--splits", args.splits, f"at most {MAX_SPLITS:,} splits",
                             "each split trains a ranker (about half a second on the shipped tables); the 95 % "
                             "interval is already narrow at a few dozen")
    reject_ignored(f"--baselines {args.baselines}", bool(kinds) and args.load is not None,
                   "with --load (the baselines are trained; a loaded ranker is compared on one split only)")
    reject_ignored(f"--splits {args.splits}", args.splits is not None and args.load is not None,
                   "with --load (each split trains a new ranker)")
    inputs = [("--data", args.data), ("--load", args.load)]
    if args.save is not None:
        args.save = output_file("--save", args.save, inputs=inputs, figure=False, suffixes=(".npz",), what="ranker file",
                                hint="the ranker is written as a NumPy .npz archive",
                                replaceable=(_is_saved_ranker, "a ranker fluidq saved"))
    if args.plot is not None:
        args.plot = output_file("--plot", args.plot, inputs=inputs)
    if args.cross:
        from ..common import comma_list

        models = comma_list("--cross", args.cross, "models")
        if len(models) < 2:
            raise CliError("--cross: give at least two comma-separated models")
        twice = sorted({m for m in models if models.count(m) > 1})
        if twice:
            raise ParameterError("--cross", args.cross, "distinct models", f"{', '.join(twice)} given twice")
    from ...predict.data import BUILTIN_LENGTHS

    if str(args.data) not in BUILTIN_LENGTHS:
        _input("--data", args.data, "length table")
    if args.load:
        _input("--load", args.load, "saved ranker")
    delta = 0.2 if args.delta is None else args.delta
    fit_kw = {"method": args.ranker, **({"delta": delta} if args.ranker == "pairwise" else {})}
    ds = _named("--data", load_lengths, args.data, unit=args.unit)
    model = args.model or ds.models[0]
    L = ds.of(model)
    train_L, pool_kw = L, {}
    if args.pool:
        from ..common import comma_list

        pool = comma_list("--pool", args.pool, "models")
        bad = [m for m in pool if m not in ds.lengths or m == model]
        if bad or len(set(pool)) != len(pool):
            raise ParameterError("--pool", args.pool, f"other models of the table, each once (not --model {model})",
                                 f"{bad[0]!r} is not one" if bad else "a model is named twice")
        train_L = np.column_stack([L] + [ds.of(m) for m in pool])
        pool_kw = {"model_weights": [0.5] + [0.5 / len(pool)] * len(pool)}
    tr, te = ds.split(args.test_fraction, rng=args.seed)
    tr, te = tr[np.isfinite(L[tr])], te[np.isfinite(L[te])]
    if args.load:
        rk = _named("--load", LengthRanker.load, args.load)
    else:
        rk = LengthRanker.fit([ds.prompts[i] for i in tr], train_L[tr], rng=args.seed, **fit_kw, **pool_kw)
    ev = evaluate_ranker(rk, [ds.prompts[i] for i in te], L[te], model=model)
    out = {"data": ds.source, "unit": ds.unit, "model": model, "evaluation": ev.to_dict(),
           "ranker": {"backbone": rk.backbone.to_dict(), "info": rk.info},  # the text's 'ranker' line
           "loaded": args.load, "saved": args.save, "plot": args.plot if args.cross else None}
    lines = [f"data        {ds.source} ({len(ds)} prompts, lengths in {ds.unit})",
             f"model       {model}" + (f" (training pooled with {len(pool_kw['model_weights']) - 1} other "
                                         "model(s), half the target)" if pool_kw else ""),
             f"ranker      {backbone_words(rk.backbone.to_dict())}, {_fitted_by(rk.info)}, "
             f"fit {rk.info.get('fit_seconds', float('nan')):.2f} s",
             f"tau_b       {_tau(ev.tau_b)} on {ev.n_test} held-out prompts "
             f"(prompt length alone: {_tau(ev.baseline_tau_b)})"]
    why = _undefined_tau(ev, L[te], [ds.prompts[i] for i in te])
    if why:
        lines.append(f"            – : tau_b is undefined: {why}")
        out["evaluation"]["tau_b_undefined"] = why
    if kinds and args.splits is None:  # the baselines on the very split PARS's ranker was scored on
        from ...predict.baselines import fit_baseline
        from ...predict.evaluate import kendall_tau

        got = {}
        for k in kinds:
            if k == "random":
                sc = np.random.default_rng(args.seed).random(te.size)
            elif k in ("cues", "pairwise"):
                sc = LengthRanker.fit([ds.prompts[i] for i in tr], L[tr], method=k, rng=args.seed).score(
                    [ds.prompts[i] for i in te])
            else:
                sc = fit_baseline(k, [ds.prompts[i] for i in tr], L[tr], rng=args.seed).score(
                    [ds.prompts[i] for i in te])
            got[k] = float(kendall_tau(sc, L[te]))
        out["baselines"] = got
        lines.append("baselines   " + ", ".join(f"{k} {_tau(v)}" for k, v in got.items()) + " (same split)")
    if args.splits is not None:
        from ...predict.baselines import tau_over_splits

        ok = np.flatnonzero(np.isfinite(L))
        P_ok = [ds.prompts[i] for i in ok]
        res = {}
        for k in (args.ranker,) + kinds:
            kw = {"delta": delta} if k == "pairwise" and args.ranker == "pairwise" else {}
            if k == args.ranker and pool_kw:
                kw = {**pool_kw, "score_lengths": L[ok]}
                res[k] = tau_over_splits(P_ok, train_L[ok], k, n_splits=args.splits,
                                         test_fraction=args.test_fraction, rng=args.seed, **kw)
                continue
            res[k] = tau_over_splits(P_ok, L[ok], k, n_splits=args.splits, test_fraction=args.test_fraction,
                                     rng=args.seed, **kw)
        out["splits"] = res
        lines.append(f"over {args.splits} seeded splits (test fraction {args.test_fraction:g}; mean, 95 % interval, sd):")
        width = max(len(k) for k in res)
        lines += [f"  {k:<{width}}  tau_b {_tau(r['mean'])} ± {r['half_width']:.2g} (sd {r['sd']:.2g})"
                  for k, r in res.items()]
    if args.save:
        saved = write_late(args, "--save", args.save, lambda: rk.save(args.save))
        out["saved"] = saved
        if saved:
            lines.append(f"saved       {saved}")
    if args.cross:
        cm = cross_model(ds, models, test_fraction=args.test_fraction, rng=args.seed, **fit_kw)
        out["cross_model"] = cm.to_dict()
        lines += ["", _cross_table(models, cm.tau)]
        if args.plot:
            out["plot"] = write_late(args, "--plot", args.plot, lambda: cm.plot(path=args.plot))
            if out["plot"]:
                lines.append(f"plot written to {out['plot']}")
    emit(args, out, "\n".join(lines))


def _cross_table(models, tau) -> str:
    """The cross-model matrix with the model names on both axes (rows: trained on, columns: ranked)."""
    corner = "trained on / ranked"
    w = max(len(corner), *(len(m) for m in models))
    cw = [max(6, len(m)) for m in models]
    lines = ["cross-model tau_b (rows: trained on, columns: ranked)",
             f"{corner:<{w}}  " + " ".join(f"{m:>{c}}" for m, c in zip(models, cw))]
    for m, row in zip(models, tau):
        lines.append(f"{m:<{w}}  " + " ".join(f"{_tau(v):>{c}}" for v, c in zip(row, cw)))
    if any(not math.isfinite(v) for row in tau for v in row):
        lines.append("– : tau_b is undefined (all the held-out lengths of that model, or all the scores, are equal)")
    return "\n".join(lines)


def _count(n) -> str:
    return f"{n:,}" if isinstance(n, int) else "?"


def _fitted_by(info: dict) -> str:
    """How a ranker was fitted, in words (a ranker saved before 2026-12 has no ``method``: pairwise)."""
    if info.get("method") == "cues":
        return f"ridge on the ranks' normal scores (l2 {info.get('l2', '?')}, cue weight {info.get('cue_weight', '?')})"
    if "n_pairs" in info:
        return f"pairwise hinge on {_count(info.get('n_pairs'))} pairs"
    return f"{info.get('loss', '?')} loss"


def _tau(v) -> str:
    """tau_b to 3 decimals, or '–' where it is undefined (NaN: every length or every score ties)."""
    return f"{v:.3f}" if math.isfinite(v) else "–"


def backbone_words(d: dict) -> str:
    """A ranker's backbone in words: ``hashed n-grams (16 bits, n-grams up to 2)``, ``sentence encoder
    all-MiniLM-L6-v2 (...)``; another backbone as its name and settings."""
    d = dict(d)
    kind = d.pop("backbone", "?")
    if kind == "hashed-ngrams":
        return f"hashed n-grams ({d.get('n_bits', '?')} bits, n-grams up to {d.get('ngram_max', '?')})"
    if kind == "length-cues":
        lo, hi = d.get("char_min", "?"), d.get("char_max", "?")
        return (f"instruction cues (set {d.get('cue_set', 1)}) + hashed n-grams ({d.get('n_bits', '?')} bits, n-grams "
                "up to 2) + character "
                f"{lo if lo == hi else f'{lo}-{hi}'}-grams")
    if "model" in d:
        return f"sentence {kind} {d['model']} (batch size {d.get('batch_size', '?')}, on {d.get('device', '?')})"
    rest = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in d.items())
    return f"{kind} ({rest})" if rest else str(kind)


def _undefined_tau(ev, lengths, prompts) -> str:
    """Why the ranker's or the baseline's tau_b is undefined, or '' when both are numbers."""
    L = np.asarray(lengths, float)
    L = L[np.isfinite(L)]
    if math.isfinite(ev.tau_b) and math.isfinite(ev.baseline_tau_b):
        return ""
    if L.size and np.all(L == L[0]):
        return f"all {L.size} held-out lengths are equal ({L[0]:g}), so no pair of them can be ordered"
    parts = []
    if not math.isfinite(ev.tau_b):
        parts.append("the ranker gives every held-out prompt the same score")
    if not math.isfinite(ev.baseline_tau_b):
        same = len({len(p) for p in prompts}) == 1
        parts.append("every held-out prompt has the same length" + (" (empty prompts?)" if same and not prompts[0]
                                                                     else ""))
    return "; ".join(parts)


def _is_saved_ranker(path) -> bool:
    """Whether an existing ``--save`` file is a ranker fluidq saved: a user's own NumPy archive given by
    mistake is not replaced."""
    from ...errors import FluidqError
    from ...predict import LengthRanker

    try:
        LengthRanker.load(path)
    except FluidqError:
        return False
    return True


def _named(option: str, read, path, **kw):
    """``read(path, **kw)``, a file the reader refuses (a ``DataError``: no such table, no rows, not JSON, not a
    saved ranker ...) said under ``option``, the flag that gave the path."""
    from ...errors import DataError

    try:
        return read(path, **kw)
    except DataError as exc:
        raise CliError(f"{option}: {exc}") from None


def _input(option: str, path, what: str) -> None:
    """Refuse a FIFO, a device, a loop... as ``option`` before anything reads it (a missing file is
    left to the reader, which names the built-in tables)."""
    import os

    from ..._io import input_file

    try:
        os.lstat(str(path))
    except FileNotFoundError:
        if option == "--data":
            return
    except (OSError, ValueError):
        pass
    input_file(option, path, what=what)
