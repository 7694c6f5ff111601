"""The documented import paths of moved modules still work, and are the moved modules themselves
(one object: a monkeypatch through the old path changes what the new path runs)."""
import importlib

import pytest

import fluidq

MOVED = [("fluidq.network.stability", "fluidq.stability.network"),
         ("fluidq.fluid.stability", "fluidq.stability.fluid"),
         ("fluidq.sim.stability", "fluidq.stability.simulation"),
         ("fluidq.region.region", "fluidq.capacity.region"),
         ("fluidq.region.mix", "fluidq.capacity.mix"),
         ("fluidq.region.shapes", "fluidq.capacity.shapes"),
         ("fluidq.region.policy", "fluidq.stability.policy_region"),
         ("fluidq.region.simulated", "fluidq.stability.simulated_region"),
         ("fluidq.network.sim", "fluidq.sim.network")]


@pytest.mark.parametrize("old, new", MOVED)
def test_old_module_path_is_the_new_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


def test_old_names_resolve_to_the_new_objects():
    from fluidq.fluid import fluid_stability
    from fluidq.network import NetworkStabilityResult, check_network_stability
    from fluidq.region import policy_region, simulated_region, stability_region
    from fluidq.region.capacity import fixed_prompt, region_capacity, region_verdict
    from fluidq.sim import ReplicationResult, ThresholdResult, find_threshold, replicate
    from fluidq.stability import saturated_rate

    import fluidq.capacity.region_capacity as rc
    import fluidq.dtmc.saturation as sat
    import fluidq.stability.fluid as sf
    import fluidq.stability.network as sn
    import fluidq.stability.region as sr
    import fluidq.stability.simulation as ss

    assert (check_network_stability, NetworkStabilityResult) == (sn.check_network_stability, sn.NetworkStabilityResult)
    assert fluid_stability is sf.fluid_stability is fluidq.fluid_stability
    assert (replicate, find_threshold, ReplicationResult) == (ss.replicate, ss.find_threshold, ss.ReplicationResult)
    assert ThresholdResult is fluidq.results.ThresholdResult
    assert (fixed_prompt, region_capacity, region_verdict) == (rc.fixed_prompt, rc.region_capacity, sr.region_verdict)
    assert saturated_rate is sat.saturated_rate
    assert stability_region is fluidq.stability_region and policy_region is fluidq.policy_region
    assert simulated_region is fluidq.simulated_region


def test_names_that_left_the_analyses_for_the_descriptions():
    # facts of the description (a scheduler's budgets, a network's capacity caveats) and the network
    # simulator: the old import paths give the very objects of the new ones
    import fluidq.capacity.budgets as old_budgets
    import fluidq.engine.budgets as budgets
    import fluidq.network as net
    import fluidq.sim.network as sn
    from fluidq.capacity.network import capacity_caveats
    from fluidq.network.caveats import capacity_caveats as new_caveats
    from fluidq.network.sim import NetworkSimResult, simulate_network

    for name in budgets.__all__:
        assert getattr(old_budgets, name) is getattr(budgets, name)
    assert capacity_caveats is new_caveats
    assert simulate_network is sn.simulate_network is net.simulate_network is fluidq.simulate_network
    assert NetworkSimResult is sn.NetworkSimResult is net.NetworkSimResult


def test_every_public_name_resolves():
    missing = [n for n in fluidq.__all__ if getattr(fluidq, n, None) is None]
    assert missing == []
