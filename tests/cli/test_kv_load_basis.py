"""The load basis where the KV cache binds (issues 16, 20; h-kvbasis).

`check --load`, `simulate --load` and `region` read lambda* from ``max_throughput``: b/t(b) at the batch the KV cache
allows from mean request footprints.  Where the cache binds that overstated what the engine serves under the cache's
rules (whole-prompt admission, recompute preemptions) by 5-46 % on seeded simulations (validation/RESULTS.md, "the
load basis where the KV cache binds"; validation/tools/kv_load_basis.py), so `check --load 0.9` offered a load the
engine could not serve.  The basis is now :func:`fluidq.dtmc.kv_basis.kv_capacity` there, and unchanged elsewhere.
"""
import json

import pytest

import fluidq
from saturation import overload_served  # tests/stability/saturation.py
from fluidq import Affine, Engine, Poisson, Workload
from fluidq.batchtime import ContextAware
from fluidq.capacity import max_throughput
from fluidq.dtmc.kv_basis import kv_capacity
from fluidq.errors import ParameterError
from fluidq.testing.cli import run_cli

from kv_bound_case import QWEN_L4  # tests/cli/kv_bound_case.py: Qwen2.5-7B on an L4 at 1000 + 200 tokens


def _overload_saturation(engine, w):
    """Served requests/s under overload (1.3 x max_throughput, Sarathi; the threshold of a work-conserving
    scheduler) in 4 seeded runs (seeds 1000-1003, 800 s, second half): the runs, their mean and the half-width of
    its 95 % t-interval (tests/stability/saturation.py)."""
    return overload_served(engine, w, 1.3 * max_throughput(engine, w).requests_per_s, seeds=4, horizon_s=800.0)


def _qwen_l4():
    from fluidq.engine.roofline import roofline_engine

    return roofline_engine("Qwen2.5-7B", "L4"), Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=1000,
                                                         output_tokens=200)


def test_check_load_0_9_on_a_kv_bound_engine_is_stable_by_simulation_and_the_old_basis_was_not(capsys):
    """Fails before h-kvbasis: `check --load 0.9` then offered 0.9 of max_throughput (3.0 req/s), which the
    seeded replications find growing; 0.9 of the KV-rules capacity (2.1 req/s) is bounded."""
    rc, out, _ = run_cli(["check", *QWEN_L4, "--load", "0.9", "--policy", "sarathi", "--method", "simulation",
                          "--replications", "4", "--json"], capsys)
    d = json.loads(out)
    engine, w = _qwen_l4()
    kvr = kv_capacity(engine, w)
    assert rc == 0 and kvr is not None and kvr.binding == "kv_cache"
    assert d["inputs"]["arrival_rate_per_s"] == pytest.approx(0.9 * kvr.requests_per_s, rel=1e-9)
    assert d["inputs"]["kv_rules_requests_per_s"] == pytest.approx(kvr.requests_per_s, rel=1e-12)
    sim = d["simulation"]
    assert d["status"] == "stable" and sim["verdict"] == "bounded", d["reason"]
    assert sim["slope_ci"][1] < sim["tolerance_tokens_per_s"], sim["slope_ci"]  # the whole CI below the tolerance
    # the old basis: 0.9 of max_throughput's lambda*, the same seeded replications -- the backlog grows
    old = max_throughput(engine, w).requests_per_s
    # 0.9 of it is beyond the KV-rules capacity (3.004 against 2.352 req/s) and, by the saturation test below, beyond
    # where the simulated engine saturates
    assert 0.9 * old > kvr.requests_per_s
    rep = fluidq.replicate(engine, w.with_rate(0.9 * old), "sarathi", n_replications=4, horizon_s=None, rng=0,
                           keep_runs=False)
    assert rep.verdict == "growing" and rep.slope_ci[0] > 0, rep.reason


