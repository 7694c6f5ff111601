"""What every report section shares: one scheduler configuration and one reference capacity.

A report compares sections with each other (a verdict against a simulation, a latency table
against a verdict), so they must judge the same schedulers against the same rate.  This module
fixes both once per report:

* the **scheduler configuration**: the five engine schedulers of Li, Dai, Peng, "Throughput-Optimal
  Scheduling Algorithms for LLM Inference and AI Agents" (arXiv:2504.07347), with FasterTransformer
  and vanilla vLLM allowed to split prompts longer than ``b_max`` (``chunk_long_prompts=True``);
  without that such prompts wait forever, and the verdict "unstable at every rate" says nothing
  about the schedulers themselves;
* the **reference capacity** ``lambda*``: the load basis of ``fluidq check --load`` and ``simulate --load``
  (:func:`fluidq.dtmc.load_basis`) for the report's engine and the workload's mean lengths --
  :func:`fluidq.max_throughput` for an engine without a KV cache (or where the token budget binds), the
  capacity under the cache's rules
  (whole-prompt admission, recompute preemptions) where the cache or ``max_num_seqs`` binds in that flow balance
  (``max_num_seqs`` binding where the cache holds its residents at their full contexts, h-basis; the capacity
  note says which), vLLM's flow balance for an engine whose
  batch time reads the batch composition.  Every load in the report is a fraction of it, unless a
  section says otherwise in so many words.  (Before, the report sized on ``max_throughput`` alone: where
  the cache binds that lies 5-46 % above where seeded simulations saturate (validation/RESULTS.md, "the
  load basis where the KV cache binds"), and a report could size a deployment its own simulations found
  unstable at every load);
* the **deployment**: the workload's offered load ``rho`` (a fraction of ``lambda*``) is served by
  ``N = ceil(rho / TARGET_UTILISATION)`` such engines, its arrivals split evenly at random, so each
  engine sees load ``rho / N`` (at most ``TARGET_UTILISATION``) -- the report's **operating point**;
* the **loads shown**: that per-engine load (below capacity) and the load each engine would see with
  one engine fewer, ``rho / (N - 1)`` (above capacity; ``HIGH`` when that is not between 1 and
  ``OWN_LOAD_SHOWN_MAX`` or ``N = 1``), so every section shows why ``N`` engines are needed.

Every number a person reads is rounded to :data:`fluidq.results.MEANINGFUL_DIGITS` significant digits
(:func:`fmt4`); ``to_dict`` keeps full precision.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["HIGH", "LOW", "TARGET_UTILISATION", "Reference", "fmt4", "fmt_num", "long_prompt_fraction",
           "reference"]

LOW, HIGH = 0.8, 1.1  # fallback loads (fractions of lambda*) below and above capacity
#: the largest per-engine load (fraction of lambda*) the report's deployment is sized for
TARGET_UTILISATION = 0.8
# the workload's own rate is simulated only up to this load; beyond it every scheduler diverges at once
OWN_LOAD_SHOWN_MAX = 1.5


@dataclass(frozen=True, kw_only=True)
class Reference:
    """The shared configuration of one report (see the module docstring)."""

    capacity: object  # CapacityResult of max_throughput (its batch, its reason; the capacity section's table)
    requests_per_s: float
    tokens_per_s: float
    offered_requests_per_s: float
    offered_load: float
    policies: dict  # name -> Scheduler, in POLICY_NAMES order
    long_prompt_fraction: float | None
    b_max: int
    n_engines: int = 1  # engines the deployment needs at TARGET_UTILISATION
    basis: object = None  # the LoadBasis lambda* is read from (fluidq.dtmc.load_basis)

    @property
    def basis_name(self) -> str:
        """``"kv_rules"``, ``"flow_balance"`` or ``"max_throughput"`` (:data:`fluidq.dtmc.load_basis.BASES`)."""
        return "max_throughput" if self.basis is None else self.basis.basis

    @property
    def basis_binding(self) -> str | None:
        """The limit that binds in the load basis' capacity: ``"kv_cache"`` or ``"k_max"`` for ``kv_rules``
        (:func:`fluidq.dtmc.kv_basis.kv_capacity`'s ``binding``), the flow balance's for ``flow_balance``, ``None``
        for ``max_throughput`` (:func:`fluidq.dtmc.load_basis.load_basis_binding`, as ``fluidq capacity --json``'s
        ``load_basis_binding``)."""
        from ..dtmc.load_basis import load_basis_binding

        return None if self.basis is None else load_basis_binding(self.basis)

    @property
    def basis_words(self) -> str:
        """What ``lambda*`` is, in words (the capacity note and the capacity section say it)."""
        from ..dtmc.load_basis import BASIS_WORDS, K_MAX_BINDS, KV_CACHE_BINDS_PART, bound_words

        b = self.basis_name
        if b == "kv_rules" and self.basis_binding == "k_max":
            # max_num_seqs binds (h-words): the cache holds its residents at full context; the band measured there
            from ..stability.measured import SATURATION_WHERE_K_MAX_BINDS

            kvk, mtk = SATURATION_WHERE_K_MAX_BINDS["kv_rules"], SATURATION_WHERE_K_MAX_BINDS["max_throughput"]
            return (f"{K_MAX_BINDS}, so it is {BASIS_WORDS[b]} (`fluidq.dtmc.kv_basis.kv_capacity`), the load "
                    f"basis of `fluidq check --load` and `simulate --load`, {kvk.within_words()}; "
                    f"`fluidq.max_throughput` would give {fmt4(self.capacity.requests_per_s)} req/s, "
                    f"{bound_words(self.capacity, roofline=False)} (on those engines it was {mtk.errors_words()} of the simulations; {kvk.source})")
        if b == "kv_rules" and getattr(self.capacity, "kv_batch_tokens", None) is None:
            # the cache binds for part of the residents' life, their mean footprints fit it: max_throughput is not
            # the mean-footprint batch
            return (f"{KV_CACHE_BINDS_PART}, so it is {BASIS_WORDS[b]} (`fluidq.dtmc.kv_basis.kv_capacity`), the load "
                    f"basis of `fluidq check --load` and `simulate --load`; `fluidq.max_throughput` would give "
                    f"{fmt4(self.capacity.requests_per_s)} req/s, {bound_words(self.capacity, roofline=False)}")
        if b == "kv_rules":
            return (f"the KV cache binds, so it is {BASIS_WORDS[b]} (`fluidq.dtmc.kv_basis.kv_capacity`), the load "
                    f"basis of `fluidq check --load` and `simulate --load`; Theorem 2's `fluidq.max_throughput` at "
                    f"the batch the mean footprints allow would give {fmt4(self.capacity.requests_per_s)} req/s, "
                    f"above where seeded simulations saturate")
        if b == "flow_balance":
            return f"{BASIS_WORDS[b]}, the load basis of `fluidq check --load` and `simulate --load`"
        return (f"{BASIS_WORDS['max_throughput']} (`fluidq.max_throughput`), the load basis of `fluidq check --load` "
                "and `simulate --load`")

    @property
    def engine_load(self) -> float:
        """The load each of the ``n_engines`` engines sees (the operating point), a fraction of ``lambda*``."""
        return self.offered_load / self.n_engines

    @property
    def low(self) -> float:
        """The load shown below capacity: the operating point, or ``LOW`` when the workload offers (almost)
        nothing."""
        return self.engine_load if self.engine_load >= 0.05 else LOW

    @property
    def high(self) -> float:
        """The load shown above capacity: what each engine sees with one engine fewer, or ``HIGH``."""
        if self.n_engines > 1:
            x = self.offered_load / (self.n_engines - 1)
            if 1 < x <= OWN_LOAD_SHOWN_MAX:
                return x
        return HIGH

    @property
    def high_is_fewer(self) -> bool:
        """Whether :attr:`high` is the per-engine load with one engine fewer."""
        return self.n_engines > 1 and self.high != HIGH

    @property
    def deployment_note(self) -> str:
        n, x = self.n_engines, self.engine_load
        fewer = (f" With {n - 1} engine{'s' if n > 2 else ''} each would see load {fmt4(self.high)} > 1, beyond "
                 "capacity, which is why the report also looks at that load." if self.high_is_fewer else "")
        return (f"**The deployment.** At most load {TARGET_UTILISATION:g} per engine, the offered load "
                f"{fmt4(self.offered_load)} needs **{n} engine{'s' if n > 1 else ''}** "
                f"(`ceil({fmt4(self.offered_load)} / {TARGET_UTILISATION:g})`); "
                + ("with the arrivals split evenly at random each engine sees" if n > 1 else "it sees")
                + f" {fmt4(self.rate(x))} req/s = **load {fmt4(x)}**, the report's operating "
                f"point.{fewer}"
                + ("" if self.low == x else
                   f" That is almost no load, so the report looks at load {fmt4(self.low)} of one engine instead "
                   "and calls it the operating point."))

    def rate(self, load: float) -> float:
        """The arrival rate of ``load`` (a fraction of ``lambda*``)."""
        return load * self.requests_per_s

    @property
    def policy_note(self) -> str:
        frac = ("" if self.long_prompt_fraction is None else
                f"; {self.long_prompt_fraction:.3g} of this workload's prompts are longer than b_max")
        return ("**Scheduler configuration (the same in every section).** FasterTransformer and vanilla vLLM split "
                f"only prompts longer than `b_max = {self.b_max}` into chunks (`--chunk-long-prompts`, `chunk_long_prompts=True` in Python{frac}); "
                "Orca, Sarathi-Serve and vLLM with chunked prefill chunk every prompt anyway.")

    @property
    def policy_short(self) -> str:
        return ("Schedulers as configured for the whole report: FasterTransformer and vanilla vLLM with "
                "long prompts split (`--chunk-long-prompts`: prompts longer than `b_max` split into chunks).")

    @property
    def capacity_note(self) -> str:
        return (f"**Reference capacity.** Loads are fractions of one engine's `lambda* = {fmt4(self.requests_per_s)} "
                f"req/s` ({fmt4(self.tokens_per_s)} tokens/s: {self.basis_words}); the workload "
                f"itself offers {fmt4(self.offered_requests_per_s)} req/s = **load {fmt4(self.offered_load)}**"
                + (" (more than one engine can serve)." if self.offered_load > 1 else "."))

    def to_dict(self) -> dict:
        return {"reference_requests_per_s": self.requests_per_s, "reference_tokens_per_s": self.tokens_per_s,
                "offered_requests_per_s": self.offered_requests_per_s, "offered_load": self.offered_load,
                "policies": {k: repr(v) for k, v in self.policies.items()},
                "long_prompt_fraction": self.long_prompt_fraction, "loads_shown": [self.low, self.high],
                "target_utilisation": TARGET_UTILISATION, "n_engines": self.n_engines,
                "engine_load": self.engine_load, "load_basis": self.basis_name,
                "load_basis_binding": self.basis_binding,
                "max_throughput_requests_per_s": self.capacity.requests_per_s}


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
    from ..capacity import offered_tokens_per_s
    from ..dtmc.load_basis import load_basis
    from ..policies import POLICY_NAMES, resolve_policy

    lb = load_basis(engine, workload)  # the lambda* of check --load and simulate --load
    cap = lb.max_throughput(engine, workload)
    pols = {}
    for name in POLICY_NAMES:
        p = resolve_policy(name)
        pols[name] = p if p.chunked else p.with_(chunk_long_prompts=True)
    rho = offered_tokens_per_s(engine, workload) / lb.tokens_per_s  # both m_p + m_d (- 1 where prefill emits)
    n = max(1, math.ceil(rho / TARGET_UTILISATION - 1e-9))
    return Reference(capacity=cap, requests_per_s=lb.requests_per_s, tokens_per_s=lb.tokens_per_s, basis=lb,
                     offered_requests_per_s=workload.arrival_rate_per_s,
                     offered_load=rho, policies=pols, n_engines=n,
                     long_prompt_fraction=long_prompt_fraction(workload.prompt_tokens, engine.b_max),
                     b_max=engine.b_max)


def fmt_num(x, spec: str = ".2f") -> str:
    """``x`` formatted, or an en dash when it is not a finite number (see :func:`fluidq.results.fmt_value`)."""
    from ..results import fmt_value

    return fmt_value(x, spec)


def fmt4(x) -> str:
    """``x`` rounded for people to :data:`fluidq.results.MEANINGFUL_DIGITS` significant digits (en dash if undefined)."""
    from ..results import MEANINGFUL_DIGITS, fmt_value

    return fmt_value(x, digits=MEANINGFUL_DIGITS)
