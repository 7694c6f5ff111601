"""replicate's verdicts and inputs.  A short run of a stable engine is still filling when its fitted window opens: the number in system
rises to its level whatever the load, so `replicate` must not read that rise as growth (a new user's
`fluidq simulate --load 0.5 --horizon 10 --replications 2` said GROWING).  An engine that is truly
overloaded keeps its verdict."""
from __future__ import annotations

import numpy as np

from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.stability.simulation import replicate

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)
ENGINE = Engine(batch_time=PAPER, b_max=512)


def _workload(load):
    cap = 512 / float(np.asarray(PAPER(np.array([512.0])))[0])  # Theorem 2: b_max / t(b_max) tokens/s
    return Workload(arrival=Poisson(rate_per_s=load * cap / 200.0), prompt_tokens=100, output_tokens=100)


def test_a_short_run_of_a_stable_engine_is_never_called_growing():
    # 101 iterations of about 0.06 s: a request stays some 6 s, so a 10 s run's window (from 5 s) opens
    # while the engine is still filling; before the rule 3 of these 12 seeds said "growing"
    verdicts, filling = [], 0
    for seed in range(12):
        r = replicate(ENGINE, _workload(0.5), "sarathi", n_replications=8, horizon_s=10.0, rng=seed,
                      keep_runs=False)
        verdicts.append(r.verdict)
        assert 101 * 0.0468 <= r.inputs["fill_s"] <= 101 * 0.0822  # between t(1) and t(256) per iteration
        filling += "still rises as the engine fills" in r.reason
    assert "growing" not in verdicts
    assert filling >= 1  # the rule fired: some seeds' slopes were significant growth, read as filling


def test_an_overloaded_engine_is_still_called_growing():
    r = replicate(ENGINE, _workload(1.3), "sarathi", n_replications=4, horizon_s=40.0, rng=1, keep_runs=False)
    assert r.verdict == "growing"
    assert r.inputs["fill_s"] < 20.0
    assert "engine fills" not in r.reason


def test_a_keyword_simulate_does_not_take_is_refused_by_name_before_any_run():
    import pytest

    from fluidq.errors import ParameterError

    with pytest.raises(ParameterError, match="keyword of fluidq.simulate") as err:
        replicate(ENGINE, _workload(0.5), "sarathi", n_replications=2, horizon_s=5.0, n=4)
    assert err.value.name == "n"
    r = replicate(ENGINE, _workload(0.5), "sarathi", n_replications=2, horizon_s=5.0, rng=1, method="generic")
    assert r.runs[0].method == "generic"
