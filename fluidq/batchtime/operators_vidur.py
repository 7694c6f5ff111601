"""The iteration model of Vidur's profiles (:func:`vidur_iteration_model`): ``mlp.csv`` (per-layer operator
medians by tokens and tensor-parallel size), ``attention*.csv`` (decode and prefill attention by batch, chunk and
KV size) and, for ``tp > 1``, an all-reduce table or a link.

Siblings: :mod:`fluidq.batchtime.operators` (the model these build,
:class:`~fluidq.batchtime.operators.IterationModel`, and the module notes on every term);
:mod:`~fluidq.batchtime.operators_lss` and :mod:`~fluidq.batchtime.operators_skew`.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError, ParameterError
from .._io import open_text

if TYPE_CHECKING:
    from .operators import IterationModel


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
    from .operators import IterationModel, _Grid, _interp1, _need_comm, _positive_int, _tp_comm

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
