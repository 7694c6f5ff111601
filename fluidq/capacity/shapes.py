"""Admissible batch shapes that can be extreme points of the stability region (internal).

A batch of ``x`` prefill and ``y`` decode tokens, ``b = x + y``, runs for ``t(b)`` seconds and
serves the rate point ``(x, y) / t(b)``.  It is admissible when ``b <= b_max`` and, under a
batch-size limit, ``y + n_p <= k_max`` where ``n_p >= 1`` prefilling requests take part when
``x > 0`` (paper §6, constraint as reconstructed in the project reference).  A single
prefilling request may contribute any number of tokens (chunked prefill of a long prompt), so
for a fixed total ``b`` the admissible decode counts form the interval ``[0, y*(b)]`` with

* ``y*(b) = b`` when ``b <= k_max`` (a pure-decode batch of ``b`` requests), and
* ``y*(b) = k_max - 1`` when ``b > k_max`` (one prefilling request takes the last slot).

All shapes of one total ``b`` lie on one segment, so only its two ends can be extreme:
``(b, 0)`` and ``(b - y*(b), y*(b))``.  Over ``b`` three families remain -- pure prefill
``(b, 0)``, pure decode ``(0, b)`` for ``b <= k_max`` and mixed ``(b - k_max + 1, k_max - 1)``
for ``b >= k_max`` -- each affine in ``b``.  Where ``t`` is affine in ``b`` too, the rate points
``(x, y)/t`` of a family are the central projection of a segment, hence a segment: only the
ends of the pieces where ``t`` is affine can be vertices.  That gives the candidate totals:

* :class:`~fluidq.Staircase`: ``t`` is constant on each step and every family moves outwards
  within a step, so the step ends ``b0, 2 b0, ...``, ``b_max`` and ``min(k_max, b_max)``;
* :class:`~fluidq.PiecewiseLinear`: ``1, b0, k_max, b_max``; :class:`~fluidq.Affine`:
  ``1, k_max, b_max``;
* any other model (tabulated, user-defined): every integer ``1..b_max``.

With ``prompt_tokens = P`` (every prompt has ``P`` tokens) a request contributes at most ``P``
prefill tokens to a batch, so ``n_p >= ceil(x / P)`` and, for a fixed total ``b``, the largest
admissible decode count is the largest ``y`` with ``y + ceil((b - y)/P) <= k_max``; that end is
no longer affine in ``b``, and every integer total ``1..b_max`` is a candidate (vectorised).

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347, §6 (batch-size limit, Theorem 10).
"""
from __future__ import annotations

import numpy as np

from ..batchtime import Affine, PiecewiseLinear, Staircase
from ..batchtime.models import ContextAware, _Shifted
from ..errors import ParameterError

__all__ = ["MAX_PROMPT_LIMITED_TOKENS", "candidate_totals", "extreme_shapes"]

#: Largest budget ``b_max`` whose region is built with fixed-length prompts under a binding ``k_max``:
#: every total ``1..b_max`` is then a candidate (three shapes each, a convex hull of all of them), about
#: 3 s per million tokens of budget; vLLM's largest budgets are about 1M tokens.
MAX_PROMPT_LIMITED_TOKENS = 2**20


def _unwrap(bt):
    """The model whose breakpoints decide (a constant shift or a context term keeps them)."""
    while isinstance(bt, (_Shifted, ContextAware)):
        bt = bt.base
    return bt


def candidate_totals(batch_time, b_max: int, k_max: int | None) -> np.ndarray:
    """Batch totals ``b`` (sorted, unique, in ``1..b_max``) among which the extreme shapes lie."""
    base = _unwrap(batch_time)
    extra = [1, b_max] + ([min(k_max, b_max)] if k_max is not None else [])
    if type(base) is Staircase:
        cand = np.arange(base.b0, b_max + 1, base.b0)
    elif type(base) is PiecewiseLinear:
        cand = np.array([min(max(base.b0, 1), b_max)])
    elif type(base) is Affine:
        cand = np.array([], dtype=int)
    else:
        cand = np.arange(1, b_max + 1)
    return _sorted_unique(np.concatenate([cand.astype(np.int64), np.array(extra, dtype=np.int64)]))


def _sorted_unique(v: np.ndarray) -> np.ndarray:
    """``np.unique`` of an int array by a sort (numpy's hash-based unique took 37 s for 2**24 values)."""
    v = np.sort(v)
    return v[np.r_[True, v[1:] != v[:-1]]] if v.size else v


