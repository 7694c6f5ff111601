"""Networks of LLM engines: the description (topology, routes, routers, TOML case files).

``model``      Network, Station, Router, RequestClass, Hop, Choice, Fork, Join (networkx topology,
               traffic equations, per-engine load, bottleneck)
``toml``       TOML case files (``load_network``)
``caveats``    where a station's ``b_max / t(b_max)`` is only an upper bound (``capacity_caveats``)

The simulator lives in :mod:`fluidq.sim.network` and the verdicts in :mod:`fluidq.stability.network`;
``fluidq.network.simulate_network``, ``NetworkSimResult``, ``check_network_stability``,
``NetworkStabilityResult`` and the module paths ``fluidq.network.sim`` and ``fluidq.network.stability``
are aliases those modules register here when imported, which ``fluidq`` arranges on their first use (this
package imports no analysis).
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
    raise AttributeError(f"module 'fluidq.network' has no attribute {name!r}")
