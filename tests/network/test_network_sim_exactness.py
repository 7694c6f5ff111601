"""The network simulator's speed-ups change no result.

* the batch-time table built from one vectorised call holds exactly the scalar call's floats (so runs
  that look batch times up in it are bit-identical with runs that call the model per batch);
* the event-skipping path gives the generic path's completions, request times and series on more
  network shapes than ``test_network_sim`` covers (random lengths on one engine, random routers,
  join-the-shortest-queue by requests, a three-engine DAG, classical networks).
"""
from __future__ import annotations

import numpy as np
import pytest

from fluidq import Affine, Engine, PiecewiseLinear, Staircase
from fluidq.batchtime.models import Tabulated
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.examples import lu_kumar, rybko_stolyar
from fluidq.network.sim import _batch_time_table, simulate_network
from fluidq.workload import Geometric


@pytest.mark.parametrize("bt", [Staircase(c=0.01128, a=0.03547, b0=128), Affine(c=0.0123457, a=0.0000791),
                                PiecewiseLinear(c=0.02, a=0.0001234, b0=100),
                                Tabulated(tokens=(1, 64, 256, 700), seconds=(0.011, 0.013, 0.021, 0.047))])
def test_batch_time_table_is_the_scalar_call(bt):
    eng = Engine(batch_time=bt, b_max=700)
    tab = _batch_time_table(eng)
    assert sorted(tab) == list(range(1, 701))
    for b in range(1, 701):
        assert tab[b] == float(bt(b)), b  # bit-for-bit, not approximately


def test_batch_time_table_falls_back_when_the_model_cannot_cover_b_max():
    bt = Tabulated(tokens=(16, 64, 256), seconds=(0.011, 0.013, 0.021))  # raises beyond 256 tokens
    assert _batch_time_table(Engine(batch_time=bt, b_max=512)) == {}


def _one_geometric():
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    return Network(stations=[Station(name="E", engine=eng)], classes=[RequestClass(
        name="c", rate_per_s=8.0, route=[Hop(engine="E", prompt_tokens=Geometric(mean_tokens=300),
                                             output_tokens=Geometric(mean_tokens=40))])])


@pytest.mark.parametrize("case", ["one_geometric", "random", "jsq_requests", "dag", "rybko_stolyar", "lu_kumar"])
def test_event_skipping_matches_generic_on_more_shapes(small, same_runs, case):
    net, h = {"one_geometric": (_one_geometric(), 60.0),
              "random": (small["random"]((0.5, 0.5)).at_load(0.9), 40.0),
              "jsq_requests": (small["jsq"]().at_load(1.05), 40.0),
              "dag": (small["dag"]().at_load(0.9), 40.0),
              "rybko_stolyar": (rybko_stolyar(tokens_per_unit=10), 50.0),
              "lu_kumar": (lu_kumar(tokens_per_unit=10), 50.0)}[case]
    a = simulate_network(net, horizon_s=h, rng=11, method="generic")
    b = simulate_network(net, horizon_s=h, rng=11, method="auto")
    assert sum(a.completed.values()) > 20
    same_runs(a, b)


def test_batch_time_table_is_left_empty_for_a_huge_b_max():
    from fluidq.network.sim import _TABLE_MAX

    assert _batch_time_table(Engine(batch_time=Affine(c=0.01, a=1e-6), b_max=_TABLE_MAX + 1)) == {}
    assert len(_batch_time_table(Engine(batch_time=Affine(c=0.01, a=1e-6), b_max=_TABLE_MAX))) == _TABLE_MAX


def _one_engine(engine, arrival, prompt, output):
    return Network(stations=[Station(name="E", engine=engine)],
                   classes=[RequestClass(name="c", arrival=arrival, rate_per_s=arrival.rate_per_s,
                                         route=[Hop(engine="E", prompt_tokens=prompt, output_tokens=output)])])


