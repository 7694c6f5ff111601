"""The stability region of one engine under a token budget and a batch-size limit.

With at most ``k_max`` requests per batch the capacity of an engine is no longer one number but
a region in the plane of (prefill tokens/s, decode tokens/s): the downward closure of the
convex hull of the rate points ``(x, y)/t(x+y)`` of the admissible batch shapes (time-sharing
between shapes).  A workload with ``m_p`` prompt and ``m_d`` output tokens per request at rate
``lambda`` sits at ``(lambda m_p, lambda m_d)``; no scheduler is stable outside the region.

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347, §6 (Theorem 10); the admissibility rule for a batch under ``k_max`` is as
reconstructed in the project reference (``y + n_p <= k_max`` with ``n_p >= 1`` prefilling
requests when the batch holds prefill).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import MAX_TOKEN_RATE, MIN_TOKEN_RATE, TOKEN_RATE_WHY
from ..batchtime import ContextAware
from ..engine import Engine
from ..errors import ParameterError, ParameterTypeError
from ..results import Result, plain
from .shapes import extreme_shapes

__all__ = ["StabilityRegion", "RegionMargin", "stability_region", "as_points", "region_aware_shapes"]

_REL_TOL = 1e-9


def as_points(point, name: str = "point") -> tuple[np.ndarray, bool]:
    """``(array m x 2, single)``: validated (prefill, decode) tokens/s points."""
    if type(point) is tuple and len(point) == 2:  # fast path for one (x, y) pair of Python numbers
        x, y = point
        if (type(x) in (float, int) and type(y) in (float, int) and 0 <= x <= MAX_TOKEN_RATE and 0 <= y <= MAX_TOKEN_RATE
                and (x >= MIN_TOKEN_RATE or y >= MIN_TOKEN_RATE or x == y == 0)):
            return np.array([[x, y]], dtype=float), True
    try:
        if np.asarray(point).dtype.kind in "bUSc":  # True, "5", 1j: not token rates
            raise TypeError("not numbers")
        arr = np.asarray(point, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterTypeError(f"{name}={point!r}: expected a (prefill_tokens_per_s, decode_tokens_per_s) "
                                 "pair or an m x 2 array") from exc
    single = arr.ndim == 1
    if single:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ParameterError(name, point, "a (prefill_tokens_per_s, decode_tokens_per_s) pair or an m x 2 array")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
        raise ParameterError(name, tuple(float(v) for v in arr[bad]), "finite token rates (no NaN or inf)")
    if np.any(arr < 0):
        bad = int(np.flatnonzero((arr < 0).any(axis=1))[0])
        raise ParameterError(name, tuple(float(v) for v in arr[bad]),
                             "token rates >= 0 (prefill, decode tokens per second)")
    _bounded(arr, name)
    return arr, single


def _bounded(arr: np.ndarray, name: str) -> None:
    """Token rates within [MIN_TOKEN_RATE, MAX_TOKEN_RATE] (a zero point, or a zero coordinate, is fine)."""
    top = arr.max(axis=1)
    bad = (top > MAX_TOKEN_RATE) | ((top > 0) & (top < MIN_TOKEN_RATE))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        what = (f"token rates <= {MAX_TOKEN_RATE:g} tokens/s" if top[i] > MAX_TOKEN_RATE else
                f"a largest token rate >= {MIN_TOKEN_RATE:g} tokens/s (or the origin)")
        raise ParameterError(name, tuple(float(v) for v in arr[i]), what, TOKEN_RATE_WHY)


@dataclass(frozen=True)
class RegionMargin:
    """How far a point lies inside (or outside) a stability region.

    Attributes
    ----------
    point : tuple
        The (prefill, decode) tokens/s point.
    scale : float
        The largest ``s`` with ``s * point`` in the region (``inf`` at the origin), from the
        time-sharing LP: ``> 1`` inside, ``< 1`` outside.
    load : float
        ``1 / scale``: the point's load relative to the region boundary along its direction.
    distance_tokens_per_s : float
        Signed Euclidean distance to the boundary: ``> 0`` inside, ``< 0`` outside.
    inside : bool
        ``scale >= 1`` (within a relative tolerance of 1e-9).
    method : str
        ``"lp"`` (cvxpy) for ``scale``.
    """

    point: tuple
    scale: float
    load: float
    distance_tokens_per_s: float
    inside: bool
    method: str = "lp"

    def to_dict(self) -> dict:
        return plain({"point": list(self.point), "scale": self.scale, "load": self.load,
                      "distance_tokens_per_s": self.distance_tokens_per_s, "inside": self.inside,
                      "method": self.method})


@dataclass(frozen=True, eq=False)
class StabilityRegion(Result):
    """The stability region of an engine: a convex polygon in (prefill, decode) tokens/s.

    Attributes
    ----------
    vertices : ndarray, shape (n, 2)
        Polygon vertices, tokens per second, counter-clockwise from the origin.
    shapes : ndarray of int, shape (n, 2)
        The batch shape ``(prefill tokens, decode tokens)`` behind each vertex: ``(0, 0)`` for the
        origin (idle); for a vertex that only the downward closure adds (``kinds == "dominated"``),
        the shape whose rate point dominates it.
    kinds : tuple of str
        ``"idle"``, ``"batch"`` (the rate point of one batch shape) or ``"dominated"``.
    batch_seconds : ndarray, shape (n,)
        ``t(x + y)`` of each vertex's shape (0 for the origin).
    A, b : ndarray
        Facets: the region is ``{z : A z <= b}``; rows of ``A`` are unit outward normals.
    facet_vertices : ndarray of int, shape (m, 2)
        The two vertex indices of each facet.
    capacity_tokens_per_s : float
        Theorem 2's single number ``sup_{b <= b_max} b/t(b)`` (the region without ``k_max``).
    engine : Engine
    candidate_shapes : int
        How many batch shapes were enumerated (the candidates that can be extreme).
    """

    vertices: np.ndarray
    shapes: np.ndarray
    kinds: tuple
    batch_seconds: np.ndarray
    A: np.ndarray
    b: np.ndarray
    facet_vertices: np.ndarray
    capacity_tokens_per_s: float
    engine: Engine
    candidate_shapes: int
    kv_tokens: float | None = None
    label: str = "engine"
    prompt_tokens: int | None = None
    _scale: float = field(default=1.0, repr=False)

    # -- geometry ---------------------------------------------------------------------------
    @property
    def inputs(self) -> dict:
        """What the region was computed from: the engine, the cached KV tokens and the prompt length."""
        return {"engine": self.engine.to_dict() if self.engine is not None else None, "label": self.label,
                "kv_tokens": self.kv_tokens, "prompt_tokens": self.prompt_tokens}

    def contains(self, point, *, rtol: float = _REL_TOL):
        """Is ``point`` (prefill, decode tokens/s) in the region?  Vectorised over an ``m x 2`` array.

        Returns a bool for one point, a bool array for many.  Points on the boundary count as
        inside (relative tolerance ``rtol`` of the region's size).
        """
        pts, single = as_points(point)
        if single:
            return bool((self.A @ pts[0] <= self.b + rtol * self._scale).all())
        return np.all(pts @ self.A.T <= self.b + rtol * self._scale, axis=1)

    def scale_of(self, point):
        """Largest ``s`` with ``s * point`` in the region (closed form over the facets).

        ``inf`` for the origin.  Vectorised like :meth:`contains`.
        """
        pts, single = as_points(point)
        proj = pts @ self.A.T  # (m, facets)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(proj > 0, self.b / np.where(proj > 0, proj, 1.0), np.inf)
        s = ratio.min(axis=1)
        return float(s[0]) if single else s

    def max_request_rate(self, prompt_tokens: float, output_tokens: float) -> float:
        """The largest ``lambda`` (requests/s) with ``(lambda m_p, lambda m_d)`` in the region."""
        from .._validate import real

        mp = real("prompt_tokens", prompt_tokens, nonnegative=True)
        md = real("output_tokens", output_tokens, nonnegative=True)
        if mp + md <= 0:
            raise ParameterError("prompt_tokens + output_tokens", mp + md, "a positive mean request size")
        return self.scale_of((mp, md))

    def boundary_point(self, direction):
        """The point where the ray from the origin along ``direction`` leaves the region."""
        d, _ = as_points(direction, "direction")
        if not np.any(d[0] > 0):
            raise ParameterError("direction", direction, "a non-zero direction")
        return d[0] * self.scale_of(d[0])

    def distance(self, point) -> float:
        """Signed Euclidean distance to the boundary (tokens/s): ``> 0`` inside, ``< 0`` outside."""
        pts, _ = as_points(point)
        p = pts[0]
        slack = self.b - self.A @ p
        if np.all(slack >= 0):
            return float(slack.min())
        best = math.inf
        for i, j in self.facet_vertices:
            u, v = self.vertices[i], self.vertices[j]
            d = v - u
            tt = np.clip(np.dot(p - u, d) / max(np.dot(d, d), 1e-300), 0.0, 1.0)
            best = min(best, float(np.linalg.norm(p - (u + tt * d))))
        return -best

    def margin(self, point) -> RegionMargin:
        """How far inside or outside: the time-sharing LP (cvxpy) and the Euclidean distance.

        ``scale`` solves ``max s`` subject to ``sum_i w_i v_i >= s * point``, ``sum_i w_i <= 1``,
        ``w >= 0`` over the batch shapes' rate points ``v_i``.
        """
        pts, _ = as_points(point)
        p = pts[0]
        from .mix import _solve_scale

        s, _ = _solve_scale(self, p)
        inside = bool(s >= 1 - _REL_TOL)
        return RegionMargin(point=(float(p[0]), float(p[1])), scale=s, load=(0.0 if math.isinf(s) else 1.0 / s),
                            distance_tokens_per_s=self.distance(p), inside=inside)

    @property
    def batch_vertices(self) -> np.ndarray:
        """Indices of the vertices that are the rate point of one batch shape."""
        return np.array([i for i, k in enumerate(self.kinds) if k == "batch"], dtype=int)

    @property
    def area(self) -> float:
        """Area of the region, (tokens/s)^2."""
        x, y = self.vertices[:, 0], self.vertices[:, 1]
        return float(0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))

    def table(self) -> str:
        """The vertices as a plain-text table (tokens/s and the batch shape), each number to its meaningful
        digits (:data:`fluidq.results.MEANINGFUL_DIGITS`, as in the text around it)."""
        from ..results import MEANINGFUL_DIGITS, fmt_value

        def n(x):
            return fmt_value(x, digits=MEANINGFUL_DIGITS)

        lines = [f"{'vertex':>6}  {'prefill tok/s':>14}  {'decode tok/s':>13}  {'shape (x, y)':>14}  "
                 f"{'t(x+y) ms':>9}  kind"]
        for i, (v, s, k, t) in enumerate(zip(self.vertices, self.shapes, self.kinds, self.batch_seconds)):
            lines.append(f"{i:>6}  {n(v[0]):>14}  {n(v[1]):>13}  {f'({s[0]}, {s[1]})':>14}  {n(t * 1e3):>9}  {k}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return plain({"vertices_tokens_per_s": self.vertices, "shapes": self.shapes, "kinds": list(self.kinds),
                      "batch_seconds": self.batch_seconds, "facets": {"A": self.A, "b": self.b,
                                                                       "vertices": self.facet_vertices},
                      "capacity_tokens_per_s": self.capacity_tokens_per_s, "area": self.area,
                      "candidate_shapes": self.candidate_shapes, "engine": self.engine.to_dict(),
                      "kv_tokens": self.kv_tokens, "label": self.label, "prompt_tokens": self.prompt_tokens,
                      "method": "convex hull of admissible batch shapes, downward closure"})

    def plot(self, ax=None, **kw):
        """Draw the region (see :func:`fluidq.plotting.region.plot_region`)."""
        from ..plotting.region import plot_region

        return plot_region(self, ax=ax, **kw)

    def __repr__(self) -> str:
        return (f"StabilityRegion({self.label!r}, b_max={self.engine.b_max}, k_max={self.engine.k_max}, "
                f"{len(self.vertices)} vertices, capacity={self.capacity_tokens_per_s:.4g} tokens/s)")


def _hull(points: np.ndarray) -> np.ndarray:
    """Indices of the convex-hull vertices, counter-clockwise, collinear points dropped."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    idx = np.asarray(hull.vertices, dtype=int)  # counter-clockwise in 2-D
    scale = float(np.max(np.abs(points)))
    while len(idx) > 3:  # drop (numerically) collinear vertices, all of a pass at once (vectorised)
        a, o, c = points[np.roll(idx, 1)], points[idx], points[np.roll(idx, -1)]
        cross = (o[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (o[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
        flat = np.abs(cross) <= 1e-12 * scale * scale
        if not flat.any():
            break
        if flat.sum() > len(idx) - 3:  # keep a polygon: drop the flattest first
            flat = np.zeros(len(idx), bool)
            flat[np.argsort(np.abs(cross))[: len(idx) - 3]] = True
        idx = idx[~flat]
    return idx


def stability_region(engine: Engine, *, kv_tokens: float | None = None,
                     prompt_tokens: int | None = None) -> StabilityRegion:
    """The stability region of ``engine`` in (prefill tokens/s, decode tokens/s).

    Parameters
    ----------
    engine : Engine
        Its batch-time model, token budget ``b_max`` and batch-size limit ``k_max`` (``None``: no
        limit, and the region is the triangle ``x + y <= sup_b b/t(b)`` of Theorem 2).
    kv_tokens : float, optional
        For a context-aware batch time: the cached KV tokens read per batch (default: ignore the
        attention term, which is optimistic).
    prompt_tokens : int, optional
        Every prompt has this many tokens, so one request brings at most this many prefill tokens
        to a batch and ``n_p >= ceil(x / prompt_tokens)`` (default ``None``: one prefilling
        request may bring any number, the reconstructed rule of the paper's §6).  With short
        prompts and a binding ``k_max`` this shrinks the region: e.g. 99 decode tokens leave one
        slot, hence at most one prompt's worth of prefill, in the batch.

    Returns
    -------
    StabilityRegion

    Notes
    -----
    A batch of ``x`` prefill and ``y`` decode tokens is admissible when ``x + y <= b_max`` and
    ``y + n_p <= k_max`` with ``n_p >= 1`` prefilling requests when ``x > 0`` *(reconstructed)*.
    Only the shapes that can be extreme are enumerated (see :mod:`fluidq.region.shapes`): for a
    fixed total the ends of the decode count, and only at the totals where the batch-time model
    bends.  The region is the convex hull of their rate points with the origin and the axis
    projections (its downward closure: serving less of one kind is always possible).

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347, §6 (batch-size limit, Theorem 10).

    Examples
    --------
    >>> from fluidq import Engine, Staircase, stability_region
    >>> e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=128, k_max=100)
    >>> r = stability_region(e)
    >>> r.shapes.tolist()
    [[0, 0], [128, 0], [29, 99], [0, 100]]
    >>> bool(r.contains((620.0, 2117.0)))
    True
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    bt = engine.batch_time
    if isinstance(bt, ContextAware) and kv_tokens is not None:
        bt = bt.at_context(kv_tokens)
    elif kv_tokens is not None:
        raise ParameterError("kv_tokens", kv_tokens, "None unless the batch time is context-aware")
    from .._validate import MAX_REQUEST_TOKENS, REQUEST_WHY, integer

    prompt_tokens = integer("prompt_tokens", prompt_tokens, minimum=1, allow_none=True, maximum=MAX_REQUEST_TOKENS,
                            why=REQUEST_WHY)
    shapes, secs = extreme_shapes(bt, engine.b_max, engine.k_max, prompt_tokens)
    cap, _ = bt.best_rate(engine.b_max)
    return _build(shapes, secs, engine, float(cap), kv_tokens=kv_tokens, prompt_tokens=prompt_tokens)


def _build(shapes, secs, engine, cap, *, kv_tokens=None, label="engine", prompt_tokens=None) -> StabilityRegion:
    """The region of the rate points ``shapes / secs`` (downward-closed convex hull)."""
    rates = shapes / secs[:, None]
    n = len(rates)
    # downward closure: the origin and both axis projections of every rate point
    pts = np.concatenate([rates, np.stack([rates[:, 0], np.zeros(n)], 1), np.stack([np.zeros(n), rates[:, 1]], 1),
                          np.zeros((1, 2))])
    owner = np.concatenate([np.arange(n), np.arange(n), np.arange(n), [-1]])
    kind = ["batch"] * n + ["proj"] * (2 * n) + ["idle"]
    # a projection that coincides with a batch rate point is that batch
    idx = _hull(pts)
    # rotate so the origin comes first
    origin_pos = [i for i, j in enumerate(idx) if kind[j] == "idle" or np.all(pts[j] == 0)]
    if not origin_pos:  # pragma: no cover - the origin is always extreme
        raise RuntimeError("the origin is not a vertex of the region")
    idx = np.roll(idx, -origin_pos[0])
    verts = pts[idx]
    vshapes, vkinds, vsecs = [], [], []
    for j in idx:
        if np.all(pts[j] == 0):
            vshapes.append((0, 0))
            vkinds.append("idle")
            vsecs.append(0.0)
            continue
        o = owner[j]
        hit = np.flatnonzero(np.all(np.isclose(rates, pts[j], rtol=1e-12, atol=0), axis=1))
        if hit.size:
            o = int(hit[0])
            vkinds.append("batch")
        else:
            vkinds.append("dominated")
        vshapes.append((int(shapes[o, 0]), int(shapes[o, 1])))
        vsecs.append(float(secs[o]))
    m = len(verts)
    fv = np.array([(i, (i + 1) % m) for i in range(m)], dtype=int)
    d = verts[fv[:, 1]] - verts[fv[:, 0]]
    normals = np.stack([d[:, 1], -d[:, 0]], axis=1)  # outward for a counter-clockwise polygon
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    offsets = np.einsum("ij,ij->i", normals, verts[fv[:, 0]])
    scale = float(np.max(np.abs(verts)))
    return StabilityRegion(vertices=verts, shapes=np.array(vshapes, dtype=int), kinds=tuple(vkinds),
                           batch_seconds=np.array(vsecs), A=normals, b=offsets, facet_vertices=fv,
                           capacity_tokens_per_s=float(cap), engine=engine, candidate_shapes=int(n),
                           kv_tokens=kv_tokens, label=label, prompt_tokens=prompt_tokens, _scale=scale)


def region_aware_shapes(engine: Engine, target_tokens_per_s=None, prompt_tokens: int | None = None
                        ) -> tuple[tuple[tuple[int, int], ...], tuple[float, float] | None]:
    """The batch shapes :class:`fluidq.policies.region_aware.RegionAware` switches between, and its
    validated target.

    Without a target: every batch vertex of the region, from decode-heavy to prefill-heavy (by angle
    from the decode axis).  With a target ``(lambda_p, lambda_d)``: the shapes of the facet the ray
    from the origin through the target leaves the region by (decode-heavy first), or the one shape of
    the vertex it leaves through (Li, Dai, Peng, arXiv:2504.07347, §6).
    """
    region = stability_region(engine, prompt_tokens=prompt_tokens)
    idx = region.batch_vertices
    verts, shp = region.vertices[idx], region.shapes[idx]
    ang = np.arctan2(verts[:, 0], verts[:, 1])
    ladder = [tuple(int(v) for v in shp[i]) for i in np.argsort(ang, kind="stable")]
    if target_tokens_per_s is None:
        return tuple(ladder), None
    p, _ = as_points(target_tokens_per_s, "target_tokens_per_s")
    p = p[0]
    if not np.any(p > 0):
        raise ParameterError("target_tokens_per_s", target_tokens_per_s, "a non-zero target")
    target = (float(p[0]), float(p[1]))
    q = region.boundary_point(p)
    near = np.linalg.norm(region.vertices - q, axis=1) <= 1e-9 * region._scale
    hit = [i for i in np.flatnonzero(near) if region.kinds[i] != "idle"]
    if hit:  # the ray leaves through a vertex: that shape alone
        return (tuple(int(v) for v in region.shapes[hit[0]]),), target
    proj = region.A @ p
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(proj > 0, region.b / np.where(proj > 0, proj, 1.0), np.inf)
    f = int(np.argmin(ratio))
    i, j = region.facet_vertices[f]
    pair = [tuple(int(v) for v in region.shapes[i]), tuple(int(v) for v in region.shapes[j])]
    pair.sort(key=lambda s: ladder.index(s) if s in ladder else len(ladder))
    return tuple(dict.fromkeys(pair)), target
