"""The embedded chain of one engine at batch boundaries, for memoryless lengths.

Model (Li, Dai, Peng, arXiv:2504.07347, §3): requests arrive as a Poisson process of rate
``lambda``; the engine runs one batch at a time; a batch of ``b`` tokens takes ``t(b)`` seconds
(the engine's batch-time model), so the arrivals during it are ``Poisson(lambda t(b))``; they
join the queue at the next batch boundary.  When the engine is empty it idles until the next
arrival (mean ``1/lambda``) and starts a batch at once.

State
-----
``(n_p, n_d, j)``: requests waiting for or in prefill, requests decoding, and -- only for fixed
prompt lengths under a chunking scheduler -- the number of prompt tokens the head of the
prefill queue has already received.

Modelling choices (exact for the stated length distributions):

* **Output lengths are geometric** (mean ``m_d``): every decode token completes its request with
  probability ``1/m_d``; with ``D`` decode tokens in a batch the completions are
  ``Binomial(D, 1/m_d)``.  The order among decoding requests is irrelevant for the counts.
* **Prompt lengths are fixed** (``Fixed(v_p)``, any scheduler) **or geometric** (chunking
  schedulers only).  Geometric prompts are memoryless per token: each prefill token completes
  its prompt with probability ``1/m_p`` -- also for a partly prefilled prompt, so no progress
  needs to be stored.  With a prefill budget ``B`` and ``n`` prompts waiting the number of
  prompts finishing prefill is ``Binomial(B, 1/m_p)`` capped at ``n`` (when all ``n`` finish the
  batch ends at the ``n``-th success, a negative-binomial position, and the rest of the budget is
  unused or, for a prefill-first mixed scheduler, goes to decode).  A scheduler that takes whole
  prompts only (FasterTransformer, vanilla vLLM) looks at the actual prompt lengths of the queue;
  with random lengths the head-of-line state would need those lengths, so the builder requires
  a fixed prompt length for those schedulers.
* A request that completes prefill in a batch decodes from the next batch on (constraint 6a).
* Schedulers are read from their rules (``priority``, ``mixed``, ``chunked``, the budgets) --
  the rules of :class:`fluidq.policies.Scheduler`; the tests check the batch shapes against
  ``policy.select`` on concrete queues.  Orderings other than FCFS and a batch-size limit
  ``k_max`` are not modelled.

Assembly
--------
A step is "the batch's service" then "the arrivals during it", so ``P = F A``: ``F`` takes a state
over its decode completions ``Binomial(D, 1/m_d)`` (and, for geometric prompts, its prefill
outcomes) to an intermediate ``(n_p - K, n_d + K - C, j', batch-time class)``, and ``A`` takes an
intermediate over its ``Poisson(lambda t)`` arrivals to a state.  Both are assembled by kernel
(one vectorised block per distinct decode count, one per batch-time class), not per state, and
hold (completion terms) + (arrival terms) entries per row where ``P`` holds their product, so
memory and time grow linearly with the states.  Chains of at least
:data:`FACTORED_MIN_STATES` states keep ``P`` as the factors (:class:`FactoredP`; the power and
Arnoldi solvers only multiply by ``P^T``); smaller ones get the sparse product.

Truncation: ``n_p <= max_prefill`` and ``n_d <= max_decode``.  A transition that would leave the
box is redirected to its boundary; the stationary probability of such a transition (the mass
lost at the boundary) is reported, and the result's status is "inaccurate" when it exceeds the
tolerance.  Poisson and binomial far tails below ``kernel_tol`` are folded into the last kept
value (rows stay stochastic).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._validate import integer, real
from ..engine import Engine
from ..errors import ParameterError
from ..policies import QueueView, resolve_policy
from ..policies.orderings import FCFS, Ordering
from ..policies.schedulers import Scheduler
from ..workload import Empirical, Fixed, Geometric, Poisson, Workload
from .kernels import binom_pmf, check_tolerances, effective_cap, geometric_prefill, poisson_pmf
from .rules import check_fixed_prompt, count_space, decode_tokens, fixed_prefill, prefill_budget
from .sizing import MAX_STATES_LIMIT, ChainSize, chain_states, check_memory, transitions_per_state
from .state import StateSpace

__all__ = ["FACTORED_MIN_STATES", "EngineChain", "FactoredP", "build_dtmc", "scheduler_rules"]


#: chains of at least this many states keep ``P`` as its two factors (:class:`FactoredP`): their product has
#: (arrival terms) x (completion terms) entries per row, the factors the sum of the two -- 250,050 Sarathi
#: states: 29.7 M entries against about 5 M
FACTORED_MIN_STATES = 100_000


class FactoredP(spla.LinearOperator):
    """``P = F A`` kept as its sparse factors: ``F`` (states -> post-service intermediates, decode
    completions) and ``A`` (intermediates -> states, arrivals).  Products ``P x`` and ``P^T y`` cost
    ``nnz(F) + nnz(A)``; :meth:`tocsr` forms the product (for direct solvers and small chains)."""

    def __init__(self, F, A):
        super().__init__(dtype=np.float64, shape=(F.shape[0], A.shape[1]))
        self.F, self.A = F.tocsr(), A.tocsr()

    def _matvec(self, x):
        return self.F @ (self.A @ np.ravel(x))

    def _rmatvec(self, y):
        return self.A.T @ (self.F.T @ np.ravel(y))

    def _adjoint(self):
        return spla.LinearOperator(self.shape[::-1], matvec=self._rmatvec, rmatvec=self._matvec, dtype=self.dtype)

    @property
    def nnz(self) -> int:
        return int(self.F.nnz + self.A.nnz)

    def tocsr(self):
        return (self.F @ self.A).tocsr()


def saturation(engine, workload, pol, b) -> dict:
    """The chain's reference rates: ``capacity_tokens_per_s`` (``sup b/t(b)`` up to the budget ``b``, the
    Theorem-2(a) bound) and ``saturated_tokens_per_s`` with ``saturated_how``, what the policy serves under a
    backlog (:func:`fluidq.stability.saturated_rate`): at or above it there is no stationary law."""
    from .saturation import saturated_rate

    rate, how = saturated_rate(engine, workload, pol)
    return {"capacity_tokens_per_s": engine.batch_time.best_rate(b)[0], "saturated_tokens_per_s": rate,
            "saturated_how": how}


@dataclass(frozen=True, eq=False)
class EngineChain:
    """A built chain: sparse transition matrix ``P`` (CSR, rows sum to 1) and per-state data.

    Attributes
    ----------
    P : scipy.sparse.csr_matrix or FactoredP
        One-step transition probabilities between batch boundaries (chains of
        :data:`FACTORED_MIN_STATES` states and more from :func:`build_dtmc` keep its two factors; they
        multiply like the matrix, and ``P.tocsr()`` forms it).
    space : StateSpace
        Coordinates ``n_p``, ``n_d``, ``j`` of every state.
    sojourn_s : ndarray
        Mean time until the next boundary (the batch time; ``1/lambda`` when idle).
    sojourn2_s2 : ndarray
        Second moment of the batch time (0 for the idle state), for the arrivals during a batch.
    batch_tokens, completions : ndarray
        Expected tokens in the batch and requests completing at its end.
    residents, unprocessed_tokens : ndarray
        Requests in system, and their expected unprocessed (prefill + decode) tokens.
    lost : ndarray
        Probability that the transition from each state leaves the truncation box.
    """

    P: sp.csr_matrix
    space: StateSpace
    sojourn_s: np.ndarray
    sojourn2_s2: np.ndarray
    batch_tokens: np.ndarray
    completions: np.ndarray
    residents: np.ndarray
    unprocessed_tokens: np.ndarray
    lost: np.ndarray
    arrival_rate_per_s: float
    policy: str
    caps: dict
    build_s: float
    inputs: dict = field(default_factory=dict, repr=False)

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def nnz(self) -> int:
        return int(self.P.nnz)

    def solve(self, method: str = "auto", *, tol: float = 1e-10, tolerance: float | None = None):
        """Stationary distribution and metrics: see :func:`fluidq.dtmc.solve.stationary`."""
        from .result import solve_chain

        return solve_chain(self, method=method, tol=tol,
                           tolerance=self.inputs.get("tolerance", 1e-6) if tolerance is None else tolerance)

    def drift(self, weights: str = "tokens") -> np.ndarray:
        """Expected one-step change of unprocessed tokens (or requests) from every state."""
        from .drift import chain_drift

        return chain_drift(self, weights)

    def __repr__(self):
        return (f"EngineChain(policy={self.policy!r}, states={self.n_states}, nnz={self.nnz}, "
                f"caps={self.caps}, build_s={self.build_s:.3f})")


def scheduler_rules(policy, engine: Engine):
    """``(scheduler, b)``: the :class:`Scheduler` whose rules the chain follows and its token budget."""
    pol = resolve_policy(policy)
    if not isinstance(pol, Scheduler):
        raise ParameterError("policy", getattr(pol, "name", pol),
                             "a fluidq Scheduler (FasterTransformer, VLLM, Orca, Sarathi, VLLMChunked or "
                             "Scheduler(...)); the DTMC builder reads its rules",
                             "for a custom policy use fluidq.simulate")
    if type(pol.order) not in (FCFS, Ordering):
        raise ParameterError("policy.order", pol.order.name, "FCFS order for the DTMC (counts only)",
                             "length-aware orderings need the lengths in the state: use fluidq.simulate")
    b, k = pol.budgets(QueueView(requests=(), now_s=0.0, b_max=engine.b_max, k_max=engine.k_max))
    if k != float("inf"):
        raise ParameterError("k_max", k, "no batch-size limit in the DTMC builder",
                             "use fluidq.stability_region or fluidq.simulate for k_max")
    return pol, int(b)


def _lengths(workload: Workload, pol: Scheduler, b: int):
    out = workload.output_tokens
    if isinstance(out, Geometric):
        q = out.p
    elif isinstance(out, Fixed) and out.n == 1:
        q = 1.0
    else:
        raise ParameterError("output_tokens", out, "a Geometric output length (memoryless) for the DTMC",
                             "e.g. fluidq.Geometric(mean_tokens=100); other lengths: fluidq.simulate")
    pr = workload.prompt_tokens
    if isinstance(pr, Fixed):
        vp, pp = int(pr.n), None
        check_fixed_prompt(pol, vp, b)
    elif isinstance(pr, Geometric):
        if not pol.chunked:
            raise ParameterError("prompt_tokens", pr, f"a Fixed prompt length for {pol.name} (whole prompts, "
                                 "head-of-line): random prompt lengths would need each waiting prompt's "
                                 "length in the state", "use a chunking scheduler, Fixed prompts, or fluidq.simulate")
        vp, pp = None, pr.p
    else:
        raise ParameterError("prompt_tokens", pr, "a Fixed or Geometric prompt length for the DTMC")
    return vp, pp, q


#: slowest arrival rate a chain is built for: the idle state's mean time ``1/lambda`` enters every time
#: average, and beyond 1e12 s it swamps the batch times (1e-15 s and more) in double precision
MIN_RATE_PER_S = 1e-12
#: largest token budget per batch a chain is built for
MAX_BUDGET_TOKENS = 10**7


def check_rate(workload) -> float:
    """The workload's arrival rate, refused below :data:`MIN_RATE_PER_S`."""
    return real("workload.arrival_rate_per_s", workload.arrival_rate_per_s, minimum=MIN_RATE_PER_S,
                why="the idle time 1/rate enters every time average of the chain; a slower rate is "
                    "indistinguishable from an empty engine")


