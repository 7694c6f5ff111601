"""Capacity of a vLLM deployment predicted from an operator-profile folder alone (issue 16 item 6).

``predict_deployment(profile_dir, input_tokens=..., output_tokens=..., max_num_seqs=...,
max_num_batched_tokens=..., gpu_memory_gib=...)`` answers "what is the maximum throughput of this
deployment" before any run: the iteration model of the folder's operator profiles
(:func:`~fluidq.validate.iteration.lss_iteration_model`), the decoder-layer count from the model's
facts (:mod:`fluidq.models`, found from ``profile_meta.yaml``'s ``model``), the KV capacity given, or
estimated by vLLM's memory planner (:func:`~fluidq.models.kv_capacity_estimate`) from the GPU memory
(given, or the folder's ``peer_sim_config.json``), and the capacity of a decode-first chunked-prefill
engine under the three limits (token budget, ``max_num_seqs``, KV cache) with the one that binds
(:func:`~fluidq.validate.predict.predict_capacity`).

Parallel layouts (the terms are in :mod:`fluidq.batchtime.operators`; communication from
:mod:`fluidq.batchtime.comm`):

* ``tensor_parallel_size`` N > 1 reads the folder's ``profile_tp{N}_*`` (measured on one GPU with the
  model split, so without the all-reduce) and adds two all-reduces per layer;
* ``pipeline_parallel_size`` P > 1 splits the layers into P stages with P micro-batches in flight:
  the deployment is P virtual engines, each with ``max_num_seqs / P`` residents and ``1/P`` of the
  KV cache, whose iterations take P x the slowest stage; capacity = P x one virtual engine;
* ``data_parallel_size`` D > 1: D replicas behind vLLM's router, capacity = D x one replica (the
  router balances identical replicas; the sum is fluidq's parallel-engine capacity).  A MoE model's
  replicas step in lockstep (vLLM synchronises the DP ranks at every MoE layer), so a prompt chunk on
  one rank stalls all D: the group is predicted as one engine of ``D x max_num_seqs`` residents, ``D x``
  the token budget and ``D x`` the KV cache (every rank has its own), whose decode iteration is one
  rank's and whose prompt chunks share out over at most D ranks, one rank per chunk (a chunk alone stalls
  the group: the no-overlap bound; a chunk for every rank: the balanced split; :class:`_Lockstep`);
* ``enable_expert_parallel`` spreads a MoE model's experts over the ``tp x dp`` GPUs with two
  all-to-alls per MoE layer.

The communication model is ``comm`` (a :class:`~fluidq.batchtime.comm.Link` or a measured table),
else ``link_bandwidth_gbps`` + ``link_latency_us``, else ``all_reduce_csv`` (Vidur's table), else the
folder's ``peer_sim_config.json`` (``link_bw``, ``link_latency``).  A layout that communicates with
none of them is refused with a message saying what to give.

The same code predicts the validation suite's serving runs, so ``fluidq validate`` scores this answer
(Li, Dai, Peng, arXiv:2504.07347, for the capacity argument; "Efficient Memory Management for Large
Language Model Serving with PagedAttention", arXiv:2309.06180, for the block KV cache).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from .._validate import MAX_BUDGET_TOKENS, MAX_KV_TOKENS, integer, real, vllm_block_size
from ..errors import DataError, ParameterError
from .._validate import budget_holds_seqs

__all__ = ["predict_deployment", "deployment_engine"]

#: the shapes an operator profile is measured at: facts given for the profiled model must have the same
PROFILE_SHAPES = ("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim", "intermediate_size", "n_experts",
                  "experts_per_token", "moe_intermediate_size")


def profile_shape_differences(facts, profiled, *, label: str = "the profiled") -> str:
    """Where ``facts`` (a model given by name or config.json) differ from ``profiled`` (the shipped facts of the
    model ``profile_meta.yaml`` names) in a shape of :data:`PROFILE_SHAPES`, as words (the first three, then how
    many more); ``""`` when they agree or the profiled model is not shipped (``profiled`` None).  The one check of
    ``fluidq capacity --profile-dir --model`` and ``fluidq validate --run --model-config``."""
    if profiled is None:
        return ""
    diff = [f"{k} {getattr(facts, k)} ({label} {profiled.name}: {getattr(profiled, k)})"
            for k in PROFILE_SHAPES if getattr(facts, k) != getattr(profiled, k)]
    return ", ".join(diff[:3]) + (f" and {len(diff) - 3} more" if len(diff) > 3 else "")


#: ``engine_effective.hf_overrides`` keys of ``profile_meta.yaml`` (the shapes LLMServingSim's profiler gave vLLM),
#: the :class:`~fluidq.models.ModelFacts` shape each records, and how a TP-N profile splits it over its N GPUs:
#: ``"split"`` (heads, MLP width, vocabulary: 1/N each), ``"kv"`` (KV heads: 1/N, at least one, vLLM replicating
#: them when N exceeds them) or ``None`` (the same on every GPU).  ``num_hidden_layers`` is not compared: the
#: profiler times one decoder layer (it records 1) and the layer count is the model's own.
OVERRIDE_SHAPES = (("num_attention_heads", "n_heads", "split"), ("num_key_value_heads", "n_kv_heads", "kv"),
                   ("intermediate_size", "intermediate_size", "split"), ("hidden_size", "hidden_size", None),
                   ("head_dim", "head_dim", None), ("vocab_size", "vocab_size", "split"),
                   ("num_experts", "n_experts", None), ("num_local_experts", "n_experts", None),
                   ("num_experts_per_tok", "experts_per_token", None),
                   ("moe_intermediate_size", "moe_intermediate_size", "split"))


def profile_override_differences(facts, meta: dict) -> str:
    """Where ``facts`` differ from the shapes ``profile_meta.yaml`` (``meta``, read by
    :func:`~fluidq.validate.profile_meta.read_profile_meta`) records in ``engine_effective.hf_overrides``, as words;
    ``""`` when they agree or nothing is recorded.

    A profile folder of ``tp_degrees`` [1, 2] may record the shapes of one GPU's shard at TP2 (the shipped RTX PRO
    6000 folders: 16 of Llama-3.1-8B's 32 heads, MLP width 7168): the facts agree when, at one of the profiled
    tensor-parallel sizes N (and at 1), every recorded shape is the facts' split over N (:data:`OVERRIDE_SHAPES`).
    Compared where recorded: query and KV heads, MLP width, hidden size, head size, vocabulary, experts, top-k and
    expert width; not the layer count (one layer is profiled, the count is the model's).  This is the check that
    holds when the profiled model is in no shipped table (:func:`profile_shape_differences` holds when it is)."""
    eff = meta.get("engine_effective") if isinstance(meta, dict) else None
    over = eff.get("hf_overrides") if isinstance(eff, dict) else None
    if not isinstance(over, dict):
        return ""
    tps = meta.get("tp_degrees")
    tps = [t for t in tps if isinstance(t, int) and not isinstance(t, bool) and t >= 1] if isinstance(tps, list) else []
    best = None
    for n in sorted({1, *tps}):
        diffs = []
        for key, attr, how in OVERRIDE_SHAPES:
            rec = over.get(key)
            if not isinstance(rec, int) or isinstance(rec, bool):
                continue
            v = getattr(facts, attr)
            if v is None:
                ok = False
            elif how is None or n == 1:
                ok = rec == v
            elif how == "kv" and v < n:
                ok = rec == 1
            else:
                ok = rec in (v // n, -(-v // n))
            if not ok:
                diffs.append(f"{attr} {v} where the profiles record {key} {rec}" + (
                    f" (= {attr} / {n} on each of TP{n}'s GPUs)" if how is not None and n > 1 else ""))
        if not diffs:
            return ""
        if best is None or len(diffs) < len(best[1]):
            best = (n, diffs)
    n, diffs = best
    sizes = ", ".join(map(str, sorted({1, *tps})))
    return (", ".join(diffs[:4]) + (f" and {len(diffs) - 4} more" if len(diffs) > 4 else "")
            + f" (profile_meta.yaml engine_effective.hf_overrides, compared at the profiled tensor-parallel sizes "
            f"{sizes}; the layer count is not compared: the profiles time one layer)")


def profile_kind_difference(folder: Path, facts, tp: int) -> str:
    """Where ``facts`` and the folder's TP``tp`` operator profiles are of different kinds of model, as words: a
    mixture of experts without ``profile_tp{tp}_moe.csv`` (its expert layers were never timed: the dense MLP times
    would stand in for them), or a dense model with one; ``""`` when they agree or the folder has no
    ``profile_tp{tp}_dense.csv`` (a missing table is said where it is read).  The one check of ``fluidq capacity,
    check, simulate --profile-dir`` (:func:`_deployment_parts`) and ``fluidq validate --run``
    (:func:`fluidq.validate.cases.case_for_run`)."""
    def has(part):
        return any((folder / f"profile_tp{tp}_{part}.csv{gz}").is_file() for gz in ("", ".gz"))

    if not has("dense") or bool(facts.n_experts) == has("moe"):
        return ""
    if facts.n_experts:
        return (f"the model {facts.name} is a mixture of experts ({facts.n_experts} experts, "
                f"top-{facts.experts_per_token}) but the folder has no profile_tp{tp}_moe.csv: these profiles are "
                "of a dense model")
    return (f"the model {facts.name} is dense but the folder has profile_tp{tp}_moe.csv: these profiles are of a "
            "mixture of experts")


def _lengths(name, v):
    a = np.atleast_1d(np.asarray(v, dtype=float))
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 1) or np.any(a != np.round(a)):
        raise ParameterError(name, v, "a whole number of tokens >= 1, or a non-empty array of them")
    return a


class RecordedBlockSize(int):
    """A block size a vLLM run recorded (``vllm_meta.json``): vLLM's own choice, checked as a whole number only, not
    against :data:`fluidq._validate.VLLM_BLOCK_SIZES` (a later vLLM may take another size).  The validation suite
    passes a run's block size as one; a block size given by a user is an ``int`` and checked against vLLM's set."""


def _block(block_size) -> int:
    if isinstance(block_size, RecordedBlockSize):
        return integer("block_size", int(block_size), minimum=1, maximum=MAX_BUDGET_TOKENS)
    return vllm_block_size("block_size", block_size)  # vLLM's set, or a warning (rev-indep #7b, fin9 #4)


def _vllm_args(max_num_seqs, max_num_batched_tokens, block_size, input_tokens, output_tokens):
    """``(k_max, b_max, block, prompts, outputs)``: vLLM's scheduler arguments checked by name, and the
    lengths as equal-size arrays (one given length is repeated to the other's size)."""
    k_max = integer("max_num_seqs", max_num_seqs, minimum=1, maximum=MAX_BUDGET_TOKENS)
    b_max = integer("max_num_batched_tokens", max_num_batched_tokens, minimum=1, maximum=MAX_BUDGET_TOKENS)
    budget_holds_seqs("max_num_batched_tokens", b_max, k_max)  # vLLM's own refusal
    block = _block(block_size)
    p, o = _lengths("input_tokens", input_tokens), _lengths("output_tokens", output_tokens)
    if p.size != o.size:
        if p.size == 1:
            p = np.full(o.size, p[0])
        elif o.size == 1:
            o = np.full(p.size, o[0])
        else:
            raise ParameterError("output_tokens", f"<{o.size} lengths>", f"{p.size} lengths, one per input")
    return k_max, b_max, block, p, o


def _profile_model(folder: Path) -> str | None:
    """The model ``profile_meta.yaml`` names (None when it names none); an invalid file is refused naming its line
    and column (:func:`fluidq.validate.profile_meta.read_profile_meta`), never read as one naming no model."""
    from .profile_meta import read_profile_meta

    name = read_profile_meta(folder).get("model")
    return str(name) if isinstance(name, (str, int, float)) and not isinstance(name, bool) and str(name) else None


def _gpu_memory_from_folder(folder: Path) -> float | None:
    p = folder / "peer_sim_config.json"
    if not p.is_file():
        return None
    from .._io import json_loads, read_text

    doc = json_loads(read_text("peer_sim_config.json", p, what="JSON file"), where=str(p))
    stack = [doc]
    while stack:  # the first npu_mem.mem_size anywhere in the document
        v = stack.pop()
        if isinstance(v, dict):
            mem = v.get("npu_mem")
            if isinstance(mem, dict) and isinstance(mem.get("mem_size"), (int, float)):
                return float(mem["mem_size"])
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _comm_for(folder: Path, comm, link_bandwidth_gbps, link_latency_us, all_reduce_csv, needs: str):
    from ..batchtime.comm import Link, MeasuredAllReduce

    if comm is not None:
        return comm
    if link_bandwidth_gbps is not None or link_latency_us is not None:
        if link_bandwidth_gbps is None or link_latency_us is None:
            missing = "link_bandwidth_gbps" if link_bandwidth_gbps is None else "link_latency_us"
            raise ParameterError(missing, None, "both link_bandwidth_gbps and link_latency_us (a link is both)")
        return Link(bandwidth_gbps=real("link_bandwidth_gbps", link_bandwidth_gbps, positive=True),
                    latency_us=real("link_latency_us", link_latency_us, nonnegative=True), name="given link")
    if all_reduce_csv is not None:
        return MeasuredAllReduce.from_vidur_csv(all_reduce_csv)
    p = folder / "peer_sim_config.json"
    if p.is_file():
        return Link.from_peer_sim_config(p)
    raise ParameterError("link_bandwidth_gbps", None, "a communication model: link_bandwidth_gbps and "
                         "link_latency_us, or all_reduce_csv (a measured all-reduce table, e.g. Vidur's "
                         "all_reduce_pairwise_nvlink.csv); on the command line --link-bandwidth-gbps and "
                         "--link-latency-us, or --all-reduce-csv",
                         f"{needs} communicates between GPUs, the operator profiles hold no communication, and "
                         f"{folder} has no peer_sim_config.json with link_bw/link_latency")


class _Lockstep:
    """A group of ``dp`` MoE ranks stepping together, seen by the flow-balance formula as one engine of ``dp x N``
    residents and ``dp x`` the token budget (every DP rank has its own ``max_num_seqs`` and
    ``max_num_batched_tokens`` in vLLM): the decodes shared evenly, an iteration's ``c`` prompt chunks placed on
    ``r = min(max(c, 1), dp)`` ranks with an equal share of the prompt tokens each, and the iteration lasting one
    of those ranks' iterations (the ranks synchronise at every MoE layer, so the others wait).  ``c`` is
    ``n_emit - n_decode`` (each chunk emits or holds a slot): the flow balance's mean chunks per iteration, or one
    iteration's count in the admission recursion.  Below one chunk per iteration (the shipped Qwen3 DP2 run: 0.39)
    this is the no-overlap bound, a chunk stalling the whole group; with a chunk for every rank it is the balanced
    split, each rank prefilling ``1/dp`` of the tokens -- :class:`LockstepRanks` places each chunk on the least
    loaded rank event by event, and the two are compared in tests/validation/test_dp_capacity.py.  (Before
    2026-12-07 the group had one rank's token budget and every chunk on one rank: capacity fell with ``dp``.)"""

    def __init__(self, replica, dp: int):
        self.replica, self.dp = replica, dp
        self.source = f"{replica.source}; DP{dp} ranks in lockstep"
        self.n_layers = replica.n_layers

    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        pc = np.asarray(prefill_tokens, dtype=float)
        nd = np.asarray(n_decode, dtype=float)
        c = np.zeros(np.shape(nd)) if n_emit is None else np.maximum(np.asarray(n_emit, dtype=float) - nd, 0.0)
        r = np.clip(c, 1.0, float(self.dp))
        # a rank's share C / r of the folded chunk: its causal work sum c (k + c/2) / r = (C / r)(kv_eff' + C / (2r))
        kv = np.asarray(kv_prefill, dtype=float) + pc * (1.0 - 1.0 / r) / 2.0
        return self.replica.time_shape(pc / r, kv, nd / self.dp, kv_decode, n_emit=nd / self.dp + c / r)

    def decode_only(self, n, kv):
        return self.time_shape(0.0, 0.0, n, kv)

    def prefill_only(self, tokens):
        return self.time_shape(tokens, 0.0, 0.0, 0.0)


class LockstepRanks:
    """``dp`` data-parallel MoE ranks stepping together, for a replay of all their arrivals as one engine
    (``dp x max_num_seqs`` residents, ``dp x`` the token budget): each iteration the decodes are shared
    evenly, each prompt chunk goes to the rank with the fewest tokens (vLLM's router balances the
    ranks), and the iteration lasts as long as the slowest rank (the ranks synchronise at every MoE
    layer).  Each rank's MoE layers are costed at ``dp x`` its own tokens, an upper bound for the
    slowest rank."""

    def __init__(self, replica, dp: int):
        self.replica, self.dp = replica, int(dp)
        self.n_layers = replica.n_layers
        self.source = f"{replica.source}; DP{dp} ranks in lockstep, the slowest rank sets the iteration"

    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        """Vectorised shape form: the decodes shared evenly, the (folded) prompt chunk on one rank,
        which is then the slowest."""
        pc = np.asarray(prefill_tokens, dtype=float)
        nd = np.asarray(n_decode, dtype=float) / self.dp
        return self.replica.time_shape(pc, kv_prefill, nd, kv_decode, n_emit=nd + (pc > 0))

    def kernel_table(self, max_batch_tokens=None):
        """The replica's table for the compiled kernel with the ranks in lockstep (``IterationModel.kernel_table``
        with ``lockstep_ranks=dp``; :func:`fluidq.kernel.compose.chunks_s` computes :meth:`time` from it), or
        ``None`` (then the simulation runs on the generic path)."""
        f = getattr(self.replica, "kernel_table", None)
        return f(max_batch_tokens, lockstep_ranks=self.dp) if callable(f) else None

    def time(self, prefill_chunks=(), decode_contexts=()) -> float:
        dc = np.asarray(decode_contexts, dtype=float)
        nd = dc.size / self.dp
        kvd = float(dc.mean()) if dc.size else 0.0
        ranks = [[] for _ in range(self.dp)]
        load = [nd] * self.dp
        for c, k in sorted(((float(c), float(k)) for c, k in prefill_chunks if c > 0), reverse=True):
            r = int(np.argmin(load))
            ranks[r].append((c, k))
            load[r] += c
        worst = 0.0
        for pcs in ranks:
            C = sum(c for c, _ in pcs)
            kv_eff = max(0.0, sum(c * (k + c / 2.0) for c, k in pcs) / C - C / 2.0) if C > 0 else 0.0
            worst = max(worst, float(self.replica.time_shape(C, kv_eff, nd, kvd, n_emit=nd + len(pcs))))
        return worst


def _deployment_parts(folder: Path, *, tp, pp, dp, enable_expert_parallel, k_max, b_max, block, model, comm,
                      link_bandwidth_gbps, link_latency_us, all_reduce_csv, kv_capacity_tokens, gpu_memory_gib,
                      gpu_memory_utilization, kv_cache_dtype: str = "auto") -> dict:
    """What every prediction from a profile folder shares: the model's facts, the layout, the communication
    model, the iteration model of one replica and the KV cache of one replica (given, or vLLM's memory
    planner's estimate, labelled so)."""
    from ..batchtime.operators import lss_iteration_model
    from ..models import ModelFacts, find_model, kv_bytes_per_value, kv_capacity_estimate, load_model

    if model is None and not (folder / "profile_meta.yaml").is_file():
        raise ParameterError("profile_dir", str(folder), "a folder of operator profiles in LLMServingSim's layout "
                             "(profile_meta.yaml, profile_tp1_*.csv)", "there is no profile_meta.yaml in it, the "
                             "file that names the profiled model")
    hf_id = _profile_model(folder)
    if isinstance(model, ModelFacts):
        facts = model
    else:
        facts = load_model(model, option="model") if model is not None else (find_model(hf_id) if hf_id else None)
    if facts is None:
        raise ParameterError("profile_dir", str(folder), "operator profiles of a model in the shipped model facts "
                             "(`fluidq models list`)", f"its profile_meta.yaml names {repr(hf_id) if hf_id else 'no model'}; "
                             "give the model's config.json (--model-config; from Python, "
                             "model=ModelFacts.from_config(path))")
    if model is not None and hf_id:
        diff = profile_shape_differences(facts, find_model(hf_id))
        if diff:
            raise ParameterError("model", facts.name, f"the model profiled in {folder} ({hf_id})",
                                 f"it has {diff}: operator profiles time one model's layers (leave the model out "
                                 "to use the shipped facts)")
    kind = profile_kind_difference(folder, facts, tp)
    if kind:  # a MoE config on dense profiles was predicted from the dense MLP times (rev-indep 2026-12-07 #3)
        meta = f"profile_meta.yaml: {hf_id}" if hf_id else "profile_meta.yaml names no model"
        if model is not None:
            raise ParameterError("model", facts.name, f"the config.json of the model profiled in {folder} ({meta})",
                                 f"{kind}; give the profiled model's config.json, or the folder of profiles measured "
                                 "on this model")
        raise ParameterError("profile_dir", str(folder), f"operator profiles of the model its profile_meta.yaml "
                             f"names ({hf_id})", f"{kind}; give the profiled model's config.json (--model-config; "
                             "from Python, model=ModelFacts.from_config(path))")
    from .profile_meta import read_profile_meta

    over = profile_override_differences(facts, read_profile_meta(folder))
    if over:  # a config of other shapes on a folder of a model in no table was predicted (rev-indep #4)
        if model is not None:
            raise ParameterError("model", facts.name, f"the config.json of the model profiled in {folder} "
                                 f"({hf_id or 'unnamed'})", f"it has {over}: operator profiles time one model's "
                                 "layers")
        raise ParameterError("profile_dir", str(folder), f"operator profiles of the model its profile_meta.yaml "
                             f"names ({hf_id})", f"the shipped facts of {facts.name} have {over}")
    if pp > facts.n_layers:
        raise ParameterError("pipeline_parallel_size", pp, f"at most the model's {facts.n_layers} decoder layers")
    if k_max % pp:
        raise ParameterError("max_num_seqs", k_max, f"a multiple of pipeline_parallel_size {pp} (each of the {pp} "
                             "micro-batches in flight holds an equal share)")
    moe = bool(facts.n_experts)
    if enable_expert_parallel and not moe:
        raise ParameterError("enable_expert_parallel", True, "a mixture-of-experts model (experts to spread over "
                             f"the GPUs)", f"{facts.name} is a dense model: leave expert parallel off")
    ep = tp * dp if enable_expert_parallel else 1
    # the user's folder itself (lss_iteration_model reads .gz tables through): an error names their file
    if tp > 1 and not any((folder / f"profile_tp{tp}_dense.csv{gz}").is_file() for gz in ("", ".gz")):
        raise DataError(f"{folder}: no profile_tp{tp}_dense.csv; tensor parallel size {tp} needs the profiles "
                        f"measured at that size (LLMServingSim measures TP{tp} on one GPU with the model split)")
    layout = [f"TP{tp}"] + ([f"PP{pp}"] if pp > 1 else []) + ([f"DP{dp}"] if dp > 1 else []) + (
        [f"EP{ep}"] if ep > 1 else [])
    link = None
    if tp > 1 or pp > 1 or ep > 1:
        link = _comm_for(folder, comm, link_bandwidth_gbps, link_latency_us, all_reduce_csv, " x ".join(layout))
    it = lss_iteration_model(folder, n_layers=facts.n_layers, tp=tp, facts=facts, comm=link,
                             data_parallel_size=dp if moe else 1, expert_parallel_size=ep,
                             pipeline_parallel_size=pp)
    if kv_capacity_tokens is not None:
        kv = integer("kv_capacity_tokens", kv_capacity_tokens, minimum=1, maximum=int(MAX_KV_TOKENS))
        kv_source = "given"
    else:
        mem = gpu_memory_gib if gpu_memory_gib is not None else _gpu_memory_from_folder(folder)
        if mem is None:
            raise ParameterError("gpu_memory_gib", None, "one GPU's memory in GiB (or kv_capacity_tokens); on the "
                                 "command line --gpu-memory-gib (or --kv-capacity)",
                                 f"{folder} has no peer_sim_config.json stating it" if not (
                                     folder / "peer_sim_config.json").is_file() else
                                 f"{folder}/peer_sim_config.json states no npu_mem.mem_size")
        mem = real("gpu_memory_gib", mem, positive=True)
        # a pipeline stage holds n_layers/pp layers: its weights and KV per token (an approximation: the
        # embedding and LM head are counted on every stage)
        stage_facts = replace(facts, n_layers=max(1, facts.n_layers // pp)) if pp > 1 else facts
        est = kv_capacity_estimate(stage_facts, gpu_memory_gib=mem, gpu_memory_utilization=gpu_memory_utilization,
                                   tensor_parallel_size=tp, expert_parallel_size=ep if ep > 1 else None,
                                   block_size=block, max_num_batched_tokens=b_max, max_num_seqs=k_max,
                                   kv_bytes_per_value=kv_bytes_per_value(kv_cache_dtype))
        kv = est.tokens
        kv_source = (f"vLLM's memory planner, an estimate: {kv:,} tokens per replica from {mem:g} GiB x "
                     f"{gpu_memory_utilization:g} ({'given' if gpu_memory_gib is not None else 'peer_sim_config.json'})"
                     + (", fp8 KV cache (1 byte per value)" if kv_cache_dtype == "fp8" else ""))
    return {"facts": facts, "moe": moe, "ep": ep, "layout": layout, "link": link, "model": it, "kv": kv,
            "kv_source": kv_source}


def predict_deployment(profile_dir, *, input_tokens, output_tokens, max_num_seqs: int = 256,
                       max_num_batched_tokens: int = 2048, tensor_parallel_size: int = 1,
                       pipeline_parallel_size: int = 1, data_parallel_size: int = 1,
                       enable_expert_parallel: bool = False,
                       kv_capacity_tokens: int | None = None, gpu_memory_gib: float | None = None,
                       gpu_memory_utilization: float = 0.9, block_size: int = 16, model: str | None = None,
                       comm=None, link_bandwidth_gbps: float | None = None, link_latency_us: float | None = None,
                       all_reduce_csv=None, method: str = "fluid", enable_prefix_caching: bool = False,
                       arrival_rate: float | None = None, overload: float = 1.5, n_requests: int | None = None,
                       replications: int = 5, seed: int = 2024, order: str = "random",
                       async_scheduling: bool = False, kv_cache_dtype: str = "auto"):
    """Predicted capacity of a vLLM deployment from an LLMServingSim-layout operator-profile folder.

    Parameters
    ----------
    profile_dir : path
        A folder with ``profile_meta.yaml`` and ``profile_tp{N}_{dense,attention,per_sequence}.csv``
        (and ``profile_tp{N}_moe.csv`` for a MoE model).
    input_tokens, output_tokens : int or array_like
        The workload's prompt and output lengths (one value each, or an empirical sample).
    max_num_seqs, max_num_batched_tokens, block_size, gpu_memory_utilization : vLLM's options
    tensor_parallel_size, pipeline_parallel_size, data_parallel_size, enable_expert_parallel :
        vLLM's parallel layout (see the module docstring).
    kv_capacity_tokens : int, optional
        The KV cache in tokens of one replica, when known (vLLM logs it); else estimated by vLLM's
        memory planner.
    gpu_memory_gib : float, optional
        One GPU's memory for the planner (default: the folder's ``peer_sim_config.json``).
    kv_cache_dtype : {"auto", "fp8"}
        vLLM's ``--kv-cache-dtype`` for the planner's estimate: the model's dtype, or one byte per cached value
        (the operator profiles' attention times are not changed).
    model : str or ModelFacts, optional
        A model of :func:`fluidq.models.list_models`, or its facts (default: found from ``profile_meta.yaml``).
    comm, link_bandwidth_gbps, link_latency_us, all_reduce_csv :
        The communication model (see the module docstring); needed when GPUs communicate.
    method : {"fluid", "simulate"}
        ``"fluid"`` (default, instant): the flow-balance formula of
        :func:`~fluidq.validate.predict.predict_capacity`.  ``"simulate"``: the saturated throughput of
        ``fluidq.simulate`` on the same engine (:func:`~fluidq.validate.predict.simulate_capacity`,
        seconds per replication), which counts recompute preemption, admission and, for lockstep MoE
        ranks, the slowest rank of every iteration (:class:`LockstepRanks`); with a 95 % interval.
    enable_prefix_caching : bool
        vLLM's ``--enable-prefix-caching`` (with ``method="simulate"``: a preempted request reuses its
        own cached blocks).
    arrival_rate, overload, n_requests, replications, seed :
        With ``method="simulate"``: Poisson arrivals at ``arrival_rate`` req/s for the whole deployment
        (a benchmark's ``--request-rate``; with ``n_requests=None`` the given lengths are its requests, each
        sent once), else at ``overload`` x the fluid capacity; requests per replication (drawn from the
        lengths; default 2000 without an ``arrival_rate``); seeded replications.
    order : {"random", "given"}
        With ``method="simulate"`` and a benchmark (``arrival_rate``, ``n_requests=None``): its requests in a
        seeded random order, or in the order given (a benchmark client sends its list in order: vLLM's
        ``vllm bench serve``, and LLMServingSim's bench runner, which sends dataset row ``N`` as request
        ``bench-N`` at the row's recorded arrival offset).

    async_scheduling : bool
        With ``method="simulate"``: vLLM's ``--async-scheduling`` (its default since 0.14): each batch scheduled
        while the previous one runs, a finished request holding its slot and KV through one more batch.

    Returns
    -------
    CapacityPrediction
        ``tokens_per_s``, ``requests_per_s`` (the whole deployment), the ``binding`` limit and its
        ``reason``; ``inputs`` say where the layer count, the KV capacity and the communication came from.
    """
    from .predict import predict_capacity, simulate_capacity

    folder = Path(profile_dir)
    if not folder.is_dir():
        raise ParameterError("profile_dir", str(profile_dir), "a folder of operator profiles (profile_meta.yaml, "
                             "profile_tp1_*.csv)")
    tp = integer("tensor_parallel_size", tensor_parallel_size, minimum=1, maximum=1024)
    pp = integer("pipeline_parallel_size", pipeline_parallel_size, minimum=1, maximum=1024)
    dp = integer("data_parallel_size", data_parallel_size, minimum=1, maximum=1024)
    if not isinstance(enable_expert_parallel, bool):
        raise ParameterError("enable_expert_parallel", enable_expert_parallel, "True or False")
    if not isinstance(enable_prefix_caching, bool):
        raise ParameterError("enable_prefix_caching", enable_prefix_caching, "True or False")
    if not isinstance(async_scheduling, bool):
        raise ParameterError("async_scheduling", async_scheduling, "True or False")
    if method not in ("fluid", "simulate"):
        raise ParameterError("method", method, '"fluid" (the flow-balance formula) or "simulate" (fluidq.simulate '
                             "saturated)")
    if kv_cache_dtype not in ("auto", "fp8"):
        raise ParameterError("kv_cache_dtype", kv_cache_dtype, '"auto" (the model\'s dtype) or "fp8"')
    k_max, b_max, block, p, o = _vllm_args(max_num_seqs, max_num_batched_tokens, block_size, input_tokens,
                                           output_tokens)
    parts = _deployment_parts(folder, tp=tp, pp=pp, dp=dp, enable_expert_parallel=enable_expert_parallel,
                              k_max=k_max, b_max=b_max, block=block, model=model, comm=comm,
                              link_bandwidth_gbps=link_bandwidth_gbps, link_latency_us=link_latency_us,
                              all_reduce_csv=all_reduce_csv, kv_capacity_tokens=kv_capacity_tokens,
                              gpu_memory_gib=gpu_memory_gib, gpu_memory_utilization=gpu_memory_utilization,
                              kv_cache_dtype=kv_cache_dtype)
    facts, moe, ep, layout, link, it, kv, kv_source = (parts[k] for k in ("facts", "moe", "ep", "layout", "link",
                                                                          "model", "kv", "kv_source"))
    if moe and dp > 1:
        # lockstep group: one engine of dp x N residents with dp ranks' budgets (module docstring), as the
        # simulation below and vLLM (each DP rank has its own max_num_seqs and max_num_batched_tokens)
        group = predict_capacity(_Lockstep(it, dp), p, o, b_max=dp * b_max, k_max=dp * k_max,
                                 kv_capacity_tokens=dp * kv, block_size=block)
        pred = replace(group, reason=group.reason.replace(
            f"b_max = {dp * b_max}", f"b_max = {dp * b_max} ({dp} ranks x {b_max})").replace(
            f"KV cache ({dp * kv} tokens)", f"KV cache ({dp * kv} tokens, {dp} ranks x {kv})"))
        how = f"DP{dp} MoE ranks in lockstep predicted as one group"
        if method == "simulate":
            # the ranks simulated together: decodes shared evenly, each chunk on the least loaded rank, the
            # slowest rank setting every iteration
            pred = simulate_capacity(LockstepRanks(it, dp), p, o, b_max=dp * b_max, k_max=dp * k_max,
                                     kv_capacity_tokens=dp * kv, block_size=block,
                                     prefix_caching=enable_prefix_caching, overload=overload,
                                     arrival_rate=arrival_rate, n_requests=n_requests, replications=replications,
                                     seed=seed, fluid=pred, order=order, async_scheduling=async_scheduling)
            how = f"DP{dp} MoE ranks simulated in lockstep, the slowest rank setting each iteration"
    else:
        one = predict_capacity(it, p, o, b_max=b_max, k_max=k_max // pp, kv_capacity_tokens=max(1, kv // pp),
                               block_size=block)
        n = pp * dp
        if method == "simulate":  # each of the n engines gets 1/n of the arrivals
            one = simulate_capacity(it, p, o, b_max=b_max, k_max=k_max // pp, kv_capacity_tokens=max(1, kv // pp),
                                    block_size=block, prefix_caching=enable_prefix_caching, overload=overload,
                                    arrival_rate=None if arrival_rate is None else arrival_rate / n,
                                    n_requests=n_requests, replications=replications, seed=seed, fluid=one,
                                    order=order, async_scheduling=async_scheduling)
        pred = replace(one, tokens_per_s=n * one.tokens_per_s, requests_per_s=n * one.requests_per_s,
                       residents=n * one.residents, limits={k: n * v for k, v in one.limits.items()},
                       ci=None if one.ci is None else (n * one.ci[0], n * one.ci[1]),
                       replications=tuple(n * x for x in one.replications))
        how = (f"{n} x one engine ({'PP' + str(pp) + ' virtual engines' if pp > 1 else ''}"
               f"{' x ' if pp > 1 and dp > 1 else ''}{'DP' + str(dp) + ' replicas' if dp > 1 else ''})"
               if n > 1 else "one engine")
    return replace(pred, inputs={**pred.inputs, "profile_dir": str(folder), "model": facts.name,
                                 "n_layers": facts.n_layers, "kv_capacity_tokens": kv, "kv_source": kv_source,
                                 "max_num_seqs": k_max, "max_num_batched_tokens": b_max, "block_size": block,
                                 "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                                 "data_parallel_size": dp, "expert_parallel_size": ep,
                                 "communication": link.describe() if link is not None else None,
                                 "method": method, "enable_prefix_caching": enable_prefix_caching,
                                 "kv_cache_dtype": kv_cache_dtype,
                                 "async_scheduling": async_scheduling,
                                 "layout": " x ".join(layout) + f": {how}"})


def deployment_engine(profile_dir, *, max_num_seqs: int = 256, max_num_batched_tokens: int = 2048,
                      tensor_parallel_size: int = 1, kv_capacity_tokens: int | None = None,
                      gpu_memory_gib: float | None = None, gpu_memory_utilization: float = 0.9, block_size: int = 16,
                      enable_prefix_caching: bool = False, model=None, comm=None,
                      link_bandwidth_gbps: float | None = None, link_latency_us: float | None = None,
                      all_reduce_csv=None):
    """``(engine, note)``: the :class:`~fluidq.Engine` of one vLLM engine predicted from an operator-profile
    folder, for ``fluidq check --profile-dir`` and ``fluidq simulate --profile-dir`` (issue 16 item 6).

    The same parts as :func:`predict_deployment` (the folder's iteration model as a batch-composition batch
    time, the model's facts from ``profile_meta.yaml`` or ``model``, the KV cache given or vLLM's memory
    planner's estimate, the communication of a tensor-parallel engine) on vLLM v1's engine rules
    (:func:`~fluidq.validate.replay.vllm_engine`: paged KV blocks, whole-prompt reservation, recompute
    preemption, the first token with the prefill).  One engine: pipeline and data parallel layouts are
    several engines, which :func:`predict_deployment` (``fluidq capacity --profile-dir``) predicts.
    ``note`` says where the layer count, the KV cache and the communication came from.
    """
    from .replay import vllm_engine

    folder = Path(profile_dir)
    if not folder.is_dir():
        raise ParameterError("profile_dir", str(profile_dir), "a folder of operator profiles (profile_meta.yaml, "
                             "profile_tp1_*.csv)")
    tp = integer("tensor_parallel_size", tensor_parallel_size, minimum=1, maximum=1024)
    if not isinstance(enable_prefix_caching, bool):
        raise ParameterError("enable_prefix_caching", enable_prefix_caching, "True or False")
    k_max = integer("max_num_seqs", max_num_seqs, minimum=1, maximum=MAX_BUDGET_TOKENS)
    b_max = integer("max_num_batched_tokens", max_num_batched_tokens, minimum=1, maximum=MAX_BUDGET_TOKENS)
    budget_holds_seqs("max_num_batched_tokens", b_max, k_max)  # vLLM's own refusal
    block = _block(block_size)
    parts = _deployment_parts(folder, tp=tp, pp=1, dp=1, enable_expert_parallel=False, k_max=k_max, b_max=b_max,
                              block=block, model=model, comm=comm, link_bandwidth_gbps=link_bandwidth_gbps,
                              link_latency_us=link_latency_us, all_reduce_csv=all_reduce_csv,
                              kv_capacity_tokens=kv_capacity_tokens, gpu_memory_gib=gpu_memory_gib,
                              gpu_memory_utilization=gpu_memory_utilization)
    facts, link = parts["facts"], parts["link"]
    eng = vllm_engine(parts["model"], b_max=b_max, k_max=k_max, kv_capacity_tokens=parts["kv"], block_size=block,
                      prefix_caching=enable_prefix_caching, name=f"vLLM {facts.name} TP{tp} from {folder.name}")
    note = (f"vLLM {facts.name} from the operator profiles in {folder} ({facts.n_layers} layers, from its model "
            f"facts; TP{tp}" + (f", communication {link.describe()}" if link is not None else "")
            + f"); KV cache {parts['kv']:,} tokens ({parts['kv_source']})")
    return eng, note
