"""Calibrate the roofline batch time on the shipped profiles, score it held out, and predict deployments.

:func:`calibration_targets` turns every built-in profile (``fluidq profiles``) into the batch times it
predicts on a fixed grid inside its measured range: prefill-like batches ``(b, kv=0)`` for ``b`` on a
geometric grid up to the fit's largest batch (at most 4096), and -- for profiles with an attention
term -- decode batches of ``n`` sequences of context ``c`` (``kv = n x c``) inside the fit's KV range.
Each target says what its profile measured (Vidur: linear operators, with or without attention, no LM
head, no scheduling overhead; LLMServingSim: every kernel, no overhead; Splitwise and the paper:
whole iterations), and the roofline is switched to the same scope.

* :func:`calibrate` fits the compute and memory efficiencies, the all-reduce sync cost per ring step (a
  volume at the link's bandwidth) and the attention efficiency of Splitwise's stack (the fixed overhead
  held at 0) by least squares on the log ratio, every profile weighted equally;
* :func:`leave_one_out` refits without each profile and scores it on its grid; :func:`raw_errors` on the
  measured rows themselves (where ``validation/data`` has them); :func:`run_capacity` predicts a shared
  vLLM run's capacity against its measured saturated throughput;
* :func:`predict_roofline_deployment` is the files-free answer of ``fluidq capacity --gpu``; its
  ``inputs["estimate"]`` quotes :data:`ERROR_NOTE`, the errors these functions measure
  (``python validation/tools/roofline_loo.py`` prints them; ``docs/reference/roofline.md`` has the table).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["Target", "calibration_targets", "calibrate", "leave_one_out", "raw_errors", "run_capacity",
           "predict_roofline_deployment", "ERROR_NOTE", "RUNS", "splitwise_phases", "SPLITWISE_WORKLOAD",
           "vidur_tensor_parallel", "allreduce_check"]

#: which GPU-table entry each profile's GPU is, and what the profile measured
_SCOPE = {
    "paper-codellama34b-a100": dict(gpu="A100-SXM4-80GB", attention=False, lm_head=True, overhead=True),
    "vidur-llama2-7b-a100": dict(gpu="A100-SXM4-80GB", attention=True, lm_head=False, overhead=False),
    "vidur-llama2-7b-h100": dict(gpu="H100-SXM5-80GB", attention=False, lm_head=False, overhead=False),
    "vidur-codellama34b-a100": dict(gpu="A100-SXM4-80GB", attention=False, lm_head=False, overhead=False),
    "vidur-llama2-7b-a40": dict(gpu="A40", attention=False, lm_head=False, overhead=False),
    # each GPU's share of a tensor-parallel layer, timed without its all-reduces
    "vidur-llama2-70b-h100-tp4": dict(gpu="H100-SXM5-80GB", attention=False, lm_head=False, overhead=False,
                                      all_reduce=False),
    "llmservingsim-llama3.1-8b-rtx4090": dict(gpu="RTX-4090", attention=True, lm_head=True, overhead=False),
    "llmservingsim-llama3.1-8b-rtxpro6000": dict(gpu="RTX-PRO-6000-Blackwell", attention=True, lm_head=True,
                                                 overhead=False),
    "splitwise-llama2-70b-a100-tp8": dict(gpu="A100-SXM4-80GB", attention=True, lm_head=True, overhead=True,
                                          stack="splitwise"),
    "splitwise-llama2-70b-h100-tp8": dict(gpu="H100-SXM5-80GB", attention=True, lm_head=True, overhead=True,
                                          stack="splitwise"),
}
#: the serving stacks the profiles were measured on whose kernels the roofline does not share: Splitwise's
#: (its decode time grows with the KV cache ~20 times faster than one read of it at the weights'
#: bandwidth, on both GPUs); every other profile is FlashAttention-style (vLLM, Vidur), the default
_STACKS = ("splitwise",)

_B_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
_CONTEXTS = (256, 1024, 2048)
_SEQS = (1, 4, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class Target:
    """One profile's batch times on the grid, and the roofline scope that matches it."""

    name: str
    model: object
    gpu: object
    tp: int
    scope: dict
    tokens: np.ndarray
    kv_tokens: np.ndarray
    seconds: np.ndarray
    stack: str = "vllm"

    def roofline(self, compute: float, memory: float, overhead_s: float, sync_step_mb: float,
                 splitwise_attention: float = 1.0):
        """The roofline in this profile's scope; ``splitwise_attention`` (a fraction of ``memory``) is the
        attention efficiency of a Splitwise-stack profile and is ignored for the others."""
        from ..batchtime.roofline import Roofline

        att = min(1.0, memory * splitwise_attention) if self.stack == "splitwise" else None
        return Roofline(model=self.model, gpu=self.gpu, tensor_parallel_size=self.tp, compute_efficiency=compute,
                        memory_efficiency=memory, overhead_s=overhead_s, sync_step_mb=sync_step_mb,
                        attention_efficiency=att, **self.scope)

    def predict(self, compute: float, memory: float, overhead_s: float, sync_step_mb: float,
                splitwise_attention: float = 1.0) -> np.ndarray:
        rf = self.roofline(compute, memory, overhead_s, sync_step_mb, splitwise_attention)
        return np.asarray(rf(self.tokens, self.kv_tokens), dtype=float)

    def mape(self, compute: float, memory: float, overhead_s: float, sync_step_mb: float,
             splitwise_attention: float = 1.0) -> float:
        p = self.predict(compute, memory, overhead_s, sync_step_mb, splitwise_attention)
        return float(np.mean(np.abs(p - self.seconds) / self.seconds))


