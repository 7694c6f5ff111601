"""The one lambda* a load is a fraction of (issues 16, 20): :func:`load_basis`.

``fluidq check --load``, ``fluidq simulate --load`` (and its fluid prediction line), ``fluidq latency --loads``
(:func:`fluidq.latency.compare_orderings`), a sweep's ``load`` axis and :func:`fluidq.check_stability`'s load
where the KV cache binds all read their lambda* here, so that "load 0.9" is one arrival rate on every face.
Which capacity that is depends on the engine:

``"flow_balance"``   an engine whose batch time reads the batch composition (``--profile-dir``): vLLM's flow
                     balance, :func:`fluidq.dtmc.flow_basis.flow_balance_capacity` (its ``t(b)`` is one prefill
                     chunk with no decode cost, so ``b / t(b)`` overstates what it serves);
``"kv_rules"``       an engine with a KV cache where the cache or ``max_num_seqs`` binds in vLLM's flow balance:
                     the capacity under the cache's own rules (whole-prompt admission, recompute preemptions while
                     the cache binds), :func:`fluidq.dtmc.kv_basis.kv_capacity` -- seeded simulations of 17
                     KV-bound engines saturate at 0.78-1.21 times it, where :func:`fluidq.max_throughput`'s
                     mean-footprint batch was 5-46 % above (:data:`fluidq.stability.measured.SATURATION_PER_BASIS`,
                     from validation/RESULTS.md); past the switch, where ``max_num_seqs``' residents fit the cache
                     at their full contexts, the same flow balance with no preemptions (``capacity.binding ==
                     "k_max"``), so the basis is continuous through the switch: 1.00-1.04 times seeded simulations
                     of 12 roofline engines there, where max_throughput's stability region was up to 1.31 times
                     (h-basis, validation/RESULTS.md, "the load basis through the switch");
``"max_throughput"`` every other engine (no KV cache, the token budget binding, or ``preemption="swap"`` where the
                     cache binds): :func:`fluidq.max_throughput`'s ``requests_per_s`` (``sup_b b/t(b)``, Theorem 2
                     of arXiv:2504.07347, or the ``k_max`` stability region along the mix where ``k_max`` binds).

Why this lives in ``fluidq.dtmc`` and not in ``fluidq.capacity`` (where a newcomer would look first): the
two flow balances read :func:`fluidq.validate.predict.predict_capacity`, and ``fluidq.validate`` imports
``fluidq.capacity`` (``validate.roofline`` -> ``capacity.disaggregated``), as ``fluidq.dtmc`` does
(``dtmc.networks`` -> ``capacity``); a ``fluidq.capacity`` that imported either would close an import cycle
between sibling sub-packages, which the ``acyclic`` contract of ``lint-imports`` (pyproject.toml) forbids.
``fluidq.dtmc`` already imports both, and every face that reads a load basis (``stability``, ``latency``,
``sweep``, the command line) sits beside or above it.  :func:`fluidq.max_throughput`'s docstring points here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine import Engine
from ..errors import ParameterError
from ..workload import Workload

__all__ = ["BASES", "BASIS_WORDS", "KV_CACHE_BINDS_PART", "K_MAX_BINDS", "LoadBasis", "bound_words", "kv_rules_case",
           "load_basis", "load_basis_binding"]

#: the names :attr:`LoadBasis.basis` takes (each face's JSON ``load_basis``)
BASES = ("flow_balance", "kv_rules", "max_throughput")

#: each load basis in words, written once: every face that names the basis it reads puts these words in its own
#: sentence (``fluidq region``'s point verdict, ``fluidq network``'s station loads, ``fluidq simulate``'s workload
#: and fluid-prediction lines, ``fluidq latency``'s capacity line, the report's reference capacity and capacity
#: section); a face may add its own context around them ("for this folder"), not other words for the basis
BASIS_WORDS = {
    "flow_balance": "vLLM's flow balance of an engine whose batch time reads the batch composition",
    "kv_rules": "the capacity under the KV cache's rules, whole-prompt admission and recompute preemptions",
    "max_throughput": "Theorem 2's max_throughput, sup b/t(b) over the batches the engine allows",
}

#: the limit that binds where the ``kv_rules`` load basis has ``capacity.binding == "k_max"``, in words (h-words):
#: not the KV cache, which holds ``max_num_seqs``' residents at their full contexts.  Written once: ``fluidq
#: capacity``, ``check``, ``latency``, ``simulate --load``, the report and :func:`fluidq.check_stability` say it
K_MAX_BINDS = "max_num_seqs binds (the KV cache holds its residents at their full contexts, no preemptions)"
#: the cache binds under its rules (``binding == "kv_cache"``) while max_throughput's figure is not the batch of
#: mean footprints (they fit the cache; the full contexts do not)
KV_CACHE_BINDS_PART = ("the KV cache binds for part of its residents' life (their full contexts outgrow it, their "
                       "mean footprints do not)")


def load_basis_binding(lb) -> str | None:
    """The limit that binds in the load basis' capacity (the JSON's ``load_basis_binding``): ``"kv_cache"`` or
    ``"k_max"`` for ``kv_rules`` (:func:`fluidq.dtmc.kv_basis.kv_capacity`'s ``binding``), the flow balance's
    ``binding`` for ``flow_balance``, ``None`` for ``max_throughput`` (its reason says what binds)."""
    if lb.basis in ("kv_rules", "flow_balance"):
        return getattr(lb.capacity, "binding", None)
    return None


def kv_rules_case(lb, reg) -> str | None:
    """Which words the ``kv_rules`` basis ``lb`` needs beside :func:`fluidq.max_throughput`'s ``reg``: ``"k_max"``
    (max_num_seqs binds, the cache holds its residents at full context: :data:`K_MAX_BINDS`), ``"kv_cache"`` (the
    cache binds and ``reg`` takes the batch its mean footprints allow), ``"kv_cache_bound"`` (the cache binds for
    part of the residents' life while their mean footprints fit it, so ``reg`` is a bound over every scheduler, not
    the mean-footprint batch: :data:`KV_CACHE_BINDS_PART`); ``None`` for the other bases."""
    if lb.basis != "kv_rules":
        return None
    if getattr(getattr(lb, "capacity", None), "binding", None) == "k_max":
        return "k_max"
    return "kv_cache" if getattr(reg, "kv_batch_tokens", None) is not None else "kv_cache_bound"


def bound_words(reg, *, roofline: bool) -> str:
    """What :func:`fluidq.max_throughput`'s ``reg`` is where it is not the mean-footprint batch: the stability
    region along the mix (``k_max`` binding, paper §6) or sup b/t(b), a bound over every scheduler; the region's
    best batches prefill in small chunks beside the decodes (beneath the roofline's knee on a ``--gpu`` engine,
    ``roofline``), which vLLM's chunked prefill, filling its token budget, does not (validation/RESULTS.md, "the
    load basis through the switch from the KV cache to max_num_seqs")."""
    if getattr(reg, "method", None) == "region":
        return ("the stability region's bound over every scheduler (one that prefills in small chunks beside its "
                "decodes" + (" beneath the roofline's knee" if roofline else "")
                + ", which vLLM's chunked prefill, filling its token budget, does not)")
    return "sup b/t(b), a bound over every scheduler"


@dataclass(frozen=True)
class LoadBasis:
    """The lambda* a load is relative to.

    Attributes
    ----------
    requests_per_s : float
        lambda*, all ``n_engines`` together: load ``x`` is the arrival rate ``x * requests_per_s``.
    tokens_per_s : float
        The same capacity in batch work: ``requests_per_s`` times
        :func:`fluidq.capacity.tokens_per_request` (``m_p + m_d``, or ``m_p + m_d - 1`` where the prefill emits
        the first token), the units of :func:`fluidq.capacity.offered_tokens_per_s`.
    basis : str
        ``"flow_balance"``, ``"kv_rules"`` or ``"max_throughput"`` (:data:`BASES`; module docstring).
    reason : str
        Why that capacity, in words.
    capacity : object
        What it was read from: the :class:`~fluidq.validate.predict.CapacityPrediction` of the flow balance
        (``flow_balance``, ``kv_rules``) or the :class:`~fluidq.capacity.CapacityResult` of
        :func:`fluidq.max_throughput`.
    throughput : CapacityResult or None
        :func:`fluidq.max_throughput` of the same engine(s) and lengths where :func:`load_basis` computed it (the
        ``kv_rules`` and ``max_throughput`` bases; ``None`` for ``flow_balance``, which does not read it): a face
        that shows it beside the basis reads it here (:meth:`max_throughput`) instead of computing it again.
    """

    requests_per_s: float
    tokens_per_s: float
    basis: str
    reason: str
    capacity: object = None
    throughput: object = None

    def rate(self, load: float) -> float:
        """The arrival rate (requests/s) at ``load`` times lambda*."""
        return float(load) * self.requests_per_s

    def max_throughput(self, engine: Engine, workload: Workload, *, n_engines: int = 1):
        """:func:`fluidq.max_throughput` of the engine(s) and lengths this basis was made for (``engine``,
        ``workload``, ``n_engines`` as given to :func:`load_basis`; the rate is not read): :attr:`throughput`
        where the basis read it, else computed once and kept there (``flow_balance``)."""
        if self.throughput is None:
            from ..capacity import max_throughput

            object.__setattr__(self, "throughput", max_throughput(engine, workload, n_engines=n_engines))
        return self.throughput

    def to_dict(self) -> dict:
        """``{"load_basis", "load_basis_requests_per_s", "load_basis_tokens_per_s", "load_basis_reason"}``: the
        keys every face's JSON carries."""
        return {"load_basis": self.basis, "load_basis_requests_per_s": float(self.requests_per_s),
                "load_basis_tokens_per_s": float(self.tokens_per_s), "load_basis_reason": self.reason}


def load_basis(engine: Engine, workload: Workload, *, n_engines: int = 1, preemption: str = "recompute") -> LoadBasis:
    """The lambda* that a ``--load`` of ``engine`` (``n_engines`` identical copies behind a router) for
    ``workload``'s lengths is a fraction of: vLLM's flow balance for an engine whose batch time reads the batch
    composition, the capacity under the KV cache's rules where the cache or ``max_num_seqs`` binds (an engine with a
    KV cache), else :func:`fluidq.max_throughput` (module docstring).  ``workload``'s arrival rate is not read.

    ``preemption="swap"`` keeps :func:`fluidq.max_throughput` where the cache binds: the KV rules' capacity counts
    recompute preemptions (``fluidq simulate --preemption swap`` and ``compare_orderings(preemption="swap")``).

    Raises :class:`~fluidq.errors.ParameterError` naming ``kv_capacity_tokens`` when the flow balance of a
    composition engine finds no request that fits its cache in whole blocks (as
    :func:`~fluidq.dtmc.flow_basis.flow_balance_capacity` does).
    """
    from ..capacity import max_throughput, tokens_per_request
    from .flow_basis import flow_balance_capacity
    from .kv_basis import kv_capacity

    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    if preemption not in ("recompute", "swap"):
        raise ParameterError("preemption", preemption, "'recompute' or 'swap'")
    work = tokens_per_request(engine, workload)
    fb = flow_balance_capacity(engine, workload, n_engines=n_engines)
    if fb is not None:
        return LoadBasis(fb.requests_per_s, fb.requests_per_s * work, "flow_balance",
                         f"vLLM's flow balance ({fb.binding} binds: {fb.reason}); the engine's batch time reads the "
                         "batch composition, so its t(b) counts no decode cost", fb)
    cap = max_throughput(engine, workload, n_engines=n_engines)
    kvr = kv_capacity(engine, workload, n_engines=n_engines) if preemption == "recompute" and cap.tokens_per_s > 0 \
        else None
    if kvr is not None:
        which = ("the KV cache binds; under its rules (whole-prompt admission, recompute preemptions)"
                 if kvr.binding == "kv_cache" else
                 "max_num_seqs binds and its residents fit the KV cache at their full contexts (no preemptions); "
                 "under the cache's rules and max_num_seqs")
        other = ("max_throughput's mean-footprint batch" if cap.kv_batch_tokens is not None else
                 "max_throughput (a bound over every scheduler, one free to size its prefill chunks)")
        return LoadBasis(kvr.requests_per_s, kvr.requests_per_s * work, "kv_rules",
                         f"{which} {kvr.reason}; {other} would give {cap.requests_per_s:.4g} req/s", kvr, cap)
    return LoadBasis(cap.requests_per_s, cap.requests_per_s * work, "max_throughput", cap.reason, cap, cap)
