"""The region a scheduler reaches: the batches it forms when work is backlogged.

A scheduler does not choose its time shares freely: its batch shape follows from the queue.
Once a backlog has formed, every batch it runs is one it forms in a loaded state: ``n_d``
requests decoding (for every ``n_d``) and none, a few or many fresh prompts waiting.
:func:`policy_region` probes the policy's own ``select(view)`` on those states and returns the
downward-closed convex hull of the rate points of the shapes it forms.

This is a fluid argument, *ours, not the paper's*, and it gives an **outer** estimate: a target
outside a policy's region cannot be served by that policy once a backlog exists (e.g. Sarathi
with ``b_max = 1024`` at vertex C of the paper's §6 example: with 100 decoding requests it runs
decode-only batches, with 99 it fills the budget with prefill, and no mix of those serves C).
Inside it the policy may still be unstable, because its dynamics, not an LP, set the time
shares: simulated thresholds (:func:`simulated_region`) sit a few per cent inside it for
Sarathi-Serve and Orca and far inside it for FasterTransformer.  It is a heuristic, not a bound:
states with partly prefilled prompts are not probed.  The region depends on how prompts fill a
batch: by default each waiting prompt has ``b_max`` tokens, so one prefilling request can fill any
batch (the same assumption as :func:`fluidq.stability_region`).

References
----------
Li, Dai, Peng, arXiv:2504.07347, §6 (batch-size limit; Sarathi-Serve, Orca, FasterTransformer).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import integer
from ..engine import Engine
from ..errors import ParameterError
from ..policies import QueueView, RequestState, resolve_policy
from ..capacity.region import StabilityRegion, _build, stability_region
from ..results import Result, plain

__all__ = ["MAX_PROBE_TOKENS", "PolicyRegionsResult", "policy_region", "policy_regions", "probe_shapes"]

_LONG = 10**9
#: Largest ``max(b_max, k_max)`` whose policy region is probed: the probes queue up to that many + 2
#: requests and ask the policy for about 700 batches over them, about 20 us per token of budget
#: (2**18 tokens: 5 s per policy; 2**24 took minutes).
MAX_PROBE_TOKENS = 2**18
PROBE_WHY = ("probing a policy queues up to b_max + 2 requests and forms about 700 batches over them: 2**18 "
             "tokens take about 5 s per policy")


def _decoder_counts(b_max: int, k_max: int | None) -> list[int]:
    top = max(b_max, k_max or 0) + 2
    marks = {0, 1, 2, top, b_max - 1, b_max, b_max + 1}
    if k_max is not None:
        marks |= {k_max - 1, k_max, k_max + 1}
    dense = (k_max if k_max is not None else b_max) + 2  # every count where slots can bind
    marks |= set(range(0, min(top, dense, 512) + 1))
    marks |= set(np.unique(np.geomspace(1, top, 48).round().astype(int)).tolist())
    return sorted(m for m in marks if 0 <= m <= top)


def probe_shapes(engine: Engine, policy, *, prompt_tokens: int | None = None) -> np.ndarray:
    """The distinct batch shapes ``(prefill, decode)`` that ``policy`` forms in backlogged states."""
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    pol = resolve_policy(policy)
    if max(engine.b_max, engine.k_max or 0) > MAX_PROBE_TOKENS:
        raise ParameterError("b_max", engine.b_max, f"a budget of at most {MAX_PROBE_TOKENS:,} tokens for a "
                             "scheduler's region", f"{PROBE_WHY}; {max(engine.b_max, engine.k_max or 0):,} would "
                             f"queue that many requests")
    plen = integer("prompt_tokens", engine.b_max if prompt_tokens is None else prompt_tokens, minimum=1)
    counts = _decoder_counts(engine.b_max, engine.k_max)
    n_dec = max(counts)
    decoders = [RequestState(rid=i, arrival_s=float(i), prompt_tokens=1, prefilled=1, output_tokens=_LONG)
                for i in range(n_dec)]
    n_wait = min(math.ceil(engine.b_max / plen) + 1 + (engine.k_max or 0), 4 * engine.b_max + 4)
    waiting = [RequestState(rid=n_dec + j, arrival_s=float(n_dec + j), prompt_tokens=plen, output_tokens=_LONG)
               for j in range(n_wait)]
    fill = math.ceil(engine.b_max / plen)  # prompts that fill a batch
    # 0 prompts (decode only), a few (prefill not backlogged: one arrival at a time), a batch-full, many
    n_prompts = sorted({0, 1, 2, 3, max(1, fill // 2), fill, n_wait} & set(range(0, n_wait + 1)))
    found = set()
    for n_d in counts:
        for n_p in n_prompts:
            reqs = tuple(decoders[:n_d]) + tuple(waiting[:n_p])
            if not reqs:
                continue
            view = QueueView(requests=reqs, now_s=0.0, b_max=engine.b_max, k_max=engine.k_max)
            batch = pol.select(view)
            if not batch.empty:
                found.add((batch.prefill_tokens, batch.decode_tokens))
    if not found:
        raise ParameterError("policy", getattr(pol, "name", pol), "a policy that forms a batch when work waits")
    return np.array(sorted(found), dtype=np.int64)


def policy_region(engine: Engine, policy, *, prompt_tokens: int | None = None) -> StabilityRegion:
    """The region of the batch shapes ``policy`` forms under backlog, on ``engine``.

    Parameters
    ----------
    engine : Engine
        Budgets ``b_max`` and ``k_max`` and the batch-time model.
    policy : str or Policy
        ``"sarathi"``, ``"orca"``, ``"fastertransformer"``... or an object with ``select(view)``;
        e.g. ``fluidq.Sarathi(b_max=1024)`` for a scheduler with its own, smaller, budget.
    prompt_tokens : int, optional
        Length of the waiting prompts in the probes (default ``b_max``).

    Returns
    -------
    StabilityRegion
        ``label`` is the policy's name; ``vertices`` and ``contains`` as for the engine's region,
        which always contains it.

    Examples
    --------
    >>> import fluidq
    >>> from fluidq.region import policy_region
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
    >>> bool(policy_region(e, "sarathi").contains((620.0, 2117.0)))  # vertex C
    False
    >>> bool(policy_region(e, fluidq.Sarathi(b_max=128)).contains((620.0, 2117.0)))
    True
    """
    shapes = probe_shapes(engine, policy, prompt_tokens=prompt_tokens)
    secs = np.asarray(engine.batch_time(shapes.sum(axis=1).astype(float)), dtype=float)
    cap, _ = engine.batch_time.best_rate(engine.b_max)
    pol = resolve_policy(policy)
    name = getattr(pol, "name", type(pol).__name__)
    b_own = getattr(pol, "b_max", None)
    b_eff = engine.b_max if b_own is None else min(b_own, engine.b_max)
    name = f"{name}-{b_eff}"
    return _build(shapes, secs, engine, float(cap), label=name)


@dataclass(frozen=True, eq=False)
class PolicyRegionsResult(Result):
    """The engine's region and, per scheduler, the region it reaches under backlog and (when simulated)
    the thresholds it sustains along rays: what :func:`fluidq.plotting.region.plot_policy_regions` draws.

    Attributes
    ----------
    engine_region : StabilityRegion
        :func:`fluidq.region.stability_region` of the engine.
    regions : dict
        ``{label: StabilityRegion}``, one :func:`policy_region` per scheduler (label ``sarathi-1024``...).
    simulated : dict or None
        ``{label: SimulatedRegion}`` (:func:`fluidq.region.simulated_region`) when ``simulate=True``.
    inputs : dict
        The engine, the policies and the simulation settings.

    Regions are no verdict: it has no ``status``.
    """

    engine_region: StabilityRegion
    regions: dict
    simulated: dict | None = None
    inputs: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        return plain({"engine_region": self.engine_region.to_dict(),
                      "regions": {k: r.to_dict() for k, r in self.regions.items()},
                      "simulated": None if self.simulated is None
                      else {k: r.to_dict() for k, r in self.simulated.items()},
                      "inputs": self.inputs})

    def to_frame(self):
        """One row per region (the engine's first): its label, capacity and vertex count (needs pandas)."""
        import pandas as pd

        rows = [{"label": lab, "kind": kind, "capacity_tokens_per_s": float(r.capacity_tokens_per_s),
                 "vertices": len(r.vertices)}
                for lab, kind, r in [("engine", "engine", self.engine_region)]
                + [(k, "policy", r) for k, r in self.regions.items()]]
        return pd.DataFrame(rows)

    def plot(self, ax=None, path=None, *, point=None):
        """The engine's region filled, each scheduler's outlined, simulated thresholds as markers."""
        from ..plotting.region import plot_policy_regions

        return plot_policy_regions(self, point=point, ax=ax, path=path)


def policy_regions(engine: Engine, policies, *, simulate: bool = False, n_rays: int = 7,
                   rng=0) -> PolicyRegionsResult:
    """The engine's region and, per scheduler of ``policies``, its :func:`policy_region` and (with
    ``simulate=True``) its :func:`~fluidq.region.simulated_region` along ``n_rays`` rays (seed ``rng``)."""
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if isinstance(policies, str) or not hasattr(policies, "__iter__"):
        raise ParameterError("policies", policies, "a list of schedulers (names or policy objects)")
    pols = list(policies)
    if not pols:
        raise ParameterError("policies", policies, "at least one scheduler")
    from .simulated_region import check_rays, simulated_region

    if simulate:
        check_rays(n_rays, len(pols))
    regions, sims = {}, {}
    for pol in pols:
        r = policy_region(engine, pol)
        regions[r.label] = r
        if simulate:
            sims[r.label] = simulated_region(engine, pol, n_rays=n_rays, rng=rng)
    inputs = {"engine": engine.to_dict(), "policies": [getattr(resolve_policy(p), "name", str(p)) for p in pols],
              "simulate": bool(simulate)}
    if simulate:
        inputs.update(n_rays=n_rays, rng=rng if rng is None or isinstance(rng, int) else repr(rng))
    return PolicyRegionsResult(engine_region=stability_region(engine), regions=regions,
                               simulated=sims if simulate else None, inputs=inputs)
