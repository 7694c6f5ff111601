"""Capacity of a decode-first, chunked-prefill engine from its iteration model, with the binding limit.

Fluid argument (the single-engine model of Li, Dai, Peng, arXiv:2504.07347, with a batch-size
limit and a KV-cache limit added).  Under overload the engine keeps ``N`` requests resident and
decoding; each iteration gives every resident one decode token and fills the rest of the token
budget with prompt chunks.  Three limits cap ``N``:

* ``k_max`` (``max_num_seqs``): ``N <= k_max``;
* the KV cache: a resident request holds its prompt and the tokens generated so far; averaged over
  the iterations it spends decoding (length-biased: long requests are resident longer) this is
  ``kv_bar = sum_i o_i (p_i + o_i/2) / sum_i o_i`` plus half a block of rounding, so
  ``N <= C / (kv_bar + (block-1)/2)``;
* the token budget: in flow balance the prompt tokens per iteration are ``N m_p / (m_d - 1)``
  (the first output token comes with the prefill), so ``N (1 + m_p/(m_d - 1)) <= b_max``.

With ``N = min`` of the three, a request costs ``(m_d - 1) t_dec(N)/N`` seconds of shared decode
iterations plus ``E[Delta]``, the extra time its prompt chunks add to the iterations they join
(``Delta = sum_chunks t(N decodes + chunk) - t(N decodes)``, chunks of at most ``b_max - N``
tokens).  The capacity is ``lambda* = 1/(m_d t_dec/N + E[Delta])`` requests per second and
``lambda* (m_p + m_d)`` tokens per second.  When the budget binds this reduces to the
``b_max / t(b_max)`` bound of Theorem 2 evaluated at the workload's decode context.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..results import plain

__all__ = ["CapacityPrediction", "predict_capacity"]


@dataclass(frozen=True, kw_only=True)
class CapacityPrediction:
    """Predicted capacity and which limit binds.

    Attributes
    ----------
    tokens_per_s, requests_per_s : float
        Predicted maximum served rate.
    residents : float
        ``N``, the requests resident in the engine at saturation.
    binding : str
        ``"kv_cache"``, ``"k_max"`` or ``"token_budget"``.
    limits : dict
        ``N`` allowed by each limit.
    decode_iteration_s : float
        ``t_dec(N)``: a decode-only iteration at saturation.
    reason : str
        The argument in words.
    """

    tokens_per_s: float
    requests_per_s: float
    residents: float
    binding: str
    limits: dict
    decode_iteration_s: float
    mean_context_tokens: float
    reason: str
    inputs: dict = field(default_factory=dict, repr=False)

    def to_dict(self):
        return plain({"tokens_per_s": self.tokens_per_s, "requests_per_s": self.requests_per_s,
                      "residents": self.residents, "binding": self.binding, "limits": self.limits,
                      "decode_iteration_s": self.decode_iteration_s,
                      "mean_context_tokens": self.mean_context_tokens, "reason": self.reason,
                      "inputs": self.inputs})


def predict_capacity(model, input_tokens, output_tokens, *, b_max: int, k_max: int | None,
                     kv_capacity_tokens: int | None, block_size: int = 16) -> CapacityPrediction:
    """Predicted capacity of an engine (see the module docstring).

    Parameters
    ----------
    model : IterationModel
        Whole-iteration time from operator profiles.
    input_tokens, output_tokens : array_like
        The workload's request lengths (an empirical sample).
    b_max : int
        Token budget per iteration.
    k_max : int or None
        Batch-size limit.
    kv_capacity_tokens : int or None
        KV-cache capacity in tokens.
    block_size : int
        KV block size in tokens (half a block of rounding per resident request).

    Returns
    -------
    CapacityPrediction

    References
    ----------
    Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
    arXiv:2504.07347 (Theorem 2: the token-budget bound; section 6: the batch-size limit k_max).
    Ao et al., arXiv:2504.11320 (memory-constrained scheduling: a KV limit on the residents).
    """
    p = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    if p.size == 0 or p.shape != o.shape:
        raise ParameterError("input_tokens", p.shape, "two non-empty arrays of equal length")
    mp, md = float(p.mean()), float(o.mean())
    kv_bar = float((o * (p + o / 2.0)).sum() / o.sum())
    # the first output token comes with the prefill; ``m_d - 1`` decode iterations follow
    mdec = max(md - 1.0, 0.0)
    limits = {"token_budget": b_max * mdec / (mp + mdec) if mdec > 0 else 1.0}
    if k_max is not None:
        limits["k_max"] = float(k_max)
    if kv_capacity_tokens is not None:
        limits["kv_cache"] = float(kv_capacity_tokens) / (kv_bar + (block_size - 1) / 2.0)
    binding = min(limits, key=limits.get)
    N = max(1.0, limits[binding])
    t_dec = float(model.decode_only(N, kv_bar))
    room = max(1.0, b_max - N)
    # the extra time each prompt adds to the iterations its chunks join
    uniq, counts = np.unique(p, return_counts=True)
    deltas = np.zeros(uniq.size)
    for j, pi in enumerate(uniq):
        done, rem, d = 0.0, pi, 0.0
        while rem > 0:
            c = min(rem, room)
            d += float(model.time_shape(c, done, N, kv_bar, n_emit=N + 1)) - t_dec
            rem -= c
            done += c
        deltas[j] = d
    e_delta = float((deltas * counts).sum() / counts.sum())
    per_request = mdec * t_dec / N + e_delta
    lam = 1.0 / per_request
    words = {"kv_cache": f"the KV cache ({kv_capacity_tokens} tokens) holds N = {N:.1f} requests of mean "
                         f"context {kv_bar:.0f} tokens",
             "k_max": f"max_num_seqs = {k_max} caps the residents",
             "token_budget": f"the token budget b_max = {b_max} is filled with N = {N:.1f} decodes and "
                             f"{N * mp / max(mdec, 1e-9):.0f} prompt tokens"}
    others = ", ".join(f"{k} allows {v:.1f}" for k, v in limits.items() if k != binding)
    reason = (f"{words[binding]} ({others}); a decode iteration takes {t_dec * 1e3:.2f} ms and each prompt "
              f"adds {e_delta * 1e3:.2f} ms")
    return CapacityPrediction(tokens_per_s=lam * (mp + md), requests_per_s=lam, residents=N, binding=binding,
                              limits=limits, decode_iteration_s=t_dec, mean_context_tokens=kv_bar, reason=reason,
                              inputs={"b_max": b_max, "k_max": k_max, "kv_capacity_tokens": kv_capacity_tokens,
                                      "m_p": mp, "m_d": md, "model": model.source})
