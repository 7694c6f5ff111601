"""A measured run's own arrivals through ``fluidq.simulate`` on vLLM v1's engine model.

There is no second engine here: :func:`vllm_engine` builds the :class:`~fluidq.Engine` of a
measured vLLM run (chunked prefill on, FCFS, decode first) and :func:`replay` runs
:func:`fluidq.simulate` on it under the ``"vllm-chunked"`` scheduler, returning the per-request
times in :class:`ReplayResult`.  The engine model:

1. every running request gets its next work, the next prompt chunk if its prefill is unfinished,
   else one decode token, while the token budget ``b_max`` (``max_num_batched_tokens``) lasts;
   new requests are admitted FCFS while budget and ``k_max`` (``max_num_seqs``) allow;
2. KV-cache blocks of ``block_size`` tokens (:data:`fluidq.engine.VLLM`): a new request is admitted
   only if its whole remaining prompt fits in the free blocks (vLLM 0.19's
   ``scheduler_reserve_full_isl``); when the running requests' next tokens do not fit, the most
   recently admitted one is preempted and recomputes its prompt and generated tokens later;
3. with prefix caching (``enable_prefix_caching``, as in the RTX 4090 run) freed blocks keep their
   contents until reused and a re-admitted victim reuses its own cached leading blocks;
4. the batch's time is the operator-profile iteration model's
   (:class:`~fluidq.batchtime.composition.Composition`), from the batch composition;
5. the prefill's iteration emits the first token (``prefill_emits_token``): TTFT is the end of the
   iteration completing the prefill, vLLM's definition; a recomputation after a preemption emits the
   next token in the iteration that completes it, as vLLM's does; the last token comes at the end of the
   iteration that produces the ``output_tokens``-th token;
6. with ``async_scheduling`` (vLLM's default since 0.14; :attr:`ServingRun.async_scheduling
   <fluidq.validate.runs.ServingRun.async_scheduling>` reads it from the run) each batch is scheduled
   while the previous one runs: a request queued during a batch runs in the batch after next, and a
   finished request holds its ``max_num_seqs`` slot and KV through one more batch.

Not modelled: prefix sharing between different requests, CPU-side scheduling overhead,
CUDA-graph padding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import integer
from ..errors import ParameterError
from ..results import Result

__all__ = ["ReplayResult", "read_s", "replay", "vllm_engine"]


@dataclass(frozen=True, kw_only=True, eq=False)
class ReplayResult(Result):
    """Per-request times of a replay (seconds on the run's clock) and engine counters; ``sim`` is the
    :class:`~fluidq.sim.result.SimResult` they come from."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    last_token_s: np.ndarray
    output_tokens: np.ndarray
    iterations: int
    preemptions: int
    running_trace: np.ndarray  # (end time_s, running, waiting, useful_tokens) per iteration
    sim: object = None

    @property
    def inputs(self) -> dict:
        """The simulation's inputs (``replay`` is :func:`fluidq.simulate` on the run's engine), else empty."""
        return dict(getattr(self.sim, "inputs", None) or {})

    @property
    def ttft_s(self):
        return self.first_token_s - self.arrival_s

    @property
    def latency_s(self):
        return self.last_token_s - self.arrival_s

    @property
    def tpot_s(self):
        return (self.last_token_s - self.first_token_s) / np.maximum(self.output_tokens - 1, 1)

    def served_tokens_per_s(self, start_s: float, end_s: float) -> float:
        """Useful tokens (prompt tokens computed the first time, output tokens emitted) per second over
        the iterations ending in ``(start_s, end_s]``; recomputation after a preemption is not counted."""
        tr = self.running_trace
        if tr.size == 0 or end_s <= start_s:
            return float("nan")
        m = (tr[:, 0] > start_s) & (tr[:, 0] <= end_s)
        return float(tr[m, 3].sum() / (end_s - start_s))

    def to_dict(self):
        return {"iterations": self.iterations, "preemptions": self.preemptions, "requests": int(len(self.arrival_s))}

    @classmethod
    def from_sim(cls, sim) -> "ReplayResult":
        """The replay view of a :func:`fluidq.simulate` result run with ``record_iterations=True``
        on a :func:`vllm_engine` (first token at the end of the prefill)."""
        r, it = sim.requests, sim.iterations
        trace = np.column_stack([it["t_s"] + it["batch_s"], it["resident"], it["waiting"], it["useful_tokens"]]) \
            if it is not None and "resident" in it else np.empty((0, 4))
        return cls(arrival_s=r["arrival_s"], first_token_s=r["prefill_done_s"], last_token_s=r["finish_s"],
                   output_tokens=r["output_tokens"], iterations=int(sim.n_iterations),
                   preemptions=int(sim.preemptions), running_trace=trace, sim=sim)


def read_s(sim) -> np.ndarray:
    """When the simulated engine *read* each request of ``sim`` (a :func:`fluidq.simulate` result with
    ``record_iterations=True``): the end of the batch running at its arrival, or the arrival itself when
    the engine was idle.  vLLM's engine core reads new requests only between iterations and stamps that
    moment ``queued_ts``, from which it measures TTFT and latency; a replay sending the requests when the
    client did (:attr:`ServingRun.sent_s <fluidq.validate.runs.ServingRun.sent_s>`) measures its own from
    here, so neither side borrows the other's iteration boundaries."""
    it = sim.iterations
    if it is None:
        raise ParameterError("sim", "no iterations", "a fluidq.simulate result with record_iterations=True")
    a = np.asarray(sim.requests["arrival_s"], dtype=float)
    start = np.asarray(it["t_s"], dtype=float)
    end = start + np.asarray(it["batch_s"], dtype=float)
    j = np.searchsorted(start, a, side="left") - 1  # the last batch that started before the arrival
    out = a.copy()
    busy = (j >= 0) & (end[np.maximum(j, 0)] > a)
    out[busy] = end[j[busy]]
    return out


def vllm_engine(model, *, b_max: int, k_max: int | None, kv_capacity_tokens: int | None, block_size: int = 16,
                prefix_caching: bool = False, name: str = "vllm", async_scheduling: bool = False):
    """The :class:`~fluidq.Engine` of a vLLM v1 run: ``model`` (an operator-profile iteration model)
    as a :class:`~fluidq.batchtime.composition.Composition` batch time, :data:`fluidq.engine.VLLM`
    memory with ``block_size`` and ``prefix_caching``, the first token emitted with the prefill, and
    ``async_scheduling`` (vLLM's ``--async-scheduling``; default False)."""
    from ..batchtime.composition import Composition
    from ..engine import VLLM, Engine

    return Engine(batch_time=Composition(model=model), b_max=b_max, k_max=k_max,
                  kv_capacity_tokens=kv_capacity_tokens,
                  memory=VLLM.with_(block_size=block_size, prefix_caching=bool(prefix_caching)),
                  prefill_emits_token=True, name=name, async_scheduling=bool(async_scheduling))


def replay(model, arrival_s, input_tokens, output_tokens, *, b_max: int, k_max: int | None,
           kv_capacity_tokens: int | None, block_size: int = 16, prefix_caching: bool = False,
           max_iterations: int | None = None, async_scheduling: bool = False) -> ReplayResult:
    """Run the arrivals through ``fluidq.simulate`` on :func:`vllm_engine` (see the module notes).

    Parameters
    ----------
    model : IterationModel
        Seconds per iteration from the batch composition.
    arrival_s, input_tokens, output_tokens : array_like
        The requests, sorted by arrival.
    b_max, k_max : int
        ``max_num_batched_tokens`` and ``max_num_seqs`` (``None``: no limit).
    kv_capacity_tokens : int or None
        KV cache in tokens (``None``: unlimited).
    block_size : int
        KV block size in tokens.
    prefix_caching : bool
        Keep freed blocks' contents until reused (vLLM ``enable_prefix_caching``).
    max_iterations : int, optional
        Refuse a run that took more iterations (a RuntimeError); the simulator's own limits apply too.
    async_scheduling : bool
        Each batch scheduled while the previous one runs (vLLM's ``--async-scheduling``).
    """
    from ..sim.core import simulate

    a = np.asarray(arrival_s, dtype=float)
    p = np.asarray(input_tokens, dtype=np.int64)
    o = np.asarray(output_tokens, dtype=np.int64)
    if not (a.shape == p.shape == o.shape) or a.ndim != 1 or a.size == 0:
        raise ParameterError("arrival_s", a.shape, "three 1-D arrays of equal, non-zero length")
    if np.any(np.diff(a) < 0):
        raise ParameterError("arrival_s", "unsorted", "arrival times sorted ascending")
    if np.any(p < 1) or np.any(o < 1):
        raise ParameterError("input_tokens/output_tokens", "values < 1", "at least one token each")
    max_iterations = integer("max_iterations", max_iterations, minimum=1, allow_none=True)
    eng = vllm_engine(model, b_max=b_max, k_max=k_max, kv_capacity_tokens=kv_capacity_tokens,
                      block_size=block_size, prefix_caching=prefix_caching, async_scheduling=async_scheduling)
    sim = simulate(eng, {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}, "vllm-chunked",
                   n_requests=int(a.size), record_iterations=True)
    if max_iterations is not None and sim.n_iterations > max_iterations:
        raise RuntimeError(f"replay: more than {max_iterations} iterations ({sim.n_iterations})")
    return ReplayResult.from_sim(sim)