def test_the_kv_rules_capacity_is_where_the_simulated_engine_saturates():
    """Served requests/s under overload (the threshold of a work-conserving scheduler), 4 seeded runs: the KV-rules
    capacity lies inside their 95 % t-interval, max_throughput's lambda* above it (measured 2026-12-07: 2.358
    [2.302, 2.414] req/s simulated here, seeds 1000-1003, 800 s; 2.364 [2.328, 2.400] by validation/tools/
    kv_load_basis.py's own horizons; 2.352 KV rules, 3.338 max_throughput).  The interval is the basis, with no margin
    added (it was widened by 3 %, a number without one; across 17 KV-bound engines the simulated saturation lies at 0.78-1.21
    times the KV-rules capacity, fluidq.stability.measured, but on this engine it is inside the interval)."""
    engine, w = _qwen_l4()
    served, m, half = _overload_saturation(engine, w)
    lam_kv = kv_capacity(engine, w).requests_per_s
    assert m - half <= lam_kv <= m + half, (served, lam_kv)
    assert max_throughput(engine, w).requests_per_s > m + half  # the old basis: beyond where the engine saturates


def test_where_the_kv_cache_does_not_bind_the_basis_is_unchanged(capsys):
    # where max_num_seqs binds and the cache never does, the basis is the flow balance under the cache's rules with no
    # preemptions (h-basis, 2026-12-07: continuous with the KV rules through the switch; max_throughput before), and
    # the verdict (the engine's without memory) says its load on it
    rc, out, _ = run_cli(["check", "--gpu", "H100", "--model", "Llama-3.1-8B", "--prompt", "100", "--output", "100",
                          "--load", "0.9", "--policy", "sarathi", "--method", "analytic", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["inputs"]["load_basis"] == "kv_rules" and "KV cache never binds" in d["reason"]
    assert d["load"] == pytest.approx(0.9, rel=1e-9)
    rc, out, _ = run_cli(["capacity", "--gpu", "H100", "--model", "Llama-3.1-8B", "--prompt", "100", "--output", "100",
                          "--json"], capsys)
    assert rc == 0 and json.loads(out)["load_basis"] == "kv_rules"
    e = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)
    assert kv_capacity(e, w) is None
    assert kv_capacity(e.with_(kv_capacity_tokens=10_000_000), w) is None  # a cache that does not bind


def test_simulate_load_reads_the_kv_rules_capacity(capsys):
    rc, out, _ = run_cli(["simulate", *QWEN_L4, "--load", "0.9", "--horizon", "20", "--policy", "sarathi", "--json"],
                         capsys)
    d = json.loads(out)
    engine, w = _qwen_l4()
    lam_kv = kv_capacity(engine, w).requests_per_s
    assert rc == 0 and d["load_basis"] == "kv_rules" and d["load"] == pytest.approx(0.9, rel=1e-9)
    assert d["workload"]["arrival"]["rate_per_s"] == pytest.approx(0.9 * lam_kv, rel=1e-9)
    rc, out, _ = run_cli(["simulate", *QWEN_L4, "--load", "0.9", "--horizon", "20", "--policy", "sarathi"], capsys)
    assert rc == 0 and "the capacity under the KV cache's rules" in out


def test_region_and_capacity_say_what_the_vertices_assume_about_memory(capsys):
    engine, w = _qwen_l4()
    lam_kv = kv_capacity(engine, w).requests_per_s
    rc, out, _ = run_cli(["region", *QWEN_L4, "--json"], capsys)
    assert rc == 0 and json.loads(out)["workload"]["kv_rules_requests_per_s"] == pytest.approx(lam_kv, rel=1e-12)
    rc, out, _ = run_cli(["region", *QWEN_L4], capsys)
    memory = next(ln for ln in out.splitlines() if ln.startswith("memory "))
    # 2.351 since h-kvjump (2.352 before): the admitted-prompt recursion draws preemption victims from their own stream
    assert "no KV-cache limit on the batch shapes" in memory and "2.351 req/s" in memory
    rc, out, _ = run_cli(["capacity", *QWEN_L4], capsys)
    region = next(ln for ln in out.splitlines() if ln.startswith("region "))
    assert rc == 0 and "the KV cache binds" in region and "2.351 req/s" in region


def test_the_analytic_verdict_reads_the_kv_rules_not_the_region():
    """Since h-basis1 the verdict's own load where the cache binds is against the KV-rules capacity (the load basis,
    which counts k_max too), not the k_max region of mean-footprint batches (h-kvbasis quoted the former but
    decided on the latter: "inside" the region at 0.92 of it, unknown, where replications grow)."""
    engine, w = _qwen_l4()
    lam_kv = kv_capacity(engine, w).requests_per_s
    r = fluidq.check_stability(engine, w.with_rate(2.6), "sarathi")  # 1.105 of the KV-rules capacity
    assert r.status == fluidq.Status.UNKNOWN and r.method == "closed_form" and r.inputs["load_basis"] == "kv_rules"
    assert r.load == pytest.approx(2.6 / lam_kv, rel=1e-9) and "too close to call" in r.reason, r.reason
    assert r.inputs["kv_rules_requests_per_s"] == pytest.approx(lam_kv)
    # above the band (1.3 of it; the region's load 0.92): unstable, and the simulated saturation (2.358 req/s
    # [2.302, 2.414]: test_the_kv_rules_capacity_is_where_the_simulated_engine_saturates) is below the rate
    r = fluidq.check_stability(engine, w.with_rate(1.3 * lam_kv), "sarathi")
    assert r.status == fluidq.Status.UNSTABLE and "beyond the estimate's error" in r.reason, r.reason
    assert 1.3 * lam_kv < 0.95 * max_throughput(engine, w).requests_per_s


def test_kv_capacity_counts_the_engines_and_checks_its_inputs():
    e = Engine(batch_time=ContextAware(base=Affine(c=0.02, a=2e-4), kv_s_per_token=1e-7), b_max=1024,
               kv_capacity_tokens=30_000)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)
    one = kv_capacity(e, w)
    assert one.binding == "kv_cache" and one.requests_per_s < max_throughput(e, w).requests_per_s
    assert kv_capacity(e, w, n_engines=3).requests_per_s == pytest.approx(3 * one.requests_per_s)
    with pytest.raises(ParameterError, match="engine"):
        kv_capacity("engine", w)
    with pytest.raises(ParameterError, match="workload"):
        kv_capacity(e, None)