def calibration_targets() -> list[Target]:
    """Every shipped profile as a :class:`Target` (see the module docstring)."""
    from ..batchtime import ContextAware
    from ..models import load_gpu, load_model
    from ..profiles import list_profiles

    out = []
    for p in list_profiles():
        if p.name not in _SCOPE:
            raise ParameterError("profile", p.name, "a profile with a roofline scope in fluidq.validate.roofline")
        scope = dict(_SCOPE[p.name])
        gpu = load_gpu(scope.pop("gpu"))
        stack = scope.pop("stack", "vllm")
        model = load_model(p.model)
        rng = p.fit.get("tokens_range", [1, p.b_max])
        top = min(rng[1], 4096, max(p.b_max, 2048))
        b = [x for x in _B_GRID if x <= top]
        kv = [0.0] * len(b)
        if isinstance(p.batch_time, ContextAware) and scope["attention"]:
            kv_top = p.fit.get("kv_tokens_range", [0, 0])[1]
            for n in _SEQS:
                for c in _CONTEXTS:
                    if n * c <= kv_top and n <= top:
                        b.append(n)
                        kv.append(float(n * c))
        b, kv = np.array(b, dtype=float), np.array(kv)
        secs = np.asarray(p.batch_time(b, kv) if isinstance(p.batch_time, ContextAware) else p.batch_time(b))
        out.append(Target(p.name, model, gpu, p.tp, scope, b, kv, secs, stack))
    return out