def _prompt_limited(b_max: int, k: int, P: int) -> np.ndarray:
    """Extreme shapes when each request brings at most ``P`` prefill tokens (all totals)."""
    b = np.arange(1, b_max + 1, dtype=np.int64)
    u = np.arange(0, b_max + 1, dtype=np.int64)
    g = u - (-(-u // P))  # u - ceil(u/P): decode slots freed by u prefill tokens, nondecreasing
    out = []
    ok_pre = -(-b // P) <= k  # a pure-prefill batch of b tokens needs ceil(b/P) requests
    out.append(np.stack([b[ok_pre], np.zeros(int(ok_pre.sum()), dtype=np.int64)], 1))
    small = b[b <= k]
    out.append(np.stack([np.zeros_like(small), small], 1))
    big = b[b > k]
    umin = np.searchsorted(g, big - k, side="left")  # least prefill that frees enough slots
    fit = (umin <= big) & (-(-umin // P) <= k)
    out.append(np.stack([umin[fit], big[fit] - umin[fit]], 1))
    return np.concatenate(out)


def _unique_rows(shapes: np.ndarray, b_max: int) -> np.ndarray:
    """``np.unique(shapes, axis=0)`` for shapes with ``0 <= x, y <= b_max``, through one int64 key per row
    (a 1-d sort: seconds, not minutes, for the millions of rows of a budget of 2**24 tokens)."""
    shapes = np.asarray(shapes, dtype=np.int64).reshape(-1, 2)
    base = np.int64(b_max + 1)
    keys = _sorted_unique(shapes[:, 0] * base + shapes[:, 1])
    return np.stack([keys // base, keys % base], axis=1)


def extreme_shapes(batch_time, b_max: int, k_max: int | None,
                   prompt_tokens: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(shapes, seconds)``: candidate extreme batch shapes ``(x, y)`` (int, ``m x 2``) and ``t(x+y)``.

    ``prompt_tokens``: most prefill tokens one request brings to a batch (``None``: any number,
    the reconstructed rule ``n_p >= 1``).  Raises :class:`~fluidq.errors.ParameterError` when
    the batch-time model gives a time that is not a finite positive number of seconds at one of
    the candidate sizes.
    """
    if k_max is not None and k_max >= b_max:
        k_max = None  # y + n_p <= x + y <= b_max: a limit of b_max requests or more never binds
    if prompt_tokens is not None and prompt_tokens >= b_max:
        prompt_tokens = None  # one request may bring the whole budget: the limit never binds
    k = b_max + 1 if k_max is None else k_max
    if prompt_tokens is not None and k_max is not None and b_max > MAX_PROMPT_LIMITED_TOKENS:
        raise ParameterError("b_max", b_max, f"a budget of at most {MAX_PROMPT_LIMITED_TOKENS:,} tokens when k_max="
                             f"{k_max:,} binds and prompts have a fixed length ({prompt_tokens:,} tokens)",
                             f"every batch total 1..b_max is then a candidate shape: {3 * b_max:,} shapes and "
                             "their convex hull, minutes of work; give a smaller --b-max, or no --k-max")
    if prompt_tokens is not None and k_max is not None:
        shapes = _unique_rows(_prompt_limited(b_max, k, prompt_tokens), b_max)
    else:
        b = candidate_totals(batch_time, b_max, k_max)
        if len(b) > MAX_PROMPT_LIMITED_TOKENS:  # a tabulated or user model: every total 1..b_max
            if k_max is not None:
                raise ParameterError("b_max", b_max, f"a budget of at most {MAX_PROMPT_LIMITED_TOKENS:,} tokens when "
                                     f"k_max={k_max:,} binds and t(b) is {type(_unwrap(batch_time)).__name__}",
                                     f"every batch total 1..b_max is then a candidate: {3 * len(b):,} shapes and their "
                                     "convex hull, minutes of work; give a smaller b_max, or no k_max")
            # without k_max the region is the triangle x + y <= max_b b/t(b): only the best totals can be
            # extreme (the pure-prefill and pure-decode shapes of one total give the same rate)
            secs = np.asarray(batch_time(b.astype(float)), dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                rate = np.where(np.isfinite(secs) & (secs > 0), b / secs, np.inf)  # a bad time is reported below
            b = b[rate >= np.max(rate) * (1 - 1e-12)] if np.all(np.isfinite(rate)) else b[~np.isfinite(rate)][:1]
        pre = np.stack([b, np.zeros_like(b)], axis=1)
        dec_b = b[b <= k]
        dec = np.stack([np.zeros_like(dec_b), dec_b], axis=1)
        mix_b = b[b >= k]
        mix = np.stack([mix_b - (k - 1), np.full_like(mix_b, k - 1)], axis=1)
        shapes = _unique_rows(np.concatenate([pre, dec, mix]), b_max)
    totals = shapes.sum(axis=1)
    secs = np.asarray(batch_time(totals.astype(float)), dtype=float)
    bad = ~np.isfinite(secs) | (secs <= 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError("batch_time", batch_time,
                             "a model with a finite batch time > 0 s for every batch of 1..b_max tokens",
                             f"t({int(totals[i])}) = {secs[i]!r} s")
    return shapes, secs
