"""Policies that behave differently never compare equal (issue 14): PARS with different score sets
or predictors used to be equal and hash alike, so a cache keyed on the policy could hand one score
set's answer to the other."""
import numpy as np

import fluidq
from fluidq.policies import Sarathi
from fluidq.policies.latency import PARS


def test_pars_equality_sees_the_scores_and_the_predictor():
    a = Sarathi(order=PARS(scores=np.array([1.0, 2.0, 3.0])))
    b = Sarathi(order=PARS(scores=np.array([3.0, 2.0, 1.0])))
    same = Sarathi(order=PARS(scores=[1, 2, 3]))
    assert a != b and len({a, b}) == 2
    assert a == same and hash(a) == hash(same)
    f = lambda r: 1.0  # noqa: E731
    assert PARS(predictor=f) == PARS(predictor=f)
    assert PARS(predictor=f) != PARS(predictor=lambda r: 1.0)
    assert PARS() == PARS() and PARS() != PARS(scores=[1.0])


def test_a_cache_keyed_on_policies_keeps_score_sets_apart():
    # simulate the same trace under two opposite score sets: the results must differ
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    rng = np.random.default_rng(0)
    out = rng.integers(10, 400, size=400)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=15.0), prompt_tokens=100,
                        output_tokens=fluidq.Empirical(values=out.tolist()))
    cache = {}
    res = []
    for sign in (1.0, -1.0):
        pol = Sarathi(order=PARS(scores=sign * np.arange(10_000, dtype=float), threshold_s=None))
        if pol not in cache:
            cache[pol] = fluidq.simulate(e, w, pol, horizon_s=20.0, rng=1)
        res.append(cache[pol])
    assert len(cache) == 2 and res[0] is not res[1]
