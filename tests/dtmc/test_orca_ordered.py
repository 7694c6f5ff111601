"""Orca with finite-support outputs: the chain with the decoders' remaining tokens in FCFS order."""
from math import comb

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
    ch = build_ordered_dtmc(tiny_engine, w, max_prefill=2, max_decode=2)
    assert ch.n_states == n_ordered_states(2, 2, len(ch.inputs["sequences"]))
    # only reachable sequences: fewer than all tuples over 1..5 of length <= 2 (31)
    assert len(ch.inputs["sequences"]) < sum(5 ** n for n in range(3))
    with pytest.raises(ParameterError, match="reachable decode sequences"):
        build_ordered_dtmc(tiny_engine, w, max_prefill=10, max_decode=8, max_states=2_000)
    with pytest.raises(ParameterError, match="prefill-priority"):
        build_ordered_dtmc(tiny_engine, w, "sarathi")
    with pytest.raises(ParameterError, match="Fixed prompt"):
        build_ordered_dtmc(tiny_engine, wl(3.0, E(values=(1, 2)), E(values=(1, 2))))
    with pytest.raises(ParameterError, match="ordered output tuples"):  # 2^16 entrant orders per batch
        build_ordered_dtmc(fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.03, b0=4), b_max=16),
                           wl(3.0, 1, E(values=(1, 2))), max_prefill=16)
    rows = np.asarray(build_ordered_dtmc(tiny_engine, w, max_prefill=2, max_decode=2).P.sum(axis=1)).ravel()
    assert np.allclose(rows, 1.0)


@pytest.mark.parametrize("v_d,md", [(2, 5), (3, 7), (4, 4)])
def test_fixed_outputs_reach_exactly_the_nondecreasing_sequences(tiny_engine, v_d, md):
    # FCFS serves the oldest first, so remaining tokens never decrease from oldest to newest: the
    # reachable sequences are the C(md + v_d, v_d) non-decreasing ones, not the v_d^md tuples
    ch = build_ordered_dtmc(tiny_engine, wl(3.0, 2, v_d), max_prefill=4, max_decode=md)
    seqs = ch.inputs["sequences"]
    assert len(seqs) == comb(md + v_d, v_d)
    assert all(list(s) == sorted(s) for s in seqs)
    assert len(set(seqs)) == len(seqs)


def test_build_dtmc_dispatches_orca_to_the_ordered_chain(tiny_engine):
    w = wl(4.0, 2, 3)
    ch = fluidq.build_dtmc(tiny_engine, w, "orca", max_prefill=12, max_decode=6)
    assert "seq" in ch.space.names
    direct = build_ordered_dtmc(tiny_engine, w, max_prefill=12, max_decode=6)
    assert abs(ch.P - direct.P).max() == 0
    # Fixed outputs without max_decode: the adaptive chain, grown until the boundary mass is below tolerance
    auto = fluidq.build_dtmc(tiny_engine, w, "orca", max_prefill=12, tolerance=1e-8)
    assert "decode_counts" in auto.inputs and auto.caps["max_decode"] > tiny_engine.b_max
    assert auto.solve().lost_mass <= 1e-8
    small = fluidq.build_dtmc(tiny_engine, w, "orca", max_prefill=12, max_states=600)
    assert small.n_states <= 600 and small.inputs["adaptive"][-1].startswith("stopped at max_states=600 ")
    assert small.solve().status.value == "inaccurate"
    # Empirical outputs keep the chain over all reachable sequences, max_decode up to the budget
    emp = fluidq.build_dtmc(tiny_engine, wl(4.0, 2, E(values=(1, 3))), "orca", max_prefill=12)
    assert emp.caps["max_decode"] == tiny_engine.b_max and "sequences" in emp.inputs


def _counts(seq, vd):
    c = [0] * vd
    for r in seq:
        c[r - 1] += 1
    return tuple(c)


def test_adaptive_rows_are_the_rows_of_the_chain_over_all_sequences(tiny_engine):
    # every adaptive state whose moves all stay in its set has exactly the transition row of the same state in
    # the chain over all reachable sequences (the box), where that row stays in the box too
    w = wl(3.0, 2, 3)
    box = build_ordered_dtmc(tiny_engine, w, max_prefill=10, max_decode=8)
    ada = build_ordered_dtmc(tiny_engine, w, max_prefill=10, max_decode=None, tolerance=1e-9)
    assert ada.solve().lost_mass <= 1e-9
    bseq = [_counts(s, 3) for s in box.inputs["sequences"]]
    aseq = ada.inputs["decode_counts"]
    bkey = {(int(n), bseq[int(s)], int(j)): i
            for i, (n, s, j) in enumerate(zip(box.space["n_p"], box.space["seq"], box.space["j"]))}
    akey = [(int(n), aseq[int(s)], int(j)) for n, s, j in zip(ada.space["n_p"], ada.space["seq"], ada.space["j"])]
    Pa, Pb = ada.P.tocsr(), box.P.tocsr()
    compared = 0
    for i, k in enumerate(akey):
        if ada.lost[i] > 0 or k not in bkey or box.lost[bkey[k]] > 0:
            continue
        ra, rb = Pa.getrow(i), Pb.getrow(bkey[k])
        mine = {akey[c]: v for c, v in zip(ra.indices, ra.data)}
        theirs = {}
        for c, v in zip(rb.indices, rb.data):
            n, s, j = int(box.space["n_p"][c]), bseq[int(box.space["seq"][c])], int(box.space["j"][c])
            theirs[(n, s, j)] = theirs.get((n, s, j), 0.0) + v
        assert mine.keys() == theirs.keys()
        assert max(abs(mine[x] - theirs[x]) for x in mine) < 1e-13
        for attr in ("sojourn_s", "batch_tokens", "completions", "residents", "unprocessed_tokens"):
            assert getattr(ada, attr)[i] == pytest.approx(getattr(box, attr)[bkey[k]], abs=1e-12)
        compared += 1
    assert compared > 200
    a, b = ada.solve(), box.solve()
    assert b.lost_mass < 1e-6  # the box drops decoders beyond 8
    assert a.mean_requests == pytest.approx(b.mean_requests, rel=1e-5)


