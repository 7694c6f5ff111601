"""compare_orderings and ``fluidq latency --loads`` take any finite load > 0 since 2026-12-07 (h-claims18).

Loads above 2 were refused outright from the first commit of compare_orderings (2026-12-02), a day before the size
check (``_check_comparison_size``, 2026-12-03) that refuses a run too large to simulate; since the load basis moved
to the KV rules' capacity (2026-12-07) the issue-18 experiments' arrival rates are loads of 2.3 and 6.8, so the cap
made them impossible to ask for.  The size check now bounds an overloaded run, counting a drained run's drain.
"""
import json
import math

import pytest

import fluidq
from fluidq.cli import main
from fluidq.dtmc.load_basis import load_basis
from fluidq.errors import ParameterError
from fluidq.latency import _check_comparison_size, compare_orderings

ENG = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=256, kv_capacity_tokens=20_000)
W = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=fluidq.Geometric(mean_tokens=80),
                    output_tokens=fluidq.Geometric(mean_tokens=60))


def test_a_load_of_2_3_runs_at_its_rate_and_drains():
    res = compare_orderings(ENG, W, ["fcfs", "sjf"], loads=(0.5, 2.3), horizon_s=20, n_replications=2, rng=1,
                            drain=True)
    lam = load_basis(ENG, W).requests_per_s
    assert res.loads == (0.5, 2.3)
    assert res.rates_per_s == (0.5 * lam, 2.3 * lam)
    for p in res.policies:                       # drained: every arrival finished, even in overload
        assert res.values[p]["finished_fraction"][1][0] == 1.0
    # an overload is an overload: FCFS waits longer per token at 2.3 than at 0.5
    assert res.values["fcfs"]["latency_per_token_mean_s"][1][0] > res.values["fcfs"]["latency_per_token_mean_s"][0][0]


def test_the_size_check_still_refuses_a_huge_overloaded_run_before_any_work():
    with pytest.raises(ParameterError) as exc:     # estimate ~1e11 queue reads: refused, naming the horizon
        compare_orderings(ENG, W, ["fcfs"], loads=(50.0,), horizon_s=3600, n_replications=2, rng=0)
    assert "horizon_s" in str(exc.value) and "queued requests" in str(exc.value)
    with pytest.raises(ParameterError) as exc:     # too many arrivals in one run
        compare_orderings(ENG, W, ["fcfs"], loads=(1e5,), horizon_s=3600, n_replications=1, rng=0)
    assert "arrivals" in str(exc.value)


def test_a_drained_overload_counts_its_drain():
    """The backlog left at the horizon is read until served: ``load`` times the arrival window's estimate.  Find
    a horizon whose window alone passes and whose drained run does not (derived from the check, not typed)."""
    lam = load_basis(ENG, W).requests_per_s
    load = 10.0
    w = W.with_rate(load * lam)
    h = 1.0
    while True:     # the largest power-of-two horizon whose undrained run passes
        try:
            _check_comparison_size(ENG, w, 2 * h, load, 1)
        except ParameterError:
            break
        h *= 2
    _check_comparison_size(ENG, w, h, load, 1, drain=False)
    h_drain = h
    while True:
        try:
            _check_comparison_size(ENG, w, h_drain, load, 1, drain=True)
            break
        except ParameterError as e:
            assert "drained" in str(e)
            h_drain /= 2
    # reads grow as horizon^2 and the drain multiplies them by the load: sqrt(10) ~ 3.2, so at least one halving
    assert h_drain < h
    with pytest.raises(ParameterError):
        compare_orderings(ENG, W, ["fcfs"], loads=(load,), horizon_s=h, n_replications=1, rng=0, drain=True)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, 1e12])
def test_bad_loads_are_refused_naming_loads(bad):
    with pytest.raises(ParameterError) as exc:
        compare_orderings(ENG, W, ["fcfs"], loads=(0.5, bad), horizon_s=5, n_replications=1)
    assert "loads" in str(exc.value)


def test_cli_runs_a_load_above_2_and_refuses_bad_ones(capsys):
    assert main(["latency", "--prompt", "50", "--output", "50", "--loads", "2.3", "--horizon", "10",
                 "--replications", "2", "--orderings", "fcfs", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["loads"] == [2.3]
    for bad in ("0", "-1", "inf", "nan"):
        assert main(["latency", "--loads", bad, "--horizon", "5", "--orderings", "fcfs"]) == 2
        assert "--loads" in capsys.readouterr().err


def test_cli_help_states_no_cap(capsys):
    with pytest.raises(SystemExit):
        main(["latency", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(0, 2]" not in out and "each finite and > 0" in out
