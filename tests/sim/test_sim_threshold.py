"""find_threshold: brackets Theorem 2's lambda* for a work-conserving policy, a lower one for FT."""
import math

import pytest

from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.errors import ParameterError
from fluidq.sim import find_threshold

E = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64)
W = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=20, output_tokens=15)


def test_sarathi_bracket_contains_lambda_star():
    r = find_threshold(E, W, "sarathi", rng=1, horizon_s=100.0, n_replications=6, rel_tol=0.05)
    lam = r.fluid_rate_per_s
    # the bracket is for the rate where the slope crosses 1 % of the load, i.e. lambda*/(1 - 0.01)
    assert r.low_rate_per_s <= lam / 0.99 * 1.001 and r.high_rate_per_s >= lam * 0.999, r.reason
    assert r.low_rate_per_s > 0 and math.isfinite(r.high_rate_per_s)
    assert r.low_rate_per_s <= r.arrival_rate_per_s <= r.high_rate_per_s
    assert 0 < r.confidence < 1 and r.status in ("resolved", "inconclusive")
    d = r.to_dict()
    assert d["arrival_rate_per_s"] == pytest.approx(0.5 * (d["low_rate_per_s"] + d["high_rate_per_s"]))
    # an inconclusive rate is retried at the horizon the growth test asks for (2 to 8 times as long)
    for a, b in zip(r.steps, r.steps[1:]):
        if a["verdict"] == "inconclusive" and b["rate_per_s"] == a["rate_per_s"]:
            assert 2.0 <= b["horizon_s"] / a["horizon_s"] <= 8.0


def test_fastertransformer_threshold_is_far_below_lambda_star(tmp_path):
    r = find_threshold(E, W, "fastertransformer", rng=2, horizon_s=100.0, n_replications=6)
    assert math.isfinite(r.high_rate_per_s) and r.high_rate_per_s < 0.6 * r.fluid_rate_per_s, r.reason
    assert r.plot(path=tmp_path / "th.png").endswith("th.png")


def test_bad_brackets():
    with pytest.raises(ParameterError, match="low_rate_per_s"):
        find_threshold(E, W, "sarathi", low_rate_per_s=5.0, high_rate_per_s=4.0)
    with pytest.raises(ParameterError, match="confidence"):
        find_threshold(E, W, "sarathi", confidence=0.0)


@pytest.mark.parametrize("fn", ["replicate", "find_threshold"])
@pytest.mark.parametrize("kw, name", [({"n_replications": 10 ** 7}, "n_replications"),
                                      ({"horizon_s": 1e13}, "horizon_s"),
                                      ({"horizon_s": 1e-9}, "horizon_s"),
                                      # 10,000 runs of 60,000 arrivals: 6e8 arrivals in all
                                      ({"n_replications": 10_000, "horizon_s": 3000.0}, "n_replications")])
def test_sizes_too_large_to_simulate_are_refused_before_work(fn, kw, name, monkeypatch):
    """As simulate() does (fluidq.sim.core.check_size): refused before any run, naming the parameter and the
    size -- the simulator raises if it is entered."""
    import fluidq.stability.simulation as ss
    from fluidq.sim import replicate

    def ran(*a, **k):
        raise AssertionError("a simulation ran before the size was refused")

    monkeypatch.setattr(ss, "simulate", ran)
    f = replicate if fn == "replicate" else find_threshold
    w = W.with_rate(20.0)
    with pytest.raises(ParameterError, match=name):
        f(E, w, "sarathi", rng=1, **kw)


def test_find_threshold_refuses_endless_steps_and_an_engine_that_serves_nothing():
    with pytest.raises(ParameterError, match="max_steps"):
        find_threshold(E, W, "sarathi", max_steps=10 ** 9)
    tiny = E.with_(kv_capacity_tokens=10)  # no 35-token request fits: capacity 0
    with pytest.raises(ParameterError, match="capacity for these lengths is 0"):
        find_threshold(tiny, W, "sarathi")


def test_find_threshold_stops_where_the_next_runs_would_be_too_large(monkeypatch):
    """A search that widens its bracket into runs too large to simulate stops there and says so (no error
    after the work already done): here every rate above 12 req/s is made "too large"."""
    import fluidq.sim.stability as st

    real_check = st.check_size

    def check(engine, workload, *a, **kw):
        if workload.arrival_rate_per_s > 12.0:
            raise ParameterError("horizon_s", a[0], "a smaller run (test)")
        return real_check(engine, workload, *a, **kw)

    monkeypatch.setattr(st, "check_size", check)
    r = find_threshold(E, W, "sarathi", rng=3, low_rate_per_s=5.0, high_rate_per_s=10.0, horizon_s=60.0,
                       n_replications=3, max_steps=6)
    assert r.status == "unbracketed" and not math.isfinite(r.high_rate_per_s)
    assert "the runs at 12.5 req/s were not made" in r.reason
    assert all(s["rate_per_s"] <= 12.0 for s in r.steps)


@pytest.mark.parametrize("kw", [{"horizon_s": 1e-5}, {"horizon_s": 5.0, "start_frac": 0.999999}])
def test_replicate_does_not_call_a_window_without_traffic_bounded(kw):
    # identical empty runs (1e-5 s) or a fit over a few microseconds were "bounded"
    from fluidq.sim import replicate

    r = replicate(E, W.with_rate(10.0), "sarathi", rng=1, **kw)
    assert r.verdict == "inconclusive" and "too little traffic to call the backlog bounded" in r.reason
