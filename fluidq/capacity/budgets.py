"""Old path of :mod:`fluidq.engine.budgets` (the budgets a scheduler forms batches under are facts of the
engine and its scheduler, a description; the capacity analyses read them from there)."""
from ..engine.budgets import (binding_k_max, effective_engine, max_requests_per_batch,  # noqa: F401
                              without_idle_k_max)

__all__ = ["binding_k_max", "effective_engine", "max_requests_per_batch", "without_idle_k_max"]
