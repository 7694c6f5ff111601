"""The batch rule of the built-in schedulers as functions of queue counts (issue 14: the rule *once*).

A :class:`~fluidq.policies.Scheduler` forms a batch in three steps, each a function here:

1. :func:`budgets` -- from the counts ``n_p`` (prompts waiting for or in prefill) and ``n_d`` (requests
   decoding): the decode tokens fixed before prefill ``D0`` (``None`` when decode takes what prefill
   leaves), the prefill token budget ``B`` and the prefill request slots ``S`` (``None``: no ``k_max``);
2. prefill within ``(B, S)``: :func:`take_prompts` on the waiting prompts' remaining tokens in the
   scheduler's order (head-of-line whole prompts, chunked prefill, ``chunk_long_prompts``, prompts that can
   never fit reported), or in closed form :func:`fixed_prefill_counts` when every prompt has ``vp`` tokens
   and only the head prompt may have started (``j`` tokens done);
3. :func:`decode_tokens` -- the decode tokens of the batch from ``D0`` or from what prefill left.

:meth:`Scheduler.select <fluidq.policies.Scheduler.select>` calls 1-3 on the residents it orders; the count
chains of :mod:`fluidq.dtmc` call them vectorised over states (``NP``, ``ND``, ``JJ`` integer arrays of
``n_p``, ``n_d``, ``j``); ``tests/policies/test_batch_rule_counts.py`` holds the closed form and ``select``
to a per-request reference on random queues (with and without ``k_max``).

Every function takes Python integers (one queue: the result is an ``int``) or numpy arrays (one entry per
state); ``pol`` is read only for ``priority``, ``mixed``, ``chunked`` and ``chunk_long_prompts``.  The rule
is that of Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347 (§4 Table 1; §6 for ``k_max``).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError

__all__ = ["NO_CAP", "budget_split", "budgets", "check_fixed_prompt", "decode_after_prefill", "decode_tokens", "fits",
           "fixed_prefill", "fixed_prefill_counts", "prefill_budget", "schedulable", "take_prompts", "whole_prompts"]

NO_CAP = 1 << 62  # "no k_max" for the scalar forms below (the compiled loops' cap)


# -- The scalar core: integer arithmetic only (no numpy, no None, no exceptions), so numba compiles it as
# written and the compiled loops (fluidq/kernel) inline these very functions; the array forms below call
# them for one queue and are held to them on arrays by tests/policies/test_batch_rule_counts.py.

def budget_split(prefill_first, mixed, b, n_p, n_d, k):
    """``(D0, B, S)`` of :func:`budgets` for one queue in integers: ``D0 = -1`` when decode takes what prefill
    leaves, ``k = NO_CAP`` (then ``S`` is ``NO_CAP`` less the decode slots) for no ``k_max``."""
    if not prefill_first:
        d = n_d if n_d < b else b
        if k < d:
            d = k
        if mixed:
            return d, b - d, k - d
        if n_d > 0:
            return d, 0, 0
        return 0, b, k
    if mixed or n_p > 0:
        return -1, b, k
    return -1, 0, 0


def decode_after_prefill(mixed, n_d, b, k, T, U):
    """Decode tokens when prefill went first (:func:`decode_tokens` with ``D0 = None``) in integers:
    ``min(n_d, b - T, k - U)`` mixed; separate, ``min(n_d, b, k)`` only when prefill took nothing."""
    if mixed:
        d = n_d if n_d < b - T else b - T
        return d if d < k - U else k - U
    if U == 0 and T == 0:
        d = n_d if n_d < b else b
        return d if d < k else k
    return 0


_ND = np.ndarray


def _arr(*xs) -> bool:
    for x in xs:
        if isinstance(x, _ND):
            return True
    return False


def _min(a, b):
    """``min`` for Python scalars, ``np.minimum`` when either side is an array."""
    if isinstance(a, _ND) or isinstance(b, _ND):
        return np.minimum(a, b)
    return a if a <= b else b


def _max(a, b):
    if isinstance(a, _ND) or isinstance(b, _ND):
        return np.maximum(a, b)
    return a if a >= b else b


def _where(c, x, y):
    if isinstance(c, _ND) or isinstance(x, _ND) or isinstance(y, _ND):
        return np.where(c, x, y)
    return x if c else y


def _cap(x, k):
    """``min(x, k)``; ``k = None`` is no cap."""
    return x if k is None else _min(x, k)


def _no_cap(k):
    return k is None or (not isinstance(k, _ND) and k == math.inf)


def budgets(pol, b: int, NP, ND, k=None):
    """``(D0, B, S)`` before prefill: decode tokens fixed first, the prefill token budget, the prefill slots.

    ``k`` caps the requests in a batch (``k_max``; ``None`` or ``inf``: no cap, then ``S`` is ``None``).

    * Decode first, mixed (Sarathi-Serve, vLLM chunked): one token per decoding request up to ``b`` and
      ``k``; prefill gets the rest of both.
    * Decode first, separate (FasterTransformer): decode-only while anyone decodes, else prefill-only.
    * Prefill first, mixed (Orca): prefill gets ``b`` and ``k``; decode takes what prefill leaves
      (``D0 = None``).
    * Prefill first, separate (vanilla vLLM): prefill gets ``b`` and ``k`` while prompts wait, and decode runs
      only in a batch without prefill (``D0 = None``; :func:`decode_tokens` with ``mixed=False``).
    """
    if k == math.inf:
        k = None
    if not (isinstance(NP, _ND) or isinstance(ND, _ND)):  # one queue: the scalar core
        D0, B, S = budget_split(pol.priority != "decode", bool(pol.mixed), b, NP, ND, NO_CAP if k is None else k)
        return (None if D0 < 0 else D0), B, (None if k is None else S)
    NP, ND = np.asarray(NP), np.asarray(ND)
    if pol.priority == "decode":
        D = _cap(_min(ND, b), k)
        if pol.mixed:
            return D, b - D, (None if k is None else k - D)
        busy = ND > 0
        return _where(busy, D, 0), _where(busy, 0, b), (None if k is None else _where(busy, 0, k))
    if pol.mixed:
        B = np.full(NP.shape, b) if isinstance(NP, np.ndarray) else b
        return None, B, (None if k is None else (np.full(NP.shape, k) if isinstance(NP, np.ndarray) else k))
    wait = NP > 0
    return None, _where(wait, b, 0), (None if k is None else _where(wait, k, 0))


def prefill_budget(pol, b: int, NP, ND):
    """``(D0, B)`` of :func:`budgets` without ``k_max``, for the count chains.

    Vanilla vLLM's "decode only in a batch without prefill" is resolved on the counts: a chain's waiting
    prompts all fit the budget (:func:`check_fixed_prompt`), so a batch has prefill exactly when
    ``n_p > 0`` and ``D0 = 0`` there, ``min(n_d, b)`` elsewhere.
    """
    D0, B, _ = budgets(pol, b, NP, ND)
    if D0 is None and not pol.mixed:
        D0 = _where(NP > 0, 0, _min(ND, b))
    return D0, B


def fits(need, budget):
    """Is a prompt with ``need`` tokens left taken whole with ``budget`` tokens left?  Head-of-line: a prompt
    that does not fit stops a whole-prompt prefill there (arrays welcome)."""
    return need <= budget


def schedulable(pol, need: int, b_max: int) -> bool:
    """Can a prompt with ``need`` prefill tokens left ever be scheduled under budget ``b_max``?"""
    return need <= b_max or pol.chunked or bool(pol.chunk_long_prompts)


TAKE_STOP = 0
TAKE_SKIP = -1


def take_one(need, budget, b_max, chunked, chunk_long):
    """The per-prompt step of the prefill walk, in integers: the tokens a prompt with ``need`` prefill tokens
    left gets with ``budget >= 1`` tokens left -- ``need`` when it fits (taken whole), ``budget`` when it is
    chunked (the scheduler chunks, or ``chunk_long`` and ``need > b_max``), :data:`TAKE_SKIP` (``-1``) when it
    can never be scheduled under ``b_max`` (passed over and reported), :data:`TAKE_STOP` (``0``) when it waits
    for a batch with room (head-of-line: the walk stops there).  Written in the subset numba compiles: the
    compiled kernels inline this function (:mod:`fluidq.kernel`), :func:`take_prompts` calls it.  (The first
    test is :func:`fits`, written out: numba does not resolve a plain module-level function.)"""
    if need <= budget:
        return need
    if chunked or (chunk_long and need > b_max):
        return budget
    if need > b_max:
        return TAKE_SKIP
    return TAKE_STOP


def take_prompts(pol, needs, B: int, S, b_max: int):
    """Prefill of the waiting prompts, in order: ``(chunks, blocked)``.

    ``needs[i]`` is the ``i``-th waiting prompt's remaining prefill tokens (the scheduler's order), ``B`` the
    prefill token budget, ``S`` the request slots (``None``/``inf``: no cap), ``b_max`` the whole batch's
    budget.  ``chunks`` lists ``(i, tokens)``; ``blocked`` the ``i`` passed over because they can never fit
    (:func:`schedulable` is false).  A prompt that fits is taken whole; one that does not is chunked to the
    budget left when the scheduler chunks (or, with ``chunk_long_prompts``, when it is longer than
    ``b_max``); otherwise prefill stops there (head-of-line) and it waits for a batch with room.
    """
    budget, slots = B, (math.inf if S is None else S)
    chunks: list = []
    blocked: list = []
    chunked, chunk_long = bool(pol.chunked), bool(pol.chunk_long_prompts)
    for i, need in enumerate(needs):
        if budget < 1 or slots < 1:
            break
        got = take_one(need, budget, b_max, chunked, chunk_long)
        if got > 0:
            chunks.append((i, got))
            budget -= got
            slots -= 1
        elif got == TAKE_SKIP:
            blocked.append(i)  # can never fit: skip it, report it
        else:
            break  # head-of-line: wait for a batch with room
    return chunks, blocked


def whole_prompts(B, vp: int, NP=None, S=None):
    """Prompts of ``vp`` tokens a whole-prompt (head-of-line) prefill takes: ``min(n_p, B // vp, S)``.

    ``NP = None`` is a queue long enough never to run out (a renewal cycle's prefill batch).
    """
    K = B // vp
    if NP is not None:
        K = _min(NP, K)
    return _cap(K, None if _no_cap(S) else S)


def fixed_prefill_counts(pol, vp: int, head_positions: int, NP, JJ, B, S=None, b_max=None):
    """``(K, T, jn, U)`` for prompts of exactly ``vp`` tokens taken in order with budget ``B``, slots ``S``.

    ``K`` prompts finish prefill, ``T`` prefill tokens are used, ``jn`` is the head prompt's progress
    afterwards (0 when no prompt is left, or when ``head_positions == 1``: the chain does not track it) and
    ``U`` prompts get tokens (the slots used).  A chunking scheduler fills the budget across at most ``S``
    prompts (the head resumes at ``j``); a non-chunking one takes ``min(n_p, B // vp, S)`` whole prompts,
    head-of-line; with ``chunk_long_prompts`` and ``vp > b_max`` it chunks like a chunking scheduler except
    that a head whose rest fits ``b_max`` but not ``B`` waits.  The same batch as :func:`take_prompts` on
    ``[vp - j, vp, vp, ...]``.
    """
    S = None if _no_cap(S) else S
    arr = _arr(NP, JJ, B, S)
    if arr:
        NP, JJ, B = np.asarray(NP), np.asarray(JJ), np.asarray(B)
    long = (not pol.chunked and bool(pol.chunk_long_prompts) and b_max is not None and vp > b_max)
    if pol.chunked or long:
        if S is None:
            R = NP * vp - JJ
        else:  # at most S prompts get tokens
            NS = _min(NP, _max(S, 0))
            R = _where(NS > 0, NS * vp - JJ, 0)
        T = _min(B, R)
        if long:  # the head's rest fits b_max but not the budget left: it waits (head-of-line)
            rest = vp - JJ
            T = _where(((rest <= b_max) & (rest > B)) if arr else (rest <= b_max and rest > B), 0, T)
        first = vp - JJ
        done = T >= first
        over = _max(T - first, 0)
        K = _where(done, 1 + over // vp, 0)
        jn = _where(done, over % vp, JJ + T)
        jn = _where(K >= NP, 0, jn)
        if head_positions == 1:
            jn = np.zeros_like(jn) if arr else 0
        U = _where(T > 0, -(-(JJ + T) // vp), 0)
        return K, T, jn, U
    K = whole_prompts(B, vp, NP, S)
    return K, K * vp, (np.zeros(np.shape(NP), dtype=np.int64) if arr else 0), K


def fixed_prefill(pol, vp: int, head_positions: int, NP, JJ, B):
    """``(K, T, jn)`` of :func:`fixed_prefill_counts` without ``k_max`` (the count chains' form)."""
    return fixed_prefill_counts(pol, vp, head_positions, NP, JJ, B)[:3]


def decode_tokens(D0, ND, T, b: int, k=None, U=0, mixed: bool = True):
    """Decode tokens of the batch.

    ``D0`` when fixed before prefill; else what prefill left: ``min(n_d, b - T, k - U)`` for a mixed
    scheduler (Orca), and ``min(n_d, b, k)`` for a separate one (vanilla vLLM) only when prefill took no
    prompt (``U == 0`` and ``T == 0``), else 0.
    """
    if D0 is not None:
        return D0
    if k == math.inf:
        k = None
    if not _arr(ND, T, U, k):  # one queue: the scalar core
        return decode_after_prefill(bool(mixed), ND, b, NO_CAP if k is None else k, T, U)
    if mixed:
        return _cap(_min(ND, b - T), None if k is None else k - U)
    if isinstance(U, _ND) or isinstance(T, _ND):
        return np.where((U == 0) & (T == 0), _cap(_min(ND, b), k), 0)
    return _cap(_min(ND, b), k) if U == 0 and T == 0 else 0


def check_fixed_prompt(pol, vp: int, b: int) -> int:
    """``vp``, refused when a scheduler that does not chunk could never schedule a prompt that long."""
    if vp > b and not pol.chunked:
        raise ParameterError("prompt_tokens", vp, f"at most the budget b={b} for {pol.name}, which does not "
                             "chunk prompts", "such a prompt is never scheduled; raise b_max or chunk")
    return vp
