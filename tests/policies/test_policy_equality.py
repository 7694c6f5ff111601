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


# --- every field that changes behaviour takes part in equality and hashing (issue 14) -------------------

import dataclasses  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402

import pytest  # noqa: E402

from fluidq.policies.distboost import DistBoost  # noqa: E402
from fluidq.policies.latency import LAS, SJF, SRPT, GammaAda, GammaBoost, MemGuard  # noqa: E402
from fluidq.policies.orderings import FCFS  # noqa: E402
from fluidq.policies.schedulers import Scheduler  # noqa: E402
from fluidq.policies.unified import Unified  # noqa: E402

#: public fields kept out of the generated equality, and the private key that stands in for each
DIGESTED = {("PARS", "scores"): "_scores_key", ("PARS", "predictor"): "_predictor_key",
            ("DistBoost", "output_lengths"): "_lengths_key"}


def _policy_classes():
    out = []
    for m in ("orderings", "latency", "distboost", "unified", "region_aware", "schedulers"):
        mod = importlib.import_module(f"fluidq.policies.{m}")
        out += [c for c in vars(mod).values()
                if inspect.isclass(c) and c.__module__ == mod.__name__ and dataclasses.is_dataclass(c)]
    return out


@pytest.mark.parametrize("cls", _policy_classes(), ids=lambda c: c.__name__)
def test_no_public_field_is_left_out_of_equality(cls):
    """A public (init) field with ``compare=False`` would let two differently behaving policies compare
    equal; only PARS's scores and predictor and DistBoost's sample are, each standing in through a compared
    private key (a digest).  A class with ``eq=False`` must compare by identity (then caches key on identity):
    DistBoost had ``eq=False`` and inherited KeyOrdering's field-less equality, so any two compared equal."""
    if not cls.__dataclass_params__.eq:
        assert cls.__eq__ is object.__eq__ and cls.__hash__ is object.__hash__, cls
        return
    for f in dataclasses.fields(cls):
        if f.init and not f.name.startswith("_") and not f.compare:
            key = DIGESTED.get((cls.__name__, f.name))
            assert key is not None, f"{cls.__name__}.{f.name} changes behaviour but is left out of equality"
            assert next(g for g in dataclasses.fields(cls) if g.name == key).compare, (cls.__name__, key)
    assert cls.__hash__ is not None, f"{cls.__name__} is unhashable: caches keyed on policies skip it"


# one base instance per class and, per behaviour-changing field, a second value
VARIANTS = [
    (FCFS, {}, {"overtaking_bound": 3}),
    (SJF, {}, {"overtaking_bound": 3}),
    (SRPT, {}, {"overtaking_bound": 3}),
    (LAS, {}, {"overtaking_bound": 3}),
    (PARS, {"scores": [1.0, 2.0]}, {"threshold_s": 60.0, "idle_steps": 5, "missing_score": "last",
                                     "scores": [2.0, 1.0], "predictor": (lambda r: 0.0)}),
    (GammaBoost, {}, {"gamma_per_s": 3.0, "token_cost_s": 1e-4, "margin_s": 0.5, "effective_work": False,
                      "w_min_s": 1e-3}),
    (GammaAda, {}, {"gamma_per_s": 3.0, "estimator": "slope", "gamma_min": 0.5, "gamma_max": 50.0, "beta": 0.5,
                    "window": 50, "min_samples": 3, "update_every": 7}),
    (MemGuard, {}, {"base": GammaBoost(gamma_per_s=3.0), "k_tokens": 64, "quantize": False}),
    (Scheduler, {"name": "s", "priority": "decode", "mixed": True, "chunked": True},
     {"name": "t", "priority": "prefill", "mixed": False, "chunked": False, "order": SJF(), "chunk_long_prompts": True,
      "b_max": 64, "k_max": 4}),
    (Unified, {}, {"order": SJF(), "b_max": 64, "k_max": 4}),
    (DistBoost, {"output_lengths": [1, 2, 3]}, {"output_lengths": [1, 2, 4], "overtaking_bound": 3}),
]


@pytest.mark.parametrize(("cls", "base", "field_", "value"),
                         [(c, b, f, v) for c, b, alts in VARIANTS for f, v in alts.items()],
                         ids=lambda x: getattr(x, "__name__", None) if inspect.isclass(x) else (x if isinstance(x, str) else None))
def test_policies_differing_in_one_field_are_unequal(cls, base, field_, value):
    a, a2 = cls(**base), cls(**base)
    b = cls(**{**base, field_: value})
    assert a == a2 and hash(a) == hash(a2)  # value semantics where the fields agree
    assert a != b and len({a, b}) == 2, f"{cls.__name__}({field_}={value!r}) == {cls.__name__}()"
    # and inside a scheduler, as the caches see them
    if cls is not Scheduler and cls is not Unified:
        assert Sarathi(order=a) != Sarathi(order=b) and len({Sarathi(order=a), Sarathi(order=b)}) == 2


def test_distboost_equality_is_its_sorted_sample():
    # the ordering reads only the sorted sample: a permutation behaves alike and compares equal
    a, b = DistBoost(output_lengths=[3, 1, 2]), DistBoost(output_lengths=np.array([1.0, 2.0, 3.0]))
    assert a == b and hash(a) == hash(b)
    assert DistBoost(output_lengths=[1, 2, 3]) != DistBoost(output_lengths=[100, 200])


@pytest.fixture
def two_score_sets():
    a = Sarathi(order=PARS(scores=np.arange(50, dtype=float), threshold_s=None))
    b = Sarathi(order=PARS(scores=-np.arange(50, dtype=float), threshold_s=None))
    return a, b


def test_the_module_caches_never_serve_one_score_set_for_another(two_score_sets):
    """The caches keyed on policies -- the work-conservation search, the policy region, the renewal
    threshold -- each hold one entry per score set: a lookup for B never finds A's entry."""
    from fluidq.dtmc import threshold as thr
    from fluidq.policies import conservation
    from fluidq.stability import region

    a, b = two_score_sets
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.02, b0=4), b_max=8)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=2, output_tokens=fluidq.Fixed(n=2))
    conservation._WC_CACHE.clear()
    region._POLICY_CACHE.clear()
    thr._RENEWAL_CACHE.clear()
    for pol in (a, b):
        conservation.work_conserving_cached(pol)
        region.cached_policy_region(e, pol)
        thr.cached_renewal_threshold(e, w, pol)
    assert len(conservation._WC_CACHE) == 2 and set(conservation._WC_CACHE) == {a, b}
    assert len(region._POLICY_CACHE) == 2
    assert len(thr._RENEWAL_CACHE) == 2
    # a third policy equal to A (same scores, a new array) finds A's entries, not new ones
    a2 = Sarathi(order=PARS(scores=list(range(50)), threshold_s=None))
    assert conservation.work_conserving_cached(a2) is conservation._WC_CACHE[a]
    assert len(conservation._WC_CACHE) == 2
