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
         ("fluidq.region.simulated", "fluidq.stability.simulated_region")]


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


def test_every_public_name_resolves():
    missing = [n for n in fluidq.__all__ if getattr(fluidq, n, None) is None]
    assert missing == []
