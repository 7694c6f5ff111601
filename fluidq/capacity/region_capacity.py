"""The capacity for a given prefill/decode mix when ``k_max`` binds (used by ``max_throughput``).

With a batch-size limit the Theorem-2 number ``sup_b b/t(b)`` is not the capacity for every mix:
the largest request rate is the largest ``lambda`` with ``(lambda m_p, lambda m_d)`` in the
stability region (Li, Dai, Peng, arXiv:2504.07347, §6).  These helpers compute it and say in
words whether, and how, the limit binds.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..batchtime import ContextAware
from ..results import MEANINGFUL_DIGITS, fmt_value
from .region import stability_region

__all__ = ["fixed_prompt", "region_capacity"]


@lru_cache(maxsize=256)
def _region(engine, kv, prompt):
    return stability_region(engine, kv_tokens=kv, prompt_tokens=prompt)


def fixed_prompt(workload):
    """The prompt length when every prompt has the same length, else ``None``."""
    from ..workload import Fixed

    lp = workload.prompt_tokens
    return lp.n if isinstance(lp, Fixed) else None


def region_capacity(engine, workload) -> tuple[float, int, str, bool]:
    """``(tokens_per_s, batch_tokens, reason, binds)`` for ``workload``'s mix on ``engine``.

    ``tokens_per_s = lambda* (m_p + m_d)`` with ``lambda*`` the largest rate whose point
    ``(lambda m_p, lambda m_d)`` is in the region -- for prompts of one fixed length ``P`` the
    region where a request brings at most ``P`` prefill tokens to a batch, else the
    reconstructed rule (any number) -- ; ``binds`` is True when it is below the
    Theorem-2 number.  ``batch_tokens`` is the largest batch among the shapes where the ray
    leaves the region.
    """
    from . import mean_decode_context, request_work

    kv = mean_decode_context(engine, workload) if isinstance(engine.batch_time, ContextAware) else None
    prompt = fixed_prompt(workload)
    try:
        region = _region(engine, kv, prompt)
    except TypeError:  # unhashable engine (a user model): no cache
        region = stability_region(engine, kv_tokens=kv, prompt_tokens=prompt)
    # the ray of the request's batch work: m_d - 1 decode tokens with prefill_emits_token (request_work)
    mp, md = request_work(engine, workload)
    lam = region.max_request_rate(mp, md)
    tokens = lam * (mp + md)
    cap = region.capacity_tokens_per_s
    binds = tokens < cap * (1 - 1e-9)
    q = np.array([mp, md]) * lam
    near = np.linalg.norm(region.vertices - q, axis=1) <= 1e-9 * region._scale
    if np.any(near):
        used = [int(np.flatnonzero(near)[0])]
    else:
        proj = region.A @ np.array([mp, md])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(proj > 0, region.b / np.where(proj > 0, proj, 1.0), np.inf)
        used = [int(i) for i in region.facet_vertices[int(np.argmin(ratio))]]
    shapes = [tuple(int(v) for v in region.shapes[i]) for i in used if region.kinds[i] != "idle"]
    batch = max(x + y for x, y in shapes) if shapes else engine.b_max
    words = " and ".join(f"{x} prefill + {y} decode tokens" for x, y in shapes)
    if binds:
        reason = (f"k_max={engine.k_max} binds: for m_p={mp:g}, m_d={md:g} the point (lambda m_p, lambda m_d) "
                  f"leaves the stability region at lambda*={lam:.4g} req/s, through batches of {words} "
                  f"({fmt_value(tokens, digits=MEANINGFUL_DIGITS)} tokens/s, {tokens / cap:.4g} of the Theorem-2 "
                  f"number {fmt_value(cap, digits=MEANINGFUL_DIGITS)}"
                  + (f"; prompts of {prompt} tokens, so a request brings at most {prompt} prefill tokens to a batch"
                     if prompt is not None else "") + "; "
                  "§6 of arXiv:2504.07347, admissibility rule reconstructed)")
    else:
        reason = f"k_max={engine.k_max} does not bind for m_p={mp:g}, m_d={md:g}"
    return float(tokens), int(batch), reason, bool(binds)