def chain_size(engine, workload, pol, max_prefill: int, max_decode: int, kernel_tol: float = 1e-12, *,
               b: int | None = None) -> ChainSize:
    """The size of the count chain with these caps, estimated before anything is allocated
    (:class:`fluidq.dtmc.sizing.ChainSize`: states, transitions per state, bytes, CPU seconds)."""
    if b is None:
        pol, b = scheduler_rules(pol, engine)
    vp, pp, q = _lengths(workload, pol, b)
    J = vp if (vp is not None and pol.chunked and vp > 1) else 1
    n = chain_states(max_prefill, max_decode, J)
    per = transitions_per_state(workload.arrival_rate_per_s, float(engine.batch_time(float(b))), max_prefill,
                                max_decode, b, q, pp, kernel_tol)
    return ChainSize.of(n, per)


def chain_memory_check(engine, workload, pol, max_prefill: int, max_decode: int, kernel_tol: float = 1e-12, *,
                       b: int | None = None) -> float:
    """Estimated bytes to build the count chain with these caps; :class:`ParameterError` (naming the caps)
    when that exceeds the memory available (see :mod:`fluidq.dtmc.sizing`)."""
    size = chain_size(engine, workload, pol, max_prefill, max_decode, kernel_tol, b=b)
    return check_memory(size.states, size.per_state,
                        what=f"the chain with caps max_prefill={max_prefill:,}, max_decode={max_decode:,}",
                        name="max_prefill/max_decode", value=(max_prefill, max_decode))


