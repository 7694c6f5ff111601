"""``fluidq pars``: train, evaluate and save a PARS length ranker (pairwise learning-to-rank)."""
from __future__ import annotations

import numpy as np

from .. import CliError, emit


def register(sub):
    p = sub.add_parser("pars", help="train/evaluate a PARS response-length ranker",
                       description="Train the default length ranker (hashed n-grams + length features, pairwise "
                       "hinge with margin 1.0, pairs filtered at delta=0.2) on a length table and report Kendall's "
                       "tau_b on held-out prompts, within-model and optionally cross-model (arXiv:2510.03243).")
    p.add_argument("--data", default="alpaca_eval", help="'alpaca_eval', 'gsm8k' or a JSONL path")
    p.add_argument("--unit", choices=["words", "chars"], default="words")
    p.add_argument("--model", default=None, help="model whose lengths to learn (default: the first)")
    p.add_argument("--cross", default=None, help="comma-separated models for a cross-model tau matrix")
    p.add_argument("--test-fraction", type=float, default=0.25)
    p.add_argument("--delta", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default=None, metavar="NPZ", help="write the trained ranker (.npz, no pickle)")
    p.add_argument("--load", default=None, metavar="NPZ", help="evaluate a saved ranker instead of training")
    p.add_argument("--plot", default=None, metavar="PNG", help="cross-model heat map (with --cross)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args):
    from ...predict import LengthRanker, cross_model, evaluate_ranker, load_lengths

    ds = load_lengths(args.data, unit=args.unit)
    model = args.model or ds.models[0]
    L = ds.of(model)
    tr, te = ds.split(args.test_fraction, rng=args.seed)
    tr, te = tr[np.isfinite(L[tr])], te[np.isfinite(L[te])]
    if args.load:
        rk = LengthRanker.load(args.load)
    else:
        rk = LengthRanker.fit([ds.prompts[i] for i in tr], L[tr], delta=args.delta, rng=args.seed)
    ev = evaluate_ranker(rk, [ds.prompts[i] for i in te], L[te], model=model)
    out = {"data": ds.source, "unit": ds.unit, "model": model, "evaluation": ev.to_dict()}
    lines = [f"data        {ds.source} ({len(ds)} prompts, lengths in {ds.unit})",
             f"model       {model}",
             f"ranker      {rk.backbone.to_dict()}, {rk.info.get('n_pairs', '?')} pairs, "
             f"fit {rk.info.get('fit_seconds', float('nan')):.2f} s",
             f"tau_b       {ev.tau_b:.3f} on {ev.n_test} held-out prompts "
             f"(prompt length alone: {ev.baseline_tau_b:.3f})"]
    if args.save:
        rk.save(args.save)
        lines.append(f"saved       {args.save}")
    if args.cross:
        models = [m.strip() for m in args.cross.split(",") if m.strip()]
        if len(models) < 2:
            raise CliError("--cross: give at least two comma-separated models")
        cm = cross_model(ds, models, test_fraction=args.test_fraction, rng=args.seed, delta=args.delta)
        out["cross_model"] = cm.to_dict()
        lines += ["", _cross_table(models, cm.tau)]
        if args.plot:
            cm.plot(path=args.plot)
            lines.append(f"plot written to {args.plot}")
    emit(args, out, "\n".join(lines))


def _cross_table(models, tau) -> str:
    """The cross-model matrix with the model names on both axes (rows: trained on, columns: ranked)."""
    corner = "trained on / ranked"
    w = max(len(corner), *(len(m) for m in models))
    cw = [max(6, len(m)) for m in models]
    lines = ["cross-model tau_b (rows: trained on, columns: ranked)",
             f"{corner:<{w}}  " + " ".join(f"{m:>{c}}" for m, c in zip(models, cw))]
    for m, row in zip(models, tau):
        lines.append(f"{m:<{w}}  " + " ".join(f"{v:>{c}.3f}" for v, c in zip(row, cw)))
    return "\n".join(lines)
