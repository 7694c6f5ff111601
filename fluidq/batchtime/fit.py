"""Fitting batch-time models to measured iteration times.

``fit_batch_time(tokens, seconds, kind="auto")`` fits each candidate form and keeps the one with
the smallest *held-out* error; the model classes have ``fit`` classmethods that fit one form
(``Staircase.fit(tokens, seconds)``, ``ContextAware.fit(tokens, kv_tokens, seconds)``).  All
return a frozen :class:`FitResult`.

Method
------
* For the staircase ``c + a*ceil(b/b0)`` and the piecewise-linear ``c + a*max(0, b - b0)``
  forms, ``b0`` is searched over a grid (every multiple of 8 up to the largest measured size,
  plus 1, 2, 4; beyond 4096 tokens every multiple of 64); for a given ``b0`` the model is
  linear in ``(c, a)``, solved by non-negative least squares.  The affine form has no ``b0``.
* The context-aware form adds a column ``kv_tokens`` (cached KV tokens read by decode attention)
  with a coefficient ``>= 0`` to any of those bases.
* ``loss="relative"`` (default) weights each point by ``1/seconds`` so that the fit minimises
  squared *relative* errors (batch times span two orders of magnitude); ``"absolute"`` is plain
  least squares in seconds.
* Held-out error: ``folds``-fold cross-validation with interleaved folds (points sorted by size,
  point ``i`` in fold ``i mod folds``), ``b0`` re-searched inside every fold.  ``mape_heldout``
  is the mean absolute percentage error of the out-of-fold predictions.  The folds are
  deterministic: no random numbers are drawn.

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347 (v3, Eq. 4: the staircase fit with R^2 > 0.97 on CodeLlama-34B/A100).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import array, integer
from ..errors import DataError, ParameterError
from .models import Affine, BatchTime, ContextAware, PiecewiseLinear, Staircase, Tabulated
from ..results import Result

__all__ = ["FitResult", "fit_batch_time", "fit_model", "default_b0_grid", "FIT_KINDS", "MAX_FIT_TOKENS",
           "MAX_FIT_KV_TOKENS", "MIN_FIT_SECONDS", "MAX_FIT_SECONDS"]

#: the largest batch size fitted: the ``b0`` search grid for 2**20 tokens has about 16,800 sizes
#: (it grows with the largest size: a batch of 1e30 tokens would ask for a grid of 1.6e28)
MAX_FIT_TOKENS = 2**20
#: the largest cached-KV count per iteration (a larger one loses precision in the least squares)
MAX_FIT_KV_TOKENS = 2**40
#: measured times are in seconds, in [1 ns, 1e6 s]: the relative loss weights points by 1/seconds and
#: squares them, so smaller or larger values would overflow (and are not batch times in seconds)
MIN_FIT_SECONDS = 1e-9
MAX_FIT_SECONDS = 1e6

FIT_KINDS = ("auto", "staircase", "piecewise-linear", "affine", "tabulated", "context-aware")
_BASES = ("staircase", "piecewise-linear", "affine")
_ALIASES = {"piecewise_linear": "piecewise-linear", "pwl": "piecewise-linear", "context_aware": "context-aware",
            "linear": "affine"}


# --------------------------------------------------------------------------------------------
# result


def percent_text(fraction) -> str:
    """A relative error for people: ``0.0123`` -> ``"1.23%"`` (3 significant digits), below 0.01 % ``"< 0.01%"``
    (an exact fit gives 1e-14 of float noise, not a meaningful number), an en dash when undefined."""
    from ..results import fmt_value

    if fraction is None or not math.isfinite(fraction):
        return fmt_value(None)
    pct = 100 * float(fraction)
    if abs(pct) < 0.01:
        return "0%" if pct == 0 else "< 0.01%"
    return fmt_value(pct, digits=3) + "%"


@dataclass(frozen=True, kw_only=True, eq=False)
class FitResult(Result):
    """A batch-time model fitted to measurements, with its errors.

    Attributes
    ----------
    model : BatchTime
        The fitted model (seconds).
    kind : str
        ``"staircase"``, ``"piecewise-linear"``, ``"affine"``, ``"tabulated"`` or
        ``"context-aware"`` (then ``params["base"]`` names the base form).
    params : dict
        Fitted parameters in seconds and tokens (``c``, ``a``, ``b0``, ``kv_s_per_token``).
    r2 : float
        Coefficient of determination of the in-sample fit, in seconds.
    mape, mape_heldout : float
        Mean absolute percentage error (a fraction: 0.05 is 5 %), in sample and out of fold.
    max_rel_error : float
        Largest in-sample ``|predicted - measured| / measured``.
    max_abs_error_s : float
        Largest in-sample ``|predicted - measured|`` in seconds.
    residuals_s : ndarray
        ``measured - predicted`` per point, seconds.
    tokens, seconds, kv_tokens : ndarray
        The data fitted (``kv_tokens`` is ``None`` for token-only fits).
    folds : int
        Folds used for the held-out error.
    loss : str
        ``"relative"`` or ``"absolute"``.
    candidates : dict
        For ``kind="auto"``: held-out MAPE of every form tried (the chosen one is the smallest).
    """

    model: BatchTime
    kind: str
    params: dict
    r2: float
    mape: float
    mape_heldout: float
    max_rel_error: float
    max_abs_error_s: float
    residuals_s: np.ndarray = field(repr=False)
    tokens: np.ndarray = field(repr=False)
    seconds: np.ndarray = field(repr=False)
    kv_tokens: np.ndarray | None = field(default=None, repr=False)
    folds: int = 5
    loss: str = "relative"
    candidates: dict = field(default_factory=dict)

    @property
    def inputs(self) -> dict:
        """What the fit was computed from: the form asked for, the loss, the folds and the points measured."""
        return {"kind": self.kind, "loss": self.loss, "folds": self.folds, "n_points": int(len(self.tokens)),
                "context_aware": self.kv_tokens is not None}

    @property
    def n_points(self) -> int:
        return int(self.tokens.size)

    def predict(self, tokens, kv_tokens=None):
        """Model prediction in seconds."""
        if isinstance(self.model, ContextAware):
            return self.model(tokens, kv_tokens)
        return self.model(tokens)

    def describe(self) -> str:
        """One line: the formula and the errors."""
        return (f"{self.kind}: {self.model.describe()}; R^2 = {self.r2:.4f}, MAPE {percent_text(self.mape)} "
                f"(held out {percent_text(self.mape_heldout)}), max error {percent_text(self.max_rel_error)} "
                f"over {self.n_points} points")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "model": self.model.to_dict(), "params": dict(self.params), "r2": self.r2,
                "mape": self.mape, "mape_heldout": self.mape_heldout, "max_rel_error": self.max_rel_error,
                "max_abs_error_s": self.max_abs_error_s, "n_points": self.n_points, "folds": self.folds,
                "loss": self.loss, "candidates": dict(self.candidates),
                "residuals_s": self.residuals_s.tolist()}

    def plot(self, ax=None, path=None):
        """Measured points and the fitted model (or measured vs predicted for context-aware fits)."""
        from ..plotting.fit import plot_fit

        return plot_fit(self, ax=ax, path=path)


# --------------------------------------------------------------------------------------------
# validation


def _canon_kind(kind) -> str:
    if not isinstance(kind, str):
        raise ParameterError("kind", kind, f"one of {', '.join(FIT_KINDS)}")
    k = _ALIASES.get(kind.strip().lower(), kind.strip().lower())
    if k not in FIT_KINDS:
        raise ParameterError("kind", kind, f"one of {', '.join(FIT_KINDS)}")
    return k


def _check_data(tokens, seconds, kv_tokens, *, need_increasing: bool, min_points: int):
    b = array("tokens", tokens, min_len=1).copy()  # copies: the result freezes its arrays
    y = array("seconds", seconds, min_len=1).copy()
    if b.size != y.size:
        raise ParameterError("seconds", f"<{y.size} values>", f"as many values as tokens ({b.size})")
    if np.any(b < 1):
        i = int(np.flatnonzero(b < 1)[0])
        raise ParameterError("tokens", f"<array with {b[i]:g} at index {i}>", "token counts >= 1")
    if np.any(y <= 0):
        i = int(np.flatnonzero(y <= 0)[0])
        raise ParameterError("seconds", f"<array with {y[i]:g} at index {i}>", "times > 0")
    if np.any(b > MAX_FIT_TOKENS):
        i = int(np.flatnonzero(b > MAX_FIT_TOKENS)[0])
        raise ParameterError("tokens", f"<array with {b[i]:g} at index {i}>", f"token counts <= {MAX_FIT_TOKENS:,}",
                             f"the b0 search grid grows with the largest size: {b[i]:g} tokens would make "
                             f"{default_grid_size(b[i]):,.3g} block sizes")
    bad = (y < MIN_FIT_SECONDS) | (y > MAX_FIT_SECONDS)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError("seconds", f"<array with {y[i]:g} at index {i}>",
                             f"times in [{MIN_FIT_SECONDS:g}, {MAX_FIT_SECONDS:g}] seconds",
                             "the relative loss weights each point by 1/seconds and squares it; are the times in seconds?")
    kv = None
    if kv_tokens is not None:
        kv = array("kv_tokens", kv_tokens, nonnegative=True, min_len=1).copy()
        if kv.size != b.size:
            raise ParameterError("kv_tokens", f"<{kv.size} values>", f"as many values as tokens ({b.size})")
        if np.any(kv > MAX_FIT_KV_TOKENS):
            i = int(np.flatnonzero(kv > MAX_FIT_KV_TOKENS)[0])
            raise ParameterError("kv_tokens", f"<array with {kv[i]:g} at index {i}>",
                                 f"cached KV token counts <= {MAX_FIT_KV_TOKENS:,}")
    if need_increasing:
        d = np.diff(b)
        if np.any(d == 0):
            i = int(np.flatnonzero(d == 0)[0])
            raise ParameterError("tokens", f"<duplicate size {b[i]:g} at positions {i} and {i + 1} (0-based)>",
                                 "strictly increasing sizes", "average repeated measurements first")
        if np.any(d < 0):
            i = int(np.flatnonzero(d < 0)[0])
            raise ParameterError("tokens", f"<{b[i]:g} then {b[i + 1]:g} at positions {i}, {i + 1} (0-based)>",
                                 "strictly increasing sizes",
                                 "sort the measurements by size: order = np.argsort(tokens), then index both arrays")
    if b.size < min_points:
        raise ParameterError("tokens", f"<{b.size} point(s)>", f"at least {min_points} measured points")
    return b, y, kv


def default_grid_size(max_tokens: float) -> float:
    """How many block sizes :func:`default_b0_grid` would search for ``max_tokens`` (without building it)."""
    hi = max(1.0, math.ceil(max_tokens))
    return 3 + min(hi, 4096) // 8 + max(0.0, hi - 4096) // 64


def default_b0_grid(max_tokens: float) -> np.ndarray:
    """Block sizes searched for ``b0``: 1, 2, 4, multiples of 8 to 4096, then of 64."""
    hi = max(1, int(math.ceil(max_tokens)))
    parts = [np.array([1, 2, 4]), np.arange(8, min(hi, 4096) + 1, 8)]
    if hi > 4096:
        parts.append(np.arange(4096 + 64, hi + 1, 64))
    g = np.unique(np.concatenate(parts))
    return g[g <= hi] if np.any(g <= hi) else np.array([1])


# --------------------------------------------------------------------------------------------
# least squares


def _subsets(base: str, context: bool):
    """Column subsets (0: c, 1: a, 2: kv) allowed to be non-zero, the required ones always in."""
    opt = [()]
    if context:
        opt.append((2,))
    if base == "staircase":  # a > 0 required, c >= 0
        cores = [(0, 1), (1,)]
    elif base == "piecewise-linear":  # c > 0 and a > 0 required
        cores = [(0, 1)]
    else:  # affine: c >= 0, a >= 0, not both zero
        cores = [(0, 1), (0,), (1,)]
    return [core + extra for core in cores for extra in opt]


def _fit_once(base: str, b, y, kv, w, grid):
    """Best fit over the grid, in chunks of the grid that keep the work arrays small."""
    if base == "affine":
        return _fit_chunk(base, b, y, kv, w, grid)
    grid = np.asarray(grid, dtype=float)
    step = max(1, int(2_000_000 // max(b.size, 1)))
    best = None
    for i in range(0, grid.size, step):
        r = _fit_chunk(base, b, y, kv, w, grid[i:i + step])
        if r is not None and (best is None or r[0] < best[0] - 1e-12 * max(best[0], 1e-300)):
            best = r
    return best


def _fit_chunk(base: str, b, y, kv, w, grid):
    """Best non-negative least-squares parameters of one form over a ``b0`` grid.

    For each ``b0`` the problem is linear in ``(c, a[, kv])``; the normal equations of every
    ``b0`` are formed at once (columns scaled to unit RMS) and the non-negativity constraints
    are handled exactly by enumerating the active sets (at most 3 columns), keeping the
    feasible solution of least squared error.  Returns ``(sse, c, a, b0, kv_coef)`` or ``None``.
    """
    b0s = np.array([1.0]) if base == "affine" else np.asarray(grid, dtype=float)
    if base == "staircase":
        F = np.ceil(b[:, None] / b0s[None, :])
    elif base == "piecewise-linear":
        F = np.maximum(0.0, b[:, None] - b0s[None, :])
    else:
        F = b[:, None]
    G = b0s.size
    # columns: u = w (constant), V[:, j] = w*f_j(b) (one per b0), z = w*kv; scaled to unit RMS
    yw = y * w
    u = w / np.sqrt(np.mean(w * w))
    V = w[:, None] * F
    sv = np.sqrt(np.mean(V * V, axis=0))
    sv[sv == 0] = 1.0
    V /= sv
    p = 3 if kv is not None else 2
    gram = np.empty((G, p, p))
    rhs = np.empty((G, p))
    gram[:, 0, 0] = u @ u
    gram[:, 0, 1] = gram[:, 1, 0] = u @ V
    gram[:, 1, 1] = np.einsum("nj,nj->j", V, V)
    rhs[:, 0] = u @ yw
    rhs[:, 1] = yw @ V
    scale = np.empty((G, p))
    scale[:, 0] = np.sqrt(np.mean(w * w))
    scale[:, 1] = sv
    if kv is not None:
        z = w * kv
        sz = np.sqrt(np.mean(z * z)) or 1.0
        z = z / sz
        gram[:, 0, 2] = gram[:, 2, 0] = u @ z
        gram[:, 1, 2] = gram[:, 2, 1] = z @ V
        gram[:, 2, 2] = z @ z
        rhs[:, 2] = z @ yw
        scale[:, 2] = sz
    yy = float(yw @ yw)
    best_sse = np.full(G, np.inf)
    best_theta = np.zeros((G, p))
    for S in _subsets(base, kv is not None):
        idx = np.array(S)
        A = gram[:, idx[:, None], idx[None, :]]
        r = rhs[:, idx]
        try:
            theta = np.linalg.solve(A, r[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a singular system (collinear columns for some b0)
            theta = np.einsum("gij,gj->gi", np.linalg.pinv(A), r)
        ok = np.all(theta > 0, axis=1)
        # the error of this theta whatever its accuracy (near-singular systems stay honest)
        sse = yy - 2 * np.einsum("gi,gi->g", theta, r) + np.einsum("gi,gij,gj->g", theta, A, theta)
        better = ok & (sse < best_sse)
        if np.any(better):
            full = np.zeros((G, p))
            full[:, idx] = theta
            best_sse = np.where(better, sse, best_sse)
            best_theta[better] = full[better]
    if not np.any(np.isfinite(best_sse)):
        return None
    # smallest error; among near-ties (float noise) the smallest b0
    m = np.nanmin(best_sse)
    j = int(np.flatnonzero(best_sse <= m + 1e-12 * max(yy, 1e-300))[0])
    coef = best_theta[j] / scale[j]
    c, a = float(coef[0]), float(coef[1])
    kvc = float(coef[2]) if kv is not None else None
    return (max(float(best_sse[j]), 0.0), c, a, None if base == "affine" else int(b0s[j]), kvc)


def _build(base: str, p, context: bool) -> BatchTime:
    _, c, a, b0, kvc = p
    if base == "staircase":
        m = Staircase(c=c, a=a, b0=b0)
    elif base == "piecewise-linear":
        m = PiecewiseLinear(c=c, a=a, b0=b0)
    else:
        m = Affine(c=c, a=a)
    return ContextAware(base=m, kv_s_per_token=kvc) if context else m


def _folds(b, kv, k):
    order = np.lexsort((kv, b)) if kv is not None else np.argsort(b, kind="stable")
    fold = np.empty(b.size, dtype=int)
    fold[order] = np.arange(b.size) % k
    return fold


def _weights(y, loss):
    return 1.0 / y if loss == "relative" else np.ones_like(y)


def _param_count(base, context):
    return (2 if base == "affine" else 3) + (1 if context else 0)


def _evaluate(base, b, y, kv, grid, loss, k, context):
    """Fit on all points and out of fold; returns (model, params tuple, oof predictions)."""
    w = _weights(y, loss)
    full = _fit_once(base, b, y, kv, w, grid)
    if full is None:
        return None
    try:
        model = _build(base, full, context)
    except ParameterError:  # e.g. flat times: a staircase step of 1e-18 s is no step; the form does not fit
        return None
    oof = np.empty_like(y)
    fold = _folds(b, kv, k)
    for f in range(k):
        tr, te = fold != f, fold == f
        sub = _fit_once(base, b[tr], y[tr], None if kv is None else kv[tr], w[tr],
                        grid if base == "affine" else grid[grid <= max(b[tr].max(), grid.min())])
        m = model  # a fold too small to show a slope (or whose coefficients leave the form): the full fit
        if sub is not None:
            try:
                m = _build(base, sub, context)
            except ParameterError:
                pass
        oof[te] = m(b[te], kv[te]) if context else m(b[te])
    return model, full, oof


def _tab_evaluate(b, y, k):
    model = Tabulated(tokens=b, seconds=y, extrapolate="linear")
    oof = np.empty_like(y)
    fold = _folds(b, None, k)
    for f in range(k):
        tr, te = fold != f, fold == f
        if tr.sum() < 2:
            oof[te] = model(b[te])
            continue
        m = Tabulated(tokens=b[tr], seconds=y[tr], extrapolate="linear")
        oof[te] = m(b[te])
    return model, oof


def _result(kind, model, params, b, y, kv, oof, k, loss, candidates):
    pred = np.asarray(model(b, kv) if kv is not None else model(b), dtype=float)
    res = y - pred
    rel = np.abs(res) / y
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    if ss_tot > 0:
        r2 = 1.0 - float(res @ res) / ss_tot
    else:  # equal times: R^2 has no variance to explain; 1 when the fit is exact to rounding
        r2 = 1.0 if float(rel.max()) < 1e-9 else 0.0
    res.setflags(write=False)
    for arr in (b, y) + ((kv,) if kv is not None else ()):
        arr.setflags(write=False)
    return FitResult(model=model, kind=kind, params=params, r2=r2, mape=float(rel.mean()),
                     mape_heldout=float(np.mean(np.abs(y - oof) / y)), max_rel_error=float(rel.max()),
                     max_abs_error_s=float(np.abs(res).max()), residuals_s=res, tokens=b, seconds=y, kv_tokens=kv,
                     folds=k, loss=loss, candidates=candidates)


def _params_dict(base, p, context):
    _, c, a, b0, kvc = p
    d = {"c": c, "a": a}
    if b0 is not None:
        d["b0"] = b0
    if context:
        d = {"base": base, **d, "kv_s_per_token": kvc}
    return d


# --------------------------------------------------------------------------------------------
# public


def fit_batch_time(tokens, seconds, kind: str = "auto", *, kv_tokens=None, base: str = "auto",
                   b0_grid=None, folds: int = 5, loss: str = "relative") -> FitResult:
    """Fit a batch-time model ``t(b)`` (or ``t(b, kv)``) to measured iteration times.

    Parameters
    ----------
    tokens : array_like
        Batch tokens per measured iteration (>= 1).  For token-only fits they must be strictly
        increasing (average repeated measurements first: ``MeasuredBatchTimes.token_series``).
    seconds : array_like
        Measured iteration times in seconds (> 0).
    kind : {"auto", "staircase", "piecewise-linear", "affine", "tabulated", "context-aware"}
        ``"auto"`` fits the staircase, piecewise-linear and affine forms (their context-aware
        versions when ``kv_tokens`` is given) and keeps the smallest held-out MAPE.
    kv_tokens : array_like, optional
        Cached KV tokens read by decode attention per iteration; enables ``"context-aware"``
        (pairs ``(tokens, kv_tokens)`` need not be ordered or unique).
    base : {"auto", "staircase", "piecewise-linear", "affine"}
        Base form in ``b`` of a context-aware fit (``"auto"``: chosen by held-out error).
    b0_grid : array_like of int, optional
        Block sizes / knees to search (default :func:`default_b0_grid`).
    folds : int
        Cross-validation folds for the held-out error (>= 2; fewer if there are few points).
    loss : {"relative", "absolute"}
        Least squares on relative errors (default) or on seconds.

    Returns
    -------
    FitResult

    Examples
    --------
    >>> import numpy as np
    >>> b = np.arange(16, 1025, 16)
    >>> r = fit_batch_time(b, 0.011 + 0.035 * np.ceil(b / 128), kind="staircase")
    >>> r.model.b0, round(r.model.a, 4), r.mape < 1e-9
    (128, 0.035, True)
    """
    # the least squares of every b0 are solved at once; near-singular ones give inf/nan that are
    # compared away (never chosen), so numpy's warnings about them would only be noise
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return _fit_batch_time(tokens, seconds, kind, kv_tokens=kv_tokens, base=base, b0_grid=b0_grid,
                               folds=folds, loss=loss)


def _fit_batch_time(tokens, seconds, kind: str = "auto", *, kv_tokens=None, base: str = "auto",
                   b0_grid=None, folds: int = 5, loss: str = "relative") -> FitResult:
    kind = _canon_kind(kind)
    if loss not in ("relative", "absolute"):
        raise ParameterError("loss", loss, "'relative' or 'absolute'")
    base = _canon_kind(base) if base != "auto" else "auto"
    if base not in ("auto",) + _BASES:
        raise ParameterError("base", base, "'auto', 'staircase', 'piecewise-linear' or 'affine'")
    folds = integer("folds", folds, minimum=2)
    if kind == "context-aware" and kv_tokens is None:
        raise ParameterError("kv_tokens", None, "cached KV tokens per point for kind='context-aware'")
    if kv_tokens is not None and kind not in ("auto", "context-aware"):
        raise ParameterError("kind", kind, "'auto' or 'context-aware' when kv_tokens is given",
                             "drop kv_tokens to fit a form in b alone")
    context = kv_tokens is not None
    b, y, kv = _check_data(tokens, seconds, kv_tokens, need_increasing=not context,
                           min_points=4 if context else 3)
    k = min(folds, b.size)
    if b0_grid is None:
        grid = default_b0_grid(b.max())
    else:
        grid = np.unique(array("b0_grid", b0_grid, min_len=1))
        if np.any(grid < 0) or np.any(grid != np.round(grid)):
            raise ParameterError("b0_grid", b0_grid, "integers >= 1 (>= 0 for piecewise-linear)")
    if kind == "tabulated":
        model, oof = _tab_evaluate(b, y, k)
        return _result("tabulated", model, {"points": int(b.size)}, b, y, None, oof, k, loss, {})

    if kind == "auto":
        forms = _BASES if base == "auto" else (base,)
    elif kind == "context-aware":
        forms = _BASES if base == "auto" else (base,)
    else:
        forms = (kind,)
    tried, best = {}, None
    for f in forms:
        g = grid[grid >= 1] if f == "staircase" else grid
        if f != "affine" and g.size == 0:
            raise ParameterError("b0_grid", b0_grid, "at least one block size >= 1")
        out = _evaluate(f, b, y, kv, g, loss, k, context)
        if out is None:
            continue
        model, p, oof = out
        mape_ho = float(np.mean(np.abs(y - oof) / y))
        tried[f] = mape_ho
        if best is None or mape_ho < best[0] - 1e-12:
            best = (mape_ho, f, model, p, oof)
    if best is None:
        raise DataError("seconds: no form fits with positive coefficients (do the times increase with the "
                        "batch size?)")
    _, f, model, p, oof = best
    label = "context-aware" if context else f
    return _result(label, model, _params_dict(f, p, context), b, y, kv, oof, k, loss,
                   {(f"context-aware/{n}" if context else n): v for n, v in tried.items()} if len(forms) > 1 else {})


_CLASS_KIND = {Staircase: "staircase", PiecewiseLinear: "piecewise-linear", Affine: "affine", Tabulated: "tabulated"}


def fit_model(cls, tokens, seconds, **kw) -> FitResult:
    """``cls.fit(tokens, seconds, **kw)`` for a model class (used by the ``fit`` classmethods)."""
    if cls is ContextAware:
        return fit_batch_time(tokens, seconds, kind="context-aware", **kw)
    if cls not in _CLASS_KIND:
        raise ParameterError("cls", getattr(cls, "__name__", cls), "a model class with a fit "
                             "(Staircase, PiecewiseLinear, Affine, Tabulated, ContextAware)")
    return fit_batch_time(tokens, seconds, kind=_CLASS_KIND[cls], **kw)
