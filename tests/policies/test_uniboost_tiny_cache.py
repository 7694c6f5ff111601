"""UNIBOOST is work-conserving on a KV cache smaller than MEMGUARD's first level (k = 32 tokens).

MEMGUARD reserves, for every admitted request below its next threshold, the tokens it still needs to reach it
(``MemGuard.guard_gaps``); on a cache of 8-63 tokens those gaps can add up to more than the free memory (the
head room of ``Unified.select`` goes negative).  Until 2026-12-07 the former then skipped even the admitted
requests whose next chunk lay inside their own reserved gap, offered nothing, and the engine preempted the one
admitted request, re-admitted it, and stalled again: tests/kernel/test_select_kernel.py's token-rules seed 14
(a 25-token cache) finished 10 of 106 requests in 100 s and then raised PolicyError ("scheduled nothing");
on the cases below 10 of the first 30 seeds stalled.  Every request must finish, by EngineRun
(``method="generic"``) and by the select loop (``"auto"``), with the same per-request times.
"""
import numpy as np
import pytest

from fluidq import Engine, Staircase
from fluidq.engine import Memory
from fluidq.policies.unified import UniBoost
from fluidq.sim import simulate


def _tiny_case(seed):
    """A cache of 8-63 tokens (below and around k = 32), prompts that fit it with their outputs, the token rules
    (recompute or swap) or one-token blocks."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 120))
    cap = int(rng.integers(8, 64))
    o = rng.integers(1, 6, n)
    p = np.maximum(1, (rng.uniform(0.2, 1.0, n) * (cap - o)).astype(int))
    rate = float(rng.uniform(2, 30))
    a = np.sort(rng.uniform(0, n / rate, n))
    b_max = int(rng.choice([8, 16, 64]))
    mem = [Memory(), Memory(preemption="swap"), Memory(kind="blocks", block_size=1)][seed % 3]
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=b_max,
                 k_max=None if rng.random() < 0.5 else int(rng.integers(2, 9)), kv_capacity_tokens=cap, memory=mem)
    kw = {"n_requests": n, "swap_s_per_token": 1e-4} if mem.preemption == "swap" else {"n_requests": n}
    return eng, {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}, kw


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("adaptive", [False, True])
def test_every_request_finishes_on_a_tiny_cache(seed, adaptive):
    eng, w, kw = _tiny_case(seed)
    n = len(w["arrival_s"])
    runs = {}
    for method in ("generic", "auto"):
        r = simulate(eng, w, UniBoost(gamma_per_s=10.0, adaptive=adaptive), method=method, **kw)
        assert r.n_finished == n, (seed, method, r.n_finished, n)
        assert np.all(np.isfinite(r.requests["finish_s"])), (seed, method)
        runs[method] = r
    for k in runs["generic"].requests:
        np.testing.assert_array_equal(runs["auto"].requests[k], runs["generic"].requests[k], err_msg=f"{seed} {k}")


def test_the_cases_put_memguard_s_reserve_above_the_free_memory(monkeypatch):
    """The cases above reach the state that stalled: an admitted request's gap larger than the free memory, and
    Unified.select offering it a chunk inside that gap (the test can fail on the rule it guards)."""
    from fluidq.policies.unified import Unified

    seen = {"over": 0}
    real = Unified.select

    def spy(self, view):
        batch = real(self, view)
        if view.kv_free_tokens is not None:
            gaps = self.order.guard_gaps(view.requests)
            if sum(gaps.values()) > view.kv_free_tokens and any(rid in gaps for rid, _ in batch.prefill):
                seen["over"] += 1
        return batch

    monkeypatch.setattr(Unified, "select", spy)
    for seed in range(12):
        eng, w, kw = _tiny_case(seed)
        simulate(eng, w, UniBoost(gamma_per_s=10.0), method="generic", **kw)
    assert seen["over"] >= 10, seen


def _view(admitted, kv_free, b_max=16, new=((2, 10), (3, 5))):
    """An admitted request ``(prompt, prefilled)`` (rid 1, arrived first) and new prompts ``(rid, prompt)``."""
    from fluidq.policies.base import QueueView, RequestState

    p, done = admitted
    reqs = [RequestState(rid=1, arrival_s=0.0, prompt_tokens=p, output_tokens=3, prefilled=done)]
    reqs += [RequestState(rid=rid, arrival_s=0.1 * rid, prompt_tokens=q, output_tokens=2) for rid, q in new]
    return QueueView(requests=tuple(reqs), now_s=1.0, b_max=b_max, kv_free_tokens=kv_free)


@pytest.mark.parametrize("admitted, kv_free, want", [
    ((17, 16), 9, 1),    # seed 14's state: gap 32 - 16 = 16 in a 25-token cache, 9 free (head -7): its last token
    ((40, 20), 12, 12),  # head exactly 0 (gap 12 = the free memory), 16 tokens wanted: its gap's 12
    ((31, 28), 2, 3),    # a small gap (4 tokens) over 2 free (head -2): its last 3 prompt tokens
])
def test_an_admitted_prompt_uses_its_own_gap_when_nothing_else_may_run(admitted, kv_free, want):
    """Unified.select with MEMGUARD (k = 32) offers the admitted request a chunk inside its reserved gap where the
    gaps leave no memory for anything else (the new prompts wait); before h-uni it offered nothing."""
    pol = UniBoost(gamma_per_s=10.0)
    view = _view(admitted, kv_free)
    gaps = pol.order.guard_gaps(view.requests)
    assert sum(gaps.values()) >= kv_free, gaps  # (the state meant: no head room beyond the gaps)
    batch = pol.select(view)
    assert batch.prefill == ((1, want),) and batch.decode == (), batch


def test_with_head_room_the_guard_is_as_before():
    """Where the gaps leave memory free, an admitted prompt takes its gap and what is free (no more), and a new
    prompt is admitted only into memory beyond the gaps: the documented rule, unchanged."""
    pol = UniBoost(gamma_per_s=10.0)
    batch = pol.select(_view((40, 20), 15, b_max=64, new=((2, 10),)))
    assert batch.prefill == ((1, 15),), batch  # gap 12 + the 3 free beyond it; the new 10-token prompt waits
    pol = UniBoost(gamma_per_s=10.0)
    batch = pol.select(_view((40, 20), 60, b_max=64, new=((2, 10),)))
    assert batch.prefill == ((1, 20), (2, 10)), batch  # 60 free: its 12 reserved and 8 more, then the new 10


def test_where_something_runs_the_gaps_still_hold_prompts_back():
    """The gap rule applies only where the guarded pass would leave the engine idle: with a decoder to run, the
    admitted prompt whose gaps exceed the free memory waits, as before h-uni (runs on ordinary caches unchanged)."""
    from fluidq.policies.base import RequestState

    pol = UniBoost(gamma_per_s=10.0)
    view = _view((17, 16), 9, new=())
    dec = RequestState(rid=4, arrival_s=0.05, prompt_tokens=40, output_tokens=5, prefilled=40, decoded=1)
    view = type(view)(requests=view.requests + (dec,), now_s=1.0, b_max=16, kv_free_tokens=9)
    batch = pol.select(view)
    assert batch.prefill == () and batch.decode == (4,), batch
