"""Fuzz the public constructors and functions (issue 13): every call either raises an exception from
``fluidq.errors`` or returns a result without NaN, within its time; no other exception escapes.

Numbers at the edges (0, -1, NaN, ±inf, 1e-320, 1e-300, 1e26, 1e308, 2**63, 2**64+1, 10**400, bools,
strings, None) are mixed with small valid values, so that the draws also reach the analyses.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import os
import signal
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fluidq
from fluidq.errors import FluidqError

from fuzzcore import CallTimeout, _alarm

API_TIMEOUT_S = 20.0
#: FLUIDQ_FUZZ_SCALE=10 draws ten times the examples (a longer local run; CI uses 1)
SCALE = max(1, int(os.environ.get("FLUIDQ_FUZZ_SCALE", "1") or 1))
FUZZ = settings(derandomize=True, database=None, deadline=timedelta(seconds=20), print_blob=False,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

EDGE = [0, 0.0, -0.0, -1, -1.0, math.nan, math.inf, -math.inf, 1e-320, 1e-300, 1e26, 1e308, 2**63, 2**64 + 1,
        10**400, True, False, None, "1", "", 1.5, 0.5]


@st.composite
def params(draw, spec, max_bad=2):
    """Arguments by name: each from its valid values (a list) or its strategy, except up to ``max_bad``
    of them, which take an edge value (so that a draw reaches the analyses with one or two bad values);
    the ``*kind`` selectors are never bad."""
    names = sorted(spec)
    bad = draw(st.sets(st.sampled_from([k for k in names if not k.endswith("kind")]), max_size=max_bad))
    out = {}
    for k in names:
        v = spec[k]
        if k in bad:
            out[k] = draw(st.sampled_from(EDGE))
        else:
            out[k] = draw(st.sampled_from(v) if isinstance(v, (list, tuple)) else v)
    return out


# ------------------------------------------------------------------------------------------------
# the oracle
# ------------------------------------------------------------------------------------------------

def nan_paths(obj, path="result", depth=0, seen=None):
    """Where a result holds a NaN number (dataclass fields, dicts, sequences; private fields skipped).

    NumPy arrays are not searched: per-request columns use NaN for "not happened" (an unfinished
    request's finish time), a documented convention, not an answer."""
    seen = set() if seen is None else seen
    if depth > 6 or id(obj) in seen:
        return []
    if isinstance(obj, float):
        return [path] if math.isnan(obj) else []
    if isinstance(obj, np.generic):
        return nan_paths(obj.item(), path, depth, seen)
    if isinstance(obj, np.ndarray):  # per-request / per-step arrays: NaN marks "not yet" (an unfinished request)
        return []
    seen.add(id(obj))
    out = []
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            if not f.name.startswith("_"):
                out += nan_paths(getattr(obj, f.name), f"{path}.{f.name}", depth + 1, seen)
    elif isinstance(obj, dict):
        for k, v in list(obj.items())[:200]:
            out += nan_paths(v, f"{path}[{k!r}]", depth + 1, seen)
    elif isinstance(obj, (list, tuple)) and not isinstance(obj, enum.Enum):
        for i, v in enumerate(obj[:200]):
            out += nan_paths(v, f"{path}[{i}]", depth + 1, seen)
    return out


class Refused(Exception):
    """The call raised a fluidq error (a valid answer for a bad input): stop this example."""


def call(fn, *args, **kw):
    """``fn(*args, **kw)`` under the oracle: a fluidq error (-> :class:`Refused`) or a result without
    NaN, in at most 20 s."""
    what = f"{getattr(fn, '__name__', fn)}(" + ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kw.items())])[:400] + ")"
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, API_TIMEOUT_S)
    try:
        res = fn(*args, **kw)
    except FluidqError as exc:
        raise Refused(str(exc)) from None
    except CallTimeout:
        pytest.fail(f"hang: {what} ran past {API_TIMEOUT_S:.0f} s")
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{what} raised {type(exc).__name__} (not a fluidq error): {exc}"[:1500])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    bad = nan_paths(res)
    assert not bad, f"{what} returned NaN at {', '.join(bad[:5])}"
    return res


def guarded(body):
    """Run one example: a Refused stops it quietly (a fluidq error is an answer)."""
    try:
        body()
    except Refused:
        pass


