"""The stationary solvers agree: sparse LU, Arnoldi (the automatic choice for large chains) and power
iteration give the same distribution on an engine chain, and a method that cannot answer hands over
to the next one instead of failing."""
import numpy as np
import pytest
import scipy.sparse as sp

import fluidq
from fluidq.dtmc import build_dtmc
from fluidq.dtmc.solve import ARNOLDI_FIRST_NNZ, DIRECT_FIRST_STATES, stationary


@pytest.fixture(scope="module")
def chain():
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=8.0), prompt_tokens=fluidq.Geometric(mean_tokens=100),
                        output_tokens=fluidq.Geometric(mean_tokens=100))
    ch = build_dtmc(e, w, "sarathi", max_prefill=40, max_decode=120)
    assert ch.n_states > DIRECT_FIRST_STATES and ch.nnz >= ARNOLDI_FIRST_NNZ  # "auto" goes to Arnoldi first
    return ch


def test_arnoldi_power_and_direct_agree(chain):
    P = sp.csr_matrix(chain.P)
    sols = {m: stationary(P, m) for m in ("direct", "arnoldi", "power")}
    for m, s in sols.items():
        assert s.converged and s.method == m, (m, s.method, s.note)
        assert s.residual < 1e-8
        assert np.all(s.pi >= 0) and s.pi.sum() == pytest.approx(1.0)
    assert np.abs(sols["arnoldi"].pi - sols["direct"].pi).sum() < 1e-7
    assert np.abs(sols["power"].pi - sols["direct"].pi).sum() < 1e-6
    auto = stationary(P)
    assert auto.method == "arnoldi" and np.abs(auto.pi - sols["direct"].pi).sum() < 1e-7


def test_a_failing_arnoldi_hands_over_to_power(chain, monkeypatch):
    import fluidq.dtmc.solve as solve

    def no_convergence(*a, **k):
        from scipy.sparse.linalg import ArpackNoConvergence
        raise ArpackNoConvergence("no convergence", np.zeros(0), np.zeros((0, 0)))

    monkeypatch.setattr(solve, "_arnoldi", no_convergence)
    s = stationary(sp.csr_matrix(chain.P))
    assert s.converged and s.method == "power" and "arnoldi failed" in s.note


def test_unknown_method_is_named():
    with pytest.raises(fluidq.errors.ParameterError, match="method"):
        stationary(sp.identity(3, format="csr"), "lanczos")
