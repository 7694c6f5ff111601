"""compare_orderings' loads are fractions of the token capacity b_max/t(b_max), whatever the KV cache."""
from __future__ import annotations

import pytest

import fluidq
from fluidq.latency import compare_orderings
from fluidq.profiles import load_profile


def test_load_is_a_fraction_of_the_token_capacity_for_every_cache_size():
    w = fluidq.Workload.from_trace("azure-conv")
    base = load_profile("paper-codellama34b-a100").engine()
    lam = 512 / float(base.batch_time(512)) / w.mean_tokens  # 2.4475 req/s, as docs/latency.md uses
    for kv in (None, 50_000, 20_000):
        eng = base if kv is None else base.with_(kv_capacity_tokens=kv)
        res = compare_orderings(eng, w, ["fcfs"], loads=(0.5, 0.9), horizon_s=5.0, n_replications=1, rng=1)
        assert res.rates_per_s == pytest.approx((0.5 * lam, 0.9 * lam), rel=1e-12)


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
