"""The latency orderings read an engine's capacity from its batch time (policies import no analysis):
the per-token cost ``GammaBoost.for_engine`` / ``UniBoost(engine=)`` set must be ``1 / max_throughput``."""
import pytest

import fluidq
from fluidq import Affine, ContextAware, Engine, PiecewiseLinear, Staircase
from fluidq.errors import ParameterError
from fluidq.policies.latency import GammaBoost
from fluidq.policies.unified import UniBoost

ENGINES = [
    Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512),
    # b/t(b) peaks below b_max: the sup, not b_max/t(b_max)
    Engine(batch_time=PiecewiseLinear(c=0.01128, a=0.0003, b0=128), b_max=512),
    Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=2048, k_max=64, kv_capacity_tokens=50_000),
    Engine(batch_time=ContextAware(base=Staircase(c=0.01, a=0.03, b0=128), kv_s_per_token=1e-7), b_max=1024),
]


@pytest.mark.parametrize("engine", ENGINES, ids=range(len(ENGINES)))
def test_cost_is_one_over_the_capacity(engine):
    cap = fluidq.max_throughput(engine).tokens_per_s
    assert GammaBoost.for_engine(engine).token_cost_s == pytest.approx(1.0 / cap, rel=1e-15)
    ub = UniBoost(engine=engine)
    base = ub.order.base if hasattr(ub.order, "base") else ub.order
    assert base.token_cost_s == pytest.approx(1.0 / cap, rel=1e-15)


def test_a_non_engine_is_refused_by_name():
    with pytest.raises(ParameterError, match="engine"):
        GammaBoost.for_engine("sarathi")
