"""The old path of the region capacity helpers: :func:`region_capacity` and :func:`fixed_prompt` live in
:mod:`fluidq.capacity.region_capacity`, the ``k_max`` verdict in :mod:`fluidq.stability.region`."""
from ..capacity.region_capacity import _region, fixed_prompt, region_capacity  # noqa: F401
from ..stability.region import _POLICY_CACHE, cached_policy_region, region_verdict  # noqa: F401

__all__ = ["cached_policy_region", "fixed_prompt", "region_capacity", "region_verdict"]
