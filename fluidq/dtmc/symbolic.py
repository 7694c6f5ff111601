"""Symbolic drift with sympy: Theorem 2's condition as a Foster-Lyapunov certificate, and the
closed-form threshold of FasterTransformer.

Lyapunov function (memoryless lengths, geometric prompt and output with means ``m_p``, ``m_d``):
``V = n_p (m_p + m_d) + n_d m_d``, the expected unprocessed tokens.  One prefill token completes
its prompt with probability ``1/m_p`` (the request then owes ``m_d`` instead of ``m_p + m_d``),
one decode token completes its request with probability ``1/m_d``; both lower ``V`` by exactly 1
in expectation.  A batch of ``b`` tokens takes ``t(b) = c + a ceil(b/b0)`` and brings
``Poisson(lambda t(b))`` requests, each adding ``m_p + m_d``.  Hence

``E[V' - V | batch of b tokens] = lambda t(b) (m_p + m_d) - b``.

A work-conserving scheduler fills the batch (``b = b_max``) whenever the demand is at least
``b_max``, which holds outside a finite set of states (``n_d >= b_max`` suffices, and many prompts
waiting fill it with probability tending to one), so the drift is ``lambda t(b_max)(m_p+m_d) -
b_max < 0`` there iff ``lambda (m_p + m_d) < b_max / t(b_max)`` -- Theorem 2(b) of Li, Dai, Peng
(arXiv:2504.07347); with ``b0 | b_max``, ``t(b_max) = c + a b_max / b0``.

FasterTransformer wastes capacity in the states where requests decode but fewer than ``b_max``
do: the batch has ``n_d`` tokens and the drift is ``lambda t(n_d)(m_p + m_d) - n_d``, positive
for small ``n_d`` even far below Theorem 2's load.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

__all__ = [
    "Certificate",
    "batch_drift",
    "fastertransformer_region_drift",
    "fastertransformer_threshold_expr",
    "symbols",
    "vllm_region_drift",
    "work_conserving_certificate",
]


def symbols():
    """The paper's symbols: ``lambda, m_p, m_d, c, a, b0, b_max`` (positive reals)."""
    lam, mp, md, c, a, b0, bmax = sp.symbols("lambda m_p m_d c a b0 b_max", positive=True)
    return {"lambda": lam, "m_p": mp, "m_d": md, "c": c, "a": a, "b0": b0, "b_max": bmax}


def _token_effects(S):
    """Expected change of ``V`` from one prefill token and one decode token (derived, not typed in)."""
    mp, md = S["m_p"], S["m_d"]
    p, q = 1 / mp, 1 / md
    # a prompt in prefill owes m_p + m_d; after one prefill token it owes m_d w.p. p, else still m_p + m_d
    prefill = sp.simplify(p * md + (1 - p) * (mp + md) - (mp + md))
    # a decoding request owes m_d; after one decode token it owes 0 w.p. q, else m_d
    decode = sp.simplify(q * 0 + (1 - q) * md - md)
    return prefill, decode


def batch_drift(x, y, t_b, S=None):
    """``E[Delta V]`` for a batch of ``x`` prefill and ``y`` decode tokens lasting ``t_b``."""
    S = S or symbols()
    pre, dec = _token_effects(S)
    arrivals = S["lambda"] * t_b  # E[Poisson(lambda t_b)]
    return sp.expand(arrivals * (S["m_p"] + S["m_d"]) + x * pre + y * dec)


@dataclass(frozen=True)
class Certificate:
    """A Foster-Lyapunov certificate: drift outside the finite set, and the condition it gives."""

    lyapunov: sp.Expr
    drift: sp.Expr
    condition: sp.Basic
    threshold: sp.Expr
    symbols: dict

    def to_dict(self):
        return {"lyapunov": str(self.lyapunov), "drift": str(self.drift), "condition": str(self.condition),
                "threshold": str(self.threshold)}


def work_conserving_certificate(divisible: bool = True) -> Certificate:
    """Theorem 2(b) from the drift of ``V``: ``lambda (m_p + m_d) < b_max / t_{b_max}``.

    ``divisible=True`` uses ``b0 | b_max`` (``ceil(b_max/b0) = b_max/b0``), the paper's assumption.
    """
    S = symbols()
    bmax, b0 = S["b_max"], S["b0"]
    blocks = bmax / b0 if divisible else sp.ceiling(bmax / b0)
    t_full = S["c"] + S["a"] * blocks
    n_p, n_d = sp.symbols("n_p n_d", nonnegative=True, integer=True)
    V = n_p * (S["m_p"] + S["m_d"]) + n_d * S["m_d"]
    x = sp.Symbol("x", nonnegative=True)  # prefill tokens of the full batch; y = b_max - x decode
    drift = sp.simplify(batch_drift(x, bmax - x, t_full, S))
    lam = S["lambda"]
    root = sp.solve(sp.Eq(drift, 0), lam)[0]
    cond = sp.StrictLessThan(lam, sp.simplify(root))
    return Certificate(lyapunov=V, drift=drift, condition=cond, threshold=sp.simplify(root), symbols=S)


def fastertransformer_threshold_expr(v_p=None, v_d=None):
    """FasterTransformer's threshold for fixed lengths ``(v_p, v_d)``, staircase batch time.

    ``k = floor(b_max / v_p)`` prompts per prefill batch, then ``v_d`` decode batches of ``k``
    tokens: ``lambda* = k / (t(k v_p) + v_d t(k))``.
    """
    S = symbols()
    vp = sp.Symbol("v_p", positive=True, integer=True) if v_p is None else sp.Integer(v_p)
    vd = sp.Symbol("v_d", positive=True, integer=True) if v_d is None else sp.Integer(v_d)
    k = sp.floor(S["b_max"] / vp)

    def t(b):
        return S["c"] + S["a"] * sp.ceiling(b / S["b0"])

    return k / (t(k * vp) + vd * t(k)), S


def fastertransformer_region_drift():
    """Drift of ``V`` in FasterTransformer's decode-only states with ``n < b_max`` decoding: the waste."""
    S = symbols()
    n = sp.Symbol("n_d", positive=True, integer=True)
    t_n = S["c"] + S["a"] * sp.ceiling(n / S["b0"])
    return batch_drift(0, n, t_n, S), n, S


def vllm_region_drift():
    """Drift of ``V`` in vanilla vLLM's prefill-only states: ``m`` whole prompts of ``v_p`` tokens.

    While prompts wait, vLLM runs prefill-only batches of ``m v_p`` tokens (``m <= floor(b_max/v_p)``
    and ``m`` = the prompts waiting), even when many requests could decode; the drift
    ``lambda t(m v_p)(m_p + m_d) - m v_p`` is positive for small ``m`` -- the waste that puts its
    threshold below Theorem 2's.
    """
    S = symbols()
    m = sp.Symbol("m", positive=True, integer=True)
    vp = sp.Symbol("v_p", positive=True, integer=True)
    b = m * vp
    t_b = S["c"] + S["a"] * sp.ceiling(b / S["b0"])
    return batch_drift(b, 0, t_b, S), (m, vp), S
