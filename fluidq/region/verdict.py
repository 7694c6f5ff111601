"""A point's verdict where the stability region's vertices leave out what the load basis counts (h-user6b).

The vertices of :func:`fluidq.stability_region` are batch shapes with no KV-cache limit (up to ``b_max`` tokens and
``k_max`` decodes): a point inside them may be overloaded where the KV cache binds.  ``fluidq region`` called
(500, 500) tokens/s of 100 + 100-token requests on a roofline Gemma-2-9B / A10G "inside, load 0.2378" where the
engine serves about 5.230 req/s under the cache's rules (``fluidq check``'s load basis) and seeded simulations
saturate at 4.53 req/s [4.48, 4.58] (sarathi, 4 runs, seeds 1000-1003, 2026-12-07).  :func:`point_verdict` reads
the point on the load basis as well (:func:`fluidq.dtmc.load_basis.load_basis`) with ``fluidq check``'s band: above
it outside, within it no verdict.  Below it ``fluidq check`` gives no verdict either where the KV cache binds (it
never says stable there, and seeded simulations saturate down to 0.78 of the KV-rules basis,
:data:`fluidq.stability.measured.SATURATION_PER_BASIS`), so the word there is :data:`INSIDE_BY_ESTIMATE`, not a
plain "inside".
"""
from __future__ import annotations

import math

from ..dtmc.load_basis import BASIS_WORDS

__all__ = ["basis_band", "basis_words", "point_verdict", "BASIS_WORDS", "INSIDE_BY_ESTIMATE"]

#: the verdict below the band where the KV cache binds: an estimate, not a theorem (h-fixa)
INSIDE_BY_ESTIMATE = ("inside by the estimate (not proven; fluidq check gives no verdict below the band where the "
                      "cache binds)")

# BASIS_WORDS: the load bases in words, :data:`fluidq.dtmc.load_basis.BASIS_WORDS` (the one table; kept importable
# from here, where fluidq region read it before)


def basis_words(lb) -> str:
    """The words of ``lb``'s basis (:data:`BASIS_WORDS`) for a point verdict: where it is ``max_throughput`` the band
    applies only because the KV cache's mean footprints limit the batch (:func:`basis_band`), and this says so."""
    words = BASIS_WORDS[lb.basis]
    return words + ", at the batch the KV cache's mean footprints allow" if lb.basis == "max_throughput" else words


def basis_band(lb, region_rate: float):
    """``(low, high)`` of the load basis ``lb`` where a point's verdict reads it, ``None`` where the region's own
    lambda* ``region_rate`` (the workload's ray) is the basis: the vertices leave out the KV cache's rules
    (``kv_rules``) or the batch's composition (``flow_balance``), or the KV cache's mean footprints hold
    ``max_throughput`` below ``region_rate``.  Within the band the estimate decides nothing, as in ``fluidq check``
    (:data:`~fluidq.dtmc.flow_basis.KV_ESTIMATE_BAND` where the cache binds)."""
    from ..dtmc.flow_basis import KV_ESTIMATE_BAND, estimate_band

    if lb.basis == "kv_rules":
        return KV_ESTIMATE_BAND
    if lb.basis == "flow_balance":
        return estimate_band(lb.capacity)
    if getattr(lb.capacity, "kv_batch_tokens", None) is not None and lb.requests_per_s < region_rate * (1 - 1e-9):
        return KV_ESTIMATE_BAND
    return None


def point_verdict(point, workload, lb, band, region_scale: float) -> dict:
    """The verdict of ``point`` (prefill, decode tokens/s) read as ``workload``'s requests on the load basis ``lb``
    with ``band`` (:func:`basis_band`, not ``None``) beside the region's ``region_scale``
    (:meth:`~fluidq.StabilityRegion.scale_of`): ``{"verdict", "request_rate_per_s", "load", "band", "binds"}``.

    The point is read as the least rate whose ``(lambda m_p, lambda m_d)`` covers it (its own rate where it came
    from one).  ``verdict``: ``"OUTSIDE"`` outside the batch shapes (no scheduler serves it even without the cache)
    or above the band, ``"too close to call"`` within it, below it ``"inside"`` (the flow balance's band) or
    :data:`INSIDE_BY_ESTIMATE` where the band is the KV cache's (``fluidq check`` gives no verdict there, and seeded
    simulations saturate down to 0.78 of the KV-rules basis); ``binds``: the basis's load is at least the region's."""
    from ..dtmc.flow_basis import KV_ESTIMATE_BAND

    mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
    rate = max(point[0] / mp if mp > 0 else 0.0, point[1] / md if md > 0 else 0.0)
    load = rate / lb.requests_per_s if lb.requests_per_s > 0 else math.inf
    lo, hi = band
    outside = region_scale < 1 - 1e-6
    below = INSIDE_BY_ESTIMATE if tuple(band) == tuple(KV_ESTIMATE_BAND) else "inside"  # (the cache binds)
    word = "OUTSIDE" if outside or load > hi else below if load < lo else "too close to call"
    region_load = 0.0 if math.isinf(region_scale) else 1.0 / region_scale
    return {"verdict": word, "request_rate_per_s": float(rate), "load": float(load), "band": [lo, hi],
            "binds": bool(load >= region_load)}
