"""What every report section shares: one scheduler configuration and one reference capacity.

A report compares sections with each other (a verdict against a simulation, a latency table
against a verdict), so they must judge the same schedulers against the same rate.  This module
fixes both once per report:

* the **scheduler configuration**: the five engine schedulers of Li, Dai, Peng, "Throughput-Optimal
  Scheduling Algorithms for LLM Inference and AI Agents" (arXiv:2504.07347), with FasterTransformer
  and vanilla vLLM allowed to split prompts longer than ``b_max`` (``chunk_long_prompts=True``);
  without that such prompts wait forever, and the verdict "unstable at every rate" says nothing
  about the schedulers themselves;
* the **reference capacity** ``lambda*``: :func:`fluidq.max_throughput` of the report's engine
  for the workload's mean lengths.  Every load in the report is a fraction of it, unless a
  section says otherwise in so many words;
* the **loads shown**: one below and one above capacity (``LOW``, ``HIGH``), whatever rate the
  workload itself offers (a trace's mean rate is often several engines' worth).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HIGH", "LOW", "Reference", "fmt_num", "long_prompt_fraction", "reference"]

LOW, HIGH = 0.8, 1.1  # loads (fractions of lambda*) shown below and above capacity
# the workload's own rate is simulated only up to this load; beyond it every scheduler diverges at once
OWN_LOAD_SHOWN_MAX = 1.5


@dataclass(frozen=True, kw_only=True)
class Reference:
    """The shared configuration of one report (see the module docstring)."""

    capacity: object  # CapacityResult
    requests_per_s: float
    tokens_per_s: float
    offered_requests_per_s: float
    offered_load: float
    policies: dict  # name -> Scheduler, in POLICY_NAMES order
    long_prompt_fraction: float | None
    b_max: int

    def rate(self, load: float) -> float:
        """The arrival rate of ``load`` (a fraction of ``lambda*``)."""
        return load * self.requests_per_s

    @property
    def policy_note(self) -> str:
        frac = ("" if self.long_prompt_fraction is None else
                f"; a fraction {self.long_prompt_fraction:.3g} of this workload's prompts is longer than b_max")
        return ("**Scheduler configuration (the same in every section).** FasterTransformer and vanilla vLLM split "
                f"only prompts longer than `b_max = {self.b_max}` into chunks (`chunk_long_prompts=True`{frac}); "
                "Orca, Sarathi-Serve and vLLM with chunked prefill chunk every prompt anyway.")

    @property
    def policy_short(self) -> str:
        return ("Schedulers as configured for the whole report: FasterTransformer and vanilla vLLM with "
                "`chunk_long_prompts=True` (prompts longer than `b_max` split into chunks).")

    @property
    def capacity_note(self) -> str:
        return (f"**Reference capacity.** Loads are fractions of `lambda* = {self.requests_per_s:.3f} req/s` "
                f"({self.tokens_per_s:,.1f} tokens/s, Theorem 2 via `fluidq.max_throughput`); the workload itself "
                f"offers {self.offered_requests_per_s:.3f} req/s = **load {self.offered_load:.3f}**"
                + (" (more than one engine can serve)." if self.offered_load > 1 else "."))

    def to_dict(self) -> dict:
        return {"reference_requests_per_s": self.requests_per_s, "reference_tokens_per_s": self.tokens_per_s,
                "offered_requests_per_s": self.offered_requests_per_s, "offered_load": self.offered_load,
                "policies": {k: repr(v) for k, v in self.policies.items()},
                "long_prompt_fraction": self.long_prompt_fraction, "loads_shown": [LOW, HIGH]}


def long_prompt_fraction(lengths, b_max: int) -> float | None:
    """``P(prompt > b_max)`` when the length law says (a finite support or a geometric law), else ``None``."""
    sup = lengths.support()
    if sup is not None:
        v, p = sup
        return float(p[v > b_max].sum())
    if type(lengths).__name__ == "Geometric":
        q = 1.0 - 1.0 / lengths.mean
        return float(q ** b_max)
    return None


def reference(engine, workload) -> Reference:
    from ..capacity import max_throughput
    from ..policies import POLICY_NAMES, resolve_policy

    cap = max_throughput(engine, workload)
    pols = {}
    for name in POLICY_NAMES:
        p = resolve_policy(name)
        pols[name] = p if p.chunked else p.with_(chunk_long_prompts=True)
    return Reference(capacity=cap, requests_per_s=cap.requests_per_s, tokens_per_s=cap.tokens_per_s,
                     offered_requests_per_s=workload.arrival_rate_per_s,
                     offered_load=workload.token_rate_per_s / cap.tokens_per_s, policies=pols,
                     long_prompt_fraction=long_prompt_fraction(workload.prompt_tokens, engine.b_max),
                     b_max=engine.b_max)


def fmt_num(x, spec: str = ".2f") -> str:
    """``x`` formatted, or an en dash when it is not a finite number (see :func:`fluidq.results.fmt_value`)."""
    from ..results import fmt_value

    return fmt_value(x, spec)