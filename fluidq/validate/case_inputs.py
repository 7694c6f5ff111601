"""What a validation case reads besides the run it scores: its data files (``.gz`` tables decompressed into a
temporary folder, :func:`_plain_path`), the run's parallel layout (:func:`run_layout`), the model's layer count and
facts (:func:`_n_layers`, :func:`_case_facts`), the communication model of a parallel layout (:func:`_case_comm`)
and a KV capacity the run does not record, from vLLM's memory planner (:func:`_planned_kv`).  All of it is the
prediction's input (the case file, the operator profiles, the model's facts): nothing here reads a measured
answer.

Siblings: :mod:`fluidq.validate.cases` (the registry), :mod:`~fluidq.validate.case_rows` (rows and results),
:mod:`~fluidq.validate.case_run_folder`, :mod:`~fluidq.validate.case_serving`, :mod:`~fluidq.validate.case_profiles`.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from typing import TYPE_CHECKING

from .._io import atomic_write, read_bytes
from ..errors import DataError
from .case_rows import Case

if TYPE_CHECKING:  # read_run is imported on use
    from .runs import ServingRun


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
