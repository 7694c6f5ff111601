"""Validation cases: described in TOML files, run by kind, each returning rows of the summary table.

A case file (``validation/cases/*.toml``) has ``name``, ``kind``, ``source``, ``fast`` (part of the
fast subset) and kind-specific keys (paths are relative to ``validation/data/``):

``serving_run``
    A measured vLLM run with operator profiles of the same GPU: predicted capacity and binding
    limit vs the served throughput over the saturated interval; predicted backlog growth vs the
    measured one; the run's own arrivals replayed and TTFT/TPOT/latency compared with the
    measured ones and with the peer simulator's errors.
``serving_run_measured``
    Measurements only (an engine fluidq does not model): rows marked ``info``.
``peer_vidur``
    fluidq's capacity from Vidur's profiles against Vidur's simulated saturation.
``batch_time_fit``
    Each profile's fitted models and held-out MAPE (``fluidq.fit_batch_time``).
``hybrid_batch``
    Sarathi-Serve Table 2: hybrid vs pure prefill batches of equal total tokens.
``profile_vs_measured``
    Whole-iteration times built from operator profiles vs batch times measured by another team.
``harness_runs``
    Runs written by ``validation/gpu/harness.py``.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from typing import TYPE_CHECKING

from .._io import atomic_write, read_bytes, read_text, toml_loads
from ..errors import DataError, ParameterError, UnknownNameError
from ..results import Result, plain

if TYPE_CHECKING:  # read_run is imported on use
    from .runs import ServingRun

__all__ = ["Row", "Case", "CaseResult", "load_cases", "run_case", "KINDS"]


@dataclass(frozen=True, kw_only=True)
class Row:
    """One line of the summary table.

    ``error_pct`` is ``100 (predicted - measured)/measured``; ``status`` is ``"pass"`` (target met),
    ``"miss"`` (target missed: reported, not hidden), ``"info"`` (no target) or ``"skip"``.
    ``measured_window`` says what the measured number was read over (the run's ticks or requests, in seconds of
    the run) and ``measured_ci`` is its 95 % interval ``(low, high)`` (issue 16: every number states its window
    and interval); empty / None on rows that carry no measurement of a run, or where none can be given (the
    note says why).
    """

    case: str
    source: str
    quantity: str
    predicted: float | str | None
    measured: float | str | None
    unit: str = ""
    error_pct: float | None = None
    target: str = ""
    status: str = "info"
    note: str = ""
    measured_window: str = ""
    measured_ci: tuple | None = None

    def to_dict(self):
        return plain({k: getattr(self, k) for k in self.__dataclass_fields__})


@dataclass(frozen=True, kw_only=True)
class Case:
    """A case read from a TOML file."""

    name: str
    kind: str
    source: str
    fast: bool
    spec: dict
    path: str = ""


@dataclass(frozen=True, kw_only=True, eq=False)
class CaseResult(Result):
    case: Case
    rows: tuple
    markdown: str = ""
    figures: tuple = ()
    data: dict = field(default_factory=dict)
    seconds: float = 0.0
    # what the case's figure draws, (measured run, simulated run, capacity prediction); empty when the
    # case has no figure.  Not part of to_dict (the run's arrays are in the data files already).
    figure_inputs: tuple = field(default=(), repr=False)

    @property
    def inputs(self) -> dict:
        """The case: its name, kind, data source and file."""
        return {"case": self.case.name, "kind": self.case.kind, "source": self.case.source, "path": self.case.path}

    def plot(self, path=None):
        """The case's figure: TTFT per request, requests waiting, served tokens/s (serving cases only)."""
        if not self.figure_inputs:
            raise ParameterError("case", self.case.name, "a serving case with a simulated run (this case draws no figure)")
        from ..plotting.validation import plot_serving_case

        return plot_serving_case(*self.figure_inputs, path=path)

    def to_dict(self):
        return plain({"name": self.case.name, "kind": self.case.kind, "source": self.case.source,
                      "rows": [r.to_dict() for r in self.rows], "figures": list(self.figures),
                      "data": self.data, "seconds": self.seconds})


def _err(pred, meas):
    if pred is None or meas is None or not np.isfinite(pred) or not np.isfinite(meas) or meas == 0:
        return None
    return 100.0 * (pred - meas) / meas


def _fmt(v):
    """A report cell (the summary table's and a case's interval table's): blank for no value, an en dash for an
    undefined one (NaN, an infinity), never nan/inf; thousands separated from 1,000, one decimal from 10, three
    significant figures below."""
    from ..results import fmt_value, is_defined

    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if not is_defined(v):
        return fmt_value(v)
    a = abs(v)
    s = f"{v:,.0f}" if a >= 1000 else f"{v:.3g}" if a < 10 else f"{v:.1f}"
    return s


def _interval_table(rows) -> list:
    """Markdown lines: every measured number of ``rows`` with what it was read over and its 95 % interval (issue 16
    item 7), in the summary table's cells (:func:`_fmt`); empty when no row has a window."""
    windowed = [r for r in rows if r.measured_window]
    if not windowed:
        return []
    md = ["", "| quantity | measured | 95 % interval | read over |", "|---|---|---|---|"]
    for r in windowed:
        ci = f"{_fmt(r.measured_ci[0])}-{_fmt(r.measured_ci[1])}" if r.measured_ci is not None else "none"
        md.append(f"| {r.quantity} | {_fmt(r.measured)} {r.unit} | {ci} | {r.measured_window} |".replace("  ", " "))
    return md


def _interval_words(pred, ci, mean, aim):
    """What the measured 95 % interval lets one say about a prediction: its half-width in percent of the
    measured mean, whether the prediction lies inside it, and -- when the half-width exceeds the ``aim`` --
    that the window cannot resolve the aim (issue 16: every number states its window and interval)."""
    lo, hi = ci
    if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(mean) and mean > 0 and pred is not None
            and np.isfinite(pred)):
        return ""
    half = 100.0 * (hi - lo) / 2.0 / mean
    where = "inside" if lo <= pred <= hi else "outside"
    out = f"; the prediction lies {where} the measured 95 % CI (half-width ±{half:.1f} %)"
    if half > aim and where == "inside":  # outside, the error is resolved: at least the distance to the CI
        out += f", too wide to resolve the {aim:g} % aim"
    return out


def _status(err, limit):
    if err is None:
        return "miss"
    return "pass" if abs(err) <= limit else "miss"


# ------------------------------------------------------------------------------------ loading
def load_cases(cases_dir) -> list[Case]:
    """All ``*.toml`` cases in ``cases_dir``, sorted by file name."""
    cases_dir = Path(cases_dir)
    if not cases_dir.is_dir():
        raise DataError(f"{cases_dir}: no such cases folder")
    out = []
    for p in sorted(cases_dir.glob("*.toml")):
        spec = toml_loads(read_text("case file", p, what="case file"), where=str(p))
        for k in ("name", "kind"):
            if k not in spec:
                raise DataError(f"{p}: missing key {k!r}")
        if spec["kind"] not in KINDS:
            raise UnknownNameError("case kind", spec["kind"], KINDS)
        out.append(Case(name=spec["name"], kind=spec["kind"], source=spec.get("source", ""),
                        fast=bool(spec.get("fast", False)), spec=spec, path=str(p)))
    return out


_TMP: dict = {}


def _plain_path(p: Path) -> Path:
    """A path the batch-time loaders can read: ``.gz`` files (or folders holding them) decompressed
    into a temporary folder owned by this process."""
    p = Path(p)
    if "dir" not in _TMP:
        _TMP["dir"] = Path(tempfile.mkdtemp(prefix="fluidq-validate-"))
        import atexit

        atexit.register(shutil.rmtree, _TMP["dir"], True)
    root = _TMP["dir"]

    def unz(src: Path, dst: Path):  # read through fluidq._io: a FIFO is refused, corrupt gzip is one DataError
        # a temporary file and a rename: an interrupt part way leaves no truncated dst for a later call to reuse
        atomic_write(dst, read_bytes("validation data", src, what="data file"))

    if p.is_file():
        if p.suffix != ".gz":
            return p
        dst = root / f"{abs(hash(str(p)))}" / p.name[:-3]
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            unz(p, dst)
        return dst
    if p.is_dir():
        if not any(x.suffix == ".gz" for x in p.iterdir()):
            return p
        dst = root / f"{abs(hash(str(p)))}" / p.name
        if not dst.exists():
            dst.mkdir(parents=True)
            try:
                _copy_folder(p, dst, unz)
            except BaseException:  # never leave a half-copied folder for the next call to reuse
                shutil.rmtree(dst, True)
                raise
        return dst
    raise FileNotFoundError(f"{p}: no such validation data file (is validation/data complete?)")


