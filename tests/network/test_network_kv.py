"""Network stations with a KV cache run the single-engine kernel's memory rules.

* a one-station network gives :func:`fluidq.simulate`'s run exactly -- every finished request's arrival
  and finish time, the iteration count (the batch in progress at the horizon included, in both), the
  preemptions per request and in total -- for every built-in scheduler, with and without ``k_max``,
  without memory, with token KV (the default rules) and with block KV (vLLM's preset, with and
  without prefix caching, and swapping), on small seeded runs where memory binds;
* hops that can never fit are refused and counted, in the network as in the single engine;
* a station with a KV cache beside one without: both methods give the same run, and the result
  reports preemptions per station;
* bad memory settings are refused naming the parameter.
"""
from __future__ import annotations

import numpy as np
import pytest

import fluidq
from fluidq import Engine, Staircase
from fluidq.engine import VLLM, Memory
from fluidq.errors import ParameterError
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.sim import simulate_network
from fluidq.workload import Poisson

SCHEDULERS = ["fastertransformer", "vllm", "orca", "sarathi", "vllm-chunked"]
MEMORIES = {"none": None, "tokens": Memory(), "blocks": VLLM, "blocks_prefix": VLLM.with_(prefix_caching=True),
            "blocks_swap": Memory(kind="blocks", block_size=16, preemption="swap")}


def _cap(memory, k_max):
    """KV tokens: small enough to bind (a k_max of 3 holds fewer requests, so it binds at a larger cache)."""
    return None if memory == "none" else (1800 if k_max is None else 3000)
SWAP_S = 2e-6
RATE, P, D, H = 6.0, 200, 60, 20.0


def _engine(cap, memory, k_max):
    return Engine(batch_time=Staircase(c=0.01128, a=0.0003547, b0=128), b_max=256, k_max=k_max,
                  kv_capacity_tokens=cap, memory=memory)


def _network(engine, policy, p=P, d=D):
    return Network(stations=[Station(name="E", engine=engine, policy=policy)],
                   classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=RATE), rate_per_s=RATE,
                                         route=[Hop(engine="E", prompt_tokens=p, output_tokens=d)])])


def _pair(engine, policy, seed, *, method="auto", p=P, d=D):
    swap = engine.kv_capacity_tokens is not None and engine.memory.preemption == "swap"
    w = fluidq.Workload(arrival=Poisson(rate_per_s=RATE), prompt_tokens=p, output_tokens=d)
    single = fluidq.simulate(engine, w, policy, horizon_s=H, rng=seed,
                             swap_s_per_token=SWAP_S if swap else None)
    net = simulate_network(_network(engine, policy, p, d), horizon_s=H, rng=seed, record_hops=True, method=method,
                           swap_s_per_token=SWAP_S if swap else None)
    return single, net


@pytest.mark.parametrize("k_max", [None, 3])
@pytest.mark.parametrize("memory", list(MEMORIES))
@pytest.mark.parametrize("policy", SCHEDULERS)
def test_one_station_network_is_the_single_engine_run(policy, memory, k_max):
    single, net = _pair(_engine(_cap(memory, k_max), MEMORIES[memory], k_max), policy, seed=5)
    fin = np.asarray(single.requests["finish_s"])
    arr = np.asarray(single.requests["arrival_s"])
    done = np.isfinite(fin)
    hops = net.hops
    order = np.argsort(hops["arrival_s"], kind="stable")
    assert single.n_iterations > 40
    assert net.completed["c"] == int(done.sum()) == len(order)
    np.testing.assert_array_equal(hops["arrival_s"][order], arr[done])
    np.testing.assert_array_equal(hops["finish_s"][order], fin[done])  # exactly, not approximately
    np.testing.assert_array_equal(hops["preemptions"][order], single.requests["preemptions"][done])
    assert net.batches == single.n_iterations
    assert net.preemptions == {"E": single.preemptions}
    assert net.rejected == {"E": single.rejected} == {"E": 0}


BINDING = ([(p, m, None) for p in ("sarathi", "vllm-chunked") for m in ("tokens", "blocks", "blocks_prefix",
                                                                       "blocks_swap")]
           + [(p, "tokens", None) for p in ("vllm", "orca")]
           + [(p, m, 3) for p in ("vllm", "orca") for m in ("blocks", "blocks_prefix", "blocks_swap")])


@pytest.mark.parametrize(("policy", "memory", "k_max"), BINDING)
def test_memory_binds_and_preempts_in_the_exactness_cases(policy, memory, k_max):
    """The exactness cases are not vacuous: in these the cache fills and requests are preempted."""
    cap = _cap(memory, k_max)
    single, net = _pair(_engine(cap, MEMORIES[memory], k_max), policy, seed=5)
    assert single.preemptions > 0 and single.peak_kv_tokens > 0.8 * cap
    assert net.preemptions["E"] == single.preemptions


