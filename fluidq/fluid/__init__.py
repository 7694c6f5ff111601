"""Fluid models of networks of LLM engines.

``path``       exact piecewise-linear fluid paths (:func:`fluid_path`, :class:`FluidPath`)
``stability``  :func:`fluid_stability`: stable with a certificate, unstable with a diverging path, or
               unknown; :func:`backlog_slope` for one engine
"""
from __future__ import annotations

from .path import FluidPath, fluid_path

__all__ = ["FluidPath", "fluid_path", "fluid_stability", "FluidStabilityResult", "backlog_slope",
           "lyapunov_certificate"]


def __getattr__(name):
    if name in ("fluid_stability", "FluidStabilityResult", "backlog_slope", "lyapunov_certificate"):
        from . import stability

        return getattr(stability, name)
    raise AttributeError(f"module 'fluidq.fluid' has no attribute {name!r}")
