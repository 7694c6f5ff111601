"""Networks of LLM engines: the description (topology, routes, routers, TOML case files).

``model``      Network, Station, Router, RequestClass, Hop, Choice, Fork, Join (networkx topology,
               traffic equations, per-engine load, bottleneck)
``toml``       TOML case files (``load_network``)
``sim``        the network simulator (``simulate_network``; moves to ``fluidq.sim``)

The verdicts live in :mod:`fluidq.stability.network`; ``fluidq.network.check_network_stability``,
``NetworkStabilityResult`` and the module path ``fluidq.network.stability`` are aliases that module
registers here when ``fluidq`` is imported (this package imports no analysis).
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
    raise AttributeError(f"module 'fluidq.network' has no attribute {name!r}")
