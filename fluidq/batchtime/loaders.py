"""Readers that turn measured operator profiles into whole-iteration batch times.

Every loader takes a path (a file or a run folder; nothing is looked up in a fixed place) and
returns a frozen :class:`MeasuredBatchTimes`: one row per *engine iteration* that the profile lets
us reconstruct, with

* ``tokens``    -- batch tokens ``b`` of the iteration (prefill chunk tokens + one per decode),
* ``seconds``   -- the whole-iteration time in seconds (all layers, plus the once-per-iteration
  parts the profile measured),
* ``kv_tokens`` -- cached KV tokens read by decode attention (sum over the decoding requests of
  their context), or ``None`` when the profile has no attention measurements,
* ``phase``     -- per row ``"linear"`` (linear operators only, no attention measured),
  ``"prefill"``, ``"decode"`` or ``"mixed"``,
* ``meta``      -- a :class:`ProfileMeta` (source repository, commit, path, GPU, model, TP size,
  layer count, license, engine limits when the run states them, notes on caveats).

API (stable; the validation suite builds on it)::

    load_vidur(mlp_path, *, tp=1, n_layers=None, attention_path=None, statistic="median",
               gpu=None, model=None)                       -> MeasuredBatchTimes
    load_llmservingsim(run_dir, *, tp=None, n_layers=None, include_prefill_context=False)
                                                           -> MeasuredBatchTimes
    load_splitwise(path, *, model="llama2-70b", hardware="a100-80gb", tp=8)
                                                           -> MeasuredBatchTimes
    load_sarathi_figure2(folder_or_decode_csv)             -> MeasuredBatchTimes  (decode + prefill)
    load_sarathi_table2(path)                              -> MeasuredBatchTimes  (hybrid batch)
    load_measured(path, **kw)                              -> MeasuredBatchTimes  (detects the format)

    MeasuredBatchTimes.where(phase=("prefill", "decode"))  -> MeasuredBatchTimes (row subset)
    MeasuredBatchTimes.token_series()                      -> (tokens, seconds), strictly
                                                              increasing tokens, repeats averaged
    MeasuredBatchTimes.to_dict()

How each source becomes an iteration time
-----------------------------------------
Vidur ``mlp.csv`` (ms per decoder layer, by ``num_tokens`` and ``num_tensor_parallel_workers``):
    ``t(b) = emb(b) + L * [2*layernorm + attn_pre_proj + attn_rope + attn_post_proj + mlp_up_proj
    + mlp_act + mlp_down_proj + 2*add](b)`` (``phase="linear"``); with an attention profile
    (``attention_subset.csv`` or the legacy ``attention.csv``) also prefill rows (one chunk of
    ``b`` tokens with no prior context: ``+ L*attn_prefill``) and decode rows (``b`` requests of
    context ``kv`` each: ``+ L*attn_decode``, ``kv_tokens = b*kv``).  Tensor-parallel all-reduce,
    the LM head and sampling are not in these files and are not added.
LLMServingSim (µs, a model with one hidden layer): ``embedding + final_layernorm`` once,
    ``L * [2*layernorm + qkv_proj + (qk_norm, when profiled) + rotary_emb + o_proj + gate_up_proj +
    act_fn + down_proj + attention]`` and the per-sequence ``lm_head + sampler`` for the sequences
    that emit a token.  Any other operator in the dense profile is refused by name (none is dropped).
    Attention rows ``(prefill_chunk, kv_prefill, n_decode, kv_decode)`` give
    ``b = prefill_chunk + n_decode`` and ``kv_tokens = n_decode*kv_decode`` (``kv_decode`` is the
    context of each decoding request: the measured time depends on the product).  Rows whose
    prefill chunk has prior context are left out unless ``include_prefill_context=True`` (their
    cost is not a function of ``(b, kv_tokens)``).  Engine limits come from ``vllm_meta.json``.
Splitwise ``perf_model.csv`` (ms, whole model): a prompt row is one iteration of
    ``prompt_size*batch_size`` tokens taking ``prompt_time``; a token row is one decode
    iteration of ``batch_size`` tokens taking ``token_time``, with ``kv_tokens`` =
    ``batch_size*(prompt_size + token_size/2)`` (the mean context over the generation).  The
    ``*-pcap`` hardware rows are power-capped copies derived from the uncapped ones; the loader
    says so in ``meta.notes``.
Sarathi-Serve (Yi-34B, TP2, two A100s): figure 2 decode and prefill batch times; table 2 the
    hybrid batch (1021 prefill + 3 decode tokens) next to the pure ones.  Units are detected
    from the per-token column (figure 2 is in seconds, table 2 in milliseconds).

References
----------
Agrawal et al., "Vidur: A Large-Scale Simulation Framework For LLM Inference", arXiv:2405.05465.
Cho et al., "LLMServingSim 2.0" (casys-kaist/LLMServingSim).
Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting",
arXiv:2311.18677.
Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve",
arXiv:2403.02310.
"""
from __future__ import annotations

import csv
import io
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import input_file, json_loads, read_bytes, read_text
from .._validate import integer
from ..errors import DataError, ParameterError, ParameterTypeError, UnknownNameError
from ._yaml import read_profile_meta, scalar_text

__all__ = ["ProfileMeta", "MeasuredBatchTimes", "load_vidur", "load_llmservingsim", "load_splitwise",
           "load_sarathi_figure2", "load_sarathi_table2", "load_measured", "PHASES"]

PHASES = ("linear", "prefill", "decode", "mixed")


# --------------------------------------------------------------------------------------------
# result objects


