"""Stationary distributions of finite chains: a reduced sparse solve with an iterative fallback.

The direct method fixes ``pi[r] = 1`` for a reference state ``r`` (the most visited state of a
short power run, by default the empty state) and drops the balance equation of ``r``: the
remaining system ``(I - P)^T`` without row and column ``r`` is non-singular for an irreducible
chain and keeps the sparsity of ``P`` (replacing a row by ones would add a dense row and fill in
the factors).  Large chains use Arnoldi iteration (ARPACK's implicitly restarted Arnoldi, through
:func:`scipy.sparse.linalg.eigs`) for the eigenvector of ``P^T`` at eigenvalue 1: on the engine
chains it needs a few hundred products with ``P^T`` where power iteration needs thousands (a
61,061-state chunked-prefill chain: about 4 s against 15 s).  Power iteration, GMRES on the
reduced system preconditioned by an incomplete LU (``ilu``: suited to nearly decomposable chains;
the reversed Rybko-Stolyar network at lambda = 1.2, 28,561 states, to a residual of 1e-15 in about
a second), and GMRES with a Jacobi preconditioner are the fallbacks (smaller chains start with power iteration:
on a nearly decomposable truncation several vectors have a tiny residual, and power iteration from
the reference state gives the one of the reference's class, as the tests of the networks expect); every answer is checked (non-negative,
residual ``||pi P - pi||_1``) before it is returned.

A large chain whose states are ordered by a level (the engine chains: requests in prefill) and whose
caps exceed what its load needs is solved where its mass is: ``auto`` with ``levels`` solves the chain
restricted to a leading block of levels (moves beyond it held in place), chosen from the decay of the
level marginal of a small exploratory block, and keeps that answer (zero beyond the block) when its
residual on the whole chain is within ``tol``.  The 250,050- and 1,000,050-state Sarathi chains of
``benchmarks/bench_dtmc_scale.py`` (mass below 1e-12 beyond 16 waiting prompts) are both solved on the
same 160,050-state block, so the solve costs the same at both sizes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ParameterError

__all__ = ["ARNOLDI_FIRST_NNZ", "DIRECT_FIRST_STATES", "DIRECT_MAX_STATES", "LEVELS_MIN_STATES", "StationarySolution",
           "stationary"]

#: chains up to this many states are solved by sparse LU first by default (LU fill-in on the
#: multi-dimensional chains grows fast: beyond this, power iteration goes first)
DIRECT_FIRST_STATES = 2_000
#: chains with at least this many transitions go to Arnoldi iteration first (a power step costs
#: milliseconds there and thousands are needed); smaller ones start with power iteration, whose answer
#: from the reference state is the one wanted on nearly decomposable (metastable) truncations
ARNOLDI_FIRST_NNZ = 1_000_000
#: largest chain the automatic choice hands to sparse LU at all
DIRECT_MAX_STATES = 30_000


@dataclass(frozen=True, eq=False)
class StationarySolution:
    pi: np.ndarray
    method: str
    residual: float
    iterations: int
    converged: bool
    note: str = ""


def _factored(P) -> bool:
    """A chain matrix kept as sparse factors (:class:`fluidq.dtmc.build.FactoredP`)."""
    return isinstance(P, spla.LinearOperator) and hasattr(P, "tocsr")


def _residual(P, pi):
    return float(np.abs(P.T @ pi - pi).sum())


def _clean(x):
    x = np.asarray(x, dtype=float).copy()
    if not np.all(np.isfinite(x)):
        return None
    neg = x < 0
    if neg.any():
        if x[neg].min() < -1e-9 * max(1.0, float(np.abs(x).max())):
            return None
        x[neg] = 0.0
    s = x.sum()
    if not s > 0:
        return None
    return x / s


def _reduced(P, r):
    n = P.shape[0]
    A = (sp.identity(n, format="csr") - P).T.tocsc()
    keep = np.ones(n, dtype=bool)
    keep[r] = False
    idx = np.flatnonzero(keep)
    Ar = A[idx][:, idx]
    rhs = -np.asarray(A[idx][:, [r]].todense()).ravel()
    return Ar.tocsc(), rhs, idx


def _assemble(x, idx, r, n):
    pi = np.empty(n)
    pi[idx] = x
    pi[r] = 1.0
    return pi


def _direct(P, r):
    Ar, rhs, idx = _reduced(P, r)
    x = spla.spsolve(Ar, rhs, permc_spec="MMD_AT_PLUS_A")
    return _assemble(x, idx, r, P.shape[0])


def _gmres(P, r, tol, x0=None, maxiter=400):
    Ar, rhs, idx = _reduced(P, r)
    d = Ar.diagonal()
    d[d == 0] = 1.0
    M = sp.diags(1.0 / d)  # Jacobi: an incomplete LU costs more than it saves on these chains
    its = [0]

    def cb(_):
        its[0] += 1

    guess = None if x0 is None else x0[idx] / max(x0[r], 1e-300)
    x, info = spla.gmres(Ar, rhs, x0=guess, rtol=tol, atol=0.0, restart=60, maxiter=maxiter, M=M,
                         callback=cb, callback_type="pr_norm")
    return _assemble(x, idx, r, P.shape[0]), info == 0, its[0]


def _ilu_gmres(P, r, tol, x0=None, maxiter=10, drop_tol=1e-8, fill_factor=30):
    """GMRES on the reduced system, preconditioned by an incomplete LU factorisation of it.

    For nearly decomposable chains (slowly mixing blocks: a Rybko-Stolyar network near its
    virtual-station limit, queues at high load) power iteration and Jacobi-preconditioned GMRES
    need thousands of steps; an ILU of ``(I - P)^T`` keeps most of the coupling inside and across
    the blocks, and GMRES converges in tens of iterations (at most ``maxiter`` restarts of 50).
    Returns ``(pi, converged, iterations)``.
    """
    Ar, rhs, idx = _reduced(P, r)
    ilu = spla.spilu(Ar, drop_tol=drop_tol, fill_factor=fill_factor, permc_spec="COLAMD")
    M = spla.LinearOperator(Ar.shape, ilu.solve)
    its = [0]

    def cb(_):
        its[0] += 1

    guess = None if x0 is None else x0[idx] / max(x0[r], 1e-300)
    x, info = spla.gmres(Ar, rhs, x0=guess, rtol=tol, atol=0.0, restart=50, maxiter=maxiter, M=M,
                         callback=cb, callback_type="pr_norm")
    return _assemble(x, idx, r, P.shape[0]), info == 0, its[0]


def _arnoldi(P, tol, ref=0, maxiter=3_000, x0=None):
    """The dominant left eigenvector of ``P`` (eigenvalue 1) on the states reachable from ``ref``.

    The chain is restricted to the states reachable from the reference state (a closed set), as
    power iteration started there is: a chain with other closed classes gives the stationary law of
    the reference's class, not a mixture (ARPACK may restart from random vectors, which would
    otherwise bring the other classes in).  ``x0`` (a vector on the first states, e.g. from
    :func:`_leading_levels`) is the starting vector instead of the reference state.
    """
    from scipy.sparse.csgraph import breadth_first_order

    n = P.shape[0]
    if _factored(P):  # kept as factors: the whole state set (forming P to search it would undo them)
        reach, Pr = np.arange(n), P
    else:
        reach = np.sort(breadth_first_order(P, ref, directed=True, return_predecessors=False))
        Pr = P if reach.size == n else P[reach][:, reach]
    m = len(reach)
    pi = np.zeros(n)
    if m <= 3:  # ARPACK needs ncv < m
        vals, vecs = np.linalg.eig(Pr.T.toarray())
        v = vecs[:, int(np.argmin(np.abs(vals - 1.0)))].real
    else:
        v0 = np.zeros(m)
        if x0 is None or reach.size != n:
            v0[int(np.searchsorted(reach, ref))] = 1.0
        else:
            v0[:x0.size] = x0
            v0 += 1e-300
        _vals, vecs = spla.eigs(Pr.T if _factored(Pr) else Pr.T.tocsr(), k=1, which="LM", v0=v0, ncv=min(m - 1, 24), tol=tol * 1e-2,
                                maxiter=maxiter)
        v = vecs[:, 0].real
    pi[reach] = v if v.sum() >= 0 else -v
    return pi


#: chains of at least this many states with a level structure are first solved on leading blocks of
#: levels (:func:`_leading_levels`)
LEVELS_MIN_STATES = 100_000
#: the first, exploratory block holds at least this many levels and states (its marginal's decay sets the
#: next block) and is solved to this tolerance
LEVELS_FIRST = (5, 20_000)
LEVELS_EXPLORE_TOL = 1e-6
#: a block beyond this share of the states is not worth it: the whole chain is solved instead; nor is the
#: exploration when its block is beyond :data:`LEVELS_EXPLORE_SHARE` of them (few, large levels)
LEVELS_MAX_SHARE = 0.8
LEVELS_EXPLORE_SHARE = 0.25


def _leading_block(P, m):
    """The chain on the first ``m`` states: ``P[:m, :m]`` with each row's missing mass (its moves beyond the
    block) put on the diagonal, as a :class:`LinearOperator` for ``x -> P_m^T x``."""
    if _factored(P):
        Fs = P.F[:m]
        k = int(Fs.indices.max()) + 1 if Fs.nnz else 1
        As = P.A[:k][:, :m].tocsr()
        Fs = Fs[:, :k].tocsr()
        d = 1.0 - Fs @ (As @ np.ones(m))
        FT, AT = Fs.T.tocsr(), As.T.tocsr()

        def rmv(y):
            y = np.ravel(y)
            return AT @ (FT @ y) + d * y
    else:
        Ps = P[:m][:, :m].tocsr()
        d = 1.0 - np.asarray(Ps.sum(axis=1)).ravel()
        PT = Ps.T.tocsr()

        def rmv(y):
            y = np.ravel(y)
            return PT @ y + d * y
    np.clip(d, 0.0, None, out=d)
    return spla.LinearOperator((m, m), matvec=rmv, dtype=np.float64), d


def _leading_levels(P, levels, tol, ref=0, maxiter=3_000):
    """The stationary vector solved on a leading block of levels that holds the mass.

    ``levels[l]`` is the first state of level ``l`` (``levels[-1]`` the number of states): the chain's
    states are ordered by a level (the requests in prefill for the engine chains) whose far levels carry
    little mass when the caps exceed what the load needs.  The chain on levels ``0..L``
    (:func:`_leading_block`: moves beyond ``L`` stay in place) is solved by Arnoldi iteration, first on a
    small block to :data:`LEVELS_EXPLORE_TOL`: its level marginal, extrapolated geometrically from its
    last interior levels, gives the level where the mass falls below ``tol / 100``, and the block up to
    there is solved to ``tol`` starting from the first vector.  It is the answer, with zeros beyond
    it, when the stationary flow out of it is at most ``tol / 10`` (the caller checks the residual on the
    whole chain: at most twice the outflow plus the block's own); else the block grows again.  Returns
    ``(pi, x0, note)``: ``pi`` is ``None`` when the mass reaches beyond :data:`LEVELS_MAX_SHARE` of the
    states (the caller then solves the whole chain, starting from ``x0``, the last block's vector).
    """
    levels = np.asarray(levels, dtype=np.int64)
    n, nl = int(levels[-1]), levels.size - 1
    L = int(max(LEVELS_FIRST[0] - 1, np.searchsorted(levels[1:], LEVELS_FIRST[1])))  # levels 0..L
    x0, tried, explore = None, [], True
    if L >= nl - 1 or levels[L + 1] > LEVELS_EXPLORE_SHARE * n:
        return None, None, ""
    while L < nl - 1 and levels[L + 1] <= LEVELS_MAX_SHARE * n:
        m = int(levels[L + 1])
        op, d = _leading_block(P, m)
        v0 = np.zeros(m)
        if x0 is None:
            v0[ref] = 1.0
        else:
            k = min(m, x0.size)
            v0[:k] = x0[:k]
            v0 += 1e-300
        t = LEVELS_EXPLORE_TOL if explore else tol * 1e-2
        _vals, vecs = spla.eigs(op, k=1, which="LM", v0=v0, ncv=min(m - 1, 24), tol=t, maxiter=maxiter)
        v = vecs[:, 0].real
        v = v if v.sum() >= 0 else -v
        pi = _clean(np.clip(v, 0.0, None) if explore else v)  # a loose solve has round-off of either sign
        if pi is None:
            return None, x0, "; ".join(tried + [f"levels 0..{L}: no usable vector"])
        out = float(pi @ d)
        tried.append(f"levels 0..{L} ({m:,} states{', explored' if explore else ''}) lose {out:.1e} per step")
        x0 = pi
        if not explore and out <= tol * 0.1:
            full = np.zeros(n)
            full[:m] = pi
            return full, x0, (f"solved on levels 0..{L} of 0..{nl - 1} ({m:,} of {n:,} states; the flow out of "
                              f"them is {out:.1e} per step)")
        marg = np.bincount(np.repeat(np.arange(L + 1), np.diff(levels[:L + 2])), pi, minlength=L + 1)  # per level
        target = tol * 1e-2
        if out <= tol * 0.1:
            nL = L  # the explored block is enough: solve it to tol
        elif marg[L - 1] > 0 and marg[L - 3] > marg[L - 1]:
            r = (marg[L - 1] / marg[L - 3]) ** 0.5
            nL = int(np.ceil(L + max(0.0, np.log(target / marg[L - 1]) / np.log(r))))
            nL = max(nL, L + 1)
        else:
            nL = 2 * L + 2
        if not explore:
            nL = max(nL, int(np.ceil(1.25 * L)))
        explore = False
        L = nL
    return None, x0, "; ".join(tried)


def _power(P, tol, x0=None, maxiter=200_000, ref=0):
    n = P.shape[0]
    if x0 is None:  # start at the reference (empty) state: the chain mixes from where it lives
        pi = np.zeros(n)
        pi[ref] = 1.0
    else:
        pi = x0.copy()
    PT = P.T if _factored(P) else P.T.tocsr()
    for it in range(1, maxiter + 1):
        nxt = PT @ pi
        nxt /= nxt.sum()
        if it % 10 == 0 and np.abs(nxt - pi).sum() < tol:
            return nxt, True, it
        pi = nxt
    return pi, False, maxiter


def stationary(P, method: str = "auto", *, tol: float = 1e-10, ref: int = 0, levels=None) -> StationarySolution:
    """Stationary distribution of a finite irreducible chain with transition matrix ``P``.

    Parameters
    ----------
    P : sparse matrix
        Row-stochastic transition matrix.
    method : {"auto", "direct", "arnoldi", "gmres", "ilu", "power"}
        ``auto``: sparse LU for small chains (:data:`DIRECT_FIRST_STATES`), else power iteration
        from the reference state (Arnoldi iteration first when the chain has at least
        :data:`ARNOLDI_FIRST_NNZ` transitions), with GMRES preconditioned by an incomplete LU
        (``ilu``, for nearly decomposable chains), sparse LU (up to :data:`DIRECT_MAX_STATES`) and
        GMRES (Jacobi-preconditioned) as fallbacks.
    tol : float
        Target residual ``||pi P - pi||_1`` (power iteration: successive difference).
    ref : int
        The state whose balance equation is dropped (any recurrent state).
    levels : array of int, optional
        The first state of each level and, last, the number of states, for a chain whose states are
        ordered by a level (the engine chains: requests in prefill).  ``auto`` then first solves chains
        of :data:`LEVELS_MIN_STATES` states or more on leading blocks of levels, growing the block until
        the stationary flow out of it is below ``tol / 10`` (:func:`_leading_levels`); the answer, zero
        beyond the block, is kept when its residual on the whole chain is at most ``tol`` (the note says
        which levels were solved), else the whole chain is solved starting from it.

    Returns
    -------
    StationarySolution
        ``pi`` (sums to 1, non-negative), the method that produced it and its residual.
    """
    from .._validate import real

    # a NaN target would make every residual test fail (an "inaccurate" answer), a negative one pass none
    tol = real("tol", tol, positive=True)
    factors = P if _factored(P) else None
    P = factors if factors is not None else sp.csr_matrix(P)
    n = P.shape[0]
    if method not in ("auto", "direct", "arnoldi", "gmres", "ilu", "power"):
        raise ParameterError("method", method, "'auto', 'direct', 'arnoldi', 'gmres', 'ilu' or 'power'")
    if n == 1:
        return StationarySolution(np.ones(1), "trivial", 0.0, 0, True)
    first = ["arnoldi", "power"] if P.nnz >= ARNOLDI_FIRST_NNZ or factors is not None else ["power"]
    auto = (["direct", "power", "gmres"] if n <= DIRECT_FIRST_STATES else
            first + ["ilu", "direct", "gmres"] if n <= DIRECT_MAX_STATES else first + ["ilu", "gmres"])
    tries = {"auto": auto, "arnoldi": ["arnoldi", "power"], "ilu": ["ilu", "power"],
             "direct": ["direct", "power"], "gmres": ["gmres", "power"], "power": ["power"]}[method]
    notes = []
    best = None
    warm = None
    if method == "auto" and levels is not None and n >= LEVELS_MIN_STATES and tries[0] == "arnoldi":
        try:
            pi, warm, note = _leading_levels(P, levels, tol, ref=ref)
        except (RuntimeError, MemoryError, ValueError) as exc:
            pi, note = None, f"leading levels failed ({type(exc).__name__}: {exc})"
        if pi is not None:
            res = _residual(P, pi)
            if res <= tol:
                return StationarySolution(pi, "arnoldi", res, 0, True, note)
            note += f"; residual on the whole chain {res:.1e} > {tol:g}"
        if note:
            notes.append(note)
    for m in tries:
        its, conv = 0, True
        if factors is not None and m in ("direct", "gmres", "ilu") and P is factors:
            P = factors.tocsr()  # these need the matrix itself: form the product once
        try:
            if m == "direct":
                raw = _direct(P, ref)
            elif m == "arnoldi":
                raw = _arnoldi(P, tol, ref=ref, x0=warm)
            elif m == "gmres":
                raw, conv, its = _gmres(P, ref, tol=tol * 1e-2)
            elif m == "ilu":
                # judged by the stationary residual below, not by GMRES's own relative criterion on the
                # reduced system (which a solution with residual 1e-15 can miss)
                raw, _conv, its = _ilu_gmres(P, ref, tol=tol * 1e-2)
            else:
                raw, conv, its = _power(P, tol, x0=best, ref=ref,
                                        maxiter=20_000 if method == "auto" and m != tries[-1] else 200_000)
        except (RuntimeError, MemoryError, ValueError) as exc:  # singular or too large: next method
            notes.append(f"{m} failed ({type(exc).__name__}: {exc})")
            continue
        pi = _clean(raw)
        if pi is None:
            notes.append(f"{m} gave a non-finite or negative vector")
            continue
        res = _residual(P, pi)
        if res <= max(tol, 1e-9) * 10 and conv:
            return StationarySolution(pi, m, res, its, True, "; ".join(notes))
        notes.append(f"{m} residual {res:.2e}")
        best = pi
    if best is None:
        return StationarySolution(np.full(n, np.nan), "failed", float("inf"), 0, False, "; ".join(notes))
    return StationarySolution(best, tries[-1], _residual(P, best), 0, False, "; ".join(notes))
