"""symbolic_dtmc: build_dtmc's chain, exact and symbolic in the arrival rate (issue 19, first bullet)."""
import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import fluidq
from fluidq.dtmc import build_dtmc, symbolic_dtmc
from fluidq.dtmc.solve import stationary
from fluidq.dtmc.symbolic import batch_drift, symbols, work_conserving_certificate
from fluidq.dtmc.symbolic_chain import RATE
from fluidq.errors import ParameterError

G = fluidq.Geometric
F = fluidq.Fixed


def wl(rate, prompt, output=None):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt,
                           output_tokens=output or G(mean_tokens=4))


@pytest.fixture
def engine16():
    """b_max = 16 in blocks of 8: two batch times."""
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=8), b_max=16)


@pytest.fixture
def engine8():
    """b_max = b0 = 8: every batch takes c + a (one batch time, the fastest exact solves)."""
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=8), b_max=8)


CASES = [("sarathi", F(n=2)), ("sarathi", G(mean_tokens=3)), ("orca", G(mean_tokens=3)), ("orca", F(n=3)),
         ("vllm", F(n=3)), ("fastertransformer", F(n=3)), ("vllm-chunked", F(n=5)), ("sarathi", F(n=1))]


@pytest.mark.parametrize("policy,prompt", CASES, ids=lambda x: str(x))
def test_substituted_matrix_equals_build_dtmc_without_tolerances(engine16, policy, prompt):
    ch = symbolic_dtmc(engine16, wl(1.0, prompt), policy, max_prefill=4, max_decode=5)
    for rate in (2.0, 7.5):
        num = build_dtmc(engine16, wl(rate, prompt), policy, max_prefill=4, max_decode=5, kernel_tol=0, prune_tol=0)
        for name in ("n_p", "n_d", "j"):  # same states in the same order
            assert np.array_equal(ch.space[name], num.space[name])
        Ps = ch.substitute(rate)
        assert Ps.shape == num.P.shape
        assert abs(Ps - num.P).max() <= 1e-12, (policy, prompt, rate)
        assert np.allclose(np.asarray(Ps.sum(axis=1)).ravel(), 1.0, atol=1e-14)
        assert np.allclose([float(x) for x in ch.batch_tokens], num.batch_tokens, atol=1e-12)


def test_entries_are_exact_in_the_rate_and_rows_sum_to_one(engine16):
    ch = symbolic_dtmc(engine16, wl(1.0, F(n=2)), "sarathi", max_prefill=2, max_decode=3)
    P = ch.P
    assert isinstance(P, sp.MatrixBase) and ch.rate == RATE and RATE.is_positive
    assert ch.rate == symbols()["lambda"]  # the symbol of the symbolic drift module
    assert set().union(*(e.free_symbols for e in P.values())) == {RATE}
    for i in range(ch.n_states):
        assert sp.expand(sum(P.row(i))) == 1  # exactly stochastic, truncation included
    # the matrix and substitute() are the same numbers
    Ps = ch.substitute(3.0).toarray()
    for (i, j), e in list(P.todok().items())[:40]:
        assert float(e.subs(RATE, 3)) == pytest.approx(Ps[i, j], abs=1e-15)
    # the batch time is exact: c + a ceil(b/b0) with c = 141/12500 s, a = 3547/100000 s
    assert set(ch.times) <= {sp.Rational(141, 12500) + k * sp.Rational(3547, 100000) for k in (1, 2)}


def test_arrivals_beyond_the_cap_are_lumped_into_the_cap_state(engine16):
    ch = symbolic_dtmc(engine16, wl(1.0, F(n=2)), "sarathi", max_prefill=2, max_decode=3)
    s = ch.space.find(n_p=2, n_d=0, j=0)  # full prefill queue: every arrival stays at n_p = 2
    t = sp.Rational(141, 12500) + sp.Rational(3547, 100000)  # 4 prefill tokens: one block
    # both prompts finish (K = 2): n_p' = min(0 + A, 2), n_d' = 2
    to_cap = ch.P[s, ch.space.find(n_p=2, n_d=2, j=0)]
    assert sp.simplify(to_cap - (1 - sp.exp(-RATE * t) * (1 + RATE * t))) == 0


@pytest.mark.parametrize("policy,prompt,engine,caps", [
    ("sarathi", F(n=2), "engine8", (2, 2)),
    ("sarathi", F(n=1), "engine8", (3, 4)),
    ("vllm", F(n=3), "engine16", (3, 3)),
    ("fastertransformer", F(n=3), "engine16", (2, 3)),
    ("orca", G(mean_tokens=3), "engine16", (2, 3)),  # geometric prompts: a binomial term per prefill outcome
])
def test_exact_stationary_sums_to_one_and_matches_the_numeric_solve(policy, prompt, engine, caps, request):
    e = request.getfixturevalue(engine)
    ch = symbolic_dtmc(e, wl(2.0, prompt), policy, max_prefill=caps[0], max_decode=caps[1])
    st = ch.stationary(2)
    assert st.total == 1  # summed in the field of the solve: exactly one
    assert st.rate == 2
    num = build_dtmc(e, wl(2.0, prompt), policy, max_prefill=caps[0], max_decode=caps[1], kernel_tol=0, prune_tol=0)
    ref = stationary(num.P, "direct").pi
    got = st.numeric()
    assert abs(got.sum() - 1) < 1e-14
    assert np.abs(got - ref).max() < 1e-9
    # an exact identity: pi P = pi, checked at 40 digits
    Ps = ch.substitute(2.0)
    assert np.abs(got @ Ps - got).max() < 1e-13