# ------------------------------------------------------------------------------------------------
# strategies for the descriptions
# ------------------------------------------------------------------------------------------------

KINDS = st.sampled_from(["staircase", "piecewise-linear", "affine", "context-aware", "tabulated"])
BT = {"bt_kind": KINDS, "c": [0.01128, 0.005], "a": [0.03547, 1e-4], "b0": [128, 64], "kv": [1e-6, 0.0],
      "tokens": st.one_of(st.just((16, 128, 512)), st.lists(st.sampled_from(EDGE[:14] + [16, 64]), max_size=4).map(tuple)),
      "seconds": st.one_of(st.just((0.02, 0.05, 0.2)), st.lists(st.sampled_from(EDGE[:14] + [0.1]), max_size=4).map(tuple))}
ENG = {"b_max": [512, 256, 64], "k_max": [None, 16, 64, 512], "kv_cap": [None, 20000, 4000]}


def LEN(prefix):
    return {f"{prefix}kind": st.sampled_from(["fixed", "geometric", "poisson", "lognormal", "empirical", "int"]),
            f"{prefix}n": [100, 16], f"{prefix}mean": [100.0, 20.0], f"{prefix}mu": [4.0, 1.0], f"{prefix}sigma": [0.5, 1.0],
            f"{prefix}values": st.one_of(st.just((10, 100)), st.lists(st.sampled_from(EDGE[:16] + [5, 50]), max_size=3).map(tuple)),
            f"{prefix}weights": st.one_of(st.none(), st.just((1, 1)),
                                          st.lists(st.sampled_from(EDGE[:12] + [1.0]), max_size=3).map(tuple))}


ARR = {"arr_kind": st.sampled_from(["poisson", "periodic", "gamma", "trace"]), "rate": [0.5, 2.0], "cv": [2.0, 0.5],
       "times": st.one_of(st.just((0.0, 0.5, 1.0)), st.lists(st.sampled_from(EDGE[:14] + [0.1, 2.0]), max_size=4).map(tuple))}


def make_batch_time(d):
    k = d["bt_kind"]
    if k == "staircase":
        return call(fluidq.Staircase, c=d["c"], a=d["a"], b0=d["b0"])
    if k == "piecewise-linear":
        return call(fluidq.PiecewiseLinear, c=d["c"], a=d["a"], b0=d["b0"])
    if k == "affine":
        return call(fluidq.Affine, c=d["c"], a=d["a"])
    if k == "tabulated":
        return call(fluidq.Tabulated, tokens=d["tokens"], seconds=d["seconds"], extrapolate="clamp")
    base = call(fluidq.Staircase, c=d["c"], a=d["a"], b0=d["b0"])
    return call(fluidq.ContextAware, base=base, kv_s_per_token=d["kv"])


def make_engine(bt, d):
    return call(fluidq.Engine, batch_time=bt, b_max=d["b_max"], k_max=d["k_max"], kv_capacity_tokens=d["kv_cap"])


def make_length(d, prefix=""):
    d = {k[len(prefix):]: v for k, v in d.items() if k.startswith(prefix)}
    k = d["kind"]
    if k == "fixed":
        return call(fluidq.Fixed, n=d["n"])
    if k == "geometric":
        return call(fluidq.Geometric, mean_tokens=d["mean"])
    if k == "poisson":
        return call(fluidq.PoissonLength, mean_tokens=d["mean"])
    if k == "lognormal":
        return call(fluidq.LogNormal, mu=d["mu"], sigma=d["sigma"])
    if k == "empirical":
        return call(fluidq.Empirical, values=d["values"], weights=d["weights"])
    return d["n"]  # a plain int: Workload takes it as Fixed


def make_arrival(d):
    k = d["arr_kind"]
    if k == "poisson":
        return call(fluidq.Poisson, rate_per_s=d["rate"])
    if k == "periodic":
        return call(fluidq.Periodic, rate_per_s=d["rate"])
    if k == "gamma":
        return call(fluidq.Gamma, rate_per_s=d["rate"], cv=d["cv"])
    return call(fluidq.TraceArrivals, times_s=d["times"])


def make_workload(d):
    return call(fluidq.Workload, arrival=make_arrival(d), prompt_tokens=make_length(d, "p_"),
                output_tokens=make_length(d, "o_"))


POLICIES = ["sarathi", "orca", "vllm", "fastertransformer", "vllm-chunked", "sarathi", "nope"]


