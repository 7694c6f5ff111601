"""One event clock drives one engine and every station of a network (issue 14, layer 3): ``run_generic``
(``simulate(method="generic")``) runs its one engine as the one station of :class:`fluidq.kernel.clock.EventClock`,
the clock ``run_clock`` runs a network's stations on, and neither has a loop of its own that advances time.

Checks that fail if the two drivers part: both go through ``EventClock.run`` (once per run); ``run_generic``
gives, field for field, the run of the one-iteration primitive ``step`` called until it says the run is over
(async scheduling, the window, initial residents, token and block KV caches, swaps, records, batch records,
progress, the first token from the prefill and a composition batch time included); and a one-station
network on the Python clock (``method="python"`` and ``"generic"``) gives ``simulate(method="generic")``'s
batches, finish times and preemptions on random engines, with and without a KV cache."""
import ast
import inspect
import textwrap

import numpy as np
import pytest

import fluidq
from fluidq import Engine, Staircase
from fluidq.engine import VLLM, Memory
from fluidq.kernel import clock, step
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.sim import simulate_network
from fluidq.policies import resolve_policy
from fluidq.policies.base import RequestState
from fluidq.workload import Poisson


@pytest.fixture
def clock_runs(monkeypatch):
    """Counts the calls of ``EventClock.run``."""
    calls = []
    real = clock.EventClock.run

    def counted(self, *a, **k):
        calls.append(self)
        return real(self, *a, **k)

    monkeypatch.setattr(clock.EventClock, "run", counted)
    return calls


def _one_station(engine, policy, rate, p, d):
    return Network(stations=[Station(name="E", engine=engine, policy=policy)],
                   classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=rate), rate_per_s=rate,
                                         route=[Hop(engine="E", prompt_tokens=p, output_tokens=d)])])


def test_run_generic_and_the_network_clock_call_the_one_event_clock(clock_runs):
    """Fails if ``run_generic`` (or ``simulate``'s generic path) or ``run_clock`` stops going through
    ``EventClock.run``, or if ``run_generic`` gets a loop of its own again."""
    tau = [0.01] * 129
    step.run_generic([0.0, 0.5, 1.0], [10, 20, 30], [3, 2, 1], policy=resolve_policy("sarathi"), b_max=128,
                     k_max=None, tau_b=tau, ks=0.0, horizon=5.0, record=False, check=True)
    assert len(clock_runs) == 1
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256)
    w = fluidq.Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=100, output_tokens=20)
    fluidq.simulate(e, w, "vllm", horizon_s=10.0, rng=1, method="generic")
    assert len(clock_runs) == 2
    fluidq.simulate(e, w, "vllm", horizon_s=10.0, rng=1, method="fast")  # (the compiled kernel: not this clock)
    assert len(clock_runs) == 2
    for method in ("python", "generic"):
        simulate_network(_one_station(e, "vllm", 5.0, 100, 20), horizon_s=10.0, rng=1, method=method)
    assert len(clock_runs) == 4
    for fn in (step.run_generic, clock.run_engine):  # no loop of their own
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.While, ast.For))], fn.__name__


def _requests(rng, n, rate):
    arr = np.cumsum(rng.exponential(1.0 / rate, n)).tolist()
    P = rng.integers(1, 300, n).tolist()
    D = rng.integers(0, 60, n).tolist()
    return arr, P, D


def _by_step(arr, P, D, **kw):
    """The reference: ``step`` (begin then finish) until the run is over -- what ``run_generic`` was."""
    run = step.EngineRun(arr, P, D, **kw)
    while step.step(run):
        pass
    return run.result()


def _compose(chunks, contexts):
    return 0.004 + 2e-5 * sum(m for m, _ in chunks) + 1e-7 * sum(c for _, c in chunks) + 3e-6 * len(contexts) \
        + 1e-8 * sum(contexts)


