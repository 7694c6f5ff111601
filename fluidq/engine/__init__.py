"""The engine description: a batch-time model and the budgets of one LLM engine.

``Engine(batch_time=, b_max=, k_max=None, kv_capacity_tokens=None, memory=None, prefill_emits_token=False,
async_scheduling=False)``

* ``b_max``  token budget per batch (``max_num_batched_tokens`` in vLLM; paper's ``b_max``)
* ``k_max``  batch-size limit, requests per batch (``max_num_seqs``; paper §6), or ``None``
* ``kv_capacity_tokens`` KV-cache capacity in tokens (a resident request holds its prompt
  plus generated tokens), or ``None`` for unlimited memory
* ``memory`` how that capacity is allocated (:class:`~fluidq.engine.memory.Memory`: token or block
  KV, prefix caching, reservation, preemption, victim rule); ``None`` is ``Memory()``, the token rules
* ``prefill_emits_token`` whether the iteration that completes a prefill also emits the first output
  token (vLLM and most real engines), and the one completing a recomputation after a preemption the
  next token; by default (the paper's model) every output token takes a decode iteration
* ``async_scheduling`` whether each batch is scheduled while the previous one runs (vLLM's
  ``--async-scheduling``, on by default since vLLM 0.14): a batch sees the arrivals up to the start of
  the batch before it, and a finished request holds its slot and KV one batch longer; modelled by
  :func:`fluidq.simulate` only (in the compiled kernel with a KV cache, else on the generic path)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .._validate import BUDGET_WHY, KV_WHY, MAX_BUDGET_TOKENS, MAX_KV_TOKENS, integer
from ..batchtime import BatchTime
from ..errors import ParameterError, ParameterTypeError
from .memory import VLLM, Memory

__all__ = ["Engine", "Memory", "VLLM", "roofline_engine"]


@dataclass(frozen=True, kw_only=True)
class Engine:
    """One LLM inference engine.

    Parameters
    ----------
    batch_time : BatchTime
        Seconds per iteration as a function of batch tokens.
    b_max : int
        Token budget per batch, in ``1..MAX_BUDGET_TOKENS`` (2**24, see :mod:`fluidq._validate`).
    k_max : int, optional
        At most this many requests per batch, in ``1..MAX_BUDGET_TOKENS``; ``None`` for no limit.
    kv_capacity_tokens : int, optional
        KV-cache capacity in tokens, in ``1..MAX_KV_TOKENS`` (1e12); ``None`` for unlimited.
    memory : Memory, optional
        The rules of the KV cache (default ``Memory()``: token KV as always); they apply only with a
        ``kv_capacity_tokens``.  ``fluidq.engine.VLLM`` is vLLM v1's paged cache.
    prefill_emits_token : bool
        The iteration completing a prefill also gives the first output token, so a request of ``d``
        output tokens needs ``d - 1`` decode iterations (vLLM); the iteration completing a
        recomputation after a preemption (prompt plus the tokens generated so far) gives the next
        token, as vLLM's does.  Default False (the paper's model: ``d`` decode iterations, a
        recomputation gives no token).
    async_scheduling : bool
        Each batch is scheduled while the previous one runs (vLLM's ``--async-scheduling``, its
        default since 0.14): the batch starting at ``t`` sees the arrivals up to the start of the
        batch before it, and a request finishing in one batch keeps its ``k_max`` slot and KV through
        the next (see :mod:`fluidq.kernel.step`).  Default False (the paper's synchronous engine).
        :func:`fluidq.simulate` models it; :func:`fluidq.simulate_network` refuses it.
    name : str
        A label for reports.

    Examples
    --------
    >>> from fluidq import Engine, Staircase
    >>> e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    >>> e.b_max
    512
    """

    batch_time: BatchTime
    b_max: int
    k_max: int | None = None
    kv_capacity_tokens: int | None = None
    memory: Memory | None = None
    prefill_emits_token: bool = False
    name: str = "engine"
    async_scheduling: bool = False

    def __post_init__(self):
        if not isinstance(self.batch_time, BatchTime):
            raise ParameterError("batch_time", self.batch_time, "a fluidq BatchTime model",
                                 "e.g. fluidq.Staircase(c=0.01128, a=0.03547, b0=128)")
        object.__setattr__(self, "b_max", integer("b_max", self.b_max, minimum=1, maximum=MAX_BUDGET_TOKENS,
                                                  why=BUDGET_WHY))
        object.__setattr__(self, "k_max", integer("k_max", self.k_max, minimum=1, allow_none=True,
                                                  maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY))
        object.__setattr__(self, "kv_capacity_tokens",
                           integer("kv_capacity_tokens", self.kv_capacity_tokens, minimum=1, allow_none=True,
                                   maximum=MAX_KV_TOKENS, why=KV_WHY))
        if self.memory is None:
            object.__setattr__(self, "memory", Memory())
        elif not isinstance(self.memory, Memory):
            raise ParameterError("memory", self.memory, "a fluidq.engine.Memory (or None for token KV)",
                                 "e.g. fluidq.engine.Memory(kind='blocks', block_size=16)")
        if self.kv_capacity_tokens is not None and self.kv_capacity_tokens < self.memory.block_size:
            raise ParameterError("kv_capacity_tokens", self.kv_capacity_tokens,
                                 f"at least one block of memory.block_size={self.memory.block_size} tokens")
        if not isinstance(self.prefill_emits_token, bool):
            raise ParameterTypeError(f"prefill_emits_token={self.prefill_emits_token!r}: expected True or False")
        if not isinstance(self.async_scheduling, bool):
            raise ParameterTypeError(f"async_scheduling={self.async_scheduling!r}: expected True or False")
        if not isinstance(self.name, str):
            raise ParameterTypeError(f"name={self.name!r}: expected a string, got {type(self.name).__name__}")

    def with_(self, **changes) -> "Engine":
        """A copy with some fields replaced (``dataclasses.replace``)."""
        return replace(self, **changes)

    def request_work(self, mean_prompt_tokens: float, mean_output_tokens: float) -> tuple[float, float]:
        """``(prefill tokens, decode tokens)`` of batch work one request brings on average.

        The paper's engine decodes every output token in its own iteration: ``(m_p, m_d)``.  With
        ``prefill_emits_token`` the iteration completing the prefill also gives the first output token,
        so a request of ``d >= 1`` output tokens needs ``d - 1`` decode iterations (one of ``d = 1``
        needs none): ``(m_p, m_d - 1)`` (``max(0, m_d - 1)``, a hop of no output brings no decode).  The
        capacity, stability and fluid analyses turn arrival rates into token work (and token capacities
        into requests/s) with this pair.

        Examples
        --------
        >>> from fluidq import Engine, Staircase
        >>> e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
        >>> e.request_work(10.0, 2.0), e.with_(prefill_emits_token=True).request_work(10.0, 2.0)
        ((10.0, 2.0), (10.0, 1.0))
        """
        if self.prefill_emits_token:
            return mean_prompt_tokens, max(0.0, mean_output_tokens - 1.0)
        return mean_prompt_tokens, mean_output_tokens

    def batch_seconds(self, tokens, kv_tokens=None):
        """Batch time in seconds (delegates to ``batch_time``)."""
        return self.batch_time(tokens, kv_tokens)

    def to_dict(self) -> dict:
        d = {"name": self.name, "batch_time": self.batch_time.to_dict(), "b_max": self.b_max,
             "k_max": self.k_max, "kv_capacity_tokens": self.kv_capacity_tokens}
        if not self.memory.default_rules:  # (engines with the default rules keep their old dict)
            d["memory"] = self.memory.to_dict()
        if self.prefill_emits_token:
            d["prefill_emits_token"] = True
        if self.async_scheduling:
            d["async_scheduling"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Engine":
        """Inverse of :meth:`to_dict`; a malformed description is an error naming the key (a
        :class:`~fluidq.errors.DataError` for a missing or unknown key, a ParameterError for a value)."""
        from ..batchtime import batch_time_from_dict
        from .memory import check_keys

        check_keys("engine", d, cls, "a table/dict of Engine fields (batch_time, b_max, ...)", required=True)
        d = dict(d)
        d["batch_time"] = batch_time_from_dict(d["batch_time"])
        if d.get("memory") is not None:
            d["memory"] = Memory.from_dict(d["memory"])
        return cls(**d)


from .roofline import roofline_engine  # noqa: E402  (it builds an Engine)