def calibrate(targets) -> dict:
    """``{"compute", "memory", "overhead_s", "sync_step_mb", "splitwise_attention"}`` minimising the mean over
    targets of each target's mean squared log ratio (predicted / profile); deterministic (a fixed start and
    a bounded solver).

    Four constants are fitted: the compute and memory efficiencies; the synchronisation cost of a ring
    all-reduce step, in megabytes at the link's bandwidth (``sync_step_mb``: the tensor-parallel profiles'
    fixed cost per all-reduce is ~200 us on DGX-A100 and ~140 us on DGX-H100, in the ratio of their NVLink
    bandwidths, 300 and 450 GB/s); and the attention efficiency of Splitwise's stack as a fraction of the
    memory efficiency (``splitwise_attention``, fitted only when a Splitwise profile is among the targets,
    else 1).  ``overhead_s`` is held at 0.  A fixed per-iteration overhead and the all-reduce latency are
    both constant per iteration on the tensor-parallel profiles (Splitwise, TP 8), and only a single-GPU
    whole-iteration profile (the paper's) tells them apart: fitted on all eight the overhead sits at its
    bound 0, and with the paper's profile held out the two are interchangeable, so a free overhead took
    Splitwise's fixed cost (15.7 ms) and put it on the single-GPU profile it predicts (held-out MAPE 31 %
    instead of 7 %).  The fixed cost of the TP profiles is charged to the all-reduces, the one part that
    exists only with ``tp > 1``."""
    from scipy.optimize import least_squares

    targets = list(targets)
    if not targets:
        raise ParameterError("targets", targets, "at least one calibration target")
    stack = any(t.stack == "splitwise" for t in targets)

    def eff(x):
        v = np.exp(x)
        return {"compute": float(v[0]), "memory": float(v[1]), "overhead_s": 0.0, "sync_step_mb": float(v[2]),
                "splitwise_attention": float(v[3]) if stack else 1.0}

    def resid(x):
        e = eff(x)
        return np.concatenate([np.log(t.predict(**e) / t.seconds) / np.sqrt(t.seconds.size) for t in targets])

    # efficiencies, the sync volume (MB) and Splitwise's attention fraction, in logs (positive)
    x0 = np.log([0.5, 0.7, 2.0, 0.1][:4 if stack else 3])
    lo = np.log([1e-3, 1e-3, 1e-4, 1e-4][:x0.size])
    hi = np.log([1.0, 1.0, 1e4, 10.0][:x0.size])
    r = least_squares(resid, x0, bounds=(lo, hi), method="trf", xtol=1e-12, ftol=1e-12, gtol=1e-12)
    return eff(r.x)


def leave_one_out(targets=None) -> list[dict]:
    """For each target: the efficiencies fitted on the others and the held-out MAPE on it; also the
    MAPE with the efficiencies fitted on all (the in-sample error), side by side."""
    targets = calibration_targets() if targets is None else list(targets)
    full = calibrate(targets)
    rows = []
    for i, t in enumerate(targets):
        eff = calibrate(targets[:i] + targets[i + 1:])
        rows.append({"profile": t.name, "gpu": t.gpu.name, "model": t.model.name, "tp": t.tp, "points": int(t.tokens.size),
                     "heldout_mape": t.mape(**eff), "insample_mape": t.mape(**full), "efficiency": eff})
    return rows


#: the shared serving runs, the GPU-table entry of their GPU, and the profile measured beside them
RUNS = {"RTX4090_Llama-3.1-8B": ("RTX-4090", "Llama-3.1-8B", "llmservingsim-llama3.1-8b-rtx4090"),
        "RTXPRO6000_Llama-3.1-8B": ("RTX-PRO-6000-Blackwell", "Llama-3.1-8B", "llmservingsim-llama3.1-8b-rtxpro6000")}


def run_capacity(run_dir, efficiency: dict, *, gpu: str, model: str) -> dict:
    """A serving run's capacity predicted by the roofline with ``efficiency`` (every part included), the
    KV cache from the run's ``vllm_meta.json`` (else vLLM's planner on the GPU's memory), against its
    measured saturated throughput (:func:`fluidq.validate.runs.saturated_throughput`)."""
    from ..batchtime.roofline import Roofline
    from ..models import kv_capacity_estimate, load_gpu, load_model
    from .predict import predict_capacity
    from .runs import read_run, saturated_throughput

    run = read_run(run_dir)
    g, m = load_gpu(gpu), load_model(model)
    rf = Roofline(model=m, gpu=g, tensor_parallel_size=run.tensor_parallel_size, compute_efficiency=efficiency["compute"],
                  memory_efficiency=efficiency["memory"], overhead_s=efficiency["overhead_s"],
                  sync_step_mb=efficiency["sync_step_mb"])
    kv = run.kv_capacity_tokens
    if kv is None:
        kv = kv_capacity_estimate(m, gpu_memory_gib=g.memory_gib, tensor_parallel_size=run.tensor_parallel_size,
                                  max_num_batched_tokens=run.max_num_batched_tokens,
                                  max_num_seqs=run.max_num_seqs).tokens
    pred = predict_capacity(rf, run.input_tokens, run.output_tokens, b_max=run.max_num_batched_tokens,
                            k_max=run.max_num_seqs, kv_capacity_tokens=kv)
    sat = saturated_throughput(run)
    return {"predicted_tokens_per_s": pred.tokens_per_s, "measured_tokens_per_s": sat["tokens_per_s"],
            "measured_ci": sat["tokens_per_s_ci"], "binding": pred.binding, "kv_capacity_tokens": kv,
            "error": pred.tokens_per_s / sat["tokens_per_s"] - 1.0}


