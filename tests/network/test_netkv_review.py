"""Findings of the differential fuzzing of KV stations asked in Python on the compiled network loop (h-revnetkv,
2026-12-07): the compiled loop (:mod:`fluidq.kernel.network` with :mod:`fluidq.kernel.network_kv`) against the
Python clock (``method="python"``), bit for bit."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_network_kernel_exactness import assert_identical  # noqa: E402
from test_network_select_kernel import loop_only  # noqa: E402,F401

from fluidq import Staircase  # noqa: E402
from fluidq.engine import Engine, Memory  # noqa: E402
from fluidq.network import Hop, Network, RequestClass, Station, simulate_network  # noqa: E402
from fluidq.policies import VLLM  # noqa: E402
from fluidq.policies.latency import SJF  # noqa: E402


def _preempting_station():
    """One KV station (400 tokens, recomputation) under ``VLLM(order=SJF())``, asked in Python, loaded so that it
    preempts from its 30th batch on."""
    e = Engine(batch_time=Staircase(c=0.006207038453847259, a=0.043433558709993804, b0=64), b_max=256,
               kv_capacity_tokens=400, memory=Memory())
    return Network(stations=[Station(name="s1", engine=e, policy=VLLM(order=SJF()))],
                   classes=[RequestClass(name="c", rate_per_s=30.0, route=[
                       Hop(engine="s1", prompt_tokens=4, output_tokens=200)])])


@pytest.mark.parametrize("max_batches", [29, 30, 31, 45, 62])
def test_the_grid_after_a_max_batches_stop_shows_the_last_memory_pass(max_batches, loop_only):
    """Finding 1: the loop stopped at ``max_batches`` recorded the grid points past its last event BEFORE the asks of
    that event were made; a KV station's memory pass there (a preempted request's tokens back in its work, by
    recomputation) was missing from them (``station_tokens`` 8385 against the Python clock's 8412 with
    ``max_batches=30``: 27 tokens, the preempted request's).  The Python clock starts that batch, then records."""
    net = _preempting_station()
    kw = dict(horizon_s=20.0, max_batches=max_batches, record_hops=True)
    a = simulate_network(net, rng=14, method="python", **kw)
    loop_only()
    b = simulate_network(net, rng=14, method="kernel", **kw)
    assert a.batches == max_batches
    assert_identical(a, b)


def test_the_stop_case_preempts_at_its_last_batch():
    """The case above binds: the stop at 30 batches falls on a preemption (more tokens at the end than the 29-batch
    stop's, and preemptions counted)."""
    net = _preempting_station()
    r29 = simulate_network(net, rng=14, method="python", horizon_s=20.0, max_batches=29)
    r30 = simulate_network(net, rng=14, method="python", horizon_s=20.0, max_batches=30)
    assert r29.preemptions["s1"] == 0 < r30.preemptions["s1"]
    assert r30.station_tokens["s1"][-1] > r29.station_tokens["s1"][-1]
