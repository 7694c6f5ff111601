"""Closed-form capacity of one engine and of parallel engines.

Theorem 2 of Li, Dai, Peng (arXiv:2504.07347): no scheduler serves more than
``sup_{b <= b_max} b/t(b)`` tokens per second (``tokens_per_s``); a work-conserving scheduler fills its
batches to ``b_max`` under a backlog, serves ``b_max/t(b_max)`` (``work_conserving_tokens_per_s``) and is
stable below that.  The two are one number for the staircase with ``b0 | b_max``.  For ``K`` engines
behind a join-the-shortest-queue router the capacities add (Prop. 3 / Remark 4).  A KV cache smaller
than every request (``prompt + output`` tokens) gives capacity 0.

For a context-aware batch time ``t(b, kv)`` the capacity is evaluated at the workload's mean
decode context, and a KV-cache capacity limits how many requests decode together
(:func:`resident_limits`); both are fluid approximations, stated in the result's ``reason``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..batchtime import ContextAware
from ..engine import Engine
from ..errors import ParameterError
from ..results import MEANINGFUL_DIGITS, Result, fmt_value, plain
from ..workload import Workload

__all__ = [
    "CapacityCurveResult",
    "CapacityResult",
    "capacity_vs_bmax",
    "engine_capacity",
    "full_batch_rate",
    "max_throughput",
    "mean_decode_context",
    "mean_resident_context",
    "min_footprint_tokens",
    "resident_limits",
]


@dataclass(frozen=True)
class CapacityResult(Result):
    """Maximum throughput.

    Attributes
    ----------
    tokens_per_s : float
        Total tokens (prefill + decode) per second over all engines.
    batch_tokens : int or tuple
        Batch size where each engine's ``b/t(b)`` is maximal.
    requests_per_s : float or None
        ``tokens_per_s / (m_p + m_d)`` when a workload was given; ``tokens_per_s / (m_p + m_d - 1)`` for an
        engine with ``prefill_emits_token`` (:func:`tokens_per_request`).
    per_engine_tokens_per_s : tuple
        One capacity per engine.
    method, reason : str
        How it was computed and why it holds.
    work_conserving_tokens_per_s : float or None
        What work-conserving schedulers serve under a backlog: they fill every batch to ``b_max``
        tokens (or the largest batch the KV cache or ``k_max`` allows), so ``b_max/t(b_max)`` per
        engine -- below ``tokens_per_s`` when ``b/t(b)`` peaks at a smaller batch (a staircase whose
        ``b0`` does not divide ``b_max``, a piecewise-linear form), equal otherwise.  Theorem 2(b)
        of arXiv:2504.07347 holds below this rate.
    kv_batch_tokens : int or None
        When a KV-cache capacity binds (for a workload): the full batch it allows, ``N (m_p + m_d)/m_d``
        tokens for the ``N`` requests whose mean footprint fits (the largest over the engines).  Both
        rates above are then fluid *estimates* from mean footprints, not bounds: simulation moves
        them by several percent either way (staircase steps near that batch, recompute preemptions).
        They take no account of the cache's rules (whole-prompt admission, recompute preemptions), so
        they lie 5-46 % above where seeded simulations saturate; the load basis there (of ``fluidq check
        --load``, ``simulate --load``, ``latency --loads``, a sweep's ``load`` and the verdicts) is
        :func:`fluidq.dtmc.kv_basis.kv_capacity`, through :func:`fluidq.dtmc.load_basis.load_basis`, the one
        function that gives the lambda* a load is a fraction of.
    bound_tokens_per_s : float or None
        The proven bound when the KV cache binds: ``sup_b b/t(b)`` over ``b <= b_max`` without the
        KV-cache estimate (Theorem 2(a)): no scheduler serves more, whatever the cache.
    """

    tokens_per_s: float
    batch_tokens: int | tuple
    requests_per_s: float | None
    per_engine_tokens_per_s: tuple
    method: str
    reason: str
    inputs: dict = field(default_factory=dict, repr=False)
    work_conserving_tokens_per_s: float | None = None
    kv_batch_tokens: int | None = None
    bound_tokens_per_s: float | None = None

    @property
    def work_conserving_basis(self) -> str:
        """What :attr:`work_conserving_tokens_per_s` is, in words (for labels).  Where ``k_max`` binds along the
        mix (``method == "region"``) and the region's capacity sets that figure (it is at most the full batches'
        rate, per engine), the region's words, not ``b_max/t(b_max)`` (h-words2)."""
        wc = self.work_conserving_tokens_per_s
        if self.method == "region" and wc is not None and wc >= self.tokens_per_s * (1 - 1e-12):
            return "the stability region's capacity along the mix (k_max binds, §6 of arXiv:2504.07347)"
        if self.method == "region":  # some engines' full batches serve less than their region capacity
            return ("min(b_max/t(b_max), the stability region's capacity along the mix) per engine (k_max binds, §6 "
                    "of arXiv:2504.07347)")
        if self.kv_batch_tokens is not None:
            return f"b/t(b) at the KV-limited full batch of {self.kv_batch_tokens} tokens, a fluid estimate"
        return "b_max/t(b_max)"

    @property
    def work_conserving_requests_per_s(self) -> float | None:
        if self.requests_per_s is None or self.work_conserving_tokens_per_s is None:
            return None
        return self.requests_per_s * self.work_conserving_tokens_per_s / self.tokens_per_s if self.tokens_per_s else 0.0

    @property
    def batch_seconds(self) -> float | None:
        return self.inputs.get("batch_seconds")

    def to_dict(self) -> dict:
        many = isinstance(self.batch_tokens, tuple)
        out = plain({"tokens_per_s": self.tokens_per_s, "batch_tokens": None if many else self.batch_tokens,
                     "requests_per_s": self.requests_per_s,
                     "work_conserving_tokens_per_s": self.work_conserving_tokens_per_s,
                     "kv_batch_tokens": self.kv_batch_tokens, "bound_tokens_per_s": self.bound_tokens_per_s,
                     "per_engine_tokens_per_s": None,
                     "method": self.method, "reason": self.reason, "inputs": self.inputs})
        # up to a million entries (n_engines copies): finite floats, converted in one pass
        out["per_engine_tokens_per_s"] = [float(v) for v in self.per_engine_tokens_per_s]
        if many:
            out["batch_tokens"] = [int(v) for v in self.batch_tokens]
        return out

    def plot(self, ax=None, **kw):
        from ..plotting import plot_capacity

        return plot_capacity(self, ax=ax, **kw)


