"""Fluid models of networks of LLM engines.

``compile``    the flow model of a network (:func:`compile_network`, :class:`FlowModel`, :class:`Buffer`;
               what ``Network.flow`` returns)
``path``       exact piecewise-linear fluid paths (:func:`fluid_path`, :class:`FluidPath`)

The fluid verdicts (:func:`fluid_stability`: stable with a certificate, unstable with a diverging path,
or unknown; :func:`backlog_slope` for one engine) live in :mod:`fluidq.stability.fluid`; the names
here and the path ``fluidq.fluid.stability`` are aliases of that module, which ``fluidq`` imports on their
first use (this package imports no verdict).  ``path`` is imported on first use too (``compile`` is what
``import fluidq`` needs: it registers ``Network.flow``).
"""
from __future__ import annotations

from .compile import Buffer, FlowModel, compile_network

__all__ = ["Buffer", "FlowModel", "compile_network", "FluidPath", "fluid_path", "fluid_stability", "FluidStabilityResult", "backlog_slope",
           "lyapunov_certificate"]


def __getattr__(name):
    if name in ("FluidPath", "fluid_path", "path"):  # the exact paths: imported on first use (CLI start-up)
        import importlib

        path = importlib.import_module(f"{__name__}.path")
        return path if name == "path" else getattr(path, name)
    raise AttributeError(f"module 'fluidq.fluid' has no attribute {name!r}")
