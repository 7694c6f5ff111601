"""A region-aware scheduler: batch shapes chosen from the stability region, not "fill to b_max".

Under a batch-size limit ``k_max`` filling every batch to the token budget is not optimal
(Li, Dai, Peng, arXiv:2504.07347, §6): at vertex C of the paper's example the engine must run
batches of exactly 128 tokens (29 prefill + 99 decode) although ``b_max = 1024`` allows more, and
Sarathi-Serve with ``b_max = 1024`` diverges there.  :class:`RegionAware` reads the region
(:func:`fluidq.stability_region`) and the LP time-sharing (:func:`fluidq.region_mix`); the
geometry that picks the shapes is the region analysis's
(:func:`fluidq.capacity.region.region_aware_shapes`), and this module holds the batch rule only:

* with a target ``(lambda_p, lambda_d)`` tokens/s, the ray from the origin through the target
  leaves the region on one facet (or at one vertex); the scheduler uses that facet's two batch
  shapes -- the decode-heavy one ``S_lo`` and the prefill-heavy one ``S_hi`` -- and switches on
  the backlogs: ``S_hi`` while at least ``backlog_tokens`` prompt tokens wait *and* no more
  requests are decoding than ``S_hi`` serves, else ``S_lo``.  The time shares then settle where
  prefill is served at its arrival rate without a decode queue building up, which is the LP mix;
  at a vertex it runs that vertex's shape only.  (Switching on the prefill backlog alone is
  stable with deterministic arrivals but not with Poisson ones: after a burst it keeps choosing
  the prefill-heavy shape while the decode queue grows.)
* without a target, a *ladder* over all the region's vertex shapes, from decode-heavy to
  prefill-heavy, indexed by ``floor(backlog / backlog_tokens)`` and stepped back while more
  requests decode than the shape serves (adaptive, heuristic).

A batch of shape ``(x, y)`` is formed like Sarathi-Serve with budget ``x + y``: decode tokens
first (at most ``y`` for ``S_hi``, as many as fit for ``S_lo``), then prefill chunks in the
ordering, then -- when prompts have run dry -- further decode tokens.  The policy is stateless
(the choice depends on the view only), so the simulator, the DTMC builder and
:func:`fluidq.check_work_conserving` can all drive it.  When ``k_max`` binds it may leave part of
the token budget unused on purpose (a 128-token batch where ``b_max = 1024`` allows more): that
is the point.  With ``b_max`` no larger than its shapes it forms the batches Sarathi-Serve forms.

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347, §6 (Theorem 10 and the vertex-C experiment).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


from .._validate import integer
from ..engine import Engine
from ..errors import ParameterError
from .base import Batch, QueueView
from .orderings import FCFS, Ordering

__all__ = ["RegionAware"]

#: ``(engine, target_tokens_per_s, prompt_tokens) -> (shapes, validated target)``: the region geometry
#: that picks the shapes (:func:`fluidq.capacity.region.region_aware_shapes`).  The capacity analysis
#: registers it here when ``fluidq`` is imported, so this policy (a description) imports no analysis.
_SHAPE_FINDER = None


def register_shape_finder(finder) -> None:
    """Set the function :class:`RegionAware` asks for its shapes (called by :mod:`fluidq.capacity`)."""
    global _SHAPE_FINDER
    _SHAPE_FINDER = finder


@dataclass(frozen=True, kw_only=True)
class RegionAware:
    """Pick batch shapes from the engine's stability region.

    Parameters
    ----------
    engine : Engine
        The engine whose region decides the shapes (its ``b_max``, ``k_max``, batch time).
    target_tokens_per_s : pair of float, optional
        ``(lambda_p, lambda_d)`` = ``(lambda m_p, lambda m_d)``; see :meth:`for_workload`.
        ``None``: the adaptive ladder over all vertex shapes.
    backlog_tokens : int, optional
        Prefill backlog (prompt tokens waiting) at which the scheduler switches to the next,
        more prefill-heavy shape; default ``b_max``.
    prompt_tokens : int, optional
        Prompt length, so that the shapes used are ones a batch of real prompts can fill (one
        request brings at most its prompt to a batch; see :func:`fluidq.stability_region`).
        :meth:`for_workload` sets it from the workload (its fixed length, or the mean rounded
        down for random lengths -- a heuristic).
    order : Ordering
        Order in which waiting requests are taken (default FCFS).

    Examples
    --------
    >>> import fluidq
    >>> from fluidq.policies.region_aware import RegionAware
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
    >>> RegionAware(engine=e, target_tokens_per_s=(29 / 0.04675, 99 / 0.04675)).shapes
    ((29, 99),)
    """

    engine: Engine
    target_tokens_per_s: tuple | None = None
    backlog_tokens: int | None = None
    prompt_tokens: int | None = None
    order: Ordering = field(default_factory=FCFS)
    name: str = "region-aware"
    shapes: tuple = field(init=False, default=())

    def __post_init__(self):
        if not isinstance(self.engine, Engine):
            raise ParameterError("engine", self.engine, "a fluidq.Engine")
        if not isinstance(self.order, Ordering):
            raise ParameterError("order", self.order, "a fluidq Ordering (e.g. fluidq.policies.FCFS())")
        object.__setattr__(self, "backlog_tokens", integer(
            "backlog_tokens", self.engine.b_max if self.backlog_tokens is None else self.backlog_tokens, minimum=1))
        object.__setattr__(self, "prompt_tokens", integer("prompt_tokens", self.prompt_tokens, minimum=1,
                                                          allow_none=True))
        if _SHAPE_FINDER is None:  # fluidq.capacity registers it when fluidq is imported
            raise RuntimeError("no region analysis registered: import fluidq (fluidq.capacity registers it)")
        shapes, target = _SHAPE_FINDER(self.engine, self.target_tokens_per_s, self.prompt_tokens)
        object.__setattr__(self, "shapes", tuple(shapes))
        object.__setattr__(self, "target_tokens_per_s", target)

    @classmethod
    def for_workload(cls, engine: Engine, workload, **kw) -> "RegionAware":
        """Target the workload's operating point ``(lambda m_p, lambda m_d)``."""
        from ..workload import Fixed

        lam = workload.arrival_rate_per_s
        lp = workload.prompt_tokens
        if "prompt_tokens" not in kw:
            kw["prompt_tokens"] = lp.n if isinstance(lp, Fixed) else max(1, int(workload.mean_prompt_tokens))
        return cls(engine=engine, target_tokens_per_s=(lam * workload.mean_prompt_tokens,
                                                       lam * workload.mean_output_tokens), **kw)

    def choose(self, view: QueueView) -> tuple[int, int, bool]:
        """``(budget, decode_cap, capped)`` for the next batch in state ``view``."""
        backlog = 0
        n_dec = 0
        for r in view.requests:
            if r.prefilled < r.prompt_tokens:
                backlog += r.prompt_tokens - r.prefilled
            elif r.decoded < r.output_tokens:
                n_dec += 1
        n = len(self.shapes)
        if n == 1:
            i = 0
        elif self.target_tokens_per_s is not None:
            i = 1 if backlog >= self.backlog_tokens else 0
        else:
            i = min(n - 1, backlog // self.backlog_tokens)
        # decoders first: while more requests decode than the chosen shape serves, step back to a
        # more decode-heavy shape (serving prefill then would only lengthen the decode queue)
        while i > 0 and n_dec > self.shapes[i][1]:
            i -= 1
        x, y = self.shapes[i]
        return x + y, y, True

    def select(self, view: QueueView) -> Batch:
        budget, cap, capped = self.choose(view)
        budget = min(budget, view.b_max)
        slots = math.inf if view.k_max is None else view.k_max
        ordered = self.order.order(view.requests, view.now_s)
        pre = [r for r in ordered if r.prefilled < r.prompt_tokens]
        dec = [r for r in ordered if r.prefilled >= r.prompt_tokens and r.decoded < r.output_tokens]
        decode: list = []
        prefill: list = []
        first = min(len(dec), cap) if capped else len(dec)
        for r in dec[:first]:
            if budget < 1 or slots < 1:
                break
            decode.append(r.rid)
            budget -= 1
            slots -= 1
        for r in pre:
            if budget < 1 or slots < 1:
                break
            n = min(r.prompt_tokens - r.prefilled, budget)
            prefill.append((r.rid, n))
            budget -= n
            slots -= 1
        for r in dec[len(decode):]:
            if budget < 1 or slots < 1:
                break
            decode.append(r.rid)
            budget -= 1
            slots -= 1
        return Batch(prefill=tuple(prefill), decode=tuple(decode))

    def describe(self) -> str:
        tgt = ("adaptive ladder" if self.target_tokens_per_s is None else
               f"target ({self.target_tokens_per_s[0]:.4g}, {self.target_tokens_per_s[1]:.4g}) tokens/s")
        return (f"{self.name}: shapes {', '.join(f'({x}p+{y}d)' for x, y in self.shapes)}; {tgt}; "
                f"switch every {self.backlog_tokens} backlog tokens; order {self.order.name}")
