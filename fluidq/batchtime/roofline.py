"""Roofline batch time ``t(b, kv)`` from a model's shapes and a GPU's datasheet: no profile needed.

Each operator of an iteration takes ``max(FLOPs / (eta_c x peak FLOP/s), bytes / (eta_m x peak
bandwidth))`` on one GPU of a tensor-parallel group of ``tp``; the iteration is the sum of:

* the linear operators of every layer (QKV, output, MLP up/gate and down; MoE: the routed experts
  the batch touches -- ``E (1 - (1 - k/E)^b)`` of them in expectation under uniform routing -- each
  read once, the top-k per token computed, shared experts and the router).  The weights are read
  once per iteration, the activations in and out once per token;
* decode attention: ``kv`` cached tokens read (KV bytes per token per GPU, from the model facts) and
  ``4 x heads x head_dim`` FLOPs per cached token per layer; a prefill chunk's causal attention
  (:meth:`Roofline.time_shape` only: ``t(b, kv)`` does not know the chunks);
* element-wise work (norms, rotary, residuals, activation): bytes only;
* the LM head for the sequences that emit a token (in ``t(b, kv)``: every token when ``kv > 0``,
  taken as a decode batch; one sequence when ``kv = 0``, taken as one prefill);
* two all-reduces of ``b x hidden`` values per layer when ``tp > 1``
  (:class:`~fluidq.batchtime.comm.Link` from the GPU's link bandwidth and latency, plus a synchronisation
  cost per step of the ring, ``2 (tp - 1)`` steps per all-reduce: ``sync_step_mb`` megabytes at the link's
  bandwidth, ``sync_step_us = 1000 sync_step_mb / link GB/s``, so a faster link synchronises faster);
* a fixed per-iteration overhead ``overhead_s`` (scheduling, launches, sampling).

``eta_c``, ``eta_m``, ``overhead_s`` and ``sync_step_mb`` are not guessed:
:func:`fluidq.validate.roofline.calibrate` fits them on the shipped measured profiles, and
:data:`CALIBRATED` holds the result (recomputed by the tests).  The leave-one-profile-out errors are in
``docs/reference/roofline.md``.  :meth:`Roofline.context_aware` gives the same model as a
:class:`~fluidq.batchtime.ContextAware` (what the simulator reads a KV dependence from).

References
----------
Williams, Waterman, Patterson, "Roofline: an insightful visual performance model for multicore
architectures" (CACM 2009); Shoeybi et al., "Megatron-LM", arXiv:1909.08053 (the tensor-parallel
split and its two all-reduces per layer); Yuan et al., "LLM Inference Unveiled: Survey and Roofline
Model Insights", arXiv:2402.16363.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .._validate import MAX_BATCH_SECONDS, SECONDS_WHY, integer, real
from ..errors import ParameterError
from .comm import Link
from .models import BatchTime, _out, _Shifted, _tokens

__all__ = ["Roofline", "CALIBRATED", "roofline"]

#: Efficiencies fitted by :func:`fluidq.validate.roofline.calibrate` on every shipped profile
#: (``compute``: fraction of peak dense FLOP/s; ``memory``: fraction of peak HBM bandwidth;
#: ``overhead_s``: fixed seconds per iteration, held at 0 by the calibration; ``sync_step_mb``: the
#: synchronisation cost of one step of a ring all-reduce besides the link's latency, in megabytes at the
#: link's bandwidth, ``2 (tp - 1)`` steps; ``splitwise_attention``: the attention efficiency of Splitwise's
#: serving stack as a fraction of ``memory`` -- a fact about that stack, used only where a profile of it
#: is scored, never by a :class:`Roofline`'s defaults).  Recomputed in ``tests/batchtime/test_roofline.py``.
CALIBRATED = {"compute": 0.6290, "memory": 0.6865, "overhead_s": 0.0, "sync_step_mb": 3.405,
              "splitwise_attention": 0.04946}


def _fraction(name, v):
    x = real(name, v, positive=True)
    if x > 1:
        raise ParameterError(name, v, "a fraction of the GPU's peak in (0, 1]",
                             "an efficiency above 1 would beat the datasheet")
    return x


@dataclass(frozen=True, kw_only=True)
class Roofline(BatchTime):
    """``t(b, kv)`` of ``model`` on ``tensor_parallel_size`` GPUs ``gpu`` (see the module docstring).

    Parameters
    ----------
    model : ModelFacts
        The model's shapes (:func:`fluidq.models.load_model`, :meth:`ModelFacts.from_config`).
    gpu : GPU
        A GPU of the shipped table (:func:`fluidq.models.load_gpu`).
    tensor_parallel_size : int
        GPUs per model copy (must split the heads, as in vLLM).
    compute_efficiency, memory_efficiency : float
        Fractions in (0, 1] of the GPU's peak FLOP/s and memory bandwidth (default: :data:`CALIBRATED`).
    overhead_s : float
        Fixed seconds per iteration (default: :data:`CALIBRATED`).
    sync_step_mb : float
        Synchronisation cost of each step of a tensor-parallel ring all-reduce besides the link's latency,
        in megabytes moved at the GPU's link bandwidth (default: :data:`CALIBRATED`); gives ``sync_step_us``.
    sync_step_us : float, optional
        Microseconds each step of a tensor-parallel ring all-reduce costs besides the link's latency, so
        ``2 (tp - 1) sync_step_us`` per all-reduce (overrides ``sync_step_mb``; default
        ``1000 sync_step_mb / link_bandwidth_gbps``, which the attribute then holds).
    sync_us : float, optional
        Microseconds each all-reduce costs besides its ring time, whatever ``tp`` (overrides
        ``sync_step_us``; default ``2 (tp - 1) sync_step_us``, which the attribute then holds).
    attention_efficiency : float, optional
        Fraction in (0, 1] of the peak memory bandwidth attention's KV reads reach (default: the
        ``memory_efficiency``; a serving stack whose attention is slower than its weight reads, such as
        Splitwise's, sets it lower).
    attention, lm_head, overhead, all_reduce : bool
        Which parts the time includes (all by default; the calibration switches off what a profile did
        not measure, e.g. Vidur's linear-operator tables, which time each GPU's share of a
        tensor-parallel layer without its all-reduces).
    """

    kind: ClassVar[str] = "roofline"
    model: object
    gpu: object
    tensor_parallel_size: int = 1
    compute_efficiency: float | None = None
    memory_efficiency: float | None = None
    overhead_s: float | None = None
    sync_us: float | None = None
    sync_step_us: float | None = None
    sync_step_mb: float | None = None
    attention_efficiency: float | None = None
    attention: bool = True
    lm_head: bool = True
    overhead: bool = True
    all_reduce: bool = True
    _k: dict = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        from ..models import GPU, ModelFacts

        if not isinstance(self.model, ModelFacts):
            raise ParameterError("model", self.model, "a ModelFacts (fluidq.models.load_model or from_config)")
        if not isinstance(self.gpu, GPU):
            raise ParameterError("gpu", self.gpu, "a GPU of the shipped table (fluidq.models.load_gpu)")
        tp = integer("tensor_parallel_size", self.tensor_parallel_size, minimum=1, maximum=2**16)
        self.model.kv_heads_per_gpu(tp)  # refuses a tp that does not split the heads, naming it
        for f in ("attention", "lm_head", "overhead", "all_reduce"):
            if not isinstance(getattr(self, f), bool):
                raise ParameterError(f, getattr(self, f), "True or False")
        c = CALIBRATED
        ce = c["compute"] if self.compute_efficiency is None else self.compute_efficiency
        me = c["memory"] if self.memory_efficiency is None else self.memory_efficiency
        oh = c["overhead_s"] if self.overhead_s is None else self.overhead_s
        object.__setattr__(self, "compute_efficiency", _fraction("compute_efficiency", ce))
        object.__setattr__(self, "memory_efficiency", _fraction("memory_efficiency", me))
        object.__setattr__(self, "overhead_s", real("overhead_s", oh, nonnegative=True, maximum=MAX_BATCH_SECONDS,
                                                    why=SECONDS_WHY))
        mb = c["sync_step_mb"] if self.sync_step_mb is None else self.sync_step_mb
        object.__setattr__(self, "sync_step_mb", real("sync_step_mb", mb, nonnegative=True, maximum=1e6,
                                                      why="megabytes moved per ring step"))
        st = 1e3 * self.sync_step_mb / self.gpu.link_bandwidth_gbps if self.sync_step_us is None else self.sync_step_us
        object.__setattr__(self, "sync_step_us", real("sync_step_us", st, nonnegative=True,
                                                      maximum=MAX_BATCH_SECONDS * 1e6, why=SECONDS_WHY))
        ae = self.memory_efficiency if self.attention_efficiency is None else self.attention_efficiency
        object.__setattr__(self, "attention_efficiency", _fraction("attention_efficiency", ae))
        sy = 2 * (tp - 1) * self.sync_step_us if self.sync_us is None else self.sync_us
        object.__setattr__(self, "sync_us", real("sync_us", sy, nonnegative=True, maximum=MAX_BATCH_SECONDS * 1e6,
                                                 why=SECONDS_WHY))
        object.__setattr__(self, "tensor_parallel_size", tp)
        object.__setattr__(self, "_k", self._constants())

    # ------------------------------------------------------------------------------------------------
    def _constants(self) -> dict:
        m, g, tp = self.model, self.gpu, self.tensor_parallel_size
        bpv = m.bytes_per_value
        wb = m.matrix_bytes_per_param  # a quantized checkpoint's matrices are read in their own format
        h, d = m.hidden_size, m.head_dim
        nh = m.n_heads // tp
        kvh = m.kv_heads_per_gpu(tp)
        mats = []  # (layers, in, out) per GPU: each one matrix product over the batch
        if m.is_mla:
            att = sum(m._attention_matrices().values())
            mats.append((m.n_layers, h, max(1, att // tp // h)))
        else:
            mats += [(m.n_layers, h, (nh + 2 * kvh) * d), (m.n_layers, nh * d, h)]
        # the attention projections' bytes per weight: a checkpoint may quantize the MLPs only (GPT-OSS's MXFP4)
        mats = [(*x, m.attention_bytes_per_param) for x in mats]
        dense_layers = m.n_layers if not m.is_moe else m.n_dense_layers
        up = m.mlp_matrices - 1  # gate and up (SwiGLU/GeGLU), or up alone
        if dense_layers:
            f = -(-m.intermediate_size // tp)
            mats += [(dense_layers, h, up * f), (dense_layers, f, h)]
        moe = None
        if m.is_moe:
            mi = -(-m.moe_intermediate_size // tp)
            if m.n_shared_experts:
                s = m.n_shared_experts * mi
                mats += [(m.n_moe_layers, h, up * s), (m.n_moe_layers, s, h)]
            mats.append((m.n_moe_layers, h, m.n_experts))  # the router
            moe = dict(layers=m.n_moe_layers, experts=m.n_experts, k=m.experts_per_token,
                       params=m.mlp_matrices * h * mi, act=2 * h + m.mlp_matrices * mi)
        ffn_elem = (m.intermediate_size if not m.is_moe else m.experts_per_token * m.moe_intermediate_size) // tp
        kv_layer = m.kv_bytes_per_token_per_gpu(tp) / m.n_layers
        link = Link(bandwidth_gbps=g.link_bandwidth_gbps, latency_us=g.link_latency_us, name=g.interconnect,
                    source=g.name)
        return dict(F=g.peak_flops(m.dtype, m.quantization) * self.compute_efficiency,
                    Fa=g.peak_flops(m.dtype) * self.compute_efficiency,
                    B=g.memory_bandwidth * self.memory_efficiency,
                    Ba=g.memory_bandwidth * self.attention_efficiency, bpv=bpv, wb=wb, h=h, d=d, nh=nh, L=m.n_layers,
                    mats=mats, moe=moe, elem=(6 * h + 2 * ffn_elem) * bpv, kv_layer=kv_layer,
                    vocab=-(-m.vocab_size // tp), link=link, tp=tp)

    def _roof(self, flops, nbytes, F=None, B=None):
        k = self._k
        return np.maximum(flops / (k["F"] if F is None else F), nbytes / (k["B"] if B is None else B))

    def _parts(self, b, kv, n_emit, prefill=None):
        """Seconds by part (a dict of arrays broadcast over ``b``, ``kv``)."""
        k = self._k
        b = np.asarray(b, dtype=float)
        bpv, wb = k["bpv"], k["wb"]
        lin = np.zeros(np.broadcast(b, kv).shape)
        for layers, i, o, *w in k["mats"]:
            lin = lin + layers * self._roof(2.0 * b * i * o, i * o * (w[0] if w else wb) + b * (i + o) * bpv)
        moe = k["moe"]
        if moe is not None:
            E, top = moe["experts"], moe["k"]
            touched = E * (1.0 - (1.0 - top / E) ** b)
            lin = lin + moe["layers"] * self._roof(2.0 * b * top * moe["params"],
                                                   touched * moe["params"] * wb + b * top * moe["act"] * bpv)
        parts = {"linear": lin, "elementwise": k["L"] * b * k["elem"] / k["B"]}
        if self.attention:
            kv = np.asarray(kv, dtype=float)
            att = k["L"] * self._roof(4.0 * kv * k["nh"] * k["d"], kv * k["kv_layer"], k["Fa"], k["Ba"])
            if prefill is not None:  # (chunk tokens C, prior context P): causal work C (P + C/2)
                C, P = prefill
                work = C * (P + C / 2.0)
                att = att + k["L"] * self._roof(4.0 * work * k["nh"] * k["d"], (C + P) * k["kv_layer"], k["Fa"],
                                                k["Ba"])
            parts["attention"] = att
        if self.lm_head:
            n = np.asarray(n_emit, dtype=float)
            V, h = k["vocab"], k["h"]
            parts["lm_head"] = self._roof(2.0 * n * h * V, h * V * bpv + n * (h * bpv + V * 4))
        if k["tp"] > 1 and self.all_reduce:
            msg = b * k["h"] * bpv
            us = np.asarray(k["link"].allreduce_us(msg, k["tp"])) + self.sync_us
            parts["all_reduce"] = 2 * k["L"] * us * 1e-6
        if self.overhead:
            parts["overhead"] = np.full(lin.shape, self.overhead_s)
        return parts

    def breakdown(self, tokens, kv_tokens=0.0) -> dict:
        """Seconds by part (``linear``, ``elementwise``, ``attention``, ``lm_head``, ``all_reduce``,
        ``overhead``) for a batch of ``tokens`` reading ``kv_tokens`` cached tokens."""
        b = _tokens(tokens)
        kv = _tokens(kv_tokens)
        return {name: _out(v, tokens) for name, v in self._parts(b, kv, self._emit(b, kv)).items()}

    @staticmethod
    def _emit(b, kv):
        return np.where(np.asarray(kv) > 0, b, np.minimum(b, 1.0))

    def _time(self, b, kv, n_emit, prefill=None):
        t = sum(self._parts(b, kv, n_emit, prefill).values())
        return np.where(np.asarray(b) > 0, t, 0.0)

    def __call__(self, tokens, kv_tokens=None):
        b = _tokens(tokens)
        if kv_tokens is None:
            return _out(self._eval(b), tokens)
        kv = np.asarray(kv_tokens, dtype=float)
        if kv.size and (not np.all(np.isfinite(kv)) or np.any(kv < 0)):
            raise ParameterError("kv_tokens", kv_tokens, "finite token counts >= 0")
        return _out(self._time(b, kv, self._emit(b, kv)), tokens if np.ndim(tokens) else kv_tokens)

    def _eval(self, b):
        return self._time(b, np.zeros_like(np.asarray(b, dtype=float)), np.minimum(b, 1.0))

    # the IterationModel interface (fluidq.validate.predict.predict_capacity takes it)
    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        """Seconds for one prefill chunk (``prefill_tokens`` with ``kv_prefill`` prior context) and
        ``n_decode`` decodes of mean context ``kv_decode``; ``n_emit`` sequences get the LM head."""
        pc = np.asarray(prefill_tokens, dtype=float)
        nd = np.asarray(n_decode, dtype=float)
        if n_emit is None:
            n_emit = nd + (pc > 0)
        b = pc + nd
        return self._time(b, nd * np.asarray(kv_decode, dtype=float), np.maximum(n_emit, 1.0),
                          prefill=(pc, np.asarray(kv_prefill, dtype=float)))

    def decode_only(self, n, kv):
        return self.time_shape(0.0, 0.0, n, kv)

    def prefill_only(self, tokens):
        return self.time_shape(tokens, 0.0, 0.0, 0.0)

    def attention_s(self, kv_tokens) -> float:
        """Seconds decode attention takes to read ``kv_tokens`` cached tokens (0 without attention)."""
        kv = real("kv_tokens", kv_tokens, nonnegative=True)
        if not self.attention:
            return 0.0
        k = self._k
        return float(k["L"] * self._roof(4.0 * kv * k["nh"] * k["d"], kv * k["kv_layer"], k["Fa"], k["Ba"]))

    def at_context(self, kv_tokens: float) -> BatchTime:
        """The batch time in ``b`` alone with ``kv_tokens`` read per batch (as
        :meth:`ContextAware.at_context <fluidq.batchtime.ContextAware.at_context>`): attention is linear in
        ``kv`` on either side of the roof, so this is ``t(b, 0)`` plus :meth:`attention_s`; the LM head is
        that of a prefill batch (one sequence), as in ``t(b)``."""
        return _AtContext(base=self, shift_s=self.attention_s(kv_tokens), kv_tokens=float(kv_tokens))

    def context_aware(self):
        """This roofline as a :class:`~fluidq.batchtime.ContextAware` ``t(b, 0) + s kv`` -- exact for the
        attention, which is linear in ``kv`` on either side of the roof (``s = attention_s(1)``); the LM head
        is that of ``t(b)`` (one sequence).  The form the simulator and the capacity analyses read a KV
        dependence from."""
        from .models import ContextAware

        return ContextAware(base=self, kv_s_per_token=self.attention_s(1.0))

    @property
    def source(self) -> str:
        return self.describe()

    @property
    def params(self) -> dict:
        return {"model": self.model.name, "gpu": self.gpu.name, "tensor_parallel_size": self.tensor_parallel_size,
                "compute_efficiency": self.compute_efficiency, "memory_efficiency": self.memory_efficiency,
                "overhead_s": self.overhead_s, "sync_us": self.sync_us, "sync_step_us": self.sync_step_us,
                "sync_step_mb": self.sync_step_mb, "attention_efficiency": self.attention_efficiency,
                "attention": self.attention, "lm_head": self.lm_head, "overhead": self.overhead,
                "all_reduce": self.all_reduce}

    def describe(self) -> str:
        return (f"roofline {self.model.name} on {self.tensor_parallel_size} x {self.gpu.name} "
                f"(compute {self.compute_efficiency:.3g}, memory {self.memory_efficiency:.3g} of peak, "
                f"overhead {self.overhead_s * 1e3:.3g} ms)")


@dataclass(frozen=True, kw_only=True)
class _AtContext(_Shifted):
    """A roofline at a fixed KV read per batch (:meth:`Roofline.at_context`)."""

    kind: ClassVar[str] = "roofline_at_context"
    kv_tokens: float = 0.0

    @property
    def params(self) -> dict:
        return {"base": self.base.to_dict(), "kv_tokens": self.kv_tokens, "shift_s": self.shift_s}

    def describe(self) -> str:
        return f"{self.base.describe()} + {self.shift_s * 1e3:.4g} ms attention ({self.kv_tokens:.0f} KV tokens)"


def roofline(model, gpu, tensor_parallel_size: int = 1, **kw) -> Roofline:
    """:class:`Roofline` from names or objects: ``roofline("Llama-3.1-8B", "H100", 1)``; a
    ``config.json`` path works for ``model`` (a str ending in ``.json``)."""
    from ..models import ModelFacts, load_gpu, load_model

    if isinstance(model, str):
        model = ModelFacts.from_config(model) if model.endswith(".json") else load_model(model, option="model")
    if isinstance(gpu, str):
        gpu = load_gpu(gpu)
    return Roofline(model=model, gpu=gpu, tensor_parallel_size=tensor_parallel_size, **kw)
