"""Orca with finite-support outputs: the chain with the decoders' remaining tokens in FCFS order."""
import numpy as np
import pytest

import fluidq
from fluidq.dtmc.finite import build_finite_dtmc
from fluidq.dtmc.ordered import build_ordered_dtmc, n_ordered_states
from fluidq.errors import ParameterError

E = fluidq.Empirical


@pytest.fixture
def tiny_engine():
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=4), b_max=8)


def wl(rate, prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def test_agrees_with_the_count_chain_when_the_budget_never_binds(tiny_engine):
    # max_prefill * v_p + max_decode <= b: every batch serves all decoders, counts suffice
    w = wl(3.0, 2, E(values=(1, 3), weights=(2, 1)))
    a = build_ordered_dtmc(tiny_engine, w, max_prefill=2, max_decode=4).solve()
    f = build_finite_dtmc(tiny_engine, w, "orca", max_prefill=2, max_decode=4).solve()
    assert a.mean_requests == pytest.approx(f.mean_requests, rel=1e-9)
    assert a.mean_decode == pytest.approx(f.mean_decode, rel=1e-9)
    assert a.lost_mass == pytest.approx(f.lost_mass, rel=1e-6)


def test_mean_requests_agree_with_simulation_where_the_budget_binds(tiny_engine):
    w = wl(6.0, 2, E(values=(1, 3)))
    with pytest.raises(ParameterError, match="oldest"):  # the count chain cannot express it
        build_finite_dtmc(tiny_engine, w, "orca", max_prefill=8, max_decode=6)
    ch = build_ordered_dtmc(tiny_engine, w, max_prefill=8, max_decode=6)
    r = ch.solve()
    assert r.pi.min() >= 0 and abs(r.pi.sum() - 1.0) < 1e-12
    assert r.lost_mass < 1e-3, r.reason
    rep = fluidq.replicate(tiny_engine, w, "orca", n_replications=16, horizon_s=2000.0, rng=20261202,
                           confidence=0.99, start_frac=0.1, keep_runs=False)
    lo, hi = rep.mean_requests_ci
    assert lo <= r.mean_requests <= hi, (r.mean_requests, rep.mean_requests_ci)


def test_state_count_and_refusals(tiny_engine):
    w = wl(3.0, 2, E(values=(1, 5)))
    assert build_ordered_dtmc(tiny_engine, w, max_prefill=2, max_decode=2).n_states == n_ordered_states(2, 2, 2, 5)
    n = n_ordered_states(10, 2, 8, 5)
    with pytest.raises(ParameterError, match=f"{n:,} states"):
        build_ordered_dtmc(tiny_engine, w, max_prefill=10, max_decode=8)
    with pytest.raises(ParameterError, match="prefill-priority"):
        build_ordered_dtmc(tiny_engine, w, "sarathi")
    with pytest.raises(ParameterError, match="Fixed prompt"):
        build_ordered_dtmc(tiny_engine, wl(3.0, E(values=(1, 2)), E(values=(1, 2))))
    rows = np.asarray(build_ordered_dtmc(tiny_engine, w, max_prefill=2, max_decode=2).P.sum(axis=1)).ravel()
    assert np.allclose(rows, 1.0)