# ------------------------------------------------------------------------------------------------
# the tests
# ------------------------------------------------------------------------------------------------

@settings(FUZZ, max_examples=60 * SCALE)
@given(d=params(LEN("")))
def test_length_laws(d):
    def body():
        law = make_length(d)
        if d["kind"] == "int":
            return
        call(lambda: law.mean)
        call(lambda: law.mean_square)
        call(law.sample, np.random.default_rng(0), 5)
    guarded(body)


@settings(FUZZ, max_examples=40 * SCALE)
@given(d=params(ARR))
def test_arrivals(d):
    def body():
        arr = make_arrival(d)
        call(arr.times, np.random.default_rng(0), horizon_s=5.0)
        call(arr.times, np.random.default_rng(0), n=5)
    guarded(body)


WL = {**ARR, **LEN("p_"), **LEN("o_")}


@settings(FUZZ, max_examples=50 * SCALE)
@given(d=params({**BT, **ENG, **WL, "n_engines": [1, 2, 4], "policy": POLICIES, "tol": [0.02, 0.1]}))
def test_capacity_and_verdicts(d):
    def body():
        eng = make_engine(make_batch_time(d), d)
        call(fluidq.max_throughput, eng, n_engines=d["n_engines"])
        wl = make_workload(d)
        call(fluidq.max_throughput, eng, wl, n_engines=d["n_engines"])
        call(fluidq.check_stability, eng, wl, d["policy"], tolerance=d["tol"], n_engines=d["n_engines"])
    guarded(body)


@settings(FUZZ, max_examples=30 * SCALE)
@given(d=params({**BT, **ENG, "kv_tokens": [None, 4000.0], "prompt": [None, 100, 16], "lp": [100.0, 620.3],
                 "ld": [100.0, 2117.6], "policy": POLICIES}))
def test_regions(d):
    def body():
        eng = make_engine(make_batch_time(d), d)
        call(fluidq.stability_region, eng, kv_tokens=d["kv_tokens"], prompt_tokens=d["prompt"])
        call(fluidq.region_mix, eng, (d["lp"], d["ld"]))
        call(fluidq.policy_region, eng, d["policy"], prompt_tokens=d["prompt"])
    guarded(body)


@settings(FUZZ, max_examples=25 * SCALE)
@given(d=params({**BT, **ENG, **WL, "policy": POLICIES, "horizon": [1.0, 2.0], "n": [None, 20, 50], "warmup": [0.0, 0.5]}))
def test_simulate(d):
    def body():
        eng = make_engine(make_batch_time(d), d)
        wl = make_workload(d)
        call(fluidq.simulate, eng, wl, d["policy"], horizon_s=d["horizon"], n_requests=d["n"],
             rng=np.random.default_rng(0), warmup_s=d["warmup"])
    guarded(body)


@settings(FUZZ, max_examples=20 * SCALE)
@given(d=params({**BT, **ENG, "rate": [1.0, 3.0], "prompt": [16, 100], "output": [20, 50], "policy": POLICIES,
                 "max_prefill": [3, 4], "max_decode": [20, 30], "max_states": [500000, 2000]}))
def test_dtmc(d):
    def body():
        eng = make_engine(make_batch_time(d), d)
        p = call(fluidq.Fixed, n=d["prompt"])
        o = call(fluidq.Geometric, mean_tokens=d["output"])
        wl = call(fluidq.Workload, arrival=call(fluidq.Poisson, rate_per_s=d["rate"]), prompt_tokens=p, output_tokens=o)
        call(fluidq.build_dtmc, eng, wl, d["policy"], max_prefill=d["max_prefill"], max_decode=d["max_decode"],
             max_states=d["max_states"])
    guarded(body)


@settings(FUZZ, max_examples=30 * SCALE)
@given(tokens=st.one_of(st.just(list(range(16, 1025, 64))), st.lists(st.sampled_from(EDGE[:16] + [16, 128, 512]), max_size=6)),
       seconds=st.one_of(st.none(), st.lists(st.sampled_from(EDGE[:16] + [0.05, 0.1]), max_size=6)),
       kind=st.sampled_from(["auto", "staircase", "piecewise-linear", "affine", "tabulated", "nope"]),
       folds=st.sampled_from([2, 3, 5, *EDGE]), loss=st.sampled_from(["relative", "absolute", "x"]))
