"""Training pairs and the margin ranking loss of PARS.

PARS (Tao et al., "PARS: Low-Latency LLM Serving via Pairwise Learning-to-Rank",
arXiv:2510.03243) trains a scorer on *pairs* of prompts: for each prompt ``A`` partners ``B``
are drawn at random until ``pairs_per_prompt`` pairs are kept (at most ``max_attempts`` draws);
a pair is kept only when the two response lengths differ enough,
``|L_A - L_B| / max(L_A, L_B) >= delta`` (``delta = 0.2``), and is labelled ``y = +1`` when
``A`` is longer, ``-1`` otherwise.  The loss is the margin ranking loss
``max(0, -y (s_A - s_B) + margin)`` with ``margin = 1.0``: a higher score means a longer response.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import array, integer, real
from ..errors import DataError, ParameterError

__all__ = ["PairSet", "make_pairs", "margin_ranking_loss", "pair_kept"]


def pair_kept(len_a, len_b, delta: float = 0.2):
    """The relative filter: ``|L_A - L_B| / max(L_A, L_B) >= delta`` (element-wise).

    Two zero lengths are never kept (no difference to learn from).
    """
    a = np.asarray(len_a, dtype=float)
    b = np.asarray(len_b, dtype=float)
    hi = np.maximum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(hi > 0, np.abs(a - b) / np.where(hi > 0, hi, 1.0), 0.0)
    return rel >= delta


@dataclass(frozen=True, eq=False)
class PairSet:
    """Index pairs ``(a, b)`` with labels ``y`` (``+1`` when ``a`` is longer).

    Attributes
    ----------
    a, b : ndarray of int
        Indices into the prompt list.
    y : ndarray of float
        ``+1.0`` or ``-1.0``.
    n_prompts : int
        Number of prompts the indices refer to.
    attempts : int
        Partner draws made in total (kept or not).
    """

    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    n_prompts: int
    attempts: int

    def __len__(self) -> int:
        return int(self.a.size)

    def to_dict(self) -> dict:
        return {"n_pairs": len(self), "n_prompts": self.n_prompts, "attempts": self.attempts,
                "positive_fraction": float(np.mean(self.y > 0)) if len(self) else float("nan")}


def make_pairs(lengths, *, delta: float = 0.2, pairs_per_prompt: int = 10, max_attempts: int = 100,
               rng=None) -> PairSet:
    """Build PARS training pairs from response lengths.

    Parameters
    ----------
    lengths : array_like of float
        Response length of each prompt (words, characters or tokens; whole response, reasoning
        included), at least two.
    delta : float
        Relative-difference filter, ``0 <= delta < 1`` (paper: 0.2).
    pairs_per_prompt : int
        Pairs kept per anchor prompt (paper: 10).
    max_attempts : int
        Partner draws per anchor before giving up (paper: 100).
    rng : numpy Generator, int or None
        Source of the random partners (``np.random.default_rng(rng)``).

    Returns
    -------
    PairSet

    Raises
    ------
    DataError
        When no pair survives the filter (e.g. all lengths equal).

    References
    ----------
    Tao et al., "PARS: Low-Latency LLM Serving via Pairwise Learning-to-Rank", arXiv:2510.03243, §3.
    """
    L = array("lengths", lengths, nonnegative=True, min_len=2)
    delta = real("delta", delta, nonnegative=True)
    if delta >= 1:
        raise ParameterError("delta", delta, "a relative difference in [0, 1)")
    k = integer("pairs_per_prompt", pairs_per_prompt, minimum=1)
    m = integer("max_attempts", max_attempts, minimum=1)
    rng = np.random.default_rng(rng)
    n = L.size
    # Draw all partners at once (partner != anchor), then keep the first k that pass, per anchor.
    draws = rng.integers(0, n - 1, size=(n, m))
    anchors = np.arange(n)[:, None]
    partners = draws + (draws >= anchors)            # skip the anchor itself
    ok = pair_kept(L[anchors], L[partners], delta)
    rank = np.cumsum(ok, axis=1)
    take = ok & (rank <= k)
    # attempts actually made: up to the k-th kept partner, or all m when fewer than k kept
    kth = np.where(rank[:, -1] >= k, np.argmax(rank >= k, axis=1) + 1, m)
    ia, jb = np.nonzero(take)
    a = ia.astype(np.int64)
    b = partners[ia, jb].astype(np.int64)
    if a.size == 0:
        raise DataError(f"no training pair survives the relative filter |L_A - L_B|/max(L_A, L_B) >= {delta} "
                        f"among {n} prompts (lengths range {L.min():g}..{L.max():g}); all lengths equal or "
                        "too close: use more varied data or a smaller delta")
    y = np.where(L[a] > L[b], 1.0, -1.0)
    return PairSet(a=a, b=b, y=y, n_prompts=n, attempts=int(kth.sum()))


def margin_ranking_loss(s_a, s_b, y, margin: float = 1.0, *, reduce: bool = True):
    """``max(0, -y (s_A - s_B) + margin)``, averaged when ``reduce`` (PyTorch's MarginRankingLoss)."""
    margin = real("margin", margin, nonnegative=True)
    out = np.maximum(0.0, -np.asarray(y, float) * (np.asarray(s_a, float) - np.asarray(s_b, float)) + margin)
    return float(out.mean()) if reduce else out
