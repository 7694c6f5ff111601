"""Moved: the operator-profile iteration model is a batch-time description and lives in
:mod:`fluidq.batchtime.operators`; this module keeps the old import path working."""
from ..batchtime.operators import (  # noqa: F401
    FittedIterationModel, IterationModel, lss_iteration_model, vidur_iteration_model)

__all__ = ["IterationModel", "FittedIterationModel", "lss_iteration_model", "vidur_iteration_model"]
