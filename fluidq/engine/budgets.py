"""The budgets a scheduler forms batches under: facts of an engine and its scheduler that the
capacity, DTMC and stability analyses (and a network's capacity caveats) read.

:func:`max_requests_per_batch` bounds the requests one batch holds; :func:`binding_k_max` is the
batch-size limit that can bind (a ``k_max`` at or above that bound never changes a batch);
:func:`effective_engine` is the engine with the scheduler's own smaller budgets.  The
scheduler is read through its ``b_max`` / ``k_max`` attributes only (this module imports nothing).
``fluidq.capacity.budgets`` is the old path of this module.
"""
from __future__ import annotations

__all__ = ["binding_k_max", "effective_engine", "max_requests_per_batch", "without_idle_k_max"]


def max_requests_per_batch(engine, policy=None, *, kv_cache: bool = True) -> int:
    """The most distinct requests one batch of ``engine`` (under ``policy``) can hold.

    Every request in a batch takes at least one token of the budget (a decode token or a prompt chunk
    of at least one token), so a batch holds at most ``b_max`` requests -- the engine's, or the
    scheduler's own budget when that is smaller; and a request in a batch holds at least one KV token,
    so with ``kv_cache`` at most ``kv_capacity_tokens`` of them.  A batch-size limit ``k_max`` at or
    above this number can never bind.
    """
    most = int(engine.b_max)
    pol_b = getattr(policy, "b_max", None) if policy is not None else None
    if pol_b is not None:
        most = min(most, int(pol_b))
    if kv_cache and engine.kv_capacity_tokens is not None:
        most = min(most, int(engine.kv_capacity_tokens))
    return most


def binding_k_max(engine, policy=None, *, kv_cache: bool = True) -> int | None:
    """The batch-size limit of ``engine`` and ``policy`` that can bind, or ``None`` when none can.

    The smaller of the engine's and the scheduler's ``k_max``, unless it is at or above
    :func:`max_requests_per_batch` (e.g. ``k_max >= b_max``): such a limit never changes a batch, so
    every capacity and verdict argument treats it as absent.

    Examples
    --------
    >>> import fluidq
    >>> e = fluidq.Engine(batch_time=fluidq.Affine(c=1.0, a=0.0), b_max=768, k_max=768)
    >>> binding_k_max(e) is None
    True
    >>> binding_k_max(e.with_(k_max=100))
    100
    """
    ks = [int(k) for k in (engine.k_max, getattr(policy, "k_max", None) if policy is not None else None)
          if k is not None]
    if not ks:
        return None
    k = min(ks)
    return k if k < max_requests_per_batch(engine, policy, kv_cache=kv_cache) else None


def without_idle_k_max(engine, policy=None):
    """``engine`` without its ``k_max`` when that limit can never bind (see :func:`binding_k_max`; with
    ``policy``, also when the scheduler's own smaller budget keeps batches below it)."""
    if engine.k_max is not None and engine.k_max >= max_requests_per_batch(engine, policy):
        return engine.with_(k_max=None)
    return engine


def effective_engine(engine, policy=None):
    """``engine`` with the budgets its scheduler actually forms batches under, for capacity arguments.

    A scheduler's own ``b_max`` or ``k_max`` below the engine's caps every batch (``Scheduler.budgets``),
    so the capacity is that of the smaller budget; a ``k_max`` that can never bind is dropped
    (:func:`without_idle_k_max`).
    """
    pb = getattr(policy, "b_max", None) if policy is not None else None
    pk = getattr(policy, "k_max", None) if policy is not None else None
    if pb is not None and int(pb) < engine.b_max:
        engine = engine.with_(b_max=int(pb))
    if pk is not None and (engine.k_max is None or int(pk) < engine.k_max):
        engine = engine.with_(k_max=int(pk))
    return without_idle_k_max(engine)
