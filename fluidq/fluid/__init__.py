"""Fluid models of networks of LLM engines.

``compile``    the flow model of a network (:func:`compile_network`, :class:`FlowModel`, :class:`Buffer`;
               what ``Network.flow`` returns)
``path``       exact piecewise-linear fluid paths (:func:`fluid_path`, :class:`FluidPath`)

The fluid verdicts (:func:`fluid_stability`: stable with a certificate, unstable with a diverging path,
or unknown; :func:`backlog_slope` for one engine) live in :mod:`fluidq.stability.fluid`; the names
here and the path ``fluidq.fluid.stability`` are aliases that module registers when ``fluidq`` is
imported (this package imports no verdict).
"""
from __future__ import annotations

from .compile import Buffer, FlowModel, compile_network
from .path import FluidPath, fluid_path

__all__ = ["Buffer", "FlowModel", "compile_network", "FluidPath", "fluid_path", "fluid_stability", "FluidStabilityResult", "backlog_slope",
           "lyapunov_certificate"]
