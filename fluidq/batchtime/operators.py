"""Whole-iteration batch time built from measured operator profiles.

An engine iteration runs every decoder layer once over all the batch's tokens, plus the
embedding, the final norm and, per sequence that emits a token, the LM head and the sampler.
The operator profiles give each piece separately, one layer at a time:

* LLMServingSim (``profile_tp1_dense.csv``: ``layer, tokens, time_us`` for the linear and
  element-wise operators; ``profile_tp1_attention.csv``: ``prefill_chunk, kv_prefill, n_decode,
  kv_decode, time_us`` with ``kv_decode`` the context of *each* decoding sequence;
  ``profile_tp1_per_sequence.csv``: ``lm_head`` and ``sampler`` by sequences);
* Vidur (``mlp.csv``: per-layer operator medians in ms by ``num_tokens`` and tensor-parallel size;
  ``attention*.csv``: decode attention by ``batch_size`` and ``kv_cache_size``, prefill attention
  by ``prefill_chunk_size`` and ``kv_cache_size``; ``all_reduce`` by message size).

:class:`IterationModel` evaluates ``t(prefill chunks, decode contexts)`` in seconds.  Attention
tables are interpolated multilinearly in raw coordinates, which is exact for costs bilinear in
``(sequences, context)``; beyond a table's range the interpolation continues linearly.  Several
prefill chunks in one batch are folded into one chunk of the same total length whose prior
context ``kv_eff`` keeps the chunks' total causal-attention work
``sum c_i (k_i + c_i/2) = C (kv_eff + C/2)`` -- an approximation, stated here.

Parallelism (each term added to the single-GPU profile times; all communication comes from
:mod:`fluidq.batchtime.comm`, a measured table or a link's bandwidth and latency, never fitted):

* tensor parallel ``tp``: two all-reduces per decoder layer (after attention, after the MLP) of
  ``b x hidden`` values of the model's dtype.  LLMServingSim's ``profile_tp{N}_*`` are measured on one
  GPU with the model's heads and MLP split (``profile_meta.yaml`` ``hf_overrides``), Vidur's per TP
  size: neither holds the all-reduce, so it is added here, and ``tp > 1`` without a communication
  model is refused;
* expert parallel (MoE, ``profile_tp{N}_moe.csv``: ``tokens, activated_experts, time_us``): with ``dp``
  data-parallel replicas stepping together (vLLM runs the MoE layers of all DP ranks in lockstep) a
  rank's experts see the ``T = dp x b`` tokens of all ranks; it holds ``E/ep`` of the ``E`` experts, of
  which ``(E/ep)(1 - (1 - k/E)^T)`` are activated under uniform top-``k`` routing, and does the
  expert work of ``T/ep`` tokens (``k T/ep`` token-expert pairs), read from the profile at
  ``(T/ep, activated)``; dispatch and combine are two all-to-alls of ``T x hidden`` values over the
  ``ep`` ranks per MoE layer;
* pipeline parallel ``pp``: stage ``s`` runs ``n_layers/pp`` layers, the first adds the embedding, the
  last the LM head and sampler, every stage but the last sends ``b x hidden`` activations on.  With
  ``pp`` micro-batches in flight a micro-batch comes back to a stage every ``pp x`` (slowest stage):
  :meth:`IterationModel.time_shape` returns that period, and the bubble is the difference to the sum
  of the stages (stage imbalance and sends).  The deployment is ``pp`` such virtual engines sharing
  ``max_num_seqs`` and the KV cache (:mod:`fluidq.validate.deployment`);
* data parallel: replicas are separate engines behind vLLM's router (capacity = the sum), handled by
  the deployment, not here.

References
----------
Shoeybi et al., "Megatron-LM", arXiv:1909.08053 (two all-reduces per layer); Lepikhin et al.,
"GShard", arXiv:2006.16668 (expert parallelism's all-to-all); Huang et al., "GPipe",
arXiv:1811.06965 (pipeline bubble).
Agrawal et al., "Vidur: A Large-Scale Simulation Framework for LLM Inference", arXiv:2405.05465.
Cho et al., "LLMServingSim: A HW/SW Co-Simulation Infrastructure for LLM Inference Serving at
Scale", arXiv:2408.05499.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import DataError, ParameterError
from .._io import open_text

__all__ = ["AttentionSkew", "IterationModel", "FittedIterationModel", "lss_iteration_model",
           "vidur_iteration_model"]

# element-wise / linear operators of one decoder layer (LLMServingSim names) and how often they run


def _interp1(x, xs, ys):
    """Linear interpolation with linear extrapolation at both ends."""
    x = np.asarray(x, dtype=float)
    y = np.interp(x, xs, ys)
    hi = x > xs[-1]
    if np.any(hi):
        s = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        y = np.where(hi, ys[-1] + s * (x - xs[-1]), y)
    lo = x < xs[0]
    if np.any(lo):
        s = (ys[1] - ys[0]) / (xs[1] - xs[0])
        y = np.where(lo, np.maximum(ys[0] + s * (x - xs[0]), 0.0), y)
    return y


class _Grid:
    """Multilinear interpolation on a (possibly incomplete) rectilinear grid of measurements."""

    def __init__(self, points: np.ndarray, values: np.ndarray, names: tuple):
        from scipy.interpolate import RegularGridInterpolator

        self.names = names
        axes = [np.unique(points[:, j]) for j in range(points.shape[1])]
        shape = tuple(len(a) for a in axes)
        grid = np.full(shape, np.nan)
        idx = tuple(np.searchsorted(axes[j], points[:, j]) for j in range(points.shape[1]))
        # average repeated measurements of one point
        flat = np.ravel_multi_index(idx, shape)
        sums = np.bincount(flat, weights=values, minlength=grid.size)
        cnt = np.bincount(flat, minlength=grid.size)
        g = np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan).reshape(shape)
        if np.isnan(g).any():
            # fill holes from the nearest measured point (rare; reported by ``holes``)
            from scipy.interpolate import NearestNDInterpolator

            mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
            ok = ~np.isnan(g.ravel())
            near = NearestNDInterpolator(mesh[ok], g.ravel()[ok])
            gf = g.ravel().copy()
            gf[~ok] = near(mesh[~ok])
            self.holes = int((~ok).sum())
            g = gf.reshape(shape)
        else:
            self.holes = 0
        self.axes = axes
        self.values = g  # the filled grid the interpolator reads (exported by IterationModel.kernel_table)
        self._f = RegularGridInterpolator(axes, g, method="linear", bounds_error=False, fill_value=None)

    def __call__(self, *coords):
        pts = np.stack(np.broadcast_arrays(*[np.asarray(c, dtype=float) for c in coords]), axis=-1)
        return np.maximum(self._f(pts), 0.0)


@dataclass(frozen=True, kw_only=True, eq=False)
class IterationModel:
    """Seconds per engine iteration from operator profiles.

    Use :func:`lss_iteration_model` or :func:`vidur_iteration_model` to build one.

    Parameters
    ----------
    name : str
        Label (GPU / model / TP).
    n_layers : int
        Decoder layers of the served model (the profiles time one layer).
    linear_us : callable
        Per-layer linear and element-wise time in microseconds for ``b`` tokens.
    once_us : callable
        Once-per-iteration token-wise time (embedding, final norm) in microseconds.
    per_seq_us : callable
        LM head + sampler for ``n`` sequences, microseconds.
    attn_us : callable
        ``attn_us(prefill_chunk, kv_prefill, n_decode, kv_decode)`` per layer, microseconds.
    overhead_us : float
        Fixed per-iteration cost not in the profiles (scheduling, launch), microseconds.
    comm_us : callable, optional
        Per-layer communication for ``b`` tokens (tensor parallel all-reduces, expert-parallel
        all-to-alls), microseconds.
    moe_us : callable, optional
        Per-MoE-layer expert time for ``b`` tokens of this replica, microseconds (``n_moe_layers`` of them).
    pipeline_stages : int
        ``pp``; with ``pp > 1`` :meth:`time_shape` is the period of one of ``pp`` micro-batches in flight.
    send_us : callable, optional
        Activations of ``b`` tokens from one pipeline stage to the next, microseconds.
    """

    name: str
    n_layers: int
    linear_us: object = field(repr=False)
    once_us: object = field(repr=False)
    per_seq_us: object = field(repr=False)
    attn_us: object = field(repr=False)
    overhead_us: float = 0.0
    source: str = ""
    comm_us: object = field(default=None, repr=False)
    moe_us: object = field(default=None, repr=False)
    n_moe_layers: int = 0
    pipeline_stages: int = 1
    send_us: object = field(default=None, repr=False)
    #: the fitted tables behind ``linear_us``, ``once_us``, ``per_seq_us`` and ``attn_us`` (set by
    #: :func:`lss_iteration_model` and :func:`vidur_iteration_model`), read by :meth:`kernel_table`
    tables: object = field(default=None, repr=False)
    #: an :class:`AttentionSkew` (the attention cost of decodes of unequal context beyond the uniform batch at
    #: their mean), added by :meth:`time`, which sees every context; ``None``: no such term
    skew: object = field(default=None, repr=False)

    def __post_init__(self):
        pp = int(self.pipeline_stages)
        if pp < 1 or pp > self.n_layers:
            raise ParameterError("pipeline_parallel_size", self.pipeline_stages,
                                 f"an integer from 1 to the model's {self.n_layers} decoder layers")
        if pp > 1 and self.send_us is None:
            raise ParameterError("send_us", None, "the stage-to-stage activation transfer when pipeline_stages > 1")

    def stage_us(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None, attn_extra_us=0.0):
        """Microseconds of each pipeline stage for one (micro-)batch, shape ``(pp, ...)``; one stage
        (the whole iteration) when ``pp = 1``.  ``attn_extra_us`` is added to every layer's attention (the
        skew term of :meth:`time`)."""
        pc = np.asarray(prefill_tokens, dtype=float)
        nd = np.asarray(n_decode, dtype=float)
        b = pc + nd
        if n_emit is None:
            n_emit = nd + (pc > 0)
        layer = self.linear_us(b) + self.attn_us(pc, kv_prefill, nd, np.where(nd > 0, kv_decode, 0.0))
        if attn_extra_us:
            layer = layer + attn_extra_us
        if self.comm_us is not None:
            layer = layer + self.comm_us(b)
        layers = self.n_layers * layer
        if self.moe_us is not None and self.n_moe_layers:
            layers = layers + self.n_moe_layers * self.moe_us(b)
        first = self.once_us(b) + self.overhead_us
        last = self.per_seq_us(np.maximum(n_emit, 1))
        pp = int(self.pipeline_stages)
        if pp == 1:
            return np.asarray(layers + first + last)[None, ...]
        send = self.send_us(b)
        stages = [layers / pp + send for _ in range(pp)]
        stages[0] = stages[0] + first
        stages[-1] = stages[-1] - send + last
        return np.stack(np.broadcast_arrays(*stages))

    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None, attn_extra_us=0.0):
        """Seconds for a batch of one (folded) prefill chunk and ``n_decode`` decodes of mean
        context ``kv_decode``; vectorised.  ``n_emit`` sequences get the LM head (default: the
        decodes plus one if a prefill is present).  The decodes are read as all of context ``kv_decode``
        (a uniform batch: no skew term; :meth:`time` adds it from the contexts themselves)."""
        pc = np.asarray(prefill_tokens, dtype=float)
        nd = np.asarray(n_decode, dtype=float)
        b = pc + nd
        st = self.stage_us(pc, kv_prefill, nd, kv_decode, n_emit, attn_extra_us)
        us = st[0] if st.shape[0] == 1 else st.shape[0] * st.max(axis=0)
        return np.where(b > 0, us * 1e-6, 0.0)

    def bubble_fraction(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        """Share of the pipeline period a stage idles, ``1 - sum(stages) / (pp x slowest stage)`` (0 when
        ``pp = 1``)."""
        st = self.stage_us(prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit)
        if st.shape[0] == 1:
            return np.zeros(st.shape[1:]) if st.ndim > 1 else 0.0
        return 1.0 - st.sum(axis=0) / (st.shape[0] * np.maximum(st.max(axis=0), 1e-300))

    def kernel_table(self, max_batch_tokens=None, lockstep_ranks=1):
        """The model as one flat float64 array for the compiled kernel's evaluation
        (:func:`fluidq.kernel.compose.batch_s` computes :meth:`time` from it with the same arithmetic), or
        ``None`` when it cannot.  See :func:`_kernel_table` for the layout.

        The terms that depend on the batch's tokens ``b`` alone -- tensor-parallel communication (``comm_us``),
        the MoE experts (``moe_us`` on ``n_moe_layers``) and the pipeline send (``send_us``) -- are tabulated
        densely, one entry per batch size, by the model's own callables (exactly the values :meth:`time` adds), so
        a model with any of them needs ``max_batch_tokens``, the most tokens a batch can hold (an engine's token
        budget ``b_max``), and gives ``None`` without it.  ``lockstep_ranks`` (``dp``, a power of two) is
        :class:`fluidq.validate.deployment.LockstepRanks`'s layout: ``dp`` ranks stepping together, the decoders
        shared evenly (a rank's batch then holds ``b`` in steps of ``1/dp``), each prefill chunk on the least
        loaded rank (:func:`fluidq.kernel.compose.chunks_s`); such a table carries the rank loads as scratch
        space, so every call returns a fresh copy.  ``None`` too for a model built without its tables."""
        base = self._table
        if base is None or self.skew is not None:
            return None  # (the skew term needs every decode's context; the kernel carries their mean)
        dp = _positive_int("lockstep_ranks", lockstep_ranks, "an integer >= 1 (data-parallel ranks in lockstep)")
        if dp & (dp - 1):
            return None  # (b = C + n/dp is then not exactly on a grid of step 1/dp: the generic path runs it)
        terms = self._per_b_terms()
        if not terms and dp == 1:
            return base
        if terms and max_batch_tokens is None:
            return None
        n = 1
        if terms:
            B = _positive_int("max_batch_tokens", max_batch_tokens, "an integer >= 1 (the engine's token budget)")
            n = dp * B + 1
        cached = self._tables_by_ranks.get(dp)
        if cached is None or (terms and cached[KT_NB] < n):
            cached = _with_per_b(base, terms, n, dp)
            self._tables_by_ranks[dp] = cached
        return cached.copy() if dp > 1 else cached

    def _per_b_terms(self) -> list:
        """``(slot, callable)`` of the terms that depend on the batch's tokens alone (see :meth:`kernel_table`)."""
        out = []
        if self.comm_us is not None:
            out.append((KT_COMM, self.comm_us))
        if self.moe_us is not None and self.n_moe_layers:
            out.append((KT_MOE, self.moe_us))
        if int(self.pipeline_stages) > 1:
            out.append((KT_SEND, self.send_us))
        return out

    @cached_property
    def _table(self):  # (built once per model: simulate asks for it to route a run and again to run it)
        if self.tables is None:
            return None
        return _kernel_table(self.tables, self.n_layers, self.overhead_us,
                             n_moe_layers=self.n_moe_layers if self.moe_us is not None else 0,
                             pipeline_stages=int(self.pipeline_stages))

    @cached_property
    def _tables_by_ranks(self) -> dict:  # lockstep ranks -> the table with the per-batch-size terms
        return {}

    def time(self, prefill_chunks=(), decode_contexts=()) -> float:
        """Seconds for one batch.

        Parameters
        ----------
        prefill_chunks : sequence of (chunk_tokens, prior_context_tokens)
            Prefill work of each prefilling request in the batch.
        decode_contexts : sequence of int
            Context (cached tokens) of each decoding request.
        """
        pcs = [(float(c), float(k)) for c, k in prefill_chunks if c > 0]
        C = sum(c for c, _ in pcs)
        kv_eff = 0.0
        if C > 0:
            work = sum(c * (k + c / 2.0) for c, k in pcs)
            kv_eff = max(0.0, work / C - C / 2.0)
        dc = np.asarray(decode_contexts, dtype=float)
        nd = float(dc.size)
        kvd = float(dc.mean()) if dc.size else 0.0
        extra = 0.0
        if self.skew is not None and dc.size > 1:
            extra = self.skew.extra_us(self.attn_us, C, kv_eff, dc)
        return float(self.time_shape(C, kv_eff, nd, kvd, n_emit=nd + len(pcs), attn_extra_us=extra))

    def prefill_only(self, tokens):
        """Seconds for a prefill-only batch of ``tokens`` prompt tokens with no prior context."""
        return self.time_shape(tokens, 0.0, 0.0, 0.0)

    def decode_only(self, n, kv):
        """Seconds for ``n`` decodes of context ``kv`` each."""
        return self.time_shape(0.0, 0.0, n, kv)


# -------------------------------------------------------------------------- the kernel's flat table
#: header of :func:`_kernel_table`'s array: kind (1 LLMServingSim, 2 Vidur), decoder layers, overhead (us),
#: Vidur's decode batching overhead, Vidur's constant per-sequence time (us), then the offsets of the pieces
#: (linear, once, per-sequence, decode grid, prefill grid, mixed grid, Vidur's decode extras; -1: absent); then
#: the MoE layers, the pipeline stages, the lockstep ranks ``dp``, the entries ``n`` of the per-batch-size
#: tables and their offsets (tensor-parallel communication, MoE experts, pipeline send: entry ``j`` is the term
#: at ``b = j / dp`` tokens; -1: absent) and the offset of the lockstep ranks' scratch space (``4 dp`` values)
KT_KIND, KT_LAYERS, KT_OVERHEAD, KT_FDEC, KT_SEQ, KT_LIN, KT_ONCE, KT_PSEQ, KT_DEC, KT_PRE, KT_MIX, KT_DECX = range(12)
KT_NMOE, KT_PP, KT_DP, KT_NB, KT_COMM, KT_MOE, KT_SEND, KT_SCRATCH = range(12, 20)
KT_HEADER = 24


def _per_b(f, xs):
    """``[f(b) for b in xs]`` as :meth:`IterationModel.time` evaluates ``f`` (a numpy float64 scalar ``b``):
    ``f.per_b(xs)`` where ``f`` offers that vectorised form (documented by its maker to give exactly these
    values), else one call per batch size."""
    g = getattr(f, "per_b", None)
    if g is not None:
        return np.asarray(g(xs), dtype=float).reshape(xs.shape)
    return np.array([float(f(np.float64(x))) for x in xs.tolist()], dtype=float)


def _with_per_b(base, terms, n, dp):
    """``base`` (a :func:`_kernel_table`) with the per-batch-size ``terms`` tabulated at ``b = j / dp``, ``j < n``,
    and ``dp``'s scratch space."""
    head = base[:KT_HEADER].copy()
    head[KT_DP] = float(dp)
    head[KT_NB] = float(n) if terms else 0.0
    parts = [head, base[KT_HEADER:]]
    size = base.size
    xs = np.arange(n, dtype=float) / dp  # (exact: dp is a power of two)
    for slot, f in terms:
        head[slot] = float(size)
        parts.append(_per_b(f, xs))
        size += n
    if dp > 1:
        head[KT_SCRATCH] = float(size)
        parts.append(np.zeros(4 * dp))
    return np.ascontiguousarray(np.concatenate(parts))


def _kernel_table(tables: dict, n_layers, overhead_us, n_moe_layers=0, pipeline_stages=1):
    """Pack an iteration model's tables into one float64 array (``None`` where a piece has a shape the
    compiled evaluation does not reproduce).  A 1-D piece is ``[n, x(n), y(n)]``; a grid ``[d, n_1..n_d, axes,
    values (row-major)]``.  No per-batch-size terms (:meth:`IterationModel.kernel_table` appends them)."""
    head = np.full(KT_HEADER, -1.0)
    head[KT_NMOE] = float(n_moe_layers)
    head[KT_PP] = float(pipeline_stages)
    head[KT_DP] = 1.0
    head[KT_NB] = 0.0
    head[KT_KIND] = {"lss": 1.0, "vidur": 2.0}[tables["kind"]]
    head[KT_LAYERS] = float(n_layers)
    head[KT_OVERHEAD] = float(overhead_us)
    head[KT_FDEC] = float(tables.get("f_dec", 0.0))
    head[KT_SEQ] = float(tables.get("per_seq", 0.0))
    parts = [head]
    size = KT_HEADER

    def put(slot, arr):
        nonlocal size
        head[slot] = float(size)
        parts.append(arr)
        size += arr.size

    for slot, key in ((KT_LIN, "lin"), (KT_ONCE, "once"), (KT_PSEQ, "seq")):
        if tables.get(key) is None:
            continue
        xs, ys = (np.asarray(v, dtype=float) for v in tables[key])
        # sorted (numpy.interp takes the last of equal abscissae, as the kernel's search does; equal end points
        # give the extrapolating slope x/0, which the kernel divides as IEEE does)
        if xs.size < 2 or xs.shape != ys.shape or np.any(np.diff(xs) < 0):
            return None
        put(slot, np.concatenate([[float(xs.size)], xs, ys]))
    for slot, key in ((KT_DEC, "dec"), (KT_PRE, "pre"), (KT_MIX, "mix"), (KT_DECX, "dec_x")):
        g = tables.get(key)
        if g is None:
            continue
        axes = [np.asarray(a, dtype=float) for a in g.axes]
        vals = np.asarray(g.values, dtype=float)
        if any(a.size < 2 for a in axes) or vals.shape != tuple(a.size for a in axes) or len(axes) not in (2, 4):
            return None  # (a one-point axis takes another branch of scipy's interpolator)
        put(slot, np.concatenate([[float(len(axes))], [float(a.size) for a in axes], *axes, vals.ravel()]))
    return np.ascontiguousarray(np.concatenate(parts))


# ------------------------------------------------------------------------------ attention skew
def _skew_axis(meta, key: str, value):
    """An axis of ``skew_fit.bucket_axes`` as :class:`AttentionSkew` reads it: ``<axis>_bins`` a list of floats (the
    edges ``value`` is compared with), ``<axis>_labels`` a list of texts (matched with the bucket table's label
    columns, which are text); anything else as read.  A bins list that holds no numbers is a ``DataError`` naming
    the file and the key."""
    if key.endswith("_bins"):
        if not isinstance(value, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                  for x in value):
            raise DataError(f"{meta}: skew_fit.bucket_axes.{key}: expected a list of numbers, not {value!r}")
        return [float(x) for x in value]
    if key.endswith("_labels"):
        if not isinstance(value, list):
            raise DataError(f"{meta}: skew_fit.bucket_axes.{key}: expected a list of labels, not {value!r}")
        return [str(x) for x in value]
    return value


def _label(bins, labels, value) -> str:
    """The bucket of ``value``: ``labels[i]`` for ``bins[i] < value <= bins[i+1]`` (the last label above)."""
    for i, lab in enumerate(labels):
        if value <= bins[i + 1]:
            return lab
    return labels[-1]


#: the bucket axes LLMServingSim's profiler writes under ``skew_fit.bucket_axes`` (read from the profile when given)
_SKEW_AXES = ("n", "skew_rate", "kv_big", "kp")


@dataclass(frozen=True, kw_only=True, eq=False)
class AttentionSkew:
    """The attention cost of decodes of unequal context, beyond the uniform batch at their mean.

    An attention profile times uniform batches (every decode at one context); a real batch's decodes
    differ, and the kernel then pays for its longest ones (tile padding, the last thread blocks finishing
    alone), which a uniform batch at the mean context does not show.  LLMServingSim's profiler measures it
    (``skew_profile``: bimodal batches of ``nb`` decodes at ``kv_big`` and the rest at ``kvs``, each timed
    against the uniform batches at the mean and at the maximum) and writes ``alpha = (t_skew - t_mean) /
    (t_max - t_mean)`` per bucket of (prefill chunk, decodes ``n``, skew rate ``(mean - min) / (max - min)``,
    longest context, prefill context) to ``tp<N>/skew_fit.csv``, with a pooled ``alpha_default``
    (``profile_meta.yaml`` ``skew_fit.per_tp``).  Its simulator adds, per layer,
    ``alpha (t_attn(kv_max) - t_attn(kv_mean))`` to every batch of at least two decodes with ``kv_max >
    kv_mean``, taking ``alpha`` from the bucket and ``alpha_default`` for a bucket the table lacks (or without
    a table).  This class is that rule over fluidq's attention interpolation; the alphas are the profiler's
    measurements, never fitted to a run.

    Parameters
    ----------
    alpha_default : float
        The pooled alpha (``skew_fit.per_tp.<tp>.alpha_default``).
    buckets : dict, optional
        ``(pc, n_label, skew_rate_label, kv_big_label, kp_label) -> alpha`` from the bucket table; ``pc`` is the
        prefill chunk exactly (the profiler's grid points), as the peer keys it.
    axes : dict, optional
        ``<axis>_bins`` / ``<axis>_labels`` for the axes ``n, skew_rate, kv_big, kp`` (``skew_fit.bucket_axes``).
    source : str
        Where the alphas come from.
    """

    alpha_default: float
    buckets: dict = field(default_factory=dict)
    axes: dict = field(default_factory=dict)
    source: str = ""

    def __post_init__(self):
        a = self.alpha_default
        if not (isinstance(a, (int, float)) and np.isfinite(a) and -1.0 < a < 1.0):
            raise ParameterError("alpha_default", a, "a finite fraction in (-1, 1) (the profile's pooled skew alpha)")
        if self.buckets:
            missing = [f"{ax}_{w}" for ax in _SKEW_AXES for w in ("bins", "labels") if f"{ax}_{w}" not in self.axes]
            if missing:
                raise ParameterError("axes", sorted(self.axes), f"the bucket axes {', '.join(missing)}",
                                     "a bucket table needs skew_fit.bucket_axes of profile_meta.yaml")

    def alpha(self, pc, n, skew_rate, kv_big, kp) -> float:
        """The alpha of a batch: its bucket's, else ``alpha_default``."""
        if not self.buckets:
            return float(self.alpha_default)
        ax = self.axes
        key = (int(pc), _label(ax["n_bins"], ax["n_labels"], int(n)),
               _label(ax["skew_rate_bins"], ax["skew_rate_labels"], min(1.0, max(0.0, float(skew_rate)))),
               _label(ax["kv_big_bins"], ax["kv_big_labels"], float(kv_big)),
               _label(ax["kp_bins"], ax["kp_labels"], float(kp)))
        return float(self.buckets.get(key, self.alpha_default))

    def extra_us(self, attn_us, pc, kp, decode_contexts) -> float:
        """Microseconds per layer the batch's skew adds to ``attn_us(pc, kp, n, mean)`` (0 for fewer than two
        decodes, equal contexts, or ``t(kv_max) <= t(kv_mean)`` where the interpolation bends)."""
        dc = np.asarray(decode_contexts, dtype=float)
        if dc.size < 2:
            return 0.0
        mean, lo, hi = float(dc.mean()), float(dc.min()), float(dc.max())
        if not hi > mean:
            return 0.0
        a = self.alpha(pc, dc.size, (mean - lo) / (hi - lo), hi, kp)
        if a == 0.0:
            return 0.0
        t_mean = float(attn_us(pc, kp, float(dc.size), mean))
        t_max = float(attn_us(pc, kp, float(dc.size), hi))
        return a * (t_max - t_mean) if t_max > t_mean else 0.0

    @classmethod
    def from_profile(cls, folder, tp: int = 1):
        """The skew fit of an LLMServingSim profile folder: ``profile_meta.yaml``'s ``skew_fit`` (its pooled
        ``alpha_default`` for ``tp`` and its bucket axes) and, when the folder ships it, the bucket table
        ``profile_tp{tp}_skew_fit.csv`` (the profiler's ``tp<N>/skew_fit.csv``); ``None`` when the profile has
        no enabled skew fit for ``tp``."""
        from ._yaml import read_profile_meta

        folder = Path(folder)
        meta = folder / "profile_meta.yaml"
        if not meta.is_file():
            return None
        fit = read_profile_meta(folder).get("skew_fit")  # an invalid file: a DataError naming its line and column
        if fit is None:
            return None
        if not isinstance(fit, dict):
            raise DataError(f"{meta}: skew_fit: expected a mapping (enabled, per_tp, bucket_axes), not {fit!r}")
        if fit.get("enabled") is not True:
            return None
        per_tp = fit.get("per_tp") or {}
        if not isinstance(per_tp, dict):
            raise DataError(f"{meta}: skew_fit.per_tp: expected a mapping of tensor-parallel sizes, not {per_tp!r}")
        # YAML types the keys (``1:`` is the int 1); the TP size is looked up as written
        entry = {str(k): v for k, v in per_tp.items()}.get(str(int(tp)))
        if not isinstance(entry, dict) or entry.get("alpha_default") is None:
            return None
        alpha = entry["alpha_default"]
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
            raise DataError(f"{meta}: skew_fit.per_tp.{int(tp)}.alpha_default: expected a number, not {alpha!r}")
        axes = fit.get("bucket_axes") or {}
        if not isinstance(axes, dict):
            raise DataError(f"{meta}: skew_fit.bucket_axes: expected a mapping (n_bins, n_labels, ...), not {axes!r}")
        axes = {str(k): _skew_axis(meta, str(k), v) for k, v in axes.items() if str(k) != "pc"}
        buckets = {}
        table = folder / f"profile_tp{int(tp)}_skew_fit.csv"
        if table.is_file() or Path(str(table) + ".gz").is_file():
            for r in _read_csv(table):
                try:
                    key = (int(float(r["pc"])), r["n_label"], r["skew_rate_label"], r["kv_big_label"], r["kp_label"])
                    buckets[key] = float(r["alpha"])
                except (KeyError, ValueError) as e:
                    raise DataError(f"{table}: expected columns pc, n_label, skew_rate_label, kv_big_label, "
                                    f"kp_label, alpha (LLMServingSim's skew_fit.csv); {e!r}") from None
        src = (f"{meta.name} skew_fit (TP{int(tp)}): alpha_default {alpha:g}"
               + (f", {len(buckets)} buckets from {table.name}" if buckets else ", no bucket table shipped"))
        return cls(alpha_default=float(alpha), buckets=buckets, axes=axes, source=src)


# ----------------------------------------------------------------------------------------- LSS
def _read_csv(path: Path) -> list[dict]:
    with open_text(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise DataError(f"{path}: empty table")
    return rows


def _profile_rows(path: Path, cols, *, text_cols=()) -> list[dict]:
    """The rows of a profile table (``path`` or ``path.gz``): ``text_cols`` required, ``cols`` checked numbers
    (:func:`fluidq.batchtime.loaders.lss_profile_rows`: a bad cell is a ``DataError`` naming the file, the
    line, the column and the operator; a negative or NaN time is refused)."""
    from .loaders import lss_profile_rows

    with open_text(path) as f:
        text = f.read()
    gz = Path(str(path) + ".gz")
    shown = gz if not Path(path).is_file() and gz.is_file() else path
    return lss_profile_rows(shown, text, cols, text_cols=text_cols)


_COMM_WHAT = ("a communication model: a Link (bandwidth and latency, e.g. Link.from_peer_sim_config of "
              "LLMServingSim's peer_sim_config.json link_bw/link_latency) or a measured all-reduce table "
              "(MeasuredAllReduce.from_vidur_csv of Vidur's all_reduce*.csv)")


def _need_comm(comm, what):
    if comm is None or not hasattr(comm, "collective_us"):
        raise ParameterError("comm", comm, _COMM_WHAT, f"{what} needs one: the profiles hold no communication, "
                             "and without it every prediction would be too optimistic")


def _positive_int(name, v, what):
    try:
        ok = int(v) == v and int(v) >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ParameterError(name, v, what)
    return int(v)


def _elementwise(comm) -> bool:
    """Whether ``comm``'s collectives are computed element by element with the same IEEE operations for an
    array as for a scalar (``+ - * /``, ``numpy.interp``, ``where``: fluidq's :class:`~fluidq.batchtime.comm.Link`
    and :class:`~fluidq.batchtime.comm.MeasuredAllReduce`), so one vectorised call tabulates exactly what the
    scalar calls give (a transcendental function may not: numpy's SIMD ``power`` differs from the C library's
    in the last bit)."""
    from .comm import Link, MeasuredAllReduce

    return type(comm) in (Link, MeasuredAllReduce)


def _tp_comm(comm, tp, hidden, nbytes):
    """Per-layer microseconds of tensor parallelism: two all-reduces of ``b x hidden`` values."""
    if tp == 1:
        return None
    f = lambda b: 2.0 * comm.collective_us(np.asarray(b, dtype=float) * hidden * nbytes, tp,  # noqa: E731
                                           kind="all_reduce")
    if _elementwise(comm):
        f.per_b = f  # (the kernel table's exact vectorised form: see IterationModel.kernel_table)
    return f


def _moe_model(path: Path, *, experts: int, top_k: int, ep: int, dp: int, hidden: int, nbytes: int, comm):
    """Per-MoE-layer microseconds (expert work + dispatch/combine) for ``b`` tokens of one replica
    (see the module docstring: ``T = dp b`` tokens, ``E/ep`` local experts)."""
    cols = ("tokens", "activated_experts", "time_us")
    M = np.array([[r[c] for c in cols] for r in _profile_rows(path, cols)])
    grid = _Grid(M[:, :2], M[:, 2], ("tokens", "activated_experts"))
    if experts % ep:
        raise ParameterError("expert_parallel_size", ep, f"a divisor of the model's {experts} experts")
    local = experts / ep
    if dp * ep > 1 and ep > 1:
        _need_comm(comm, f"expert parallelism over {ep} GPUs")

    q = 1.0 - top_k / experts

    def moe(b):
        T = dp * np.asarray(b, dtype=float)
        return _rest(T, q ** T)

    def _rest(T, q_T):
        active = local * (1.0 - q_T)
        work = np.reshape(grid(np.maximum(T / ep, 1.0), np.clip(active, 1.0, local)), T.shape)
        if ep > 1:
            work = work + 2.0 * comm.collective_us(T * hidden * nbytes, ep, kind="all_to_all")
        return np.where(T > 0, work, 0.0)

    def per_b(bs):
        """``moe`` at each of ``bs`` exactly as a scalar call computes it: the power by the C library's ``pow``
        (a numpy scalar's, and Python's), not numpy's SIMD one, which differs in the last bit; the rest is
        element by element the same."""
        T = dp * np.asarray(bs, dtype=float)
        return _rest(T, np.array([q ** t for t in T.tolist()], dtype=float).reshape(T.shape))

    if ep == 1 or _elementwise(comm):
        moe.per_b = per_b
    return moe


def lss_iteration_model(folder, *, n_layers: int, tp: int = 1, overhead_us: float = 0.0,
                        name: str | None = None, comm=None, hidden_size: int | None = None,
                        dtype_bytes: int = 2, facts=None, data_parallel_size: int = 1,
                        expert_parallel_size: int = 1, pipeline_parallel_size: int = 1,
                        attention_skew=None) -> IterationModel:
    """Iteration model from an LLMServingSim profile folder (``profile_tp{tp}_*.csv``).

    The profiled model has one decoder layer; ``n_layers`` scales it to the served model.  A MoE model's
    experts come from ``profile_tp{tp}_moe.csv`` (``facts``, a :class:`~fluidq.models.ModelFacts`, gives
    the experts and top-k).  ``tp > 1``, ``expert_parallel_size > 1`` and ``pipeline_parallel_size > 1``
    need ``comm`` (a :class:`~fluidq.batchtime.comm.Link` or
    :class:`~fluidq.batchtime.comm.MeasuredAllReduce`) and the model width (``hidden_size`` or
    ``facts``); see the module docstring for each term.

    ``attention_skew`` adds the attention cost of decodes of unequal context (:class:`AttentionSkew`):
    ``None`` (the default) leaves it out, ``"profile"`` reads it from the folder's ``profile_meta.yaml``
    (and its bucket table when shipped; a profile without an enabled skew fit is refused), or pass an
    :class:`AttentionSkew`.  Off by default: the shipped profiles lack the bucket tables, and the pooled alpha
    alone moves the replays of their runs the wrong way (``validation/RESULTS.md``, 2026-12-06 h-lat16).
    A model with the term runs on the simulator's generic path (the compiled kernel sees the mean context only).
    """
    folder = Path(folder)
    skew = None
    if isinstance(attention_skew, AttentionSkew):
        skew = attention_skew
    elif attention_skew == "profile":
        skew = AttentionSkew.from_profile(folder, tp)
        if skew is None:
            raise ParameterError("attention_skew", attention_skew, "None, 'profile' or an AttentionSkew",
                                 f"{folder}/profile_meta.yaml has no enabled skew_fit for TP{tp}")
    elif attention_skew is not None:
        raise ParameterError("attention_skew", attention_skew, "None, 'profile' or an AttentionSkew")
    if int(n_layers) < 1:
        raise ParameterError("n_layers", n_layers, "an integer >= 1 (the served model's decoder layers)")
    tp = _positive_int("tensor_parallel_size", tp, "an integer >= 1")
    dp = _positive_int("data_parallel_size", data_parallel_size, "an integer >= 1")
    ep = _positive_int("expert_parallel_size", expert_parallel_size, "an integer >= 1")
    pp = _positive_int("pipeline_parallel_size", pipeline_parallel_size, "an integer >= 1")
    if tp > 1:
        _need_comm(comm, f"tensor parallel size {tp}")
    if pp > 1:
        _need_comm(comm, f"pipeline parallel size {pp}")
    if hidden_size is None and facts is not None:
        hidden_size = facts.hidden_size
    if facts is not None:
        dtype_bytes = facts.bytes_per_value
    if hidden_size is None and (tp > 1 or pp > 1 or ep > 1):
        raise ParameterError("hidden_size", None, "the model width (or facts=) for the communication terms")
    dense_path = folder / f"profile_tp{tp}_dense.csv"
    if not (dense_path.is_file() or Path(str(dense_path) + ".gz").is_file()):
        raise DataError(f"{folder}: no profile_tp{tp}_dense.csv" + (
            f"; tensor parallel size {tp} needs the profiles measured at that size (LLMServingSim measures "
            f"TP{tp} on one GPU with the model split)" if tp > 1 else ""))
    moe_path = folder / f"profile_tp{tp}_moe.csv"
    is_moe = moe_path.is_file() or Path(str(moe_path) + ".gz").is_file()
    if is_moe and (facts is None or not facts.n_experts):
        raise ParameterError("facts", facts, "the model facts of a mixture-of-experts model (experts, top-k)",
                             f"{moe_path.name} is a MoE expert profile")
    if not is_moe and ep > 1:
        raise ParameterError("expert_parallel_size", ep, "1 for a dense model (no profile_tp*_moe.csv)")
    from .loaders import lss_per_sequence_check

    dense = _profile_rows(folder / f"profile_tp{tp}_dense.csv", ("tokens", "time_us"), text_cols=("layer",))
    ops: dict[str, list] = {}
    for r in dense:
        ops.setdefault(r["layer"], []).append((r["tokens"], r["time_us"]))
    tabs = {}
    for k, v in ops.items():
        v = sorted(v)
        tabs[k] = (np.array([x for x, _ in v]), np.array([y for _, y in v]))
    from .loaders import lss_operator_counts

    # every operator is counted or refused by name (the loaders' one table: qk_norm too, when profiled)
    per_layer, once_ops = lss_operator_counts(tabs, folder / f"profile_tp{tp}_dense.csv", moe=is_moe)
    # sum the per-layer operators on the common token grid
    xs = tabs["qkv_proj"][0]
    lin = sum(m * _interp1(xs, *tabs[k]) for k, m in per_layer)
    once = sum(_interp1(xs, *tabs[k]) for k in once_ops)
    seq_path = folder / f"profile_tp{tp}_per_sequence.csv"
    seq_rows = _profile_rows(seq_path, ("sequences", "time_us"), text_cols=("layer",))
    seq: dict[str, list] = {}
    for r in seq_rows:
        seq.setdefault(r["layer"], []).append((r["sequences"], r["time_us"]))
    lss_per_sequence_check(seq, seq_path)
    sx = np.array(sorted(x for x, _ in seq["lm_head"]))
    sy = sum(_interp1(sx, *map(np.array, zip(*sorted(v)))) for v in seq.values())

    att_cols = ("prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us")
    att = _profile_rows(folder / f"profile_tp{tp}_attention.csv", att_cols)
    A = np.array([[r[c] for c in att_cols] for r in att])
    # keep the regular (power-of-two) grid; extra "skew" points would make the grid ragged
    def regular(v):
        return (v == 0) | (np.log2(np.maximum(v, 1)) % 1 == 0)

    A = A[np.all(regular(A[:, :4]), axis=1)]
    dec = A[(A[:, 0] == 0) & (A[:, 2] > 0)]
    pre = A[(A[:, 0] > 0) & (A[:, 2] == 0)]
    mix = A[(A[:, 0] > 0) & (A[:, 2] > 0)]
    if len(dec) == 0 or len(pre) == 0:
        raise DataError(f"{folder}/profile_tp{tp}_attention.csv: needs decode-only and prefill-only rows")
    g_dec = _Grid(dec[:, [2, 3]], dec[:, 4], ("n_decode", "kv_decode"))
    g_pre = _Grid(pre[:, [0, 1]], pre[:, 4], ("prefill_chunk", "kv_prefill"))
    g_mix = _Grid(mix[:, :4], mix[:, 4], ("prefill_chunk", "kv_prefill", "n_decode", "kv_decode")) if len(mix) else None

    def attn(pc, kp, nd, kv):
        pc, kp, nd, kv = np.broadcast_arrays(*[np.asarray(v, dtype=float) for v in (pc, kp, nd, kv)])
        out = np.zeros(pc.shape)
        d = (pc == 0) & (nd > 0)
        p = (pc > 0) & (nd == 0)
        m = (pc > 0) & (nd > 0)
        if d.any():
            out[d] = g_dec(nd[d], np.maximum(kv[d], 16))
        if p.any():
            out[p] = g_pre(pc[p], kp[p])
        if m.any():
            out[m] = g_mix(pc[m], kp[m], nd[m], np.maximum(kv[m], 16)) if g_mix else (
                g_pre(pc[m], kp[m]) + g_dec(nd[m], kv[m]))
        return out

    moe = None
    n_moe = 0
    parts = []
    if is_moe:
        moe = _moe_model(moe_path, experts=int(facts.n_experts), top_k=int(facts.experts_per_token), ep=ep, dp=dp,
                         hidden=int(hidden_size or facts.hidden_size), nbytes=int(dtype_bytes), comm=comm)
        n_moe = int(n_layers) - int(facts.n_dense_layers)
        parts.append(f"MoE {facts.n_experts} experts top-{facts.experts_per_token} on {n_moe} layers"
                     + (f", EP{ep} x DP{dp} all-to-all over {comm.describe()}" if ep > 1 else
                        (f", experts see DP{dp} x b tokens" if dp > 1 else "")))
    comm_layer = _tp_comm(comm, tp, hidden_size, dtype_bytes)
    if tp > 1:
        parts.append(f"2 all-reduces per layer over {comm.describe()}")
    send = None
    if pp > 1:
        send = lambda b: comm.collective_us(np.asarray(b, dtype=float) * hidden_size * dtype_bytes, 2,  # noqa: E731
                                            kind="send")
        if _elementwise(comm):
            send.per_b = send  # (exact vectorised, as _tp_comm's)
        parts.append(f"PP{pp} stages, activations sent over {comm.describe()}")
    return IterationModel(
        name=name or folder.name, n_layers=int(n_layers),
        linear_us=lambda b: _interp1(b, xs, lin), once_us=lambda b: _interp1(b, xs, once),
        per_seq_us=lambda n: _interp1(n, sx, sy), attn_us=attn, overhead_us=float(overhead_us),
        comm_us=comm_layer, moe_us=moe, n_moe_layers=n_moe, pipeline_stages=pp, send_us=send,
        tables={"kind": "lss", "lin": (xs, lin), "once": (xs, once), "seq": (sx, sy), "dec": g_dec, "pre": g_pre,
                "mix": g_mix}, skew=skew,
        source=f"LLMServingSim operator profile {folder.name} (TP{tp}), x{n_layers} layers"
               + ("; " + "; ".join(parts) if parts else "")
               + (f"; attention skew from {skew.source}" if skew is not None else ""))


# --------------------------------------------------------------------------------------- Vidur
_VIDUR_LAYER_OPS = ("input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
                    "mlp_up_proj", "mlp_act", "mlp_down_proj", "add")
#: the attention operators a Vidur attention profile may hold besides the kernel itself (``attn_decode``,
#: ``attn_prefill``): the layout changes around it and the KV write, each added to its row's kernel time
_VIDUR_ATTN_EXTRA = ("attn_input_reshape", "attn_output_reshape", "attn_kv_cache_save")


def _vidur_rows(path: Path, need) -> list[dict]:
    """The rows of a Vidur profile CSV, with the columns ``need`` present (a ``DataError`` naming them)."""
    from .loaders import _need, _rows_from_text

    with open_text(path) as f:
        rows = _rows_from_text(f.read(), path)
    _need(rows, need, path)
    return rows


def _vidur_cell(r, col, path, what) -> float:
    """A count of a Vidur profile row (tokens, batch size, width, TP size): a finite number >= 0, or a
    ``DataError`` naming the file, the line and the column."""
    from .loaders import _count

    return _count(r, col, path, what=what)


def _vidur_ms(r, col, path) -> float:
    """A time of a Vidur profile row, ms: an empty cell is 0 (Vidur leaves an operator a kernel did not run
    empty); anything else must be a finite number >= 0 (a negative or NaN time is refused, never summed)."""
    from .loaders import _time

    v = r.get(col)
    if v is None or not str(v).strip():
        return 0.0
    return _time(r, col, path, unit="ms")


def _vidur_ops(columns, path, known) -> list:
    """The operators of a Vidur profile (``time_stats.<op>.median`` columns); one fluidq does not know is a
    :class:`~fluidq.errors.DataError` naming it (issue 16: no operator is dropped silently)."""
    ops = sorted({c.split(".")[1] for c in columns if c.startswith("time_stats.") and c.count(".") >= 2})
    unknown = [op for op in ops if op not in known]
    if unknown:
        raise DataError(f"{path}: unknown operator(s) {', '.join(map(repr, unknown))}; fluidq times "
                        f"{', '.join(sorted(known))} (say how often a decoder layer runs each new one before it can "
                        "be counted)")
    return ops


def vidur_iteration_model(mlp_csv, attention_csv, *, n_layers: int, tp: int = 1, all_reduce_csv=None,
                          per_seq_us: float = 0.0, overhead_us: float = 0.0, name: str = "vidur", comm=None,
                          dtype_bytes: int = 2, collective_launch_us: float = 0.0,
                          decode_batching_overhead: float = 0.0) -> IterationModel:
    """Iteration model from Vidur profiles (times in ms per layer, converted to us).

    With ``tp > 1`` two all-reduces per layer (after attention and after the MLP) of
    ``b * n_embd`` values of ``dtype_bytes`` bytes each are added from ``comm`` (or the measured table
    ``all_reduce_csv``), plus ``collective_launch_us`` per all-reduce (Vidur's
    ``nccl_cpu_launch_overhead_ms``).  ``decode_batching_overhead`` scales decode attention of more
    than one sequence by ``1 + f`` (Vidur's ``attention_decode_batching_overhead_fraction``, applied
    by Vidur to grouped-query models only).  The LM head is not in these profiles; ``per_seq_us`` is
    an optional constant for it.
    """
    if int(n_layers) < 1:
        raise ParameterError("n_layers", n_layers, "an integer >= 1")
    tp = _positive_int("tp", tp, "an integer >= 1")
    f_dec = float(decode_batching_overhead)
    if not (0.0 <= f_dec < 10.0):
        raise ParameterError("decode_batching_overhead", decode_batching_overhead, "a fraction in [0, 10)")
    launch = float(collective_launch_us)
    if not (0.0 <= launch < 1e6):
        raise ParameterError("collective_launch_us", collective_launch_us, "microseconds >= 0")
    mlp_csv = Path(mlp_csv)
    rows = [r for r in _vidur_rows(mlp_csv, ("num_tensor_parallel_workers", "num_tokens", "n_embd"))
            if _vidur_cell(r, "num_tensor_parallel_workers", mlp_csv, "a tensor-parallel size") == int(tp)]
    if not rows:
        raise DataError(f"{mlp_csv}: no rows for tensor-parallel size {tp}")
    _vidur_ops(rows[0].keys(), mlp_csv, set(_VIDUR_LAYER_OPS) | {"emb"})
    rows.sort(key=lambda r: _vidur_cell(r, "num_tokens", mlp_csv, "a token count"))
    xs = np.array([_vidur_cell(r, "num_tokens", mlp_csv, "a token count") for r in rows])
    lin = np.zeros(len(rows))
    for op in _VIDUR_LAYER_OPS:
        col = f"time_stats.{op}.median"
        if col in rows[0]:
            lin += np.array([_vidur_ms(r, col, mlp_csv) for r in rows]) * 1e3
    emb = np.array([_vidur_ms(r, "time_stats.emb.median", mlp_csv) for r in rows]) * 1e3
    n_embd = int(_vidur_cell(rows[0], "n_embd", mlp_csv, "the model width"))
    comm_layer = None
    comm_note = ""
    if tp > 1:
        if comm is None and all_reduce_csv is not None:
            from .comm import MeasuredAllReduce

            comm = MeasuredAllReduce.from_vidur_csv(all_reduce_csv)
        _need_comm(comm, f"tensor parallel size {tp}")
        base = _tp_comm(comm, tp, n_embd, int(dtype_bytes))
        comm_layer = lambda b: base(b) + 2.0 * launch  # noqa: E731
        if getattr(base, "per_b", None) is not None:
            comm_layer.per_b = comm_layer  # (exact vectorised, as _tp_comm's)
        comm_note = f"; 2 all-reduces per layer of b x {n_embd} x {int(dtype_bytes)} bytes ({comm.describe()})"

    attention_csv = Path(attention_csv)
    att = [r for r in _vidur_rows(attention_csv, ("num_tensor_parallel_workers", "is_prefill", "batch_size",
                                                  "prefill_chunk_size", "kv_cache_size"))
           if _vidur_cell(r, "num_tensor_parallel_workers", attention_csv, "a tensor-parallel size") == int(tp)]
    if not att:
        raise DataError(f"{attention_csv}: no rows for tensor-parallel size {tp}")
    extra = [op for op in _vidur_ops(att[0].keys(), attention_csv, {"attn_decode", "attn_prefill",
                                                                    *_VIDUR_ATTN_EXTRA}) if op in _VIDUR_ATTN_EXTRA]

    def extra_ms(r):  # the reshapes and the KV write measured with this row's kernel (empty cells are 0)
        return sum(_vidur_ms(r, f"time_stats.{op}.median", attention_csv) for op in extra)

    A = attention_csv
    dec = np.array([[_vidur_cell(r, "batch_size", A, "a batch size"), _vidur_cell(r, "kv_cache_size", A, "a token count"),
                     _vidur_ms(r, "time_stats.attn_decode.median", A), extra_ms(r)]
                    for r in att if r["is_prefill"] == "False" and r.get("time_stats.attn_decode.median")])
    pre = np.array([[_vidur_cell(r, "prefill_chunk_size", A, "a token count"),
                     _vidur_cell(r, "kv_cache_size", A, "a token count"),
                     _vidur_ms(r, "time_stats.attn_prefill.median", A), extra_ms(r)]
                    for r in att if r["is_prefill"] == "True" and r.get("time_stats.attn_prefill.median")])
    for arr, kind in ((dec, "decode (is_prefill False)"), (pre, "prefill (is_prefill True)")):
        if len(arr) == 0:
            raise DataError(f"{A}: no {kind} rows with a time_stats.attn_{kind.split()[0]}.median time for "
                            f"tensor-parallel size {tp}; expected Vidur's attention profile (both kinds)")
    g_dec = _Grid(dec[:, :2], dec[:, 2] * 1e3, ("batch_size", "kv_cache_size"))
    g_pre = _Grid(pre[:, :2], (pre[:, 2] + pre[:, 3]) * 1e3, ("prefill_chunk_size", "kv_cache_size"))
    # Vidur's decode batching overhead scales the decode kernel alone, not the reshapes around it
    g_dec_x = _Grid(dec[:, :2], dec[:, 3] * 1e3, ("batch_size", "kv_cache_size")) if dec[:, 3].any() else None

    def attn(pc, kp, nd, kv):
        pc, kp, nd, kv = np.broadcast_arrays(*[np.asarray(v, dtype=float) for v in (pc, kp, nd, kv)])
        out = np.zeros(pc.shape)
        d = nd > 0
        p = pc > 0
        if d.any():
            out[d] += g_dec(nd[d], kv[d]) * np.where(nd[d] > 1, 1.0 + f_dec, 1.0)
            if g_dec_x is not None:
                out[d] += g_dec_x(nd[d], kv[d])
        if p.any():
            out[p] += g_pre(pc[p], kp[p])
        return out

    return IterationModel(
        name=name, n_layers=int(n_layers), linear_us=lambda b: _interp1(b, xs, lin),
        once_us=lambda b: _interp1(b, xs, emb), per_seq_us=lambda n: np.full(np.shape(n), float(per_seq_us)),
        attn_us=attn, overhead_us=float(overhead_us), comm_us=comm_layer,
        tables={"kind": "vidur", "lin": (xs, lin), "once": (xs, emb), "per_seq": float(per_seq_us), "f_dec": f_dec,
                "dec": g_dec, "pre": g_pre, "dec_x": g_dec_x},
        source=f"Vidur profiles {Path(mlp_csv).parent.name} (TP{tp}), x{n_layers} layers" + comm_note
               + (f"; attention with {', '.join(extra)}" if extra else ""))


class FittedIterationModel:
    """The :class:`IterationModel` interface over a fitted ``t(b, kv)`` (a :class:`~fluidq.ContextAware`
    or any :class:`~fluidq.BatchTime`): ``b`` = prefill + decode tokens, ``kv`` = the decodes'
    total context.  Prefill attention over prior context is not represented (it is not in
    ``t(b, kv)``)."""

    def __init__(self, batch_time, *, name: str = "fitted", n_layers: int = 1):
        self.batch_time = batch_time
        self.name = name
        self.n_layers = n_layers
        self.source = f"fitted {batch_time.describe()}"

    def linear_us(self, b):
        return np.asarray(self.batch_time(np.asarray(b, dtype=float)), dtype=float) * 1e6 / self.n_layers

    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        pc = np.asarray(prefill_tokens, dtype=float)
        nd = np.asarray(n_decode, dtype=float)
        b = np.maximum(pc + nd, 1.0)
        kv = nd * np.asarray(kv_decode, dtype=float)
        from .models import ContextAware

        if isinstance(self.batch_time, ContextAware):
            return np.asarray(self.batch_time(b, kv), dtype=float)
        return np.asarray(self.batch_time(b), dtype=float)

    def time(self, prefill_chunks=(), decode_contexts=()):
        C = float(sum(c for c, _ in prefill_chunks))
        dc = np.asarray(decode_contexts, dtype=float)
        return float(self.time_shape(C, 0.0, float(dc.size), float(dc.mean()) if dc.size else 0.0))

    def prefill_only(self, tokens):
        return self.time_shape(tokens, 0.0, 0.0, 0.0)

    def decode_only(self, n, kv):
        return self.time_shape(0.0, 0.0, n, kv)
