"""A station with a KV cache whose policy is asked in Python runs its memory passes compiled on the network loop's
arrays (:mod:`fluidq.kernel.network_kv`, 2026-12-07, h-netmem): the Python clock's memory model
(:class:`fluidq.kernel.memory.StationMemory`) and EngineRun are not called on ``method="auto"``/``"kernel"``, and the
run is the Python clock's bit for bit -- also where the policy's ``may_evict`` refuses victims, where its own ordering
orders them, and in the request fields a policy reads that the other tests' view digests leave out
(``recompute_tokens``, ``preemptions``, ``first_scheduled_s``, ``rank``, ``label``).  Run uncompiled
(``NUMBA_DISABLE_JIT=1``, a child process) the loop gives the compiled arrays."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

from lifo_policy import LIFO  # noqa: E402
from network_arrays import run_arrays  # noqa: E402  (tests/network/network_arrays.py)
from test_network_kernel_exactness import assert_identical  # noqa: E402
from test_network_select_kernel import loop_only  # noqa: E402,F401
from test_network_select_kv import kv_tandem  # noqa: E402

import fluidq.kernel.network_kv as network_kv  # noqa: E402
from fluidq.kernel import compiled  # noqa: E402
from fluidq.engine import Memory  # noqa: E402
from fluidq.kernel.memory import StationMemory  # noqa: E402
from fluidq.kernel.step import EngineRun  # noqa: E402
from fluidq.network import simulate_network  # noqa: E402
from fluidq.policies import Sarathi  # noqa: E402
from fluidq.policies.latency import SJF  # noqa: E402

MEMS = [Memory(), Memory(preemption="swap"), Memory(kind="blocks", block_size=16),
        Memory(kind="blocks", block_size=8, preemption="swap"),
        Memory(kind="blocks", block_size=4, prefix_caching=True, victim="most_recent")]
MEM_IDS = ["tokens", "tokens-swap", "blocks", "blocks-swap", "blocks-caching-recent"]


def _refuse(*a, **k):
    raise AssertionError("the Python clock's memory model ran on the compiled loop")


@pytest.mark.parametrize("memory", MEMS, ids=MEM_IDS)
def test_the_memory_pass_runs_compiled(memory, loop_only, monkeypatch):
    """``StationMemory.form`` and ``EngineRun.begin`` are never called for an asked KV station on the loop (they were
    before h-netmem: its EngineRun formed every batch); the compiled pass is, and the run is the Python clock's."""
    net = kv_tandem(LIFO(), memory, cap=900)
    kw = dict(horizon_s=40.0, rng=3, record_hops=True, swap_s_per_token=1e-5)
    a = simulate_network(net, method="python", **kw)
    loop_only()
    calls = [0]
    compiled_pass = network_kv._kv_pass

    def counted(*args):
        calls[0] += 1
        return compiled_pass(*args)

    with monkeypatch.context() as m:
        m.setattr(StationMemory, "form", _refuse)
        m.setattr(EngineRun, "begin", _refuse)
        m.setattr(EngineRun, "finish", _refuse)
        m.setattr(network_kv, "_kv_pass", counted)
        b = simulate_network(net, method="auto" if compiled() else "kernel", **kw)  # (auto: uncompiled, Python)
    assert_identical(a, b)
    assert a.preemptions["K"] > 0
    assert calls[0] > b.batches // 2  # (at least one call per batch of K's, about half the batches)