def _copy_folder(p: Path, dst: Path, unz) -> None:
    """The regular files of ``p`` into ``dst``, ``.gz`` ones decompressed (a FIFO is skipped)."""
    for x in p.iterdir():
        if x.is_file():
            if x.suffix == ".gz":
                unz(x, dst / x.name[:-3])
            else:
                (dst / x.name).write_bytes(read_bytes("validation data", x, what="data file", gunzip=False))


# ------------------------------------------------------------------------------ serving runs
def run_layout(run) -> dict:
    """The iteration model's layout of a run, one decision for the pre-check of ``fluidq validate --run`` and
    the prediction: ``tp``, ``pp``, ``dp``, ``ep`` (the expert-parallel size: ``tp x dp`` when
    ``enable_expert_parallel`` is on, vLLM's layout, else 1) and ``parallel`` (whether the GPUs communicate,
    so the operator profiles need a link: ``tp > 1``, ``pp > 1`` or ``ep > 1`` -- a single-GPU run with expert
    parallelism switched on has ``ep = 1`` and communicates nothing)."""
    tp, pp, dp = run.tensor_parallel_size, run.pipeline_parallel_size, run.data_parallel_size
    ep = tp * dp if run.expert_parallel else 1
    return {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "parallel": tp > 1 or pp > 1 or ep > 1}


def _user_paths(msg: str, plain: Path, folder: Path) -> str:
    """``msg`` with the paths of the readable copy ``plain`` (gzipped tables decompressed into a temporary
    folder, :func:`_plain_path`) put back as the user's files in ``folder`` (``NAME.gz`` where that is what the
    folder holds)."""
    if Path(plain) == Path(folder):
        return msg

    def back(m):
        name = m.group(1)
        for cand in (folder / name, folder / (name + ".gz")):
            if cand.exists():
                return str(cand)
        return str(folder / name)

    return re.sub(re.escape(str(plain)) + r"/([^\s:,;()'\"]+)", back, msg).replace(str(plain), str(folder))


def _n_layers(where: str, spec: dict) -> int:
    """The decoder-layer count of a case's model, from its facts (``facts = "Llama-3.1-8B"``, a name of
    :func:`fluidq.models.list_models`), or an explicit ``n_layers`` for a model the table does not hold."""
    if "facts" in spec:
        from ..models import load_model

        n = load_model(spec["facts"], option=f"{where}: facts").n_layers
        if "n_layers" in spec and int(spec["n_layers"]) != n:
            raise DataError(f"{where}: n_layers = {spec['n_layers']} but {spec['facts']} has {n} decoder layers")
        return n
    if "n_layers" not in spec:
        raise DataError(f"{where}: give the model's facts (facts = \"...\", see `fluidq models list`) or n_layers")
    return int(spec["n_layers"])


def _planned_kv(case: Case, spec: dict, run: ServingRun) -> tuple[int, str]:
    """The KV capacity of a run that does not record it: vLLM's memory planner estimated from the model's
    facts and the GPU memory the case states (:func:`fluidq.models.kv_capacity_estimate`), never a
    number written by hand."""
    from ..models import kv_capacity_estimate, load_model

    for k in ("model", "gpu_memory_gib"):
        if k not in spec:
            raise DataError(f"case {case.name}: [kv] needs {k!r} (the KV capacity is estimated by vLLM's memory "
                            "planner from the model and the GPU memory)")
    facts = spec["_facts"] if "_facts" in spec else load_model(spec["model"])
    # the run's own vLLM options (ServingRun gives vLLM's defaults for those it does not record)
    util = float(spec.get("gpu_memory_utilization", run.gpu_memory_utilization))
    block, dtype = run.block_size, run.kv_cache_dtype
    est = kv_capacity_estimate(facts, gpu_memory_gib=float(spec["gpu_memory_gib"]),
                               gpu_memory_utilization=util, block_size=block,
                               kv_bytes_per_value=1 if dtype.startswith("fp8") else None,
                               tensor_parallel_size=run.tensor_parallel_size,
                               expert_parallel_size=(run.tensor_parallel_size * run.data_parallel_size
                                                     if run.expert_parallel else None),
                               max_num_batched_tokens=run.max_num_batched_tokens, max_num_seqs=run.max_num_seqs)
    why = spec.get("gpu_memory_source", "the case file")
    return est.tokens, (f"not recorded by the run: {est.tokens:,} tokens estimated by vLLM's memory planner "
                        f"({spec['model']}, {float(spec['gpu_memory_gib']):g} GiB from {why} x {util:g}, "
                        f"{block}-token blocks, KV cache {dtype})")


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


def _case_facts(case: Case, spec: dict):
    """The model facts of a serving case (``facts = "..."``), or None when it gives ``n_layers`` only."""
    if "facts" not in spec:
        return spec.get("_facts")
    from ..models import load_model

    return load_model(spec["facts"], option=f"{case.name}: facts")


def _case_comm(case: Case, spec: dict, data: Path):
    """The communication model of a parallel serving case: ``[comm]`` ``peer_sim_config = "..."`` (a
    link table beside the run) or ``all_reduce = "..."`` (a measured table); never fitted to the run."""
    from ..batchtime.comm import Link, MeasuredAllReduce

    c = spec.get("comm") or {}
    if "peer_sim_config" in c:
        return Link.from_peer_sim_config(data / c["peer_sim_config"])
    if "all_reduce" in c:
        return MeasuredAllReduce.from_vidur_csv(data / c["all_reduce"])
    p = data / spec["profile"] / "peer_sim_config.json"
    if p.is_file():
        return Link.from_peer_sim_config(p)
    raise DataError(f"case {case.name}: a parallel layout needs [comm] peer_sim_config or all_reduce (the "
                    "operator profiles hold no communication)")


