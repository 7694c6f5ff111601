"""stability_threshold(method="dtmc") with small finite-support lengths (the exact finite chain)."""
import pytest

import fluidq
from fluidq.dtmc.threshold import ThresholdUnavailable

E = fluidq.Empirical


@pytest.fixture
def tiny_engine():
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=4), b_max=8)


def wl(prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=prompt, output_tokens=output)


def test_dtmc_threshold_with_fixed_lengths_brackets_the_renewal_one(tiny_engine):
    w = wl(2, fluidq.Fixed(n=2))
    exact = fluidq.stability_threshold(tiny_engine, w, "fastertransformer", "renewal").arrival_rate_per_s
    r = fluidq.stability_threshold(tiny_engine, w, "fastertransformer", "dtmc", max_prefill=20)
    assert r.method == "dtmc" and r.details["chain"] == "finite_support"
    assert r.lower_per_s <= exact <= r.upper_per_s
    assert 0 < r.lower_per_s <= r.arrival_rate_per_s <= r.upper_per_s


def test_vllm_dtmc_caps_decoders_at_the_budget(tiny_engine):
    w = wl(2, E(values=(1, 2, 3)))
    r = fluidq.stability_threshold(tiny_engine, w, "vllm", "dtmc", max_prefill=10, max_decode=400)
    assert r.details["caps"]["max_decode"] == tiny_engine.b_max
    exact = fluidq.stability_threshold(tiny_engine, w, "vllm", "renewal").arrival_rate_per_s
    assert r.lower_per_s <= exact <= r.upper_per_s


def test_auto_uses_the_finite_chain_where_renewal_does_not_apply(tiny_engine):
    # Empirical prompts and outputs: the count chain refuses them, the finite chain takes them
    w = wl(E(values=(1, 4)), E(values=(1, 2)))
    r = fluidq.stability_threshold(tiny_engine, w, "sarathi", "dtmc", max_prefill=10)
    assert r.method == "dtmc" and r.details["chain"] == "finite_support"
    assert r.lower_per_s > 0


def test_orca_uses_the_ordered_chain_and_large_finite_chains_are_refused(tiny_engine):
    r = fluidq.stability_threshold(tiny_engine, wl(2, E(values=(1, 2))), "orca", "dtmc")
    assert r.details["chain"] == "ordered" and r.details["caps"]["max_decode"] <= tiny_engine.b_max
    assert 0 < r.lower_per_s < r.arrival_rate_per_s == r.work_conserving_rate_per_s
    # the confirmed rate really is stable for the ordered chain at its caps
    ch = fluidq.build_dtmc(tiny_engine, wl(2, E(values=(1, 2))).with_rate(r.lower_per_s), "orca",
                           max_prefill=r.details["caps"]["max_prefill"], max_decode=r.details["caps"]["max_decode"])
    assert ch.solve().status.value == "stable"
    with pytest.raises(ThresholdUnavailable, match="oldest"):  # random prompts: no ordered chain
        fluidq.stability_threshold(tiny_engine, wl(E(values=(1, 3)), E(values=(1, 2))), "orca", "dtmc")
    big = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    with pytest.raises(ThresholdUnavailable, match="states"):
        fluidq.stability_threshold(big, wl(2, E(values=(1, 5, 9))), "sarathi", "dtmc")
