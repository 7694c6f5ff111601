"""replicate's k_max prediction reads the pieces dtmc.saturation solved (one max_throughput), and the rates
of saturated_rate's other callers are what they were (numbers recorded before the change, 2026-12-06)."""
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


_ST = STAIR.batch_time
_AF = K8.batch_time
# Rates recorded before the change (2026-12-06, fd5a549), each written as its closed form where one exists.
# The renewal thresholds (FREE vllm, FREE fastertransformer) have none: they are renewal-reward solutions over
# the policies' prefill/decode cycles (dtmc.threshold.renewal_threshold) -- 119.4 x 76 and 1.972 x 200 tokens/s --
# recorded from saturated_rate on main before the change, to 1e-12.
@pytest.mark.parametrize("engine, workload, policy, rate", [
    # the k_max region's rate (287 + 97 and 29 + 99 token batches), not Sarathi's batches' 2,744: 2990.514461941031
    (STAIR, W100, "sarathi", _segment(_ST, 100, 100, (287, 97), (29, 99))),
    (STAIR, W100, "orca", _segment(_ST, 100, 100, (287, 97), (29, 99))),
    (STAIR, W35, "vllm", _segment(_ST, 35, 41, (556, 84), (29, 99))),  # sup b/t(b) in the region: 2945.0779...
    (K8, W35, "sarathi", _segment(_AF, 35, 41, (175, 3), (0, 8))),  # 1426.962072850169
    (FREE, W35, "vllm", 9074.553634358073),  # not work-conserving: its renewal threshold (recorded, see above)
    (FREE, W100, "fastertransformer", 394.47731755424064),  # its renewal threshold (recorded, see above)
    (FREE, W35, "sarathi", 200 / (0.01 + 200 * 1e-5)),  # Theorem 2: b_max / t(b_max) = 16,666.67
])
def test_saturated_rate_is_unchanged(engine, workload, policy, rate):
    r, how = saturated_rate(engine, workload, policy)
    assert r == pytest.approx(rate, rel=1e-12)
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
    # 2743.860611880916 tokens/s: the rate along the 100/100 mix of the region of the batches Sarathi forms under
    # backlog (fluidq.region.policy_region, probed by simulation of its batch rule; no closed form), recorded
    # from replicate's inputs before the change (2026-12-06, fd5a549)
    w = W100.with_rate(1.1 * 2743.860611880916 / 200)
    r = replicate(STAIR, w, "sarathi", horizon_s=20.0, n_replications=2, rng=1)
    assert len(calls) == 1
    # the prediction drains at the rate of Sarathi's own batches along the mix (below the k_max region's)
    assert r.inputs["capacity_is_bound"] is True
    assert r.inputs["capacity_tokens_per_s"] == pytest.approx(2743.860611880916, rel=1e-12)
