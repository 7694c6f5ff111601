"""``fluidq validate``: run the validation suite (predictions against measured GPU runs)."""
from __future__ import annotations

from pathlib import Path

from ...errors import DataError
from .. import CliError, emit

MARKER = ".fluidq-validation"


def register(sub):
    p = sub.add_parser("validate", help="run the validation suite and write its report",
                       description="Predicted vs measured for every case of the validation folder (cases/*.toml; see --root): "
                       "batch-time fits, capacity of real vLLM runs, latency of replayed arrivals, peer "
                       "agreement with Vidur, GPU-harness runs. Misses are reported, not hidden.")
    p.add_argument("--out", default="fluidq-validation",
                   help="output folder (default: ./fluidq-validation): a new folder in an existing one, an empty "
                        "folder, or one an earlier `fluidq validate` wrote (the earlier report's own files that the new one "
                        "does not write are removed; no other file is touched); a folder with other files is refused")
    p.add_argument("--case", action="append", default=None, metavar="NAME",
                   help="run only this case (repeatable); names are the validation folder's "
                        "cases/*.toml (see --root; an unknown name lists them)")
    p.add_argument("--fast", action="store_true", help="the fast subset: one case per data source")
    p.add_argument("--harness-dir", default=None, help="read GPU-harness runs from this folder")
    p.add_argument("--root", default=None, help="the validation folder (default: $FLUIDQ_VALIDATION_DIR, else the "
                   "source checkout's validation/ when fluidq runs from a checkout, else the copy the installed "
                   "package carries)")
    p.add_argument("--run", default=None, metavar="DIR",
                   help="validate this vLLM run folder instead of the cases (LLMServingSim's layout: vllm_meta.json, "
                        "vllm_requests.jsonl, vllm_timeseries.csv -- or meta.json, requests.jsonl, timeseries.csv, "
                        "also under vllm/ -- with profile_meta.yaml and the profile_tp{N}_*.csv of its tensor-parallel "
                        "size; peer_sim_config.json is needed by a parallel run, for its link_bw/link_latency, and "
                        "by any run, TP1 included, whose vllm_meta.json records neither its KV cache "
                        "(kv_cache.num_gpu_blocks or num_kv_tokens) nor its GPU memory "
                        "(hardware.device_total_memory_bytes): the KV cache is then planned from its npu_mem.mem_size "
                        "in GiB): predicted vs measured capacity, binding limit and latency, from the folder alone")
    p.add_argument("--model-config", default=None, metavar="PATH",
                   help="with --run: the model's Hugging Face config.json when `fluidq models list` lacks it")
    p.add_argument("--served-model-is-profiled", action="store_true",
                   help="with --run: the model the run served (vllm_meta.json model) is the model profile_meta.yaml "
                        "names under another name (a fine-tune, a local copy); without it such a run is refused. "
                        "Shapes that differ from the served model's shipped facts are refused either way")
    p.add_argument("--strict", action="store_true", help="exit with code 1 when any target is missed")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args):
    from ...results import fmt_value
    from ...validate import validate
    from ..common import mark_folder, output_folder

    if args.run is not None:
        from ..._io import input_file

        if args.case or args.fast or args.harness_dir or args.root:
            raise CliError("--run validates one run folder: give it without --case/--fast/--harness-dir/--root")
        if not Path(args.run).is_dir():
            raise CliError(f"--run {args.run!r}: expected a run folder (vllm_meta.json, vllm_requests.jsonl, ...)")
        from ...validate.runs import RUN_FILE_NAMES, run_file

        for kind in ("requests", "timeseries", "meta"):  # a folder that is no run: said before --out is made
            try:
                run_file(args.run, kind)
            except DataError:
                raise CliError(f"--run {args.run}: expected a run folder in LLMServingSim's layout (vllm_meta.json, "
                               f"vllm_requests.jsonl, vllm_timeseries.csv); it has no "
                               f"{' or '.join(RUN_FILE_NAMES[kind])} (the run's {kind})") from None
        if args.model_config is not None:
            from ...models import ModelFacts

            input_file("--model-config", args.model_config, what="config.json")
            ModelFacts.from_config(args.model_config, option="--model-config")  # refused naming the flag, before --out
    elif args.model_config is not None or args.served_model_is_profiled:
        raise CliError(f"{'--model-config' if args.model_config is not None else '--served-model-is-profiled'} is "
                       "read only with --run")
    out = output_folder("--out", args.out, marker=MARKER, what="validate")

    from ..progress import Steps

    steps = Steps(44, enabled=not args.json)  # redrawn on a terminal, one line per step in a log
    progress = steps.step

    try:
        res = validate(str(out), case=args.case, fast=args.fast, root=args.root, harness_dir=args.harness_dir,
                       progress=progress, run=args.run, model_config=args.model_config,
                       served_model_is_profiled=args.served_model_is_profiled)
    finally:
        mark_folder(out, MARKER, "validate")
    steps.done()
    lines = [f"{res.counts_text()} ({res.seconds:.1f} s); report: {res.files.get('markdown')}"]
    for r in res.misses():  # case and source (the profile or run): one case has a row per profile
        err = "" if r.error_pct is None else f" ({fmt_value(r.error_pct, '+.1f')} %)"
        lines.append(f"  MISS {r.case} [{r.source}]: {r.quantity}{err} -- target {r.target}")
    out = {"passed": res.passed, "missed": res.missed, "skipped": res.skipped, "informational": res.informational,
           "files": res.files,
           "rows": [r.to_dict() for r in res.rows]}
    emit(args, out, "\n".join(lines))
    return 1 if (args.strict and res.missed) else 0
