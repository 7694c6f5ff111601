"""Stability regions under a token budget ``b_max`` and a batch-size limit ``k_max`` (the old path).

The region is part of the capacity analysis: :mod:`fluidq.capacity.region` (``stability_region``),
:mod:`fluidq.capacity.mix` (``region_mix``, the LP time-sharing of batch shapes) and
:mod:`fluidq.capacity.shapes` (the extreme batch shapes); the regions of a scheduler are verdicts:
:mod:`fluidq.stability.policy_region` (``policy_region``, an outer estimate by a fluid argument) and
:mod:`fluidq.stability.simulated_region` (``simulated_region``, by simulation along rays).  This package
re-exports them, and its old module paths (``fluidq.region.region``, ``.mix``, ``.shapes``,
``.policy``, ``.simulated``) are the moved modules themselves; it sits above the analyses.  One module is its own:
:mod:`fluidq.region.verdict` (since 2026-12-07), a point's verdict read on the region and on ``fluidq check``'s
load basis where the batch shapes leave the KV cache out (what ``fluidq region --point`` and the sweep's region
analysis print).

References
----------
Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
arXiv:2504.07347, §6 (Theorem 10).
"""
import sys

from ..capacity import mix, region, shapes
from ..capacity.mix import RegionMix, region_mix
from ..capacity.region import RegionMargin, StabilityRegion, stability_region
from ..stability import policy_region as _policy_module
from ..stability import simulated_region as _simulated_module
from ..stability.policy_region import PolicyRegionsResult, policy_region, policy_regions
from ..stability.simulated_region import SimulatedRegion, simulated_region

__all__ = ["stability_region", "StabilityRegion", "RegionMargin", "region_mix", "RegionMix", "policy_region",
           "policy_regions", "PolicyRegionsResult", "simulated_region", "SimulatedRegion"]

# the old module paths are the moved modules (``import fluidq.region.mix`` finds them here)
for _old, _mod in (("region", region), ("mix", mix), ("shapes", shapes), ("policy", _policy_module),
                   ("simulated", _simulated_module)):
    sys.modules.setdefault(f"{__name__}.{_old}", _mod)
policy = _policy_module
simulated = _simulated_module