def mean_resident_context(workload: Workload) -> float:
    """Mean KV tokens held by a decoding request, averaged over its decode iterations.

    A request with ``p`` prompt and ``o`` output tokens decodes for ``o`` iterations with a mean
    context of ``p + o/2``; weighting by ``o`` (long requests stay resident longer) gives
    ``E[o (p + o/2)] / E[o]``: ``m_p + E[o^2]/(2 m_d)`` for independent lengths, the paired
    average for a trace.
    """
    if workload.trace is not None:
        p = np.asarray(workload.trace.prompt_tokens, dtype=float)
        o = np.asarray(workload.trace.output_tokens, dtype=float)
        return float(np.sum(o * (p + o / 2.0)) / np.sum(o))
    return workload.mean_prompt_tokens + workload.output_tokens.mean_square / (2.0 * workload.mean_output_tokens)


def request_work(engine: Engine, workload: Workload) -> tuple[float, float]:
    """``(prefill, decode)`` tokens of batch work per request of ``workload`` on ``engine``:
    ``(m_p, m_d)``, or ``(m_p, m_d - 1)`` for an engine whose prefill emits the first output token
    (:meth:`fluidq.Engine.request_work`).  Every analysis turns rates into token work with it."""
    return engine.request_work(workload.mean_prompt_tokens, workload.mean_output_tokens)


def tokens_per_request(engine: Engine, workload: Workload) -> float:
    """Batch tokens one request needs: ``m_p + m_d``, or ``m_p + m_d - 1`` with ``prefill_emits_token``."""
    mp, md = request_work(engine, workload)
    return mp + md


def offered_tokens_per_s(engine: Engine, workload: Workload) -> float:
    """The token work ``workload`` brings to ``engine`` per second: ``lambda`` times :func:`tokens_per_request`
    (``workload.token_rate_per_s`` for the paper's engine)."""
    return workload.arrival_rate_per_s * tokens_per_request(engine, workload)


