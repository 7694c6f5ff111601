"""The LLM Rybko-Stolyar chain (two coupled Sarathi engines) against the network simulator (issue 19)."""
import math

import numpy as np
import pytest
from scipy import stats

import fluidq
from fluidq import Affine, Engine
from fluidq.dtmc.llm_rybko import LLMRybkoStolyarResult, llm_rybko_stolyar_chain
from fluidq.errors import ParameterError
from fluidq.network import Hop, Network, RequestClass, Station
from fluidq.network.sim import simulate_network

HOPS = ("A.1", "A.2", "B.1", "B.2")
# Budget 2 tokens per 1 s batch; entering hops: 1-token prompts, exiting hops: 2-token prompts, outputs
# geometric of mean 2 each, so a request brings 7 tokens to the pair of engines; lambda per type
# loads each engine at 0.4.
ENGINE = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=2)
LAM = 0.4 * 2 / 7
ORDER = {"exit": {"E1": ("B.2", "A.1"), "E2": ("A.2", "B.1")},
         "reversed": {"E1": ("A.1", "B.2"), "E2": ("B.1", "A.2")}}


def _network(priority):
    g = fluidq.Geometric(mean_tokens=2.0)
    return Network(
        stations=[Station(name=n, engine=ENGINE.with_(name=n), priority=ORDER[priority][n]) for n in ("E1", "E2")],
        classes=[RequestClass(name="A", rate_per_s=LAM, route=[Hop(engine="E1", prompt_tokens=1, output_tokens=g),
                                                               Hop(engine="E2", prompt_tokens=2, output_tokens=g)]),
                 RequestClass(name="B", rate_per_s=LAM, route=[Hop(engine="E2", prompt_tokens=1, output_tokens=g),
                                                               Hop(engine="E1", prompt_tokens=2, output_tokens=g)])])


def _simulated(priority, seeds=8, horizon=40000.0, warm=200.0):
    runs = []
    for s in range(seeds):
        sim = simulate_network(_network(priority), horizon_s=horizon, rng=700 + s, record_dt_s=0.25)
        keep = sim.times_s >= warm  # the runs start empty; the grid average is the time average
        runs.append([float(np.mean(sim.buffer_tokens[h][keep])) for h in HOPS])
    runs = np.array(runs)
    half = stats.t.ppf(0.995, seeds - 1) * runs.std(axis=0, ddof=1) / math.sqrt(seeds)
    return dict(zip(HOPS, runs.mean(axis=0))), dict(zip(HOPS, half))


@pytest.fixture(scope="module")
def chains():
    return {p: llm_rybko_stolyar_chain(ENGINE, rate_per_s=LAM, entering=(1, 2.0), exiting=(2, 2.0), priority=p,
                                       max_waiting=4, max_decode=4) for p in ("exit", "reversed")}


@pytest.fixture(scope="module")
def simulated():
    return {p: _simulated(p) for p in ("exit", "reversed")}


@pytest.mark.parametrize("priority", ["exit", "reversed"])
def test_chain_matches_the_simulated_network_per_hop(chains, simulated, priority):
    r = chains[priority]
    assert isinstance(r, LLMRybkoStolyarResult) and r.phases == (1, 2)
    assert max(r.lost_mass.values()) < 3e-3 and max(r.residual.values()) < 1e-8
    mean, half = simulated[priority]
    # Truncation tolerance: caps 4 and 5 move a hop's tokens by at most 0.011 at this load (exit, A.1:
    # 1.0493 against 1.0595), so 0.02 covers what the caps leave.
    tol = 0.02
    for h in HOPS:
        assert abs(r.extrapolated_tokens[h] - mean[h]) <= half[h] + tol, (priority, h, r.extrapolated_tokens[h],
                                                                         mean[h], half[h])


def test_the_priority_order_moves_tokens_between_hops_in_chain_and_simulation(chains, simulated):
    ex, rv = chains["exit"].extrapolated_tokens, chains["reversed"].extrapolated_tokens
    # serving the exiting hop first leaves more of the entering hop's tokens waiting, and fewer exiting ones
    assert ex["A.1"] > rv["A.1"] + 0.05 and ex["A.2"] < rv["A.2"] - 0.05
    # the simulation tells the two orders apart the same way (the chain is not blind to the order)
    (me, he), (mr, hr) = simulated["exit"], simulated["reversed"]
    assert me["A.1"] - he["A.1"] > mr["A.1"] + hr["A.1"]
    assert abs(ex["A.1"] - mr["A.1"]) > hr["A.1"]


def test_the_symmetric_network_gives_mirror_hops_the_same_means(chains):
    for r in chains.values():
        for k in r.phases:
            assert r.mean_hops[k]["A.1"] == pytest.approx(r.mean_hops[k]["B.1"], rel=1e-8)
            assert r.mean_tokens[k]["A.2"] == pytest.approx(r.mean_tokens[k]["B.2"], rel=1e-8)
            assert r.mean_requests[k][0] == pytest.approx(r.mean_requests[k][1], rel=1e-8)
        # requests per engine: one entering and one exiting hop each
        assert r.extrapolated[0] == pytest.approx(r.extrapolated_hops["A.1"] + r.extrapolated_hops["B.2"], rel=1e-8)


def test_more_load_more_residents_and_caps_lower_the_loss():
    small = [llm_rybko_stolyar_chain(ENGINE, rate_per_s=x * LAM, max_waiting=3, max_decode=3) for x in (0.5, 1.0)]
    assert small[1].extrapolated_total > small[0].extrapolated_total
    a, b = (llm_rybko_stolyar_chain(ENGINE, rate_per_s=LAM, max_waiting=c, max_decode=c) for c in (2, 3))
    for k in (1, 2):
        assert b.n_states[k] > a.n_states[k] and b.lost_mass[k] < a.lost_mass[k]
    d = b.to_dict()
    assert d["inputs"]["priority"] == "exit" and set(d["n_states"]) == {"1", "2"}


@pytest.mark.parametrize("name, kw", [
    ("rate_per_s", {"rate_per_s": -1.0}), ("rate_per_s", {"rate_per_s": float("nan")}),
    ("rate_per_s", {"rate_per_s": 0.0}), ("entering", {"entering": 3}), ("entering[0]", {"entering": (0, 2.0)}),
    ("entering[0]", {"entering": (3, 2.0)}), ("exiting[1]", {"exiting": (2, 0.5)}),
    ("exiting[1]", {"exiting": (2, float("nan"))}), ("priority", {"priority": "fcfs"}), ("phases", {"phases": 0}),
    ("max_waiting", {"max_waiting": 0}), ("max_decode", {"max_decode": 0}),
])
def test_bad_inputs_name_the_parameter(name, kw):
    args = dict(rate_per_s=LAM, max_waiting=2, max_decode=2)
    args.update(kw)
    with pytest.raises(ParameterError) as e:
        llm_rybko_stolyar_chain(ENGINE, **args)
    assert e.value.name == name


def test_engines_outside_the_model_are_refused():
    with pytest.raises(ParameterError) as e:
        llm_rybko_stolyar_chain("sarathi", rate_per_s=LAM)
    assert e.value.name == "engine"
    with pytest.raises(ParameterError, match="k_max"):
        llm_rybko_stolyar_chain(ENGINE.with_(k_max=2), rate_per_s=LAM)


def test_too_large_a_build_is_refused_with_its_size():
    with pytest.raises(ParameterError, match=r"[\d,]+ pairs"):
        llm_rybko_stolyar_chain(ENGINE, rate_per_s=LAM, phases=8, max_waiting=20, max_decode=20)