def test_the_kv_load_basis_of_a_paged_engine_counts_whole_blocks():
    """A paged KV cache (blocks of 16 tokens, 30,000 tokens) at 600 / 200 tokens -- 600 is not a multiple of 16, so a
    request holds more than its tokens: the basis is the flow balance with ``block_size=16`` (the engine's prefill
    emits no token, so the flow balance counts 201 outputs), which holds fewer residents than token memory (blocks of
    1), and that capacity lies inside the 95 % t-interval of what 4 seeded simulations (seeds 1000-1003, 800 s, at
    1.3 x max_throughput) serve under overload (measured 2026-12-07: 3.249 req/s blocks of 16, 3.266 blocks of 1;
    served 3.279, 3.295, 3.214, 3.342)."""
    import numpy as np

    from fluidq.dtmc.kv_basis import _BatchTimeIterations
    from fluidq.engine import Memory
    from fluidq.validate.predict import predict_capacity

    e = Engine(batch_time=ContextAware(base=Affine(c=0.02, a=2e-4), kv_s_per_token=1e-7), b_max=1024,
               kv_capacity_tokens=30_000, memory=Memory(kind="blocks", block_size=16))
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)
    assert not e.prefill_emits_token and e.memory.block_size == 16
    kvr = kv_capacity(e, w)

    def flow(block):
        return predict_capacity(_BatchTimeIterations(e.batch_time), np.array([600.0]), np.array([201.0]),
                                b_max=e.b_max, k_max=e.k_max, kv_capacity_tokens=30_000, block_size=block)

    paged, tokens = flow(16), flow(1)
    assert kvr.binding == paged.binding == "kv_cache"
    assert kvr.requests_per_s == pytest.approx(paged.requests_per_s, rel=1e-12)
    assert kvr.residents == pytest.approx(paged.residents, rel=1e-12)
    # whole blocks waste memory: fewer residents and a lower capacity than the block-1 reading
    assert paged.residents < tokens.residents and paged.requests_per_s < tokens.requests_per_s
    assert abs(kvr.requests_per_s / tokens.requests_per_s - 1) > 1e-3
    served, m, half = _overload_saturation(e, w)
    assert m - half <= kvr.requests_per_s <= m + half, (served, kvr.requests_per_s)