def test_fit_batch_time(tokens, seconds, kind, folds, loss):
    if seconds is None:
        seconds = [0.01128 + 0.03547 * math.ceil(t / 128) if isinstance(t, int) and 0 < t < 10**6 else 0.1 for t in tokens]
    guarded(lambda: call(fluidq.fit_batch_time, tokens, seconds, kind, folds=folds, loss=loss))


@settings(FUZZ, max_examples=60 * SCALE)
@given(n_engines=st.sampled_from([0, -1, 1.5, 2**63, 2**64 + 1, 10**6, 10**400, True, None, "2", math.nan, 2]))
def test_max_throughput_engine_counts(n_engines):
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    guarded(lambda: call(fluidq.max_throughput, eng, n_engines=n_engines))


@settings(FUZZ, max_examples=20 * SCALE)
@given(name=st.one_of(st.sampled_from(["paper-codellama34b-a100", "", " ", "nope", "../../etc/passwd", "x" * 300]),
                      st.text(max_size=10)))
def test_load_profile(name):
    guarded(lambda: call(fluidq.load_profile, name))


@pytest.mark.parametrize("mu, sigma", [(23, 100001), (1e308, 1.0), (4.0, 1e308), (-1e308, 1.0), (0.0, 1e-320)])
def test_lognormal_issue_13(mu, sigma):
    def body():
        law = call(fluidq.LogNormal, mu=mu, sigma=sigma)
        call(lambda: law.mean)
        call(law.sample, np.random.default_rng(0), 5)
        eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
        wl = call(fluidq.Workload, arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=law, output_tokens=law)
        call(fluidq.max_throughput, eng, wl)
    guarded(body)


# ------------------------------------------------------------------------------------------------
# networks
# ------------------------------------------------------------------------------------------------

NET = {**BT, **ENG, "rate": [0.5, 1.0], "hops": [1, 2, 3], "n_stations": [1, 2], "prompt": [16, 100], "output": [8, 20],
       "router": st.sampled_from([None, "jsq", "random"]), "probabilities": [None, (0.5, 0.5)],
       "horizon": [2.0, 5.0], "tolerance": [1e-9, 1e-6]}


@settings(FUZZ, max_examples=30 * SCALE)
@given(d=params(NET))
def test_networks(d):
    from fluidq.network import Hop, Network, RequestClass, Router, Station

    def body():
        eng = make_engine(make_batch_time(d), d)
        n = d["n_stations"] if isinstance(d["n_stations"], int) and 1 <= d["n_stations"] <= 3 else 1
        stations = [call(Station, name=f"E{i}", engine=eng) for i in range(n)]
        routers = []
        target = "E0"
        if d["router"] and n == 2:
            routers = [call(Router, name="pool", engines=("E0", "E1"), policy=d["router"],
                            probabilities=d["probabilities"] if d["router"] == "random" else None)]
            target = "pool"
        hops = d["hops"] if isinstance(d["hops"], int) and 0 <= d["hops"] <= 5 else d["hops"]
        route = tuple(call(Hop, engine=target, prompt_tokens=d["prompt"], output_tokens=d["output"])
                      for _ in range(hops if isinstance(hops, int) and 0 <= hops <= 5 else 1))
        cls = call(RequestClass, name="c", route=route, rate_per_s=d["rate"])
        net = call(Network, stations=tuple(stations), classes=(cls,), routers=tuple(routers))
        call(fluidq.fluid_stability, net, tolerance=d["tolerance"])
        call(fluidq.simulate_network, net, horizon_s=d["horizon"], rng=np.random.default_rng(0))
    guarded(body)


@pytest.mark.parametrize("hops", [2000])
def test_long_route_is_refused_or_answered_in_time(hops):
    from fluidq.network import Hop, Network, RequestClass, Station

    def body():
        eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=256)
        route = tuple(Hop(engine="E1", prompt_tokens=16, output_tokens=8) for _ in range(hops))
        net = call(Network, stations=(Station(name="E1", engine=eng),),
                   classes=(RequestClass(name="c", route=route, rate_per_s=0.01),))
        call(fluidq.fluid_stability, net)
    guarded(body)


