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

References
----------
Agrawal et al., "Vidur: A Large-Scale Simulation Framework for LLM Inference", arXiv:2405.05465.
Cho et al., "LLMServingSim: A HW/SW Co-Simulation Infrastructure for LLM Inference Serving at
Scale", arXiv:2408.05499.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError, ParameterError
from .._io import open_text

__all__ = ["IterationModel", "FittedIterationModel", "lss_iteration_model", "vidur_iteration_model"]

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
    """

    name: str
    n_layers: int
    linear_us: object = field(repr=False)
    once_us: object = field(repr=False)
    per_seq_us: object = field(repr=False)
    attn_us: object = field(repr=False)
    overhead_us: float = 0.0
    source: str = ""

    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        """Seconds for a batch of one (folded) prefill chunk and ``n_decode`` decodes of mean
        context ``kv_decode``; vectorised.  ``n_emit`` sequences get the LM head (default: the
        decodes plus one if a prefill is present)."""
        pc = np.asarray(prefill_tokens, dtype=float)
        nd = np.asarray(n_decode, dtype=float)
        b = pc + nd
        if n_emit is None:
            n_emit = nd + (pc > 0)
        layer = self.linear_us(b) + self.attn_us(pc, kv_prefill, nd, np.where(nd > 0, kv_decode, 0.0))
        us = self.n_layers * layer + self.once_us(b) + self.per_seq_us(np.maximum(n_emit, 1)) + self.overhead_us
        return np.where(b > 0, us * 1e-6, 0.0)

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
        return float(self.time_shape(C, kv_eff, nd, kvd, n_emit=nd + len(pcs)))

    def prefill_only(self, tokens):
        """Seconds for a prefill-only batch of ``tokens`` prompt tokens with no prior context."""
        return self.time_shape(tokens, 0.0, 0.0, 0.0)

    def decode_only(self, n, kv):
        """Seconds for ``n`` decodes of context ``kv`` each."""
        return self.time_shape(0.0, 0.0, n, kv)


# ----------------------------------------------------------------------------------------- LSS
def _read_csv(path: Path) -> list[dict]:
    with open_text(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise DataError(f"{path}: empty table")
    return rows


def lss_iteration_model(folder, *, n_layers: int, tp: int = 1, overhead_us: float = 0.0,
                        name: str | None = None) -> IterationModel:
    """Iteration model from an LLMServingSim profile folder (``profile_tp{tp}_*.csv``).

    The profiled model has one decoder layer; ``n_layers`` scales it to the served model.
    """
    folder = Path(folder)
    if int(n_layers) < 1:
        raise ParameterError("n_layers", n_layers, "an integer >= 1 (the served model's decoder layers)")
    dense = _read_csv(folder / f"profile_tp{tp}_dense.csv")
    ops: dict[str, list] = {}
    for r in dense:
        ops.setdefault(r["layer"], []).append((float(r["tokens"]), float(r["time_us"])))
    tabs = {}
    for k, v in ops.items():
        v = sorted(v)
        tabs[k] = (np.array([x for x, _ in v]), np.array([y for _, y in v]))
    from .loaders import lss_operator_counts

    # every operator is counted or refused by name (the loaders' one table: qk_norm too, when profiled)
    per_layer, once_ops = lss_operator_counts(tabs, folder / f"profile_tp{tp}_dense.csv")
    # sum the per-layer operators on the common token grid
    xs = tabs["qkv_proj"][0]
    lin = sum(m * _interp1(xs, *tabs[k]) for k, m in per_layer)
    once = sum(_interp1(xs, *tabs[k]) for k in once_ops)
    seq_rows = _read_csv(folder / f"profile_tp{tp}_per_sequence.csv")
    seq: dict[str, list] = {}
    for r in seq_rows:
        seq.setdefault(r["layer"], []).append((float(r["sequences"]), float(r["time_us"])))
    sx = np.array(sorted(x for x, _ in seq["lm_head"]))
    sy = sum(_interp1(sx, *map(np.array, zip(*sorted(v)))) for v in seq.values())

    att = _read_csv(folder / f"profile_tp{tp}_attention.csv")
    A = np.array([[float(r["prefill_chunk"]), float(r["kv_prefill"]), float(r["n_decode"]), float(r["kv_decode"]),
                   float(r["time_us"])] for r in att])
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

    return IterationModel(
        name=name or folder.name, n_layers=int(n_layers),
        linear_us=lambda b: _interp1(b, xs, lin), once_us=lambda b: _interp1(b, xs, once),
        per_seq_us=lambda n: _interp1(n, sx, sy), attn_us=attn, overhead_us=float(overhead_us),
        source=f"LLMServingSim operator profile {folder.name} (TP{tp}), x{n_layers} layers")


# --------------------------------------------------------------------------------------- Vidur
_VIDUR_LAYER_OPS = ("input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
                    "mlp_up_proj", "mlp_act", "mlp_down_proj", "add")


def vidur_iteration_model(mlp_csv, attention_csv, *, n_layers: int, tp: int = 1, all_reduce_csv=None,
                          per_seq_us: float = 0.0, overhead_us: float = 0.0, name: str = "vidur") -> IterationModel:
    """Iteration model from Vidur profiles (times in ms per layer, converted to us).

    With ``tp > 1`` two all-reduces per layer (after attention and after the MLP) of
    ``b * n_embd`` bf16 values are added from ``all_reduce_csv``.  The LM head is not in these
    profiles; ``per_seq_us`` is an optional constant for it.
    """
    if int(n_layers) < 1:
        raise ParameterError("n_layers", n_layers, "an integer >= 1")
    rows = [r for r in _read_csv(Path(mlp_csv)) if int(r["num_tensor_parallel_workers"]) == int(tp)]
    if not rows:
        raise DataError(f"{mlp_csv}: no rows for tensor-parallel size {tp}")
    rows.sort(key=lambda r: float(r["num_tokens"]))
    xs = np.array([float(r["num_tokens"]) for r in rows])
    lin = np.zeros(len(rows))
    for op in _VIDUR_LAYER_OPS:
        col = f"time_stats.{op}.median"
        if col in rows[0]:
            lin += np.array([float(r[col] or 0.0) for r in rows]) * 1e3
    emb = np.array([float(rows[i].get("time_stats.emb.median") or 0.0) for i in range(len(rows))]) * 1e3
    n_embd = int(float(rows[0]["n_embd"]))
    if tp > 1:
        if all_reduce_csv is None:
            raise ParameterError("all_reduce_csv", None, "the all-reduce profile when tp > 1")
        ar = [r for r in _read_csv(Path(all_reduce_csv)) if int(r["num_workers"]) == int(tp)]
        ar.sort(key=lambda r: float(r["size"]))
        ax = np.array([float(r["size"]) for r in ar])
        ay = np.array([float(r["time_stats.all_reduce.median"]) for r in ar]) * 1e3
        lin = lin + 2 * _interp1(xs * n_embd, ax, ay)

    att = [r for r in _read_csv(Path(attention_csv)) if int(r["num_tensor_parallel_workers"]) == int(tp)]
    if not att:
        raise DataError(f"{attention_csv}: no rows for tensor-parallel size {tp}")
    dec = np.array([[float(r["batch_size"]), float(r["kv_cache_size"]), float(r["time_stats.attn_decode.median"])]
                    for r in att if r["is_prefill"] == "False" and r.get("time_stats.attn_decode.median")])
    pre = np.array([[float(r["prefill_chunk_size"]), float(r["kv_cache_size"]),
                     float(r["time_stats.attn_prefill.median"])]
                    for r in att if r["is_prefill"] == "True" and r.get("time_stats.attn_prefill.median")])
    g_dec = _Grid(dec[:, :2], dec[:, 2] * 1e3, ("batch_size", "kv_cache_size"))
    g_pre = _Grid(pre[:, :2], pre[:, 2] * 1e3, ("prefill_chunk_size", "kv_cache_size"))

    def attn(pc, kp, nd, kv):
        pc, kp, nd, kv = np.broadcast_arrays(*[np.asarray(v, dtype=float) for v in (pc, kp, nd, kv)])
        out = np.zeros(pc.shape)
        d = nd > 0
        p = pc > 0
        if d.any():
            out[d] += g_dec(nd[d], kv[d])
        if p.any():
            out[p] += g_pre(pc[p], kp[p])
        return out

    return IterationModel(
        name=name, n_layers=int(n_layers), linear_us=lambda b: _interp1(b, xs, lin),
        once_us=lambda b: _interp1(b, xs, emb), per_seq_us=lambda n: np.full(np.shape(n), float(per_seq_us)),
        attn_us=attn, overhead_us=float(overhead_us),
        source=f"Vidur profiles {Path(mlp_csv).parent.name} (TP{tp}), x{n_layers} layers")


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