def resident_limits(engine: Engine, workload: Workload) -> dict:
    """How many requests can decode together at saturation, under each limit.

    ``token_budget``: in flow balance a full batch of ``b_max`` tokens holds ``b_max m_d/(m_p+m_d)``
    decode tokens, one per decoding request (``m_d - 1`` for ``m_d`` with ``prefill_emits_token``,
    :func:`request_work`); ``k_max``: the batch-size limit; ``kv_cache``:
    ``kv_capacity_tokens / mean_resident_context``.  Absent limits are omitted.
    """
    mp, md = request_work(engine, workload)
    out = {"token_budget": engine.b_max * md / (mp + md)}
    if engine.k_max is not None:
        out["k_max"] = float(engine.k_max)
    if engine.kv_capacity_tokens is not None:
        out["kv_cache"] = engine.kv_capacity_tokens / mean_resident_context(workload)
    return out


def mean_decode_context(engine: Engine, workload: Workload) -> float:
    """Mean cached KV tokens read by decode attention in a batch at saturation (approximation).

    ``N * mean_resident_context`` with ``N`` the smallest of :func:`resident_limits`.
    """
    return min(resident_limits(engine, workload).values()) * mean_resident_context(workload)


def min_footprint_tokens(workload: Workload) -> int | None:
    """The smallest ``prompt + output`` any request of ``workload`` has (the KV tokens it holds at its
    end), or ``None`` when the lengths have no known finite support.  ``workload`` may also be a network's
    :class:`~fluidq.network.Hop` (its ``prompt_tokens`` and ``output_tokens`` lengths, no trace), as
    :func:`fluidq.capacity.network.mix_capacity` reads a station's hops."""
    if getattr(workload, "trace", None) is not None:
        return int(np.min(np.asarray(workload.trace.prompt_tokens) + np.asarray(workload.trace.output_tokens)))
    sp, so = workload.prompt_tokens.support(), workload.output_tokens.support()
    if sp is None or so is None:
        return None
    return int(np.min(sp[0]) + np.min(so[0]))


@dataclass(frozen=True)
class _BatchLimit:
    """What :func:`_batch_limit_at` finds: the batch time to read (at the residents' context for a context-aware
    model), the largest batch at saturation (0 when nothing fits the KV cache), the residents that decode together,
    every limit on them by name and the one that binds, and whether it is the KV cache that lowers the batch."""

    batch_time: object
    b_lim: int
    residents: float
    limits: dict
    kv_binds: bool

    @property
    def binding(self) -> str | None:
        return min(self.limits, key=self.limits.get) if self.limits else None


def _batch_limit_at(engine: Engine, prefill_work: float, decode_work: float, context: float,
                    smallest: int | None) -> _BatchLimit:
    """The limit logic of one engine at saturation, from the moments of what it serves: ``prefill_work`` and
    ``decode_work`` batch tokens per request (:func:`request_work`, averaged over a mix), ``context`` the mean KV
    tokens a decoding request holds (:func:`mean_resident_context`, or a mix's paired reading) and ``smallest`` the
    smallest ``prompt + output`` of any request (``None``: unknown).  One workload (:func:`_batch_limit`) and a
    station's mix of hops (:func:`fluidq.capacity.network.mix_capacity`) both read it.

    Residents: the fewest the token budget (``b_max wd/(wp+wd)``, flow balance), ``k_max`` and the KV cache
    (``kv_capacity_tokens / context``) allow; when the KV cache is the fewest and below the token budget the batch
    holds at most ``N (wp + wd)/wd`` tokens; a context-aware batch time is read at ``N x context`` KV tokens."""
    kv = engine.kv_capacity_tokens
    if kv is not None and smallest is not None and smallest > kv:
        return _BatchLimit(engine.batch_time, 0, 0.0, {}, False)
    limits = {"token_budget": engine.b_max * decode_work / (prefill_work + decode_work)
              if prefill_work + decode_work > 0 else 0.0}
    if engine.k_max is not None:
        limits["k_max"] = float(engine.k_max)
    if kv is not None and context > 0:
        limits["kv_cache"] = kv / context
    n = min(limits.values())
    b_lim = engine.b_max
    kv_binds = limits.get("kv_cache", np.inf) <= n and limits["kv_cache"] < limits["token_budget"] and decode_work > 0
    if kv_binds:
        b_lim = max(1, min(engine.b_max, int(n * (prefill_work + decode_work) / decode_work)))
    bt = engine.batch_time
    if isinstance(bt, ContextAware):
        bt = bt.at_context(n * context)
    return _BatchLimit(bt, b_lim, n, limits, kv_binds)


