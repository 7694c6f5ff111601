"""Exact piecewise-linear fluid paths of a network of engines.

State: the fluid level ``z_i`` (tokens) of every buffer ``i`` (a hop of a request class at a service
point) and the backlog ``q`` (requests) waiting at each input of every join.  Between two events the
allocation ``u`` (tokens/s served per buffer) is constant, so the path is linear; the next event is the
first buffer or join input that empties.  The allocation of a phase is the fixed point of the
discipline at every point:

* priority groups, highest first (the station's ``priority`` list; unlisted hops form the last group);
* inside a group, empty buffers are served at their inflow (they stay empty) while capacity lasts;
  the non-empty buffers share what is left in proportion to their nominal loads (a work-conserving
  token sharing); the first slot that cannot be fully served takes the remainder and later slots get
  nothing.

Because inflows depend on allocations upstream (and, through cycles, on the allocation itself), the
fixed point is found *exactly*: sweeps of the discipline starting from zero allocation propagate
service forward from the non-empty buffers (the causal start-up of the phase) until the structure --
which slot is cut at each point, which input of a join is the slowest -- repeats; that structure gives a
linear system whose solution is accepted when one more sweep reproduces it.  Priority fluid models can
have several consistent allocations (Lu--Kumar from all fluid in class 1 has a "balanced" one that
drains and a causal one that diverges); the causal one is the limit of the stochastic network started
there.  Only when the sweeps do not settle are all structures enumerated; then several consistent
solutions are reported (``non_unique``) and the one closest to the previous phase is taken.  The
Lyapunov search in :mod:`fluidq.fluid.stability` uses *every* consistent allocation of each mode.

The model is homogeneous (scaling the initial state by ``c`` scales the path by ``c`` in space and
time), so a path that comes back to ``g`` times an earlier state in the same mode diverges (``g > 1``)
or drains in finite time (``g < 1``) with growth factor ``g`` per cycle.

References
----------
Dai, "On positive Harris recurrence of multiclass queueing networks: a unified approach via fluid limit
models", Ann. Appl. Probab. 5 (1995).  Li, Dai, Peng, arXiv:2504.07347 (fluid backlog of one engine).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from .._validate import integer
from ..errors import ParameterError, ParameterTypeError, TopologyError
from ..results import Result, plain

__all__ = ["FluidPath", "FluidSystem", "fluid_path"]


def _names(items, limit=12):
    items = list(items)
    more = f", ... ({len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(repr(x) for x in items[:limit]) + more


def _require_buffers(fm):
    """Raise :class:`~fluidq.errors.TopologyError` when no request class visits an engine.

    A class whose route visits no engine (every step an empty :class:`~fluidq.network.Choice` option,
    or options of probability 0) leaves the network at once and adds no fluid; that is harmless beside
    classes that do visit engines, but a network made only of such classes has no fluid model at all
    (no buffers) and is almost certainly a mistake in its description.
    """
    if fm.n == 0:
        names = [c if isinstance(c, str) else getattr(c, "name", c) for c in fm.classes]
        raise TopologyError(f"no request class visits an engine ({'class' if len(names) == 1 else 'classes'} "
                            f"{_names(names)}: every route leaves at once, "
                            "e.g. a Choice whose only option is an empty route); the fluid model has no buffers")


def _network_flow(network):
    from ..network.model import Network

    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    fm = network.flow
    _require_buffers(fm)
    return fm


class FluidSystem:
    """Matrices of a compiled :class:`~fluidq.fluid.compile.FlowModel` (internal)."""

    def __init__(self, fm):
        _require_buffers(fm)
        self.fm = fm
        n, C, nJ = fm.n, len(fm.classes), len(fm.joins)
        self.n, self.C, self.nJ = n, C, nJ
        self.w = np.array([b.w for b in fm.buffers], dtype=float)
        self.lam = fm.ext_rate.astype(float)
        self.cap = fm.capacity.astype(float)

        def mats(sources_list):
            m = len(sources_list)
            E, B, J = np.zeros((m, C)), np.zeros((m, n)), np.zeros((m, nJ))
            for i, srcs in enumerate(sources_list):
                for kind, j, co in srcs:
                    (E if kind == "ext" else B if kind == "buf" else J)[i, j] += co
            return E, B, J

        self.E, self.B, self.J = mats(fm.inflow)
        self.ext_dem = self.w * (self.E @ self.lam)            # tokens/s from outside per buffer
        inputs = [inp for (_, ins, _) in fm.joins for inp in ins]
        self.join_of = np.array([k for k, (_, ins, _) in enumerate(fm.joins) for _ in ins], dtype=np.int64)
        self.EI, self.BI, self.JI = mats(inputs)
        self.G = len(inputs)
        self.ext_in = self.EI @ self.lam
        self.phi = np.array([max(b.rate * b.w, 1e-12) for b in fm.buffers])
        # slots per point: groups by priority rank (ascending)
        self.groups = []
        for p in range(len(fm.points)):
            idx = [i for i in range(n) if fm.point_of[i] == p]
            ranks = sorted({int(fm.priority_rank[i]) for i in idx})
            self.groups.append([[i for i in idx if fm.priority_rank[i] == r] for r in ranks])
        self.labels = tuple(b.label for b in fm.buffers)
        self.point_names = fm.points
        # rows of the linear systems: u_i - w_i (B (u/w) + J r)_i (demand rows)
        self.Mrow = np.zeros((n, n + nJ))
        self.Mrow[:, :n] = np.eye(n) - self.w[:, None] * self.B / self.w[None, :]
        self.Mrow[:, n:] = -self.w[:, None] * self.J
        # fast path: every point is a strict priority order (groups of one) and there are no joins
        self.strict = nJ == 0 and all(len(g) == 1 for groups in self.groups for g in groups)
        if self.strict:
            self._orders = [[g[0] for g in groups] for groups in self.groups]
            self._cap_list = self.cap.tolist()
            self._ext_list = self.ext_dem.tolist()
            coef = self.w[:, None] * self.B / self.w[None, :]
            self._src = [[(int(j), float(coef[i, j])) for j in np.flatnonzero(coef[i])] for i in range(n)]
            self.order = np.array([g[0] for groups in self.groups for g in groups], dtype=np.int64)
            pt = np.array([p for p, groups in enumerate(self.groups) for _ in groups], dtype=np.int64)
            self.order_point = pt
            starts = np.r_[0, np.flatnonzero(np.diff(pt)) + 1] if len(pt) else np.zeros(0, dtype=np.int64)
            self.seg_start = np.zeros(len(pt), dtype=np.int64)
            for a, b in zip(starts, list(starts[1:]) + [len(pt)]):
                self.seg_start[a:b] = a
            self.order_group = np.array([gi for groups in self.groups for gi, _ in enumerate(groups)], dtype=np.int64)
            self.cap_o = self.cap[pt]
            self.points_with = sorted(set(pt.tolist()))

    def _sweep_strict(self, u, pos):
        """Pure-Python sweep for strict priorities (no joins): returns ``(u_new, structure)``.

        Small dense numpy operations cost microseconds each; a loop over sparse sources is faster
        for the sizes met here.
        """
        uu = u.tolist() if isinstance(u, np.ndarray) else u
        un = [0.0] * self.n
        struct = [None] * len(self.groups)
        ext, src = self._ext_list, self._src
        for p, order in enumerate(self._orders):
            rem = self._cap_list[p]
            cut = False
            for gi, i in enumerate(order):
                if cut:
                    continue
                if pos[i]:
                    un[i] = rem if rem > 0 else 0.0
                    cut = True
                else:
                    d = ext[i]
                    for j, co in src[i]:
                        d += co * uu[j]
                    if d <= rem * (1 + 1e-12):
                        un[i] = d if d < rem else (rem if rem > 0 else 0.0)
                        rem -= d
                        continue
                    un[i] = rem if rem > 0 else 0.0
                    cut = True
                struct[p] = ("wf", gi, (), ((i, 1.0),))
        return np.array(un), tuple(struct)

    # demand of buffers and rates of join inputs given (u, r)
    def demand(self, u, r):
        return self.ext_dem + self.w * (self.B @ (u / self.w) + self.J @ r)

    def input_rates(self, u, r):
        if self.G == 0:
            return np.zeros(0)
        return self.ext_in + self.BI @ (u / self.w) + self.JI @ r

    def _point_alloc(self, p, dem, pos, choice, un):
        """Allocate point ``p`` given demands; writes ``un``; returns the structure of ``p``."""
        rem = self.cap[p]
        for gi, grp in enumerate(self.groups[p]):
            ne = [i for i in grp if pos[i]]
            em = [i for i in grp if not pos[i]]
            ch = None if choice is None else choice.get((p, gi))
            if ch is not None and ne:
                # a vertex of the sharing set: empties served at their demand (in order), rest to ``ch``
                D, S = [], []
                for i in em:
                    if dem[i] <= rem * (1 + 1e-12) + 1e-300:
                        un[i] = min(dem[i], rem)
                        rem -= un[i]
                        D.append(i)
                    else:
                        un[i] = max(rem, 0.0)
                        rem = 0.0
                        S = [(i, 1.0)]
                        break
                if not S:
                    un[ch] = max(rem, 0.0)
                    S = [(ch, 1.0)]
                return ("wf", gi, tuple(D), tuple(S))
            tot_em = float(sum(dem[i] for i in em))
            if not ne and tot_em <= rem * (1 + 1e-12) + 1e-300:
                for i in em:
                    un[i] = dem[i]
                rem = max(rem - tot_em, 0.0)
                continue
            # saturated group: water-filling (GPS with weights phi); empties below the level are
            # served at their demand and stay empty, the others share what is left
            D: list = []
            S = list(ne) + list(em)
            while True:
                phis = sum(self.phi[i] for i in S)
                theta = (rem - sum(dem[i] for i in D)) / phis
                move = [i for i in S if not pos[i] and dem[i] <= self.phi[i] * theta]
                if not move:
                    break
                D.extend(move)
                S = [i for i in S if i not in move]
                if not S:
                    break
            if not S:  # cannot happen unless rounding: treat as unsaturated
                for i in D:
                    un[i] = dem[i]
                rem = max(rem - sum(dem[i] for i in D), 0.0)
                continue
            phis = sum(self.phi[i] for i in S)
            fr = tuple((i, self.phi[i] / phis) for i in sorted(S))
            left = max(rem - sum(dem[i] for i in D), 0.0)
            for i in D:
                un[i] = dem[i]
            for i, f in fr:
                un[i] = f * left
            return ("wf", gi, tuple(sorted(D)), fr)
        return None

    def sweep(self, u, r, pos, qzero, choice=None):
        """One pass of the discipline with demands from ``(u, r)``: new ``(u, r)`` and the structure."""
        if self.strict and not choice:
            un, struct = self._sweep_strict(u, pos)
            return un, np.zeros(0), (struct, ())
        dem = self.demand(u, r)
        un = np.zeros(self.n)
        struct = tuple(self._point_alloc(p, dem, pos, choice, un) for p in range(len(self.groups)))
        rn = np.zeros(self.nJ)
        jstruct = []
        if self.nJ:
            ir = self.input_rates(u, r)
            for k in range(self.nJ):
                ins = np.flatnonzero(self.join_of == k)
                zs = [g for g in ins if qzero[g]] or list(ins)
                g = min(zs, key=lambda g: ir[g])
                rn[k] = ir[g]
                jstruct.append(int(g))
        return un, rn, (struct, tuple(jstruct))

    def solve_structure(self, structure, pos):
        """Solve the linear system of a structure for ``(u, r)``; ``None`` if singular."""
        n, nJ = self.n, self.nJ
        A = np.zeros((n + nJ, n + nJ))
        b = np.zeros(n + nJ)
        pstruct, jstruct = structure
        winv = 1.0 / self.w

        drows: list = []

        def demand_row(i):
            # u_i - w_i (B (u/w) + J r) = ext_dem_i (filled in below, vectorised)
            drows.append(i)

        for p, groups in enumerate(self.groups):
            cut = pstruct[p]
            gcut = len(groups) if cut is None else cut[1]
            before = []
            for gi, grp in enumerate(groups):
                if gi < gcut:
                    for i in grp:
                        demand_row(i)
                        before.append(i)
                elif gi == gcut:
                    D, S = cut[2], dict(cut[3])
                    for i in D:
                        demand_row(i)
                    for i in grp:
                        if i in S:
                            A[i, i] = 1.0
                            for j in before + list(D):
                                A[i, j] += S[i]
                            b[i] = S[i] * self.cap[p]
                        elif i not in D:
                            A[i, i] = 1.0
                else:
                    for i in grp:
                        A[i, i] = 1.0
        if drows:
            A[drows] += self.Mrow[drows]
            b[drows] = self.ext_dem[drows]
        for k, g in enumerate(jstruct):
            row = n + k
            A[row, row] = 1.0
            A[row, :n] -= self.BI[g] * winv
            A[row, n:] -= self.JI[g]
            b[row] = self.ext_in[g]
        try:
            x = np.linalg.solve(A, b)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(x)):
            return None
        return x[:n], x[n:]

    def candidate_structures(self, pos, qzero, choice=None, limit=4096):
        """Cut structures (saturated group, demand-limited set, sharing set) and join choices."""
        per_point = []
        for p, groups in enumerate(self.groups):
            opts = []
            has_ne = False
            for gi, grp in enumerate(groups):
                ne = [i for i in grp if pos[i]]
                em = [i for i in grp if not pos[i]]
                ch = None if choice is None else choice.get((p, gi))
                if ch is not None and ne:
                    for k in range(len(em) + 1):
                        S = ((em[k], 1.0),) if k < len(em) else ((ch, 1.0),)
                        opts.append(("wf", gi, tuple(em[:k]), S))
                    has_ne = True
                    break
                for m in range(len(em) + 1):
                    for D in itertools.combinations(em, m):
                        S = [i for i in grp if i not in D]
                        if not S:
                            continue
                        phis = sum(self.phi[i] for i in S)
                        opts.append(("wf", gi, tuple(sorted(D)), tuple((i, self.phi[i] / phis) for i in sorted(S))))
                if ne:
                    has_ne = True
                    break
            if not has_ne:
                opts.append(None)
            per_point.append(opts)
        per_join = []
        for k in range(self.nJ):
            ins = np.flatnonzero(self.join_of == k)
            zs = [int(g) for g in ins if qzero[g]] or [int(g) for g in ins]
            per_join.append(zs)
        count = 0
        for ps in itertools.product(*per_point):
            for js in itertools.product(*per_join):
                yield (tuple(ps), tuple(js))
                count += 1
                if count >= limit:
                    return

    def all_solutions(self, pos, qzero, choice=None):
        """Every consistent allocation ``u`` of the mode (several when the fluid model is not unique)."""
        tol = 1e-9 * max(float(self.cap.max()), 1.0)
        out = []
        for st in self.candidate_structures(pos, qzero, choice):
            sol = self.solve_structure(st, pos)
            if sol is None or np.min(sol[0], initial=0.0) < -tol:
                continue
            un, rn, _ = self.sweep(sol[0], sol[1], pos, qzero, choice)
            if np.max(np.abs(un - sol[0]), initial=0.0) <= tol and np.max(np.abs(rn - sol[1]), initial=0.0) <= tol:
                out.append(sol)
        return out

    def _join_rates(self, u, r, qzero):
        if not self.nJ:
            return r
        ir = self.input_rates(u, r)
        rn = np.array(r, dtype=float)
        for k in range(self.nJ):
            ins = np.flatnonzero(self.join_of == k)
            zs = [g for g in ins if qzero[g]] or list(ins)
            rn[k] = min(ir[g] for g in zs)
        return rn

    def _waterfill_level(self, p, u, r, pos, qzero):
        """Allocation of a single-group point by bisection on the water level, upstream first.

        Routes are trees, so buffer indices are a topological order: given a level ``theta`` the
        members' allocations follow one by one (``min(demand, phi theta)`` for an empty buffer,
        ``phi theta`` for a non-empty one) and their total is non-decreasing in ``theta``.
        """
        members = sorted(self.groups[p][0])
        cap = self.cap[p]

        def evaluate(theta):
            uu = np.array(u, dtype=float)
            rr = np.array(r, dtype=float)
            for i in members:
                if pos[i]:
                    uu[i] = self.phi[i] * theta
                else:
                    rr = self._join_rates(uu, rr, qzero)
                    d = self.ext_dem[i] + self.w[i] * (self.B[i] @ (uu / self.w) + (self.J[i] @ rr if self.nJ else 0.0))
                    uu[i] = min(d, self.phi[i] * theta)
            return float(uu[members].sum()), uu

        hi = cap / float(np.min(self.phi[members])) * 2.0
        tot, uu = evaluate(hi * 1e6)
        if tot <= cap:
            return uu, None
        lo = 0.0
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if evaluate(mid)[0] < cap:
                lo = mid
            else:
                hi = mid
        theta = hi
        _, uu = evaluate(theta)
        rr = self._join_rates(uu, r, qzero)
        dem = self.demand(uu, rr)
        D = tuple(i for i in members if not pos[i] and dem[i] < self.phi[i] * theta * (1 - 1e-9))
        S = [i for i in members if i not in D]
        phis = sum(self.phi[i] for i in S)
        return uu, ("wf", 0, D, tuple((i, self.phi[i] / phis) for i in S))

    def _level_iteration(self, pos, qzero, check):
        """Fallback fixed point: single-group points by water-level bisection, others by sweeps."""
        u = np.zeros(self.n)
        r = np.zeros(self.nJ)
        prev = None
        for _ in range(40):
            dem = self.demand(u, r)
            un = np.zeros(self.n)
            struct = []
            for p in range(len(self.groups)):
                if len(self.groups[p]) == 1 and self.groups[p][0]:
                    uu, stp = self._waterfill_level(p, u, r, pos, qzero)
                    un[self.groups[p][0]] = uu[self.groups[p][0]]
                    struct.append(stp)
                else:
                    struct.append(self._point_alloc(p, dem, pos, None, un))
            rn = self._join_rates(un, r, qzero)
            jst = []
            if self.nJ:
                ir = self.input_rates(un, rn)
                for k in range(self.nJ):
                    ins = np.flatnonzero(self.join_of == k)
                    zs = [g for g in ins if qzero[g]] or list(ins)
                    jst.append(int(min(zs, key=lambda g: ir[g])))
            st = (tuple(struct), tuple(jst))
            if st == prev:
                sol = self.solve_structure(st, pos)
                if sol is not None:
                    ok, _ = check(*sol)
                    if ok:
                        return sol[0], sol[1], st, 1
            prev = st
            u, r = un, rn
        return None

    def allocate(self, pos, qzero, warm=None, choice=None):
        """The phase allocation ``(u, r, structure, n_solutions)`` for the positive set ``pos``."""
        scale = max(float(self.cap.max()), 1.0)
        tol = 1e-9 * scale

        def check(u, r):
            un, rn, st = self.sweep(u, r, pos, qzero, choice)
            ok = np.max(np.abs(un - u), initial=0.0) <= tol and np.max(np.abs(rn - r), initial=0.0) <= tol
            return ok, st

        # Jacobi sweeps from zero propagate service forward from the non-empty buffers (the causal
        # start-up of the phase); once the structure repeats, the exact solve settles the values
        u = np.zeros(self.n)
        r = np.zeros(self.nJ)
        prev = None
        maxit = 3 * (self.n + self.nJ) + 6
        for it in range(3 * maxit):
            un, rn, st = self.sweep(u, r, pos, qzero, choice)
            if st == prev and np.max(np.abs(un - u), initial=0.0) <= 1e-13 * scale and \
                    np.max(np.abs(rn - r), initial=0.0) <= 1e-13 * scale:
                return un, rn, st, 1  # the sweep reproduces its input: an exact fixed point
            if st == prev:
                sol = self.solve_structure(st, pos)
                if sol is not None:
                    ok, _ = check(*sol)
                    if ok:
                        return sol[0], sol[1], st, 1
            prev = st
            if it < maxit:
                u, r = un, rn
            else:  # the structure keeps changing (feedback through shared capacity): damp the sweeps
                u, r = u + 0.5 * (un - u), r + 0.5 * (rn - r)
        if not choice:
            got = self._level_iteration(pos, qzero, check)
            if got is not None:
                return got
        sols = self.all_solutions(pos, qzero, choice)
        if not sols:
            raise RuntimeError("fluid allocation: no consistent allocation found (please report this network)")
        ref = (u, r) if warm is None else warm
        best = min(sols, key=lambda s: float(np.sum(np.abs(s[0] - ref[0]))))
        return best[0], best[1], None, _distinct([s[0] for s in sols], tol)


def _distinct(vectors, tol):
    out = []
    for v in vectors:
        if not any(np.max(np.abs(v - o)) <= 10 * tol for o in out):
            out.append(v)
    return len(out)


@dataclass(frozen=True)
class FluidPath(Result):
    """A piecewise-linear fluid path.

    Attributes
    ----------
    times_s : ndarray (K+1,)
        Breakpoints.
    levels : ndarray (K+1, n)
        Fluid tokens per buffer at the breakpoints (linear in between).
    join_levels : ndarray (K+1, G)
        Requests waiting at each join input.
    served : ndarray (K+1, n)
        Cumulative tokens served per buffer (for the flow-balance identity).
    joined : ndarray (K+1, J)
        Cumulative requests released by each join.
    labels, classes, points : tuple
        Buffer labels, the class of each buffer, and the service point of each buffer.
    outcome : str
        ``"drained"``, ``"diverging"`` (self-similar growth), ``"draining"`` (self-similar shrinkage,
        drains in finite time), ``"growing"`` (an overloaded point: linear growth from any state) or
        ``"horizon"`` (stopped before any of these).
    growth_factor : float or None
        Ratio of the total backlog between two visits of the same normalised state (per cycle).
    cycle_s : float or None
        Duration of the first detected cycle.
    drain_time_s : float or None
        When the path reached zero (``outcome == "drained"``).
    peaks : tuple
        Local maxima of the total token backlog ``(time, tokens)``.
    non_unique : bool
        Some phase had several consistent allocations (the fluid model's solution is not unique).
    cycles_seen : int
        Full cycles of the detected period seen before the path stopped.
    end_rates : ndarray (n,) or None
        ``d levels / dt`` (tokens/s per buffer) on the last piece; with ``outcome == "growing"`` the
        path continues at these rates for ever (no buffer or join input empties again).

    Notes
    -----
    The path is known on ``[0, times_s[-1]]``.  Beyond its end, :meth:`at` answers only where the
    continuation is exact: a ``"drained"`` path stays at zero for ever (every load is < 1 and no
    empty buffer grows) and a ``"growing"`` path keeps its last rates for ever.  A path that stopped
    for any other reason (``max_phases``, ``horizon_s``, ``cycles``, the floating-point range) has
    an unknown future, and asking for it raises.
    """

    times_s: np.ndarray
    levels: np.ndarray
    join_levels: np.ndarray
    served: np.ndarray
    joined: np.ndarray
    labels: tuple
    classes: tuple
    points: tuple
    outcome: str
    growth_factor: float | None
    cycle_s: float | None
    drain_time_s: float | None
    peaks: tuple
    non_unique: bool = False
    cycles_seen: int = 0
    inputs: dict = field(default_factory=dict, repr=False)
    end_rates: np.ndarray | None = field(default=None, repr=False)

    @property
    def total_tokens(self) -> np.ndarray:
        """Total fluid backlog (tokens) at each breakpoint."""
        return self.levels.sum(axis=1)

    def by_class(self) -> dict:
        """``{class: tokens at each breakpoint}`` summed over the class's buffers."""
        out: dict = {}
        for j, c in enumerate(self.classes):
            out[c] = out.get(c, 0.0) + self.levels[:, j]
        return out

    def at(self, t):
        """Levels (tokens per buffer) at time(s) ``t`` by linear interpolation between breakpoints.

        Parameters
        ----------
        t : float or array of float
            Times in seconds, ``>= 0``.

        Returns
        -------
        ndarray
            Shape ``t.shape + (n,)``.

        Raises
        ------
        ParameterError
            ``t`` is negative, not finite, or after the end ``times_s[-1]`` of a path whose future is
            not known (its ``outcome`` is neither ``"drained"``, which stays at zero for ever, nor
            ``"growing"``, which grows linearly at ``end_rates`` for ever).  Times within a relative
            ``1e-12`` of the end count as the end (rounding of a horizon).
        """
        if isinstance(t, (str, bytes)):
            raise ParameterError("t", t, "a time in seconds (a number or an array of numbers)")
        try:
            tt = np.asarray(t, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError("t", t, "a time in seconds (a number or an array of numbers)") from None
        bad = ~(np.isfinite(tt) & (tt >= 0))
        if bad.any():
            raise ParameterError("t", float(tt[bad].flat[0]), "finite times >= 0 s (a fluid path starts at t = 0)")
        end = float(self.times_s[-1])
        beyond = tt > end + 1e-12 * max(end, 1.0)
        extra = None
        if beyond.any():
            if self.outcome == "growing" and self.end_rates is not None:
                extra = np.where(beyond, tt - end, 0.0)
            elif self.outcome != "drained":
                raise ParameterError(
                    "t", float(tt[beyond].flat[0]), f"a time within the path, 0 <= t <= {end:.9g} s",
                    f"the path stopped at {end:.9g} s with outcome {self.outcome!r}, so its state later is not "
                    "known; compute a longer one (horizon_s, max_phases, cycles)")
        out = np.stack([np.interp(tt, self.times_s, self.levels[:, j]) for j in range(self.levels.shape[1])],
                       axis=-1)
        if extra is not None:
            out = out + extra[..., None] * self.end_rates
        return out

    def to_dict(self) -> dict:
        return plain({"outcome": self.outcome, "growth_factor": self.growth_factor, "cycle_s": self.cycle_s,
                      "drain_time_s": self.drain_time_s, "peaks": [list(p) for p in self.peaks],
                      "non_unique": self.non_unique, "cycles_seen": self.cycles_seen, "labels": list(self.labels),
                      "n_phases": len(self.times_s) - 1, "final_levels": self.levels[-1].tolist()})

    def plot(self, ax=None, path=None, **kw):
        from ..plotting.network import plot_fluid_path

        return plot_fluid_path(self, ax=ax, path=path, **kw)


def _amount(label, value):
    """One initial level: a finite real number of tokens >= 0, else an error naming the label."""
    name = f"initial[{label!r}]"
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(name, value, "a number of tokens >= 0")
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise ParameterError(name, value, "a finite number of tokens >= 0")
    return v


def _initial(system, initial):
    """The initial levels as an array: ``None``, a mapping ``{label: tokens}`` or one level per buffer."""
    n = system.n
    labels = system.labels
    expected = (f"None, a mapping {{buffer or hop label: tokens >= 0}}, or a sequence of {n} levels "
                "(one per buffer, in the order of FluidPath.labels)")
    if initial is None:
        return np.zeros(n)
    if isinstance(initial, Mapping):
        z = np.zeros(n)
        lab = {l: i for i, l in enumerate(labels)}
        hops: dict = {}
        for i, b in enumerate(system.fm.buffers):
            hops.setdefault(b.hop, []).append(i)
        for k, v in initial.items():
            try:
                known = k in lab or k in hops
            except TypeError:  # an unhashable key
                known = False
            if not known:
                extra = sorted(set(hops) - set(lab))
                raise ParameterError("initial", k, "a buffer or hop label",
                                     f"buffers: {_names(labels)}" + (f"; hops: {_names(extra)}" if extra else ""))
            amount = _amount(k, v)
            if k in lab:
                z[lab[k]] += amount
            else:
                for i in hops[k]:
                    z[i] += amount / len(hops[k])
    elif isinstance(initial, np.ndarray) or (isinstance(initial, Sequence) and not isinstance(initial, (str, bytes))):
        try:
            z = np.array(initial, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError("initial", initial, expected) from None
        if z.shape != (n,):
            raise ParameterError("initial", f"<array of shape {z.shape}>", f"{n} levels, one per buffer",
                                 f"buffers: {_names(labels)}")
        for i in range(n):
            _amount(labels[i], float(z[i]))
    elif isinstance(initial, (str, bytes)):
        raise ParameterError("initial", initial, expected,
                             f"to put fluid in one buffer write {{{initial!r}: tokens}}" if initial in labels else
                             f"to put fluid in one buffer write {{label: tokens}}; buffers: {_names(labels)}")
    else:
        raise ParameterError("initial", initial, expected, f"got {type(initial).__name__}")
    inside = [b.label for i, b in enumerate(system.fm.buffers) if b.in_fork and z[i] > 0]
    if inside:
        raise ParameterError("initial", inside[0], "no initial fluid between a fork and its join",
                             "their siblings' state would be undefined; put the fluid upstream of the fork")
    return z


def _choice(system, choice):
    """Validate ``choice``: ``{(point index, group index): buffer index in that group}``."""
    if choice is None:
        return None
    if not isinstance(choice, Mapping):
        raise ParameterError("choice", choice, "None or a mapping {(point index, group index): buffer index}")
    out = {}
    for key, i in choice.items():
        try:
            p, g = key
            p, g = integer("choice point index", p, minimum=0), integer("choice group index", g, minimum=0)
        except (TypeError, ValueError):
            raise ParameterError("choice", key, "keys (point index, group index) of int") from None
        if p >= len(system.groups) or g >= len(system.groups[p]):
            raise ParameterError("choice", key, "a (point index, group index) of a priority group of the network")
        grp = system.groups[p][g]
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or int(i) not in grp:
            raise ParameterError(f"choice[{key!r}]", i, f"the index of a buffer of that group (one of {grp})")
        out[(p, g)] = int(i)
    return out


def _system_for(network, fm, system):
    if system is None:
        return FluidSystem(fm)
    if not isinstance(system, FluidSystem):
        raise ParameterError("system", system, "None or a FluidSystem of this network")
    if system.fm is not fm and not (system.labels == tuple(b.label for b in fm.buffers)
                                    and np.array_equal(system.lam, fm.ext_rate)
                                    and np.array_equal(system.cap, fm.capacity)):
        raise ParameterError("system", f"<FluidSystem of {system.labels[:4]}...>",
                             "None or a FluidSystem built from this network's flow model",
                             "its buffers, arrival rates or capacities differ")
    return system


def fluid_path(network, initial=None, *, horizon_s: float | None = None, max_phases: int = 20000,
               cycles: int = 1, choice=None, system: FluidSystem | None = None) -> FluidPath:
    """The exact piecewise-linear fluid path of ``network`` from ``initial``.

    Parameters
    ----------
    network : Network
        The network (its compiled flow model gives buffers, capacities and routing).
    initial : mapping or sequence, optional
        Initial fluid tokens per buffer: ``{label: tokens}`` with buffer labels (``FluidPath.labels``)
        or hop labels (a hop behind a router spreads evenly over its router's engines); or a sequence
        of one level per buffer, in label order.  Levels are finite and ``>= 0``; none may sit between
        a fork and its join.  Default: empty.
    horizon_s : float, optional
        Stop at this time, ``> 0`` (default ``None``: no time limit; stop on drain, cycle detection or
        ``max_phases``).
    max_phases : int
        At most this many linear pieces, ``>= 1``.
    cycles : int
        Stop after the path has come back to a scaled copy of an earlier state this many times,
        ``>= 1`` (``growth_factor`` is measured on the first).
    choice : dict, optional
        ``{(point index, group index): buffer index}``: within that sharing group give the residual
        capacity to one buffer (used by the Lyapunov search; default proportional sharing).
    system : FluidSystem, optional
        The compiled matrices of ``network`` (internal: reused across paths of one network).

    Returns
    -------
    FluidPath

    Raises
    ------
    ParameterError
        A parameter out of its domain (named, with the value): a negative, NaN or infinite initial
        level (``initial['A.1']``), an unknown label, a non-positive ``horizon_s``, ``max_phases`` or
        ``cycles`` below 1.
    TopologyError
        No request class visits an engine (no buffers).

    References
    ----------
    Dai (1995), fluid limit models; Li, Dai, Peng, arXiv:2504.07347.
    """
    fm = _network_flow(network)
    if horizon_s is not None:
        if isinstance(horizon_s, bool) or not isinstance(horizon_s, Real):
            raise ParameterTypeError(f"horizon_s={horizon_s!r}: expected None or a number of seconds, "
                                     f"got {type(horizon_s).__name__}")
        if not (math.isfinite(horizon_s) and horizon_s > 0):
            raise ParameterError("horizon_s", horizon_s, "None or a finite time > 0 s",
                                 "None means no time limit" if horizon_s == math.inf else None)
        horizon_s = float(horizon_s)
    max_phases = integer("max_phases", max_phases, minimum=1)
    cycles = integer("cycles", cycles, minimum=1)
    sys_ = _system_for(network, fm, system)
    choice = _choice(sys_, choice)
    z = _initial(sys_, initial)
    q = np.zeros(sys_.G)
    n = sys_.n
    t = 0.0
    T, Z, Qs, U, R = [0.0], [z.copy()], [q.copy()], [np.zeros(n)], [np.zeros(sys_.nJ)]
    served = np.zeros(n)
    joined = np.zeros(sys_.nJ)
    warm = None
    outcome = "horizon"
    growth = cycle = drain = None
    cycles_seen = 0
    non_unique = False
    seen: dict = {}
    hist: dict = {}
    period = next_check = None
    peak_mass = 0.0
    last_rates = None
    ph = 0
    while ph < max_phases:
        mass = float(z.sum() + q.sum())
        scale = max(mass, 1e-300)
        eps = 1e-11 * max(scale, 1.0) if mass > 0 else 0.0
        z[z <= eps] = 0.0
        q[q <= 1e-9 * max(float(q.sum()), peak_mass / max(float(sys_.w.max()), 1.0), 1.0)] = 0.0
        mass = float(z.sum() + q.sum())
        pos = z > 0
        qzero = q <= 0
        # the phase allocation; empty buffers that cannot keep up start to grow at once (a slot cut by
        # priority or water-filling gets the same allocation whether it is counted empty or not)
        u, r, st, nsol = sys_.allocate(pos, qzero, warm, choice)
        dz = sys_.demand(u, r) - u
        pos = pos | ((~pos) & (dz > 1e-9 * max(float(sys_.cap.max()), 1.0)))
        if sys_.G:
            ir = sys_.input_rates(u, r)
            dq = ir - r[sys_.join_of]
            dq[np.abs(dq) <= 1e-9 * max(float(np.abs(ir).max()), 1e-300)] = 0.0  # rounding, not a rate
        else:
            dq = np.zeros(0)
        qgrow = qzero & (dq > 0)
        qzero = qzero & ~qgrow
        non_unique = non_unique or nsol > 1
        warm = (u, r)
        dz[~pos] = 0.0
        if sys_.G:
            dq[qzero & (dq < 0)] = 0.0
        if mass == 0 and not pos.any() and not qgrow.any():
            outcome = "drained"
            drain = t
            break
        peak_mass = max(peak_mass, mass)
        if mass < 1e-12 * peak_mass:
            outcome = "draining"  # shrank by 12 orders of magnitude without a detected cycle
            break
        # self-similarity: the normalised state (and mode) repeats; then count full cycles of that period
        if mass > 0:
            key = (tuple(np.flatnonzero(pos)), tuple(np.flatnonzero(~qzero)))
            vec = np.concatenate([z, q]) / mass
            hist[ph] = (key, vec, mass, t)
            if period is None:
                for k0 in seen.get(key, []):
                    _, v0, m0, t0 = hist[k0]
                    if np.max(np.abs(vec - v0)) < 1e-7:
                        period = ph - k0
                        growth, cycle = mass / m0, t - t0
                        cycles_seen = 1
                        next_check = ph + period
                        break
                seen.setdefault(key, []).append(ph)
                if len(seen[key]) > 8:
                    seen[key].pop(0)
            elif ph == next_check:
                k0 = ph - period
                if hist[k0][0] == key and np.max(np.abs(vec - hist[k0][1])) < 1e-7:
                    cycles_seen += 1
                    next_check += period
                else:  # not periodic after all: look again
                    period, growth, cycle, cycles_seen = None, None, None, 0
            if period is not None:
                hist = {k: v for k, v in hist.items() if k >= ph - period}
            if cycles_seen >= cycles and growth is not None:
                outcome = "diverging" if growth > 1 + 1e-6 else ("draining" if growth < 1 - 1e-6 else "horizon")
                if outcome != "horizon":
                    break
        if mass > 1e200:  # floating point range: stop before overflow
            if growth is not None and growth > 1 + 1e-6:
                outcome = "diverging"
            break
        # next event
        with np.errstate(divide="ignore", invalid="ignore"):
            tz = np.where(dz < 0, z / -dz, np.inf)
            tq = np.where(dq < 0, q / -dq, np.inf) if sys_.G else np.array([np.inf])
        dt = float(min(tz.min(initial=np.inf), tq.min(initial=np.inf)))
        if horizon_s is not None:
            dt = min(dt, horizon_s - t)
        if not np.isfinite(dt):
            outcome = "growing" if (dz > 0).any() or (dq > 0).any() else "horizon"
            if outcome == "growing":
                dt = max(t, 1.0) if horizon_s is None else horizon_s - t
            else:
                break
        dt = max(dt, 0.0)
        z = z + dz * dt
        if sys_.G:
            q = q + dq * dt
        served = served + u * dt
        joined = joined + r * dt
        t += dt
        last_rates = dz.copy()
        # snap the buffers that hit zero
        z[tz <= dt * (1 + 1e-12)] = 0.0
        z = np.maximum(z, 0.0)
        if sys_.G:
            q[tq <= dt * (1 + 1e-12)] = 0.0
            q = np.maximum(q, 0.0)
        T.append(t)
        Z.append(z.copy())
        Qs.append(q.copy())
        U.append(served.copy())
        R.append(joined.copy())
        ph += 1
        if outcome == "growing" or (horizon_s is not None and t >= horizon_s - 1e-15):
            if outcome != "growing":
                outcome = "horizon"
            break
    Zs = np.array(Z)
    tot = Zs.sum(axis=1)
    peaks = tuple((float(T[k]), float(tot[k])) for k in range(1, len(T) - 1)
                  if tot[k] > tot[k - 1] and tot[k] >= tot[k + 1])
    return FluidPath(times_s=np.array(T), levels=Zs, join_levels=np.array(Qs), served=np.array(U),
                     joined=np.array(R), labels=sys_.labels, classes=tuple(b.cls for b in fm.buffers),
                     points=tuple(b.point for b in fm.buffers), outcome=outcome, growth_factor=growth,
                     cycle_s=cycle, drain_time_s=drain, peaks=peaks, non_unique=non_unique, cycles_seen=cycles_seen,
                     inputs={"initial": Z[0].tolist() if initial is None else
                             plain(dict(initial) if isinstance(initial, Mapping) else initial)}, end_rates=last_rates)
