"""fluidq: queueing theory of LLM serving.

Maximum throughput, stability verdicts and stability regions for LLM inference engines, parallel
engines and networks of engines driven by AI agents.

The folder tree is the architecture:

* descriptions -- ``batchtime`` (t(b) models and fits), ``engine``, ``workload``, ``policies``,
  ``network``
* analyses -- ``capacity`` (closed forms), ``stability`` (verdicts), ``region`` (k_max convex
  hull), ``dtmc``, ``fluid``, ``sim`` (iteration-level simulator), ``validate``
* faces -- ``cli``, ``plotting``, ``report``, ``sweep``; ``profiles`` holds the built-in deployments

Heavy sub-packages are imported on first use (``fluidq.simulate`` imports the simulator then).
"""
from __future__ import annotations

import importlib

from ._version import __version__
from .batchtime import Affine, BatchTime, ContextAware, PiecewiseLinear, Staircase, Tabulated
from .capacity import CapacityResult, max_throughput
from .fluid import compile as _flow_compile  # noqa: F401  (registers Network.flow; see fluidq.network.model)
from .engine import Engine
from .errors import FluidqError
from .policies import (FCFS, VLLM, FasterTransformer, Orca, Sarathi, Scheduler, VLLMChunked,
                       check_work_conserving)
from .results import Status
from .stability import StabilityResult, check_stability
from .workload import (Empirical, Fixed, Gamma, Geometric, LogNormal, Periodic, Poisson, PoissonLength,
                       TraceArrivals, Workload)

# name -> module that defines it, imported lazily
_LAZY = {
    "fit_batch_time": "fluidq.batchtime.fit",
    "load_profile": "fluidq.profiles",
    "list_profiles": "fluidq.profiles",
    "simulate": "fluidq.sim",
    "replicate": "fluidq.stability.simulation",
    "find_threshold": "fluidq.stability.simulation",
    "build_dtmc": "fluidq.dtmc",
    "symbolic_dtmc": "fluidq.dtmc",
    "stability_threshold": "fluidq.dtmc",
    "stability_region": "fluidq.region",
    "region_mix": "fluidq.region",
    "policy_region": "fluidq.region",
    "simulated_region": "fluidq.region",
    "RegionAware": "fluidq.policies.region_aware",
    "Network": "fluidq.network",
    "fluid_stability": "fluidq.stability.fluid",
    "simulate_network": "fluidq.sim.network",
    "validate": "fluidq.validate",
    "sweep": "fluidq.sweep",
    "SJF": "fluidq.policies.latency",
    "SRPT": "fluidq.policies.latency",
    "LAS": "fluidq.policies.latency",
    "PARS": "fluidq.policies.latency",
    "GammaBoost": "fluidq.policies.latency",
    "MemGuard": "fluidq.policies.latency",
    "GammaAda": "fluidq.policies.latency",
    "Unified": "fluidq.policies.unified",
    "UniBoost": "fluidq.policies.unified",
    "LengthRanker": "fluidq.predict",
}

__all__ = ["__version__", "Affine", "BatchTime", "ContextAware", "PiecewiseLinear", "Staircase", "Tabulated",
           "CapacityResult", "max_throughput", "Engine", "FluidqError", "FCFS", "VLLM", "FasterTransformer",
           "Orca", "Sarathi", "Scheduler", "VLLMChunked", "check_work_conserving", "Status", "StabilityResult",
           "check_stability", "Empirical", "Fixed", "Gamma", "Geometric", "LogNormal", "Periodic", "Poisson",
           "PoissonLength", "TraceArrivals", "Workload", *_LAZY]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'fluidq' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value
