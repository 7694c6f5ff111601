"""The single-engine chain: closed forms, distributions, batch shapes against policy.select."""
import math

import numpy as np
import pytest

import fluidq
from fluidq.dtmc import build_dtmc
from fluidq.policies import QueueView, RequestState, resolve_policy
from fluidq.results import Status

G = fluidq.Geometric


def wl(rate, prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def embedded_tokens_closed_form(lam, tau, mp, md, fixed_prompt):
    """Stationary E[W] of the embedded chain of an engine that serves one token per batch of tau s.

    W is the unprocessed tokens at batch boundaries: W' = W - 1 + X for W > 0 (X = tokens of the
    Poisson(lam tau) arrivals of the batch), and from W = 0 the engine idles until one request of
    V = v_p + v_d tokens arrives.  First and second moments of the balance give
    pi0 = (1 - rho) / (1 - rho + m) and
    2 (1 - rho) E[W] = (1 - pi0)(1 - 2 rho + E[X^2]) + E[V^2] pi0.
    """
    m = mp + md
    rho = lam * tau * m
    var_p = 0.0 if fixed_prompt else mp * mp - mp
    ev2 = var_p + (md * md - md) + m * m
    ex2 = lam * tau * ev2 + rho * rho
    pi0 = (1 - rho) / (1 - rho + m)
    return ((1 - pi0) * (1 - 2 * rho + ex2) + ev2 * pi0) / (2 * (1 - rho)), pi0


@pytest.mark.parametrize("policy,prompt", [("sarathi", G(mean_tokens=3)), ("orca", G(mean_tokens=3)),
                                           ("fastertransformer", 1), ("vllm", 1), ("vllm-chunked", 2)])
def test_b_max_one_reduces_to_a_single_token_server(policy, prompt):
    # b_max = 1: every batch serves one token in tau seconds while work is left, for every scheduler
    e = fluidq.Engine(batch_time=fluidq.Affine(c=0.01, a=0.0), b_max=1)
    w = wl(8.0, prompt, G(mean_tokens=4))
    ch = build_dtmc(e, w, policy, max_prefill=70, max_decode=70)
    r = ch.solve()
    assert r.status == Status.STABLE
    want, pi0 = embedded_tokens_closed_form(8.0, 0.01, w.mean_prompt_tokens, 4.0, isinstance(prompt, int))
    assert float(r.pi @ ch.unprocessed_tokens) == pytest.approx(want, rel=1e-6)
    assert r.pi[ch.space.find(n_p=0, n_d=0)] == pytest.approx(pi0, rel=1e-6)


def test_distribution_sums_to_one_and_is_non_negative(small_engine):
    w = wl(4.0, G(mean_tokens=6), G(mean_tokens=6))
    for pol in ("sarathi", "orca"):
        r = build_dtmc(small_engine, w, pol, max_prefill=25, max_decode=40).solve()
        assert r.pi.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.all(r.pi >= 0)
        assert r.throughput_requests_per_s == pytest.approx(4.0, rel=1e-6)
        _k, pmf = r.requests_pmf()
        assert pmf.sum() == pytest.approx(1.0) and np.all(pmf >= 0)
        assert 0 <= r.tail(5) <= 1


def test_rows_are_stochastic_for_every_scheduler(small_engine):
    w = wl(3.0, 4, G(mean_tokens=5))
    for pol in fluidq.policies.POLICY_NAMES:
        ch = build_dtmc(small_engine, w, pol, max_prefill=10, max_decode=20)
        rs = np.asarray(ch.P.sum(axis=1)).ravel()
        assert np.allclose(rs, 1.0, atol=1e-12)
        assert ch.P.data.min() >= 0


def _view(n_p, n_d, j, vp, b_max):
    """Concrete residents for a count state: n_p prompts (head j tokens in), n_d decoding."""
    rs = []
    for i in range(n_d):
        rs.append(RequestState(rid=len(rs), arrival_s=float(len(rs)), prompt_tokens=vp, prefilled=vp,
                               output_tokens=10 ** 6))
    for i in range(n_p):
        rs.append(RequestState(rid=len(rs), arrival_s=float(len(rs)), prompt_tokens=vp,
                               prefilled=j if i == 0 else 0, output_tokens=10 ** 6))
    return QueueView(requests=tuple(rs), now_s=0.0, b_max=b_max)


@pytest.mark.parametrize("policy", list(fluidq.policies.POLICY_NAMES))
def test_batch_shapes_match_policy_select(small_engine, policy):
    # decoding requests are oldest so FCFS and the chain agree on who is served
    vp = 5
    w = wl(2.0, vp, G(mean_tokens=5))
    ch = build_dtmc(small_engine, w, policy, max_prefill=6, max_decode=20)
    pol = resolve_policy(policy)
    sp_ = ch.space
    for s in range(ch.n_states):
        n_p, n_d, j = int(sp_["n_p"][s]), int(sp_["n_d"][s]), int(sp_["j"][s])
        view = _view(n_p, n_d, j, vp, small_engine.b_max)
        batch = pol.select(view)
        assert batch.tokens == pytest.approx(ch.batch_tokens[s]), (policy, n_p, n_d, j)
        assert batch.decode_tokens / 5.0 == pytest.approx(ch.completions[s]), (policy, n_p, n_d, j)


def test_time_average_conversion_littles_law(small_engine):
    # Little's law on the time averages: mean requests = lambda * mean sojourn; the decode part is
    # lambda * (time in decode) = lambda * m_d * mean batch time when every decoder is served each batch
    w = wl(3.0, G(mean_tokens=4), G(mean_tokens=8))
    r = build_dtmc(small_engine, w, "sarathi", max_prefill=30, max_decode=60).solve()
    assert r.status == Status.STABLE
    assert r.mean_requests == pytest.approx(r.mean_prefill + r.mean_decode)
    assert r.mean_requests > r.mean_decode > 0
    assert r.throughput_tokens_per_s == pytest.approx(3.0 * 12, rel=1e-6)


def test_unstable_parameters_give_a_status_not_nan(small_engine):
    cap = fluidq.max_throughput(small_engine).tokens_per_s
    w = wl(1.2 * cap / 10, G(mean_tokens=5), G(mean_tokens=5))
    r = build_dtmc(small_engine, w, "sarathi", max_prefill=10, max_decode=20).solve()
    assert r.status == Status.UNSTABLE
    assert r.mean_requests is None and r.pi is None
    d = r.to_dict()
    assert all(not (isinstance(v, float) and math.isnan(v)) for v in d.values())


def test_caps_too_small_are_reported_inaccurate(small_engine):
    w = wl(5.0, G(mean_tokens=6), G(mean_tokens=6))
    r = build_dtmc(small_engine, w, "sarathi", max_prefill=2, max_decode=3).solve()
    assert r.status == Status.INACCURATE
    assert r.lost_mass > 1e-6 and "max_prefill" in r.reason


@pytest.mark.parametrize("bad", [
    {"policy": "sarathi", "prompt": 4, "output": fluidq.LogNormal(mu=1.0, sigma=0.5)},  # neither memoryless nor finite
    {"policy": "sarathi", "prompt": 4, "output": 7},  # finite support, but too many decode vectors
    {"policy": "fastertransformer", "prompt": G(mean_tokens=4), "output": G(mean_tokens=4)},  # random prompt, whole prompts
    {"policy": "vllm", "prompt": 40, "output": G(mean_tokens=4)},          # prompt longer than b_max
    {"policy": "sarathi", "prompt": fluidq.LogNormal(mu=1.0, sigma=0.5), "output": G(mean_tokens=4)},
])
def test_bad_input_raises_naming_the_parameter(small_engine, bad):
    w = wl(1.0, bad["prompt"], bad["output"])
    with pytest.raises(fluidq.FluidqError) as ei:
        build_dtmc(small_engine, w, bad["policy"])
    assert "tokens" in str(ei.value)


def test_k_max_and_custom_orderings_are_refused(small_engine):
    w = wl(1.0, 4, G(mean_tokens=4))
    with pytest.raises(fluidq.FluidqError, match="k_max"):
        build_dtmc(small_engine.with_(k_max=4), w, "sarathi")
    with pytest.raises(fluidq.FluidqError):
        build_dtmc(small_engine, w, object())


def test_solvers_agree(small_engine):
    w = wl(3.0, G(mean_tokens=5), G(mean_tokens=5))
    ch = build_dtmc(small_engine, w, "orca", max_prefill=15, max_decode=30)
    a = ch.solve("direct")
    b = ch.solve("gmres")
    c = ch.solve("power", tol=1e-13)
    assert a.method == "direct" and b.method == "gmres"
    assert np.abs(a.pi - b.pi).sum() < 1e-7
    assert np.abs(a.pi - c.pi).sum() < 1e-6


def test_drift_of_tokens_matches_the_batch_formula_in_the_interior(small_engine):
    # E[dV] = lambda t(b) (m_p + m_d) - b for every interior state (memoryless lengths)
    w = wl(3.0, G(mean_tokens=5), G(mean_tokens=5))
    ch = build_dtmc(small_engine, w, "sarathi", max_prefill=40, max_decode=60)
    d = ch.drift("tokens")
    inner = (ch.space["n_p"] < 10) & (ch.space["n_d"] < 30) & (ch.batch_tokens > 0)
    want = 3.0 * ch.sojourn_s * 10 - ch.batch_tokens
    assert np.allclose(d[inner], want[inner], atol=1e-6)
