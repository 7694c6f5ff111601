"""TTFT has one definition per result, chosen by a parameter (issue 14)."""
import pytest


def test_ttft_is_chosen_by_a_parameter_and_both_definitions_are_kept_apart():
    # issue 14: TTFT has one definition per result, chosen and stated: the first decode token (the
    # paper's) or the end of the prefill (what vLLM reports), one iteration apart
    import numpy as np

    import fluidq
    from fluidq.errors import ParameterError

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=10.0), prompt_tokens=100, output_tokens=50)
    r = fluidq.simulate(e, w, "sarathi", horizon_s=20.0, rng=1)
    dec, pre = r.latencies(), r.latencies(ttft="end_of_prefill")
    ok = np.isfinite(dec["ttft_s"])
    assert ok.any() and np.all(pre["ttft_s"][ok] < dec["ttft_s"][ok])  # the prefill ends an iteration earlier
    assert np.array_equal(pre["ttlt_s"], dec["ttlt_s"], equal_nan=True)
    assert np.array_equal(pre["ttft_s"], r.requests["prefill_done_s"] - r.requests["arrival_s"], equal_nan=True)
    with pytest.raises(ParameterError, match="ttft"):
        r.latencies(ttft="first_token")


def test_the_result_states_which_ttft_its_metrics_hold():
    # issue 14: the definition is stated in the result, and matches what the metrics measure
    import numpy as np

    import fluidq

    bt = fluidq.Staircase(c=0.01128, a=0.03547, b0=128)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=10.0), prompt_tokens=100, output_tokens=50)
    for emits, want in ((False, "first_decode"), (True, "end_of_prefill")):
        e = fluidq.Engine(batch_time=bt, b_max=512, prefill_emits_token=emits)
        r = fluidq.simulate(e, w, "sarathi", horizon_s=20.0, rng=1)
        s = fluidq.simulate(e, w, "sarathi", horizon_s=20.0, rng=1, record="summary")
        assert r.ttft_definition == want == r.to_dict()["ttft_definition"] == s.to_dict()["ttft_definition"]
        # (the streamed summary draws its own sample, the run with the first token at the prefill is summarised)
        assert (s.to_dict() == r.to_dict()) == emits
        lat = r.latencies(ttft=want)["ttft_s"]
        keep = r.requests["arrival_s"] >= r.warmup_s
        assert np.isclose(r.metrics["ttft_s"]["mean"], np.nanmean(lat[keep]))
