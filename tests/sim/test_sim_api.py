"""simulate(): the result object, metrics, plots, bad input."""
import json
import math

import numpy as np
import pytest

import fluidq
from fluidq import Engine, Gamma, Geometric, Periodic, Poisson, Staircase, Workload
from fluidq.errors import FluidqError, ParameterError
from fluidq.policies import Batch
from fluidq.sim import PolicyError, SimResult, simulate

E = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
W = Workload(arrival=Poisson(rate_per_s=10.0), prompt_tokens=Geometric(mean_tokens=100),
             output_tokens=Geometric(mean_tokens=80))


def test_entry_point_and_columns():
    r = fluidq.simulate(E, W, "sarathi", horizon_s=60, rng=1)
    assert isinstance(r, SimResult)
    for k in ("arrival_s", "first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s", "prompt_tokens",
              "output_tokens", "preemptions"):
        assert r.requests[k].shape == (r.n_requests,)
        assert not r.requests[k].flags.writeable
    for k in ("t_s", "requests", "tokens"):
        assert r.backlog[k].shape == r.backlog["t_s"].shape
    assert np.all(np.diff(r.backlog["t_s"]) >= 0)
    unfinished = np.isnan(r.requests["finish_s"])
    assert unfinished.sum() == r.backlog["requests"][-1]
    assert r.throughput_requests_per_s == pytest.approx(r.n_finished / r.end_s)
    assert 0 < r.busy_fraction <= 1 and 0 <= r.mixed_batch_fraction <= 1


def test_metrics_match_their_definitions():
    r = simulate(E, W, "orca", horizon_s=60, rng=2, warmup_s=5)
    q = r.requests
    keep = np.isfinite(q["finish_s"]) & (q["arrival_s"] >= 5)
    ttlt = (q["finish_s"] - q["arrival_s"])[keep]
    m = r.metrics
    assert m["ttlt_s"]["mean"] == pytest.approx(ttlt.mean())
    assert m["ttlt_s"]["p90"] == pytest.approx(np.percentile(ttlt, 90))
    assert m["latency_per_token_s"]["mean"] == pytest.approx((ttlt / q["output_tokens"][keep]).mean())
    has_tok = np.isfinite(q["first_token_s"]) & (q["arrival_s"] >= 5)  # TTFT: every request with a first token
    ttft = (q["first_token_s"] - q["arrival_s"])[has_tok]
    assert m["ttft_s"]["p99"] == pytest.approx(np.percentile(ttft, 99))
    assert m["ttft_s"]["p50"] <= m["ttlt_s"]["p50"]
    json.dumps(r.to_dict())  # JSON-ready
    assert "requests" in r.to_dict(columns=True)


def test_arrival_processes_and_explicit_requests():
    for arr in (Periodic(rate_per_s=8.0), Gamma(rate_per_s=8.0, cv=3.0)):
        r = simulate(E, Workload(arrival=arr, prompt_tokens=50, output_tokens=50), "sarathi", horizon_s=30, rng=0)
        assert r.n_finished > 100
    tr = Workload.from_trace("azure-code")
    r = simulate(E, tr.with_rate(1.0), "sarathi", horizon_s=30, rng=0)
    assert r.n_requests > 10 and np.all(np.isin(r.requests["prompt_tokens"], tr.trace.prompt_tokens))
    explicit = {"arrival_s": [0.0, 0.1, 0.2], "prompt_tokens": [10, 20, 30], "output_tokens": [3, 2, 1]}
    r = simulate(E, explicit, "vllm", n_requests=3)
    assert r.n_finished == 3 and math.isnan(r.horizon_s or math.nan)


def test_plots(tmp_path):
    r = simulate(E, W, "sarathi", horizon_s=30, rng=1)
    assert r.plot(path=tmp_path / "b.png").endswith("b.png")
    assert r.plot(kind="latency", path=tmp_path / "l.png").endswith("l.png")
    ax = r.plot(kind="tokens")
    # one step line, the run's token backlog over time (held to the end of the run), labelled by policy
    (line,) = ax.get_lines()
    assert line.get_label() == "sarathi" and "token" in ax.get_ylabel().lower()
    assert np.array_equal(line.get_xdata(), np.append(r.backlog["t_s"], r.end_s))
    assert np.array_equal(line.get_ydata(), np.append(r.backlog["tokens"], r.backlog["tokens"][-1]))


def test_to_frame_needs_pandas():
    r = simulate(E, W, "sarathi", horizon_s=10, rng=1)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            r.to_frame()
    else:
        df = r.to_frame()
        assert len(df) == r.n_requests and "ttft_s" in df


