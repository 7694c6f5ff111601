"""Networks of LLM engines: description, traffic equations, simulation and stability verdicts.

``model``      Network, Station, Router, RequestClass, Hop, Choice, Fork, Join (networkx topology,
               traffic equations, per-engine load, bottleneck)
``toml``       TOML case files (``load_network``)
``sim``        the network simulator (``simulate_network``)
``stability``  ``check_network_stability``: one verdict from loads, fluid model and simulation
"""
from __future__ import annotations

from .model import Choice, Fork, Hop, Join, Network, NoTokens, RequestClass, Router, Station  # noqa: F401

__all__ = ["Network", "Station", "Router", "RequestClass", "Hop", "Choice", "Fork", "Join", "NoTokens",
           "load_network", "simulate_network", "check_network_stability", "NetworkSimResult",
           "NetworkStabilityResult"]


def __getattr__(name):
    if name == "load_network":
        from .toml import load_network

        return load_network
    if name in ("simulate_network", "NetworkSimResult"):
        from . import sim

        return getattr(sim, name)
    if name in ("check_network_stability", "NetworkStabilityResult"):
        from . import stability

        return getattr(stability, name)
    raise AttributeError(f"module 'fluidq.network' has no attribute {name!r}")
