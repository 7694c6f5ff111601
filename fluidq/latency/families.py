"""Named workload families of the PARS and UNIBOOST experiments, built from the shipped data.

``workload_family(name, rate_per_s)`` returns a :class:`~fluidq.Workload` with Poisson arrivals
and the lengths of one family:

=============  ==========================================================================
``reasoning``  heavy-tailed reasoning-style outputs: log-normal (sigma 1.2, mean 600, cap
               8192 tokens), :func:`fluidq.latency.reasoning_workload` -- synthetic, since the
               shipped GSM8K solutions are short (tens of words)
``gsm8k``      GSM8K math word problems: prompt and solution lengths of the shipped table
               (all models' solutions pooled), words x ``TOKENS_PER_WORD``
``chat``       AlpacaEval instructions: prompt and response lengths of the shipped table
               (all models pooled), words x ``TOKENS_PER_WORD``
``azure-conv`` Azure LLM inference trace 2023, conversation: its token lengths
``azure-code`` the same trace, code: its token lengths
=============  ==========================================================================

The length tables count words; ``TOKENS_PER_WORD`` = 1.3 (fluidq's choice, a common rule of thumb
for English BPE tokenizers) turns them into tokens.  Only the length distributions are used: the
arrivals are Poisson at ``rate_per_s`` (the comparison sets the rate from its loads).
"""
from __future__ import annotations

import numpy as np

from .._validate import real
from ..errors import UnknownNameError
from ..workload import Empirical, Poisson, Workload

__all__ = ["FAMILIES", "TOKENS_PER_WORD", "workload_family"]

FAMILIES = ("reasoning", "gsm8k", "chat", "azure-conv", "azure-code")

#: tokens per English word (fluidq's choice for the word-count tables)
TOKENS_PER_WORD = 1.3


def _from_table(name: str, rate: float, label: str) -> Workload:
    from ..predict import load_lengths

    ds = load_lengths(name)
    p = np.array([max(1, round(len(s.split()) * TOKENS_PER_WORD)) for s in ds.prompts], float)
    P, D = [], []
    for m in ds.models:
        L = ds.of(m)
        ok = np.isfinite(L) & (L > 0)
        P.append(p[ok])
        D.append(np.maximum(1, np.round(L[ok] * TOKENS_PER_WORD)))
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Empirical(values=tuple(np.concatenate(P))),
                    output_tokens=Empirical(values=tuple(np.concatenate(D))), name=label)


def workload_family(name: str, rate_per_s: float = 1.0) -> Workload:
    """The workload family ``name`` (one of :data:`FAMILIES`) at Poisson rate ``rate_per_s``."""
    rate = real("rate_per_s", rate_per_s, positive=True)
    if name not in FAMILIES:
        raise UnknownNameError("workload family", name, FAMILIES)
    if name == "reasoning":
        from . import reasoning_workload

        return reasoning_workload(rate)
    if name == "gsm8k":
        return _from_table("gsm8k", rate, "GSM8K (shipped solution lengths, words x 1.3)")
    if name == "chat":
        return _from_table("alpaca_eval", rate, "chat: AlpacaEval (shipped response lengths, words x 1.3)")
    w = Workload.from_trace(name)
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                    name=f"{name} (trace lengths, Poisson arrivals)")
