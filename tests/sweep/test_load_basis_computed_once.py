"""A sweep point's load basis and max_throughput are computed once (the capacity analysis ran max_throughput and
then load_basis, which ran it again on the same engine and lengths; the point's shape was built twice):
:attr:`fluidq.dtmc.load_basis.LoadBasis.throughput` carries the bound where the basis read it."""
from unittest import mock

import pytest

import fluidq.capacity
from fluidq import Engine, Poisson, Workload
from fluidq.batchtime import Affine
from fluidq.dtmc.load_basis import load_basis
from fluidq.sweep import analyses


def _spy(monkeypatch, module, name):
    """``module.name`` wrapped in a Mock that counts its calls (and still runs it)."""
    spy = mock.Mock(wraps=getattr(module, name))
    monkeypatch.setattr(module, name, spy)
    return spy


@pytest.mark.parametrize("point, basis", [
    ({"profile": "paper-codellama34b-a100", "prompt_tokens": 100, "output_tokens": 100}, "max_throughput"),
    ({"profile": "paper-codellama34b-a100", "prompt_tokens": 100, "output_tokens": 100, "engines": 3},
     "max_throughput"),
])
def test_the_capacity_analysis_runs_max_throughput_once(monkeypatch, point, basis):
    calls = _spy(monkeypatch, fluidq.capacity, "max_throughput")
    shapes = _spy(monkeypatch, analyses, "_shape")
    row = analyses.capacity(point)
    assert calls.call_count == 1 and shapes.call_count == 1, (calls.call_args_list, shapes.call_args_list)
    e = analyses.point_engine(point)
    direct = fluidq.capacity.max_throughput(e, analyses._shape(point), n_engines=point.get("engines", 1))
    assert row["requests_per_s"] == direct.requests_per_s and row["load_basis"] == basis
    assert row["load_basis_requests_per_s"] == direct.requests_per_s


def test_the_basis_carries_max_throughput_where_it_read_it():
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)
    e = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024)
    kv = e.with_(kv_capacity_tokens=20_000)
    for engine, basis, n in ((e, "max_throughput", 1), (kv, "kv_rules", 1), (kv, "kv_rules", 2),
                             (kv, "max_throughput", 1)):
        lb = load_basis(engine, w, n_engines=n, preemption="swap" if engine is kv and basis == "max_throughput"
                        else "recompute")
        cap = fluidq.capacity.max_throughput(engine, w, n_engines=n)
        assert lb.basis == basis and lb.throughput is not None
        assert lb.throughput.requests_per_s == cap.requests_per_s and lb.throughput.tokens_per_s == cap.tokens_per_s
        if basis == "kv_rules":
            assert lb.requests_per_s < cap.requests_per_s  # the cache's rules serve less than the mean footprints


def test_a_basis_without_max_throughput_computes_it_once(monkeypatch):
    """:meth:`LoadBasis.max_throughput` (every face's "the basis's bound, else compute it"): a basis that did not
    read max_throughput (``flow_balance``: ``throughput`` None) computes it on the first call and keeps it."""
    from fluidq.dtmc.load_basis import LoadBasis

    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)
    e = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024)
    direct = fluidq.capacity.max_throughput(e, w, n_engines=2)
    calls = _spy(monkeypatch, fluidq.capacity, "max_throughput")
    lb = LoadBasis(1.0, 800.0, "flow_balance", "a stand-in")
    first = lb.max_throughput(e, w, n_engines=2)
    assert lb.max_throughput(e, w, n_engines=2) is first and lb.throughput is first and calls.call_count == 1
    assert first.requests_per_s == direct.requests_per_s and first.tokens_per_s == direct.tokens_per_s
    kept = load_basis(e, w)  # a basis that read it: no call at all
    calls.reset_mock()
    assert kept.max_throughput(e, w) is kept.throughput and calls.call_count == 0