#: what the answer carries: the calibration's measured errors (docs/reference/roofline.md)
ERROR_NOTE = ("a roofline estimate from model facts and the GPU table, no profile: leave-one-profile-out "
              "batch-time MAPE 6-23 % (median 8 %, 9 of 10 profiles within 15 %), the two shared vLLM runs' "
              "capacity -23 % (RTX 4090) and +6 % (RTX PRO 6000) "
              "(docs/reference/roofline.md)")


#: ``predict_roofline_deployment``'s default ``context_tokens``: the given lengths' mean context
_LENGTHS_MEAN = object()


def predict_roofline_deployment(model, gpu, *, input_tokens, output_tokens, tensor_parallel_size: int = 1,
                                max_num_seqs: int = 256, max_num_batched_tokens: int = 2048,
                                gpu_memory_utilization: float = 0.9, gpu_memory_gib: float | None = None,
                                kv_capacity_tokens: int | None = None, block_size: int = 16,
                                kv_bytes_per_value: int | None = None, context_tokens=_LENGTHS_MEAN):
    """vLLM's capacity for ``model`` (a name, a ``config.json`` path or a ModelFacts) on
    ``tensor_parallel_size`` GPUs ``gpu`` (a name or a GPU), without any profile: the calibrated
    :class:`~fluidq.batchtime.roofline.Roofline`, the KV cache from vLLM's memory planner
    (:func:`~fluidq.models.kv_capacity_estimate`, on the table's memory unless ``gpu_memory_gib``) or
    given, and the decode-first chunked-prefill capacity of :func:`~fluidq.validate.predict.predict_capacity`.
    ``kv_bytes_per_value`` (1: vLLM's ``--kv-cache-dtype fp8``) is the planner's bytes per cached value (default:
    the model's dtype); the batch time's KV reads keep the model's dtype.
    ``context_tokens`` is the mean context at which a sliding-window model's planned cache is taken
    (:meth:`~fluidq.models.KVCapacityEstimate.tokens_at_context`): by default the given lengths' mean
    ``mean(input) + mean(output) / 2``; ``None`` the tokens vLLM logs (a lower bound; what ``fluidq capacity``,
    ``check`` and ``simulate`` take with a ``--trace``); a number, that context (``fluidq capacity --geometric``
    passes the laws' means, as ``check`` and ``simulate`` size their engine: before h-consist it took the mean of
    its 4,096 draws, and the two faces sized the cache apart -- Gemma-3-27B on 2 x RTX 6000 Ada at geometric
    539 + 1,949 tokens, 43,664 against 44,336 tokens, a load basis 1.3 % apart).  Without windowed layers it
    changes nothing.
    The result's ``inputs`` say where each number came from, and ``estimate`` the error it carries."""
    from dataclasses import replace

    from ..batchtime.roofline import roofline
    from ..models import kv_capacity_estimate
    from ..models.memory import sliding_note
    from .deployment import _vllm_args
    from .predict import predict_capacity
    from .._validate import MAX_KV_TOKENS, integer

    rf = roofline(model, gpu, tensor_parallel_size)
    k_max, b_max, block, p, o = _vllm_args(max_num_seqs, max_num_batched_tokens, block_size, input_tokens,
                                           output_tokens)
    if kv_capacity_tokens is not None:
        kv = integer("kv_capacity_tokens", kv_capacity_tokens, minimum=1, maximum=int(MAX_KV_TOKENS))
        kv_source = "given"
    else:
        mem = rf.gpu.memory_gib if gpu_memory_gib is None else gpu_memory_gib
        est = kv_capacity_estimate(rf.model, gpu_memory_gib=mem, gpu_memory_utilization=gpu_memory_utilization,
                                   tensor_parallel_size=rf.tensor_parallel_size, block_size=block,
                                   max_num_batched_tokens=b_max, max_num_seqs=k_max,
                                   kv_bytes_per_value=kv_bytes_per_value)
        if context_tokens is _LENGTHS_MEAN:
            context_tokens = float(np.mean(p) + np.mean(o) / 2)
        # est.tokens unless windowed layers (and with context_tokens None: the tokens vLLM logs)
        kv = est.tokens if context_tokens is None else est.tokens_at_context(context_tokens)
        kv_source = (f"vLLM's memory planner, an estimate: {mem:g} GiB "
                     f"({'given' if gpu_memory_gib is not None else 'the GPU table'}) x {gpu_memory_utilization:g}"
                     + (f", {kv_bytes_per_value} byte{'s' if kv_bytes_per_value > 1 else ''} per cached value"
                        if kv_bytes_per_value is not None else "")
                     + (sliding_note(est, kv) if kv != est.tokens else ""))
    pred = predict_capacity(rf, p, o, b_max=b_max, k_max=k_max, kv_capacity_tokens=kv, block_size=block)
    return replace(pred, inputs={**pred.inputs, "model": rf.model.name, "gpu": rf.gpu.name,
                                 "tensor_parallel_size": rf.tensor_parallel_size, "kv_capacity_tokens": kv,
                                 "kv_source": kv_source, "max_num_seqs": k_max, "max_num_batched_tokens": b_max,
                                 "block_size": block, "batch_time": rf.to_dict(), "estimate": ERROR_NOTE})


