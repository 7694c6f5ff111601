"""replicate's k_max prediction reads the pieces dtmc.saturation solved (one max_throughput), and the rates
of saturated_rate's other callers are what they were before the change (2026-12-06): each written as its closed
form, or derived from the policy's stated renewal-reward chain by an independent solver, not pasted."""
import pytest

from fluidq import Affine, Engine, Poisson, Workload
from fluidq.batchtime import Staircase
from fluidq.dtmc.saturation import saturated_rate, saturation
from fluidq import replicate

STAIR = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=1024, k_max=100)
K8 = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=200, k_max=8)
FREE = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=200)
W100 = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=100, output_tokens=100)
W35 = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=35, output_tokens=41)


def _segment(t, m_p, m_d, batch1, batch2):
    """Tokens/s where the mix (m_p, m_d) leaves the k_max region through the face between two batches
    ``(prefill, decode)`` tokens, run in time-sharing (rates batch / t(batch)): the closed form of the region's
    rate (section 6 of arXiv:2504.07347), with the face's two batches as dtmc.saturation names them."""
    (p1, d1), (p2, d2) = batch1, batch2
    P1, D1, P2, D2 = p1 / t(p1 + d1), d1 / t(p1 + d1), p2 / t(p2 + d2), d2 / t(p2 + d2)
    g1, g2 = m_d * P1 - m_p * D1, m_d * P2 - m_p * D2
    alpha = g2 / (g2 - g1)  # the share of time in batch1 that makes the served mix m_p : m_d
    return (alpha * P1 + (1 - alpha) * P2) / m_p * (m_p + m_d)


def _ft_renewal(t, v_p, v_d, b):
    """FasterTransformer's renewal threshold in tokens/s for fixed lengths, the closed form of renewal-reward over its
    cycle (dtmc.threshold's docstring): with a backlog every cycle is one prefill batch of k = floor(b / v_p) whole
    prompts, then v_d decode-only batches of the k requests, so lambda* = k / (t(k v_p) + v_d t(k)) requests/s."""
    k = b // v_p
    return k / (t(k * v_p) + v_d * t(k)) * (v_p + v_d)


def _vllm_renewal(t, v_p, v_d, b, q_cap=60):
    """Vanilla vLLM's renewal threshold in tokens/s for fixed lengths, from its stated arithmetic (dtmc.threshold's
    docstring), solved here with other numerics than the library's (scipy's Poisson law, the stationary law by least
    squares, brentq for the root): with a saturated decode pool a decode batch holds b
    decode tokens and runs only when no prompt waits; the waiting prompts q at batch boundaries are a Markov chain
    (q = 0: a decode batch of t(b); else a prefill batch of m = min(q, k) prompts, k = floor(b / v_p), of t(m v_p);
    arrivals Poisson(lambda x batch time)).  The decode rate is D(lambda) = b pi_0 / E_pi[t], and lambda* the root of
    lambda v_d = D(lambda).  The chain is cut at ``q_cap`` waiting prompts (about 1.4 arrivals a batch at the root
    against up to k = 5 taken: at the root no mass reaches the cut, asserted)."""
    import numpy as np
    from scipy import optimize, stats

    k = b // v_p
    q = np.arange(q_cap + 1)
    take = np.minimum(q, k)
    tau = np.where(q == 0, t(b), t(take * v_p))

    def decode_rate(lam):
        P = np.zeros((q_cap + 1, q_cap + 1))
        for i in q:
            base = i - take[i]
            pmf = stats.poisson.pmf(np.arange(q_cap + 1 - base), lam * tau[i])
            P[i, base:] = pmf
            P[i, q_cap] += 1.0 - pmf.sum()
        # pi (P - I) = 0 and sum(pi) = 1, stacked and solved by least squares
        pi = np.linalg.lstsq(np.vstack([P.T - np.eye(q_cap + 1), np.ones(q_cap + 1)]),
                             np.r_[np.zeros(q_cap + 1), 1.0], rcond=None)[0]
        return b * pi[0] / (pi @ tau), pi[-1]

    lam = optimize.brentq(lambda lam: lam * v_d - decode_rate(lam)[0], 1e-3, 0.999 * k / t(k * v_p), xtol=1e-12,
                          rtol=1e-13)
    assert abs(decode_rate(lam)[1]) < 1e-12  # at the root no mass reaches the cut (4e-17: rounding)
    return lam * (v_p + v_d)


