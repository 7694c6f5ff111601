"""The policy protocol: what a scheduler sees and what it returns.

A policy is any object with a ``name`` and ``select(view) -> Batch``.  ``view`` is a
:class:`QueueView`: the resident requests in arrival order (read-only
:class:`RequestState` records), the clock and the engine budgets.  The same policy object
drives the simulator, the DTMC builder and the work-conservation checker.

Batch constraints (Li, Dai, Peng, arXiv:2504.07347, constraints 6a-6d, and §6 for k_max):

* (6a) a request with prefill left gets no decode token in the batch;
* (6b) a request's prefill allocation is at most its remaining prefill;
* (6c) at most one decode token per request per batch;
* (6d) at most ``b_max`` tokens per batch;
* at most ``k_max`` distinct requests per batch when the engine has a batch-size limit.

:func:`batch_violations` lists the constraints a batch breaks, in words.
"""
from __future__ import annotations

import math
from numbers import Integral
from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from ..errors import ParameterTypeError

__all__ = ["RequestState", "QueueView", "Batch", "Policy", "batch_faults", "batch_violations"]


@dataclass(slots=True)
class RequestState:
    """One resident request as the scheduler sees it.

    ``output_tokens`` is the true output length: only oracle orderings (SJF, SRPT) may read it.
    ``score`` is a predictor's score (PARS), ``None`` when no predictor ran.
    ``recompute_tokens`` and ``preemptions`` are set by the simulator's KV-cache model: after a
    preemption by recompute, ``prompt_tokens`` counts the original prompt plus the
    ``recompute_tokens`` generated tokens that must be prefilled again (vLLM merges them into the
    prompt), so the original prompt is ``prompt_tokens - recompute_tokens``.
    """

    rid: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    prefilled: int = 0
    decoded: int = 0
    first_scheduled_s: float = math.nan
    score: float | None = None
    recompute_tokens: int = 0
    preemptions: int = 0

    @property
    def prefill_left(self) -> int:
        return self.prompt_tokens - self.prefilled

    @property
    def decode_left(self) -> int:
        return self.output_tokens - self.decoded

    @property
    def in_prefill(self) -> bool:
        return self.prefilled < self.prompt_tokens

    @property
    def demand(self) -> int:
        """Tokens this request could use in one batch: its remaining prefill, or one decode token."""
        return self.prompt_tokens - self.prefilled if self.prefilled < self.prompt_tokens else (
            1 if self.decoded < self.output_tokens else 0)

    @property
    def attained_tokens(self) -> int:
        """Tokens of work this request has received (prefill done + tokens decoded)."""
        return self.prefilled + self.decoded


@dataclass(frozen=True, slots=True)
class QueueView:
    """What a policy sees: residents in arrival order, the time and the budgets."""

    requests: Sequence[RequestState]
    now_s: float
    b_max: int
    k_max: int | None = None
    kv_free_tokens: int | None = None

    @property
    def demand(self) -> int:
        """``sum_i (p_i + 1{p_i = 0})`` over residents with work left."""
        return sum(r.demand for r in self.requests)


@dataclass(frozen=True, slots=True)
class Batch:
    """One iteration: prefill chunks ``(rid, tokens)`` and decode tokens (one per rid).

    ``blocked`` lists requests the policy can never schedule (e.g. a prompt longer than
    ``b_max`` under a scheduler that does not chunk): a diagnosis, not an error; its entries are
    ids of requests in the view.

    One chunk per request: a request id appears at most once in ``prefill`` (and at most once in
    ``decode``, (6c)).  Two entries for one request, ``(rid, m // 2), (rid, m - m // 2)``, are
    refused (:func:`batch_faults`), with the check on or off: a KV cache's rules take each entry
    as an allocation of its own, so the engines would each run something different (2026-12-07).

    Any iterable is accepted for the three fields and read once into a tuple (a generator
    expression would otherwise be consumed by its first reader and look non-empty when empty).
    """

    prefill: tuple = ()
    decode: tuple = ()
    blocked: tuple = ()

    def __post_init__(self):
        # the built-in schedulers pass tuples: nothing is copied for them
        if type(self.prefill) is not tuple:
            object.__setattr__(self, "prefill", _as_tuple("prefill", self.prefill))
        if type(self.decode) is not tuple:
            object.__setattr__(self, "decode", _as_tuple("decode", self.decode))
        if type(self.blocked) is not tuple:
            object.__setattr__(self, "blocked", _as_tuple("blocked", self.blocked))

    @property
    def prefill_tokens(self) -> int:
        return sum(n for _, n in self.prefill)

    @property
    def decode_tokens(self) -> int:
        return len(self.decode)

    @property
    def tokens(self) -> int:
        return self.prefill_tokens + len(self.decode)

    @property
    def n_requests(self) -> int:
        return len({rid for rid, _ in self.prefill} | set(self.decode))

    @property
    def is_mixed(self) -> bool:
        return bool(self.prefill) and bool(self.decode)

    @property
    def empty(self) -> bool:
        return not self.prefill and not self.decode

    def describe(self, names: dict | None = None) -> str:
        """Paper notation: ``[Ad Bd Dp]`` (one letter per request token kind)."""
        names = names or {}
        parts = [f"{names.get(rid, rid)}d" for rid in self.decode]
        for rid, n in self.prefill:
            parts.extend([f"{names.get(rid, rid)}p"] * n)
        return "[" + " ".join(parts) + "]"