def _batch_limit(engine: Engine, workload: Workload | None):
    """``(batch_time, largest batch tokens at saturation, notes)`` (KV cache and context-aware model):
    :func:`_batch_limit_at` at ``workload``'s moments."""
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if workload is None:
        notes = []
        if isinstance(engine.batch_time, ContextAware):
            notes.append("context-aware model without a workload: attention cost ignored (optimistic)")
        return engine.batch_time, engine.b_max, notes
    kv = engine.kv_capacity_tokens
    small = min_footprint_tokens(workload) if kv is not None else None
    mp, md = request_work(engine, workload)
    context = mean_resident_context(workload)
    lim = _batch_limit_at(engine, mp, md, context, small)
    if lim.b_lim < 1:
        return lim.batch_time, 0, [f"no request fits the KV cache: the smallest holds {small} tokens (prompt + "
                                   f"output) at its end, the cache {kv}"]
    notes = []
    if lim.kv_binds:
        notes.append(f"the KV cache ({kv:,} tokens) binds: at most {lim.residents:.1f} requests "
                     f"decode together, so batches hold at most {lim.b_lim} tokens (a fluid estimate from mean "
                     "request footprints, the mean-footprint bound: above what the engine serves under the cache's "
                     "own rules, whole-prompt admission and recompute preemptions; where those bind, the load basis "
                     "of `fluidq check --load` is their capacity, fluidq.dtmc.load_basis, and validation/RESULTS.md, "
                     "\"the load basis where the KV cache binds\", measures the gap)")
    if isinstance(engine.batch_time, ContextAware):
        notes.append(f"context-aware model at the workload's mean decode context "
                     f"({lim.residents * context:.0f} KV tokens per batch)")
    return lim.batch_time, lim.b_lim, notes


def engine_capacity(engine: Engine, workload: Workload | None = None) -> tuple[float, int, str]:
    """``(tokens_per_s, batch_tokens, note)`` for one engine: ``sup_b b/t(b)``, the most any scheduler serves.

    With a workload and a KV capacity, the KV cache may bound the requests that decode together
    below what a full batch needs; the batch then holds at most ``N (m_p + m_d)/m_d`` tokens
    (flow balance with ``N`` decoding requests) and the sup of ``b/t(b)`` is taken up to that.  When no
    request fits the KV cache the capacity is 0.
    """
    bt, b_lim, notes = _batch_limit(engine, workload)
    if b_lim < 1:
        return 0.0, 0, "; ".join(notes)
    rate, b = bt.best_rate(b_lim)
    return rate, b, "; ".join(notes)


def full_batch_rate(engine: Engine, workload: Workload | None = None) -> tuple[float, int, str]:
    """``(tokens_per_s, batch_tokens, note)``: ``b/t(b)`` at the largest batch ``b`` the engine forms under
    a backlog (``b_max``, or the KV-cache bound) -- what a work-conserving scheduler serves (Theorem 2(b)
    of arXiv:2504.07347 is stated with ``b_max/t(b_max)``)."""
    bt, b_lim, notes = _batch_limit(engine, workload)
    if b_lim < 1:
        return 0.0, 0, "; ".join(notes)
    return float(b_lim / float(bt(b_lim))), int(b_lim), "; ".join(notes)