_ST = STAIR.batch_time
_AF = K8.batch_time
# Each rate written as its closed form, or for vanilla vLLM's renewal threshold (no closed form) solved from the
# policy's stated renewal-reward chain by the independent solver above (before: both renewal thresholds pasted from
# saturated_rate's own output, 2026-12-06, fd5a549: 9074.553634358073 and 394.47731755424064 tokens/s, which these
# reproduce to 7e-11 and 1e-16).  The library bisects vLLM's root to rtol 1e-9: that row is held to 1e-8.
@pytest.mark.parametrize("engine, workload, policy, rate, rel", [
    # the k_max region's rate (287 + 97 and 29 + 99 token batches), not Sarathi's batches' 2,744: 2990.514461941031
    (STAIR, W100, "sarathi", _segment(_ST, 100, 100, (287, 97), (29, 99)), 1e-12),
    (STAIR, W100, "orca", _segment(_ST, 100, 100, (287, 97), (29, 99)), 1e-12),
    (STAIR, W35, "vllm", _segment(_ST, 35, 41, (556, 84), (29, 99)), 1e-12),  # sup b/t(b) in the region: 2945.0779...
    (K8, W35, "sarathi", _segment(_AF, 35, 41, (175, 3), (0, 8)), 1e-12),  # 1426.962072850169
    # not work-conserving: its renewal threshold, 119.40 req/s x 76 tokens
    (FREE, W35, "vllm", _vllm_renewal(FREE.batch_time, 35, 41, 200), 1e-8),
    # its renewal threshold: k = 2 prompts a cycle, 2 / (t(200) + 100 t(2)) = 1.972 req/s x 200 tokens
    (FREE, W100, "fastertransformer", _ft_renewal(FREE.batch_time, 100, 100, 200), 1e-12),
    (FREE, W35, "sarathi", 200 / (0.01 + 200 * 1e-5), 1e-12),  # Theorem 2: b_max / t(b_max) = 16,666.67
])
def test_saturated_rate_is_unchanged(engine, workload, policy, rate, rel):
    r, how = saturated_rate(engine, workload, policy)
    assert r == pytest.approx(rate, rel=rel)
    s = saturation(engine, workload, policy)
    assert (s.tokens_per_s, s.how) == (r, how)


def _count(monkeypatch):
    import fluidq.dtmc.saturation as ds
    import fluidq.stability.simulation as ss

    calls = []
    for mod in (ds, ss):
        real = mod.max_throughput

        def counted(*a, _real=real, **kw):
            calls.append(a)
            return _real(*a, **kw)

        monkeypatch.setattr(mod, "max_throughput", counted)
    return calls


def test_replicate_solves_the_capacity_once_under_a_binding_k_max(monkeypatch):
    calls = _count(monkeypatch)
    # the rate along the 100/100 mix of the region of the batches Sarathi forms under backlog (no closed form:
    # fluidq.region.policy_region probes its batch rule), computed here -- 2743.86 tokens/s, as replicate's
    # inputs recorded before the change (2026-12-06, fd5a549), below the k_max region's 2990.51
    from fluidq.region import policy_region

    own = 200 * policy_region(STAIR, "sarathi", prompt_tokens=100).scale_of((100.0, 100.0))
    # Regression record, not an independent check: replicate reads the same policy_region, so the equality below
    # only says it reads it; this pins the value replicate's inputs recorded at fd5a549 (2026-12-06).
    assert own == pytest.approx(2743.860611880916, rel=1e-12)
    region = _segment(_ST, 100, 100, (287, 97), (29, 99))
    assert own < region
    w = W100.with_rate(1.1 * own / 200)
    calls.clear()  # (policy_region itself reads no max_throughput; counted from here on)
    r = replicate(STAIR, w, "sarathi", horizon_s=20.0, n_replications=2, rng=1)
    assert len(calls) == 1
    # the prediction drains at the rate of Sarathi's own batches along the mix (below the k_max region's)
    assert r.inputs["capacity_is_bound"] is True
    assert r.inputs["capacity_tokens_per_s"] == pytest.approx(own, rel=1e-12)