def raw_errors(data_dir, targets=None) -> list[dict]:
    """Held-out MAPE against the **measured rows** (not the profiles' fits) of every profile whose data
    ``data_dir`` holds (``validation/data``: Vidur Llama-2-7B on A100 and A40, Llama-2-70B on H100 at TP 4,
    LLMServingSim, Splitwise), by phase:
    the same rows ``fluidq.profiles.build`` fitted (the same loaders, phases and KV filter); efficiencies
    fitted without that profile."""
    from pathlib import Path

    from ..profiles.build import _LOADERS, SPECS
    from .cases import _plain_path

    root = Path(data_dir)
    targets = calibration_targets() if targets is None else list(targets)
    by_name = {t.name: t for t in targets}

    def local(rel):
        p = root / rel.removeprefix("measured/")
        gz = p.with_name(p.name + ".gz")
        return gz if not p.exists() and gz.exists() else p

    out = []
    for spec in SPECS:
        p = local(spec["path"])
        kw = dict(spec["kw"])
        if "attention_path" in kw:
            kw["attention_path"] = local(kw["attention_path"])
        if not p.exists() or not Path(kw.get("attention_path", p)).exists() or spec["name"] not in by_name:
            continue
        m = _LOADERS[spec["loader"]](_plain_path(p) if p.is_dir() else p, **kw)
        rows = m.where(spec["phases"])
        keep = np.ones(rows.tokens.shape, dtype=bool)
        if spec.get("kv_within_capacity") and m.meta.kv_capacity_tokens:  # as the profile's fit did
            keep = rows.kv_tokens + rows.tokens <= m.meta.kv_capacity_tokens
        t = by_name[spec["name"]]
        eff = calibrate([x for x in targets if x.name != t.name])
        kv = np.zeros_like(rows.tokens) if rows.kv_tokens is None else rows.kv_tokens  # linear operators: none
        pred = np.asarray(t.roofline(**eff)(rows.tokens[keep], kv[keep]))
        err = np.abs(pred / rows.seconds[keep] - 1.0)
        phase = np.asarray(rows.phase)[keep]
        phases = {str(ph): float(err[phase == ph].mean()) for ph in sorted(set(phase))}
        out.append({"profile": t.name, "rows": int(err.size), "heldout_mape": float(err.mean()), "by_phase": phases})
    return out


#: the workload Splitwise measured its decode batches with (perf_model.csv: prompts of 512 tokens,
#: 128 tokens generated, batches of 1-64): the tandem figures of :func:`splitwise_phases` use it
SPLITWISE_WORKLOAD = (512, 128, 64)


