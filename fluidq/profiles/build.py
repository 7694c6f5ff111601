"""Rebuild ``fitted.json``: the built-in deployment profiles fitted from measured data.

Run from a checkout that has the measured data::

    python -m fluidq.profiles.build --data /path/to/shared/data [--out fluidq/profiles/fitted.json]

Each profile is one call of :func:`fluidq.batchtime.fit.fit_batch_time` on the whole-iteration
batch times that :mod:`fluidq.batchtime.loaders` reconstructs from one measured profile; the
fit's held-out MAPE (5-fold, interleaved) is stored with it.  Only derived parameters are
written, never the measurements.  The choices per profile (which rows, ``b_max``, ``k_max``) are
listed in ``SPECS`` and explained in ``PROVENANCE.md``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ..batchtime import loaders
from ..batchtime.fit import fit_batch_time

# name, loader, path (relative to --data), loader keywords, rows fitted, defaults, description
SPECS = [
    dict(name="vidur-llama2-7b-a100", loader="vidur", path="measured/vidur/a100/meta-llama/Llama-2-7b-hf/mlp.csv",
         kw={"attention_path": "measured/vidur/a100/meta-llama/Llama-2-7b-hf/attention_subset.csv", "tp": 1},
         phases=("prefill", "decode"), b_max=2048, k_max=None,
         description="Vidur operator profile: 32 layers x (linear ops + FlashAttention prefill/decode) + embedding; "
                     "context-aware fit on prefill chunks (no prior context) and decode batches"),
    dict(name="vidur-llama2-7b-h100", loader="vidur", path="measured/vidur/h100/meta-llama/Llama-2-7b-hf/mlp.csv",
         kw={"tp": 1}, phases=("linear",), b_max=2048, k_max=None,
         description="Vidur operator profile: 32 layers x linear ops + embedding (no attention profile for H100: "
                     "times are lower bounds, capacity an upper bound)"),
    dict(name="vidur-codellama34b-a100", loader="vidur",
         path="measured/vidur/a100/codellama/CodeLlama-34b-Instruct-hf/mlp.csv", kw={"tp": 1},
         phases=("linear",), b_max=512, k_max=None,
         description="Vidur operator profile: 48 layers x linear ops + embedding (no attention): the paper's "
                     "deployment re-fitted from independent measurements"),
    dict(name="vidur-llama2-7b-a40", loader="vidur", path="measured/vidur/a40/meta-llama/Llama-2-7b-hf/mlp.csv",
         kw={"tp": 1}, phases=("linear",), b_max=2048, k_max=None,
         description="Vidur operator profile: 32 layers x linear ops + embedding on an A40 (GDDR6, PCIe; no "
                     "attention profile: times are lower bounds, capacity an upper bound)"),
    dict(name="vidur-llama2-70b-h100-tp4", loader="vidur", path="measured/vidur/h100/meta-llama/Llama-2-70b-hf/mlp.csv",
         kw={"tp": 4}, phases=("linear",), b_max=2048, k_max=None,
         description="Vidur operator profile: 80 layers x linear ops + embedding per GPU of a tensor-parallel "
                     "group of 4 H100s (no attention and no all-reduce profiled: times are lower bounds, capacity "
                     "an upper bound)"),
    dict(name="llmservingsim-llama3.1-8b-rtx4090", loader="llmservingsim",
         path="measured/llmservingsim/RTX4090_Llama-3.1-8B", kw={}, phases=("prefill", "decode", "mixed"),
         gpu="RTX 4090 (24 GB)",
         kv_within_capacity=True, description="LLMServingSim vLLM 0.19.0 operator profile: 32 layers x (dense + "
         "attention) + embedding/final norm + LM head/sampler per sequence; context-aware fit on prefill, decode "
         "and mixed batches whose KV fits the run's cache"),
    dict(name="llmservingsim-llama3.1-8b-rtxpro6000", loader="llmservingsim",
         path="measured/llmservingsim/RTXPRO6000_Llama-3.1-8B", kw={}, phases=("prefill", "decode", "mixed"),
         gpu="RTX PRO 6000 Blackwell", kv_within_capacity=True,
         description="LLMServingSim vLLM 0.19.0 operator profile: 32 layers x (dense + "
         "attention) + embedding/final norm + LM head/sampler per sequence; context-aware fit on prefill, decode "
         "and mixed batches (KV capacity not stated by the run: all rows)"),
    dict(name="splitwise-llama2-70b-a100-tp8", loader="splitwise", path="measured/splitwise/perf_model.csv",
         kw={"model": "llama2-70b", "hardware": "a100-80gb", "tp": 8}, phases=("prefill", "decode"),
         b_max=2048, k_max=None,
         description="Splitwise whole-model measurements on DGX-A100, TP8: prompt iterations and mean decode "
                     "iterations; context-aware fit"),
    dict(name="splitwise-llama2-70b-h100-tp8", loader="splitwise", path="measured/splitwise/perf_model.csv",
         kw={"model": "llama2-70b", "hardware": "h100-80gb", "tp": 8}, phases=("prefill", "decode"),
         b_max=2048, k_max=None,
         description="Splitwise whole-model measurements on DGX-H100, TP8: prompt iterations and mean decode "
                     "iterations; context-aware fit"),
]

_LOADERS = {"vidur": loaders.load_vidur, "llmservingsim": loaders.load_llmservingsim,
            "splitwise": loaders.load_splitwise}


def _rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def build_one(spec: dict, data: Path) -> dict:
    kw = dict(spec["kw"])
    if "attention_path" in kw:
        kw["attention_path"] = data / kw["attention_path"]
    m = _LOADERS[spec["loader"]](data / spec["path"], **kw)
    rows = m.where(spec["phases"])
    notes = list(m.meta.notes)
    if spec.get("kv_within_capacity") and m.meta.kv_capacity_tokens:
        keep = rows.kv_tokens + rows.tokens <= m.meta.kv_capacity_tokens
        rows = loaders.MeasuredBatchTimes(tokens=rows.tokens[keep], seconds=rows.seconds[keep],
                                          kv_tokens=rows.kv_tokens[keep], phase=rows.phase[keep], meta=rows.meta)
        notes.append(f"fitted on rows whose KV tokens fit the run's cache ({m.meta.kv_capacity_tokens} tokens)")
    if spec["phases"] == ("linear",):
        x, y = rows.token_series()
        res = fit_batch_time(x, y, kind="auto")
    else:
        res = fit_batch_time(rows.tokens, rows.seconds, kind="auto", kv_tokens=rows.kv_tokens)
    meta = m.meta
    paths = [spec["path"]] + ([spec["kw"]["attention_path"]] if "attention_path" in spec["kw"] else [])
    commit = meta.commit or "commit unknown"
    source = f"{meta.source} @ {commit}; " + " + ".join(paths)
    b_max = spec.get("b_max", meta.b_max)
    k_max = spec.get("k_max", meta.k_max)
    fit = {"kind": res.kind, "params": res.params, "mape_heldout": round(res.mape_heldout, 6),
           "mape": round(res.mape, 6), "r2": round(res.r2, 6), "max_rel_error": round(res.max_rel_error, 6),
           "n_points": res.n_points, "phases": list(spec["phases"]), "folds": res.folds, "loss": res.loss,
           "candidates": {k: round(v, 6) for k, v in res.candidates.items()},
           "tokens_range": [float(res.tokens.min()), float(res.tokens.max())],
           "n_layers": meta.n_layers, "notes": notes}
    if res.kv_tokens is not None:
        fit["kv_tokens_range"] = [float(res.kv_tokens.min()), float(res.kv_tokens.max())]
    return {"name": spec["name"], "batch_time": res.model.to_dict(), "b_max": int(b_max),
            "k_max": None if k_max is None else int(k_max),
            "kv_capacity_tokens": meta.kv_capacity_tokens, "model": meta.model, "gpu": spec.get("gpu", meta.gpu), "tp": meta.tp,
            "source": source, "license": meta.license, "description": spec["description"], "fit": fit}


def _jsonable(o):
    if isinstance(o, dict):
        return {k: _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.generic):
        return o.item()
    return o


def _out_problem(text: str) -> str | None:
    """What is wrong with ``--out`` (checked before any fit, as the command line's output files are), or
    ``None`` (:func:`fluidq._io.output_path_problem`): an existing file that is not a profiles file (a JSON
    list of profiles with ``batch_time`` and ``fit``, as this writes) is not replaced; an empty one is."""
    from .._io import output_path_problem

    return output_path_problem(text, replaceable=(_is_profiles_file, "a profiles file"))


def _is_profiles_file(p: Path) -> bool:
    """Whether an existing file is a profiles file this module wrote (``fitted.json``'s shape)."""
    from .._io import json_loads, read_bytes

    try:
        doc = json_loads(read_bytes("--out", p, what="profiles file"), where=str(p))
    except Exception:  # noqa: BLE001 - unreadable, not UTF-8, not JSON: not ours
        return False
    return (isinstance(doc, list) and bool(doc)
            and all(isinstance(d, dict) and {"name", "batch_time", "fit"} <= set(d) for d in doc))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fluidq.profiles.build", description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the shared data folder (with measured/)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("fitted.json")))
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "measured").is_dir():
        print(f"build: error: {data} has no measured/ folder", file=sys.stderr)
        return 2
    problem = _out_problem(args.out)
    if problem is not None:
        print(f"build: error: --out {args.out}: {problem}", file=sys.stderr)
        return 2
    out = []
    for spec in SPECS:
        prof = build_one(spec, data)
        out.append(_jsonable(prof))
        f = prof["fit"]
        print(f"{prof['name']:<38} {f['kind']:<14} held-out MAPE {100 * f['mape_heldout']:6.2f}%  "
              f"R^2 {f['r2']:.4f}  n={f['n_points']}")
    from .._io import write_output
    from ..errors import DataError

    try:  # never through a link planted at --out since the check
        write_output(args.out, json.dumps(out, indent=1) + "\n", what="--out")
    except DataError as exc:
        print(f"build: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