def test_blocked_prompts_are_reported_not_hung():
    w = Workload(arrival=Poisson(rate_per_s=2.0), prompt_tokens=600, output_tokens=10)  # > b_max = 512
    r = simulate(E, w, "fastertransformer", horizon_s=20, rng=0)
    assert r.n_finished == 0 and r.blocked == r.n_requests
    r2 = simulate(E, w, fluidq.FasterTransformer(chunk_long_prompts=True), horizon_s=20, rng=0)
    assert r2.n_finished > 0 and r2.blocked == 0


def test_bad_input():
    with pytest.raises(ParameterError, match="horizon_s"):
        simulate(E, W, "sarathi")
    with pytest.raises(ParameterError, match="horizon_s"):
        simulate(E, W, "sarathi", horizon_s=-1)
    with pytest.raises(ParameterError, match="n_requests"):
        simulate(E, W, "sarathi", n_requests=0)
    with pytest.raises(ParameterError, match="engine"):
        simulate("engine", W, "sarathi", horizon_s=1)
    with pytest.raises(ParameterError, match="workload"):
        simulate(E, [1, 2, 3], "sarathi", horizon_s=1)
    with pytest.raises(ParameterError, match="method"):
        simulate(E, W, "sarathi", horizon_s=1, method="magic")
    with pytest.raises(FluidqError, match="policy"):
        simulate(E, W, "nope", horizon_s=1)
    with pytest.raises(ParameterError, match="arrival_s"):
        simulate(E, {"arrival_s": [1.0, 0.5], "prompt_tokens": [1, 1], "output_tokens": [1, 1]}, "sarathi", n_requests=2)

    class Cheater:
        name = "cheater"

        def select(self, view):
            return Batch(decode=tuple(r.rid for r in view.requests))  # decodes during prefill: (6a)

    with pytest.raises(PolicyError, match="6a"):
        simulate(E, W, Cheater(), horizon_s=5, rng=0)


@pytest.mark.parametrize("bad", [-1, np.int64(-5), True, 1.5, "7", [1, 2]])
def test_bad_rng_names_rng(bad):
    from fluidq.sim import find_threshold, replicate

    with pytest.raises(ParameterError, match="rng"):
        simulate(E, W, "sarathi", horizon_s=1, rng=bad)
    with pytest.raises(ParameterError, match="rng"):
        replicate(E, W, "sarathi", n_replications=2, horizon_s=1, rng=bad)
    with pytest.raises(ParameterError, match="rng"):
        find_threshold(E, W, "sarathi", n_replications=2, horizon_s=1, rng=bad)


def test_rng_forms_accepted_and_reproducible():
    from fluidq.sim import replicate

    a = simulate(E, W, "sarathi", horizon_s=5, rng=np.int64(3)).requests["arrival_s"]
    b = simulate(E, W, "sarathi", horizon_s=5, rng=np.random.SeedSequence(3)).requests["arrival_s"]
    c = simulate(E, W, "sarathi", horizon_s=5, rng=np.random.default_rng(3)).requests["arrival_s"]
    assert np.array_equal(a, b) and np.array_equal(a, c)
    r1 = replicate(E, W, "sarathi", n_replications=2, horizon_s=5, rng=np.random.default_rng(9))
    r2 = replicate(E, W, "sarathi", n_replications=2, horizon_s=5, rng=np.random.default_rng(9))
    assert np.array_equal(r1.slopes_tokens_per_s, r2.slopes_tokens_per_s)


def test_warmup_must_leave_requests_in_the_metrics():
    from fluidq.sim import replicate

    with pytest.raises(ParameterError, match="warmup_s"):
        simulate(E, W, "sarathi", horizon_s=1, rng=0, warmup_s=5)
    with pytest.raises(ParameterError, match="warmup_s"):
        simulate(E, W, "sarathi", horizon_s=5, rng=0, warmup_s=5)
    with pytest.raises(ParameterError, match="warmup_s"):
        replicate(E, W, "sarathi", n_replications=2, horizon_s=1, rng=0, warmup_s=2)
    with pytest.raises(ParameterError, match="warmup_s"):  # no horizon: beyond the last arrival
        simulate(E, W, "sarathi", n_requests=5, rng=0, warmup_s=1e6)
    r = simulate(E, W, "sarathi", horizon_s=10, rng=0, warmup_s=4)
    assert r.metrics["ttlt_s"]["n"] > 0 and np.isfinite(r.metrics["ttlt_s"]["mean"])