def _as_tuple(name, value) -> tuple:
    try:
        return tuple(value)
    except TypeError:
        raise ParameterTypeError(f"Batch.{name}={value!r}: expected an iterable (a tuple of "
                                 + ("(rid, tokens) pairs" if name == "prefill" else "request ids")
                                 + ")") from None


@runtime_checkable
class Policy(Protocol):
    """The one small protocol a scheduler implements."""

    name: str

    def select(self, view: QueueView) -> Batch:  # pragma: no cover - protocol
        ...


def batch_violations(batch: Batch, view: QueueView) -> list[str]:
    """Constraints (6a)-(6d), k_max and basic sanity that ``batch`` breaks in state ``view``.

    The list starts with :func:`batch_faults` (what no engine can run: wrong types, requests not resident, (6a)-(6c),
    a request twice in the prefill part, ``blocked`` ids not resident), then the budgets: (6d) ``b_max`` and
    ``k_max``.  Every path of :func:`fluidq.simulate` and :func:`fluidq.simulate_network` raises
    :class:`~fluidq.errors.PolicyError` with the first; ``check_batches=False`` skips only the budgets."""
    out = batch_faults(batch, view)
    if out and (not isinstance(batch, Batch) or _shape_errors(batch)):  # (no token count to read)
        return out
    if batch.tokens > view.b_max:
        out.append(f"(6d) batch has {batch.tokens} tokens > b_max={view.b_max}")
    if view.k_max is not None and batch.n_requests > view.k_max:
        out.append(f"(k_max) batch has {batch.n_requests} requests > k_max={view.k_max}")
    return out


def batch_faults(batch: Batch, view: QueueView) -> list[str]:
    """What in ``batch`` no engine can run in state ``view``, whatever its budgets: entries that are not whole
    numbers, requests that are not resident (prefill, decode or ``blocked``), a chunk below one token, a request
    twice in the prefill part (one chunk per request per batch: two would be two allocations of its KV), (6a) a
    decode token for a request with prefill left or finished, (6b) a chunk past the remaining prompt, (6c) two
    decode tokens for one request.  O(batch) given the residents by id (the view's dict is built once per call).
    :func:`batch_violations` is this list plus the budgets ((6d) ``b_max``, ``k_max``)."""
    if not isinstance(batch, Batch):
        return [f"returned {_short(batch)}, not a fluidq.policies.Batch"]
    shape = _shape_errors(batch)
    if shape:  # (the checks below would fail on them with raw TypeErrors)
        return shape
    out: list[str] = []
    by_id = {r.rid: r for r in view.requests}
    seen_prefill: dict[int, int] = {}
    for rid, n in batch.prefill:
        r = by_id.get(rid)
        if r is None:
            out.append(f"prefill for request {rid}, which is not resident")
            continue
        if n < 1:
            out.append(f"request {rid}: prefill allocation {n} < 1")
        if rid in seen_prefill:
            out.append(f"request {rid} appears twice in the prefill part (one (rid, tokens) chunk per request "
                       f"per batch)")
        seen_prefill[rid] = seen_prefill.get(rid, 0) + n
    for rid, n in seen_prefill.items():
        if n > by_id[rid].prefill_left:
            out.append(f"(6b) request {rid}: prefill {n} > remaining prefill {by_id[rid].prefill_left}")
    counts: dict[int, int] = {}
    for rid in batch.decode:
        counts[rid] = counts.get(rid, 0) + 1
        r = by_id.get(rid)
        if r is None:
            out.append(f"decode for request {rid}, which is not resident")
            continue
        if r.in_prefill:
            out.append(f"(6a) request {rid} gets a decode token with {r.prefill_left} prefill tokens left")
        elif r.decode_left < 1:
            out.append(f"request {rid} gets a decode token but has finished")
    for rid, c in counts.items():
        if c > 1:
            out.append(f"(6c) request {rid} gets {c} decode tokens in one batch")
    for rid in batch.blocked:
        if not _whole(rid) or rid not in by_id:
            out.append(f"blocked entry {_short(rid)} is not the id of a resident request")
    return out


def _short(x) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


def _whole(x) -> bool:
    # (a plain int first: isinstance against the Integral ABC costs ~1 us, and a batch holds hundreds of entries)
    return type(x) is int or (isinstance(x, Integral) and not isinstance(x, bool))


def _shape_errors(batch: Batch) -> list[str]:
    """Entries that are not ``(rid, tokens)`` pairs of whole numbers, or decode ids that are not whole numbers."""
    out = []
    for item in batch.prefill:
        if not (isinstance(item, tuple | list) and len(item) == 2):
            out.append(f"prefill entry {_short(item)} is not a (rid, tokens) pair")
        elif not (_whole(item[0]) and _whole(item[1])):
            out.append(f"prefill entry {_short(item)}: request ids and token counts are whole numbers")
    for rid in batch.decode:
        if not _whole(rid):
            out.append(f"decode entry {_short(rid)}: request ids are whole numbers")
    return out