@pytest.mark.parametrize("case", ["periodic_exact_ties", "periodic", "poisson", "poisson_staircase"])
@pytest.mark.parametrize("method", ["auto", "generic"])
def test_one_engine_network_is_the_single_engine_simulator(case, method):
    """A one-station network and ``fluidq.simulate`` draw the same arrivals from the same seed; with fixed
    lengths they must give the same requests: same number finished (the batch in progress at the horizon
    completed, in both), same mean sojourn.

    ``periodic_exact_ties``: arrivals every 1/16 s and batches of exactly 1/8 s (binary fractions, so event
    times coincide exactly): an arrival at the instant a batch ends joins the next batch, in both.
    """
    import fluidq
    from fluidq.workload import Periodic, Poisson

    flat = Engine(batch_time=Affine(c=0.125, a=0.0), b_max=256)
    stair = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    engine, arrival, prompt, output = {
        "periodic_exact_ties": (flat, Periodic(rate_per_s=16.0), 96, 8),
        "periodic": (flat, Periodic(rate_per_s=20.0), 96, 8),
        "poisson": (flat, Poisson(rate_per_s=16.0), 96, 8),
        "poisson_staircase": (stair, Poisson(rate_per_s=15.0), 100, 100)}[case]
    horizon = 60.0
    single = fluidq.simulate(engine, fluidq.Workload(arrival=arrival, prompt_tokens=prompt, output_tokens=output),
                             "sarathi", horizon_s=horizon, rng=1, method="fast")
    fin = np.asarray(single.requests["finish_s"])
    arr = np.asarray(single.requests["arrival_s"])
    done = np.isfinite(fin)  # (both complete the batch in progress at the horizon)
    net = simulate_network(_one_engine(engine, arrival, prompt, output), horizon_s=horizon, rng=1, method=method)
    assert net.completed["c"] == int(done.sum()) > 200
    assert net.mean_sojourn_s["c"] == pytest.approx(float(np.mean(fin[done] - arr[done])), rel=1e-12)


def test_event_skipping_matches_generic_at_coincident_times(same_runs):
    """Two stations in tandem whose event times coincide exactly (periodic arrivals, batch times 1/8 s): the
    event-skipping path orders arrivals, run cuts and routed requests at equal times as the generic path."""
    from fluidq.workload import Periodic

    e = Engine(batch_time=Affine(c=0.125, a=0.0), b_max=256)
    net = Network(stations=[Station(name="E", engine=e), Station(name="F", engine=e)],
                  classes=[RequestClass(name="c", arrival=Periodic(rate_per_s=16.0), rate_per_s=16.0, route=[
                      Hop(engine="E", prompt_tokens=96, output_tokens=8),
                      Hop(engine="F", prompt_tokens=64, output_tokens=4)])])
    a = simulate_network(net, horizon_s=30.0, rng=1, method="generic")
    b = simulate_network(net, horizon_s=30.0, rng=1, method="auto")
    assert a.completed["c"] > 300
    same_runs(a, b, exact=True)


def test_hop_tasks_carry_the_request_state_defaults():
    """The simulator builds each hop's RequestState by attribute stores; every RequestState field must be
    set, to the value the RequestState constructor gives (a field added there and not here fails)."""
    import dataclasses
    import math

    from fluidq.policies import Sarathi
    from fluidq.policies.base import RequestState

    seen = []
    names = [f.name for f in dataclasses.fields(RequestState)]

    class Spy:
        name = "spy"

        def __init__(self):
            self.inner = Sarathi()

        def select(self, view):
            if not seen:  # the first resident as the first batch finds it (AttributeError: a field never set)
                r = view.requests[0]
                seen.append((r, {n: getattr(r, n) for n in names}))
            return self.inner.select(view)

    eng = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256)
    net = Network(stations=[Station(name="E", engine=eng, policy=Spy())], classes=[RequestClass(
        name="c", rate_per_s=5.0, route=[Hop(engine="E", prompt_tokens=40, output_tokens=3)])])
    simulate_network(net, horizon_s=5.0, rng=2, method="generic")
    assert seen
    task, state = seen[0]
    assert isinstance(task, RequestState) and state["prompt_tokens"] == 40 and state["output_tokens"] == 3
    ref = RequestState(state["rid"], state["arrival_s"], 40, 3)
    for n in names:
        got, want = state[n], getattr(ref, n)
        assert got == want or (isinstance(want, float) and math.isnan(want) and math.isnan(got)), n