@pytest.mark.slow
def test_dtmc_threshold_of_vllm_chunked_in_time():
    """Issue 13: ``stability_threshold(method="dtmc")`` for vllm-chunked on caps 10 x 60 took over 20 s."""
    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    wl = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=3.0), prompt_tokens=100,
                         output_tokens=fluidq.Geometric(mean_tokens=100))
    guarded(lambda: call(fluidq.stability_threshold, eng, wl, "vllm-chunked", method="dtmc", max_prefill=10,
                         max_decode=60))


# ------------------------------------------------------------------------------------------------
# schedulers and orderings
# ------------------------------------------------------------------------------------------------

ORDER = {"order_kind": st.sampled_from(["fcfs", "sjf", "srpt", "las", "pars", "gamma-boost", "memguard", "gamma-ada"]),
         "bound": [None, 0, 4], "gamma": [10.0, 1.0], "threshold": [120.0, 1.0], "k_tokens": [32, 8],
         "sched_kind": st.sampled_from(["sarathi", "orca", "vllm", "fastertransformer", "vllm-chunked", "unified", "uniboost"]),
         "s_bmax": [None, 256, 64], "s_kmax": [None, 16], "horizon": [1.0, 2.0], "rate": [1.0, 3.0]}


def make_order(d):
    k, b = d["order_kind"], d["bound"]
    if k == "fcfs":
        return call(fluidq.FCFS, overtaking_bound=b)
    if k in ("sjf", "srpt", "las"):
        return call(getattr(fluidq, k.upper()), overtaking_bound=b)
    if k == "pars":
        return call(fluidq.PARS, overtaking_bound=b, threshold_s=d["threshold"], missing_score="length")
    if k == "gamma-boost":
        return call(fluidq.GammaBoost, overtaking_bound=b, gamma_per_s=d["gamma"])
    if k == "gamma-ada":
        return call(fluidq.GammaAda, overtaking_bound=b, gamma_per_s=d["gamma"])
    return call(fluidq.MemGuard, overtaking_bound=b, k_tokens=d["k_tokens"])


@settings(FUZZ, max_examples=30 * SCALE)
@given(d=params(ORDER))
def test_schedulers_and_orderings(d):
    def body():
        order = make_order(d)
        s = d["sched_kind"]
        if s == "unified":
            pol = call(fluidq.Unified, order=order, b_max=d["s_bmax"], k_max=d["s_kmax"])
        elif s == "uniboost":
            pol = call(fluidq.UniBoost, gamma_per_s=d["gamma"], k_tokens=d["k_tokens"], b_max=d["s_bmax"])
        else:
            cls = {"sarathi": fluidq.Sarathi, "orca": fluidq.Orca, "vllm": fluidq.VLLM,
                   "fastertransformer": fluidq.FasterTransformer, "vllm-chunked": fluidq.VLLMChunked}[s]
            pol = call(cls, order=order, b_max=d["s_bmax"], k_max=d["s_kmax"])
        eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, kv_capacity_tokens=20000)
        wl = call(fluidq.Workload, arrival=call(fluidq.Poisson, rate_per_s=d["rate"]), prompt_tokens=100,
                  output_tokens=fluidq.Geometric(mean_tokens=50))
        call(fluidq.simulate, eng, wl, pol, horizon_s=d["horizon"], rng=np.random.default_rng(0))
        call(fluidq.check_stability, eng, wl, pol)
    guarded(body)


# ------------------------------------------------------------------------------------------------
# calls the fuzzing found failing
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", ["FCFS", "SJF", "SRPT", "LAS", "PARS", "GammaBoost", "GammaAda", "MemGuard"])
def test_orderings_check_their_overtaking_bound(cls):
    """Every parameter is checked at the public boundary: an overtaking bound is None or an integer >= 0."""
    accepted = []
    for bound in (math.nan, -1, 1.5, 1e308, "x", 2**64 + 1):
        try:
            getattr(fluidq, cls)(overtaking_bound=bound)
        except FluidqError:
            continue
        accepted.append(bound)
    assert not accepted, f"{cls}(overtaking_bound=...) accepts {accepted!r}"


def test_region_of_a_huge_prompt():
    eng = fluidq.Engine(batch_time=fluidq.ContextAware(base=fluidq.Staircase(c=0.01128, a=0.03547, b0=128),
                                                       kv_s_per_token=1e-6), b_max=512, k_max=64, kv_capacity_tokens=4000)
    guarded(lambda: call(fluidq.stability_region, eng, kv_tokens=4000.0, prompt_tokens=1e308))
