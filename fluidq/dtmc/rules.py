"""The batch rule of the count chain, as functions of queue counts (internal).

One engine's embedded chain (:func:`fluidq.dtmc.build_dtmc`) and its exact twin
(:func:`fluidq.dtmc.symbolic_dtmc`) both call these functions, so the two chains cannot disagree on
which batch a state forms.  They read a :class:`fluidq.policies.Scheduler`'s rules (``priority``,
``mixed``, ``chunked``) and its token budget ``b``; ``tests/dtmc/test_engine_chain.py`` holds the shapes
to ``Scheduler.select`` on concrete queues.

Every function is vectorised over states: ``NP``, ``ND``, ``JJ`` are integer arrays of the
coordinates ``n_p`` (requests waiting for or in prefill), ``n_d`` (requests decoding) and ``j`` (prompt
tokens the head prompt already received; only for fixed prompts under a chunking scheduler).
"""
from __future__ import annotations

import numpy as np

from .state import StateSpace

__all__ = ["check_fixed_prompt", "count_space", "decode_tokens", "fixed_prefill", "prefill_budget"]


def check_fixed_prompt(pol, vp: int, b: int) -> int:
    """``vp``, refused when a scheduler that does not chunk could never schedule a prompt that long."""
    if vp > b and not pol.chunked:
        from ..errors import ParameterError

        raise ParameterError("prompt_tokens", vp, f"at most the budget b={b} for {pol.name}, which does not "
                             "chunk prompts", "such a prompt is never scheduled; raise b_max or chunk")
    return vp


def count_space(max_prefill: int, max_decode: int, head_positions: int) -> StateSpace:
    """The states ``(n_p, n_d, j)`` with ``n_p <= max_prefill``, ``n_d <= max_decode``, ``j < head_positions``.

    ``j > 0`` needs a head prompt, so ``(0, n_d, j > 0)`` is not a state.  States are ordered
    lexicographically in ``(n_p, n_d, j)``.
    """
    if head_positions > 1:
        valid = np.ones((max_prefill + 1, max_decode + 1, head_positions), dtype=bool)
        valid[0, :, 1:] = False
    else:
        valid = np.ones((max_prefill + 1, max_decode + 1, 1), dtype=bool)
    return StateSpace.from_mask(("n_p", "n_d", "j"), valid.shape, valid)


def prefill_budget(pol, b: int, NP, ND):
    """``(D0, B)``: decode tokens fixed before prefill, and the prefill budget, per state.

    Decode first, mixed (Sarathi-Serve, vLLM chunked): one token per decoding request up to ``b``,
    prefill gets the rest.  Decode first, separate (FasterTransformer): decode-only while anyone
    decodes, else prefill-only.  Prefill first, mixed (Orca): prefill gets ``b`` and decode what
    prefill leaves (``D0 = None``; see :func:`decode_tokens`).  Prefill first, separate (vanilla vLLM):
    prefill-only while prompts wait, else decode-only.
    """
    NP = np.asarray(NP)
    ND = np.asarray(ND)
    if pol.priority == "decode":
        if pol.mixed:
            D0 = np.minimum(ND, b)
            return D0, b - D0
        return np.where(ND > 0, np.minimum(ND, b), 0), np.where(ND > 0, 0, b)
    if pol.mixed:
        return None, np.full(NP.shape, b)  # decode takes what prefill leaves
    return np.where(NP > 0, 0, np.minimum(ND, b)), np.where(NP > 0, b, 0)


def fixed_prefill(pol, vp: int, head_positions: int, NP, JJ, B):
    """``(K, T, jn)`` for prompts of exactly ``vp`` tokens taken FCFS with prefill budget ``B``.

    ``K`` prompts finish prefill, ``T`` prefill tokens are used and ``jn`` is the head prompt's progress
    afterwards.  A chunking scheduler fills the budget across prompts (the head resumes at ``j``); a
    non-chunking one takes ``floor(B / vp)`` whole prompts, head-of-line.
    """
    NP = np.asarray(NP)
    JJ = np.asarray(JJ)
    if pol.chunked:
        R = NP * vp - JJ
        T = np.minimum(B, R)
        first = vp - JJ
        done = T >= first
        K = np.where(done, 1 + (np.maximum(T - first, 0)) // vp, 0)
        jn = np.where(done, (np.maximum(T - first, 0)) % vp, JJ + T)
        jn = np.where(K >= NP, 0, jn)
        if head_positions == 1:
            jn = np.zeros_like(jn)
        return K, T, jn
    K = np.minimum(NP, B // vp)
    return K, K * vp, np.zeros(NP.shape, dtype=np.int64)


def decode_tokens(D0, ND, T, b: int):
    """Decode tokens of the batch: ``D0`` when fixed before prefill, else ``min(n_d, b - T)`` (Orca)."""
    if D0 is None:
        return np.minimum(ND, b - T)
    return D0
