"""The load basis of an engine with a KV cache where the cache or ``max_num_seqs`` binds (issues 16, 20).

:func:`fluidq.max_throughput` reads ``b/t(b)`` at the batch the KV cache allows from mean request footprints
(``kv_batch_tokens``); where the cache binds that overstates what the engine serves under the cache's own rules
(whole-prompt admission, recompute preemptions) by 5-46 % in seeded simulations of 17 engines (validation/RESULTS.md,
"the load basis where the KV cache binds" and "small KV caches against the load basis";
:data:`fluidq.stability.measured.SATURATION_PER_BASIS`).  :func:`kv_capacity` is vLLM's flow balance
(:func:`fluidq.validate.predict.predict_capacity`) on the engine's own batch time: the lambda* that ``fluidq check
--load`` and ``fluidq simulate --load`` read there, and the capacity the verdicts quote beside their own.  It lives
beside :func:`~fluidq.dtmc.flow_basis.flow_balance_capacity`, the same flow balance for an engine whose batch time
reads the batch composition.  :func:`fluidq.dtmc.load_basis.load_basis` chooses among the two and
:func:`fluidq.max_throughput` for every face (``check``, ``simulate``, ``latency``, a sweep, ``check_stability``).

It lives in ``fluidq.dtmc``, not ``fluidq.capacity``, because it reads :func:`fluidq.validate.predict.predict_capacity`
and ``fluidq.validate`` imports ``fluidq.capacity``: that import from ``fluidq.capacity`` would close a cycle between
sibling sub-packages, which ``lint-imports``' ``acyclic`` contract forbids (:mod:`fluidq.dtmc.load_basis` says more).
"""
from __future__ import annotations

import numpy as np

from ..batchtime import ContextAware
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Workload
from .flow_basis import engine_totals, is_composition, length_rows

__all__ = ["kv_capacity"]


class _BatchTimeIterations:
    """An engine's batch time as the iteration model :func:`fluidq.validate.predict.predict_capacity` reads: an
    iteration of one prefill chunk of ``c`` tokens and ``n`` decodes of mean context ``k`` takes ``t(c + n, n k)``
    (a context-aware ``t(b, kv)`` reads the decodes' KV tokens, as the simulator charges it), ``t(c + n)``
    otherwise."""

    def __init__(self, batch_time):
        self.batch_time = batch_time
        self.source = f"the engine's batch time, {batch_time.describe()}"

    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        nd = np.asarray(n_decode, dtype=float)
        b = np.maximum(np.asarray(prefill_tokens, dtype=float) + nd, 1.0)
        if isinstance(self.batch_time, ContextAware):
            return self.batch_time(b, nd * np.asarray(kv_decode, dtype=float))
        return self.batch_time(b)

    def decode_only(self, n, kv):
        return float(self.time_shape(0.0, 0.0, n, kv))


def kv_capacity(engine: Engine, workload: Workload, *, n_engines: int = 1):
    """The capacity under the KV cache's own rules, when the KV cache binds; ``None`` when it does not.

    :func:`fluidq.max_throughput` reads ``b/t(b)`` at the batch that ``N = C / mean context`` resident requests make (the
    mean footprints, ``kv_batch_tokens``): where the cache binds that overstates what the engine serves, since a
    request is admitted only when its whole prompt fits (the cache keeps a slack free below the waiting head) and
    the residents outgrow the cache and are preempted and recomputed.  This is vLLM's flow balance of
    :func:`fluidq.validate.predict.predict_capacity` (the formula of ``fluidq capacity --gpu``) on ``engine``'s
    own batch time, budgets, cache and block size (token memory: blocks of 1), over ``workload``'s lengths (its
    trace, or seeded draws, as :func:`flow_balance_capacity` reads them).  Seeded
    simulations put the stability threshold of work-conserving schedulers near it, not near ``max_throughput``'s
    figure (validation/RESULTS.md, "the load basis where the KV cache binds"; ``validation/tools/kv_load_basis.py``):
    at 0.78-1.21 times it on 17 engines.  Its known miss is a tiny cache: the flow balance fills the cache to
    ``N = C / mean context`` residents, where whole-prompt admission of a few whole requests leaves a sizeable
    slice free (Gemma-2-9B's 4,272 tokens: 28.1 residents predicted, 25.2 simulated, saturation 0.86 of this
    basis at 100 + 100; 6.7 and 5.0, 0.78 at 500 + 200; "small KV caches against the load basis").

    Past the switch to ``max_num_seqs`` (its residents fit the cache at their full contexts: the share of their
    decode life in which the cache binds, :func:`fluidq.validate.predict._cache_binding_share`, is 0) it is the same
    flow balance with ``binding == "k_max"`` and no preemptions, so the basis is continuous in the cache (h-basis,
    2026-12-07).  Before, ``None`` there handed the basis to :func:`fluidq.max_throughput`, whose ``k_max`` branch
    is the stability region along the mix (arXiv:2504.07347 §6): a bound over every scheduler, reached by one that
    prefills a prompt in small chunks beside ``max_num_seqs - 1`` decodes, beneath the roofline's knee, where vLLM's
    chunked prefill fills the token budget with the whole prompt -- 16-31 % above seeded simulations of roofline
    engines with long prompts (Llama-3.1-8B on an H100, ``max_num_seqs`` 64, 1000 + 500 tokens: 10.83 req/s against
    9.30 simulated; this flow balance 9.44), so the basis jumped by that much where the cache stopped binding
    (validation/RESULTS.md, "the load basis through the switch").

    Returns ``None`` without a KV cache, when the token budget binds in the flow balance, and for an engine whose
    batch time reads the batch composition (its basis is already the flow balance,
    :func:`~fluidq.dtmc.flow_basis.flow_balance_capacity`).  Otherwise a
    :class:`~fluidq.validate.predict.CapacityPrediction` with ``binding`` ``"kv_cache"`` (the cache binds for some
    share of the residents' decode life) or ``"k_max"`` (``max_num_seqs`` alone): ``requests_per_s`` (all
    ``n_engines`` together) is the basis; ``tokens_per_s`` counts ``m_p + m_d`` per request.
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    if engine.kv_capacity_tokens is None or is_composition(engine):
        return None  # (a composition engine's basis is flow_balance_capacity)
    from ..validate.predict import predict_capacity  # (imported here: an engine without a cache does not load it)

    p, o = length_rows(workload)
    if not engine.prefill_emits_token:  # the flow balance counts m_d - 1 decode iterations (vLLM's rule)
        o = o + 1.0
    block = engine.memory.block_size if engine.memory.kind == "blocks" else 1
    try:
        pred = predict_capacity(_BatchTimeIterations(engine.batch_time), p, o, b_max=engine.b_max, k_max=engine.k_max,
                                kv_capacity_tokens=engine.kv_capacity_tokens, block_size=block)
    except ParameterError as err:  # no request fits the cache in whole blocks: max_throughput says 0 already
        if err.name != "kv_capacity_tokens":
            raise
        return None
    if pred.binding == "token_budget":  # (past the KV cache, max_num_seqs binding is kept: continuous, h-basis)
        return None
    return engine_totals(pred, engine, p, o, n_engines)
