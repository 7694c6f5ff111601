"""Issue 16: an engine whose batch time reads the batch composition (an operator-profile iteration model, the
engine of ``fluidq check --profile-dir``) has ``t(b)`` = one prefill chunk with no decode cost, not its iteration time
(0.50-0.83 of it at the capacity point), so verdicts read against ``b / t(b)`` were optimistic: at 1.1 times the flow-balance
capacity ``check_stability`` said STABLE (load 0.72 of ``b_max / t(b_max)``) while seeded simulations grow.
Now ``check_stability``, ``stability_threshold``, ``backlog_slope``, ``replicate``'s prediction and ``fluidq
check`` read one function, :func:`fluidq.dtmc.flow_basis.flow_balance_capacity`.  The engine comes from a small
synthetic LLMServingSim-layout profile folder (linear operator times written here), checked against seeded
replications' backlog-growth intervals."""
import json

import numpy as np
import pytest

import fluidq
from fluidq.dtmc.flow_basis import FLOW_BALANCE_BAND, flow_balance_capacity
from fluidq.stability.fluid import backlog_slope

from flow_profile import META, write_profile  # tests/stability/flow_profile.py, shared with tests/cli

KV = 2_000_000  # a cache that never binds here: max_num_seqs does


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    if not META.is_dir():
        pytest.skip(f"{META} is not shipped here")
    return write_profile(tmp_path_factory.mktemp("synthetic_profile"))


@pytest.fixture(scope="module")
def engine(folder):
    from fluidq.validate.deployment import deployment_engine

    return deployment_engine(folder, kv_capacity_tokens=KV)[0]


SHAPE = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)


@pytest.fixture(scope="module")
def fb(engine):
    return flow_balance_capacity(engine, SHAPE)


@pytest.fixture(scope="module")
def replications(engine, fb):
    """Seeded replications at 0.9 and 1.1 of the flow balance (6 x 40 s each, vLLM's scheduler)."""
    return {x: fluidq.replicate(engine, SHAPE.with_rate(x * fb.requests_per_s), "vllm-chunked", n_replications=6,
                                horizon_s=40.0, rng=16, keep_runs=False) for x in (0.9, 1.1)}


def test_the_t_b_basis_overstates_this_engine(engine, fb):
    # the defect's size: b/t(b) says 734 req/s, the flow balance 480 (measured 2026-12-06)
    assert fb.binding == "k_max"
    assert fluidq.max_throughput(engine, SHAPE).requests_per_s > 1.4 * fb.requests_per_s


@pytest.mark.parametrize("x, status", [(0.9, fluidq.Status.STABLE), (1.1, fluidq.Status.UNSTABLE)])
def test_verdicts_at_0_9_and_1_1_of_the_flow_balance_agree_with_simulation(engine, fb, replications, x, status):
    r = fluidq.check_stability(engine, SHAPE.with_rate(x * fb.requests_per_s), "vllm-chunked")
    assert r.status is status, r.reason
    assert r.method == "flow_balance" and r.load == pytest.approx(x, rel=1e-9)
    assert r.inputs["load_basis"] == "flow_balance"
    assert r.inputs["flow_balance_requests_per_s"] == pytest.approx(fb.requests_per_s, rel=1e-12)
    assert "flow balance" in r.reason and "one prefill chunk, no decode cost" in r.reason
    rep = replications[x]
    lo, hi = rep.slope_ci
    # measured 2026-12-06 (seed 16): 0.9 slope CI -47 to 50 tokens/s (bounded), 1.1 CI 7,831-12,512 (growing)
    if status is fluidq.Status.STABLE:
        assert rep.verdict == "bounded" and hi < rep.tolerance_tokens_per_s, rep.reason
    else:
        assert rep.verdict == "growing" and lo > 0, rep.reason


