"""Old path of :mod:`fluidq.network.caveats` (:func:`capacity_caveats`: where ``b_max / t(b_max)`` is only an
upper bound on a station's capacity; read from the description alone)."""
from ..network.caveats import capacity_caveats  # noqa: F401

__all__ = ["capacity_caveats"]
