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


@pytest.mark.parametrize("engine, workload, policy, rate", [
    (STAIR, W100, "sarathi", 2990.514461941031),  # the k_max region's rate, not Sarathi's batches' 2,744
    (STAIR, W100, "orca", 2990.514461941031),
    (STAIR, W35, "vllm", 2945.0779347294483),
    (K8, W35, "sarathi", 1426.962072850169),
    (FREE, W35, "vllm", 9074.553634358073),  # not work-conserving: its renewal threshold
    (FREE, W100, "fastertransformer", 394.47731755424064),
    (FREE, W35, "sarathi", 16666.666666666668),
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
    w = W100.with_rate(1.1 * 2743.860611880916 / 200)
    r = replicate(STAIR, w, "sarathi", horizon_s=20.0, n_replications=2, rng=1)
    assert len(calls) == 1
    # the prediction drains at the rate of Sarathi's own batches along the mix (below the k_max region's)
    assert r.inputs["capacity_is_bound"] is True
    assert r.inputs["capacity_tokens_per_s"] == pytest.approx(2743.860611880916, rel=1e-12)
