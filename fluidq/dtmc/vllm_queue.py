"""Vanilla vLLM's waiting-prompt chain with i.i.d. prompt lengths (inner chain of its renewal threshold).

With a saturated decode pool, vanilla vLLM (prefill first, no mixed batches) runs a full decode
batch of ``b`` tokens only when no prompt waits; the waiting prompts evolve on their own (Li, Dai,
Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents", arXiv:2504.07347,
§3 batch model).  A prefill batch takes whole prompts FCFS while they fit the budget and stops at
the first that does not fit, which stays head with its length known.

State: ``0`` (no prompt waits) or ``(q, h)`` with ``q`` waiting prompts and ``h`` the head's length
(an index into the support) or *fresh* (not looked at yet: an i.i.d. draw, so drawing it when
prefill reaches it is exact).  Keeping fresh heads as states keeps each transition one destination
per arrival count instead of one per length.

Building it in two sparse factors
---------------------------------
A step is "batch outcome" then "arrivals".  ``R`` maps a state to the intermediate
``(prompts left, next head, batch-time class)`` with the outcome's probability; ``A`` maps an
intermediate to ``(prompts left + arrivals, next head)`` with ``Poisson(lambda t)`` weights.
``P = R A``.  The outcomes are tabulated once, by a dynamic programme over tokens used (one pass per
prompt taken, vectorised over tokens and lengths), and aggregated by the batch time ``t(u)`` --
prompts taken, time class and next head are all the chain needs -- so a support of many lengths
costs ``kmax x b x L`` operations, not an enumeration of prompt sequences.  ``R`` does not depend
on ``lambda``; a bisection rebuilds only ``A``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import stats

from .rules import fits, whole_prompts

__all__ = ["DENSE_MAX_STATES", "QueueChain", "batch_outcomes", "prefill_capacity"]

#: queue chains up to this many states are solved densely (their rows reach most states of the next levels)
DENSE_MAX_STATES = 3_000


def _time_classes(t, b: int):
    """``(tc, tvals)``: class of ``u = 0..b`` tokens by batch time ``t(u)`` (rounded to 1e-15 s)."""
    tu = np.r_[0.0, np.asarray(t(np.arange(1, b + 1, dtype=float)), dtype=float)]
    tvals, tc = np.unique(np.round(tu, 15), return_inverse=True)
    return tc, tvals


def batch_outcomes(b: int, lens: np.ndarray, pl: np.ndarray, tc: np.ndarray, U: int, tol: float = 1e-15):
    """``out[h][a] = (m, c, hd, w)`` arrays: prefill-batch outcomes with head ``h`` and ``a`` extra prompts.

    ``h`` indexes ``lens`` (``h = L`` is a fresh head, the mixture over ``pl``); ``m`` prompts are
    taken, their ``u`` tokens have time class ``c``; the next head is ``hd`` (an index, or ``L`` for
    fresh when the available prompts ran out); ``w`` the probability.  ``a`` runs over
    ``0..kmax-1`` with ``kmax = b // min(lens)`` (no batch holds more prompts).
    """
    L = lens.size
    kmax = whole_prompts(b, int(lens.min()))
    u = np.arange(b + 1)
    over = ~fits(lens[None, :], b - u[:, None])           # the next prompt of length lens[l] does not fit
    C = sp.csr_matrix((np.ones(b + 1), (tc, u)), shape=(U, b + 1))  # tokens -> time class

    def key_table(parts):
        m = np.concatenate([p[0] for p in parts])
        c = np.concatenate([p[1] for p in parts])
        hd = np.concatenate([p[2] for p in parts])
        w = np.concatenate([p[3] for p in parts])
        key = (m * U + c) * (L + 1) + hd
        uk, inv = np.unique(key, return_inverse=True)
        ww = np.bincount(inv, w)
        keep = ww > tol
        uk, ww = uk[keep], ww[keep]
        mc, hd = np.divmod(uk, L + 1)
        m, c = np.divmod(mc, U)
        return m, c, hd, ww

    F = np.zeros((L, b + 1))          # F[h, u]: head h, tokens u after taking a + 1 prompts, still going
    F[np.arange(L), lens] = 1.0
    G = sp.csr_matrix((np.repeat(pl, b + 1), (np.tile(u, L), np.concatenate([u + ln for ln in lens]))),
                      shape=(b + 1, 2 * b + 2))[:, :b + 1].tocsc()  # u -> u + l (fits the budget)
    classes = [np.flatnonzero(tc == c) for c in range(U)]
    fit_over = over * pl[None, :]
    stops = [[] for _ in range(L)]
    out = [[] for _ in range(L)]
    for a in range(kmax):
        fresh = F @ C.T.toarray()              # (head, class): all a extras taken, the next head fresh
        for h in range(L):
            cf = np.flatnonzero(fresh[h] > tol)
            out[h].append(key_table(stops[h] + [(np.full(cf.size, a + 1), cf, np.full(cf.size, L), fresh[h, cf])]))
        if a == kmax - 1:
            break
        # one more prompt: it stops prefill where it does not fit (head-of-line), else u -> u + l
        for c, uc in enumerate(classes):
            if uc.size == 0:
                continue
            S = F[:, uc] @ fit_over[uc]        # (head, next head) mass stopping in class c
            hh, ll = np.nonzero(S > tol)
            for h in np.unique(hh):
                sel = hh == h
                stops[h].append((np.full(int(sel.sum()), a + 1), np.full(int(sel.sum()), c), ll[sel], S[h, ll[sel]]))
        F = np.asarray((sp.csr_matrix(F) @ G).todense())
    mix = []
    for a in range(kmax):
        mix.append(key_table([(m, c, hd, w * pl[h]) for h in range(L) for (m, c, hd, w) in [out[h][a]]]))
    out.append(mix)
    return out, kmax


def prefill_capacity(tvals, outcomes, kmax: int, L: int) -> float:
    """Prompts/s of saturated prefill: the head chain with ``kmax - 1`` extras always available."""
    P = np.zeros((L + 1, L + 1))
    Em = np.zeros(L + 1)
    Et = np.zeros(L + 1)
    for h in range(L + 1):
        m, c, hd, w = outcomes[h][kmax - 1]
        Em[h] = w @ m
        Et[h] = w @ tvals[c]
        np.add.at(P[h], hd, w)
    A = P.T - np.eye(L + 1)
    A[-1, :] = 1.0
    rhs = np.zeros(L + 1)
    rhs[-1] = 1.0
    pi = np.clip(np.linalg.lstsq(A, rhs, rcond=None)[0], 0.0, None)
    pi /= pi.sum()
    return float(pi @ Em) / float(pi @ Et)


class QueueChain:
    """The waiting-prompt chain truncated at ``Q`` prompts; :meth:`decode_rate` at an arrival rate.

    States: ``0`` and ``1 + (q - 1)(L + 1) + h`` for ``q = 1..Q``, ``h = 0..L`` (``L`` fresh).
    """

    def __init__(self, b, lens, pl, tvals, tc, outcomes, kmax, Q):
        L, U = lens.size, tvals.size
        self.b, self.L, self.U, self.Q, self.tvals = b, L, U, Q, tvals
        self.n = 1 + Q * (L + 1)
        rows, cols, vals = [0], [self._mid(0, L, int(tc[b]), L, U)], [1.0]  # empty: a full decode batch
        tau = np.empty(self.n)
        tau[0] = tvals[tc[b]]
        for q in range(1, Q + 1):
            a = min(q - 1, kmax - 1)
            for h in range(L + 1):
                m, c, hd, w = outcomes[h][a]
                base = q - m
                head = np.where(base > 0, hd, L)
                r = 1 + (q - 1) * (L + 1) + h
                rows.append(np.full(m.size, r))
                cols.append(self._mid(base, head, c, L, U))
                vals.append(w)
                tau[r] = w @ tvals[c]
        rows = np.concatenate([np.atleast_1d(x) for x in rows])
        cols = np.concatenate([np.atleast_1d(x) for x in cols])
        vals = np.concatenate([np.atleast_1d(x) for x in vals])
        self.n_mid = Q * (L + 1) * U
        self.R = sp.csr_matrix((vals, (rows, cols)), shape=(self.n, self.n_mid))
        self.tau = tau

    @staticmethod
    def _mid(base, head, c, L, U):
        return (np.asarray(base) * (L + 1) + np.asarray(head)) * U + np.asarray(c)

    @property
    def nnz(self) -> int:
        return int(self.R.nnz)

    def matrix(self, lam: float):
        """``(P, lost)``: the transition matrix at ``lam`` and the mass each state sends beyond ``Q``."""
        L, U, Q = self.L, self.U, self.Q
        A = np.arange(Q + 1)
        pmf = stats.poisson.pmf(A[None, :], lam * self.tvals[:, None])  # (class, arrivals)
        i = np.arange(self.n_mid)
        bh, c = np.divmod(i, U)
        base, head = np.divmod(bh, L + 1)
        q2 = base[:, None] + A[None, :]
        ok = q2 <= Q
        head2 = np.broadcast_to(np.where(base > 0, head, L)[:, None], q2.shape)
        dest = np.where(q2 == 0, 0, 1 + (np.minimum(q2, Q) - 1) * (L + 1) + head2)
        pr = pmf[c]
        tail = np.clip(1.0 - np.where(ok, pr, 0.0).sum(axis=1), 0.0, None)  # P(q2 > Q): to (Q, head)
        cap = 1 + (Q - 1) * (L + 1) + np.where(base > 0, head, L)
        r = np.concatenate([np.repeat(i, ok.sum(axis=1)), i])
        cc = np.concatenate([dest[ok], cap])
        v = np.concatenate([pr[ok], tail])
        Am = sp.csr_matrix((v, (r, cc)), shape=(self.n_mid, self.n))
        P = (self.R @ Am).tocsr()
        return P, self.R @ tail

    def decode_rate(self, lam: float):
        """``(D, lost_mass)``: ``D = b pi_0 / E_pi[t]``, the decode tokens/s with a saturated pool."""
        from .solve import stationary

        P, lost = self.matrix(lam)
        if self.n <= DENSE_MAX_STATES:  # P is nearly dense here: LAPACK beats a sparse LU
            M = P.toarray().T - np.eye(self.n)
            M[0, :] = 1.0
            rhs = np.zeros(self.n)
            rhs[0] = 1.0
            pi = np.clip(np.linalg.solve(M, rhs), 0.0, None)
            pi /= pi.sum()
        else:
            pi = stationary(P, "auto", tol=1e-12, ref=0).pi
        return self.b * pi[0] / float(pi @ self.tau), float(pi @ lost)
