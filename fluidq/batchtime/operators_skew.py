"""The attention cost of decodes of unequal context (:class:`AttentionSkew`), read from an LLMServingSim
profile's ``profile_meta.yaml`` ``skew_fit`` and its bucket table ``profile_tp{N}_skew_fit.csv``.

Siblings: :mod:`fluidq.batchtime.operators` (the model these build,
:class:`~fluidq.batchtime.operators.IterationModel`, and the module notes on every term);
:mod:`~fluidq.batchtime.operators_lss` (which adds this term on request) and
:mod:`~fluidq.batchtime.operators_vidur`.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError, ParameterError
from .._io import open_text


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


def _read_csv(path: Path) -> list[dict]:
    with open_text(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise DataError(f"{path}: empty table")
    return rows
