"""A second reading of ``EngineRun.begin()``/``finish()`` and of fed runs: a tiny run computed by hand, two
engines stepped on one clock, ties between arrivals and batch ends, and what a fed run refuses."""
import heapq

import numpy as np
import pytest

from fluidq.engine import VLLM
from fluidq.errors import ParameterError
from fluidq.kernel import step
from fluidq.policies import resolve_policy
from fluidq.policies.base import RequestState

QUARTER = [0.25] * 257  # every batch takes 0.25 s: a binary fraction, so batch ends are exact


def _args(policy="sarathi", *, tau_b=QUARTER, b_max=128, horizon=10.0, **kw):
    return dict(policy=resolve_policy(policy), b_max=b_max, k_max=None, tau_b=tau_b, ks=0.0, horizon=horizon,
                record=False, check=True, **kw)


def test_a_tiny_run_computed_by_hand():
    """Two requests under Sarathi (decodes first, then prefill chunks), each batch 0.25 s:
    r0 (arrives 0, prompt 3, 2 outputs), r1 (arrives 0.1, prompt 2, 1 output).
    t=0    [prefill r0:3]            ends 0.25  r0 prefilled; r1 came in at 0.1 (seen from the next batch)
    t=0.25 [decode r0, prefill r1:2] ends 0.5   r0's first token; r1 prefilled
    t=0.5  [decode r0, decode r1]    ends 0.75  r0's second token, r1's first: both finish
    With the first token from the prefill (vLLM's engine) r1's prefill gives its only token at 0.5 and r0's
    first comes at 0.25, so both are done at 0.5 after two batches."""
    arr, P, D = [0.0, 0.1], [3, 2], [2, 1]
    res = step.run_generic(arr, P, D, **_args())
    assert res["iterations"] == 3 and res["busy_s"] == 0.75 and res["end_s"] == 0.75
    assert res["first_scheduled_s"] == [0.0, 0.25]
    assert res["prefill_done_s"] == [0.25, 0.5]
    assert res["first_token_s"] == [0.5, 0.75]
    assert res["finish_s"] == [0.75, 0.75]
    assert res["mixed_iterations"] == 1 and res["tokens_served"] == 3 + 3 + 2
    emit = step.run_generic(arr, P, D, **_args(emit_at_prefill=True))
    assert emit["iterations"] == 2 and emit["first_token_s"] == [0.25, 0.5] and emit["finish_s"] == [0.5, 0.5]


def _requests(seed, n=200):
    rng = np.random.default_rng(seed)
    return (np.cumsum(rng.exponential(0.03, n)).tolist(), rng.integers(1, 300, n).tolist(),
            rng.integers(1, 60, n).tolist())


@pytest.mark.parametrize("kw", [{}, {"kv_cap": 3000, "memory": VLLM},
                                {"kv_cap": 2500, "preemption": "swap", "swap_s_per_token": 1e-6}])
def test_two_engines_begun_and_finished_on_one_clock_are_their_own_runs(kw):
    """Two runs whose halves are called by one event clock, in time order (a batch end of one engine between
    the begin and finish of the other), each give their own run_generic: a run's state is its own."""
    tau = [0.01 + 1e-5 * b for b in range(513)]
    a = dict(_args(tau_b=tau, b_max=512, horizon=4.0), k_max=32, **kw)
    b = dict(_args("vllm", tau_b=[0.013 + 2e-5 * x for x in range(513)], b_max=512, horizon=4.0), **kw)
    work = [(_requests(1), a), (_requests(2), b)]
    runs = [step.EngineRun(*reqs, **args) for reqs, args in work]
    heap = [(0.0, 0, i) for i in range(2)]  # (time, seq, engine): due to begin (the seq breaks ties)
    due_finish = [False, False]
    seq, interleaved, last = 2, 0, None
    while heap:
        t, _, i = heapq.heappop(heap)
        run = runs[i]
        if due_finish[i]:
            due_finish[i] = False
            run.finish()
            if last is not None and last != i:
                interleaved += 1
            last = i
        end = run.begin()
        if end is None and run.over:
            continue
        if end is not None:  # finish() at the end (a swap-only pass, run.cur None: only begin again there)
            due_finish[i] = run.cur is not None
            heapq.heappush(heap, (end, seq, i))
        else:  # idle until its next arrival, or its lagging outputs read: begin again at its clock
            heapq.heappush(heap, (run.t, seq, i))
        seq += 1
    assert interleaved > 50
    for run, (reqs, args) in zip(runs, work):
        assert run.result() == step.run_generic(*reqs, **args)


@pytest.mark.parametrize("kw", [{}, {"kv_cap": 1200}, {"kv_cap": 1200, "memory": VLLM},
                                {"emit_at_prefill": True}])
