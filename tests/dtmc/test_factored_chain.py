"""The engine chain kept as its two sparse factors P = F A (completions, then arrivals)."""
import numpy as np
import pytest

import fluidq
from fluidq.dtmc import build as build_mod
from fluidq.dtmc.build import FactoredP

G = fluidq.Geometric


def wl(rate, prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


@pytest.mark.parametrize("policy,prompt", [("sarathi", 6), ("sarathi", G(mean_tokens=6)), ("vllm", 4),
                                           ("orca", G(mean_tokens=5)), ("fastertransformer", 3)])
def test_factored_and_formed_chains_agree(small_engine, monkeypatch, policy, prompt):
    w = wl(3.0, prompt, G(mean_tokens=8))
    kw = dict(max_prefill=12, max_decode=30)
    formed = fluidq.build_dtmc(small_engine, w, policy, **kw)
    assert not isinstance(formed.P, FactoredP)
    monkeypatch.setattr(build_mod, "FACTORED_MIN_STATES", 1)
    fac = fluidq.build_dtmc(small_engine, w, policy, **kw)
    assert isinstance(fac.P, FactoredP)
    assert abs(fac.P.tocsr() - formed.P).max() < 1e-15
    # fewer stored entries than the product: completions + arrivals, not completions x arrivals
    assert fac.nnz < formed.nnz
    x = np.random.default_rng(1).random(fac.n_states)
    assert np.allclose(fac.P @ x, formed.P @ x, rtol=0, atol=1e-14)
    assert np.allclose(fac.P.T @ x, formed.P.T @ x, rtol=0, atol=1e-14)
    assert np.allclose(fac.drift(), formed.drift(), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(fac.lost, formed.lost)
    a, b = fac.solve(), formed.solve()
    assert a.status == b.status and a.residual < 1e-9
    assert a.mean_requests == pytest.approx(b.mean_requests, rel=1e-8)
    assert np.abs(a.pi - b.pi).sum() < 1e-8
    d = fac.solve("direct")  # a solver that needs the matrix forms the product itself
    assert d.method == "direct" and np.abs(d.pi - b.pi).sum() < 1e-8


def test_rows_of_the_product_are_stochastic_and_boundary_mass_is_kept(small_engine, monkeypatch):
    monkeypatch.setattr(build_mod, "FACTORED_MIN_STATES", 1)
    ch = fluidq.build_dtmc(small_engine, wl(9.0, 6, G(mean_tokens=8)), "sarathi", max_prefill=3, max_decode=6)
    rows = np.asarray(ch.P.tocsr().sum(axis=1)).ravel()
    assert np.allclose(rows, 1.0, atol=1e-14)
    assert ch.lost.max() > 1e-3  # tight caps at a heavy load: the transitions cut at the box are counted
    assert np.all((ch.lost >= 0) & (ch.lost <= 1 + 1e-12))
