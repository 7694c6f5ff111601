"""One priority space for prefill and decode: the batch former of UNIBOOST-BASE.

The named schedulers give one phase strict priority (Sarathi: decode first; Orca: prefill first)
and apply the ordering *within* each phase.  :class:`Unified` walks the residents in the
ordering and gives each its demand -- the rest of its prompt (chunked to the remaining budget)
or one decode token -- until the token budget ``b_max`` or the batch-size limit ``k_max`` is
used up.  With an ordering such as gamma-Boost, a newly arrived short request can then overtake
the decode tokens of long-running ones, which is what UNIBOOST's unified priority asks for.

It takes ``min(b_max, demand)`` tokens whenever ``k_max`` does not bind, so it is
work-conserving (checked by :func:`fluidq.check_work_conserving`, not declared).

References
----------
Li et al., "UNIBOOST: prediction-free tail-aware scheduling for LLM serving", arXiv:2606.18431, §4.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .._validate import integer
from ..errors import ParameterError
from .base import Batch, QueueView
from .orderings import FCFS, Ordering

__all__ = ["Unified", "UniBoost"]


@dataclass(frozen=True, kw_only=True)
class Unified:
    """Mixed, chunked batches filled in one priority order over prefill and decode.

    Parameters
    ----------
    order : Ordering
        The priority order (default FCFS).
    b_max, k_max : int, optional
        Caps below the engine's budgets.
    kv_guard : bool
        With KV-cache memory (``QueueView.kv_free_tokens``) and an ordering that has
        ``guard_gaps`` (MEMGUARD): admit *new* prompts only into memory that is
        free beyond the tokens the guarded requests still need to reach their next thresholds, so
        that the simulator never has to evict a guarded request (default ``True``).
    name : str

    Notes
    -----
    With ``kv_guard`` the former may leave budget unused while memory is reserved; it is then
    work-conserving only with respect to the memory it may use (without memory it always is).  It never
    leaves the engine idle with work it can run: where the gaps exceed the free memory (a cache not much
    larger than MEMGUARD's first level) and the guarded pass would offer nothing, an admitted prompt takes
    a chunk inside its own gap (every run where the guarded pass offers something is unchanged by this).

    Examples
    --------
    >>> from fluidq.policies.unified import Unified
    >>> from fluidq.policies.latency import GammaBoost
    >>> Unified(order=GammaBoost(gamma_per_s=10.0)).describe()
    'unified: one priority space, mixed batches, chunked prefill, order gamma-boost'
    """

    order: Ordering = field(default_factory=FCFS)
    b_max: int | None = None
    k_max: int | None = None
    kv_guard: bool = True
    name: str = "unified"

    mixed = True
    chunked = True
    priority = "unified"

    def __post_init__(self):
        if not isinstance(self.order, Ordering):
            raise ParameterError("order", self.order, "a fluidq Ordering (e.g. fluidq.policies.FCFS())")
        object.__setattr__(self, "b_max", integer("b_max", self.b_max, minimum=1, allow_none=True))
        object.__setattr__(self, "k_max", integer("k_max", self.k_max, minimum=1, allow_none=True))

    def with_(self, **changes) -> "Unified":
        return replace(self, **changes)

    def budgets(self, view: QueueView):
        b = view.b_max if self.b_max is None else min(view.b_max, self.b_max)
        ks = [k for k in (view.k_max, self.k_max) if k is not None]
        return b, (min(ks) if ks else math.inf)

    def select(self, view: QueueView) -> Batch:
        budget, slots = self.budgets(view)
        ordered = self.order.order(view.requests, view.now_s)
        gaps_of = getattr(self.order, "guard_gaps", None)
        guard = self.kv_guard and view.kv_free_tokens is not None and gaps_of is not None
        if not guard:
            return _fill(ordered, budget, slots, None, 0, 0, False)
        gaps = gaps_of(view.requests)
        head = view.kv_free_tokens - sum(gaps.values())
        k0 = getattr(self.order, "k_tokens", 1)
        batch = _fill(ordered, budget, slots, gaps, head, k0, False)
        if batch.empty and head <= 0:
            # The guards' gaps together exceed the free memory (a cache not much larger than MEMGUARD's first
            # level), and every resident is a prompt the pass above held back: an admitted request there may
            # still use its own gap (reserved for it), else the engine would sit idle with work it can run
            # (h-uni, 2026-12-07: a 25-token cache, one admitted request with a 16-token gap, head -7).
            batch = _fill(ordered, budget, slots, gaps, head, k0, True)
        return batch

    def describe(self) -> str:
        return f"{self.name}: one priority space, mixed batches, chunked prefill, order {self.order.name}"


def UniBoost(*, gamma_per_s: float | None = None, adaptive: bool = False, memguard: bool = True,
             k_tokens: int = 32, margin_s: float = 0.0, engine=None, estimator: str = "ratio",
             update_every: int = 50, **kw) -> Unified:
    """UNIBOOST: the unified former with gamma-Boost (or gamma-Ada), guarded by MEMGUARD.

    Parameters
    ----------
    gamma_per_s : float, optional
        Fixed gamma in 1/s (default 10; with ``adaptive`` the initial gamma, default 200).
    adaptive : bool
        Use :class:`~fluidq.policies.latency.GammaAda` with ``estimator``.
    memguard : bool
        Wrap the ordering in :class:`~fluidq.policies.latency.MemGuard` (``k_tokens``).
    k_tokens : int
        MEMGUARD's first work level in tokens, in [1, 2**30] (fluidq's choice, 32: the paper's value
        could not be read; see ``examples/memguard_ada_sweep.py`` for how little it matters).
    margin_s : float
        Hysteresis margin in seconds.
    update_every : int
        gamma-Ada's cadence: new response times between gamma updates, >= 1 (fluidq's choice, 50).

    Raises
    ------
    ParameterError
        ``k_tokens`` or ``update_every`` out of range (checked even where MEMGUARD or gamma-Ada is
        off), ``adaptive``/``memguard`` not a bool.
    engine : Engine, optional
        Sets the per-token cost to ``1 / capacity`` of this engine.
    """
    from .._validate import MAX_REQUEST_TOKENS
    from .latency import MEMGUARD_K_WHY, GammaAda, GammaBoost, MemGuard

    # checked whether or not MEMGUARD / gamma-Ada use them, so a typo such as k_tokens=0 never passes unseen
    k_tokens = integer("k_tokens", k_tokens, minimum=1, maximum=MAX_REQUEST_TOKENS, why=MEMGUARD_K_WHY)
    update_every = integer("update_every", update_every, minimum=1)
    for nm, flag in (("adaptive", adaptive), ("memguard", memguard)):
        if not isinstance(flag, bool):
            raise ParameterError(nm, flag, "True or False")
    extra = {}
    if engine is not None:
        from .latency import _peak_rate

        extra["token_cost_s"] = 1.0 / _peak_rate(engine)
    if adaptive:
        base = GammaAda(gamma_per_s=200.0 if gamma_per_s is None else gamma_per_s, margin_s=margin_s,
                        estimator=estimator, update_every=update_every, **extra)
    else:
        base = GammaBoost(gamma_per_s=10.0 if gamma_per_s is None else gamma_per_s, margin_s=margin_s, **extra)
    order = MemGuard(base=base, k_tokens=k_tokens) if memguard else base
    name = "uniboost" + ("-ada" if adaptive else "") + ("" if memguard else "-nomemguard")
    return Unified(order=order, name=name, **kw)


def _fill(ordered, budget, slots, gaps, head, k0, own_gap):
    """The batch of :meth:`Unified.select`: each request in ``ordered`` gets the rest of its prompt (chunked to the
    budget) or a decode token.  With ``gaps`` (MEMGUARD's ``guard_gaps``, ``None`` without the guard) a prompt
    takes memory only from ``head`` (the free memory beyond the gaps): a new one its tokens and its first gap,
    an admitted one what it needs beyond its own gap (cut to ``head``); ``own_gap``: an admitted request whose
    need lies inside its gap takes it even where ``head <= 0``."""
    prefill, decode = [], []
    guard = gaps is not None
    for r in ordered:
        if budget < 1 or slots < 1:
            break
        if r.prefilled < r.prompt_tokens:
            m = min(r.prompt_tokens - r.prefilled, budget)
            if guard:
                if r.prefilled > 0:      # admitted: its own gap is reserved already
                    g = gaps.get(r.rid, 0)
                    extra = max(0, m - g)
                else:                    # a new admission needs its tokens and its first gap
                    extra = m + max(0, min(k0, r.prompt_tokens) - m)
                if extra > head:
                    if r.prefilled > 0 and head > 0:
                        m = min(m, g + head)
                        extra = max(0, m - g)
                    elif own_gap and r.prefilled > 0 and g > 0:
                        m = min(m, g)
                        extra = 0
                    else:
                        continue
                head -= extra
            prefill.append((r.rid, m))
            budget -= m
            slots -= 1
        elif r.decoded < r.output_tokens:
            if guard and r.rid not in gaps:
                head -= 1
            decode.append(r.rid)
            budget -= 1
            slots -= 1
    return Batch(prefill=tuple(prefill), decode=tuple(decode))
