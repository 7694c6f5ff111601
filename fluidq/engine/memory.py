"""The KV-cache memory model of an engine: how its ``kv_capacity_tokens`` are allocated.

``Memory(kind=, block_size=, prefix_caching=, reservation=, preemption=, victim=)`` describes the
rules; the capacity itself is the engine's ``kv_capacity_tokens`` (``None``: unlimited memory, and
the rules do not matter).  :class:`fluidq.kernel.memory.StationMemory` applies them on the Python path
(:mod:`fluidq.kernel.step`, the network stations); :mod:`fluidq.kernel.kv` is the compiled copy for
the built-in FCFS schedulers, held equal to it by the tests.

* ``kind="tokens"``: a resident request holds exactly its prompt plus generated tokens.  With the
  default rules this is the memory every ``Engine(kv_capacity_tokens=...)`` has always had
  (admission of the whole remaining prompt plus one token of headroom per resident, victim last
  in the policy's ordering).
* ``kind="blocks"``: KV is paged in blocks of ``block_size`` tokens (vLLM's paged attention); a
  request holds ``ceil(tokens / block_size)`` blocks and the cache has
  ``kv_capacity_tokens // block_size`` of them.
* ``prefix_caching`` (blocks only): freed blocks keep their contents until reused; free blocks
  are handed out least recently freed first, a request's blocks are freed tail first, and a
  request preempted by recomputation that is admitted again takes back the leading blocks of its
  own that are still cached (it recomputes at least its last token).  Blocks are never shared
  between different requests (no common-prefix sharing).
* ``reservation``: ``"whole_prompt"`` admits a request only if its whole remaining prompt fits now
  (vLLM 0.19's ``scheduler_reserve_full_isl``); ``"incremental"`` only if the chunk scheduled now fits.
* ``preemption``: ``"recompute"`` discards the victim's KV (it prefills prompt + generated tokens
  again); ``"swap"`` moves it to host memory and back (``simulate(swap_s_per_token=...)``).
* ``victim``: which resident is preempted when the running requests' next tokens do not fit:
  ``"last_in_order"`` (the last in the policy's ordering, honouring an ordering's ``may_evict``)
  or ``"most_recent"`` (the most recently admitted, as vLLM does).  As in vLLM (v1 and V0), an
  iteration that preempted admits no waiting request, the victim included: the policy is asked again with
  the admitted requests alone (under either rules).

:data:`VLLM` is vLLM v1's memory (16-token blocks, whole-prompt reservation, recompute, most recent
victim), without prefix caching (``VLLM.with_(prefix_caching=True)`` turns it on).
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields, replace

from .._validate import BUDGET_WHY, MAX_BUDGET_TOKENS, integer
from ..errors import DataError, ParameterError, ParameterTypeError

__all__ = ["Memory", "VLLM"]

KINDS = ("tokens", "blocks")
RESERVATIONS = ("whole_prompt", "incremental")
PREEMPTIONS = ("recompute", "swap")
VICTIMS = ("last_in_order", "most_recent")


def _one_of(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ParameterError(name, value, " or ".join(repr(a) for a in allowed))
    return value


def check_keys(what: str, d, cls, expected: str, *, required: bool = False) -> None:
    """Refuse a description ``d`` of the dataclass ``cls`` that :meth:`from_dict` cannot read: not a dict
    (a ParameterError naming ``what``), a key that is not one of ``cls``'s fields (a DataError naming the
    first, in ``str`` order so that keys of mixed types can be sorted), or with ``required`` a field without a
    default that ``d`` lacks (a DataError naming it).  Shared by :meth:`Memory.from_dict` and
    :meth:`fluidq.engine.Engine.from_dict`."""
    if not isinstance(d, dict):
        raise ParameterError(what, d, expected)
    init = [f for f in fields(cls) if f.init]
    known = ", ".join(sorted(f.name for f in init))
    extra = sorted(set(d) - {f.name for f in init}, key=str)
    if extra:
        raise DataError(f"{what}: unknown key {extra[0]!r} (keys: {known})")
    if required:
        missing = sorted(f.name for f in init if f.default is MISSING and f.default_factory is MISSING
                         and f.name not in d)
        if missing:
            raise DataError(f"{what}: needs key {missing[0]!r} (keys: {known})")


@dataclass(frozen=True, kw_only=True)
class Memory:
    """Rules of an engine's KV cache (see the module notes).

    Parameters
    ----------
    kind : {"tokens", "blocks"}
    block_size : int
        Tokens per KV block, in ``1..MAX_BUDGET_TOKENS``; must be 1 for ``kind="tokens"``
        (default: 1 for tokens, 16 for blocks).
    prefix_caching : bool
        Freed blocks keep their contents until reused (blocks only).
    reservation : {"whole_prompt", "incremental"}
    preemption : {"recompute", "swap"}
    victim : {"last_in_order", "most_recent"}

    Examples
    --------
    >>> from fluidq.engine import Memory
    >>> Memory(kind="blocks").block_size
    16
    """

    kind: str = "tokens"
    block_size: int | None = None
    prefix_caching: bool = False
    reservation: str = "whole_prompt"
    preemption: str = "recompute"
    victim: str = "last_in_order"

    def __post_init__(self):
        _one_of("kind", self.kind, KINDS)
        default = 1 if self.kind == "tokens" else 16
        bs = integer("block_size", default if self.block_size is None else self.block_size, minimum=1,
                     maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
        if self.kind == "tokens" and bs != 1:
            raise ParameterError("block_size", bs, "1 for kind='tokens'", "use kind='blocks' for paged KV")
        object.__setattr__(self, "block_size", bs)
        if not isinstance(self.prefix_caching, bool):
            raise ParameterTypeError(f"prefix_caching={self.prefix_caching!r}: expected True or False")
        if self.prefix_caching and self.kind != "blocks":
            raise ParameterError("prefix_caching", True, "False for kind='tokens'",
                                 "prefix caching keeps freed blocks: use kind='blocks'")
        _one_of("reservation", self.reservation, RESERVATIONS)
        _one_of("preemption", self.preemption, PREEMPTIONS)
        _one_of("victim", self.victim, VICTIMS)
        if self.prefix_caching and self.preemption == "swap":
            raise ParameterError("prefix_caching", True, "preemption='recompute' with prefix caching",
                                 "a swapped-out request keeps its KV on the host and reuses nothing")

    @property
    def default_rules(self) -> bool:
        """Whether these are the token rules every ``Engine(kv_capacity_tokens=...)`` had before
        memory models (the kernel then keeps its one token of headroom per resident)."""
        return self == Memory()

    def with_(self, **changes) -> "Memory":
        """A copy with some fields replaced."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d) -> "Memory":
        """Inverse of :meth:`to_dict`; a ParameterError when ``d`` is not a dict, a
        :class:`~fluidq.errors.DataError` naming an unknown key."""
        check_keys("memory", d, cls, "a table/dict of Memory fields")
        return cls(**d)


#: vLLM v1's KV cache: 16-token blocks, whole-prompt reservation, recompute preemption of the most
#: recently admitted request (prefix caching off; ``VLLM.with_(prefix_caching=True)``).
VLLM = Memory(kind="blocks", block_size=16, reservation="whole_prompt", preemption="recompute", victim="most_recent")