def max_throughput(engine: Engine | Sequence[Engine], workload: Workload | None = None, *,
                   n_engines: int = 1) -> CapacityResult:
    """The most tokens (and requests) per second a deployment can serve.

    Parameters
    ----------
    engine : Engine or sequence of Engine
        One engine, or several (heterogeneous) engines behind a router.
    workload : Workload, optional
        Gives the tokens per request for ``requests_per_s``: ``m_p + m_d``, or ``m_p + m_d - 1`` for an
        engine with ``prefill_emits_token`` (its prefill's iteration emits the first output token, so a
        request needs one decode iteration fewer); its arrival rate is not used.
    n_engines : int
        Identical copies of ``engine`` (ignored when a sequence is given).

    Returns
    -------
    CapacityResult

    Notes
    -----
    ``tokens_per_s = sup_{1 <= b <= b_max} b/t(b)`` per engine, summed over engines: no scheduler serves
    more.  ``work_conserving_tokens_per_s`` is ``b_max/t(b_max)`` per engine, summed: what
    work-conserving schedulers serve under a backlog, and the throughput of join-the-shortest-queue
    routing over work-conserving engines (equal to ``tokens_per_s`` when ``b/t(b)`` peaks at ``b_max``).
    A KV cache smaller than every request gives 0.  When an engine has a
    batch-size limit ``k_max`` and a workload is given, its capacity for the workload's mix is
    the largest ``lambda (m_p + m_d)`` with ``(lambda m_p, lambda m_d)`` in its stability region
    (:func:`fluidq.stability_region`, paper §6); where that is below the Theorem-2 number the
    result has ``method="region"`` and says so in ``reason``.

    References
    ----------
    Li, Dai, Peng, arXiv:2504.07347, Theorem 2 and Proposition 3.

    Examples
    --------
    >>> from fluidq import Engine, Staircase, max_throughput
    >>> e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    >>> round(max_throughput(e).tokens_per_s, 3)
    3342.909
    """
    from .._validate import ENGINES_WHY, MAX_ENGINES, integer

    if isinstance(engine, Engine):
        count = integer("n_engines", n_engines, minimum=1, maximum=MAX_ENGINES, why=ENGINES_WHY)
        distinct = [engine]  # identical copies are computed once: the sums are count times one engine's
    else:
        if isinstance(engine, (str, bytes)) or not isinstance(engine, Sequence):
            raise ParameterError("engine", engine, "an Engine or a non-empty sequence of engines")
        engines = list(engine)
        if not engines:
            raise ParameterError("engine", engine, "an Engine or a non-empty sequence of engines")
        if len(engines) > MAX_ENGINES:
            raise ParameterError("engine", f"<{len(engines)} engines>", f"at most {MAX_ENGINES:,} engines", ENGINES_WHY)
        for i, e in enumerate(engines):
            if not isinstance(e, Engine):
                raise ParameterError(f"engine[{i}]", e, "a fluidq.Engine")
        distinct, count = engines, len(engines)
    if workload is not None and not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload or None")
    per, bs, notes, wcs, wc_bs = [], [], [], [], []
    region_reasons = []
    kv_b = []
    for e in distinct:
        r, b, note = engine_capacity(e, workload)
        wc_rate, wc_b, _ = full_batch_rate(e, workload)
        # the KV cache binds when it limits the full batch below b_max (only it lowers that limit)
        if e.kv_capacity_tokens is not None and workload is not None and 0 < wc_b < e.b_max:
            kv_b.append(wc_b)
        if workload is not None and e.k_max is not None:
            # k_max may bind for this prefill/decode mix: the capacity is then where the ray
            # (lambda m_p, lambda m_d) leaves the stability region (paper §6)
            from .region_capacity import region_capacity

            r2, b2, why, binds = region_capacity(e, workload)
            if binds and r2 < r:  # both are upper bounds: the tighter one (k_max or KV cache) decides
                r, b = r2, b2
                if why not in region_reasons:
                    region_reasons.append(why)
        wcs.append(min(wc_rate, r))
        wc_bs.append(wc_b)
        per.append(r)
        bs.append(b)
        if note and note not in notes:
            notes.append(note)
    if len(distinct) == 1:  # count copies: count * x is the correctly rounded sum of count x's
        total, wc_total = float(per[0] * count), float(wcs[0] * count)
        per, bs = per * count, bs * count
    else:
        total, wc_total = float(math.fsum(per)), float(math.fsum(wcs))
    req = None if workload is None else _requests_per_s(distinct, per, total, workload)
    if count == 1:
        e = distinct[0]
        if per[0] == 0:
            reason = "no request can be served"
        else:
            limit = (f"b <= {wc_bs[0]}, the batch the KV cache allows" if kv_b else f"b <= b_max={e.b_max}")
            reason = (f"sup of b/t(b) over admissible batches ({limit}) is reached at b={bs[0]} "
                      f"(Theorem 2 of arXiv:2504.07347)")
        if not region_reasons and per[0] > 0 and wc_total < total * (1 - 1e-12):
            reason += (f"; work-conserving schedulers fill batches to {wc_bs[0]} tokens under "
                       f"a backlog and serve {fmt_value(wc_total, digits=MEANINGFUL_DIGITS)} tokens/s "
                       f"({wc_total / total:.4g} of it): Theorem 2(b) "
                       "holds below that rate")
    elif region_reasons:  # the per-engine numbers of the region reasons are each engine's, not the sum
        reason = (f"sum of {count} engine capacities, each as above (its limit binds); the throughput "
                  f"of join-the-shortest-queue routing over work-conserving engines is that sum, "
                  f"{fmt_value(wc_total, digits=MEANINGFUL_DIGITS)} tokens/s (Prop. 3 of arXiv:2504.07347)")
    else:
        full = ("the rate of the full batch the KV cache allows, summed" if kv_b else "the sum of their b_max/t(b_max)")
        reason = (f"sum of {count} engine capacities (sup of b/t(b) each"
                  + (", up to the batch the KV cache allows" if kv_b else "") + "); the throughput of "
                  f"join-the-shortest-queue routing over work-conserving engines is {full}, "
                  f"{fmt_value(wc_total, digits=MEANINGFUL_DIGITS)} tokens/s (Prop. 3 of arXiv:2504.07347)")
    if region_reasons:
        reason = ("; ".join(region_reasons) if count == 1
                  else "each engine: " + "; ".join(region_reasons) + "; " + reason)
    emits = [e for e in distinct if e.prefill_emits_token]
    if workload is not None and emits:
        mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
        reason += (f"; the prefill's iteration emits the first output token (prefill_emits_token), so a request "
                   f"of m_p={mp:g} prompt and m_d={md:g} output tokens is m_p + m_d - 1 = "
                   f"{tokens_per_request(emits[0], workload):g} tokens of batch work (d - 1 decode iterations for d output tokens), "
                   "the tokens per request in requests_per_s")
    if notes:
        reason += "; " + "; ".join(notes)
    # identical copies are listed once, with their number
    inputs = {"engines": [e.to_dict() for e in distinct], "n_engines": count,
              "workload": workload.to_dict() if workload is not None else None}
    if count == 1 and not region_reasons and per[0] > 0:
        inputs["batch_seconds"] = float(bs[0] / per[0])
    kv_batch = max(kv_b) if kv_b else None
    bound = None
    if kv_batch is not None:  # t(b, kv) >= t(b): sup b/t(b) without the cache bounds whatever the cache does
        bounds = [e.batch_time.best_rate(e.b_max)[0] for e in distinct]
        bound = float(bounds[0] * count) if len(distinct) == 1 else float(math.fsum(bounds))
    return CapacityResult(tokens_per_s=total, batch_tokens=bs[0] if len(bs) == 1 else tuple(bs),
                          requests_per_s=req, per_engine_tokens_per_s=tuple(per),
                          method="region" if region_reasons else "closed_form", reason=reason, inputs=inputs,
                          work_conserving_tokens_per_s=wc_total, kv_batch_tokens=kv_batch,
                          bound_tokens_per_s=bound)


