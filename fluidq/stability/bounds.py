"""Analytic stability arguments for the cases Theorem 2(b) does not cover as stated: a batch-size limit
``k_max`` that binds, and a KV cache that can never bind.

* :func:`kv_never_binds`: under a decode-first mixed scheduler in FCFS order (Sarathi-Serve, vLLM with
  chunked prefill) a request is started only in a batch that has a free ``k_max`` slot after every decoder
  and every started prompt (those come first in the order), so at most ``k`` requests hold KV at any time,
  ``k = min(k_max, b_max)`` (each request in a batch takes a token); with asynchronous scheduling up to
  ``2 k`` (the requests finished in the batch in flight still hold their KV, and keep their slots only
  when the engine itself carries a ``k_max``).  A cache that holds ``k`` requests at
  the workload's largest ``p + o`` (whole blocks, plus one token of headroom each under the token rules)
  is never full: no admission waits on memory and no request is preempted, so every sample path is that of
  the engine without the cache, and the verdict without memory applies.
* :func:`k_max_floor`: with ``k_max`` binding, a scheduler whose batch holds at least
  ``min(b_max, k_max, demand)`` tokens in every state (checked by search, as work conservation is:
  :func:`k_max_floor_search`) forms batches of at least ``k0 = min(b_max, k_max)`` tokens whenever ``k_max``
  or more requests are in the system; with bounded lengths a large token backlog means many requests, so
  under a backlog it serves at least ``min_{k0 <= b <= b_max} b / t(b, kv_max)`` tokens/s, where ``kv_max``
  is the most KV a batch of ``k`` requests can read (``k`` times the largest ``p + o``, at most the cache).
  Below that rate the token backlog drains (the fluid argument of Theorem 2(b) of Li, Dai, Peng,
  arXiv:2504.07347, with this floor in place of ``b_max / t(b_max)``): stable.  The floor is a lower bound,
  so above it nothing is decided.

Both need finite largest lengths (a length distribution with finite support, or a trace).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["k_max_floor", "k_max_floor_search", "kv_never_binds", "max_request_tokens"]


def max_request_tokens(workload):
    """The largest ``(prompt, output)`` token counts of ``workload`` (each the largest of its own
    distribution, so their sum bounds every request's ``p + o``), or ``None`` for unbounded lengths."""
    tr = getattr(workload, "trace", None)
    if tr is not None:
        return int(np.max(tr.prompt_tokens)), int(np.max(tr.output_tokens))
    out = []
    for ln in (workload.prompt_tokens, workload.output_tokens):
        sup = ln.support()
        if sup is None:
            return None
        out.append(int(np.max(sup[0])))
    return tuple(out)


def _slots(engine, pol) -> int:
    """``min(b_max, k_max)`` of the engine and the scheduler's own budgets: the most requests one batch holds."""
    ks = [int(engine.b_max)] + [int(k) for k in (engine.k_max, getattr(pol, "k_max", None),
                                                  getattr(pol, "b_max", None)) if k is not None]
    return min(ks)


def _decode_first_fcfs(pol) -> bool:
    from ..policies.orderings import FCFS
    from ..policies.schedulers import Scheduler

    return (isinstance(pol, Scheduler) and pol.priority == "decode" and pol.mixed and pol.chunked
            and isinstance(pol.order, FCFS))


def _kv_holders(engine, pol, given_engine) -> tuple:
    """``(holders, words)``: the most requests that hold KV at once.  ``k = min(b_max, k_max)`` slots
    (:func:`_slots`); with asynchronous scheduling the requests that finished in the batch in flight still
    hold their KV while the next batch is formed, and they keep their slots only when the engine the run is
    given carries a ``k_max`` itself (a scheduler's own ``k_max`` limits its batches, not the slots), so up
    to ``2 k`` requests hold KV, at most that engine's ``k_max``."""
    k = _slots(engine, pol)
    if not getattr(engine, "async_scheduling", False):
        return k, f"at most min(b_max, k_max) = {k} requests hold KV"
    own = getattr(given_engine if given_engine is not None else engine, "k_max", None)
    held = 2 * k if own is None else min(2 * k, int(own))
    return held, (f"at most {held} requests hold KV (min(b_max, k_max) = {k} in a batch, and under asynchronous "
                  "scheduling the requests finished in the batch in flight still hold theirs"
                  + ("" if own is None else f", within the engine's k_max {int(own)}") + ")")


def kv_never_binds(engine, workload, pol, given_engine=None):
    """``(True, why)`` when ``engine``'s KV cache can never bind under ``pol`` for ``workload`` (see the
    module docstring), else ``(False, why not)``.  ``given_engine``: the engine as the caller gave it,
    before a scheduler's own budgets were folded in (:func:`fluidq.stability.effective_engine`), whose
    ``k_max`` decides whether finished requests keep their slots under asynchronous scheduling."""
    kv = engine.kv_capacity_tokens
    if kv is None:
        return False, "the engine has no KV cache"
    if not _decode_first_fcfs(pol):
        return False, (f"{getattr(pol, 'name', pol)} is not a decode-first mixed scheduler in FCFS order, so nothing "
                       "bounds how many requests hold KV")
    most = max_request_tokens(workload)
    if most is None:
        return False, "the workload's lengths are unbounded"
    k, holders = _kv_holders(engine, pol, given_engine)
    per = most[0] + most[1]
    mem = engine.memory
    if mem is not None and getattr(mem, "kind", "tokens") != "tokens":
        bs = int(mem.block_size)
        need_blocks = k * (-(-per // bs))
        have = kv // bs
        ok = need_blocks <= have
        words = (f"{k} requests x {-(-per // bs)} blocks of {bs} tokens (p + o <= {per:,}) = {need_blocks:,} blocks, "
                 f"the cache has {have:,}")
    else:
        need = k * (per + 1)
        ok = need <= kv
        words = (f"{k} requests x ({per:,} tokens at the largest p + o, + 1 of headroom) = {need:,} tokens, the cache "
                 f"has {kv:,}")
    if not ok:
        return False, f"the cache can fill: {words}"
    return True, (f"the KV cache never binds: {getattr(pol, 'name', pol)} (decode first, FCFS) starts a request only "
                  f"with a free slot after every decoder and started prompt, so {holders}, and {words}; no admission "
                  "waits and nothing is preempted, so the engine runs as without the cache")


_FLOOR_CACHE: dict = {}


def k_max_floor_search(pol, *, b_max_values=(2, 3, 4, 6), k_values=(1, 2, 3), max_requests: int = 4):
    """``(holds, states, counterexample)``: whether ``pol`` forms a batch of at least
    ``min(b_max, k_max, demand)`` tokens in every searched queue state (the states of
    :func:`fluidq.check_work_conserving`, under each ``k_max`` of ``k_values``).  Evidence over the states
    searched, as work conservation is."""
    from ..policies.conservation import cached_per_policy, search_states

    def search():
        checked = 0
        for b_max in b_max_values:
            for k in k_values:
                for residents, view in search_states(b_max, max_requests, k_max=k):
                    batch = pol.select(view)
                    checked += 1
                    if batch.tokens < min(b_max, k, view.demand):
                        return (False, checked, f"b_max={b_max}, k_max={k}, {len(residents)} residents: {batch.tokens} "
                                f"tokens < min(b_max, k_max, demand={view.demand})")
        return (True, checked, None)

    return cached_per_policy(_FLOOR_CACHE, pol, search)


def _batch_times(engine, b: np.ndarray, kv_max: float) -> np.ndarray | None:
    """``t(b)`` at ``kv_max`` tokens of context read, or ``None`` for a batch time this bound cannot read
    (one that reads the batch composition)."""
    from ..batchtime.models import ContextAware
    from ..dtmc.flow_basis import is_composition

    if is_composition(engine):
        return None
    bt = engine.batch_time
    if isinstance(bt, ContextAware):
        return np.asarray(bt(b, np.full(b.shape, float(kv_max))), dtype=float)
    return np.asarray(bt(b), dtype=float)


def k_max_floor(engine, workload, pol):
    """``(tokens_per_s, why)``: what ``pol`` serves at least under any backlog when ``k_max`` binds (see the
    module docstring), or ``(None, why not)``."""
    from ..policies.conservation import work_conserving_cached

    name = getattr(pol, "name", repr(pol))
    most = max_request_tokens(workload)
    if most is None:
        return None, "the workload's lengths are unbounded (a large backlog need not hold many requests)"
    if getattr(engine, "async_scheduling", False):
        # requests finished in the batch in flight keep their k_max slots through the next one, so a batch
        # can hold fewer than k_max requests under a backlog
        return None, "with async scheduling finished requests hold k_max slots one batch longer"
    holds, states, ce = k_max_floor_search(pol)
    if not holds:
        return None, f"{name} can form a batch below min(b_max, k_max, demand) ({ce})"
    if not work_conserving_cached(pol).work_conserving:
        return None, f"{name} is not work-conserving"
    k = _slots(engine, pol)
    b_hi = min(int(engine.b_max), int(getattr(pol, "b_max", None) or engine.b_max))
    k0 = min(k, b_hi)
    kv_max = k * (most[0] + most[1])
    if engine.kv_capacity_tokens is not None:
        kv_max = min(kv_max, int(engine.kv_capacity_tokens))
    b = np.arange(k0, b_hi + 1, dtype=float)
    t = _batch_times(engine, b, kv_max)
    if t is None or not np.all(np.isfinite(t)) or np.any(t <= 0):
        return None, "the batch time reads the batch composition (no t(b) to bound it by)"
    rate = b / t
    i = int(np.argmin(rate))
    floor = float(rate[i])
    why = (f"{name} is work-conserving and forms batches of at least min(b_max, k_max, demand) tokens (no shorter "
           f"batch in {states:,} searched states), so whenever {k} or more requests are in the system each batch "
           f"holds at least {k0} tokens and takes at most t(b) at the most context a batch of {k} requests reads "
           f"({kv_max:,} KV tokens: {k} x the largest p + o = {most[0] + most[1]:,}"
           f"{', capped by the cache' if kv_max == engine.kv_capacity_tokens else ''}); over {k0} <= b <= {b_hi}, "
           f"b/t(b) is smallest at b={int(b[i])}, {floor:,.0f} tokens/s: what it serves at least under any backlog "
           "(lengths are bounded, so a large token backlog is many requests)")
    if not math.isfinite(floor):
        return None, "the floor is not finite"
    return floor, why
