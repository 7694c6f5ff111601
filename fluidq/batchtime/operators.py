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

Where the parts live
--------------------
This module holds the model: :class:`IterationModel` (with the interpolation it reads, ``_interp1`` and
``_Grid``), the flat table the compiled kernel evaluates (the ``KT_*`` header and ``_kernel_table``, kept in this
file because its contents stamp the compiled kernels' cache, :mod:`fluidq.kernel._jit`), the parallel terms'
communication helpers (``_tp_comm``, ``_need_comm``) and :class:`FittedIterationModel`.  The readers that build a
model from profiles are its siblings, every name re-exported here:

* :mod:`fluidq.batchtime.operators_lss`: :func:`lss_iteration_model` (LLMServingSim's ``profile_tp{N}_*.csv``,
  the MoE experts' table included);
* :mod:`fluidq.batchtime.operators_vidur`: :func:`vidur_iteration_model` (Vidur's ``mlp.csv`` and
  ``attention*.csv``);
* :mod:`fluidq.batchtime.operators_skew`: :class:`AttentionSkew` (LLMServingSim's measured cost of decodes of
  unequal context).

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

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import ParameterError
# the readers, re-exported from their old place (they import this module's model inside their functions)
from .operators_lss import _moe_model, _profile_rows, lss_iteration_model  # noqa: F401
from .operators_skew import _SKEW_AXES, AttentionSkew, _label, _read_csv, _skew_axis  # noqa: F401
from .operators_vidur import (_VIDUR_ATTN_EXTRA, _VIDUR_LAYER_OPS, _vidur_cell, _vidur_ms,  # noqa: F401
                              _vidur_ops, _vidur_rows, vidur_iteration_model)

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
