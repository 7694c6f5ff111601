"""``EngineChain.solve`` and ``dtmc.solve.stationary`` check ``tol`` and ``tolerance`` (found by the independent
probe: ``tol=nan`` gave an "inaccurate" result, every residual test failing, and ``tol=-1`` was accepted)."""
import math

import pytest

import fluidq as fq
from fluidq.dtmc.solve import stationary
from fluidq.errors import ParameterError


@pytest.fixture(scope="module")
def chain():
    e = fq.Engine(batch_time=fq.Staircase(c=0.01, a=0.03, b0=64), b_max=128)
    w = fq.Workload(arrival=fq.Poisson(rate_per_s=2.0), prompt_tokens=fq.Geometric(mean_tokens=20.0),
                    output_tokens=fq.Geometric(mean_tokens=20.0))
    return fq.build_dtmc(e, w, max_prefill=10, max_decode=20)


@pytest.mark.parametrize("tol", [math.nan, -1.0, 0.0, math.inf])
def test_bad_tol(chain, tol):
    with pytest.raises(ParameterError, match="tol"):
        chain.solve(tol=tol)
    with pytest.raises(ParameterError, match="tol"):
        stationary(chain.P, tol=tol)


@pytest.mark.parametrize("tolerance", [math.nan, -1e-6])
def test_bad_tolerance(chain, tolerance):
    with pytest.raises(ParameterError, match="tolerance"):
        chain.solve(tolerance=tolerance)


def test_good_values_solve(chain):
    assert chain.solve(tol=1e-10).status == fq.Status.STABLE