def splitwise_phases(data_dir, targets=None) -> list[dict]:
    """The roofline against Splitwise's published per-phase figures (``perf_model.csv`` in ``data_dir``:
    ``splitwise/perf_model.csv``), per hardware, in the terms of the disaggregated tandem's stages, with
    efficiencies fitted **without** that hardware's Splitwise profile:

    * ``prefill``: a prompt iteration's tokens per second (``prompt_size x batch / prompt_time``) against
      the roofline's ``b / t(b, 0)``, every measured prompt row;
    * ``decode``: a token iteration's tokens per second (``batch / token_time``) against
      ``n / t(n, n (p + o/2))``, every measured token row;
    * ``tandem``: for Splitwise's own decode workload (:data:`SPLITWISE_WORKLOAD`: prompts of 512, outputs
      of 128, at most 64 sequences per decode batch), one engine's prefill rate (prompts/s, the best
      measured prompt iteration of at most 2048 tokens: that engine's ``sup b/t(b)``) and decode rate
      (requests/s, the best measured token batch: ``max_n n / (127 t(n))``), from the rows and from the
      roofline (:func:`~fluidq.capacity.disaggregated.prefill_rate` and
      :func:`~fluidq.capacity.disaggregated.decode_rate` on roofline engines), and the prefill share of a
      balanced pool ``n_p / (n_p + n_d) = d / (p + d)`` each gives."""
    from pathlib import Path

    from ..batchtime.loaders import load_splitwise
    from ..capacity.disaggregated import decode_rate, prefill_rate
    from ..engine import Engine
    from ..workload import Poisson, Workload

    path = Path(data_dir) / "splitwise" / "perf_model.csv"
    if not path.exists():
        path = path.with_name(path.name + ".gz")
    targets = calibration_targets() if targets is None else list(targets)
    p_len, o_len, k_max = SPLITWISE_WORKLOAD
    wl = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p_len, output_tokens=o_len)
    out = []
    for t in targets:
        if not t.name.startswith("splitwise-"):
            continue
        hw = "a100-80gb" if "a100" in t.name else "h100-80gb"
        m = load_splitwise(path, model="llama2-70b", hardware=hw, tp=t.tp)
        eff = calibrate([x for x in targets if x.name != t.name])
        rf = t.roofline(**eff)
        row = {"profile": t.name, "gpu": t.gpu.name, "efficiency": eff}
        for phase in ("prefill", "decode"):
            r = m.where((phase,))
            meas = r.tokens / r.seconds
            pred = r.tokens / np.asarray(rf(r.tokens, r.kv_tokens), dtype=float)
            ratio = pred / meas
            row[phase] = {"rows": int(r.tokens.size), "mape": float(np.mean(np.abs(ratio - 1))),
                          "median_ratio": float(np.median(ratio))}
        pre = m.where(("prefill",))
        ok = pre.tokens <= 2048
        p_meas = float(np.max(pre.tokens[ok] / pre.seconds[ok])) / p_len
        dec = m.where(("decode",))
        sel = np.isclose(dec.kv_tokens / dec.tokens, p_len + o_len / 2) & (dec.tokens <= k_max)
        d_meas = float(np.max(dec.tokens[sel] / dec.seconds[sel])) / (o_len - 1)
        p_rf = prefill_rate(Engine(batch_time=rf, b_max=2048), wl)
        d_rf, _, _ = decode_rate(Engine(batch_time=rf, b_max=2048, k_max=k_max), wl)
        row["tandem"] = {"prefill_requests_per_s": {"measured": p_meas, "roofline": p_rf},
                         "decode_requests_per_s": {"measured": d_meas, "roofline": d_rf},
                         "prefill_share": {"measured": d_meas / (p_meas + d_meas), "roofline": d_rf / (p_rf + d_rf)}}
        out.append(row)
    return out