def test_the_fluid_slope_reads_the_flow_balance_and_lies_in_the_simulated_interval(engine, fb, replications):
    w = SHAPE.with_rate(1.1 * fb.requests_per_s)
    slope = backlog_slope(engine, w)
    tpr = fluidq.capacity.tokens_per_request(engine, w)
    assert slope == pytest.approx(0.1 * fb.requests_per_s * tpr, rel=1e-9)
    rep = replications[1.1]
    assert rep.predicted_slope_tokens_per_s == pytest.approx(slope, rel=1e-9)
    assert rep.fluid_in_ci, (rep.predicted_slope_tokens_per_s, rep.slope_ci)
    assert backlog_slope(engine, SHAPE.with_rate(0.9 * fb.requests_per_s)) == 0.0


def test_stability_threshold_is_the_flow_balance(engine, fb):
    t = fluidq.stability_threshold(engine, SHAPE, "vllm-chunked")
    assert t.method == "flow_balance"
    assert t.arrival_rate_per_s == pytest.approx(fb.requests_per_s, rel=1e-12)
    lo, hi = FLOW_BALANCE_BAND
    assert t.lower_per_s == pytest.approx(lo * fb.requests_per_s) and t.upper_per_s == pytest.approx(hi * fb.requests_per_s)
    assert t.details["load_basis"] == "flow_balance"


def test_n_engines_sum_the_flow_balance(engine, fb):
    r = fluidq.check_stability(engine, SHAPE.with_rate(2 * 0.9 * fb.requests_per_s), "vllm-chunked", n_engines=2)
    assert r.status is fluidq.Status.STABLE and r.load == pytest.approx(0.9, rel=1e-9)


def test_not_work_conserving_is_unknown(engine, fb):
    # t(b) is not the iteration time nor a bound on it: no verdict for a scheduler that is not work-conserving
    r = fluidq.check_stability(engine, SHAPE.with_rate(0.5 * fb.requests_per_s), "vllm")
    assert r.status is fluidq.Status.UNKNOWN and "not work-conserving" in r.reason
    assert r.method == "flow_balance"


def test_a_plain_engine_keeps_its_theorem_2_basis():
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    assert flow_balance_capacity(e, SHAPE) is None
    r = fluidq.check_stability(e, SHAPE.with_rate(15.0), "sarathi")
    assert r.method == "closed_form" and r.inputs["load_basis"] == "theorem2"


def test_cli_check_and_the_api_read_one_basis(folder, engine, fb, capsys):
    from fluidq.cli import main

    args = ["check", "--profile-dir", str(folder), "--kv-capacity", str(KV), "--input-len", "100",
            "--output-len", "100", "--policy", "vllm-chunked", "--json"]
    for x, status in ((0.9, "stable"), (1.1, "unstable")):
        assert main([*args, "--load", str(x)]) in (0, None)
        d = json.loads(capsys.readouterr().out)
        assert d["status"] == status and d["method"] == "flow_balance", d["reason"]
        assert d["inputs"]["flow_balance_tokens_per_s"] == pytest.approx(fb.tokens_per_s, rel=1e-12)
        assert d["inputs"]["arrival_rate_per_s"] == pytest.approx(x * fb.requests_per_s, rel=1e-12)
        assert d["load"] == pytest.approx(x, rel=1e-9)
    # two engines behind a router: --load is a fraction of both engines' flow balance
    assert main([*args, "--load", "0.9", "--engines", "2"]) in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert d["inputs"]["arrival_rate_per_s"] == pytest.approx(2 * 0.9 * fb.requests_per_s, rel=1e-12)
    assert d["status"] == "stable" and d["load"] == pytest.approx(0.9, rel=1e-9)
    assert np.isfinite(d["capacity_tokens_per_s"])