def test_collector_is_restored_after_a_run_and_after_an_error():
    import gc

    from fluidq.workload import Poisson

    net = _one_engine(Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256), Poisson(rate_per_s=5.0), 40, 3)
    assert gc.isenabled()
    simulate_network(net, horizon_s=5.0, rng=1)
    assert gc.isenabled()
    gc.disable()
    try:
        simulate_network(net, horizon_s=5.0, rng=1)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()

    class Broken:
        name = "broken"

        def select(self, view):
            raise RuntimeError("policy failed")

    bad = Network(stations=[Station(name="E", engine=Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256),
                                    policy=Broken())], classes=net.classes)
    with pytest.raises(RuntimeError, match="policy failed"):
        simulate_network(bad, horizon_s=5.0, rng=1)
    assert gc.isenabled()


def _constant_time_tandem(c, priorities=False):
    e = Engine(batch_time=Affine(c=c, a=0.0), b_max=512)
    prio = {"priority": ["x.3", "x.1"]} if priorities else {}
    return Network(stations=[Station(name="E1", engine=e, **prio), Station(name="E2", engine=e)],
                   classes=[RequestClass(name="x", rate_per_s=2.5, route=[
                       Hop(engine="E1", prompt_tokens=32, output_tokens=16),
                       Hop(engine="E2", prompt_tokens=400, output_tokens=32),
                       Hop(engine="E1", prompt_tokens=48, output_tokens=8)])])


@pytest.mark.parametrize("c", [0.25, 0.3])
@pytest.mark.parametrize("priorities", [False, True])
@pytest.mark.parametrize("seed", [0, 3])
def test_event_skipping_matches_generic_when_batch_times_are_constant(same_runs, c, priorities, seed):
    """Constant batch times make the batch ends of different stations coincide exactly, with Poisson
    arrivals too; at equal times both paths process the batch that started first, then the lower
    station index, so a request routed at that instant joins the same batch in both."""
    net = _constant_time_tandem(c, priorities)
    a = simulate_network(net, horizon_s=100.0, rng=seed, method="generic")
    b = simulate_network(net, horizon_s=100.0, rng=seed, method="auto")
    assert a.completed["x"] > 100
    same_runs(a, b, exact=True)


def test_every_horizon_gives_a_full_grid():
    """Grid points k * horizon/400 up to the horizon, whatever rounding does to the last one."""
    net = _one_engine(Engine(batch_time=Affine(c=0.05, a=0.0002), b_max=512),
                      __import__("fluidq.workload", fromlist=["Poisson"]).Poisson(rate_per_s=5.0), 10, 10)
    for h in [3.3, 459.4800000000001, *np.linspace(1.0, 60.0, 41).tolist()]:
        r = simulate_network(net, horizon_s=h, rng=0)
        assert len(r.times_s) == 401 and r.times_s[-1] <= h and r.times_s[-1] == pytest.approx(h)
        assert len(r.total_in_system) == 401 and np.all(np.diff(r.times_s) > 0)
    r = simulate_network(net, horizon_s=0.3, rng=0, record_dt_s=0.1)
    assert r.times_s.tolist() == [0.0, 0.1, 0.2, 0.3]


@pytest.mark.parametrize("kw, name", [({"max_batches": 0}, "max_batches"), ({"max_batches": 1.5}, "max_batches"),
                                      ({"record_dt_s": 1e-9}, "record_dt_s"), ({"rng": -1}, "rng"),
                                      ({"initial": [1, 2]}, "initial"), ({"check_batches": "yes"}, "check_batches"),
                                      ({"horizon_s": 0.0}, "horizon_s"), ({"method": "fast"}, "method")])
def test_bad_simulation_arguments_are_named(kw, name):
    from fluidq.errors import FluidqError
    from fluidq.workload import Poisson

    net = _one_engine(Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256), Poisson(rate_per_s=5.0), 10, 10)
    args = {"horizon_s": 10.0, **kw}
    with pytest.raises(FluidqError, match=name):
        simulate_network(net, **args)


def test_a_kv_cache_limit_is_modelled_not_ignored():
    """A station's KV cache binds (tests/network/test_network_kv.py checks its rules against the single
    engine's): here 100 + 100 tokens never fit in 150, so every hop is refused and nothing completes."""
    from fluidq.workload import Poisson

    eng = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256, kv_capacity_tokens=150)
    r = simulate_network(_one_engine(eng, Poisson(rate_per_s=5.0), 100, 100), horizon_s=10.0, rng=1)
    assert r.rejected["E"] > 20 and r.completed["c"] == 0 and r.batches == 0
