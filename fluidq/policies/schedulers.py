"""The engine schedulers as *batch-formation rule x ordering*.

A :class:`Scheduler` forms a batch from three rules and an ordering:

``priority``  ``"prefill"`` (prefill first) or ``"decode"`` (decode first)
``mixed``     may a batch hold prefill and decode tokens together?
``chunked``   may a prompt be split over batches (chunked prefill)?

plus ``chunk_long_prompts`` for non-chunking schedulers: split only prompts longer than the
budget (the public reproductions disagree; default ``False``, a prompt longer than ``b_max``
then waits forever and is reported in ``Batch.blocked``).

The five schedulers of Li, Dai, Peng (arXiv:2504.07347, §4 Table 1):

=================  ========  =====  =======  ================
scheduler          priority  mixed  chunked  work-conserving
=================  ========  =====  =======  ================
FasterTransformer  decode    no     no       no
vanilla vLLM       prefill   no     no       no
Orca               prefill   yes    yes      yes
Sarathi-Serve      decode    yes    yes      yes
vLLM (chunked)     decode    yes    yes      yes
=================  ========  =====  =======  ================

Whole prompts are taken head-of-line in the ordering: when the next prompt does not fit in the
remaining budget, prefill stops for this batch (a prompt that can *never* fit is skipped and
reported).  Decode tokens are one per decoding request, in the ordering, within the budget and
``k_max``.  The work-conserving column is *checked* by
:func:`fluidq.check_work_conserving`, not read from this table.

Budgets come from the engine (``QueueView.b_max``/``k_max``); a scheduler may cap them further
with ``b_max``/``k_max`` of its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .._validate import integer
from ..errors import ParameterError, UnknownNameError
from .base import Batch, QueueView
from .batch_rule import budgets, decode_tokens, take_prompts
from .orderings import FCFS, Ordering

__all__ = ["Scheduler", "FasterTransformer", "VLLM", "Orca", "Sarathi", "VLLMChunked",
           "resolve_policy", "POLICY_NAMES"]


@dataclass(frozen=True, kw_only=True)
class Scheduler:
    """A batch former (priority, mixed, chunked) with an ordering.

    Examples
    --------
    >>> from fluidq.policies import Sarathi, FCFS
    >>> Sarathi(order=FCFS()).name
    'sarathi'
    """

    name: str
    priority: str
    mixed: bool
    chunked: bool
    order: Ordering = field(default_factory=FCFS)
    chunk_long_prompts: bool = False
    b_max: int | None = None
    k_max: int | None = None

    def __post_init__(self):
        if self.priority not in ("prefill", "decode"):
            raise ParameterError("priority", self.priority, "'prefill' or 'decode'")
        if not isinstance(self.order, Ordering):
            raise ParameterError("order", self.order, "a fluidq Ordering (e.g. fluidq.policies.FCFS())")
        object.__setattr__(self, "b_max", integer("b_max", self.b_max, minimum=1, allow_none=True))
        object.__setattr__(self, "k_max", integer("k_max", self.k_max, minimum=1, allow_none=True))

    def with_(self, **changes) -> "Scheduler":
        return replace(self, **changes)

    def budgets(self, view: QueueView) -> tuple[int, float]:
        b = view.b_max if self.b_max is None else min(view.b_max, self.b_max)
        ks = [k for k in (view.k_max, self.k_max) if k is not None]
        return b, (min(ks) if ks else math.inf)

    def select(self, view: QueueView) -> Batch:
        """The batch of :mod:`fluidq.policies.batch_rule` on the residents in this scheduler's order."""
        b_max, k_max = self.budgets(view)
        ordered = self.order.order(view.requests, view.now_s)
        pre = [r for r in ordered if r.prefilled < r.prompt_tokens]
        dec = [r for r in ordered if r.prefilled >= r.prompt_tokens and r.decoded < r.output_tokens]
        k = None if k_max == math.inf else k_max
        D0, B, S = budgets(self, b_max, len(pre), len(dec), k)
        chunks, blocked = take_prompts(self, (r.prompt_tokens - r.prefilled for r in pre), B, S, b_max)
        T = sum(n for _, n in chunks)
        D = decode_tokens(D0, len(dec), T, b_max, k, len(chunks), self.mixed)
        return Batch(prefill=tuple((pre[i].rid, n) for i, n in chunks), decode=tuple(r.rid for r in dec[:D]),
                     blocked=tuple(pre[i].rid for i in blocked))

    def describe(self) -> str:
        mix = "mixed" if self.mixed else "separate"
        ch = "chunked prefill" if self.chunked else ("chunks only prompts > b_max" if self.chunk_long_prompts
                                                     else "whole prompts")
        return f"{self.name}: {self.priority} first, {mix} batches, {ch}, order {self.order.name}"


def FasterTransformer(*, order: Ordering | None = None, chunk_long_prompts: bool = False, **kw) -> Scheduler:
    """Decode first, no mixed batches, whole prompts (not work-conserving)."""
    return Scheduler(name="fastertransformer", priority="decode", mixed=False, chunked=False,
                     order=order or FCFS(), chunk_long_prompts=chunk_long_prompts, **kw)


def VLLM(*, order: Ordering | None = None, chunk_long_prompts: bool = False, **kw) -> Scheduler:
    """Vanilla vLLM: prefill first, no mixed batches, whole prompts (not work-conserving)."""
    return Scheduler(name="vllm", priority="prefill", mixed=False, chunked=False,
                     order=order or FCFS(), chunk_long_prompts=chunk_long_prompts, **kw)


def Orca(*, order: Ordering | None = None, **kw) -> Scheduler:
    """Orca: prefill first, mixed batches, prompts chunked to fill the budget."""
    return Scheduler(name="orca", priority="prefill", mixed=True, chunked=True, order=order or FCFS(), **kw)


def Sarathi(*, order: Ordering | None = None, **kw) -> Scheduler:
    """Sarathi-Serve: one decode token per decoding request first, then prefill chunks."""
    return Scheduler(name="sarathi", priority="decode", mixed=True, chunked=True, order=order or FCFS(), **kw)


def VLLMChunked(*, order: Ordering | None = None, **kw) -> Scheduler:
    """vLLM v1 with chunked prefill: the same rule as Sarathi-Serve."""
    return Scheduler(name="vllm-chunked", priority="decode", mixed=True, chunked=True, order=order or FCFS(), **kw)


_FACTORIES = {"fastertransformer": FasterTransformer, "vllm": VLLM, "orca": Orca, "sarathi": Sarathi,
              "vllm-chunked": VLLMChunked}
_ALIASES = {"ft": "fastertransformer", "faster-transformer": "fastertransformer", "sarathi-serve": "sarathi",
            "vllm-v1": "vllm-chunked", "chunked-vllm": "vllm-chunked", "vanilla-vllm": "vllm"}
POLICY_NAMES = tuple(_FACTORIES)


def resolve_policy(policy, name: str = "policy"):
    """A policy object from a name (``"sarathi"``...) or an object implementing ``select``."""
    if isinstance(policy, str):
        key = policy.strip().lower().replace("_", "-")
        key = _ALIASES.get(key, key)
        if key not in _FACTORIES:
            raise UnknownNameError(name, policy, POLICY_NAMES)
        return _FACTORIES[key]()
    if hasattr(policy, "select") and callable(policy.select):
        return policy
    raise ParameterError(name, policy, "a policy name or an object with select(view) -> Batch",
                         f"names: {', '.join(POLICY_NAMES)}")