@pytest.mark.parametrize("memory", ["tokens", "blocks"])
def test_hops_that_can_never_fit_are_rejected_as_in_the_single_engine(memory):
    engine = _engine(250, MEMORIES[memory], None)  # 200 + 60 tokens never fit
    single, net = _pair(engine, "sarathi", seed=2)
    assert single.rejected > 50
    assert net.rejected == {"E": single.rejected}
    assert net.completed["c"] == 0 and net.batches == 0
    assert net.in_system["c"][-1] == 0  # a refused request leaves the network


def _tandem(method):
    kv = _engine(1500, VLLM, None)
    plain = Engine(batch_time=Staircase(c=0.01128, a=0.0003547, b0=128), b_max=256)
    net = Network(stations=[Station(name="E", engine=kv, policy="vllm-chunked"),
                            Station(name="F", engine=plain, policy="sarathi")],
                  classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=RATE), rate_per_s=RATE,
                                        route=[Hop(engine="E", prompt_tokens=P, output_tokens=D),
                                               Hop(engine="F", prompt_tokens=100, output_tokens=20)])])
    return simulate_network(net, horizon_s=H, rng=9, method=method)


def test_a_station_with_memory_beside_one_without_agrees_across_methods(same_runs):
    a, b = _tandem("generic"), _tandem("auto")
    same_runs(a, b, exact=True)
    assert a.preemptions["E"] == b.preemptions["E"] > 0
    assert a.preemptions["F"] == 0 and a.rejected == {"E": 0, "F": 0}
    assert a.completed["c"] > 50
    d = a.to_dict()
    assert d["preemptions"] == a.preemptions and d["rejected"] == a.rejected


def test_swap_needs_its_cost_and_record_hops_is_a_flag():
    net = _network(_engine(1800, Memory(kind="blocks", preemption="swap"), None), "sarathi")
    with pytest.raises(ParameterError, match="swap_s_per_token"):
        simulate_network(net, horizon_s=5.0, rng=1)
    with pytest.raises(ParameterError, match="swap_s_per_token"):
        simulate_network(net, horizon_s=5.0, rng=1, swap_s_per_token=-1.0)
    with pytest.raises(ParameterError, match="record_hops"):
        simulate_network(net, horizon_s=5.0, rng=1, swap_s_per_token=0.0, record_hops="yes")


_TOML = '''[engines.E]
batch_time = {{ kind = "staircase", c = 0.01128, a = 0.0003547, b0 = 128 }}
b_max = 256
{extra}

[[classes]]
name = "c"
rate_per_s = 6.0
route = [{{ engine = "E", prompt = 200, output = 60 }}]
'''


def _load(tmp_path, extra):
    from fluidq.network.toml import load_network

    p = tmp_path / "kv.toml"
    p.write_text(_TOML.format(extra=extra))
    return load_network(str(p))


@pytest.mark.parametrize(("extra", "memory"), [
    ("kv_capacity_tokens = 1800", Memory()),
    ('kv_capacity_tokens = 1800\nmemory = "vllm"', VLLM),
    ('kv_capacity_tokens = 1800\nmemory = { kind = "blocks", block_size = 16, prefix_caching = true, '
     'victim = "most_recent" }', Memory(kind="blocks", prefix_caching=True, victim="most_recent"))])
def test_a_toml_station_takes_a_kv_cache_and_its_memory(tmp_path, extra, memory):
    net = _load(tmp_path, extra)
    eng = net.stations[0].engine
    assert eng.kv_capacity_tokens == 1800 and eng.memory == memory
    r = simulate_network(net, horizon_s=H, rng=5)
    single = fluidq.simulate(eng, fluidq.Workload(arrival=Poisson(rate_per_s=RATE), prompt_tokens=P,
                                                  output_tokens=D), "sarathi", horizon_s=H, rng=5)
    assert r.preemptions == {"E": single.preemptions} and r.batches == single.n_iterations


@pytest.mark.parametrize(("extra", "words"), [
    ('memory = "vllm"', ["engine 'E'", "memory", "needs kv_capacity_tokens"]),
    ('kv_capacity_tokens = 1800\nmemory = "paged"', ["engine 'E'", "'paged'", "vllm"]),
    ('kv_capacity_tokens = 1800\nmemory = 16', ["engine 'E'", "memory = 16", "table"]),
    ('kv_capacity_tokens = 1800\nmemory = { kind = "blocks", size = 16 }', ["engine 'E' memory", "'size'"]),
    ('kv_capacity_tokens = 1800\nmemory = { kind = "pages" }', ["engine 'E' memory", "kind", "'pages'"]),
    ('kv_capacity_tokens = 1800\nmemory = { kind = "tokens", prefix_caching = true }',
     ["engine 'E' memory", "prefix_caching"])])
def test_bad_toml_memory_is_refused_naming_the_engine_and_key(tmp_path, extra, words):
    from fluidq.errors import FluidqError

    with pytest.raises(FluidqError) as ei:
        _load(tmp_path, extra)
    msg = str(ei.value)
    assert "kv.toml" in msg and "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)
