"""The automatic solve of a large engine chain works on the leading prefill levels that hold its mass, and
checks the answer on the whole chain (issue 19, scale: the solve's work grows with the states that carry
probability, not with the caps)."""
import numpy as np
import pytest
import scipy.sparse as sp

import fluidq
from fluidq.dtmc import build as build_mod
from fluidq.dtmc import solve as solve_mod
from fluidq.dtmc.result import chain_levels
from fluidq.dtmc.solve import stationary

G = fluidq.Geometric


@pytest.fixture
def small_levels(monkeypatch):
    """The thresholds of a large chain scaled down to a 15,000-state one (factored, as a large chain is)."""
    monkeypatch.setattr(build_mod, "FACTORED_MIN_STATES", 1)
    monkeypatch.setattr(solve_mod, "LEVELS_MIN_STATES", 1_000)
    monkeypatch.setattr(solve_mod, "LEVELS_FIRST", (5, 500))


def chain(rate, max_prefill=30, max_decode=30):
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=16), b_max=64)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=16, output_tokens=G(mean_tokens=8))
    return fluidq.build_dtmc(e, w, "sarathi", max_prefill=max_prefill, max_decode=max_decode)


def test_levels_are_the_first_state_of_each_prefill_count():
    ch = chain(5.0, max_prefill=4, max_decode=3)
    lv = chain_levels(ch)
    npf = ch.space["n_p"]
    assert lv[0] == 0 and lv[-1] == ch.n_states and lv.size == 4 + 2
    for level in range(5):
        assert np.all(npf[lv[level]:lv[level + 1]] == level)


@pytest.mark.parametrize("factored", [True, False])
def test_the_leading_block_is_a_stochastic_chain_on_its_states(factored, monkeypatch):
    monkeypatch.setattr(build_mod, "FACTORED_MIN_STATES", 1 if factored else 10**9)
    ch = chain(20.0, max_prefill=6, max_decode=8)
    P = ch.P.tocsr() if factored else ch.P
    m = int(chain_levels(ch)[3])
    op, d = solve_mod._leading_block(ch.P, m)
    dense = np.column_stack([op.matvec(np.eye(m)[:, i]) for i in range(m)]).T  # op is x -> P_m^T x
    assert np.allclose(dense.sum(axis=1), 1.0, atol=1e-12)
    off = P[:m][:, :m].toarray()
    np.fill_diagonal(off, 0.0)
    inner = dense.copy()
    np.fill_diagonal(inner, 0.0)
    assert np.allclose(inner, off, atol=1e-14)  # the moves inside the block are the chain's
    assert np.allclose(d, 1.0 - np.asarray(P[:m][:, :m].sum(axis=1)).ravel(), atol=1e-12)


@pytest.mark.parametrize("factored", [True, False])
def test_light_load_is_solved_on_a_leading_block_and_agrees_with_the_whole_chain(small_levels, factored,
                                                                                 monkeypatch):
    if not factored:  # the matrix itself (finite-support and ordered chains), sent to Arnoldi first
        monkeypatch.setattr(build_mod, "FACTORED_MIN_STATES", 10**9)
        monkeypatch.setattr(solve_mod, "ARNOLDI_FIRST_NNZ", 1)
    ch = chain(5.0)
    assert isinstance(ch.P, build_mod.FactoredP) == factored and ch.n_states == 31 * (30 * 16 + 1)
    lv = chain_levels(ch)
    sol = stationary(ch.P, levels=lv)
    assert sol.method == "arnoldi" and sol.converged and sol.residual <= 1e-10, sol.note
    assert "solved on levels 0.." in sol.note
    top = int(sol.note.split("solved on levels 0..")[1].split()[0])
    assert 5 <= top < 30
    assert np.all(sol.pi[lv[top + 1]:] == 0)  # nothing solved beyond the block
    ref = stationary(sp.csr_matrix(ch.P.tocsr()), "direct")
    assert np.abs(sol.pi - ref.pi).sum() < 1e-9
    r, full = ch.solve(), ch.solve("arnoldi")  # the metrics agree with Arnoldi on the whole box
    assert r.status.value == full.status.value == "stable"
    assert r.mean_requests == pytest.approx(full.mean_requests, rel=1e-9)
    assert r.lost_mass < 1e-12


def test_mass_at_the_caps_goes_to_the_whole_chain(small_levels):
    ch = chain(40.0, max_prefill=30, max_decode=12)  # near saturation: the prefill queue fills the box
    lv = chain_levels(ch)
    pi, _x0, note = solve_mod._leading_levels(ch.P, lv, 1e-10)
    assert pi is None
    sol = stationary(ch.P, levels=lv)
    assert sol.converged and "solved on levels" not in sol.note
    ref = stationary(ch.P.tocsr(), "direct")
    assert np.abs(sol.pi - ref.pi).sum() < 1e-8


def test_explicit_methods_and_unordered_chains_solve_the_whole_chain(small_levels):
    ch = chain(5.0)
    sol = stationary(ch.P, "arnoldi", levels=chain_levels(ch))
    assert "solved on levels" not in sol.note and np.count_nonzero(sol.pi) > chain_levels(ch)[20]
    P = sp.csr_matrix(ch.P.tocsr())
    assert "solved on levels" not in stationary(P).note  # no levels given