def vidur_tensor_parallel(data_dir, targets=None, *, gpu: str = "a100") -> list[dict]:
    """The tensor-parallel split of the linear operators, checked on Vidur's Llama-2-70B operator profile
    of ``gpu`` (``"a100"``: ``vidur/a100/meta-llama/Llama-2-70b-hf/mlp.csv`` in ``data_dir``, not a
    calibration profile; ``"h100"``: the H100 one, whose TP-4 rows are the calibration profile
    ``vidur-llama2-70b-h100-tp4``, the other sizes are not): for each tensor-parallel size it measured,
    the MAPE of the roofline's linear and element-wise parts (Vidur's scope: no attention, LM head,
    all-reduce or overhead) against its rows, with the efficiencies fitted on every shipped profile.  What
    it checks is the per-GPU split of the weights and the work; the all-reduces Vidur did not time are
    not in it."""
    from pathlib import Path

    from ..batchtime.loaders import load_vidur
    from ..batchtime.roofline import Roofline
    from ..models import load_gpu, load_model

    tables = {"a100": "A100-SXM4-80GB", "h100": "H100-SXM5-80GB"}
    if gpu not in tables:
        raise ParameterError("gpu", gpu, "the GPU of a shipped Vidur Llama-2-70B profile: " + ", ".join(tables))
    p = Path(data_dir) / "vidur" / gpu / "meta-llama" / "Llama-2-70b-hf" / "mlp.csv"
    if not p.exists():
        p = p.with_name(p.name + ".gz")
    eff = calibrate(calibration_targets() if targets is None else list(targets))
    model, g = load_model("Llama-2-70B"), load_gpu(tables[gpu])
    out = []
    for tp in (1, 2, 4, 8):
        m = load_vidur(p, tp=tp)
        rf = Roofline(model=model, gpu=g, tensor_parallel_size=tp, compute_efficiency=eff["compute"],
                      memory_efficiency=eff["memory"], overhead_s=0.0, sync_step_mb=eff["sync_step_mb"], attention=False,
                      lm_head=False, overhead=False, all_reduce=False)
        pred = np.asarray(rf(m.tokens, np.zeros_like(m.tokens)), dtype=float)
        ratio = pred / m.seconds
        out.append({"tensor_parallel_size": tp, "rows": int(m.tokens.size), "mape": float(np.mean(np.abs(ratio - 1))),
                    "median_ratio": float(np.median(ratio))})
    return out


def allreduce_check(data_dir, targets=None, *, max_bytes: float = 32 * 2**20) -> dict:
    """The roofline's all-reduce against Vidur's measured A100 NVLink all-reduces
    (``vidur/a100/network/all_reduce_pairwise_nvlink.csv`` in ``data_dir``: two workers, messages up to
    ``max_bytes``, the ``b x hidden`` activations of a batch of up to 2048 tokens of an 8192-wide model):
    the ring over the A100's NVLink plus ``2 (w - 1) sync_step_us`` (the calibrated per-step cost on that link,
    ``1000 sync_step_mb / 300 GB/s``), and,
    for comparison, the same calibrated latency charged per all-reduce whatever ``w`` (what a per-all-reduce
    constant fitted on the TP-8 profiles gives at two workers).  Returns the median ratio (model / measured)
    and the MAPE of each."""
    from pathlib import Path

    from ..batchtime.comm import MeasuredAllReduce
    from ..models import load_gpu

    p = Path(data_dir) / "vidur" / "a100" / "network" / "all_reduce_pairwise_nvlink.csv"
    if not p.exists():
        p = p.with_name(p.name + ".gz")
    table = MeasuredAllReduce.from_vidur_csv(p)
    eff = calibrate(calibration_targets() if targets is None else list(targets))
    g = load_gpu("A100-SXM4-80GB")
    step_us = 1e3 * eff["sync_step_mb"] / g.link_bandwidth_gbps
    out = {"sync_step_us": step_us, "workers": {}}
    from ..batchtime.comm import Link

    link = Link(bandwidth_gbps=g.link_bandwidth_gbps, latency_us=g.link_latency_us)
    for w, (n, us) in sorted(table.tables.items()):
        keep = (n > 0) & (n <= max_bytes)
        ring = np.asarray(link.allreduce_us(n[keep], w))
        per_step = ring + 2 * (w - 1) * step_us
        per_call = ring + 2 * (8 - 1) * step_us  # the TP-8 constant charged to every all-reduce
        rows = {}
        for name, pred in (("per_step", per_step), ("per_all_reduce", per_call)):
            r = pred / us[keep]
            rows[name] = {"median_ratio": float(np.median(r)), "mape": float(np.mean(np.abs(r - 1)))}
        out["workers"][int(w)] = {"rows": int(keep.sum()), **rows}
    return out