@dataclass(frozen=True, kw_only=True)
class ProfileMeta:
    """Where a measured profile comes from and what it describes.

    Attributes
    ----------
    source : str
        Upstream repository (``owner/name``).
    commit : str or None
        Upstream commit and date, read from a ``SOURCE_COMMIT`` file beside or above the path.
    path : str
        The file or folder read (as given).
    gpu, model : str
    tp : int
        Tensor-parallel size of the measurement.
    n_layers : int or None
        Decoder layers the per-layer times were multiplied by (``None`` for whole-model data).
    license : str
    b_max, k_max, kv_capacity_tokens : int or None
        The engine limits of the run, when the source states them (vLLM ``max_num_batched_tokens``,
        ``max_num_seqs``, KV-cache tokens).
    notes : tuple of str
        Caveats: what is not included, derived rows, anomalies.
    """

    source: str
    commit: str | None = None
    path: str = ""
    gpu: str = ""
    model: str = ""
    tp: int = 1
    n_layers: int | None = None
    license: str = ""
    b_max: int | None = None
    k_max: int | None = None
    kv_capacity_tokens: int | None = None
    notes: tuple = ()

    def to_dict(self) -> dict:
        return {"source": self.source, "commit": self.commit, "path": self.path, "gpu": self.gpu,
                "model": self.model, "tp": self.tp, "n_layers": self.n_layers, "license": self.license,
                "b_max": self.b_max, "k_max": self.k_max, "kv_capacity_tokens": self.kv_capacity_tokens,
                "notes": list(self.notes)}


def _frozen(arr, dtype=float):
    a = np.array(arr, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, kw_only=True, eq=False)
