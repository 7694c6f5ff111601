"""A ``serving_run`` case built from a vLLM run folder alone (``fluidq validate --run DIR``, issue 16):
:func:`case_for_run` reads the run, checks its operator profiles and the model's facts against the model the run
served (:func:`_check_served_model`) and the KV capacity it needs, and returns a
:class:`~fluidq.validate.case_rows.Case` with no case file and no expected answer; :mod:`~fluidq.validate.case_serving`
then runs it as any serving case.

Siblings: :mod:`fluidq.validate.cases` (the registry), :mod:`~fluidq.validate.case_rows`,
:mod:`~fluidq.validate.case_inputs` (the data and layout helpers used here), :mod:`~fluidq.validate.case_serving`,
:mod:`~fluidq.validate.case_profiles`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..errors import DataError
from .case_inputs import _plain_path, _user_paths, run_layout
from .case_rows import Case


def case_for_run(run_dir, *, model_config=None, served_model_is_profiled: bool = False) -> tuple[Case, Path]:
    """``(case, data folder)`` for any vLLM run folder in LLMServingSim's layout, built from the folder alone
    (issue 16: ``fluidq validate --run DIR``): no case file and no expected answer.

    The model's facts come from ``model_config`` (a Hugging Face ``config.json``) or from the shipped
    table by ``profile_meta.yaml``'s model; a KV capacity the run does not record is vLLM's memory
    planner's estimate from the GPU memory in ``vllm_meta.json`` (``hardware.device_total_memory_bytes``)
    or ``peer_sim_config.json``.  Targets are the suite's defaults (capacity within 10 %, aim 5 %).

    The model the run served (``vllm_meta.json`` ``model``) is checked against the model's facts, with or without
    ``model_config``: refused when its shipped facts differ in a shape, and when it is not the model
    ``profile_meta.yaml`` names (by name, or as the same shipped facts) unless ``served_model_is_profiled`` says
    that it is, under another name (a fine-tune, a local copy; ``fluidq validate --served-model-is-profiled``).
    """
    from ..errors import UnknownNameError
    from ..models import ModelFacts, find_model, load_model
    from .deployment import (_gpu_memory_from_folder, _profile_model, profile_kind_difference,
                             profile_shape_differences)
    from .runs import read_run

    folder = Path(run_dir)
    if not folder.is_dir():
        raise DataError(f"--run {folder}: no such run folder (vllm_meta.json, vllm_requests.jsonl, "
                        "vllm_timeseries.csv, profile_meta.yaml, profile_tp1_*.csv)")
    folder = folder.resolve()
    run = read_run(folder)  # the run's own files, under any of LLMServingSim's names (runs.RUN_FILE_NAMES)
    _ = (run.max_num_seqs, run.max_num_batched_tokens, run.block_size, run.gpu_memory_utilization)  # refused here,
    # naming the field, when the run records one wrongly or (for the two budgets) not at all
    from .runs import check_kv_column

    check_kv_column(run)  # a KV fraction under a percentage's name, refused before any report file
    plain = _plain_path(folder)  # the operator profiles, .gz tables read through
    if not (plain / "profile_meta.yaml").is_file():
        raise DataError(f"{folder}: no profile_meta.yaml (the operator profiles' description, which names the model); "
                        "the run folder needs the profiles measured on its GPU: profile_meta.yaml and "
                        f"profile_tp{run.tensor_parallel_size}_{{dense,attention,per_sequence}}.csv")
    try:
        hf_id = _profile_model(plain)  # an invalid profile_meta.yaml refused, naming the line and column
        from .profile_meta import check_profile_meta

        pm = check_profile_meta(plain)  # its fields' types: tp_degrees, engine_effective.block_size, the shapes ...
    except DataError as exc:
        raise DataError(_user_paths(str(exc), plain, folder)) from None
    ran = run.meta.get("model") or run.engine_kwargs.get("model")  # the model vLLM served
    ran = ran if isinstance(ran, str) and ran else None
    if not hf_id and not served_model_is_profiled:
        # a profile_meta.yaml naming no model and recording no shapes (empty, or its model and hf_overrides gone)
        # says nothing of which model the profiles time: refused as a missing file is, unless the user says the
        # profiles are of the served model (review revbad2 M3: a 70B run was predicted from 8B profiles unchecked)
        eff = pm.get("engine_effective")
        over = eff.get("hf_overrides") if isinstance(eff, dict) else None
        if not (isinstance(over, dict) and over):
            raise DataError(f"{folder / 'profile_meta.yaml'}: " + ("empty" if not pm else "names no model (model:) and "
                            "records no shapes (engine_effective.hf_overrides)")
                            + ": nothing says which model the operator profiles were measured on"
                            + (f", so they cannot be checked against the model the run served ({ran!r})" if ran else "")
                            + "; add `model: <the profiled Hugging Face id>` to it, or, when the profiles are of the "
                            "served model, say so with --served-model-is-profiled (from Python, "
                            "served_model_is_profiled=True)")

    def lookup(name):
        """The shipped facts of a Hugging Face id as :func:`fluidq.models.load_model` reads a name (Meta's older
        ``Meta-Llama-3.1-...`` repository names, ``-Instruct``, a weights quantization suffix ...), else the
        longest shipped name the id starts with (:func:`fluidq.models.find_model`: a fine-tune's own suffix)."""
        if not name:
            return None
        try:
            return load_model(name)
        except UnknownNameError:
            return find_model(name)

    if model_config is not None:
        facts = ModelFacts.from_config(model_config, option="model_config")
        profiled = lookup(hf_id)
        diff = profile_shape_differences(facts, profiled)  # the profiles are of a shipped model: its shapes
        if diff:
            raise DataError(f"{folder}: profile_meta.yaml profiles {hf_id!r} but the config.json given "
                            f"({model_config}) has {diff}: operator profiles time one model's layers, "
                            "so the config must be of the profiled model (leave it out to use the shipped "
                            f"facts of {profiled.name})")
    else:
        facts = lookup(hf_id)
        facts = facts or (lookup(ran) if not hf_id else None)
    if facts is None:
        raise DataError(f"{folder}: profile_meta.yaml names model {hf_id!r}"
                        + (f" (vllm_meta.json: {ran!r})" if ran and ran != hf_id else "")
                        + ", which the shipped model facts do not hold (`fluidq models list`); give its config.json "
                        "(--model-config)")
    _check_served_model(folder, facts, hf_id, ran, lookup, model_config, served_model_is_profiled)
    # absolute paths: the run read where it is, the profiles from their readable copy
    spec = {"run": str(folder), "_run": run, "profile": str(plain), "n_layers": facts.n_layers, "_facts": facts,
            "_all_latency_rows": True,
            "description": f"the run in {folder} ({facts.name})"}
    lay = run_layout(run)
    parallel = lay["parallel"]
    if parallel and not (plain / "peer_sim_config.json").is_file():
        raise DataError(f"{folder}: tensor_parallel_size = {run.tensor_parallel_size}, pipeline_parallel_size = "
                        f"{run.pipeline_parallel_size}, expert parallel {run.expert_parallel}: the GPUs communicate and "
                        "the operator profiles hold no communication; put a peer_sim_config.json with link_bw (GB/s) "
                        "and link_latency (ns) in the folder, or predict it with `fluidq capacity --profile-dir DIR "
                        "--link-bandwidth-gbps .. --link-latency-us ..` (or --all-reduce-csv)")
    tp = run.tensor_parallel_size
    kind = profile_kind_difference(plain, facts, tp)  # the one check of every profile-folder face (deployment.py)
    if kind:
        raise DataError(f"{folder}: {kind} (profile_meta.yaml: {hf_id or 'no model named'}); the model's facts"
                        + (" (--model-config)" if model_config is not None else "")
                        + " and the operator profiles must be of the same model")
    from .deployment import profile_override_differences

    over = profile_override_differences(facts, pm)  # (the file as read and checked above)
    if over:  # the shapes the profiler recorded, for a model in no table too (rev-indep 2026-12-07 #4)
        raise DataError(f"{folder}: profile_meta.yaml profiles {hf_id!r} but "
                        + (f"the config.json given ({model_config}) has " if model_config is not None else
                           f"the facts of {facts.name} have ")
                        + f"{over}: operator profiles time one model's layers, so the model must be the profiled one")
    for part in ("dense", "attention", "per_sequence") + (("moe",) if facts.n_experts else ()):
        f = plain / f"profile_tp{tp}_{part}.csv"
        if not f.is_file():
            raise DataError(f"{folder}: no profile_tp{tp}_{part}.csv; the run's tensor_parallel_size = {tp} needs the "
                            f"operator profiles measured at that size (LLMServingSim's profile_tp{tp}_*.csv)")
    # the operator profiles read here as the prediction reads them (lss_iteration_model): a bad cell, an operator
    # fluidq does not know, a MoE table of the wrong model are refused before any report file or progress line
    from ..batchtime.comm import Link
    from ..batchtime.operators import lss_iteration_model

    dp = lay["dp"]
    try:
        lss_iteration_model(plain, n_layers=facts.n_layers, tp=tp, facts=facts,
                            comm=Link.from_peer_sim_config(plain / "peer_sim_config.json") if parallel else None,
                            data_parallel_size=dp if facts.n_experts else 1, expert_parallel_size=lay["ep"],
                            pipeline_parallel_size=lay["pp"])
    except DataError as exc:  # named as the user's file, not the temporary copy's
        raise DataError(_user_paths(str(exc), plain, folder)) from None
    if run.kv_capacity_tokens is None:
        hw = run.meta.get("hardware") or {}
        mem = hw.get("device_total_memory_bytes")
        if mem is not None and not (isinstance(mem, (int, float)) and not isinstance(mem, bool)
                                    and math.isfinite(mem) and mem > 0):
            raise DataError(f"{run.files.get('meta', folder)}: hardware.device_total_memory_bytes = "
                            f"{json.dumps(mem)[:40]}: expected the GPU's memory in bytes, a number > 0 (or leave it "
                            "out: the KV cache is then planned from peer_sim_config.json npu_mem.mem_size)")
        gib = float(mem) / 2**30 if isinstance(mem, (int, float)) else _gpu_memory_from_folder(plain)
        if gib is None:
            raise DataError(f"{folder}: the run records neither its KV cache (vllm_meta.json kv_cache.num_gpu_blocks "
                            "or num_kv_tokens) nor its GPU memory (vllm_meta.json hardware.device_total_memory_bytes, "
                            "or peer_sim_config.json npu_mem.mem_size in GiB): give one of them")
        spec["kv"] = {"_facts": facts, "model": facts.name, "gpu_memory_gib": gib,
                      "gpu_memory_utilization": run.gpu_memory_utilization,
                      "gpu_memory_source": "vllm_meta.json" if isinstance(mem, (int, float)) else "peer_sim_config.json"}
    name = f"run-{folder.name}"
    return Case(name=name, kind="serving_run", source="the run folder", fast=False, spec=spec,
                path=str(folder)), folder.parent


def _check_served_model(folder, facts, hf_id, ran, lookup, model_config, served_model_is_profiled) -> None:
    """Refuse a run whose served model (``ran``, vllm_meta.json) is not the model predicted (``facts``: the model
    ``hf_id`` of profile_meta.yaml, or ``model_config``): the served model's shipped facts differ from ``facts`` in a
    shape, or both names are in the shipped tables as different models (an ``-FP8`` repository is not the bf16
    model), neither ever bypassed; or the two names differ and one is in no table, unless
    ``served_model_is_profiled`` says the served model is the profiled one under another name.  Before 2026-12-07
    ``--model-config`` skipped the check and the refusal without it pointed to that bypass (rev-indep #5).  A run
    that records no served model is not checked (there is nothing to compare)."""
    from .deployment import profile_shape_differences

    if not ran:
        return
    served, profiled = lookup(ran), lookup(hf_id)
    head = (f"{folder}: profile_meta.yaml profiles {hf_id!r}" + (f" ({profiled.name})" if profiled is not None else "")
            + f" but vllm_meta.json ran {ran!r}" + (f" ({served.name})" if served is not None else ""))
    given = (f"the config.json given ({model_config})" if model_config is not None else
             f"the profiled {facts.name}")
    if served is not None:
        diff = profile_shape_differences(facts, served, label="the served")
        if diff:
            raise DataError(f"{head}, and {given} has {diff}: the operator profiles and the model's facts must be of "
                            "the model the run served")
    if not hf_id or hf_id == ran:
        return
    if profiled is not None and served is not None:
        if profiled.name != served.name:
            raise DataError(f"{head}: two different models of the shipped tables; the operator profiles must be "
                            "measured on the served model")
        return

    def base(name):
        return name.rstrip("/").rsplit("/", 1)[-1].lower()

    if served_model_is_profiled or base(hf_id) == base(ran):  # said so, or the same repository in a local folder
        return
    raise DataError(f"{head}" + (f" (its shapes agree with {given}'s)" if served is not None else
                                 " (a model in no shipped table: its shapes cannot be compared)")
                    + ": the operator profiles must be measured on the served model; when the served model is the "
                    "profiled one under another name (a fine-tune, a local copy), say so with "
                    "--served-model-is-profiled (from Python, served_model_is_profiled=True)")