@pytest.mark.parametrize("policy", ["sarathi", "vllm"])
def test_arrivals_exactly_at_a_batch_end_join_the_next_batch_in_a_fed_run(policy, kw):
    """Arrivals every 0.25 s, at every batch end exactly: a fed run offered them before finish() at equal
    times (as a network offers them) is the run with arrivals up front, batch for batch."""
    n = 60
    arr = [0.25 * (i // 2) for i in range(n)]  # two at a time
    P = [40 + 7 * (i % 5) for i in range(n)]
    D = [3 + (i % 4) for i in range(n)]
    args = _args(policy, record_batches=True, **kw)
    ref = step.run_generic(arr, P, D, **args)

    def fed(before):
        run = step.EngineRun((), (), (), fed=True, **args)
        i, now, fin = 0, 0.0, {}

        def offer_until(t):
            nonlocal i
            while i < n and arr[i] <= t:
                if not run.refuses(P[i], D[i]):
                    run.offer(RequestState(rid=i, arrival_s=arr[i], prompt_tokens=P[i], output_tokens=D[i]))
                i += 1

        while now < args["horizon"]:
            offer_until(now)
            end = run.begin(now)
            if end is None:
                if i >= n and run.cur is None and not run.hold.residents:
                    break
                now = arr[i] if i < n else now
                continue
            if before:
                offer_until(end)
            out = run.finish()
            if not before:
                offer_until(end)
            for r in out or ():
                fin[r.rid] = end
            now = end
        return run, fin

    run, fin = fed(True)
    assert run.batches == ref["batches"] and run.n_iter == ref["iterations"] > 20
    assert fin == {k: f for k, f in enumerate(ref["finish_s"]) if f == f}
    assert not any(b.blocked for b in ref["batches"])
    late, fin_late = fed(False)  # offered after finish() (before the next begin): the same, finish() sees none
    assert late.batches == ref["batches"] and fin_late == fin


def test_a_fed_run_refuses_async_scheduling():
    """With async scheduling, begin() may release the previous batch's finished requests (every slot held)
    without returning them: a fed run's caller would never route them.  A fed run refuses it."""
    with pytest.raises(ParameterError, match="async"):
        step.EngineRun((), (), (), fed=True, async_scheduling=True, **_args())


def test_a_fed_run_offered_zero_output_requests_finishes_them_at_their_prefill():
    """A request with no output tokens (a prefill-only hop) finishes when its prompt is prefilled and gets
    no first token from the prefill, even with ``emit_at_prefill``; its label's tokens reach 0, not -1."""
    for emit in (False, True):
        labels = {"x": 0}
        run = step.EngineRun((), (), (), fed=True, labels=labels, **_args(emit_at_prefill=emit))

        class R(RequestState):
            __slots__ = ("label",)

        for rid in range(3):
            r = R(rid=rid, arrival_s=0.0, prompt_tokens=10, output_tokens=0)
            r.label = "x"
            labels["x"] += 10
            run.offer(r)
        assert run.begin(0.0) == 0.25
        out = run.finish()
        assert sorted(r.rid for r in out) == [0, 1, 2] and all(r.decoded == 0 for r in out)
        assert labels == {"x": 0} and run.work == 0 and not run.by_id
        assert run.begin(0.25) is None


# found in the second reading: with emit_at_prefill a request's KV holds one token less than prefilled + decoded
# (the prefill's token is not cached yet), and a recomputation added back that KV while the recomputed prompt is
# prefilled + decoded, so the remaining tokens (the backlog's, a station's and its buffers') drifted by -1 per
# such preemption in all three loops (kernel/memory.py, kv.py, network.py); they now add the new prompt less what
# was left of the old one
@pytest.mark.parametrize("memory", [None, VLLM])
def test_remaining_tokens_reach_zero_when_a_run_drains_with_the_prefills_token_and_recompute(memory):
    rng = np.random.default_rng(3)
    n = 300
    arr = np.cumsum(rng.exponential(0.02, n)).tolist()
    P, D = rng.integers(1, 300, n).tolist(), rng.integers(1, 60, n).tolist()
    kw = {"kv_cap": 3000} if memory is None else {"kv_cap": 3000, "memory": memory}
    run = step.EngineRun(arr, P, D, **dict(_args("vllm", tau_b=[0.01 + 1e-5 * b for b in range(513)], b_max=512,
                                                 horizon=1e9), k_max=32, emit_at_prefill=True, **kw))
    while step.step(run):
        pass
    res = run.result()
    assert res["preemptions"] > 5 and all(f == f for f in res["finish_s"]) and not run.by_id
    assert run.work == 0
