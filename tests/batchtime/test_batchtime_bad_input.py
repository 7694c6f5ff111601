"""Bad input to the descriptions raises an error naming the parameter; nothing is clipped."""
import math

import numpy as np
import pytest

import fluidq
from fluidq import (Affine, ContextAware, Engine, Gamma, Geometric, LogNormal, Periodic, PiecewiseLinear, Poisson,
                    PoissonLength, Staircase, Tabulated, Workload)
from fluidq.errors import ExtrapolationError, FluidqError, UnknownNameError

BAD_REALS = [0.0, -1.0, math.nan, math.inf, -math.inf]
PAPER = Staircase(c=0.01128, a=0.03547, b0=128)


def raises_naming(name, fn, *args, **kw):
    with pytest.raises(FluidqError) as ei:
        fn(*args, **kw)
    assert name in str(ei.value), str(ei.value)
    return ei.value


@pytest.mark.parametrize("v", BAD_REALS)
def test_bad_times_in_models(v):
    raises_naming("a", Staircase, c=0.01, a=v, b0=128)
    raises_naming("a", PiecewiseLinear, c=0.01, a=v, b0=128)
    raises_naming("c", PiecewiseLinear, c=v, a=0.01, b0=128)
    if v != 0.0:  # a zero fixed cost is allowed for the staircase and affine forms
        raises_naming("c", Staircase, c=v, a=0.01, b0=128)
        raises_naming("c", Affine, c=v, a=1e-5)
        raises_naming("a", Affine, c=0.01, a=v)
        raises_naming("kv_s_per_token", ContextAware, base=PAPER, kv_s_per_token=v)
    raises_naming("seconds", Tabulated, tokens=[1, 2, 3], seconds=[0.1, v, 0.3])


def test_zero_time_affine_and_bad_block_sizes():
    raises_naming("a", Affine, c=0.0, a=0.0)
    for b0 in (0, -3, 1.5):
        raises_naming("b0", Staircase, c=0.01, a=0.03, b0=b0)
    raises_naming("b0", PiecewiseLinear, c=0.01, a=0.03, b0=-1)


def test_tabulated_sizes_and_extrapolation():
    raises_naming("tokens", Tabulated, tokens=[1, 2, 2, 3], seconds=[0.1, 0.2, 0.2, 0.3])
    raises_naming("tokens", Tabulated, tokens=[1, 3, 2], seconds=[0.1, 0.2, 0.3])
    raises_naming("tokens", Tabulated, tokens=[1, math.nan], seconds=[0.1, 0.2])
    raises_naming("tokens", Tabulated, tokens=[], seconds=[])
    raises_naming("extrapolate", Tabulated, tokens=[1, 2], seconds=[0.1, 0.2], extrapolate="clip")
    t = Tabulated(tokens=[16, 512], seconds=[0.02, 0.1])
    with pytest.raises(ExtrapolationError):
        t(1024)
    with pytest.raises(ExtrapolationError):
        fluidq.max_throughput(Engine(batch_time=t, b_max=1024))


def test_batch_time_arguments():
    for b in (-1, math.nan, math.inf):
        raises_naming("tokens", PAPER, b)
    raises_naming("kv_tokens", ContextAware(base=PAPER, kv_s_per_token=1e-7), 10, -5)
    raises_naming("base", ContextAware, base=ContextAware(base=PAPER, kv_s_per_token=0.0), kv_s_per_token=0.0)


@pytest.mark.parametrize("field, value", [("b_max", 0), ("b_max", -5), ("b_max", 2.5), ("k_max", 0),
                                          ("k_max", -1), ("kv_capacity_tokens", 0)])
def test_engine_budgets(field, value):
    kw = {"batch_time": PAPER, "b_max": 512, field: value}
    raises_naming(field, Engine, **kw)


def test_engine_needs_a_model_and_capacity_needs_an_engine():
    raises_naming("batch_time", Engine, batch_time=lambda b: 0.1, b_max=512)
    raises_naming("engine", fluidq.max_throughput, "not an engine")
    raises_naming("n_engines", fluidq.max_throughput, Engine(batch_time=PAPER, b_max=512), n_engines=0)
    raises_naming("b_max", PAPER.best_rate, 0)


@pytest.mark.parametrize("v", BAD_REALS)
def test_bad_rates(v):
    for cls in (Poisson, Periodic, Gamma):
        raises_naming("rate_per_s", cls, rate_per_s=v)
    raises_naming("cv", Gamma, rate_per_s=1.0, cv=v)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=10, output_tokens=10)
    raises_naming("rate_per_s", w.with_rate, v)


def test_bad_lengths():
    for name in ("prompt_tokens", "output_tokens"):
        for v in (0, -3, 2.5, "long", True):
            kw = {"prompt_tokens": 10, "output_tokens": 10, name: v}
            raises_naming(name, Workload, arrival=Poisson(rate_per_s=1.0), **kw)
    for v in (0.5, math.nan, math.inf):
        raises_naming("mean_tokens", Geometric, mean_tokens=v)
        raises_naming("mean_tokens", PoissonLength, mean_tokens=v)
    raises_naming("sigma", LogNormal, mu=1.0, sigma=0.0)
    raises_naming("values", fluidq.Empirical, values=[1, 0, 3])
    raises_naming("values", fluidq.Empirical, values=[1.5, 2])
    raises_naming("weights", fluidq.Empirical, values=[1, 2], weights=[1.0])
    raises_naming("arrival", Workload, arrival=3.0, prompt_tokens=1, output_tokens=1)


def test_unknown_policy_name():
    e = Engine(batch_time=PAPER, b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    with pytest.raises(UnknownNameError) as ei:
        fluidq.check_stability(e, w, "round-robin")
    assert "round-robin" in str(ei.value) and "sarathi" in str(ei.value)
    assert isinstance(ei.value, KeyError)


def test_errors_are_builtin_subclasses():
    with pytest.raises(ValueError):
        Staircase(c=0.01, a=-1.0, b0=128)
    with pytest.raises(TypeError):
        Staircase(c="x", a=0.03, b0=128)
    assert np.isfinite(PAPER(np.array([1, 512]))).all()