def _requests_per_s(distinct, per, total, workload) -> float:
    """Requests/s of a capacity: tokens/s over the batch tokens per request (:func:`tokens_per_request`);
    engines that differ in ``prefill_emits_token`` each convert their own capacity."""
    works = [tokens_per_request(e, workload) for e in distinct]
    if all(w == works[0] for w in works):
        return total / works[0]
    return float(math.fsum(r / w for r, w in zip(per, works * (len(per) // len(works)))))


def _region_aware_shapes(engine, target_tokens_per_s, prompt_tokens):
    from .region import region_aware_shapes  # the region module is imported on first use

    return region_aware_shapes(engine, target_tokens_per_s, prompt_tokens)


# RegionAware (a policy, a description) takes its shapes from the region analysis through this
# registration, so that it imports no analysis; `import fluidq` imports this package first
from ..policies import region_aware as _region_aware  # noqa: E402

_region_aware.register_shape_finder(_region_aware_shapes)

# The Network / Station traffic-equation methods (loads, bottleneck, best split, at_load, station
# capacity) are the functions fluidq.capacity.network registers on import (Network.flow is registered
# by fluidq.fluid.compile); the package fluidq imports both right after fluidq.network.model, so that
# they are there before any network is (and an engine's capacity loads no network description)

# capacity as the budget b_max varies (what plotting.plot_capacity_vs_bmax draws)
from .curve import CapacityCurveResult, capacity_vs_bmax  # noqa: E402


def __getattr__(name):
    if name == "network":  # the network capacities: imported with fluidq.network.model, or on first use here
        import importlib

        return importlib.import_module(f"{__name__}.network")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
