"""Time-sharing of batch shapes: the LP behind a point of the stability region.

Running batch shape ``i`` (``x_i`` prefill + ``y_i`` decode tokens, ``t_i`` seconds) a fraction
``w_i`` of the time serves ``sum_i w_i v_i`` tokens/s with ``v_i = (x_i, y_i)/t_i``.  A target
``(lambda_p, lambda_d)`` is in the stability region iff some ``w >= 0`` with ``sum_i w_i <= 1``
serves at least the target.  :func:`region_mix` solves that LP with cvxpy.

References
----------
Li, Dai, Peng, arXiv:2504.07347, §6 (batch-size limit; the region as time-sharing of shapes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..engine import Engine
from ..results import Result, plain
from .region import _REL_TOL, StabilityRegion, as_points, stability_region

__all__ = ["RegionMix", "region_mix"]

_W_EPS = 1e-6


def _shape_rates(region: StabilityRegion):
    idx = region.batch_vertices
    return idx, region.vertices[idx]


def _lp(problem):
    import cvxpy as cp

    for solver in ("CLARABEL", "HIGHS", None):
        try:
            if solver is None:
                problem.solve()
            elif solver in cp.installed_solvers():
                problem.solve(solver=solver)
            else:
                continue
        except cp.error.SolverError:
            continue
        if problem.status in ("optimal", "optimal_inaccurate"):
            return problem.status
    raise RuntimeError(f"the time-sharing LP failed ({problem.status})")  # pragma: no cover


def _solve_scale(region: StabilityRegion, p: np.ndarray) -> tuple[float, np.ndarray]:
    """``(s, w)`` of ``max s : V^T w >= s p, sum w <= 1, w >= 0`` (``inf`` and zeros at the origin)."""
    idx, V = _shape_rates(region)
    if not np.any(p > 0):
        return math.inf, np.zeros(len(idx))
    import cvxpy as cp

    # scale to O(1) numbers for the solver: the rate points by their largest coordinate, the target by
    # its own (max s : V w >= s p  is  s = s' / |p| with  max s' : V w >= s' p/|p|), so a target of
    # 1e-12 or 1e18 tokens/s is as easy for the solver as one of 1e3
    unit = float(np.max(V))
    size = float(np.max(p))
    w = cp.Variable(len(idx), nonneg=True)
    s = cp.Variable()
    prob = cp.Problem(cp.Maximize(s), [(V / unit).T @ w >= s * (p / size), cp.sum(w) <= 1])
    _lp(prob)
    ww = np.clip(np.asarray(w.value, dtype=float), 0.0, None)
    return float(s.value) * unit / size, ww


@dataclass(frozen=True)
class RegionMix(Result):
    """A time-sharing of batch shapes that serves a target, or the shortfall when none does.

    Attributes
    ----------
    target : tuple
        ``(lambda_p, lambda_d)`` prefill and decode tokens per second asked for.
    feasible : bool
        The target is in the stability region.
    scale : float
        Largest ``s`` such that ``s * target`` can be served (``> 1`` leaves headroom).
    shapes : ndarray of int, shape (k, 2)
        The batch shapes ``(prefill tokens, decode tokens)`` used.
    time_fractions : ndarray
        Fraction of time each shape runs (sum = utilisation; the rest is idle). When infeasible:
        the mix serving ``scale * target`` using the whole time.
    batch_seconds : ndarray
        ``t(x + y)`` of each shape.
    batches_per_s : ndarray
        ``time_fraction / t``: how many batches of each shape per second.
    batch_fractions : ndarray
        Share of the batches (not of the time) of each shape.
    utilization : float
        ``sum(time_fractions)`` (``1/scale`` when feasible).
    served_tokens_per_s : tuple
        What the mix serves, ``(prefill, decode)``.
    shortfall_tokens_per_s : tuple
        The least total (prefill + decode) tokens/s missing from the target: zeros when feasible.
    reason : str
    """

    target: tuple
    feasible: bool
    scale: float
    shapes: np.ndarray
    time_fractions: np.ndarray
    batch_seconds: np.ndarray
    batches_per_s: np.ndarray
    batch_fractions: np.ndarray
    utilization: float
    served_tokens_per_s: tuple
    shortfall_tokens_per_s: tuple
    reason: str
    region: StabilityRegion = field(repr=False, default=None)

    @property
    def inputs(self) -> dict:
        """The target rate point (prefill, decode tokens/s) and the region it was mixed in (its label)."""
        return {"target": [float(x) for x in self.target], "region": getattr(self.region, "label", None)}

    def to_dict(self) -> dict:
        return plain({"target_tokens_per_s": list(self.target), "feasible": self.feasible, "scale": self.scale,
                      "shapes": self.shapes, "time_fractions": self.time_fractions,
                      "batch_seconds": self.batch_seconds, "batches_per_s": self.batches_per_s,
                      "batch_fractions": self.batch_fractions, "utilization": self.utilization,
                      "served_tokens_per_s": list(self.served_tokens_per_s),
                      "shortfall_tokens_per_s": list(self.shortfall_tokens_per_s), "reason": self.reason,
                      "method": "lp (cvxpy)"})

    def plot(self, ax=None, **kw):
        """The region with the target and the shapes of the mix."""
        from ..plotting.region import plot_region

        return plot_region(self.region, point=self.target, mix=self, ax=ax, **kw)

    def table(self) -> str:
        from ..results import MEANINGFUL_DIGITS, fmt_value

        def n(x):
            return fmt_value(x, digits=MEANINGFUL_DIGITS)

        lines = [f"{'shape (x, y)':>14}  {'t ms':>8}  {'time share':>10}  {'batch share':>11}  {'batches/s':>9}"]
        for s, t, f, bf, bps in zip(self.shapes, self.batch_seconds, self.time_fractions, self.batch_fractions,
                                    self.batches_per_s):
            lines.append(f"{f'({s[0]}, {s[1]})':>14}  {n(t * 1e3):>8}  {f:>10.4f}  {bf:>11.4f}  {n(bps):>9}")
        return "\n".join(lines)


def region_mix(engine: Engine | StabilityRegion, point) -> RegionMix:
    """The time-sharing of batch shapes that serves ``point = (lambda_p, lambda_d)`` tokens/s.

    Parameters
    ----------
    engine : Engine or StabilityRegion
        The engine (its region is computed) or a region already computed.
    point : pair of float
        Target prefill and decode tokens per second (``>= 0``).

    Returns
    -------
    RegionMix
        Feasible: the mix using the least time (utilisation ``1/scale``).  Infeasible: the
        largest scaled-down target it can serve (``scale < 1``) and the least total shortfall
        ``min 1^T s`` over ``sum_i w_i v_i + s >= point``, ``sum_i w_i <= 1``.

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347, §6.

    Examples
    --------
    >>> from fluidq import Engine, Staircase, region_mix
    >>> e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
    >>> m = region_mix(e, (29 / 0.04675, 99 / 0.04675))
    >>> m.shapes.tolist(), round(float(m.time_fractions[0]), 6)
    ([[29, 99]], 1.0)
    """
    region = engine if isinstance(engine, StabilityRegion) else stability_region(engine)
    pts, _ = as_points(point)
    p = pts[0]
    idx, V = _shape_rates(region)
    shapes_all = region.shapes[idx]
    secs_all = region.batch_seconds[idx]
    s, w = _solve_scale(region, p)
    if math.isinf(s):
        return _result(region, p, True, s, np.zeros(0, int).reshape(0, 2), np.zeros(0), np.zeros(0), (0.0, 0.0),
                       "the origin: nothing to serve")
    feasible = s >= 1 - _REL_TOL
    if feasible:
        w = w / s  # the least-time mix serving exactly the target (homogeneity of the LP)
        shortfall = np.zeros(2)
        n_used = int(np.sum(w > _W_EPS * w.sum()))
        reason = (f"served by time-sharing {n_used} batch shape{'' if n_used == 1 else 's'} at utilisation "
                  f"{_share(w.sum())}; the target can grow by x{_share(s)} along its direction")
    else:
        import cvxpy as cp

        # in units of the larger of the region and the target, so that both stay O(1) for the solver
        unit = max(float(np.max(V)), float(np.max(p)))
        w2 = cp.Variable(len(idx), nonneg=True)
        gap = cp.Variable(2, nonneg=True)
        prob = cp.Problem(cp.Minimize(cp.sum(gap)), [(V / unit).T @ w2 + gap >= p / unit, cp.sum(w2) <= 1])
        _lp(prob)
        shortfall = np.clip(np.asarray(gap.value, dtype=float) * unit, 0.0, None)
        # LP round-off: a shortfall below 1e-9 of the target's size is zero (not "1.245e-06 prefill")
        shortfall[shortfall <= 1e-9 * max(float(np.max(np.abs(p))), 1.0)] = 0.0
        if 1 - s <= 1e-6:  # a point given to a few digits from a vertex: outside only by rounding
            reason = (f"on the boundary within rounding (x{s:.9f} of the target fits; short by "
                      f"{shortfall[0]:.3g} prefill and {shortfall[1]:.3g} decode tokens/s); the shares below serve "
                      "the largest multiple of the target that fits")
        else:
            reason = (f"outside the stability region: at most x{_share(s)} of the target along its direction; "
                      f"short by {_tokens(shortfall[0])} prefill and {_tokens(shortfall[1])} decode tokens/s at least")
    keep = w > _W_EPS * max(float(w.sum()), 1e-300)  # interior-point noise on unused shapes
    return _result(region, p, bool(feasible), s, shapes_all[keep], w[keep], secs_all[keep], tuple(shortfall), reason)


def _share(x: float) -> str:
    """A factor or utilisation for prose: four significant digits (``fluidq.results.fmt_value``)."""
    from ..results import MEANINGFUL_DIGITS, fmt_value

    return fmt_value(x, digits=MEANINGFUL_DIGITS)


def _tokens(x: float) -> str:
    """A token rate for prose: ``0``, ``< 0.001`` (a thousandth of a token per second is below any
    measurement), or four significant digits with thousands separators."""
    from ..results import MEANINGFUL_DIGITS, fmt_value

    if x == 0:
        return "0"
    return "< 0.001" if abs(x) < 5e-4 else fmt_value(x, digits=MEANINGFUL_DIGITS)


def _result(region, p, feasible, s, shapes, w, secs, shortfall, reason):
    bps = w / secs if len(w) else np.zeros(0)
    bfrac = bps / bps.sum() if len(w) and bps.sum() > 0 else np.zeros(len(w))
    served = (shapes.T.astype(float) @ bps) if len(w) else np.zeros(2)
    return RegionMix(target=(float(p[0]), float(p[1])), feasible=feasible, scale=float(s), shapes=shapes,
                     time_fractions=w, batch_seconds=secs, batches_per_s=bps, batch_fractions=bfrac,
                     utilization=float(np.sum(w)), served_tokens_per_s=(float(served[0]), float(served[1])),
                     shortfall_tokens_per_s=tuple(float(v) for v in shortfall), reason=reason, region=region)