def _serving_run(case: Case, data: Path, ctx) -> CaseResult:
    from ..batchtime.operators import lss_iteration_model
    from .predict import predict_capacity
    from .runs import latency_metrics, queue_growth, read_peer_summary, read_run, saturated_throughput

    from .deployment import RecordedBlockSize, predict_deployment
    from .runs import measured_regimes, steady_poisson_arrivals

    s = case.spec
    tg = s.get("targets", {})
    run = s["_run"] if "_run" in s else read_run(data / s["run"])  # (a --run folder was read by case_for_run)
    n_layers = _n_layers(case.name, s)
    facts = _case_facts(case, s)
    lay = run_layout(run)
    dp, ep = lay["dp"], lay["ep"]
    comm = None
    if lay["parallel"]:
        comm = _case_comm(case, s, data)
    model = lss_iteration_model(data / s["profile"], n_layers=n_layers, tp=run.tensor_parallel_size, facts=facts,
                                comm=comm, data_parallel_size=dp if facts is not None and facts.n_experts else 1,
                                expert_parallel_size=ep, pipeline_parallel_size=run.pipeline_parallel_size)
    kv = run.kv_capacity_tokens
    kv_note = "from vllm_meta.json"
    if kv is None and "kv" in s:
        kv, kv_note = _planned_kv(case, s["kv"], run)
    # the deployment's prediction (one code path with `fluidq capacity --profile-dir`): layout, lockstep
    # MoE ranks, the replicas' sum
    pred = predict_deployment(_plain_path(data / s["profile"]), input_tokens=run.input_tokens,
                              output_tokens=run.output_tokens, max_num_seqs=run.max_num_seqs,
                              max_num_batched_tokens=run.max_num_batched_tokens,
                              tensor_parallel_size=run.tensor_parallel_size,
                              pipeline_parallel_size=run.pipeline_parallel_size, data_parallel_size=dp,
                              enable_expert_parallel=run.expert_parallel, kv_capacity_tokens=kv,
                              block_size=RecordedBlockSize(run.block_size), model=facts, comm=comm)
    sat = saturated_throughput(run)
    reg = measured_regimes(run)  # the measured side: the run's own columns, requests and recorded KV cache
    dropped = "".join(f"; {v} request(s) {k} left out" for k, v in run.dropped.items())
    qg = queue_growth(run)
    rows, info = [], {}
    lim = float(tg.get("capacity_pct", 10.0))
    aim = float(tg.get("capacity_aim_pct", 5.0))
    st, rp = reg["steady"], reg["ramp"]
    steady_ok = bool(np.isfinite(st["tokens_per_s"]))
    tick = f"{run.tick_s:g} s"

    def ticks_window(what, w, index):
        """The words of a measured window of ticks (``w`` its first and last tick stamps, ``index`` the ticks'
        positions), "" when there is none; ticks that are not contiguous are said as N of the M in the span."""
        index = np.asarray(index, dtype=int)
        n = index.size
        if not n or not np.all(np.isfinite(w)):
            return ""
        span = int(index[-1] - index[0] + 1)
        if span == n:
            return f"{what}: ticks {w[0]:g}-{w[1]:g} s of the run ({n} tick(s) of {tick})"
        return f"{what}: {n} of the {span} ticks in {w[0]:g}-{w[1]:g} s of the run (ticks of {tick})"

    def ci_or_none(ci):
        return tuple(float(v) for v in ci) if np.all(np.isfinite(ci)) else None

    def ci_words(ci, what="95 % CI", fmt=".0f"):
        return (f"{what} {ci[0]:{fmt}}-{ci[1]:{fmt}}" if np.all(np.isfinite(ci)) else
                "no 95 % interval: too few ticks for their correlation (too few batches for batch means)")

    steady_window = ticks_window(f"steady state under the binding limit ({reg['binding']})", st["window_s"],
                                 st["index"])
    steady_ci = ci_or_none(st["ci"]) if steady_ok else None
    # a row read against the steady window whose note does not state its interval says when there is none
    no_steady_ci = "; measured: " + ci_words(st["ci"]) if steady_ok and steady_ci is None else ""

    def cap_row(quantity, predicted, note):
        """A capacity row against the steady state, or -- when the run has none -- a skipped row saying so."""
        if not steady_ok:
            return Row(case=case.name, source=case.source, quantity=quantity, predicted=predicted, measured=None,
                       unit="tokens/s", error_pct=None, target=f"within ±{lim:g} % (aim ±{aim:g} %)", status="skip",
                       note=f"not scored: {st['note']}; the run shows no capacity to compare with" + dropped)
        e = _err(predicted, st["tokens_per_s"])
        return Row(case=case.name, source=case.source, quantity=quantity, predicted=predicted,
                   measured=st["tokens_per_s"], unit="tokens/s", error_pct=e,
                   target=f"within ±{lim:g} % (aim ±{aim:g} %)", status=_status(e, lim),
                   note=note + ("" if e is None or abs(e) <= aim else f"; outside the {aim:g} % aim")
                   + _interval_words(predicted, st["ci"], st["tokens_per_s"], aim)
                   + ("" if "no 95 % interval" in note else no_steady_ci) + dropped,
                   measured_window=steady_window, measured_ci=steady_ci)

    rows.append(cap_row("capacity (served tokens/s, steady state)", pred.tokens_per_s,
                        f"measured over the {st['seconds']:g} s under the binding limit ({reg['binding']}, "
                        f"{st['window_s'][0]:.0f}-{st['window_s'][1]:.0f} s); " + ci_words(st["ci"])
                        + f"; predicted: {pred.inputs.get('layout', '')}"))
    # the same deployment predicted by fluidq.simulate (predict_deployment(method="simulate")): the
    # benchmark as offered -- its requests' lengths, each sent once in the client's order, Poisson at its
    # request rate (the client's schedule: requests over the arrival span; no engine timing is read) -- logged
    # in 1 s ticks and read by the same capacity_regimes estimator as the run
    caching = run.prefix_caching
    span = float(run.arrival_s[-1] - run.arrival_s[0])
    rate = (len(run) - 1) / span if span > 0 else None
    n_rep = 5 if ctx.get("fast") else 10
    dep_args = dict(input_tokens=run.input_tokens, output_tokens=run.output_tokens, max_num_seqs=run.max_num_seqs,
                    max_num_batched_tokens=run.max_num_batched_tokens, tensor_parallel_size=run.tensor_parallel_size,
                    pipeline_parallel_size=run.pipeline_parallel_size, data_parallel_size=dp,
                    enable_expert_parallel=run.expert_parallel, kv_capacity_tokens=kv, model=facts, comm=comm,
                    enable_prefix_caching=caching, block_size=RecordedBlockSize(run.block_size),
                    async_scheduling=run.async_scheduling)
    spred = None
    # the simulated benchmark draws Poisson gaps at the run's mean rate: only a run whose own arrivals are Poisson
    # at a steady rate is that benchmark (a ramping rate simulated at its mean never saturates like the run did)
    arrivals = steady_poisson_arrivals(run.sent_s if run.sent_s is not None else run.arrival_s)
    if not steady_ok:  # nothing to compare a simulated benchmark with (and a benchmark that never saturates has none)
        rows.append(cap_row("capacity (fluidq.simulate of the benchmark, steady state)", None, ""))
    elif not arrivals["steady"]:
        rows.append(Row(case=case.name, source=case.source,
                        quantity="capacity (fluidq.simulate of the benchmark, steady state)", predicted=None,
                        measured=st["tokens_per_s"], unit="tokens/s", error_pct=None,
                        target=f"within ±{lim:g} % (aim ±{aim:g} %)", status="skip",
                        note="not simulated: this row simulates the benchmark as Poisson arrivals at the run's mean "
                             f"rate, and the run's own arrivals are not that ({arrivals['note']}); the row "
                             "'capacity (replayed arrivals, the same steady window)' simulates its own arrival times"
                             + dropped, measured_window=steady_window, measured_ci=steady_ci))
    elif rate is not None and run.pipeline_parallel_size == 1:
        # the benchmark sends its request list in order (LLMServingSim's bench runner, which made these runs:
        # dataset row N as request bench-N at the row's arrival offset; vLLM's bench client likewise), so
        # the simulated benchmark keeps that order (the ids' numbers) and draws only the gaps
        co = run.client_order
        spred = predict_deployment(_plain_path(data / s["profile"]), method="simulate", arrival_rate=rate,
                                   replications=n_rep, seed=int(s.get("seed", 2024)), order="given",
                                   **{**dep_args, "input_tokens": run.input_tokens[co],
                                      "output_tokens": run.output_tokens[co]})
        reps = np.asarray(spred.replications)
        rows.append(cap_row("capacity (fluidq.simulate of the benchmark, steady state)", spred.tokens_per_s,
                            f"predict_deployment(method='simulate', order='given'): the {len(run)} requests' lengths "
                            f"in the benchmark's order, Poisson gaps at its {rate:.2f} req/s, async scheduling "
                            f"{'on' if run.async_scheduling else 'off'} (the run's), prefix caching {'on' if caching else 'off'} "
                            f"({run.prefix_caching_source}); the capacity_regimes "
                            f"estimator on the simulated 1 s log (binding {spred.binding}); mean of {reps.size} "
                            f"replications, 95 % CI {spred.ci[0]:.0f}-{spred.ci[1]:.0f}, replications "
                            f"{reps.min():.0f}-{reps.max():.0f}"))
    if not ctx.get("fast") and run.pipeline_parallel_size == 1:
        # the engine's stationary saturated throughput (no benchmark given): what `fluidq capacity
        # --profile-dir --method simulate` answers by default; a different quantity from a finite run's window
        stat = predict_deployment(_plain_path(data / s["profile"]), method="simulate", n_requests=1000,
                                  replications=5, seed=int(s.get("seed", 2024)), **dep_args)
        rows.append(Row(case=case.name, source=case.source,
                        quantity="capacity (fluidq.simulate, stationary overload)", predicted=stat.tokens_per_s,
                        measured=st["tokens_per_s"], unit="tokens/s", error_pct=_err(stat.tokens_per_s,
                                                                                      st["tokens_per_s"]),
                        status="info",
                        note=f"1000 requests drawn from the lengths, Poisson at 1.5 x the fluid capacity; 5 "
                             f"replications, 95 % CI {stat.ci[0]:.0f}-{stat.ci[1]:.0f}; the run's {len(run)}-request "
                             "window is not this stationary state"
                             + ("" if steady_ok else f"; no measured capacity: {st['note']}") + no_steady_ci,
                        measured_window=steady_window, measured_ci=steady_ci))
        info["stationary_simulated"] = stat.to_dict()
    rows.append(Row(case=case.name, source=case.source, quantity="served tokens/s, start-up ramp (measured)",
                    predicted=None, measured=rp["tokens_per_s"] if np.isfinite(rp["tokens_per_s"]) else None,
                    unit="tokens/s", status="info",
                    note=(f"{rp['seconds']:g} saturated s before the binding limit holds "
                          f"({rp['window_s'][0]:.0f}-{rp['window_s'][1]:.0f} s), "
                          + (ci_words(rp["ci"]) if np.isfinite(rp["tokens_per_s"])
                             else f"no number ({rp['note']})")
                          if rp["seconds"] else "no saturated tick before the binding limit holds")
                         + (f"; all {sat['seconds']} saturated ticks together: {sat['tokens_per_s']:.0f} tokens/s"
                            if np.isfinite(sat["tokens_per_s"]) else f"; {sat.get('note', '')}"),
                    measured_window=ticks_window("start-up ramp (saturated, before the binding limit holds)",
                                                 rp["window_s"], rp["index"]) if np.isfinite(rp["tokens_per_s"]) else "",
                    measured_ci=ci_or_none(rp["ci"]) if np.isfinite(rp["tokens_per_s"]) else None))
    # which limit binds: the measurements alone say so (never the case file's expected answer), through
    # running vs max_num_seqs and KV use while requests wait; neither full means the token budget binds
    meas_bind = reg["binding"]
    resolved = meas_bind in ("k_max", "kv_cache", "token_budget") and steady_ok
    rows.append(Row(case=case.name, source=case.source, quantity="binding limit", predicted=pred.binding,
                    measured=meas_bind, target="same limit",
                    status=("pass" if pred.binding == meas_bind else "miss") if resolved else "skip",
                    note=("" if resolved else "not scored: the run does not say which limit binds"
                          + ("" if steady_ok else " (no steady state)") + "; ")
                         + f"measured from: {reg['binding_source']}; "
                         + (f"running max {sat['running_max']:.0f} / max_num_seqs {run.max_num_seqs}"
                            if np.isfinite(sat["running_max"]) else
                            f"fewer than 3 saturated ticks (running never read at a limit) / max_num_seqs {run.max_num_seqs}")
                         + (f" x DP{dp}" if dp > 1 else "")
                         + (f", KV use {sat['kv_pct_mean']:.0f} %" if sat["kv_pct_mean"] > 0
                            else ", KV use not recorded (its column absent or 0)")
                         + f"; KV capacity {kv} tokens ({kv_note})"
                         + (f"; the simulated benchmark's log binds on {spred.binding}" if spred is not None else ""),
                    measured_window=steady_window))
    sat_ok = bool(np.isfinite(sat["running_mean"]))
    rows.append(Row(case=case.name, source=case.source, quantity="requests resident at saturation (N)",
                    predicted=pred.residents, measured=sat["running_mean"] if sat_ok else None, unit="requests",
                    error_pct=_err(pred.residents, sat["running_mean"]), status="info",
                    note=("mean of `running` over the saturated ticks; " + ci_words(
                        sat["running_mean_ci"], "95 % CI by batch means with a data-chosen batch size:"))
                    if sat_ok else f"no measured number: {sat.get('note', 'no saturated tick')}",
                    measured_window=ticks_window("every tick with requests waiting", sat["window_s"],
                                                 np.flatnonzero(np.asarray(run.timeseries["waiting"]) > 0))
                    if sat_ok else "", measured_ci=ci_or_none(sat["running_mean_ci"]) if sat_ok else None))
    qg_ok = qg["ticks"] > 0
    qg_window = (f"ticks {qg['window_s'][0]:g}-{qg['window_s'][1]:g} s of the run, from the first with requests "
                 f"waiting to the last arrival ({qg['ticks']} ticks)") if qg_ok else ""
    slope_pred = qg["offered_tokens_per_s"] - pred.tokens_per_s
    eb = _err(slope_pred, qg["backlog_tokens_per_s"])
    no_queue = "no measured number: no tick with requests waiting while requests arrived (no backlog grew)"
    rows.append(Row(case=case.name, source=case.source, quantity="token backlog growth while arriving",
                    predicted=slope_pred if qg_ok else None, measured=qg["backlog_tokens_per_s"] if qg_ok else None,
                    unit="tokens/s", error_pct=eb if qg_ok else None,
                    status="info", note=(f"fluid slope = offered {qg['offered_tokens_per_s']:.0f} - capacity "
                                         f"(Theorem 2); window {qg['window_s'][0]:.0f}-{qg['window_s'][1]:.0f} s; "
                                         f"waiting grew {qg['waiting_per_s']:.2f} req/s; measured: the mean per-tick "
                                         "increment of the backlog; " + ci_words(qg["backlog_tokens_per_s_ci"],
                                         "95 % CI by batch means of the increments (data-chosen batch size):"))
                    if qg_ok else no_queue,
                    measured_window=qg_window,
                    measured_ci=ci_or_none(qg["backlog_tokens_per_s_ci"]) if qg_ok else None))
    win = qg["window_s"]
    arrived = int(((run.arrival_s > win[0]) & (run.arrival_s <= win[1])).sum())
    offered_req = arrived / (win[1] - win[0]) if win[1] > win[0] else float("nan")
    wpred = offered_req - pred.requests_per_s
    rows.append(Row(case=case.name, source=case.source, quantity="requests waiting: growth while arriving",
                    predicted=wpred if qg_ok else None, measured=qg["waiting_per_s"] if qg_ok else None, unit="req/s",
                    error_pct=_err(wpred, qg["waiting_per_s"]) if qg_ok else None, status="info",
                    note=(f"fluid: offered {offered_req:.2f} req/s - capacity {pred.requests_per_s:.2f} req/s; "
                          "measured: the mean per-tick increment of `waiting`; " + ci_words(
                              qg["waiting_per_s_ci"], "95 % CI by batch means of the increments (data-chosen batch "
                              "size):", ".2f"))
                    if qg_ok else no_queue,
                    measured_window=qg_window, measured_ci=ci_or_none(qg["waiting_per_s_ci"]) if qg_ok else None))
    info.update({"prediction": pred.to_dict(), "saturated": sat, "regimes": reg, "queue_growth": qg,
                 "simulated": None if spred is None else spred.to_dict()})
    figures, figure_inputs = [], ()
    md = [f"**{case.spec.get('description', case.name)}**", "", f"Prediction: {pred.reason}.", ""]
    if spred is not None:
        md += [f"Simulated prediction: {spred.reason}.", ""]
    # the replay: one engine, or the lockstep MoE ranks replayed together (deployment.LockstepRanks)
    lockstep = dp > 1 and facts is not None and bool(facts.n_experts)
    rmodel, rb, rk, rkv = model, run.max_num_batched_tokens, run.max_num_seqs, kv
    if lockstep:
        from .deployment import LockstepRanks

        rmodel, rb, rk = LockstepRanks(model, dp), dp * rb, dp * rk
        rkv = None if kv is None else dp * kv
    # dense data-parallel replicas are replayed as dp engines, the requests dealt to them in the client's order
    # (vLLM's DP load balancer sends each request to the least loaded engine and counts it at once, which
    # for identical engines under load deals them in turn)
    replicas = dp if (dp > 1 and not lockstep) else 1
    replayable = run.pipeline_parallel_size == 1
    if not replayable:
        md += ["Latency replay: not run for this layout (the replay models engines without pipeline stages).", ""]
        rows.append(Row(case=case.name, source=case.source, quantity="latency (replayed arrivals)", predicted=None,
                        measured=None, unit="ms", error_pct=None, status="skip",
                        note=f"not replayed: pipeline_parallel_size = {run.pipeline_parallel_size} (fluidq's replay "
                             "models engines without pipeline stages); no TTFT, TPOT or latency rows"))
    if not ctx.get("fast_replay_skip") and replayable:
        t0 = time.time()
        # every latency row comes from fluidq.simulate on the run's engine: the operator-profile batch
        # time (batch composition), vLLM's paged KV cache and rules, the run's own arrivals; TTFT is
        # vLLM's: the end of the iteration that completes the prefill (its first token comes with it)
        from ..sim import simulate
        from .replay import ReplayResult, read_s, vllm_engine

        # the requests are sent when the client sent them (sent_s) and the replay measures TTFT and latency
        # from when its own engine read them (read_s), as vLLM measures them from queued_ts; a run without
        # the client's stamps is replayed from queued_ts
        sent = run.sent_s
        if sent is not None:
            order = np.argsort(sent, kind="stable")
            reqs = {"arrival_s": sent[order], "prompt_tokens": run.input_tokens[order],
                    "output_tokens": run.output_tokens[order]}
        else:
            reqs = {"arrival_s": run.arrival_s, "prompt_tokens": run.input_tokens, "output_tokens": run.output_tokens}

        def lat_of(sim):
            r = sim.requests
            t_read = read_s(sim) if sent is not None else r["arrival_s"]
            return {"ttft_s": r["prefill_done_s"] - t_read, "ttlt_s": r["finish_s"] - t_read,
                    # one-token outputs have no TPOT (left out, as vLLM's benchmark and ServingRun.tpot_s do)
                    "tpot_s": np.where(r["output_tokens"] > 1, (r["finish_s"] - r["prefill_done_s"])
                                       / np.maximum(r["output_tokens"] - 1, 1), np.nan)}

        eng = vllm_engine(rmodel, b_max=rb, k_max=rk, kv_capacity_tokens=rkv, prefix_caching=caching, name=case.name,
                          async_scheduling=run.async_scheduling, block_size=run.block_size)
        if replicas == 1:
            sim0 = simulate(eng, reqs, "vllm-chunked", n_requests=len(run), record_iterations=True)
            rep = ReplayResult.from_sim(sim0)  # per-request times and the running trace, for the plot
            reps_, lat = [rep], lat_of(sim0)
        else:
            sims = [simulate(eng, {k: v[i::replicas] for k, v in reqs.items()}, "vllm-chunked",
                             n_requests=len(reqs["arrival_s"][i::replicas]), record_iterations=True)
                    for i in range(replicas)]
            reps_ = [ReplayResult.from_sim(x) for x in sims]
            lats = [lat_of(x) for x in sims]
            lat = {k: np.concatenate([x[k] for x in lats]) for k in lats[0]}
            o = np.argsort(np.concatenate([r.arrival_s for r in reps_]), kind="stable")
            cat = {k: np.concatenate([getattr(r, k) for r in reps_])[o]
                   for k in ("arrival_s", "first_token_s", "last_token_s", "output_tokens")}
            rep = ReplayResult(**cat, iterations=sum(r.iterations for r in reps_),
                               preemptions=sum(r.preemptions for r in reps_), running_trace=np.empty((0, 4)))
            md += [f"Latency replay: the {replicas} DP replicas as {replicas} engines, the requests dealt to them in "
                   "turn in the client's order.", ""]
        if steady_ok:
            # the same steady window in the simulation of the run's arrivals (preemptions and admission
            # included, which the fluid capacity leaves out); ticks cover (t - 1, t]
            w0, w1 = st["window_s"][0] - run.tick_s, st["window_s"][1]
            rcap = float(sum(r.served_tokens_per_s(w0, w1) for r in reps_))
            er = _err(rcap, st["tokens_per_s"])
            rows.insert(1, Row(case=case.name, source=case.source,
                               quantity="capacity (replayed arrivals, the same steady window)", predicted=rcap,
                               measured=st["tokens_per_s"], unit="tokens/s", error_pct=er,
                               target=f"within ±{lim:g} % (aim ±{aim:g} %)", status=_status(er, lim),
                               note=f"fluidq.simulate on the run's arrivals and lengths, useful tokens over "
                                    f"{w0:.0f}-{w1:.0f} s (recomputation after a preemption not counted)"
                                    + (f"; the {dp} DP ranks replayed in lockstep, the slowest rank setting each "
                                       "iteration" if lockstep else "")
                                    + (f"; {replicas} DP replicas replayed as {replicas} engines, the requests dealt "
                                       "in turn" if replicas > 1 else "") + no_steady_ci,
                               measured_window=steady_window, measured_ci=steady_ci))
            info["replayed_steady_tokens_per_s"] = rcap
        meas = latency_metrics(run.ttft_s, run.latency_s, run.tpot_s)
        lat_window = (f"all {len(run)} requests measured, queued at {float(run.arrival_s[0]):.1f}-"
                      f"{float(run.arrival_s[-1]):.1f} s of the run" + (f" ({sum(run.dropped.values())} left out: "
                      + ", ".join(f"{v} {k}" for k, v in run.dropped.items()) + ")" if run.dropped else ""))
        ours = latency_metrics(lat["ttft_s"], lat["ttlt_s"], lat["tpot_s"])
        sec0 = time.time() - t0
        peer_path = data / s["run"] / "peer_sim_vs_vllm_summary.txt"
        peer = read_peer_summary(peer_path) if peer_path.exists() else {}
        errs = {k: _err(ours[k], meas[k]) for k in meas}
        # the same engine with the built-in profile fitted to the same GPU (t(b, kv) form) instead of the
        # operator profiles
        sim_errs, sim_note = None, ""
        if s.get("sim_profile"):
            from ..profiles import load_profile

            prof = load_profile(s["sim_profile"])
            eng_f = prof.engine(b_max=run.max_num_batched_tokens, k_max=run.max_num_seqs, kv_capacity_tokens=kv)
            eng_f = eng_f.with_(memory=eng.memory, prefill_emits_token=True, async_scheduling=eng.async_scheduling)
            t1 = time.time()
            sim = simulate(eng_f, reqs, s.get("sim_policy", "vllm-chunked"), n_requests=len(run),
                           record_iterations=True)
            lat_f = lat_of(sim)  # what vLLM measures as TTFT
            sim_m = latency_metrics(lat_f["ttft_s"], lat_f["ttlt_s"], lat_f["tpot_s"])
            sim_errs = {k: _err(sim_m[k], meas[k]) for k in meas}
            sim_note = (f"The fitted-profile column: `fluidq.simulate` with profile `{prof.name}` "
                        f"({prof.batch_time.describe()}) on the same memory model, policy "
                        f"`{s.get('sim_policy', 'vllm-chunked')}`: {sim.n_iterations} iterations, {sim.preemptions} "
                        f"preemptions, {time.time() - t1:.1f} s.")
        md += ["| metric | measured (ms) | fluidq.simulate (ms) | error | fitted-profile error | peer simulator error |",
               "|---|---|---|---|---|---|"]
        def pct(e):  # no relative error when the measured value is 0 (TPOT of one-token outputs)
            return "n/a" if e is None else f"{e:+.1f} %"

        for k in meas:
            pe = f"{peer[k][2]:+.1f} %" if k in peer else "n/a"
            se = pct(sim_errs[k]) if sim_errs else "n/a"
            md.append(f"| {k} | {meas[k]:.1f} | {ours[k]:.1f} | {pct(errs[k])} | {se} | {pe} |")
        md += ["", f"`fluidq.simulate` on the run's own arrivals (operator-profile batch time read from the batch "
                   f"composition, vLLM v1 memory: {eng.memory.block_size}-token blocks, whole-prompt reservation, "
                   f"most recent request preempted and recomputed, prefix caching {'on' if caching else 'off'} "
                   f"({run.prefix_caching_source}); "
                   f"async scheduling {'on' if eng.async_scheduling else 'off'} (the run's vLLM "
                   f"{run.meta.get('vllm_version', '?')}); policy `vllm-chunked`; "
                   + ("requests sent at the client's `arrival_time` stamps, TTFT and latency from when the simulated "
                      "engine read each one (the end of the batch running at its arrival), as vLLM measures them "
                      "from `queued_ts`; " if sent is not None else "requests arriving at their `queued_ts`; ")
                   + f"TTFT = end of the prefill's iteration, vLLM's definition): "
                   f"{rep.iterations} iterations, {rep.preemptions} preemptions, {sec0:.1f} s. {sim_note}"]
        # a case reports four metrics as rows (the table has all 15); `fluidq validate --run` all 15
        for k in (list(meas) if s.get("_all_latency_rows") else ("TTFT Mean", "TPOT Mean", "Latency Mean",
                                                                 "Latency P90")):
            pe = peer.get(k, (None, None, None))[2]
            note = "fluidq.simulate on the run's arrivals; peer = LLMServingSim's own simulator" + dropped
            if errs[k] is None:  # measured 0 (every request one output token: no TPOT): nothing to score
                target, status = "", "skip"
                note += f"; not scored: the measured {k} is {meas[k]:g} ms, no relative error"
            elif s.get("_all_latency_rows") and k in _RUN_MEAN_TARGETS:
                # a run folder (`fluidq validate --run`): the means are held to issue 16's bar for runs outside
                # the repository, the same with or without the peer's summary; the peer's error is stated
                bar = _RUN_MEAN_TARGETS[k]
                target = f"within ±{bar:g} % (runs outside the repository)"
                status = "pass" if abs(errs[k]) <= bar else "miss"
                if pe is not None:
                    note += f"; the peer's error {pe:+.1f} %"
            else:
                target = f"within peer's ±{abs(pe):.1f} %" if pe is not None else ""
                status = ("pass" if abs(errs[k]) <= abs(pe) + 1e-9 else "miss") if pe is not None else "info"
            rows.append(Row(case=case.name, source=case.source, quantity=f"{k} (replayed arrivals)",
                            predicted=ours[k], measured=meas[k], unit="ms", error_pct=errs[k],
                            target=target, status=status,
                            # no interval: the replay runs the same requests at the same times, so its error is
                            # paired and not judged against one; and what another run of the workload would measure
                            # needs the between-run variation, which one run of serially dependent requests cannot
                            # give (runs.latency_metrics_ci: a block bootstrap covered 0-100 % on seeded runs)
                            note=note + _NO_LATENCY_CI,
                            measured_window=lat_window, measured_ci=None))
        if peer:
            mine = float(np.mean([abs(errs[k]) for k in peer if errs.get(k) is not None]))
            theirs = float(np.mean([abs(v[2]) for v in peer.values()]))
            rows.append(Row(case=case.name, source=case.source, quantity="mean abs. error over the 15 latency metrics",
                            predicted=mine, measured=theirs, unit="% (fluidq vs peer)", error_pct=None,
                            target="fluidq <= peer", status="pass" if mine <= theirs else "miss",
                            note="predicted column: fluidq.simulate's mean |error| (operator profiles); "
                                 "measured column: the peer's"))
            if sim_errs:
                simm = float(np.mean([abs(sim_errs[k]) for k in peer if sim_errs.get(k) is not None]))
                rows.append(Row(case=case.name, source=case.source,
                                quantity="mean abs. error over the 15 latency metrics, fitted profile",
                                predicted=simm, measured=theirs, unit="% (fluidq vs peer)", error_pct=None,
                                target="fluidq <= peer", status="pass" if simm <= theirs else "miss",
                                note=f"fluidq.simulate with the fitted profile {s['sim_profile']} as batch time"))
        else:  # no peer simulator beside the run: the error itself, with no target to compare it to
            rows.append(Row(case=case.name, source=case.source, quantity="mean abs. error over the 15 latency metrics",
                            predicted=float(np.mean([abs(v) for v in errs.values() if v is not None])), measured=None,
                            unit="%", error_pct=None, status="info",
                            note="fluidq.simulate's mean |error| over the 15 metrics; the folder has no "
                                 "peer_sim_vs_vllm_summary.txt to compare it with"))
        info["latency"] = {"measured": meas, "fluidq": ours, "fluidq_simulate_error_pct": sim_errs,
                           "peer": {k: v[2] for k, v in peer.items()}, "replay": rep.to_dict(),
                           "ttft": "end_of_prefill"}
        figure_inputs = (run, rep, pred)
        if ctx.get("out_dir") is not None:
            drawn = CaseResult(case=case, rows=(), figure_inputs=figure_inputs)
            figures.append(drawn.plot(path=Path(ctx["out_dir"]) / f"{case.name}.png"))
    md += _interval_table(rows)  # every measured number with what it was read over and its interval
    return CaseResult(case=case, rows=tuple(rows), markdown="\n".join(md), figures=tuple(figures), data=info,
                      figure_inputs=figure_inputs)