def check_chain_inputs(engine, workload) -> None:
    """The checks every chain builder starts with: an Engine (the paper's, ``prefill_emits_token=False``), a
    Workload, Poisson arrivals."""
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    if not isinstance(workload.arrival, Poisson):
        raise ParameterError("workload.arrival", workload.arrival, "Poisson arrivals for the DTMC")
    if engine.prefill_emits_token:
        raise ParameterError("engine.prefill_emits_token", True,
                             "False for the DTMC: its chains count d decode iterations for d output tokens, an "
                             "engine whose prefill emits the first token runs d - 1",
                             "simulate such an engine (fluidq.simulate, fluidq.replicate)")


def build_dtmc(engine: Engine, workload: Workload, policy="sarathi", *, max_prefill: int = 40,
               max_decode: int | None = None, tolerance: float = 1e-6, kernel_tol: float = 1e-12,
               prune_tol: float = 1e-13, max_states: int = 500_000) -> EngineChain:
    """Build the truncated embedded chain of one engine under a scheduler.

    Parameters
    ----------
    engine : Engine
        Batch-time model and budget ``b_max`` (``k_max`` must be ``None``).
    workload : Workload
        Poisson arrivals; geometric output lengths; fixed or (for chunking schedulers) geometric
        prompt lengths.
    policy : str or Scheduler
        One of the built-in schedulers (FCFS order).
    max_prefill, max_decode : int
        Truncation caps on requests in prefill and in decode (``max_decode`` defaults to 400, or to
        the budget ``b`` for finite-support outputs).
    tolerance : float
        Mass lost at the boundary above which the solved result is "inaccurate".
    kernel_tol : float
        Far tails of the Poisson/binomial kernels below this are folded into the last kept value; 0 keeps
        every term (with ``prune_tol=0`` the matrix is then the exact chain of
        :func:`fluidq.dtmc.symbolic_dtmc` up to rounding).
    prune_tol : float
        Completion and arrival probabilities (the entries of the two factors of ``P``) below this are
        dropped and their rows renormalised (the largest dropped row mass is reported as
        ``inputs["pruned_row_mass"]``); 0 keeps every entry.
    max_states : int
        Refuse to build a larger chain (memory grows with the states times the completion plus
        arrival terms per state: a 250,050-state Sarathi chain, factored, builds and solves in
        about 0.4 GiB).

    Returns
    -------
    EngineChain
        Call ``.solve()`` for the stationary distribution and metrics.  ``Fixed(n > 1)`` and
        ``Empirical`` output lengths, and ``Empirical`` prompts (with those or geometric outputs), go to
        :func:`fluidq.dtmc.finite.build_finite_dtmc` (state: counts of decoding requests per
        remaining output tokens, the head prompt's known remaining tokens; its restrictions apply); under
        Orca (prefill first, mixed) with ``Fixed`` prompts they go to
        :func:`fluidq.dtmc.ordered.build_ordered_dtmc` (the decoders' remaining tokens in FCFS order;
        ``max_decode=None``: for ``Fixed`` outputs the adaptive chain of the states holding the mass, else the
        largest cap up to ``b``; within 200,000 states).

    References
    ----------
    Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
    arXiv:2504.07347 (§3 batch model, Eq. 4 batch time, the DTMC in the proof of Theorem 2).

    Examples
    --------
    >>> import fluidq
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=128)
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=2.0), prompt_tokens=fluidq.Geometric(mean_tokens=20),
    ...                     output_tokens=fluidq.Geometric(mean_tokens=20))
    >>> ch = fluidq.build_dtmc(e, w, "sarathi", max_prefill=20, max_decode=60)
    >>> r = ch.solve()
    >>> abs(r.throughput_requests_per_s - 2.0) < 1e-3
    True
    """
    t0 = time.perf_counter()
    check_chain_inputs(engine, workload)
    from .finite import build_finite_dtmc, is_finite_support

    out = workload.output_tokens
    if is_finite_support(out) and not (isinstance(out, Fixed) and out.n == 1) \
            and isinstance(workload.prompt_tokens, Fixed):
        pol0, _b0 = scheduler_rules(policy, engine)
        if pol0.priority == "prefill" and pol0.mixed:  # Orca: partial decode needs the decoders' order
            from .ordered import ORDERED_AUTO_STATES, build_ordered_dtmc

            return build_ordered_dtmc(engine, workload, pol0, max_prefill=max_prefill, max_decode=max_decode,
                                      tolerance=tolerance, kernel_tol=kernel_tol,
                                      max_states=min(max_states, ORDERED_AUTO_STATES) if max_decode is None
                                      else max_states)
    if isinstance(workload.prompt_tokens, Empirical) and (is_finite_support(out) or isinstance(out, Geometric)) \
            or is_finite_support(out) and not (isinstance(out, Fixed) and out.n == 1):
        return build_finite_dtmc(engine, workload, policy, max_prefill=max_prefill, max_decode=max_decode,
                                 tolerance=tolerance, kernel_tol=kernel_tol, max_states=max_states)
    Np = integer("max_prefill", max_prefill, minimum=1)
    Nd = integer("max_decode", 400 if max_decode is None else max_decode, minimum=1)
    tolerance, kernel_tol = check_tolerances(tolerance, kernel_tol)
    prune_tol = real("prune_tol", prune_tol, nonnegative=True)
    lam = check_rate(workload)
    pol, b = scheduler_rules(policy, engine)
    integer("engine.b_max", b, maximum=MAX_BUDGET_TOKENS,
            why="the chain's prefill outcomes and batch times are tabulated per token of the budget")
    vp, pp, q = _lengths(workload, pol, b)
    J = vp if (vp is not None and pol.chunked and vp > 1) else 1
    max_states = integer("max_states", max_states, minimum=1, maximum=MAX_STATES_LIMIT,
                         why="states are indexed with 32-bit integers")
    if J > max_states:
        raise ParameterError("prompt_tokens", vp, f"a prompt of at most max_states={max_states:,} tokens for "
                             f"the chain of {pol.name}", "a chunking scheduler's chain records the head prompt's "
                             f"progress: {vp:,} positions per prefill level; use Geometric prompts or shorter ones")
    n_states = chain_states(Np, Nd, J)  # counted before any array is allocated
    if n_states > max_states:
        raise ParameterError("max_prefill/max_decode", (Np, Nd),
                             f"caps giving at most max_states={max_states:,} states",
                             f"these caps give {n_states:,} states ({Np + 1} x {Nd + 1}"
                             + (f" x {J} positions of the head prompt" if J > 1 else "")
                             + "); lower the caps, or raise max_states if memory allows")
    chain_memory_check(engine, workload, pol, Np, Nd, kernel_tol, b=b)
    space = count_space(Np, Nd, J)
    NP, ND, JJ = space["n_p"], space["n_d"], space["j"]
    S = space.size

    # --- batch shape before prefill: decode tokens fixed in advance and the prefill budget
    D0, B = prefill_budget(pol, b, NP, ND)

    # --- prefill outcomes: (src, K completions, new head progress, T tokens, weight)
    if vp is not None:
        K, T, jn = fixed_prefill(pol, vp, J, NP, JJ, B)
        src = np.arange(S)
        W = np.ones(S)
    else:
        caps = np.array([effective_cap(int(n), int(bb), pp) for n, bb in zip(*_pairs(NP, B))], dtype=np.int64)
        # caps for the unique (n_p, B) pairs, mapped back to states
        _key_np, _key_b, inv = _pairs(NP, B, inverse=True)
        cap_state = caps[inv]
        ukey, uinv = np.unique(cap_state * (b + 1) + B, return_inverse=True)
        src_l, K_l, T_l, W_l = [], [], [], []
        order = np.argsort(uinv, kind="stable")
        bounds = np.searchsorted(uinv[order], np.arange(ukey.size + 1))
        for g, kv in enumerate(ukey):
            c, bb = divmod(int(kv), b + 1)
            kk, tt, ww = geometric_prefill(c, bb, pp)
            members = order[bounds[g]:bounds[g + 1]]
            src_l.append(np.repeat(members, kk.size))
            K_l.append(np.tile(kk, members.size))
            T_l.append(np.tile(tt, members.size))
            W_l.append(np.tile(ww, members.size))
        src = np.concatenate(src_l)
        K = np.concatenate(K_l)
        T = np.concatenate(T_l)
        W = np.concatenate(W_l)
        jn = np.zeros(src.size, dtype=np.int64)
    D = decode_tokens(None if D0 is None else D0[src], ND[src], T, b)
    btok = D + T

    # --- per-state expectations
    idle = btok == 0
    tb = np.where(idle, 0.0, np.asarray(engine.batch_time(np.maximum(btok, 1)), dtype=float))
    soj_o = np.where(idle, 1.0 / lam, tb)
    soj2_o = np.where(idle, 0.0, tb * tb)  # batches only: arrivals during a batch
    sojourn = np.bincount(src, W * soj_o, minlength=S)
    sojourn2 = np.bincount(src, W * soj2_o, minlength=S)
    batch_tokens = np.bincount(src, W * btok, minlength=S)
    completions = np.bincount(src, W * D * q, minlength=S)

    # --- the step in two sparse factors, P = F A (see "Assembly" in the module notes): F spreads every
    # outcome over its decode completions (Binomial(D, q)) to (n_p - K, n_d + K - C, j', time class), A
    # spreads those over the arrivals (Poisson(lambda t)) during the batch
    t_u, t_inv = np.unique(np.round(tb, 15), return_inverse=True)
    U = t_u.size + 1  # the last class is the idle state's: exactly one arrival starts the next batch
    tcls = np.where(idle, t_u.size, t_inv).astype(np.int64)
    f_rows, f_keys, f_vals, f_out = [], [], [], []
    Du, Dinv = np.unique(D, return_inverse=True)
    order = np.argsort(Dinv, kind="stable")
    bounds = np.searchsorted(Dinv[order], np.arange(Du.size + 1))
    for g, d in enumerate(Du):
        m = order[bounds[g]:bounds[g + 1]]
        lo, cpr = binom_pmf(int(d), q, kernel_tol)
        Cc = lo + np.arange(cpr.size)
        s_ = src[m]
        ip = (NP[s_] - K[m])[:, None]
        raw_d = (ND[s_] + K[m])[:, None] - Cc[None, :]
        idd = np.minimum(raw_d, Nd)
        key = ((ip * (Nd + 1) + idd) * J + jn[m][:, None]) * U + tcls[m][:, None]
        f_rows.append(np.repeat(s_.astype(np.int32), cpr.size))
        f_keys.append(key.ravel())
        f_vals.append((W[m][:, None] * cpr[None, :]).ravel())
        f_out.append((raw_d > Nd).ravel())
    f_rows = np.concatenate(f_rows)
    f_vals = np.concatenate(f_vals)
    f_out = np.concatenate(f_out)
    f_keys = np.concatenate(f_keys)
    box = (Np + 1) * (Nd + 1) * J * U
    if box <= 8 * f_keys.size + 1_000_000:  # number the intermediates through a table: linear, no sort
        used = np.zeros(box, dtype=bool)
        used[f_keys] = True
        ukey = np.flatnonzero(used)
        table = np.cumsum(used, dtype=np.int32) - 1
        del used
        f_cols = table[f_keys]
        del table
    else:  # many batch-time classes: a sort
        ukey, f_cols = np.unique(f_keys, return_inverse=True)
    del f_keys
    nI = ukey.size
    rest, ic = np.divmod(ukey, U)
    rest, ij = np.divmod(rest, J)
    ip, idd = np.divmod(rest, Nd + 1)
    del rest
    flat_lookup = space._lookup.ravel().astype(np.int32)  # (n_p, n_d, j) -> state, -1 off the state set
    a_rows, a_cols, a_vals = [], [], []
    lost_a = np.zeros(nI)
    order = np.argsort(ic, kind="stable")
    bounds = np.searchsorted(ic[order], np.arange(U + 1))
    for c in range(U):
        m = order[bounds[c]:bounds[c + 1]]
        if m.size == 0:
            continue
        a = np.array([0.0, 1.0]) if c == t_u.size else poisson_pmf(lam * t_u[c], kernel_tol, cap=Np + 1)
        A = np.flatnonzero(a > 0)
        a = a[A]
        raw_p = ip[m][:, None] + A[None, :]
        out_p = raw_p > Np
        key = ((np.minimum(raw_p, Np) * (Nd + 1) + idd[m][:, None]) * J + ij[m][:, None])
        a_rows.append(np.repeat(m.astype(np.int32), A.size))
        a_cols.append(flat_lookup[key].ravel())
        a_vals.append(np.broadcast_to(a, raw_p.shape).ravel())
        lost_a[m] = (out_p * a[None, :]).sum(axis=1)
    a_rows = np.concatenate(a_rows)
    a_cols = np.concatenate(a_cols)
    a_vals = np.concatenate(a_vals)
    if np.any(a_cols < 0):  # pragma: no cover - a builder bug, never an answer
        raise RuntimeError("internal error: transition to a non-state")
    # mass leaving the box: decoders beyond max_decode, or (the rest) arrivals beyond max_prefill
    lost = np.bincount(f_rows, f_vals * np.where(f_out, 1.0, lost_a[f_cols]), minlength=S)
    F = sp.csr_matrix((f_vals, (f_rows, f_cols.astype(np.int32))), shape=(S, nI))
    del f_rows, f_cols, f_vals, f_out
    Am = sp.csr_matrix((a_vals, (a_rows, a_cols)), shape=(nI, S))
    del a_rows, a_cols, a_vals
    pruned = 0.0
    for M in (F, Am):
        M.sum_duplicates()
        if prune_tol > 0:
            small = M.data < prune_tol
            if small.any():
                dropped = np.bincount(np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))[small], M.data[small],
                                      minlength=M.shape[0])
                pruned = max(pruned, float(dropped.max()))
                M.data[small] = 0.0
                M.eliminate_zeros()
        rs = np.asarray(M.sum(axis=1)).ravel()
        M.data /= np.repeat(rs, np.diff(M.indptr))
    P = FactoredP(F, Am) if S >= FACTORED_MIN_STATES else (F @ Am).tocsr()
    if not isinstance(P, FactoredP):
        P.sum_duplicates()
    residents = (NP + ND).astype(float)
    mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
    unproc = NP * (mp + md) - JJ + ND * md
    build_s = time.perf_counter() - t0
    return EngineChain(P=P, space=space, sojourn_s=sojourn, sojourn2_s2=sojourn2, batch_tokens=batch_tokens,
                       completions=completions, residents=residents, unprocessed_tokens=unproc.astype(float),
                       lost=lost, arrival_rate_per_s=lam, policy=pol.name,
                       caps={"max_prefill": Np, "max_decode": Nd, "head_progress": J}, build_s=build_s,
                       inputs={"engine": engine.to_dict(), "workload": workload.to_dict(), "policy": pol.describe(),
                               "b": b, "tolerance": tolerance, "kernel_tol": kernel_tol,
                               "prune_tol": prune_tol, "pruned_row_mass": pruned,
                               "m_p": mp, "m_d": md, **saturation(engine, workload, pol, b)})


def _pairs(NP, B, inverse=False):
    key = NP.astype(np.int64) * (int(B.max()) + 1) + B
    u, inv = np.unique(key, return_inverse=True)
    n, bb = np.divmod(u, int(B.max()) + 1)
    if inverse:
        return n, bb, inv
    return n, bb
