"""The iteration model of an LLMServingSim profile folder (:func:`lss_iteration_model`): ``profile_tp{N}_dense.csv``,
``_attention.csv``, ``_per_sequence.csv`` and, for a mixture-of-experts model, ``_moe.csv`` (:func:`_moe_model`),
with the tensor-, expert- and pipeline-parallel terms of :mod:`fluidq.batchtime.operators`'s notes.

Siblings: :mod:`fluidq.batchtime.operators` (the model these build,
:class:`~fluidq.batchtime.operators.IterationModel`, and the module notes on every term);
:mod:`~fluidq.batchtime.operators_skew` (:class:`~fluidq.batchtime.operators_skew.AttentionSkew`) and
:mod:`~fluidq.batchtime.operators_vidur`.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError, ParameterError
from .._io import open_text
from .operators_skew import AttentionSkew

if TYPE_CHECKING:
    from .operators import IterationModel


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


def _moe_model(path: Path, *, experts: int, top_k: int, ep: int, dp: int, hidden: int, nbytes: int, comm):
    """Per-MoE-layer microseconds (expert work + dispatch/combine) for ``b`` tokens of one replica
    (see the module docstring: ``T = dp b`` tokens, ``E/ep`` local experts)."""
    from .operators import _Grid, _elementwise, _need_comm

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
    from .operators import IterationModel, _Grid, _elementwise, _interp1, _need_comm, _positive_int, _tp_comm

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