class Fields:
    """A policy (``inner``'s batches) noting every field of every request of each view, and ``kv_free_tokens``."""

    def __init__(self, inner):
        self.inner, self.name, self.seen = inner, "fields-" + getattr(inner, "name", "x"), []
        for attr in ("order", "may_evict", "chunked"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    def select(self, v):
        def nan(x):
            return None if x != x else x

        self.seen.append((v.now_s, v.kv_free_tokens, tuple(
            (r.rid, r.arrival_s, r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded, nan(r.first_scheduled_s),
             r.recompute_tokens, r.preemptions, r.rank, r.label, r.job) for r in v.requests)))
        return self.inner.select(v)


class Choosy(LIFO):
    """LIFO whose ``may_evict`` refuses the requests with an even id (or every one, ``never``)."""

    def __init__(self, never=False):
        self.never = never
        self.name = "choosy-never" if never else "choosy"
        self.refused = 0

    def may_evict(self, r, now_s):
        ok = not self.never and r.rid % 2 == 1
        self.refused += not ok
        return ok


class _LongestOut:
    """An ordering of the policy's own (``order.order``): the longest output first (the victim is the last)."""

    def order(self, reqs, now_s):
        return sorted(reqs, key=lambda r: (-r.output_tokens, r.rid))


class OwnOrder(LIFO):
    name = "own-order"
    order = _LongestOut()


@pytest.mark.parametrize("memory", MEMS, ids=MEM_IDS)
@pytest.mark.parametrize("make", [lambda: Choosy(), lambda: Choosy(never=True), lambda: OwnOrder(),
                                  lambda: Sarathi(order=SJF())], ids=["may-evict", "never-evict", "own-order", "sjf"])
def test_victims_and_the_fields_a_policy_reads(make, memory, loop_only):
    """The victim in the policy's own order, and ``may_evict`` refusing some or every candidate (the token rules then
    run the decoders that fit, or preempt the first candidate; the paged rules preempt the first candidate): the
    loop's run and every field of every view equal the Python clock's."""
    kw = dict(horizon_s=40.0, rng=11, record_hops=True, swap_s_per_token=1e-5, record_dt_s=0.5)
    pa, pb = Fields(make()), Fields(make())
    a = simulate_network(kv_tandem(pa, memory, cap=700, load=1.1), method="python", **kw)
    loop_only()
    b = simulate_network(kv_tandem(pb, memory, cap=700, load=1.1), method="kernel", **kw)
    assert_identical(a, b)
    assert len(pa.seen) == len(pb.seen) > 100
    for x, y in zip(pa.seen, pb.seen):
        assert x == y
    assert a.preemptions["K"] > 0
    assert any(r[7] > 0 or r[8] > 0 for _, _, reqs in pa.seen for r in reqs)  # (a view shows a preempted request)
    if isinstance(pa.inner, Choosy) and memory.victim != "most_recent":  # (vLLM's victim asks no policy)
        assert pa.inner.refused == pb.inner.refused > 0


def test_a_stall_under_swapping_gives_the_python_clocks_error(loop_only):
    """A policy that answers nothing from t = 8 s on at a station that swaps: the PolicyError at the horizon is the
    Python clock's (the waiting ids: residents by arrival, then the swapped out, oldest first)."""
    from fluidq.errors import PolicyError

    class StallLater(LIFO):
        name = "stall-later"

        def select(self, v):
            if v.now_s >= 8.0:
                from fluidq.policies import Batch
                return Batch()
            return super().select(v)

    net = kv_tandem(StallLater(), Memory(preemption="swap"), cap=700, load=1.2)
    kw = dict(horizon_s=20.0, rng=2, swap_s_per_token=1e-5)
    with pytest.raises(PolicyError) as ea:
        simulate_network(net, method="python", **kw)
    loop_only()
    with pytest.raises(PolicyError) as eb:
        simulate_network(net, method="kernel", **kw)
    assert str(ea.value) == str(eb.value)
    assert "scheduled nothing" in str(ea.value)


def _cases():
    return [("choosy-tokens", kv_tandem(Choosy(), Memory(), cap=700, load=1.1), {"record_hops": True}),
            ("never-blocks-swap", kv_tandem(Choosy(never=True), MEMS[3], cap=700, load=1.1),
             {"record_hops": True, "swap_s_per_token": 1e-5}),
            ("own-order-caching", kv_tandem(OwnOrder(), MEMS[4], cap=700, load=1.1), {"record_dt_s": 0.1})]


def _arrays() -> dict:
    return run_arrays([(label, net, 30.0, kw) for label, net, kw in _cases()], kv_counts=True)


def test_compiled_and_uncompiled_passes_agree(uncompiled_agrees, loop_only, monkeypatch):
    with monkeypatch.context():
        loop_only()
        jit = _arrays()
    uncompiled_agrees(HERE, jit)
    assert all(jit[f"{c}/counts"][0] > 100 for c, *_ in _cases())
    assert all(jit[f"{c}/counts"][-3] > 0 for c, *_ in _cases())  # (K's preemptions)


if __name__ == "__main__":
    print(f"compiled={compiled()}")
    np.savez(sys.argv[1], **_arrays())
