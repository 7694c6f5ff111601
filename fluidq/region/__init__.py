"""Stability regions under a token budget ``b_max`` and a batch-size limit ``k_max``.

``stability_region(engine)``  the region in (prefill tokens/s, decode tokens/s): vertices, the
                              batch shape behind each, facets, ``contains``, ``margin``, ``plot``
``region_mix(engine, point)`` the LP time-sharing of batch shapes serving a target, or the shortfall
``policy_region(engine, policy)``  the region of the batches a scheduler forms under backlog
                              (an outer estimate, fluid argument)
``simulated_region(engine, policy)``  what a scheduler actually sustains, by simulation along rays
``fluidq.policies.region_aware.RegionAware``  a scheduler that runs the region's batch shapes

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347, §6 (Theorem 10).
"""
from .mix import RegionMix, region_mix
from .policy import policy_region
from .region import RegionMargin, StabilityRegion, stability_region
from .simulated import SimulatedRegion, simulated_region

__all__ = ["stability_region", "StabilityRegion", "RegionMargin", "region_mix", "RegionMix", "policy_region",
           "simulated_region", "SimulatedRegion"]