#: why a latency row carries no measured interval (issue 16's second reading)
_NO_LATENCY_CI = ("; no measured 95 % interval: a run's requests wait behind one another (TTFT lag-1 correlation "
                  "0.97-0.99 at moderate and heavy load on seeded simulations), so one run cannot say what another "
                  "run of the workload would measure -- a block bootstrap over its requests covered the mean over "
                  "replications in 0-100 % of seeded runs by load and metric -- and the replay is paired with the run "
                  "(same requests, same times)")

#: `fluidq validate --run`: the latency means held to issue 16's bar for deployments outside the repository
#: ("TTFT and latency means within 5 %"), whether or not the folder has the peer simulator's summary
_RUN_MEAN_TARGETS = {"TTFT Mean": 5.0, "Latency Mean": 5.0}


def _serving_run_measured(case: Case, data: Path, ctx) -> CaseResult:
    from .runs import queue_growth, read_run, saturated_throughput

    run = read_run(data / case.spec["run"])
    sat = saturated_throughput(run)
    qg = queue_growth(run)
    tot = run.input_tokens + run.output_tokens
    span = float(run.last_token_s.max())
    rows = [Row(case=case.name, source=case.source, quantity="served tokens/s (saturated ticks)", predicted=None,
                measured=sat["tokens_per_s"], unit="tokens/s", status="info",
                note=f"{sat['seconds']} ticks with waiting > 0; not modelled: {case.spec.get('description', '')}"),
            Row(case=case.name, source=case.source, quantity="served tokens/s (over the makespan)", predicted=None,
                measured=float(tot.sum() / span), unit="tokens/s", status="info",
                note=f"offered {qg['offered_tokens_per_s']:.0f} tokens/s while arriving")]
    return CaseResult(case=case, rows=tuple(rows), data={"saturated": sat, "queue_growth": qg})


