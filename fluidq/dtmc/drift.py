"""Numerical one-step drift ``E[V(X_1) - V(X_0) | X_0 = x]`` of a chain (Foster-Lyapunov check).

For an engine chain, ``V`` is the expected unprocessed tokens ``n_p (m_p + m_d) - j + n_d m_d``
(memoryless lengths make it the conditional expectation of the true token backlog) or the
requests in system.  Near the truncation caps the drift is distorted by the redirected mass;
read it in the interior.
"""
from __future__ import annotations

import numpy as np

from ..errors import ParameterError

__all__ = ["chain_drift", "drift_per_second"]


def chain_drift(chain, weights: str = "tokens") -> np.ndarray:
    """Per-state drift per batch of ``V`` = ``"tokens"`` (unprocessed tokens) or ``"requests"``."""
    if weights == "tokens":
        V = chain.unprocessed_tokens
    elif weights == "requests":
        V = chain.residents
    else:
        raise ParameterError("weights", weights, "'tokens' or 'requests'")
    return chain.P @ V - V


def drift_per_second(chain, weights: str = "tokens") -> np.ndarray:
    """Drift divided by the mean time to the next boundary (tokens or requests per second)."""
    return chain_drift(chain, weights) / chain.sojourn_s