def test_keyed_space_finds_its_states(tiny_engine):
    ch = build_ordered_dtmc(tiny_engine, wl(3.0, 2, 3), max_prefill=10, max_decode=None, tolerance=1e-6)
    sp_ = ch.space
    idx = sp_.index(sp_["n_p"], sp_["seq"], sp_["j"])
    assert np.array_equal(idx, np.arange(ch.n_states))
    assert sp_.find(n_p=0, seq=0, j=0) == 0  # the empty state first (the solver's reference)
    assert np.all(np.diff(sp_["n_p"]) >= 0)  # ordered by level for the level solver
    with pytest.raises(KeyError):
        sp_.find(n_p=10, seq=0, j=1)
    assert np.allclose(np.asarray(ch.P.sum(axis=1)).ravel(), 1.0)


@pytest.mark.parametrize("rate,output", [(4.0, 3), (4.0, E(values=(1, 4), weights=(3, 1)))])
def test_dispatched_chain_agrees_with_simulation(tiny_engine, rate, output):
    # stationary time-average requests in system against seeded replications of fluidq.simulate
    w = wl(rate, 2, output)
    r = fluidq.build_dtmc(tiny_engine, w, "orca", max_prefill=30).solve()
    assert r.status.value == "stable", r.reason
    assert r.throughput_requests_per_s == pytest.approx(rate, rel=1e-4)
    rep = fluidq.replicate(tiny_engine, w, "orca", n_replications=10, horizon_s=800.0, rng=20261203,
                           confidence=0.99, start_frac=0.1, keep_runs=False)
    lo, hi = rep.mean_requests_ci
    assert lo <= r.mean_requests <= hi, (r.mean_requests, rep.mean_requests_ci)


@pytest.mark.parametrize("load,v_d", [(0.5, 4), (0.6, 2), (0.65, 2)])
def test_adaptive_chain_on_the_papers_engine_agrees_with_simulation(load, v_d):
    # the paper's engine (b_max = 512) with 100-token prompts and Fixed outputs: the chain over all
    # reachable sequences has room for a few decoders only; the adaptive chain holds the mass within
    # 200,000 states, and its mean requests in system lies in the 99 % interval of seeded simulations
    # (8-13 s per case on the shared 2-vCPU VM)
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    rate = load * e.b_max / float(e.batch_time(e.b_max)) / (100 + v_d)
    w = wl(rate, 100, v_d)
    tol = 1e-4
    r = fluidq.build_dtmc(e, w, "orca", max_prefill=60, tolerance=tol).solve()  # at most 200,000 states
    assert r.status.value == "stable" and r.lost_mass <= tol, r.reason
    # a move out of the set drops its arrivals (or the whole engine): measured 0.1-0.3 % of the throughput
    assert r.throughput_requests_per_s == pytest.approx(rate, rel=5e-3)
    rep = fluidq.replicate(e, w, "orca", n_replications=8, horizon_s=400.0, rng=20261206, confidence=0.99,
                           start_frac=0.1, keep_runs=False)
    lo, hi = rep.mean_requests_ci
    assert lo <= r.mean_requests <= hi, (r.mean_requests, rep.mean_requests_ci)


def test_auto_caps_grows_the_adaptive_chain_and_announces_large_rounds():
    from fluidq.dtmc.sizing import ANNOUNCE_STATES, auto_caps

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = wl(0.5 * e.b_max / float(e.batch_time(e.b_max)) / 104, 100, 4)
    said = []
    chain, res, notes = auto_caps(e, w, "orca", tolerance=2e-4, max_states=150_000,
                                  announce=lambda caps, size: said.append((caps, size)))
    assert res.status.value == "stable" and res.lost_mass <= 2e-4 and chain.n_states <= 150_000
    assert said and all(s.states >= ANNOUNCE_STATES for _, s in said)  # announced before the build
    assert said[-1][1].states == chain.n_states and "adaptive ordered chain" in notes[0]