def test_the_network_fluid_verdict_proves_nothing_from_such_a_stations_b_max_t_b_max(engine):
    """A network station with such an engine: b_max/t(b_max) is not its capacity, nor a bound on it (without
    k_max this engine's flow balance, 467 req/s, is 1.4 times b_max/t(b_max) = 333: a 2,048-token prefill chunk's
    attention costs more than the decodes it stands for), so the fluid verdict is unknown on both sides of it
    (it said stable, feedforward, at 0.5 and unstable at 1.2 of it)."""
    from fluidq.network import Hop, Network, RequestClass, Station
    from fluidq.stability.fluid import fluid_stability

    e = engine.with_(k_max=None, kv_capacity_tokens=None)

    def net(rate):
        return Network(stations=[Station(name="V", engine=e, policy="vllm-chunked")],
                       classes=[RequestClass(name="c", rate_per_s=rate,
                                             route=[Hop(engine="V", prompt_tokens=100, output_tokens=100)])])

    per_request = net(1.0).stations[0].capacity_tokens_per_s / 199
    assert flow_balance_capacity(e, SHAPE).requests_per_s > 1.3 * per_request
    for x in (0.5, 1.2):
        r = fluid_stability(net(x * per_request))
        assert r.status is fluidq.Status.UNKNOWN and "reads the batch composition" in r.reason, (x, r.reason)
    assert fluid_stability(net(0.5 * per_request), idealised=True).status is fluidq.Status.STABLE


def test_varied_lengths_are_read_as_a_distribution_not_their_means(tmp_path):
    """Second reading (2026-12-06): with geometric lengths of mean 100 the means-only flow balance said 480.3
    req/s and ``check_stability`` STABLE at 0.93 of it, where seeded simulations grew (slope CI 6,436-10,421
    tokens/s).  Read over seeded rows of the distributions the capacity is lower than the fixed pair's, and
    deterministic (the same rows every call)."""
    from fluidq.dtmc.flow_basis import flow_balance_capacity
    from fluidq.validate.deployment import deployment_engine
    from fluidq.workload.lengths import Geometric

    e = deployment_engine(write_profile(tmp_path), kv_capacity_tokens=2_000_000)[0]
    fixed = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    geo = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=Geometric(mean_tokens=100),
                          output_tokens=Geometric(mean_tokens=100))
    f, g = flow_balance_capacity(e, fixed).requests_per_s, flow_balance_capacity(e, geo).requests_per_s
    assert g < 0.9 * f, (g, f)
    assert flow_balance_capacity(e, geo).requests_per_s == g


def test_requests_over_the_cache_make_the_verdict_unstable_and_none_fitting_is_not_a_crash(tmp_path):
    """Second reading (2026-12-06): the flow balance leaves out requests whose prompt and output exceed the KV
    cache (never served), and the verdict said STABLE at 0.6 of the others' capacity while such requests pile
    up in simulation; a cache that holds no request in whole blocks raised out of ``check_stability``."""
    from fluidq.dtmc.flow_basis import flow_balance_capacity
    from fluidq.validate.deployment import deployment_engine
    from fluidq.workload.lengths import LogNormal

    folder = write_profile(tmp_path)
    e = deployment_engine(folder, kv_capacity_tokens=6000, max_num_seqs=8)[0]
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=LogNormal.from_mean(300, 1.5),
                        output_tokens=100)
    fb = flow_balance_capacity(e, w)
    assert 0 < fb.never_served_fraction < 0.05, fb.never_served_fraction
    r = fluidq.check_stability(e, w.with_rate(0.6 * fb.requests_per_s), "vllm-chunked")
    assert r.status is fluidq.Status.UNSTABLE and "never served" in r.reason, r.reason
    # seeded simulation: the requests over the cache stay unfinished, more of them the longer the run
    left = [int(np.sum(~np.isfinite(fluidq.simulate(e, w.with_rate(0.6 * fb.requests_per_s), "vllm-chunked",
                                                     n_requests=n, rng=3).requests["finish_s"])))
            for n in (500, 2000)]
    assert 0 < left[0] < left[1], left
    tight = deployment_engine(folder, kv_capacity_tokens=2000, block_size=64)[0]  # 31 blocks: 1,984 tokens
    w2 = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=1950, output_tokens=40)
    r2 = fluidq.check_stability(tight, w2, "vllm-chunked")
    assert r2.status is fluidq.Status.UNSTABLE, r2.reason
