"""Discrete-time Markov chains of batched LLM engines and small networks of engines.

The chain is embedded at batch boundaries (Li, Dai, Peng, arXiv:2504.07347): arrivals during a
batch of ``b`` tokens are ``Poisson(lambda t(b))``; for memoryless lengths the state is a few
counts.  Modules:

``build``      one engine under a built-in scheduler -> :class:`EngineChain` (sparse ``P``)
``finite``     the same for finite-support lengths (``Fixed``/``Empirical``): counts of decoding
               requests per remaining output tokens; ``build_dtmc`` dispatches to it
``ordered``    Orca with finite-support outputs: the decoders' remaining tokens as an ordered
               tuple (FCFS gives a short decode budget to the oldest), reachable tuples only;
               ``build_dtmc`` dispatches Orca with Fixed prompts to it
``solve``      stationary distribution: reduced sparse solve, Arnoldi, power, ILU-preconditioned or
               Jacobi GMRES; chains of 100,000+ states keep P as two factors (``build.FactoredP``)
``result``     :class:`StationaryResult` (means, tails, throughput, boundary mass, status)
``drift``      numerical one-step drift of tokens / requests per state
``symbolic``   sympy drift and the Foster-Lyapunov certificate of Theorem 2
``symbolic_chain``  :func:`symbolic_dtmc`: build_dtmc's chain with exact entries in the arrival rate
               (sympy ``P``, substitution, exact stationary law, drift of a given ``V``, LaTeX)
``rules``      the batch rule as functions of the counts, shared by both builders
``threshold``  :func:`stability_threshold` for any scheduler (renewal, DTMC, simulation)
``vllm_queue`` vanilla vLLM's waiting-prompt chain with random prompt lengths (its renewal threshold)
``networks``   two parallel engines (random / JSQ, memoryless hops), LLM engines behind a random
               router (exact: the product of engine chains), DAG, fork-join, Rybko-Stolyar
``llm_network`` :func:`jsq_llm_engines`: JSQ over two Sarathi engines with prefill/decode batches
               (Erlang-k batch times, extrapolated in 1/k)
``llm_rybko``  :func:`llm_rybko_stolyar_chain`: the LLM Rybko-Stolyar network of two Sarathi engines
               (entering and exiting hop per engine, either priority order; Erlang-k, extrapolated)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on use (scipy.sparse and the builder: `fluidq check` needs only `threshold`)
    from .build import EngineChain, build_dtmc
    from .result import StationaryResult
    from .solve import stationary


def solve_dtmc(engine, workload, policy="sarathi", *, method="auto", **build_kw) -> StationaryResult:
    """``build_dtmc(engine, workload, policy, **build_kw).solve(method)`` in one call."""
    from .build import build_dtmc

    return build_dtmc(engine, workload, policy, **build_kw).solve(method)


def __getattr__(name):
    import importlib

    for mod in ("build", "result", "solve", "threshold", "drift", "symbolic", "symbolic_chain", "networks", "finite", "ordered", "llm_network", "llm_rybko"):
        m = importlib.import_module(f"{__name__}.{mod}")
        if hasattr(m, name):
            return getattr(m, name)
    raise AttributeError(f"module 'fluidq.dtmc' has no attribute {name!r}")


__all__ = [
    "EngineChain",
    "StationaryResult",
    "ThresholdResult",
    "build_dtmc",
    "jsq_llm_engines",
    "llm_rybko_stolyar_chain",
    "solve_dtmc",
    "stability_threshold",
    "stationary",
    "symbolic_dtmc",
]