def _random_engine_args(rng, case):
    pol = ["sarathi", "vllm", "orca", "fastertransformer", "vllm-chunked", "sarathi"][case % 6]
    b_max = int(rng.choice([64, 128, 256]))
    k_max = None if rng.random() < 0.5 else int(rng.integers(2, 40))
    base = float(rng.uniform(0.005, 0.02))
    tau = [base + 1e-5 * b for b in range(b_max + 1)]
    kw = dict(policy=resolve_policy(pol), b_max=b_max, k_max=k_max, tau_b=tau, ks=0.0, horizon=60.0,
              record=bool(rng.random() < 0.7), check=True, record_batches=bool(rng.random() < 0.3),
              emit_at_prefill=bool(rng.random() < 0.4), async_scheduling=bool(rng.random() < 0.5))
    mem = case % 4
    if mem == 1:  # token KV cache, recompute or swap
        kw.update(kv_cap=int(rng.integers(1500, 6000)), preemption=str(rng.choice(["recompute", "swap"])),
                  swap_s_per_token=1e-6)
    elif mem == 2:  # block KV cache (vLLM's), maybe with prefix caching
        kw.update(kv_cap=int(rng.integers(1500, 6000)), memory=VLLM.with_(prefix_caching=bool(rng.random() < 0.5)))
    elif mem == 3 and rng.random() < 0.5:
        kw.update(ks=2e-7)  # a context-aware time
    if rng.random() < 0.25:
        kw.update(compose=_compose, ks=0.0)
    if rng.random() < 0.3 and "kv_cap" not in kw:
        kw["initial"] = [RequestState(rid=j, arrival_s=0.0, prompt_tokens=int(rng.integers(5, 200)),
                                      output_tokens=int(rng.integers(1, 50)), prefilled=0, decoded=0)
                         for j in range(int(rng.integers(1, 6)))]
    return pol, kw


