"""Iteration-level simulation of LLM engines.

``simulate(engine, workload, policy, horizon_s=..., rng=...)``  one run (:class:`SimResult`)
``replicate(engine, workload, policy, n_replications=..., ...)``  seeded replications, the backlog
growth slope with a confidence interval and a verdict against the fluid prediction
(:class:`ReplicationResult`)
``find_threshold(engine, workload_shape, policy, ...)``  the empirical stability threshold in the
arrival rate, bracketed by simulation (:class:`ThresholdResult`)
``simulate_network(network, horizon_s=..., rng=...)``  one run of a network of engines
(:mod:`fluidq.sim.network`, :class:`NetworkSimResult`); ``replicate_network`` for seeded replications

Two kernels: an event-skipping one for the built-in schedulers with FCFS order (cost grows with
events, not with iterations or queue length) and a generic one that calls ``policy.select(view)``
every iteration and models KV-cache memory.  They agree exactly where both apply.
"""
from .core import PolicyError, fast_path_applies, simulate
from .network import NetworkSimResult, replicate_network, simulate_network
from .result import METRIC_NAMES, SimResult, SimSummary
# replicate, find_threshold, ReplicationResult, ThresholdResult (and fluidq.sim.stability) are the
# simulation verdicts of fluidq.stability.simulation, which registers them here

__all__ = ["METRIC_NAMES", "NetworkSimResult", "PolicyError", "ReplicationResult", "SimResult", "SimSummary",
           "ThresholdResult", "fast_path_applies",
           "find_threshold", "replicate", "replicate_network", "simulate", "simulate_network"]
