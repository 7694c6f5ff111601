"""compare_orderings' loads are fractions of the load basis (fluidq.dtmc.load_basis), the lambda* `fluidq check
--load` reads: max_throughput's without a binding KV cache, the capacity under the cache's rules where it binds.
Before (issues 16, 20) they were fractions of b_max/t(b_max) without the cache, whatever its size, so load 0.9 of an
engine whose cache binds was an overload."""
from __future__ import annotations

import pytest

import fluidq
from fluidq.dtmc.load_basis import load_basis
from fluidq.latency import compare_orderings
from fluidq.profiles import load_profile


def test_load_is_a_fraction_of_the_load_basis_for_every_cache_size():
    w = fluidq.Workload.from_trace("azure-conv")
    base = load_profile("paper-codellama34b-a100").engine()
    lam = 512 / float(base.batch_time(512)) / w.mean_tokens  # 2.4475 req/s, as docs/latency.md uses
    seen = {}
    for kv in (None, 50_000, 20_000):
        eng = base if kv is None else base.with_(kv_capacity_tokens=kv)
        res = compare_orderings(eng, w, ["fcfs"], loads=(0.5, 0.9), horizon_s=5.0, n_replications=1, rng=1)
        lb = load_basis(eng, w)
        assert res.rates_per_s == pytest.approx((0.5 * lb.requests_per_s, 0.9 * lb.requests_per_s), rel=1e-12)
        assert res.inputs["load_basis"] == lb.basis and res.inputs["capacity_requests_per_s"] == lb.requests_per_s
        seen[kv] = (lb.basis, lb.requests_per_s)
    assert seen[None] == ("max_throughput", pytest.approx(lam, rel=1e-12))  # no cache: unchanged
    # the caches bind: under their rules the engine serves less than b_max/t(b_max), the smaller cache less still
    assert seen[50_000][0] == seen[20_000][0] == "kv_rules"
    assert seen[20_000][1] < seen[50_000][1] < 0.9 * lam


def test_table_names_its_load_shows_finished_fraction_and_warns_on_truncation():
    w = fluidq.Workload.from_trace("azure-conv")
    eng = load_profile("paper-codellama34b-a100").engine()
    res = compare_orderings(eng, w, ["fcfs"], loads=(0.5, 1.5), horizon_s=30.0, n_replications=1, rng=1)
    t0, t1 = res.table(0), res.table(1)
    assert t0.splitlines()[0].startswith("load 0.5 (") and "finished fraction" in t0
    assert t1.splitlines()[0].startswith("load 1.5 (")
    assert "tails are underestimated" in t1  # overloaded for 30 s: many requests still running at the end
    assert not res.table(0, heading=False).startswith("load")


def test_cli_latency_refuses_a_cache_no_request_fits_and_duplicate_loads(capsys):
    from fluidq.cli import main

    assert main(["latency", "--kv-capacity", "150", "--orderings", "fcfs", "--loads", "0.5", "--horizon", "5"]) == 2
    assert "no request fits" in capsys.readouterr().err
    assert main(["latency", "--orderings", "fcfs", "--loads", "0.5,0.5", "--horizon", "5"]) == 2
    assert "distinct" in capsys.readouterr().err
