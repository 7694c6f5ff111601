"""fluidq: queueing theory of LLM serving.

Maximum throughput, stability verdicts and stability regions for LLM inference engines, parallel
engines and networks of engines driven by AI agents.

The folder tree is the architecture:

* descriptions -- ``batchtime`` (t(b) models and fits), ``engine``, ``workload``, ``policies``,
  ``network``
* analyses -- ``capacity`` (closed forms), ``stability`` (verdicts), ``region`` (k_max convex
  hull), ``dtmc``, ``fluid``, ``sim`` (iteration-level simulator), ``validate``
* faces -- ``cli``, ``plotting``, ``report``, ``sweep``; ``profiles`` holds the built-in deployments

Heavy sub-packages are imported on first use (``fluidq.simulate`` imports the simulator then;
``fluidq.sim``, ``fluidq.fluid.path`` and the fluid and simulation verdicts likewise), so that ``import
fluidq`` and the command line's start-up load only what they use.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# ---- the documented old paths, wired lazily --------------------------------------------------------------
# The analyses register their old paths on the packages below them when imported: the simulation verdicts
# (fluidq.stability.simulation) on fluidq.sim (``fluidq.sim.replicate``, the module ``fluidq.sim.stability``),
# the fluid and network verdicts on fluidq.fluid and fluidq.network, the network simulator (fluidq.sim.network)
# on fluidq.network; fluidq.fluid.compile and fluidq.capacity.network register the methods of a Network.
# Importing them all with ``fluidq`` loaded the simulator, its kernel and the network description for every
# ``fluidq check`` (issue 15: start-up).  This package, above every layer, imports each when it is first
# needed instead: on a name read from the package (its module ``__getattr__``, chained with the package's
# own), on the old module path (the finder below), or right after the module it serves (fluidq.sim gets its
# verdict names, fluidq.network.model its analyses, as soon as it is imported, as before).
# Known limit (second reading, 2026-12-06): several threads touching these lazy paths for the first time at
# once can meet Python's import-lock deadlock detection (_DeadlockError, 3 in 102 runs with four threads; never
# with two); import fluidq.sim and fluidq.network in the main thread before starting such threads.  A lock of
# our own around these imports could turn that detected error into an undetected hang, so there is none.

#: package -> {old name: the module that registers it there}
_OLD_NAMES = {
    "fluidq.sim": dict.fromkeys(("replicate", "find_threshold", "ReplicationResult", "ThresholdResult",
                                 "stability"), "fluidq.stability.simulation"),
    "fluidq.fluid": dict.fromkeys(("fluid_stability", "FluidStabilityResult", "backlog_slope",
                                   "lyapunov_certificate", "stability"), "fluidq.stability.fluid"),
    "fluidq.network": {**dict.fromkeys(("simulate_network", "NetworkSimResult", "sim"), "fluidq.sim.network"),
                       **dict.fromkeys(("check_network_stability", "NetworkStabilityResult", "stability"),
                                       "fluidq.stability.network")},
}
#: old module path -> the module it is
_OLD_MODULES = {"fluidq.sim.stability": "fluidq.stability.simulation",
                "fluidq.fluid.stability": "fluidq.stability.fluid",
                "fluidq.network.sim": "fluidq.sim.network",
                "fluidq.network.stability": "fluidq.stability.network"}
#: module -> the modules imported right after it: the sim package's verdict names; the analyses behind the
#: methods of a Network (``flow``, ``loads``, ...: fluidq.network.model's ``register_analysis``), there
#: before any network is made
_IMPORTED_WITH = {"fluidq.sim": ("fluidq.stability.simulation",),
                  "fluidq.network.model": ("fluidq.fluid.compile", "fluidq.capacity.network")}


def _wire_names(module) -> None:
    """Give ``module`` (a package of ``_OLD_NAMES``) a ``__getattr__`` that imports the module registering a
    missing old name, then returns it (the package's own ``__getattr__``, if any, answers the rest)."""
    names = _OLD_NAMES[module.__name__]
    own = module.__dict__.get("__getattr__")
    if getattr(own, "_fluidq_old_names", False):  # wired already
        return

    def __getattr__(name):
        if name in names:
            importlib.import_module(names[name])  # registers the name on ``module``
            if name in module.__dict__:
                return module.__dict__[name]
        if own is not None:
            return own(name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    __getattr__._fluidq_old_names = True
    module.__getattr__ = __getattr__
    own_dir = module.__dict__.get("__dir__")

    def __dir__():  # the lazy old names too (tab completion, dir())
        base = own_dir() if own_dir is not None else module.__dict__
        return sorted({*base, *names, *getattr(module, "__all__", ())})

    module.__dir__ = __dir__


def _wire(module) -> None:
    """What a module of ``_OLD_NAMES`` / ``_IMPORTED_WITH`` gets once it is executed."""
    if module.__name__ in _OLD_NAMES:
        _wire_names(module)
    for other in _IMPORTED_WITH.get(module.__name__, ()):
        importlib.import_module(other)


class _AliasLoader(importlib.abc.Loader):
    """Loads an old module path as the module it names (one object, as the registration made it)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):  # the import system gave it the old path's spec: it keeps its own
        module.__spec__ = self._spec


class _WiringLoader(importlib.abc.Loader):
    """A package's own loader, then the module of ``_IMPORTED_WITH`` and the ``__getattr__`` of ``_OLD_NAMES``."""

    def __init__(self, loader, name: str):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _wire(module)

    def __getattr__(self, name):  # get_source, get_resource_reader, is_package, ...: the real loader's
        return getattr(self._loader, name)


class _OldPathFinder(importlib.abc.MetaPathFinder):
    """Finds the old module paths (``_OLD_MODULES``) and wires the packages of ``_OLD_NAMES`` when imported."""

    def find_spec(self, name, path=None, target=None):
        if name in _OLD_MODULES:
            return importlib.util.spec_from_loader(name, _AliasLoader(_OLD_MODULES[name]))
        if name not in _OLD_NAMES and name not in _IMPORTED_WITH:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _WiringLoader(spec.loader, name)
                return spec
        return None


if not any(type(f).__name__ == "_OldPathFinder" and type(f).__module__ == __name__ for f in sys.meta_path):
    sys.meta_path.insert(0, _OldPathFinder())

from ._version import __version__
from .batchtime import Affine, BatchTime, ContextAware, PiecewiseLinear, Staircase, Tabulated
from .capacity import CapacityResult, max_throughput
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
        if name.isidentifier() and not name.startswith("_") and \
                importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f"{__name__}.{name}")  # a sub-package not imported yet (fluidq.sim)
        raise AttributeError(f"module 'fluidq' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__():  # the lazy names and the sub-packages not imported yet (dir(fluidq), tab completion)
    import pkgutil

    subs = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return sorted({*globals(), *__all__, *subs})


for _name in (*_OLD_NAMES, *_IMPORTED_WITH):  # loaded before the finder was there (importlib.reload(fluidq))
    if _name in sys.modules:
        _wire(sys.modules[_name])