def test_stationary_symbolic_in_the_rate_for_a_tiny_chain(engine8):
    ch = symbolic_dtmc(engine8, wl(2.0, F(n=2)), "sarathi", max_prefill=2, max_decode=2)
    st = ch.stationary()
    assert st.total == 1 and st.rate == RATE
    assert RATE in st.pi.free_symbols
    for rate in (2.0, 9.0):
        num = build_dtmc(engine8, wl(rate, F(n=2)), "sarathi", max_prefill=2, max_decode=2, kernel_tol=0, prune_tol=0)
        assert np.abs(st.numeric(rate) - stationary(num.P, "direct").pi).max() < 1e-9
    with pytest.raises(ParameterError, match="rate"):
        st.numeric()


def test_stationary_refuses_large_chains_naming_the_size(engine16):
    ch = symbolic_dtmc(engine16, wl(2.0, F(n=2)), "sarathi", max_prefill=6, max_decode=8)
    assert ch.n_states == 7 * 9 * 2 - 9  # (0, n_d, j = 1) is not a state
    with pytest.raises(ParameterError, match=r"chain size=117.*at most 40 states"):
        ch.stationary(2)
    with pytest.raises(ParameterError, match=r"chain size=117.*at most 16 states.*symbolic"):
        ch.stationary()
    with pytest.raises(ParameterError, match="rate_per_s"):
        ch.substitute(-1.0)


def test_drift_from_P_agrees_with_the_separately_coded_drifts(engine16):
    # the chain's V = unprocessed tokens; drift.py computes P V - V numerically on build_dtmc's chain
    w = wl(3.0, G(mean_tokens=3))
    ch = symbolic_dtmc(engine16, w, "sarathi", max_prefill=5, max_decode=6)
    d = ch.drift(ch.unprocessed_tokens())
    assert d.free_symbols == {RATE}
    num = build_dtmc(engine16, w, "sarathi", max_prefill=5, max_decode=6, kernel_tol=0, prune_tol=0)
    old = num.drift("tokens")  # fluidq/dtmc/drift.py
    got = np.array([float(x) for x in d.subs(RATE, 3)])
    assert np.abs(got - old).max() < 1e-10
    # V as the sympy Lyapunov function of symbolic.py's certificate (m_p, m_d replaced by the workload's)
    V = work_conserving_certificate().lyapunov
    dv = ch.drift(V, states=range(10))
    assert all(sp.simplify(a - b) == 0 for a, b in zip(dv, d[:10]))
    # symbolic.py's batch formula: with fixed prompts the state fixes the batch, E[dV] = batch_drift(x, y, t(x+y));
    # the chain's drift differs only by the arrivals redirected at the cap, O(lambda^(N_p - n_p + K + 1))
    S = symbols()
    wf = wl(3.0, F(n=2))
    chf = symbolic_dtmc(engine16, wf, "sarathi", max_prefill=5, max_decode=6)
    df = chf.drift(chf.unprocessed_tokens())  # V - j: the head prompt's progress counts
    for n_p, n_d, j in [(1, 2, 0), (1, 0, 1), (2, 3, 0), (0, 4, 0)]:
        s = chf.space.find(n_p=n_p, n_d=n_d, j=j)
        y = min(n_d, 16)
        x = min(16 - y, 2 * n_p - j)
        k_done = (x + j) // 2 if n_p else 0
        t = sp.Rational(141, 12500) + sp.Rational(3547, 100000) * sp.ceiling(sp.Rational(x + y, 8))
        assert chf.batch_tokens[s] == x + y
        formula = batch_drift(x, y, t, S).subs({S["m_p"]: 2, S["m_d"]: 4})
        order = 5 - n_p + k_done + 1  # first power of lambda at which the cap can bind
        assert sp.simplify(sp.series(df[s] - formula, RATE, 0, order).removeO()) == 0, (n_p, n_d, j)
        assert abs(float((df[s] - formula).subs(RATE, 0.5))) < 1e-9


def test_latex_of_the_matrix_and_of_a_block(engine16):
    ch = symbolic_dtmc(engine16, wl(1.0, F(n=2)), "sarathi", max_prefill=2, max_decode=2)
    tex = ch.latex(rows=range(3), cols=range(3))
    assert isinstance(tex, str) and r"\lambda" in tex and tex.count("{") == tex.count("}")
    assert tex.startswith(r"\left[\begin{matrix}") and r"e^{" in tex
    assert ch.latex().count(r"\\") == ch.n_states - 1
    with pytest.raises(ParameterError, match="max_size"):
        ch.latex(max_size=4)


def test_exports_and_refusals(engine16):
    assert fluidq.symbolic_dtmc is symbolic_dtmc
    with pytest.raises(ParameterError, match="output_tokens"):
        symbolic_dtmc(engine16, wl(1.0, F(n=2), F(n=3)), "sarathi", max_prefill=2, max_decode=2)
    with pytest.raises(ParameterError, match="prompt_tokens"):
        symbolic_dtmc(engine16, wl(1.0, G(mean_tokens=3)), "vllm", max_prefill=2, max_decode=2)
    with pytest.raises(ParameterError, match="max_states"):
        symbolic_dtmc(engine16, wl(1.0, F(n=2)), "sarathi", max_prefill=50, max_decode=50, max_states=100)
    with pytest.raises(ParameterError, match="k_max"):
        symbolic_dtmc(fluidq.Engine(batch_time=engine16.batch_time, b_max=16, k_max=2), wl(1.0, F(n=2)),
                      "sarathi", max_prefill=2, max_decode=2)


def test_the_docs_example_runs():
    page = Path(__file__).resolve().parents[2] / "docs" / "explanation" / "single-engine.md"
    text = page.read_text()
    section = text[text.index("## The chain, exact in the arrival rate"):]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert blocks
    ns = {}
    for code in blocks:
        exec(compile(code, str(page), "exec"), ns)