class MeasuredBatchTimes:
    """Whole-iteration batch times reconstructed from a measured profile.

    Parameters
    ----------
    tokens : array of float
        Batch tokens per iteration (>= 1).
    seconds : array of float
        Iteration time in seconds (> 0).
    kv_tokens : array of float or None
        Cached KV tokens read by decode attention per iteration (``None``: not measured).
    phase : array of str
        One of :data:`PHASES` per row.
    meta : ProfileMeta
    """

    tokens: np.ndarray
    seconds: np.ndarray
    kv_tokens: np.ndarray | None
    phase: np.ndarray
    meta: ProfileMeta

    def __post_init__(self):
        t = np.asarray(self.tokens, dtype=float)
        s = np.asarray(self.seconds, dtype=float)
        ph = np.asarray(self.phase, dtype=object)
        if t.ndim != 1 or t.size == 0:
            raise DataError(f"tokens: expected a non-empty 1-d array, got shape {t.shape} "
                            f"(nothing usable in {self.meta.path or 'the profile'})")
        n = t.size
        if s.shape != (n,) or ph.shape != (n,):
            raise DataError(f"tokens, seconds and phase have different lengths ({n}, {s.size}, {ph.size})")
        if not (np.all(np.isfinite(t)) and np.all(t >= 1)):
            raise DataError("tokens: expected finite token counts >= 1")
        if not (np.all(np.isfinite(s)) and np.all(s > 0)):
            raise DataError("seconds: expected finite times > 0")
        bad = [p for p in set(ph.tolist()) if p not in PHASES]
        if bad:
            raise ParameterError("phase", bad[0], f"one of {PHASES}")
        object.__setattr__(self, "tokens", _frozen(t))
        object.__setattr__(self, "seconds", _frozen(s))
        object.__setattr__(self, "phase", _frozen(ph, dtype=object))
        if self.kv_tokens is not None:
            kv = np.asarray(self.kv_tokens, dtype=float)
            if kv.shape != (n,):
                raise DataError(f"kv_tokens has {kv.size} rows, tokens {n}")
            if not (np.all(np.isfinite(kv)) and np.all(kv >= 0)):
                raise DataError("kv_tokens: expected finite token counts >= 0")
            object.__setattr__(self, "kv_tokens", _frozen(kv))

    def __len__(self) -> int:
        return int(self.tokens.size)

    def where(self, phase=None) -> "MeasuredBatchTimes":
        """The rows whose phase is ``phase`` (a name or a sequence of names)."""
        if phase is None:
            return self
        names = (phase,) if isinstance(phase, str) else tuple(phase)
        for p in names:
            if p not in PHASES:
                raise ParameterError("phase", p, f"one of {PHASES}")
        mask = np.isin(self.phase, names)
        if not mask.any():
            raise DataError(f"no rows with phase in {names} in {self.meta.path or 'the profile'} "
                            f"(phases present: {sorted(set(self.phase.tolist()))})")
        kv = None if self.kv_tokens is None else self.kv_tokens[mask]
        return MeasuredBatchTimes(tokens=self.tokens[mask], seconds=self.seconds[mask], kv_tokens=kv,
                                  phase=self.phase[mask], meta=self.meta)

    def token_series(self) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens, seconds)`` with strictly increasing tokens; repeated sizes are averaged.

        Meaningful for rows whose time depends on ``b`` alone (``phase="linear"`` or
        ``"prefill"``); for decode rows it averages over the measured contexts.
        """
        return _average_repeats(self.tokens, self.seconds)

    def to_dict(self) -> dict:
        return {"tokens": self.tokens.tolist(), "seconds": self.seconds.tolist(),
                "kv_tokens": None if self.kv_tokens is None else self.kv_tokens.tolist(),
                "phase": self.phase.tolist(), "meta": self.meta.to_dict()}


def _average_repeats(x, y):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ux, inv = np.unique(x, return_inverse=True)
    sums = np.bincount(inv, weights=y)
    counts = np.bincount(inv)
    return ux, sums / counts


# --------------------------------------------------------------------------------------------
# small file helpers


def _path(name: str, path) -> Path:
    """``path`` as a ``Path`` that names an existing regular file or folder (a FIFO, a device, a
    symlink loop, a name too long are each one ``DataError``; a missing path a ``FileNotFoundError``)."""
    if isinstance(path, bool) or not isinstance(path, (str, Path)):
        raise ParameterError(name, path, "a path (str or pathlib.Path)")
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}={str(p)!r}: no such file or folder") from None
    except (OSError, ValueError):
        input_file(name, p)  # says why (a loop, a name too long...)
        raise  # pragma: no cover - input_file raised
    if not stat.S_ISDIR(st.st_mode):
        input_file(name, p)  # a FIFO or a device is refused before anything opens it
    return p


class _Row(dict):
    """One row of a profile CSV (a ``dict`` of its cells) that knows its ``line`` in the file, so that a
    bad cell is reported by line."""

    __slots__ = ("line",)


def _rows_from_text(text: str, path) -> list[dict]:
    """The data rows of a CSV text as :class:`_Row` dicts (blank rows and repeated header rows skipped)."""
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = []
        for r in reader:
            if r and any(v not in (None, "") for v in r.values()):
                row = _Row(r)
                row.line = reader.line_num
                rows.append(row)
        header = reader.fieldnames
    except csv.Error as exc:
        raise DataError(f"{path}: not a CSV file ({exc})") from None
    if not header:
        raise DataError(f"{path}: empty file (no header row)")
    if not rows:
        raise DataError(f"{path}: header but no data rows")
    # a header line repeated inside the file (concatenated profiles) is skipped
    first = header[0]
    return [r for r in rows if r.get(first) != first]


def _read_csv(path: Path) -> list[dict]:
    return _rows_from_text(read_text("profile", path, what="CSV file"), path)


def _text_or_none(path: Path) -> str | None:
    """The text of a side file (SOURCE_COMMIT, LICENSE), undecodable bytes
    replaced; ``None`` when it cannot be read (it only adds provenance)."""
    try:
        return read_bytes("profile", path, max_bytes=1 << 20).decode("utf-8", errors="replace")
    except DataError:
        return None


def _need(rows: list[dict], cols, path: Path) -> None:
    missing = [c for c in cols if c not in rows[0]]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}")


def _where(row: dict, col: str, path) -> str:
    """``path, line N: column 'c' (operator 'x')`` for a cell of ``row``."""
    line = getattr(row, "line", None)
    op = row.get("layer")
    return (f"{path}" + (f", line {line}" if line else "") + f": column {col!r}"
            + (f" (operator {op!r})" if isinstance(op, str) and op and col != "layer" else ""))


def _num(row: dict, col: str, path: Path, *, allow_empty: bool = False, minimum: float | None = None,
         expected: str = "a finite number") -> float:
    """The number in ``row[col]``; a missing, non-numeric, non-finite or (with ``minimum``) too small value is a
    ``DataError`` naming the file, the line, the column (and the operator) and ``expected``."""
    v = row.get(col)
    if v is None or (isinstance(v, str) and not v.strip()):
        if allow_empty:
            return math.nan
        raise DataError(f"{_where(row, col, path)} is empty; expected {expected}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise DataError(f"{_where(row, col, path)} has {v!r}, not a number; expected {expected}") from None
    if not math.isfinite(x):
        raise DataError(f"{_where(row, col, path)} has {v!r}, not a finite number; expected {expected}")
    if minimum is not None and x < minimum:
        raise DataError(f"{_where(row, col, path)} has {v!r}; expected {expected}")
    return x


#: what a profiled time must be (a negative one would make an iteration cheaper than nothing)
TIME_EXPECTED = "a measured time >= 0"


def _time(row: dict, col: str, path, *, unit: str = "microseconds", allow_empty: bool = False) -> float:
    """A measured time: a finite number >= 0 (negative or NaN times are refused, never summed)."""
    return _num(row, col, path, minimum=0.0, allow_empty=allow_empty, expected=f"{TIME_EXPECTED} ({unit})")


def _count(row: dict, col: str, path, *, what: str = "a count") -> float:
    """A token, sequence or worker count: a finite number >= 0."""
    return _num(row, col, path, minimum=0.0, expected=f"{what} >= 0")


def _find_up(start: Path, name: str, levels: int = 5) -> Path | None:
    d = start if start.is_dir() else start.parent
    for _ in range(levels):
        cand = d / name
        if cand.is_file():
            return cand
        if d.parent == d:
            break
        d = d.parent
    return None


def _commit(start: Path) -> str | None:
    p = _find_up(start, "SOURCE_COMMIT")
    if p is None:
        return None
    text = (_text_or_none(p) or "").strip()
    return text.splitlines()[0].strip()[:200] if text else None


def _license(start: Path, default: str) -> str:
    p = _find_up(start, "LICENSE")
    if p is None:
        return default
    head = (_text_or_none(p) or "").lstrip()[:400].lower()
    if "apache license" in head:
        return "Apache-2.0"
    if "mit license" in head or "permission is hereby granted" in head:
        return "MIT"
    if "creative commons" in head or "cc-by" in head:
        return "CC-BY-4.0"
    return default


def _interp(x_grid, y_grid, x, *, what: str, path) -> np.ndarray:
    """Linear interpolation inside the measured grid; outside it is an error."""
    x = np.asarray(x, dtype=float)
    lo, hi = x_grid[0], x_grid[-1]
    if np.any(x < lo) or np.any(x > hi):
        bad = x[(x < lo) | (x > hi)].ravel()[0]
        raise DataError(f"{path}: {what} needed at {bad:g}, outside the measured range [{lo:g}, {hi:g}]")
    return np.interp(x, x_grid, y_grid)


# --------------------------------------------------------------------------------------------
# Vidur

# (n_embd, n_expanded_embd) -> (model, decoder layers)
_VIDUR_SHAPES = {
    (4096, 11008): ("Llama-2-7B", 32),
    (8192, 22016): ("CodeLlama-34B", 48),
    (8192, 28672): ("Llama-2-70B", 80),
    (4096, 14336): ("Llama-3-8B", 32),
}
_VIDUR_PER_LAYER = (("input_layernorm", 1), ("attn_pre_proj", 1), ("attn_rope", 1), ("attn_post_proj", 1),
                    ("post_attention_layernorm", 1), ("mlp_up_proj", 1), ("mlp_act", 1), ("mlp_down_proj", 1),
                    ("add", 2))
_VIDUR_GPUS = {"a100": "A100-80GB", "h100": "H100-80GB", "a40": "A40"}


def load_vidur(mlp_path, *, tp: int = 1, n_layers: int | None = None, attention_path=None,
               statistic: str = "median", gpu: str | None = None, model: str | None = None) -> MeasuredBatchTimes:
    """Whole-iteration times from a Vidur ``mlp.csv`` (and optionally an attention profile).

    Parameters
    ----------
    mlp_path : path
        Vidur's per-layer linear-operator profile (ms per layer).
    tp : int
        Tensor-parallel size to read (``num_tensor_parallel_workers``).
    n_layers : int, optional
        Decoder layers; inferred from the model shape for Llama-2-7B/70B, CodeLlama-34B, Llama-3-8B.
    attention_path : path, optional
        ``attention.csv`` / ``attention_subset.csv`` of the same model, GPU and TP size.
    statistic : {"median", "mean", "min", "max"}
        Which per-operator statistic to use.
    gpu, model : str, optional
        Override the names inferred from the path and the model shape.
    """
    p = _path("mlp_path", mlp_path)
    tp = integer("tp", tp, minimum=1)
    if statistic not in ("median", "mean", "min", "max"):
        raise ParameterError("statistic", statistic, "'median', 'mean', 'min' or 'max'")
    rows = _read_csv(p)
    cols = [f"time_stats.{op}.{statistic}" for op, _ in _VIDUR_PER_LAYER] + [f"time_stats.emb.{statistic}"]
    _need(rows, cols + ["num_tokens", "num_tensor_parallel_workers", "n_embd", "n_expanded_embd"], p)
    sel = [r for r in rows if int(_num(r, "num_tensor_parallel_workers", p)) == tp]
    if not sel:
        have = sorted({int(_num(r, "num_tensor_parallel_workers", p)) for r in rows})
        raise ParameterError("tp", tp, f"a tensor-parallel size present in {p.name} ({have})")
    shapes = {(int(_num(r, "n_embd", p)), int(_num(r, "n_expanded_embd", p))) for r in sel}
    if len(shapes) != 1:
        raise DataError(f"{p}: several model shapes in one file ({sorted(shapes)})")
    shape = shapes.pop()
    known_model, known_layers = _VIDUR_SHAPES.get(shape, ("", None))
    if n_layers is None:
        if known_layers is None:
            raise ParameterError("n_layers", None, "the decoder-layer count", f"model shape {shape} is not one "
                                 "fluidq knows; pass n_layers")
        n_layers = known_layers
    n_layers = integer("n_layers", n_layers, minimum=1)
    tok = np.array([_count(r, "num_tokens", p, what="a token count") for r in sel])
    per_layer_ms = np.zeros(tok.size)
    for op, mult in _VIDUR_PER_LAYER:
        per_layer_ms += mult * np.array([_time(r, f"time_stats.{op}.{statistic}", p, unit="ms") for r in sel])
    emb_ms = np.array([_time(r, f"time_stats.emb.{statistic}", p, unit="ms") for r in sel])
    tok_u, per_u = _average_repeats(tok, per_layer_ms)
    _, emb_u = _average_repeats(tok, emb_ms)
    lin_s = (emb_u + n_layers * per_u) / 1e3
    notes = ["linear operators only in 'linear' rows (no attention)",
             "tensor-parallel all-reduce, LM head and sampling not included"]
    if tok.size != tok_u.size:
        notes.append(f"{tok.size - tok_u.size} repeated token counts averaged")
    tokens = [tok_u]
    seconds = [lin_s]
    kv = [np.zeros(tok_u.size)]
    phase = [np.full(tok_u.size, "linear", dtype=object)]

    if attention_path is not None:
        ap = _path("attention_path", attention_path)
        arows = _read_csv(ap)
        _need(arows, ["num_tensor_parallel_workers", "batch_size", "prefill_chunk_size", "kv_cache_size",
                      "is_prefill", "time_stats.attn_decode.median", "time_stats.attn_prefill.median"], ap)
        stat_cols = {k: f"time_stats.attn_{k}.{statistic}" for k in ("decode", "prefill")}
        if stat_cols["decode"] not in arows[0]:
            stat_cols = {k: f"time_stats.attn_{k}.median" for k in ("decode", "prefill")}
            notes.append(f"attention profile has no {statistic!r} statistic; median used")
        arows = [r for r in arows if int(_num(r, "num_tensor_parallel_workers", ap)) == tp]
        if not arows:
            raise ParameterError("tp", tp, f"a tensor-parallel size present in {ap.name}")

        def lin_at(b):
            emb = _interp(tok_u, emb_u, b, what="linear-operator time", path=p)
            per = _interp(tok_u, per_u, b, what="linear-operator time", path=p)
            return (emb + n_layers * per) / 1e3

        pre = [(_count(r, "prefill_chunk_size", ap, what="a token count"), _time(r, stat_cols["prefill"], ap, unit="ms"))
               for r in arows if r["is_prefill"].strip().lower() == "true"
               and _count(r, "kv_cache_size", ap, what="a token count") == 0]
        if pre:
            b, ms = _average_repeats(*np.array(pre).T)
            keep = b <= tok_u[-1]
            b, ms = b[keep], ms[keep]
            tokens.append(b)
            seconds.append(lin_at(b) + n_layers * ms / 1e3)
            kv.append(np.zeros(b.size))
            phase.append(np.full(b.size, "prefill", dtype=object))
        dec = [(_count(r, "batch_size", ap, what="a batch size"), _count(r, "kv_cache_size", ap, what="a token count"),
                _time(r, stat_cols["decode"], ap, unit="ms"))
               for r in arows if r["is_prefill"].strip().lower() != "true"]
        if dec:
            d = np.array(dec)
            key = d[:, 0] * 1e7 + d[:, 1]
            uk, inv = np.unique(key, return_inverse=True)
            ms = np.bincount(inv, weights=d[:, 2]) / np.bincount(inv)
            bs, ctx = np.floor(uk / 1e7), uk - np.floor(uk / 1e7) * 1e7
            keep = bs <= tok_u[-1]
            bs, ctx, ms = bs[keep], ctx[keep], ms[keep]
            tokens.append(bs)
            seconds.append(lin_at(bs) + n_layers * ms / 1e3)
            kv.append(bs * ctx)
            phase.append(np.full(bs.size, "decode", dtype=object))
        notes[0] = "attention added from " + ap.name + " (prefill rows: chunks with no prior context)"
    gpu_name = gpu or next((v for part in reversed(p.parts) for k, v in _VIDUR_GPUS.items() if k in part.lower()), "")
    meta = ProfileMeta(source="microsoft/vidur", commit=_commit(p), path=str(p), gpu=gpu_name,
                       model=model or known_model, tp=tp, n_layers=n_layers, license=_license(p, "MIT"),
                       notes=tuple(notes))
    return MeasuredBatchTimes(tokens=np.concatenate(tokens), seconds=np.concatenate(seconds),
                              kv_tokens=np.concatenate(kv) if attention_path is not None else None,
                              phase=np.concatenate(phase), meta=meta)


# --------------------------------------------------------------------------------------------
# LLMServingSim

_LSS_ONCE = ("embedding", "final_layernorm")
_LSS_PER_LAYER = (("layernorm", 2), ("qkv_proj", 1), ("rotary_emb", 1), ("o_proj", 1), ("gate_up_proj", 1),
                  ("act_fn", 1), ("down_proj", 1))
#: operators a decoder layer has only in some families, used when the profile has them (Qwen3's RMS
#: norm of the queries and keys, one entry for both, once per layer)
_LSS_OPTIONAL_PER_LAYER = (("qk_norm", 1),)
# every other operator in a dense profile is refused by name (issue 16: none is dropped silently)


def lss_operator_counts(names, path, *, moe: bool = False) -> tuple[tuple, tuple]:
    """``(per_layer, once)`` for the operators an LLMServingSim dense profile holds: ``per_layer`` the
    ``(operator, runs per decoder layer)`` pairs (Qwen3's ``qk_norm`` when profiled), ``once`` the
    operators run once per iteration.  A missing required operator or an unknown one is a
    :class:`~fluidq.errors.DataError` naming it and ``path`` (the one operator table of fluidq's readers)."""
    names = set(names)
    # a MoE model's MLP is its experts (profile_tp{N}_moe.csv), so its dense profile has no MLP rows
    mlp = {"gate_up_proj", "act_fn", "down_proj"} if moe else set()
    need = list(_LSS_ONCE) + [op for op, _ in _LSS_PER_LAYER if op not in mlp]
    missing = [op for op in need if op not in names]
    if missing:
        raise DataError(f"{path}: missing layer(s) {', '.join(missing)}")
    known = set(_LSS_ONCE) | {op for op, _ in _LSS_PER_LAYER} | {op for op, _ in _LSS_OPTIONAL_PER_LAYER}
    unknown = sorted(names - known)
    if unknown:  # an operator fluidq does not know how often a layer runs: never dropped silently
        raise DataError(f"{path}: unknown operator(s) {', '.join(map(repr, unknown))}; fluidq times "
                        f"{', '.join(sorted(known))} (say how often a decoder layer runs each new one before it "
                        "can be counted)")
    per_layer = tuple((op, m) for op, m in _LSS_PER_LAYER if op in need or op in names) + tuple(
        (op, m) for op, m in _LSS_OPTIONAL_PER_LAYER if op in names)
    return per_layer, tuple(_LSS_ONCE)


#: the operators of an LLMServingSim per-sequence profile (run once per emitting sequence)
LSS_PER_SEQUENCE = ("lm_head", "sampler")


def lss_per_sequence_check(names, path) -> None:
    """Refuse a per-sequence profile without one of :data:`LSS_PER_SEQUENCE` (a ``DataError`` naming the file
    and the operator): without the LM head every emitting sequence would cost nothing."""
    missing = [op for op in LSS_PER_SEQUENCE if op not in set(names)]
    if missing:
        raise DataError(f"{path}: no rows for operator(s) {', '.join(map(repr, missing))} in column 'layer'; "
                        f"expected rows for {', '.join(LSS_PER_SEQUENCE)} (LLMServingSim's per-sequence profile: "
                        "the LM head and the sampler, timed per number of sequences)")


def lss_profile_rows(path, text: str, cols, *, text_cols=(), times=("time_us",)) -> list[dict]:
    """The rows of an LLMServingSim profile table (``text`` read from ``path``), each of ``cols`` checked:
    the ``times`` columns a finite time >= 0 in microseconds, the others a finite count >= 0; the ``text_cols``
    (``layer``) must be there and stay text (a missing column, a non-number,
    a negative or NaN time is a ``DataError`` naming the file, the line, the column and the operator).
    Each returned row maps every column of ``cols`` to its float."""
    rows = _rows_from_text(text, path)
    _need(rows, tuple(text_cols) + tuple(cols), path)
    for r in rows:  # (each row is this call's own dict: its cells are replaced by their numbers)
        for c in cols:
            r[c] = _time(r, c, path) if c in times else _count(r, c, path, what="a token or sequence count")
    counts = [c for c in cols if c not in times]
    if "layer" in text_cols and counts:  # an operator table: one row per (operator, size), no wild drop
        _one_row_per_size(rows, path, counts)
        if len(counts) == 1 and len(times) == 1 and times[0] in cols:
            _no_wild_drop(rows, path, counts[0], times[0])
    return rows


#: an operator's time may fall by at most this factor from one measured size to the next larger one (the
#: shipped profiles' largest fall is 2.25x, embedding 16 -> 20 tokens; an outlier such as qkv_proj,256 = 99999 us
#: falls about 600x and made "each prompt adds -945.74 ms", a capacity of 1,724 tokens/s instead of 6,923)
MAX_TIME_DROP = 10.0


def _one_row_per_size(rows, path, counts) -> None:
    """Refuse an operator measured twice at one size (naming the file, operator, size and both lines), as
    ``fluidq fit`` refuses a repeated size: they were averaged silently."""
    seen = {}
    for r in rows:
        key = (r["layer"],) + tuple(r[c] for c in counts)
        if key in seen:
            size = ", ".join(f"{c}={r[c]:g}" for c in counts)
            raise DataError(f"{path}: operator {r['layer']!r} has {size} on lines {seen[key]} and "
                            f"{getattr(r, 'line', '?')}: expected one row per operator and size; average repeated "
                            "measurements of a size into one row")
        seen[key] = getattr(r, "line", "?")


def _no_wild_drop(rows, path, col, tcol) -> None:
    """Refuse an operator whose time falls more than :data:`MAX_TIME_DROP`-fold from one measured size to the
    next larger one: an outlier that makes the interpolated per-token cost negative (naming the operator and
    both rows)."""
    ops: dict = {}
    for r in rows:
        ops.setdefault(r["layer"], []).append(r)
    for op, rs in ops.items():
        rs = sorted(rs, key=lambda r: r[col])
        for a, b in zip(rs, rs[1:]):
            if b[tcol] * MAX_TIME_DROP < a[tcol]:
                raise DataError(
                    f"{path}: operator {op!r} takes {a[tcol]:g} us at {col}={a[col]:g} (line {getattr(a, 'line', '?')}) "
                    f"but {b[tcol]:g} us at {col}={b[col]:g} (line {getattr(b, 'line', '?')}): a time that falls more "
                    f"than {MAX_TIME_DROP:g}-fold with more {col} is not physical (between them each {col[:-1]} "
                    f"would cost {(b[tcol] - a[tcol]) / (b[col] - a[col]):.4g} us, a negative cost); an outlier? "
                    "re-measure or correct the row")


def _layers_for(model: str) -> int | None:
    """The decoder-layer count of ``model`` (a Hugging Face id such as ``meta-llama/Llama-3.1-8B``) from
    the shipped model facts (:func:`fluidq.models.find_model`)."""
    from ..models import find_model

    m = find_model(model)
    return None if m is None else m.n_layers


def load_llmservingsim(run_dir, *, tp: int | None = None, n_layers: int | None = None,
                       include_prefill_context: bool = False) -> MeasuredBatchTimes:
    """Whole-iteration times from an LLMServingSim run folder (``<GPU>_<model>/``).

    Parameters
    ----------
    run_dir : path
        Folder with ``profile_tp{tp}_dense.csv``, ``profile_tp{tp}_attention.csv``,
        ``profile_tp{tp}_per_sequence.csv`` and optionally ``profile_meta.yaml`` and
        ``vllm_meta.json``.
    tp : int, optional
        Tensor-parallel size; default the run's (``vllm_meta.json``) or 1.
    n_layers : int, optional
        Decoder layers of the served model; inferred for known Llama models.
    include_prefill_context : bool
        Keep attention rows whose prefill chunk has prior context (``kv_prefill > 0``).
    """
    d = _path("run_dir", run_dir)
    if not d.is_dir():
        raise ParameterError("run_dir", str(d), "a run folder with profile_tp*_dense.csv")
    vmeta = {}
    meta_path = d / "vllm_meta.json"
    if meta_path.is_file():
        vmeta = json_loads(read_text("profile", meta_path, what="JSON file"), where=str(meta_path))
        if not isinstance(vmeta, dict):
            raise DataError(f"{meta_path}: expected a JSON object")
    ek = vmeta.get("engine_kwargs") or {}
    if not isinstance(ek, dict):
        raise DataError(f"{meta_path}: engine_kwargs is not an object")

    def meta_int(key, value, minimum=1):
        if value is None:
            return None
        try:
            return integer(key, value, minimum=minimum)
        except (ParameterError, ParameterTypeError) as exc:
            raise DataError(f"{meta_path}: {exc}") from None

    if tp is None:
        tp = meta_int("tensor_parallel_size", ek.get("tensor_parallel_size") or 1)
    tp = integer("tp", tp, minimum=1)
    files = {k: d / f"profile_tp{tp}_{k}.csv" for k in ("dense", "attention", "per_sequence")}
    for k, f in files.items():
        if not f.is_file():
            raise FileNotFoundError(f"run_dir={str(d)!r}: no {f.name} (tp={tp})")
    # profile_meta.yaml read whole (an invalid file is refused naming its line and column); its model and GPU are
    # names, read as text where YAML typed them otherwise (before h-tidy5 a reader of top-level lines returned text)
    pmeta = read_profile_meta(d)
    model = str(vmeta.get("model") or scalar_text(pmeta.get("model")) or "")
    if n_layers is None:
        n_layers = _layers_for(model)
        if n_layers is None:
            raise ParameterError("n_layers", None, "the decoder-layer count",
                                 f"model {model!r} is not one fluidq knows; pass n_layers")
    n_layers = integer("n_layers", n_layers, minimum=1)

    def table(f, cols, text_cols=()):  # the one check of an LLMServingSim table (also the iteration model's)
        return lss_profile_rows(f, read_text("profile", f, what="CSV file"), cols, text_cols=text_cols)

    ops = {}
    for r in table(files["dense"], ("tokens", "time_us"), ("layer",)):
        ops.setdefault(r["layer"], []).append((r["tokens"], r["time_us"]))
    per_layer, once_ops = lss_operator_counts(ops, files["dense"])
    need = list(once_ops) + [op for op, _ in per_layer]
    grids = {op: _average_repeats(*np.array(v).T) for op, v in ops.items()}
    tok_grid = grids["qkv_proj"][0]
    for op in need:
        if not np.array_equal(grids[op][0], tok_grid):
            raise DataError(f"{files['dense']}: layer {op!r} measured at other token counts than qkv_proj")

    def dense_us(b):
        b = np.asarray(b, dtype=float)
        once = sum(_interp(tok_grid, grids[op][1], b, what=op, path=files["dense"]) for op in once_ops)
        layer = sum(m * _interp(tok_grid, grids[op][1], b, what=op, path=files["dense"]) for op, m in per_layer)
        return once + n_layers * layer

    pops = {}
    for r in table(files["per_sequence"], ("sequences", "time_us"), ("layer",)):
        pops.setdefault(r["layer"], []).append((r["sequences"], r["time_us"]))
    lss_per_sequence_check(pops, files["per_sequence"])
    pgrids = {op: _average_repeats(*np.array(v).T) for op, v in pops.items()}
    notes = ["LM head and sampler per emitting sequence from the per-sequence profile"]

    def per_seq_us(s):
        s = np.asarray(s, dtype=float)
        total = np.zeros_like(s)
        for op, (x, y) in pgrids.items():
            v = np.interp(s, x, y)
            if x.size >= 2:  # one sequence beyond the grid (a prefill next to 256 decodes): linear
                slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
                v = np.where(s > x[-1], y[-1] + slope * (s - x[-1]), v)
            total = total + v
        return total

    cols = ["prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us"]
    a = np.array([[r[c] for c in cols] for r in table(files["attention"], cols)])
    pc, kvp, nd, kvd, us = a.T
    keep = (pc + nd >= 1) & ~((nd > 0) & (kvd <= 0)) & ~((nd == 0) & (kvd > 0))
    if not include_prefill_context:
        keep &= kvp == 0
    dropped_big = keep & (pc + nd > tok_grid[-1])
    if dropped_big.any():
        notes.append(f"{int(dropped_big.sum())} attention rows with more tokens than the dense grid "
                     f"({tok_grid[-1]:g}) left out")
    keep &= pc + nd <= tok_grid[-1]
    pc, kvp, nd, kvd, us = (v[keep] for v in (pc, kvp, nd, kvd, us))
    b = pc + nd
    seqs = nd + (pc > 0)
    secs = (dense_us(b) + n_layers * us + per_seq_us(seqs)) / 1e6
    phase = np.where(nd == 0, "prefill", np.where(pc == 0, "decode", "mixed")).astype(object)
    # linear-only rows on the dense grid (one emitting sequence), for token-only fits
    lin_b = tok_grid[tok_grid >= 1]
    lin_s = (dense_us(lin_b) + per_seq_us(np.ones_like(lin_b))) / 1e6
    notes.append("'linear' rows: dense operators + one sequence's LM head/sampling, no attention")
    if not include_prefill_context:
        notes.append("attention rows with prior prefill context (kv_prefill > 0) left out")
    max_seqs = meta_int("max_num_seqs", ek.get("max_num_seqs"), minimum=0)
    max_tok = meta_int("max_num_batched_tokens", ek.get("max_num_batched_tokens"), minimum=0)
    kv_meta = vmeta.get("kv_cache") or {}
    kvcap = meta_int("kv_cache.num_kv_tokens", kv_meta.get("num_kv_tokens"), minimum=0) if isinstance(kv_meta, dict) else None
    if kvcap is None:
        notes.append("KV-cache capacity not stated in vllm_meta.json")
    hw = vmeta.get("hardware") or {}
    gpu = str((hw.get("device_name") if isinstance(hw, dict) else None) or scalar_text(pmeta.get("gpu")) or "")
    meta = ProfileMeta(source="casys-kaist/LLMServingSim", commit=_commit(d), path=str(d), gpu=gpu,
                       model=model.split("/")[-1], tp=tp, n_layers=n_layers, license=_license(d, "MIT"),
                       b_max=int(max_tok) if max_tok else None, k_max=int(max_seqs) if max_seqs else None,
                       kv_capacity_tokens=int(kvcap) if kvcap else None, notes=tuple(notes))
    return MeasuredBatchTimes(tokens=np.concatenate([lin_b, b]), seconds=np.concatenate([lin_s, secs]),
                              kv_tokens=np.concatenate([np.zeros(lin_b.size), nd * kvd]),
                              phase=np.concatenate([np.full(lin_b.size, "linear", dtype=object), phase]),
                              meta=meta)


# --------------------------------------------------------------------------------------------
# Splitwise

_SPLITWISE_MODELS = {"llama2-70b": ("Llama-2-70B", 80), "bloom-176b": ("BLOOM-176B", 70)}
_SPLITWISE_HW = {"a100-80gb": "DGX-A100 (A100-80GB)", "h100-80gb": "DGX-H100 (H100-80GB)",
                 "h100-80gb-pcap": "DGX-H100 (H100-80GB, power-capped)"}


def load_splitwise(path, *, model: str = "llama2-70b", hardware: str = "a100-80gb", tp: int = 8) -> MeasuredBatchTimes:
    """Iteration times from Splitwise's ``perf_model.csv`` for one model, hardware and TP size.

    Prompt rows become ``prefill`` iterations of ``prompt_size*batch_size`` tokens; token rows
    ``decode`` iterations of ``batch_size`` tokens with ``kv_tokens = batch_size*(prompt_size +
    token_size/2)``.  Repeated measurements are kept as separate rows.
    """
    p = _path("path", path)
    tp = integer("tp", tp, minimum=1)
    rows = _read_csv(p)
    cols = ["model", "hardware", "prompt_size", "batch_size", "token_size", "prompt_time", "token_time",
            "tensor_parallel"]
    _need(rows, cols, p)
    models = {r["model"] for r in rows}
    if model not in models:
        raise UnknownNameError("Splitwise model", model, models)
    hws = {r["hardware"] for r in rows if r["model"] == model}
    if hardware not in hws:
        raise UnknownNameError(f"Splitwise hardware for {model}", hardware, hws)
    sel = [r for r in rows if r["model"] == model and r["hardware"] == hardware
           and int(_num(r, "tensor_parallel", p)) == tp]
    if not sel:
        tps = sorted({int(_num(r, "tensor_parallel", p)) for r in rows if r["model"] == model
                      and r["hardware"] == hardware})
        raise ParameterError("tp", tp, f"a tensor-parallel size measured for {model} on {hardware} ({tps})")
    ps = np.array([_num(r, "prompt_size", p) for r in sel])
    bs = np.array([_num(r, "batch_size", p) for r in sel])
    ts = np.array([_num(r, "token_size", p) for r in sel])
    pt = np.array([_num(r, "prompt_time", p) for r in sel]) / 1e3
    tt = np.array([_num(r, "token_time", p) for r in sel]) / 1e3
    notes = ["prompt_time: one prefill iteration of prompt_size*batch_size tokens; token_time: the mean "
             "decode iteration at batch_size, context taken as prompt_size + token_size/2"]
    if hardware.endswith("-pcap"):
        notes.append("power-capped rows: derived upstream from the uncapped h100-80gb rows (token_time "
                     "identical, prompt_time scaled); not an independent measurement")
    name, layers = _SPLITWISE_MODELS.get(model, (model, None))
    meta = ProfileMeta(source="Mutinifni/splitwise-sim", commit=_commit(p), path=str(p),
                       gpu=_SPLITWISE_HW.get(hardware, hardware), model=name, tp=tp, n_layers=layers,
                       license=_license(p, "MIT"), notes=tuple(notes))
    n = len(sel)
    return MeasuredBatchTimes(tokens=np.concatenate([ps * bs, bs]), seconds=np.concatenate([pt, tt]),
                              kv_tokens=np.concatenate([np.zeros(n), bs * (ps + ts / 2)]),
                              phase=np.array(["prefill"] * n + ["decode"] * n, dtype=object), meta=meta)


# --------------------------------------------------------------------------------------------
# Sarathi-Serve


def _sarathi_seconds(rows, path, time_col, per_token_col):
    """Batch times in seconds; units told apart by the per-token column (always ms per token)."""
    tok = np.array([_num(r, "batch_num_tokens", path) for r in rows])
    t = np.array([_num(r, time_col, path) for r in rows])
    per = np.array([_num(r, per_token_col, path) for r in rows])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = float(np.median(t / (per * tok)))  # 1 if t in ms, 1e-3 if in s
    if not (math.isfinite(ratio) and ratio > 0):
        raise DataError(f"{path}: cannot tell the unit of {time_col!r} from {per_token_col!r} (zero or "
                        "negative values)")
    if abs(math.log10(ratio)) < 0.5:
        return tok, t / 1e3, "ms"
    if abs(math.log10(ratio) + 3) < 0.5:
        return tok, t, "s"
    raise DataError(f"{path}: cannot tell the unit of {time_col!r} from {per_token_col!r}")


def _sarathi_meta(p: Path, notes) -> ProfileMeta:
    return ProfileMeta(source="microsoft/sarathi-serve (branch osdi-sarathi-serve)", commit=_commit(p), path=str(p),
                       gpu="2x A100-80GB", model="Yi-34B", tp=2, n_layers=60, license=_license(p, "Apache-2.0"),
                       notes=tuple(notes))


def load_sarathi_figure2(path) -> MeasuredBatchTimes:
    """Decode and prefill batch times of Sarathi-Serve's figure 2 (Yi-34B, TP2, A100s).

    ``path`` is the folder with ``figure-2_decode.csv`` and ``figure-2_prefill.csv`` or one of
    those files (then only it is read).  No context lengths are recorded (``kv_tokens=None``).
    """
    p = _path("path", path)
    files = [p / "figure-2_decode.csv", p / "figure-2_prefill.csv"] if p.is_dir() else [p]
    files = [f for f in files if f.is_file()]
    if not files:
        raise FileNotFoundError(f"path={str(p)!r}: no figure-2_decode.csv / figure-2_prefill.csv")
    tokens, seconds, phase = [], [], []
    notes = ["whole-iteration batch_execution_time as recorded by Sarathi-Serve; decode contexts not recorded"]
    for f in files:
        rows = _read_csv(f)
        _need(rows, ["batch_num_tokens", "batch_num_decode_tokens", "batch_num_prefill_tokens",
                     "batch_execution_time", "operation_time_per_token"], f)
        tok, sec, unit = _sarathi_seconds(rows, f, "batch_execution_time", "operation_time_per_token")
        dec = np.array([_num(r, "batch_num_decode_tokens", f) for r in rows])
        pre = np.array([_num(r, "batch_num_prefill_tokens", f) for r in rows])
        tokens.append(tok)
        seconds.append(sec)
        phase.append(np.where(pre == 0, "decode", np.where(dec == 0, "prefill", "mixed")).astype(object))
        if "prefill" in f.name:
            order = np.argsort(tok)
            if np.any(np.diff(sec[order]) < 0):
                i = int(np.flatnonzero(np.diff(sec[order]) < 0)[0])
                notes.append(f"{f.name}: time not increasing at {tok[order][i]:g} tokens "
                             "(a noisy point in the upstream data)")
    return MeasuredBatchTimes(tokens=np.concatenate(tokens), seconds=np.concatenate(seconds), kv_tokens=None,
                              phase=np.concatenate(phase), meta=_sarathi_meta(p, notes))


def load_sarathi_table2(path) -> MeasuredBatchTimes:
    """Sarathi-Serve table 2: a hybrid batch (prefill + decode) against pure batches, ms -> s."""
    p = _path("path", path)
    if p.is_dir():
        p = p / "table-2_results.csv"
        if not p.is_file():
            raise FileNotFoundError(f"path={str(p.parent)!r}: no table-2_results.csv")
    rows = _read_csv(p)
    _need(rows, ["batch_num_prefill_tokens", "batch_num_decode_tokens", "batch_num_tokens",
                 "batch_execution_time", "per_token_time"], p)
    tok, sec, unit = _sarathi_seconds(rows, p, "batch_execution_time", "per_token_time")
    dec = np.array([_num(r, "batch_num_decode_tokens", p) for r in rows])
    pre = np.array([_num(r, "batch_num_prefill_tokens", p) for r in rows])
    phase = np.where(pre == 0, "decode", np.where(dec == 0, "prefill", "mixed")).astype(object)
    return MeasuredBatchTimes(tokens=tok, seconds=sec, kv_tokens=None, phase=phase,
                              meta=_sarathi_meta(p, [f"batch_execution_time read in {unit}"]))


# --------------------------------------------------------------------------------------------


def load_measured(path, **kw) -> MeasuredBatchTimes:
    """Detect the format of ``path`` and call the matching loader with ``kw``."""
    p = _path("path", path)
    if p.is_dir():
        if any(p.glob("profile_tp*_dense.csv")):
            return load_llmservingsim(p, **kw)
        if (p / "figure-2_decode.csv").is_file() or (p / "figure-2_prefill.csv").is_file():
            return load_sarathi_figure2(p, **kw)
        if (p / "mlp.csv").is_file():
            att = kw.pop("attention_path", None)
            if att is None:
                for cand in ("attention.csv", "attention_subset.csv"):
                    if (p / cand).is_file():
                        att = p / cand
                        break
            return load_vidur(p / "mlp.csv", attention_path=att, **kw)
        if (p / "perf_model.csv").is_file():
            return load_splitwise(p / "perf_model.csv", **kw)
        raise DataError(f"{p}: no measured profile fluidq knows (Vidur mlp.csv, LLMServingSim "
                        "profile_tp*_dense.csv, Splitwise perf_model.csv, Sarathi-Serve figure-2_*.csv)")
    name = p.name
    if name.startswith("mlp"):
        return load_vidur(p, **kw)
    if name.startswith("perf_model"):
        return load_splitwise(p, **kw)
    if name.startswith("figure-2"):
        return load_sarathi_figure2(p, **kw)
    if name.startswith("table-2"):
        return load_sarathi_table2(p, **kw)
    raise DataError(f"{p}: cannot tell which profile format this file is; call a load_* function")