@pytest.mark.parametrize("case", range(24))
def test_run_generic_on_the_clock_is_the_step_primitive_run(case):
    """Random engines: ``run_generic`` on the event clock gives exactly (every field, every float) the run of
    ``step`` called until the run is over, and the progress reports come at the same times."""
    rng = np.random.default_rng(1000 + case)
    _, kw = _random_engine_args(rng, case)
    arr, P, D = _requests(rng, 400, float(rng.uniform(3.0, 25.0)))
    if case % 5 == 0:  # arrivals past the horizon: the idle engine wakes at the horizon
        kw["horizon"] = arr[len(arr) // 2]
    seen_a, seen_b = [], []
    got = step.run_generic(arr, P, D, progress=lambda t, n: seen_a.append((t, n)), **kw)
    ref = _by_step(arr, P, D, progress=lambda t, n: seen_b.append((t, n)), **kw)
    assert got.keys() == ref.keys()
    for k in ref:
        if k == "batches" and ref[k] is not None:
            assert [(b.prefill, b.decode) for b in got[k]] == [(b.prefill, b.decode) for b in ref[k]]
        else:
            np.testing.assert_equal(got[k], ref[k], err_msg=k)
    assert seen_a == seen_b
    assert got["iterations"] > 20


def test_run_generic_with_the_window_is_the_step_primitive_run():
    """The window (FCFS built-in schedulers see the served and the oldest waiting requests), overloaded."""
    rng = np.random.default_rng(7)
    for pol in ("sarathi", "vllm", "orca"):
        for async_ in (False, True):
            kw = dict(policy=resolve_policy(pol), b_max=128, k_max=16, tau_b=[0.01 + 1e-5 * b for b in range(129)],
                      ks=0.0, horizon=12.0, record=True, check=False, window=True, async_scheduling=async_)
            arr, P, D = _requests(rng, 500, 40.0)
            got, ref = step.run_generic(arr, P, D, **kw), _by_step(arr, P, D, **kw)
            for k in ref:
                np.testing.assert_equal(got[k], ref[k], err_msg=f"{pol} async={async_} {k}")
            assert got["n_arrived"] > got["iterations"] / 10 > 10


@pytest.mark.parametrize("case", range(12))
def test_one_station_network_is_simulate_generic_on_random_engines(case):
    """A one-station network on the Python clock, stepped batch by batch (``"generic"``) or skipping runs
    where it may (``"python"``), gives ``simulate(method="generic")``'s run: its batches, each request's
    finish, its preemptions and rejections.  Random engines, policies and loads, without a KV cache and with
    a token or block (vLLM) one; the first token from the prefill or not."""
    rng = np.random.default_rng(50 + case)
    pol = ["sarathi", "vllm", "orca", "fastertransformer", "vllm-chunked", "sarathi"][case % 6]
    kv = case % 3
    e = Engine(batch_time=Staircase(c=float(rng.uniform(0.005, 0.015)), a=float(rng.uniform(0.01, 0.04)), b0=128),
               b_max=int(rng.choice([128, 256, 512])), k_max=None if rng.random() < 0.5 else int(rng.integers(4, 64)),
               kv_capacity_tokens=None if kv == 0 else int(rng.integers(2000, 8000)),
               memory=VLLM if kv == 2 else Memory() if kv == 1 else None,
               prefill_emits_token=bool(rng.random() < 0.4))
    p, d = int(rng.integers(20, min(400, e.b_max))), int(rng.integers(1, 80))  # (a prompt every policy fits)
    rate = float(rng.uniform(0.4, 1.1)) * 0.9 * e.b_max / float(e.batch_time(e.b_max)) / (p + d)
    w = fluidq.Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=p, output_tokens=d)
    H = 30.0
    single = fluidq.simulate(e, w, pol, horizon_s=H, rng=case, method="generic")
    fin, arr = single.requests["finish_s"], single.requests["arrival_s"]
    done = np.isfinite(fin)
    for method in ("generic", "python"):
        net = simulate_network(_one_station(e, pol, rate, p, d), horizon_s=H, rng=case, record_hops=True,
                               method=method)
        order = np.argsort(net.hops["arrival_s"], kind="stable")
        assert net.batches == single.n_iterations > 50, method
        np.testing.assert_array_equal(net.hops["arrival_s"][order], arr[done])
        np.testing.assert_array_equal(net.hops["finish_s"][order], fin[done])
        assert net.preemptions == {"E": single.preemptions}
        assert net.rejected == {"E": single.rejected}


@pytest.mark.parametrize("pol", ["sarathi", "orca", "vllm"])
def test_arrivals_at_a_batch_end_are_read_first_on_both_clocks(pol):
    """Periodic arrivals every 1/16 s and a constant 1/8 s batch time put an arrival exactly at every batch end:
    both drivers must read it before forming the next batch (the clock's equal-time rule).  Fails if either
    one (or ``EventClock.run``) forms the batch first: the batches and finish times then differ."""
    from fluidq import Affine
    from fluidq.workload import Periodic

    e = Engine(batch_time=Affine(c=0.125, a=0.0), b_max=256)
    w = fluidq.Workload(arrival=Periodic(rate_per_s=16.0), prompt_tokens=40, output_tokens=3)
    single = fluidq.simulate(e, w, pol, horizon_s=20.0, rng=0, method="generic")
    net = Network(stations=[Station(name="E", engine=e, policy=pol)],
                  classes=[RequestClass(name="c", arrival=Periodic(rate_per_s=16.0), rate_per_s=16.0,
                                        route=[Hop(engine="E", prompt_tokens=40, output_tokens=3)])])
    fin = single.requests["finish_s"]
    done = np.isfinite(fin)
    for method in ("generic", "python"):
        r = simulate_network(net, horizon_s=20.0, rng=0, record_hops=True, method=method)
        order = np.argsort(r.hops["arrival_s"], kind="stable")
        assert r.batches == single.n_iterations > 100, method
        np.testing.assert_array_equal(r.hops["finish_s"][order], fin[done])
