"""fluidq.latency.compare_orderings: common random numbers, result faces, bad input."""
import json

import numpy as np
import pytest

import fluidq
from fluidq.errors import FluidqError, ParameterError
from fluidq.latency import METRICS, compare_orderings, reasoning_workload, standard_policies

ENG = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=20_000)
W = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=fluidq.Geometric(mean_tokens=80),
                    output_tokens=fluidq.Geometric(mean_tokens=60))


def test_same_requests_for_every_policy_and_faces(tmp_path):
    pols = {"a": fluidq.Sarathi(), "b": fluidq.Sarathi()}       # identical policies on common requests
    res = compare_orderings(ENG, W, pols, loads=(0.5, 0.8), horizon_s=40, n_replications=2, rng=3)
    for m in METRICS:
        np.testing.assert_equal(res.values["a"][m], res.values["b"][m])   # NaN == NaN here
    assert res.ratio("latency_per_token_mean_s", "b", "a") == pytest.approx(1.0)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["loads"] == [0.5, 0.8] and set(d["values"]) == {"a", "b"}
    assert "| a |" in res.table(0)
    assert res.plot(path=tmp_path / "p.png").endswith("p.png")


def test_standard_policies_and_reasoning_workload():
    rw = reasoning_workload(2.0)
    assert rw.output_tokens.mean > rw.prompt_tokens.mean
    s = rw.output_tokens.sample(np.random.default_rng(0), 20000)
    assert s.max() <= 8192 and np.percentile(s, 99) > 5 * np.median(s)    # heavy tail
    pols = standard_policies(ENG, W)
    assert list(pols) == ["fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost"]
    with pytest.raises(FluidqError):
        standard_policies(ENG, W, keys=["nope"])
    with pytest.raises(ParameterError):
        standard_policies(ENG, None, keys=["pars"])


def test_bad_input():
    with pytest.raises(ParameterError):
        compare_orderings(ENG, W, ["fcfs"], loads=())
    with pytest.raises(ParameterError):     # loads above 2 run since 2026-12-07 (test_loads_above_two); 0 does not
        compare_orderings(ENG, W, ["fcfs"], loads=(0.0,))
    with pytest.raises(ParameterError):
        compare_orderings(ENG, "w", ["fcfs"])
    with pytest.raises(ParameterError):
        compare_orderings(ENG, W, ["fcfs"], warmup_frac=1.0)


def test_table_states_the_ttft_definition_and_names_the_horizon_as_asked():
    # issue 17: tables did not say which first token TTFT counts; the CLI's notes named horizon_s
    res = compare_orderings(ENG, W, ["fcfs"], loads=(1.5,), horizon_s=10, n_replications=1, rng=1)
    t = res.table(0, horizon_name="--horizon")
    assert "first *decode* token" in t and "vLLM" in t
    assert "--horizon" in t and "horizon_s" not in t, t
    assert "horizon_s" in res.table(0)  # the API's own name by default
    assert "nan" not in t.lower().replace("finished", "")
    no_ttft = res.table(0, metrics=("ttlt_p90_s",))
    assert "TTFT" not in no_ttft


def test_plot_default_axis_names_the_load_basis():
    """The loads are fractions of the load basis lambda* (``inputs``), not of b_max/t(b_max) without the cache: the
    default axis label says which basis and its rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fluidq.plotting.latency import plot_latency_vs_load

    res = compare_orderings(ENG, W, ["fcfs"], loads=(0.5,), horizon_s=5, n_replications=2, rng=1)
    fig, ax = plt.subplots()
    plot_latency_vs_load(res, ax=ax)
    label = ax.get_xlabel()
    plt.close(fig)
    assert "load basis" in label and res.inputs["load_basis"] in label
    assert f"{res.inputs['capacity_requests_per_s']:.4g} req/s" in label
    assert "without the KV cache" not in label