# ------------------------------------------------------------------------------------- Vidur
def _kv_from_memory(mem: dict, n_layers: int, tp: int) -> tuple[int, str]:
    """KV capacity in tokens from GPU memory, the way Vidur plans it: free memory
    ``gpu_gib * 2^30 * (1 - margin) - params_per_gpu * 2 bytes`` holds ``floor(free / kv_request)``
    requests of ``max_request_tokens`` each (their blocks are then paged)."""
    gib = 2 ** 30
    params_gpu = float(mem["params_billion_per_gpu"]) * 1e9
    free = mem["gpu_gib"] * gib * (1 - mem["margin"]) - params_gpu * 2
    per_tok = 2 * n_layers * (mem["kv_heads"] / tp) * mem["head_dim"] * 2
    if free <= 0:
        raise DataError(f"memory: the weights ({params_gpu / 1e9:.2f} B parameters per GPU) do not fit")
    req_tokens = int(mem.get("max_request_tokens", 0))
    if req_tokens:
        slots = int(free // (per_tok * req_tokens))
        tokens = slots * req_tokens
        how = f"{slots} request slots x {req_tokens} tokens"
    else:
        tokens = int(free // per_tok)
        how = f"{tokens} tokens"
    return tokens, (f"({mem['gpu_gib']} GiB x {1 - mem['margin']:.2f} - {params_gpu * 2 / 1e9:.1f} GB weights "
                    f"per GPU) / {per_tok / 1024:.0f} KiB per token: {how} (Vidur's memory planner)")


def _peer_vidur(case: Case, data: Path, ctx) -> CaseResult:
    from ..workload.traces import load_trace
    from ..batchtime.operators import vidur_iteration_model
    from .predict import predict_capacity

    s = case.spec
    tp = int(s.get("tp", 1))
    # [predictor]: constants of Vidur's own execution-time predictor (its documented defaults: the peer's
    # model, like its memory planner below), never fitted to the saturation rate this case scores
    pv = s.get("predictor", {})
    model = vidur_iteration_model(data / s["mlp"], data / s["attention"], n_layers=_n_layers(case.name, s), tp=tp,
                                  all_reduce_csv=(data / s["all_reduce"]) if "all_reduce" in s else None,
                                  name=case.name, dtype_bytes=int(pv.get("dtype_bytes", 2)),
                                  collective_launch_us=float(pv.get("collective_launch_us", 0.0)),
                                  decode_batching_overhead=float(pv.get("decode_batching_overhead", 0.0)))
    tr = load_trace(s.get("trace", "azure-conv"))
    p, o = np.asarray(tr.prompt_tokens, dtype=float), np.asarray(tr.output_tokens, dtype=float)
    keep = (p + o) <= int(s.get("max_model_len", 10 ** 9))
    kv, kv_note = _kv_from_memory(s["memory"], _n_layers(case.name, s), tp)
    pred = predict_capacity(model, p[keep], o[keep], b_max=int(s["b_max"]), k_max=s.get("k_max"),
                            kv_capacity_tokens=kv)
    mx = int(s.get("max_model_len", 10 ** 9))
    tot = p + o
    cut = np.clip(tot - mx, 0, None)
    pc = np.clip(p - np.ceil(cut * p / tot), 1, None)
    oc = np.clip(o - np.ceil(cut * o / tot), 1, None)
    clip_pred = predict_capacity(model, pc, oc, b_max=int(s["b_max"]), k_max=s.get("k_max"), kv_capacity_tokens=kv)
    lin_only = int(s["b_max"]) / float(model.n_layers * model.linear_us(float(s["b_max"])) * 1e-6)
    lin_req = lin_only / float(p[keep].mean() + o[keep].mean())
    peer = float(s["peer_requests_per_s"])
    lim = float(s.get("targets", {}).get("peer_pct", 10.0))
    e = _err(pred.requests_per_s, peer)
    rows = [Row(case=case.name, source=case.source, quantity="saturation rate vs Vidur (context-aware)",
                predicted=pred.requests_per_s, measured=peer, unit="req/s", error_pct=e,
                target=f"within ±{lim:g} %", status=_status(e, lim),
                note=f"binding: {pred.binding}; KV {kv_note}; {int((~keep).sum())} of {keep.size} trace requests "
                     f"longer than max_model_len left out; 'measured' = Vidur's simulation"),
            Row(case=case.name, source=case.source,
                quantity="saturation rate vs Vidur, long requests clipped as Vidur's trace generator does",
                predicted=clip_pred.requests_per_s, measured=peer, unit="req/s",
                error_pct=_err(clip_pred.requests_per_s, peer), status="info",
                note=f"the {int((~keep).sum())} requests longer than max_model_len shortened proportionally to "
                     f"max_model_len (Vidur's TraceRequestLengthGenerator) instead of left out; binding: "
                     f"{clip_pred.binding}; a sensitivity, not the scored row"),
            Row(case=case.name, source=case.source, quantity="linear-op staircase alone (b_max/t(b_max))",
                predicted=lin_req, measured=peer, unit="req/s", error_pct=_err(lin_req, peer), status="info",
                note="no attention: the over-prediction that reference §8 warns about")]
    # the same engine simulated under overload (1.5x the closed form): paging, admission and
    # preemption dynamics that the fluid bound leaves out
    from .replay import replay  # fluidq.simulate on the vLLM engine model

    reps = 1 if ctx.get("fast") else int(s.get("replications", 3))
    n_req = 1000 if ctx.get("fast") else int(s.get("replay_requests", 1500))
    lam = 1.5 * pred.requests_per_s
    mean_tok = float(p[keep].mean() + o[keep].mean())
    pk, ok_ = p[keep].astype(np.int64), o[keep].astype(np.int64)
    est = []
    for g in np.random.SeedSequence(int(s.get("seed", 2024))).spawn(reps):
        rng = np.random.default_rng(g)
        arr = np.cumsum(rng.exponential(1.0 / lam, n_req))
        idx = rng.integers(0, pk.size, n_req)
        rep = replay(model, arr, pk[idx], ok_[idx], b_max=int(s["b_max"]), k_max=s.get("k_max"),
                     kv_capacity_tokens=kv)
        tr = rep.running_trace
        sat = tr[tr[:, 2] > 0, 0]
        if sat.size == 0:
            continue
        t0, t1 = float(sat[0]), float(arr[-1])
        t0 += 0.2 * (t1 - t0)  # skip the ramp-up
        est.append(rep.served_tokens_per_s(t0, t1) / mean_tok)
    if est:
        sim = float(np.mean(est))
        es = _err(sim, peer)
        spread = f"{min(est):.2f}-{max(est):.2f} over {len(est)} seeded replications" if len(est) > 1 else \
            "one seeded replication (fast mode)"
        rows.insert(1, Row(case=case.name, source=case.source, quantity="saturation rate vs Vidur (replayed overload)",
                           predicted=sim, measured=peer, unit="req/s", error_pct=es, target=f"within ±{lim:g} %",
                           status=_status(es, lim),
                           note=f"{n_req} Poisson arrivals at {lam:.2f} req/s through the vLLM-like scheduler model "
                                f"with KV paging; useful tokens/s over the saturated interval / (m_p + m_d); {spread}"))
    return CaseResult(case=case, rows=tuple(rows), markdown=f"Prediction: {pred.reason}.",
                      data={"prediction": pred.to_dict(), "linear_only_requests_per_s": lin_req,
                            "replayed_requests_per_s": est})


# ----------------------------------------------------------------------------------- fits
def _load_measured(prof: dict, data: Path):
    from ..batchtime import loaders

    kind = prof["loader"]
    path = _plain_path(data / prof["path"])
    if kind == "llmservingsim":
        return loaders.load_llmservingsim(path, n_layers=_n_layers(prof.get("label", kind), prof)
                                          if "facts" in prof or "n_layers" in prof else None)
    if kind == "vidur":
        att = _plain_path(data / prof["attention"]) if "attention" in prof else None
        n = _n_layers(prof.get("label", kind), prof) if "facts" in prof or "n_layers" in prof else None
        return loaders.load_vidur(path, tp=int(prof.get("tp", 1)), n_layers=n, attention_path=att)
    if kind == "splitwise":
        return loaders.load_splitwise(path, model=prof.get("model", "llama2-70b"),
                                      hardware=prof.get("hardware", "a100-80gb"), tp=int(prof.get("tp", 8)))
    if kind == "sarathi_figure2":
        return loaders.load_sarathi_figure2(path)
    raise UnknownNameError("profile loader", kind, ["llmservingsim", "vidur", "splitwise", "sarathi_figure2"])


def _batch_time_fit(case: Case, data: Path, ctx) -> CaseResult:
    from ..batchtime.fit import fit_batch_time

    s = case.spec
    lim = float(s.get("target_mape_pct", 5.0))
    rows, md, out = [], ["| profile | points | staircase | piecewise-linear | affine | context-aware |",
                         "|---|---|---|---|---|---|"], {}
    for prof in s["profiles"]:
        if ctx.get("fast") and not prof.get("fast", False):
            continue
        mb = _load_measured(prof, data)
        lab = prof["label"]
        # forms in b alone: on rows whose time depends on b alone -- whole prefill batches when the
        # profile has enough of them, else the linear-operator rows; never both averaged together
        phases = set(mb.phase.tolist())
        tok_rows = mb
        if "prefill" in phases and len(np.unique(mb.where("prefill").tokens)) >= 20:
            tok_rows = mb.where("prefill")
        elif "linear" in phases:
            tok_rows = mb.where("linear")
        elif "prefill" in phases:
            tok_rows = mb.where("prefill")
        b, y = tok_rows.token_series()
        res = {}
        for kind in ("staircase", "piecewise-linear", "affine"):
            try:
                res[kind] = fit_batch_time(b, y, kind=kind)
            except Exception as exc:  # a form that cannot be fitted is reported, not fatal
                res[kind] = exc
        ctx_fit = None
        if mb.kv_tokens is not None and len(mb) >= 8:
            try:
                ctx_fit = fit_batch_time(mb.tokens, mb.seconds, kind="context-aware", kv_tokens=mb.kv_tokens)
            except Exception as exc:
                ctx_fit = exc
        ok = {k: v for k, v in res.items() if not isinstance(v, Exception)}
        best = min(ok, key=lambda k: ok[k].mape_heldout) if ok else None
        cells = []
        for kind in ("staircase", "piecewise-linear", "affine"):
            v = res[kind]
            cells.append("failed" if isinstance(v, Exception) else f"{100 * v.mape_heldout:.2f} %")
        cells.append("n/a (no attention rows)" if ctx_fit is None else
                     ("failed" if isinstance(ctx_fit, Exception) else f"{100 * ctx_fit.mape_heldout:.2f} %"))
        md.append(f"| {lab} | {len(b)} / {len(mb)} | " + " | ".join(cells) + " |")
        if best is not None:
            m = 100 * ok[best].mape_heldout
            rows.append(Row(case=case.name, source=lab, quantity=f"held-out MAPE, best form in b ({best})",
                            predicted=m, measured=None, unit="%", target=f"<= {lim:g} %",
                            status="pass" if m <= lim else "miss",
                            note=f"{len(b)} batch sizes from {'/'.join(sorted(set(tok_rows.phase.tolist())))} rows; "
                                 f"{ok[best].model.describe()}"))
        if ctx_fit is not None and not isinstance(ctx_fit, Exception):
            m = 100 * ctx_fit.mape_heldout
            rows.append(Row(case=case.name, source=lab, quantity="held-out MAPE, context-aware t(b, kv)",
                            predicted=m, measured=None, unit="%", target=f"<= {lim:g} %",
                            status="pass" if m <= lim else "miss",
                            note=f"{len(mb)} iterations incl. decode/mixed; {ctx_fit.model.describe()}"))
        out[lab] = {k: (str(v) if isinstance(v, Exception) else v.to_dict() | {"residuals_s": None})
                    for k, v in res.items()}
        if ctx_fit is not None:
            out[lab]["context-aware"] = str(ctx_fit) if isinstance(ctx_fit, Exception) else (
                ctx_fit.to_dict() | {"residuals_s": None})
    md += ["", "Held-out MAPE: 5-fold interleaved cross-validation (`fluidq.fit_batch_time`). Forms in `b` "
               "are fitted to rows whose time depends on `b` alone (whole prefill batches when the profile has "
               "at least 20 sizes, else the linear-operator rows; points = batch sizes / all rows); the "
               "context-aware form to every row with its KV tokens."]
    return CaseResult(case=case, rows=tuple(rows), markdown="\n".join(md), data=out)


def _hybrid_batch(case: Case, data: Path, ctx) -> CaseResult:
    from ..batchtime import loaders
    from ..batchtime.fit import fit_batch_time

    s = case.spec
    tg = s.get("targets", {})
    t2 = loaders.load_sarathi_table2(_plain_path(data / s["table2"]))
    f2 = loaders.load_sarathi_figure2(_plain_path(data / s["figure2"]))
    ph = t2.phase.tolist()
    hyb = [i for i, p in enumerate(ph) if p == "mixed"]
    pre = [i for i, p in enumerate(ph) if p == "prefill"]
    rows = []
    if hyb and pre:
        th, tp_ = float(t2.seconds[hyb[0]]), float(t2.seconds[pre[0]])
        e = _err(th, tp_)
        lim = float(tg.get("same_total_pct", 5.0))
        rows.append(Row(case=case.name, source=case.source, quantity="hybrid (1021 p + 3 d) vs 1024-token prefill",
                        predicted=th * 1e3, measured=tp_ * 1e3, unit="ms", error_pct=e,
                        target=f"within ±{lim:g} %", status=_status(e, lim),
                        note="'predicted' = hybrid batch, 'measured' = pure prefill batch of equal tokens"))
        b, y = f2.where("prefill").token_series()
        fit = fit_batch_time(b, y, kind="auto")
        pr = float(fit.predict(t2.tokens[hyb[0]]))
        e2 = _err(pr, th)
        lim2 = float(tg.get("predict_pct", 10.0))
        rows.append(Row(case=case.name, source=case.source, quantity="hybrid batch from the prefill fit t(b)",
                        predicted=pr * 1e3, measured=th * 1e3, unit="ms", error_pct=e2, target=f"within ±{lim2:g} %",
                        status=_status(e2, lim2), note=f"{fit.describe()}"))
    return CaseResult(case=case, rows=tuple(rows))


def _profile_vs_measured(case: Case, data: Path, ctx) -> CaseResult:
    from ..batchtime import loaders
    from ..batchtime.operators import vidur_iteration_model

    s = case.spec
    tp = int(s["tp"])
    sw = loaders.load_splitwise(_plain_path(data / s["splitwise"]), model=s["model"], hardware=s["hardware"], tp=tp)
    model = vidur_iteration_model(data / s["mlp"], data / s["attention"], n_layers=_n_layers(case.name, s), tp=tp,
                                  all_reduce_csv=data / s["all_reduce"] if "all_reduce" in s else None)
    lim = float(s.get("targets", {}).get("mape_pct", 10.0))
    rows = []
    pre = sw.where("prefill")
    b, y = pre.token_series()
    sel = b <= 4096
    pred = np.array([float(model.prefill_only(x)) for x in b[sel]])
    mape = float(np.mean(np.abs(pred - y[sel]) / y[sel]) * 100)
    bias = float(np.mean((pred - y[sel]) / y[sel]) * 100)
    rows.append(Row(case=case.name, source=case.source, quantity="prefill batch time, Vidur-built vs Splitwise (MAPE)",
                    predicted=mape, measured=None, unit="%", target=f"MAPE <= {lim:g} %",
                    status="pass" if mape <= lim else "miss",
                    note=f"{int(sel.sum())} prompt sizes <= 4096 tokens; mean signed error {bias:+.1f} % "
                         "(prompts of one batch folded into one chunk, no LM head)"))
    dec = sw.where("decode")
    if dec.kv_tokens is not None and len(dec):
        nd = dec.tokens
        ctxs = dec.kv_tokens / nd
        pd = np.array([float(model.decode_only(n, c)) for n, c in zip(nd, ctxs)])
        m2 = float(np.mean(np.abs(pd - dec.seconds) / dec.seconds) * 100)
        b2 = float(np.mean((pd - dec.seconds) / dec.seconds) * 100)
        rows.append(Row(case=case.name, source=case.source, quantity="decode iteration time, Vidur-built vs Splitwise (MAPE)",
                        predicted=m2, measured=None, unit="%", target=f"MAPE <= {lim:g} %",
                        status="pass" if m2 <= lim else "miss",
                        note=f"{len(dec)} rows; mean signed error {b2:+.1f} %; context = prompt + output/2"))
    return CaseResult(case=case, rows=tuple(rows))


def _harness_runs(case: Case, data: Path, ctx) -> CaseResult:
    from .harness_io import evaluate_harness_runs

    d = Path(ctx["harness_dir"]) if ctx.get("harness_dir") else data / case.spec.get("runs_dir", "gpu")
    lim = float(case.spec.get("targets", {}).get("capacity_pct", 10.0))
    rows, md, out = evaluate_harness_runs(d, case_name=case.name, source=case.source, limit_pct=lim)
    return CaseResult(case=case, rows=tuple(rows), markdown=md, data=out)


KINDS = {"serving_run": _serving_run, "serving_run_measured": _serving_run_measured, "peer_vidur": _peer_vidur,
         "batch_time_fit": _batch_time_fit, "hybrid_batch": _hybrid_batch,
         "profile_vs_measured": _profile_vs_measured, "harness_runs": _harness_runs}


def run_case(case: Case, data_dir, **ctx) -> CaseResult:
    """Run one case; the rows carry pass/miss against its targets."""
    if case.kind not in KINDS:
        raise UnknownNameError("case kind", case.kind, KINDS)
    t0 = time.time()
    try:
        res = KINDS[case.kind](case, Path(data_dir), ctx)
    except (FileNotFoundError, DataError) as exc:
        res = CaseResult(case=case, rows=(Row(case=case.name, source=case.source, quantity="(case could not run)",
                                              predicted=None, measured=None, status="skip", note=str(exc)),))
    return CaseResult(case=res.case, rows=res.rows, markdown=res.markdown, figures=res.figures, data=res.data,
                      seconds=time.time() - t0, figure_inputs=res.figure_inputs)
