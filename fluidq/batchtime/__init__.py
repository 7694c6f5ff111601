"""Batch-time models ``t(b)`` and their fitting from measurements.

``models``  the model classes (staircase, piecewise-linear, affine, tabulated, context-aware)
``fit``     least-squares fits and ``fit_batch_time(kind="auto")`` with held-out model choice
``loaders`` readers that turn measured operator profiles (Vidur, LLMServingSim, Splitwise,
            Sarathi-Serve) into whole-iteration batch times
"""
from .models import (Affine, BatchTime, ContextAware, PiecewiseLinear, Staircase, Tabulated,
                     batch_time_from_dict)

__all__ = ["BatchTime", "Staircase", "PiecewiseLinear", "Affine", "Tabulated", "ContextAware",
           "batch_time_from_dict"]
