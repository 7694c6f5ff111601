r"""The engine's embedded chain with exact entries, symbolic in the arrival rate.

:func:`symbolic_dtmc` builds the same chain as :func:`fluidq.dtmc.build_dtmc` -- the same states in
the same order, the same batch rule (the functions of :mod:`fluidq.dtmc.rules`, which both builders
call), the same truncation -- but every transition probability is an exact sympy expression in the
arrival rate :math:`\lambda` (a positive sympy ``Symbol`` named ``lambda``, the symbol of
:func:`fluidq.dtmc.symbolic.symbols`).

Transition probabilities
------------------------
From a state :math:`x = (n_p, n_d, j)` the policy's batch rule gives, for every prefill outcome
(``K`` prompts finish prefill using ``T`` prompt tokens, the head's progress becomes ``j'``, with
probability ``w``; ``w = 1`` for fixed prompts), ``D`` decode tokens and so a batch of
:math:`b = D + T` tokens lasting :math:`t(b)`.  During it :math:`A \sim \mathrm{Poisson}(\lambda t(b))`
requests arrive and :math:`C \sim \mathrm{Binomial}(D, q)` requests finish (:math:`q = 1/m_d`):

.. math::

    P(A = k) = e^{-\lambda t(b)} \frac{(\lambda t(b))^k}{k!}, \qquad
    P(C = c) = \binom{D}{c} q^c (1 - q)^{D - c},

and the next state is :math:`(\min(n_p - K + A, N_p),\ \min(n_d + K - C, N_d),\ j')`.  The
truncation rule is build_dtmc's: a transition that would leave the box is redirected to its boundary,
so the cap state :math:`n_p' = N_p` collects :math:`P(A \ge N_p - n_p + K) = 1 - \sum_{k < N_p - n_p + K}
P(A = k)` (nothing is lost; rows stay stochastic).  An empty batch (:math:`b = 0`: the engine is idle)
waits for exactly one arrival.  Geometric prompts (chunking schedulers) finish prefill per token with
probability :math:`p = 1/m_p`: with ``n`` prompts waiting and prefill budget ``B`` the outcomes are
:math:`K < \min(n, B + 1)` completions using the whole budget with probability
:math:`\binom{B}{K} p^K (1-p)^{B-K}`, or all ``n`` done after :math:`T \le B` tokens with the
negative-binomial probability :math:`\binom{T-1}{n-1} p^n (1-p)^{T-n}` -- exact here, where build_dtmc
drops outcomes below 1e-13 (and caps ``n`` where the rest is below 1e-13).

Exact constants
---------------
Floats of the model (the batch-time parameters, the mean lengths, a rate given as a float) are
turned into rationals with ``sympy.nsimplify(x, rational=True)``: the short decimal the float
stands for (``0.01128 -> 141/12500``; within a few units of the last place of the float).  For
:class:`~fluidq.Staircase`, :class:`~fluidq.PiecewiseLinear` and :class:`~fluidq.Affine` the batch
time is built from the rational parameters (``t(b) = c + a ceil(b/b0)``, ...); any other model's
``t(b)`` float is rationalised per batch size.  Substituted back, the chain equals build_dtmc's
``kernel_tol=0, prune_tol=0`` matrix to rounding (about 1e-15).

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347 (§3 batch model, Eq. 4 batch time, the chain in the proof of Theorem 2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np
import scipy.sparse as sps
import sympy as sp
from scipy import stats

from .._validate import integer, real
from ..batchtime import Affine, PiecewiseLinear, Staircase
from ..errors import ParameterError
from ..workload import Fixed, Geometric
from .build import MIN_RATE_PER_S, check_chain_inputs, scheduler_rules
from .rules import check_fixed_prompt, count_space, decode_tokens, fixed_prefill, prefill_budget
from .sizing import chain_states
from .state import StateSpace

__all__ = ["ExactStationary", "SymbolicChain", "exact_number", "symbolic_dtmc", "RATE",
           "MAX_EXACT_STATES", "MAX_SYMBOLIC_RATE_STATES"]

#: the arrival rate, requests per second: the ``lambda`` of :func:`fluidq.dtmc.symbolic.symbols`
RATE = sp.Symbol("lambda", positive=True)
#: largest chain :meth:`SymbolicChain.stationary` solves exactly at a given rate
MAX_EXACT_STATES = 40
#: largest chain :meth:`SymbolicChain.stationary` solves with the rate left symbolic
MAX_SYMBOLIC_RATE_STATES = 16
#: largest chain :func:`symbolic_dtmc` builds by default (exact coefficients cost memory and time)
DEFAULT_MAX_STATES = 20_000

_CONST, _PMF, _TAIL = 0, 1, 2


def exact_number(x) -> sp.Rational:
    """``x`` as a sympy rational: integers as they are, floats by ``nsimplify(x, rational=True)``."""
    if isinstance(x, sp.Rational):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return sp.Integer(int(x))
    if isinstance(x, Fraction):
        return sp.Rational(x.numerator, x.denominator)
    return sp.nsimplify(float(x), rational=True)


def _frac(x) -> Fraction:
    r = exact_number(x)
    return Fraction(int(r.p), int(r.q))


def exact_batch_time(batch_time):
    """A function ``b -> Fraction`` (seconds) for the engine's batch-time model (see the module notes)."""
    kind = type(batch_time)
    if kind is Staircase:
        c, a, b0 = _frac(batch_time.c), _frac(batch_time.a), int(batch_time.b0)
        return lambda b: c + a * (-(-int(b) // b0))
    if kind is PiecewiseLinear:
        c, a, b0 = _frac(batch_time.c), _frac(batch_time.a), int(batch_time.b0)
        return lambda b: c + a * max(0, int(b) - b0)
    if kind is Affine:
        c, a = _frac(batch_time.c), _frac(batch_time.a)
        return lambda b: c + a * int(b)
    return lambda b: _frac(float(batch_time(float(b))))


def _exact_lengths(workload, pol, b):
    """``(v_p or None, p_prompt or None, q_output)`` as exact numbers; the count chain's lengths only."""
    out, pr = workload.output_tokens, workload.prompt_tokens
    if isinstance(out, Geometric):
        q = 1 / _frac(out.mean_tokens)
    elif isinstance(out, Fixed) and out.n == 1:
        q = Fraction(1)
    else:
        raise ParameterError("output_tokens", out, "a Geometric output length (or Fixed(1)) for the exact chain",
                             "symbolic_dtmc covers build_dtmc's count chain (memoryless lengths); finite-support "
                             "lengths use build_dtmc (fluidq.dtmc.finite)")
    if isinstance(pr, Fixed):
        vp = int(pr.n)
        check_fixed_prompt(pol, vp, b)
        return vp, None, q
    if isinstance(pr, Geometric):
        if not pol.chunked:
            raise ParameterError("prompt_tokens", pr, f"a Fixed prompt length for {pol.name} (whole prompts, "
                                 "head-of-line)", "use a chunking scheduler or Fixed prompts")
        return None, 1 / _frac(pr.mean_tokens), q
    raise ParameterError("prompt_tokens", pr, "a Fixed or Geometric prompt length for the exact chain",
                         "Empirical prompts use build_dtmc (fluidq.dtmc.finite)")


def _binom_row(n: int, p: Fraction):
    """Exact ``P(Binomial(n, p) = c)`` for ``c = 0..n``."""
    if n <= 0:
        return [Fraction(1)]
    return [math.comb(n, c) * p ** c * (1 - p) ** (n - c) for c in range(n + 1)]


def _geometric_prefill_exact(n: int, budget: int, p: Fraction):
    """Exact ``[(K, T, w)]`` of chunked FCFS prefill of ``n`` geometric prompts with ``budget`` tokens."""
    if n <= 0 or budget <= 0:
        return [(0, 0, Fraction(1))]
    cap = min(n, budget + 1)
    out = [(k, budget, math.comb(budget, k) * p ** k * (1 - p) ** (budget - k))
           for k in range(min(cap - 1, budget) + 1)]
    if cap <= budget:
        out += [(cap, t, math.comb(t - 1, cap - 1) * p ** cap * (1 - p) ** (t - cap)) for t in range(cap, budget + 1)]
    return out


def _check_rate(rate_per_s, name="rate_per_s"):
    if isinstance(rate_per_s, sp.Basic):
        if not (rate_per_s.is_Rational and rate_per_s > 0):
            raise ParameterError(name, rate_per_s, "a positive number (a sympy Rational or a float)")
        return rate_per_s
    v = real(name, rate_per_s, minimum=MIN_RATE_PER_S,
             why="the idle time 1/rate enters every time average of the chain")
    return exact_number(rate_per_s if isinstance(rate_per_s, (int, Fraction)) else v)


def _poisson_basis(kind, t, k):
    """The sympy factor of a term: ``P(A = k)`` (kind PMF) or ``P(A >= k)`` (kind TAIL), A ~ Poisson(lambda t)."""
    mu = RATE * t
    if kind == _PMF:
        return sp.exp(-mu) * mu ** k / sp.factorial(k)
    if kind == _TAIL:
        return 1 - sum((sp.exp(-mu) * mu ** i / sp.factorial(i) for i in range(k)), sp.Integer(0))
    return sp.Integer(1)


@dataclass(frozen=True, eq=False)
class SymbolicChain:
    r"""An engine chain whose transition probabilities are exact expressions in the arrival rate.

    The chain is held as a table of terms ``coefficient x basis`` per entry ``(row, col)``: the basis is 1,
    :math:`P(A = k)` or :math:`P(A \ge k)` for the arrivals :math:`A \sim \mathrm{Poisson}(\lambda t)` of a
    batch of exact duration :math:`t` (``times[t_index]``), and the coefficient is an exact rational (prefill
    outcome weight times the binomial probability of the decode completions).  :attr:`P` expands the
    table into a sympy matrix; :meth:`substitute` evaluates it at a rate.

    Attributes
    ----------
    rate : sympy.Symbol
        :math:`\lambda`, arrivals per second (positive).
    space : StateSpace
        The states ``(n_p, n_d, j)``, indexed as in :func:`fluidq.dtmc.build_dtmc` on the same caps.
    times : tuple of sympy.Rational
        The distinct batch times, seconds.
    batch_tokens, completions : tuple of sympy.Rational
        Expected tokens in the batch and requests completing at its end, per state (exact).
    m_p, m_d : sympy.Rational
        Mean prompt and output tokens (exact).
    """

    space: StateSpace
    times: tuple
    policy: str
    caps: dict
    m_p: sp.Rational
    m_d: sp.Rational
    batch_tokens: tuple
    completions: tuple
    rate: sp.Symbol = RATE
    _rows: np.ndarray = field(repr=False, default=None)
    _cols: np.ndarray = field(repr=False, default=None)
    _kind: np.ndarray = field(repr=False, default=None)
    _tidx: np.ndarray = field(repr=False, default=None)
    _k: np.ndarray = field(repr=False, default=None)
    _coef: tuple = field(repr=False, default=())
    _idle_rows: frozenset = field(repr=False, default=frozenset())
    _sojourn_terms: tuple = field(repr=False, default=())
    inputs: dict = field(default_factory=dict, repr=False)

    # ---- shape -------------------------------------------------------------------------------------
    @property
    def n_states(self) -> int:
        return self.space.size

    @property
    def n_terms(self) -> int:
        """Number of ``coefficient x basis`` terms in the table (a measure of the expression size)."""
        return int(self._rows.size)

    def state(self, i: int) -> tuple:
        """``(n_p, n_d, j)`` of state ``i``."""
        return tuple(int(self.space[n][i]) for n in self.space.names)

    def __repr__(self):
        return (f"SymbolicChain(policy={self.policy!r}, states={self.n_states}, terms={self.n_terms}, "
                f"caps={self.caps}, batch_times={len(self.times)})")

    # ---- the matrix --------------------------------------------------------------------------------
    def _entry_exprs(self, rows=None):
        """``{(i, j): sympy expr}`` for the rows in ``rows`` (all when None), terms collected per basis."""
        keep = np.ones(self._rows.size, bool) if rows is None else np.isin(self._rows, np.asarray(list(rows)))
        basis = {}
        acc: dict = {}
        for n in np.flatnonzero(keep):
            key = (int(self._kind[n]), int(self._tidx[n]), int(self._k[n]))
            if key not in basis:
                basis[key] = _poisson_basis(key[0], self.times[key[1]], key[2])
            ij = (int(self._rows[n]), int(self._cols[n]))
            c = self._coef[n]
            acc.setdefault(ij, []).append(sp.Rational(c.numerator, c.denominator) * basis[key])
        return {ij: sp.Add(*terms) for ij, terms in acc.items()}

    @cached_property
    def P(self) -> sp.ImmutableSparseMatrix:
        r"""The transition matrix, a sympy sparse matrix of exact expressions in :math:`\lambda`.

        Expanding it costs time for large chains (one sympy expression per nonzero entry); for numbers
        use :meth:`substitute`, which evaluates the term table directly.
        """
        n = self.n_states
        return sp.ImmutableSparseMatrix(n, n, self._entry_exprs())

    @cached_property
    def sojourn(self) -> sp.ImmutableMatrix:
        r"""Mean time to the next batch boundary per state, seconds: the batch time, :math:`1/\lambda` when idle."""
        out = [sp.Integer(0)] * self.n_states
        for i, w, t in self._sojourn_terms:
            dt = 1 / RATE if t is None else sp.Rational(t.numerator, t.denominator)
            out[i] += sp.Rational(w.numerator, w.denominator) * dt
        return sp.ImmutableMatrix(out)

    def substitute(self, rate_per_s) -> sps.csr_matrix:
        """The transition matrix at ``rate_per_s`` requests per second, a ``scipy.sparse.csr_matrix``.

        Each term is evaluated in floating point (``scipy.stats.poisson`` pmf and survival function, the
        rational coefficient rounded once), so a boundary entry :math:`P(A \\ge k)` keeps its relative accuracy.
        """
        r = float(_check_rate(rate_per_s))
        t = np.array([float(x) for x in self.times] or [0.0])
        mu = r * t[self._tidx]
        coef = np.array([c.numerator / c.denominator for c in self._coef], dtype=float)  # correctly rounded
        val = np.where(self._kind == _PMF, stats.poisson.pmf(self._k, mu),
                       np.where(self._kind == _TAIL, stats.poisson.sf(self._k - 1, mu), 1.0))
        n = self.n_states
        P = sps.csr_matrix((coef * val, (self._rows, self._cols)), shape=(n, n))
        P.sum_duplicates()
        return P

    # ---- exact analyses ----------------------------------------------------------------------------
    def _ring_matrix(self, rate):
        """``(A, R, E)``: the entries of P as polynomials of ``R = QQ[E_1..E_m(, lambda)]``.

        ``E_i`` stands for ``exp(-rate t_i)``; every entry is a polynomial in them (and in the rate if symbolic).
        """
        E = sp.symbols(f"_E0:{len(self.times)}")
        R = sp.QQ[tuple(E) + ((RATE,) if rate is RATE else ())]
        lam = R.convert(RATE) if rate is RATE else R.convert(rate)
        cache = {}

        def basis(kind, ti, k):
            key = (kind, ti, k)
            if key not in cache:
                if kind == _CONST:
                    cache[key] = R.one
                else:
                    mu = lam * R.convert(self.times[ti])
                    e = R.convert(E[ti])
                    pmf = [e * mu ** i * R.convert(sp.Rational(1, math.factorial(i))) for i in range(k + 1)]
                    cache[key] = pmf[k] if kind == _PMF else R.one - sum(pmf[:k], R.zero)
            return cache[key]

        A: dict = {}
        for n in range(self._rows.size):
            c = self._coef[n]
            v = R.convert(sp.Rational(c.numerator, c.denominator)) * basis(int(self._kind[n]), int(self._tidx[n]),
                                                                         int(self._k[n]))
            ij = (int(self._rows[n]), int(self._cols[n]))
            A[ij] = A[ij] + v if ij in A else v
        return A, R, E

    def stationary(self, rate_per_s=None, *, max_states: int | None = None) -> ExactStationary:
        r"""The stationary distribution, exactly.

        Solves :math:`\pi P = \pi`, :math:`\sum_i \pi_i = 1` at the exact rational rate ``r``
        (``exact_number(rate_per_s)``) with each :math:`E_i = e^{-r t_i}` of a distinct batch time treated as an
        indeterminate: the entries of P are polynomials in the :math:`E_i` with rational coefficients, the rows
        are scaled to integer coefficients, and fraction-free (Bareiss) elimination over
        :math:`\mathbb{Z}[E_1, \dots, E_m]` gives :math:`\pi_i = N_i / d` with polynomials :math:`N_i`, ``d``.
        This is valid because the chain's system has a unique solution, so the generic solution specialises
        to it.  The sum is checked in the ring: :math:`\sum_i N_i = d` exactly.  With ``rate_per_s=None``
        the rate stays the symbol :math:`\lambda`, one more indeterminate (tiny chains only).

        Parameters
        ----------
        rate_per_s : float, sympy.Rational or None
            Arrivals per second; None keeps :math:`\lambda` symbolic.
        max_states : int, optional
            Refuse larger chains (default :data:`MAX_EXACT_STATES` = 40 at a given rate,
            :data:`MAX_SYMBOLIC_RATE_STATES` = 16 with the rate symbolic): the polynomials grow quickly with the
            number of states.

        Notes
        -----
        The cost grows with the states, the distinct batch times (one indeterminate each) and the size of the
        coefficients (geometric prompts give a binomial term per prefill outcome).  Measured (pure-Python
        sympy, one core, Sarathi-Serve): fixed prompts and one batch time, 20 states 0.2 s, 35 states 1.2 s,
        63 states 98 s; geometric prompts and two batch times, 16 states 7 s.  With the rate symbolic:
        16 states 0.4 s (one batch time); FasterTransformer, 20 states and two batch times, 37 s.

        Returns
        -------
        ExactStationary
            ``pi`` (sympy column of exact expressions ``N_i / d``), ``total`` (their sum, computed in the ring:
            exactly 1) and ``numeric()``.
        """
        rate = RATE if rate_per_s is None else _check_rate(rate_per_s)
        limit = (MAX_SYMBOLIC_RATE_STATES if rate is RATE else MAX_EXACT_STATES) if max_states is None else \
            integer("max_states", max_states, minimum=1)
        n = self.n_states
        if n > limit:
            raise ParameterError("chain size", n, f"at most {limit} states for the exact stationary solve "
                                 + ("with the rate symbolic" if rate is RATE else "at a given rate"),
                                 "lower the caps, pass a rate, or solve chain.substitute(rate) numerically with "
                                 "fluidq.dtmc.stationary")
        from sympy.polys.matrices import DomainMatrix

        A, R, E = self._ring_matrix(rate)
        # (P^T - I) pi = 0 with the last equation replaced by sum(pi) = 1
        rows: dict = {i: {} for i in range(n)}
        for (i, j), v in A.items():
            if j != n - 1:
                rows[j][i] = rows[j].get(i, R.zero) + v
        for i in range(n - 1):
            rows[i][i] = rows[i].get(i, R.zero) - R.one
        rows[n - 1] = {i: R.one for i in range(n)}
        rows = {i: {j: v for j, v in r.items() if v != R.zero} for i, r in rows.items()}
        M = DomainMatrix.from_dod(rows, (n, n), R)
        _, Mz = M.clear_denoms_rowwise(convert=True)  # the last row (ones) keeps its scale 1
        Z = Mz.domain
        rhs = DomainMatrix.from_dod({n - 1: {0: Z.one}}, (n, 1), Z)
        xn, den = Mz.solve_den(rhs, method="rref")
        xd = xn.to_dok()
        nums = [xd.get((i, 0), Z.zero) for i in range(n)]
        s = sum(nums, Z.zero)
        if s == den:
            total = sp.Integer(1)
        else:  # pragma: no cover - would be a solver bug; reported, not hidden
            total = sp.cancel(Z.to_sympy(s) / Z.to_sympy(den))
        back = {Ei: sp.exp(-rate * t) for Ei, t in zip(E, self.times)}
        d = Z.to_sympy(den)
        pi = sp.ImmutableMatrix([(Z.to_sympy(v) / d).subs(back) for v in nums])
        return ExactStationary(pi=pi, total=total, rate=rate, chain=self,
                               _numerators=tuple(Z.to_sympy(v) for v in nums), _denominator=d, _exp_symbols=E)

    def drift(self, V, states=None) -> sp.ImmutableMatrix:
        r"""One-step drift :math:`E[V(X_1) - V(X_0) \mid X_0 = x] = \sum_y P_{xy} V(y) - V(x)`, derived from P.

        Parameters
        ----------
        V : callable or sympy expression
            A Lyapunov function of the state: ``V(n_p, n_d, j)`` returning a number or sympy expression, or a
            sympy expression in symbols named ``n_p``, ``n_d``, ``j`` (e.g. the ``lyapunov`` of
            :func:`fluidq.dtmc.symbolic.work_conserving_certificate`); symbols named ``m_p``, ``m_d`` are
            replaced by the workload's exact means, other symbols stay.
        states : iterable of int, optional
            The states (indices) to return; all by default.

        Returns
        -------
        sympy.ImmutableMatrix
            A column, one exact expression in :math:`\lambda` per requested state (expanded).

        Notes
        -----
        The chain is truncated, so near the caps the drift includes the redirected arrivals; away from them it
        differs from the untruncated drift :math:`\lambda t(b)(m_p + m_d) - b` (of ``V`` = unprocessed tokens,
        :func:`fluidq.dtmc.symbolic.batch_drift`) by terms of order :math:`\lambda^{N_p - n_p + K + 1}`.
        """
        f = self._lyapunov(V)
        idx = list(range(self.n_states)) if states is None else [int(s) for s in states]
        Vs = {}

        def val(i):
            if i not in Vs:
                Vs[i] = sp.sympify(f(*self.state(i)))
            return Vs[i]

        want = set(idx)
        basis: dict = {}
        acc: dict = {i: {} for i in idx}
        for n in range(self._rows.size):
            i = int(self._rows[n])
            if i not in want:
                continue
            key = (int(self._kind[n]), int(self._tidx[n]), int(self._k[n]))
            c = self._coef[n]
            acc[i][key] = acc[i].get(key, 0) + sp.Rational(c.numerator, c.denominator) * val(int(self._cols[n]))
        out = []
        for i in idx:
            terms = []
            for key, cv in acc[i].items():
                if key not in basis:
                    basis[key] = _poisson_basis(key[0], self.times[key[1]], key[2])
                terms.append(cv * basis[key])
            out.append(sp.expand(sp.Add(*terms) - val(i)))
        return sp.ImmutableMatrix(out)

    def _lyapunov(self, V):
        if isinstance(V, sp.Basic):
            names = {s.name: s for s in V.free_symbols}
            V = V.subs({names[k]: v for k, v in (("m_p", self.m_p), ("m_d", self.m_d)) if k in names})
            state_syms = [names.get(n) for n in ("n_p", "n_d", "j")]

            def f(n_p, n_d, j):
                return V.subs({s: v for s, v in zip(state_syms, (n_p, n_d, j)) if s is not None})
            return f
        if callable(V):
            return V
        raise ParameterError("V", V, "a callable V(n_p, n_d, j) or a sympy expression in n_p, n_d, j")

    def unprocessed_tokens(self):
        """``V = n_p (m_p + m_d) - j + n_d m_d`` as a callable (the Lyapunov function of :mod:`fluidq.dtmc.drift`)."""
        mp, md = self.m_p, self.m_d
        return lambda n_p, n_d, j: n_p * (mp + md) - j + n_d * md

    def latex(self, rows=None, cols=None, *, max_size: int = 400) -> str:
        r"""LaTeX of :attr:`P` or of the block ``P[rows, cols]`` (index lists, ranges or slices).

        Refuses blocks of more than ``max_size`` entries (the source would run to pages).
        """
        n = self.n_states

        def pick(sel):
            if sel is None:
                return list(range(n))
            if isinstance(sel, slice):
                return list(range(n))[sel]
            return [int(s) for s in sel]

        r, c = pick(rows), pick(cols)
        if len(r) * len(c) > max_size:
            raise ParameterError("rows/cols", (len(r), len(c)), f"a block of at most max_size={max_size} entries",
                                 "pick rows and columns, e.g. chain.latex(rows=range(4), cols=range(4))")
        entries = self._entry_exprs(rows=r)
        block = sp.Matrix(len(r), len(c), lambda a, b: entries.get((r[a], c[b]), sp.Integer(0)))
        return sp.latex(block)


@dataclass(frozen=True, eq=False)
class ExactStationary:
    r"""An exact stationary distribution of a :class:`SymbolicChain`.

    Attributes
    ----------
    pi : sympy.ImmutableMatrix
        Column of exact probabilities (expressions in :math:`e^{-r t_i}` and, if symbolic, :math:`\lambda`).
    total : sympy.Expr
        :math:`\sum_i \pi_i`, summed in the polynomial ring of the solve: exactly ``1``.
    rate : sympy.Rational or sympy.Symbol
        The rate of the solve.
    """

    pi: sp.ImmutableMatrix
    total: sp.Expr
    rate: sp.Expr
    chain: SymbolicChain = field(repr=False)
    _numerators: tuple = field(repr=False, default=())
    _denominator: sp.Expr = field(repr=False, default=None)
    _exp_symbols: tuple = field(repr=False, default=())

    def numeric(self, rate_per_s=None, *, digits: int = 30) -> np.ndarray:
        """``pi`` as floats, evaluated with ``digits`` significant digits (``rate_per_s`` needed if symbolic)."""
        import mpmath

        rate = self.rate
        if rate is RATE:
            if rate_per_s is None:
                raise ParameterError("rate_per_s", None, "a rate for a distribution solved with the rate symbolic")
            rate = _check_rate(rate_per_s)
        prec = digits + 10
        subs = {E: sp.exp(-rate * t).evalf(prec) for E, t in zip(self._exp_symbols, self.chain.times)}
        if self.rate is RATE:
            subs[RATE] = rate
        with mpmath.workdps(prec):
            d = sp.N(self._denominator.subs(subs), prec)
            out = [float(sp.N(v.subs(subs), prec) / d) for v in self._numerators]
        return np.array(out)

    def to_dict(self) -> dict:
        return {"rate": str(self.rate), "total": str(self.total), "pi": [str(p) for p in self.pi]}


def symbolic_dtmc(engine, workload, policy="sarathi", *, max_prefill: int, max_decode: int,
                  max_states: int = DEFAULT_MAX_STATES) -> SymbolicChain:
    r"""The embedded chain of :func:`fluidq.dtmc.build_dtmc`, exact and symbolic in the arrival rate.

    Parameters
    ----------
    engine : Engine
        Batch-time model and budget ``b_max`` (``k_max`` must be ``None``).
    workload : Workload
        Poisson arrivals (the rate itself is not used: it becomes the symbol :math:`\lambda`); geometric
        output lengths (or ``Fixed(1)``); fixed or (for chunking schedulers) geometric prompt lengths.
    policy : str or Scheduler
        A built-in scheduler with FCFS order.
    max_prefill, max_decode : int
        Truncation caps :math:`N_p`, :math:`N_d`, as in build_dtmc.
    max_states : int
        Refuse larger chains (default 20,000): exact coefficients are Python fractions.

    Returns
    -------
    SymbolicChain
        ``.P`` (sympy matrix in ``.rate``), ``.substitute(rate_per_s)`` (scipy sparse),
        ``.stationary()``, ``.drift(V)``, ``.latex()``.

    References
    ----------
    Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
    arXiv:2504.07347 (§3, Eq. 4; the chain in the proof of Theorem 2).

    Examples
    --------
    >>> import fluidq
    >>> from fluidq.dtmc import symbolic_dtmc
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=8), b_max=16)
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=2.0), prompt_tokens=fluidq.Fixed(n=2),
    ...                     output_tokens=fluidq.Geometric(mean_tokens=4))
    >>> ch = symbolic_dtmc(e, w, "sarathi", max_prefill=2, max_decode=2)
    >>> ch.n_states, ch.rate
    (15, lambda)
    >>> ch.stationary(2).total
    1
    """
    check_chain_inputs(engine, workload)
    Np = integer("max_prefill", max_prefill, minimum=1)
    Nd = integer("max_decode", max_decode, minimum=1)
    pol, b = scheduler_rules(policy, engine)
    vp, pp, q = _exact_lengths(workload, pol, b)
    J = vp if (vp is not None and pol.chunked and vp > 1) else 1
    max_states = integer("max_states", max_states, minimum=1)
    n_states = chain_states(Np, Nd, J)
    if n_states > max_states:
        raise ParameterError("max_prefill/max_decode", (Np, Nd), f"caps giving at most max_states={max_states:,} "
                             "states for the exact chain", f"these caps give {n_states:,} states")
    space = count_space(Np, Nd, J)
    NP, ND, JJ = space["n_p"], space["n_d"], space["j"]
    S = space.size
    D0, B = prefill_budget(pol, b, NP, ND)
    # prefill outcomes per state: lists of (K, T, j', w) -- the same rule functions as build_dtmc
    if vp is not None:
        K, T, jn = fixed_prefill(pol, vp, J, NP, JJ, B)
        outcomes = [[(int(K[s]), int(T[s]), int(jn[s]), Fraction(1))] for s in range(S)]
    else:
        outcomes = [[(k, t, 0, w) for k, t, w in _geometric_prefill_exact(int(NP[s]), int(B[s]), pp)] for s in range(S)]
    tb = exact_batch_time(engine.batch_time)
    times: dict = {}
    binoms: dict = {}
    lookup = space._lookup
    acc: dict = {}
    sojourn_terms = []
    btok_e = [Fraction(0)] * S
    comp_e = [Fraction(0)] * S
    for s in range(S):
        n_p, n_d = int(NP[s]), int(ND[s])
        for k_done, t_used, j_next, w in outcomes[s]:
            d = int(decode_tokens(None if D0 is None else D0[s], n_d, t_used, b))
            btok = d + t_used
            btok_e[s] += w * btok
            comp_e[s] += w * d * q
            base_p, base_d = n_p - k_done, n_d + k_done
            if btok == 0:  # idle: the next batch starts at the first arrival
                sojourn_terms.append((s, w, None))
                dest = int(lookup[min(base_p + 1, Np), min(base_d, Nd), j_next])
                acc[(s, dest, _CONST, 0, 0)] = acc.get((s, dest, _CONST, 0, 0), 0) + w
                continue
            t = tb(btok)
            sojourn_terms.append((s, w, t))
            ti = times.setdefault(t, len(times))
            if d not in binoms:
                binoms[d] = _binom_row(d, q)
            m = Np - base_p  # arrivals that keep n_p' below the cap; A >= m lands on n_p' = Np
            for c, pc in enumerate(binoms[d]):
                if pc == 0:
                    continue
                nd_next = min(base_d - c, Nd)
                wc = w * pc
                for a in range(m + 1):
                    dest = int(lookup[base_p + a, nd_next, j_next])
                    key = (s, dest, _PMF, ti, a) if a < m else (s, dest, _TAIL, ti, m)
                    acc[key] = acc.get(key, 0) + wc
    keys = [k for k, v in acc.items() if v != 0]
    arr = np.array([k for k in keys], dtype=np.int64).reshape(-1, 5)
    coef = tuple(acc[k] for k in keys)
    t_sorted = tuple(sp.Rational(t.numerator, t.denominator) for t, _ in sorted(times.items(), key=lambda kv: kv[1]))
    mp = sp.Rational(vp) if vp is not None else 1 / sp.Rational(pp.numerator, pp.denominator)
    md = 1 / sp.Rational(q.numerator, q.denominator)
    return SymbolicChain(space=space, times=t_sorted, policy=pol.name,
                         caps={"max_prefill": Np, "max_decode": Nd, "head_progress": J}, m_p=mp, m_d=md,
                         batch_tokens=tuple(sp.Rational(x.numerator, x.denominator) for x in btok_e),
                         completions=tuple(sp.Rational(x.numerator, x.denominator) for x in comp_e),
                         _rows=arr[:, 0].copy(), _cols=arr[:, 1].copy(), _kind=arr[:, 2].copy(),
                         _tidx=arr[:, 3].copy(), _k=arr[:, 4].copy(), _coef=coef,
                         _sojourn_terms=tuple(sojourn_terms),
                         inputs={"engine": engine.to_dict(), "workload": workload.to_dict(),
                                 "policy": pol.describe(), "b": b,
                                 "constants": "floats rationalised with sympy.nsimplify(x, rational=True)"})
