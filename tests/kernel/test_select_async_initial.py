"""The select() loop on the kernel's arrays (fluidq.kernel.select) with async scheduling, ``initial`` residents and
``record_batches`` gives what EngineRun (run_generic) gives, bit for bit.

The random engines, workloads and policies of tests/kernel/test_select_kernel.py (user policies and the built-in
non-FCFS orderings; ``k_max``, context-aware and composition batch times, the first token with the prefill), each
without a KV cache, under the token rules and under the paged rules (prefix caching, swap, the victim rules), are run
with async scheduling on most seeds (vLLM's: a batch sees the arrivals up to the previous batch's start, a request
finished in the batch in flight keeps its ``k_max`` slot and KV one batch longer), random ``initial`` residents
(in their prompt or decoding, holding the KV of what they computed) and ``record_batches``: the same per-request
times, preemptions, rejections, backlog series, iterations, busy time, records, ``examined`` and the list of batches.
``simulate(method="fast")`` runs a user policy on the select loop (it refused before 2026-12-07) and says
``method == "fast"``; run uncompiled (``NUMBA_DISABLE_JIT=1``, a child process) the loop gives the same arrays.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
# (tests/kernel/test_select_kernel.py)
from test_select_kernel import LIFO, Refuses, _case, _paged_case, assert_same  # noqa: E402

from fluidq.engine import Memory  # noqa: E402
from fluidq.kernel import compiled  # noqa: E402
from fluidq.kernel.select import covers  # noqa: E402
from fluidq.policies import Sarathi  # noqa: E402
from fluidq.policies.base import Batch, RequestState  # noqa: E402
from fluidq.sim.core import PolicyError  # noqa: E402
from fluidq.policies.latency import PARS  # noqa: E402
from fluidq.sim import simulate  # noqa: E402

HERE = Path(__file__)
MODES = ("nokv", "tokens", "paged")


class Hesitant:
    """LIFO's batch, but an empty one at every third call (with async scheduling: the outputs read, asked again)."""

    name = "hesitant"

    def __init__(self):
        self.calls = 0

    def select(self, view):
        self.calls += 1
        return Batch() if self.calls % 3 == 0 else LIFO().select(view)


def _initial(rng, last):
    """0-5 residents at t=0: in their prompt (part of it prefilled) or decoding (part of the output given), their
    arrival times at 0, before it, or among the arrivals' (up to ``last``: the order a swap-in restores)."""
    out = []
    for j in range(int(rng.integers(0, 6))):
        p, d = int(rng.integers(1, 80)), int(rng.integers(1, 25))
        a = [0.0, float(rng.uniform(-1.0, 0.0)), float(rng.uniform(0.0, last))][int(rng.integers(0, 3))]
        if rng.random() < 0.5:
            out.append(RequestState(rid=j, arrival_s=a, prompt_tokens=p, output_tokens=d,
                                    prefilled=int(rng.integers(0, p))))
        else:
            out.append(RequestState(rid=j, arrival_s=a, prompt_tokens=p, output_tokens=d, prefilled=p,
                                    decoded=int(rng.integers(0, d))))
    return out


def _setup(seed, mode):
    """Engine, workload, run options and policies of one case: async scheduling on 3 seeds of 4."""
    rng = np.random.default_rng(5000 + seed)
    if mode == "paged":
        e, w, kw, pols = _paged_case(seed)
    else:
        e, w, horizon, pols = _case(seed)
        kw = {"horizon_s": horizon} if horizon is not None else {"n_requests": len(w["arrival_s"])}
        if mode == "tokens":
            p, o = w["prompt_tokens"], w["output_tokens"]
            e = e.with_(kv_capacity_tokens=int(np.median(p + o) * rng.uniform(0.8, 4.0)) + 1, memory=Memory())
            pols["sarathi-refuses"] = lambda: Sarathi(order=Refuses())
            kw = {"horizon_s": kw.get("horizon_s") or float(w["arrival_s"][-1] * 3 + 5)}
            if rng.random() < 0.4:
                kw.update(preemption="swap", swap_s_per_token=float(rng.choice([0.0, 1e-4])))
    e = e.with_(async_scheduling=seed % 4 != 3)
    if seed % 4 == 1:  # a few slots: finished requests fill them all (the outputs read before the next batch)
        e = e.with_(k_max=int(rng.integers(1, 4)))
    if e.async_scheduling:
        pols["hesitant"] = Hesitant
    init = _initial(rng, float(w["arrival_s"][-1]))
    if e.kv_capacity_tokens is not None:  # residents whose KV (in blocks) fits in half the cache
        bs = 1 if e.memory.default_rules else e.memory.block_size
        held = np.cumsum([-(-(q.prefilled + q.decoded) // bs) * bs for q in init])
        init = [q for q, h in zip(init, held) if h <= e.kv_capacity_tokens // 2]
    scores = tuple(float(x) for x in rng.uniform(0, 1, len(init) + len(w["arrival_s"])))  # (ids: residents first)
    pols["sarathi-pars"] = lambda: Sarathi(order=PARS(scores=scores))
    return e, w, kw, pols, init, rng


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", range(16))
def test_async_initial_and_batches_agree(seed, mode, routed):
    e, w, kw, pols, init, rng = _setup(seed, mode)
    for name, make in pols.items():
        rb, rec = bool(rng.random() < 0.6), bool(rng.random() < 0.5)
        # "fast" runs the select loop compiled or not; "auto" where it is compiled (on a third of the runs)
        method = "auto" if compiled() and rng.random() < 0.33 else "fast"
        what = f"seed {seed} {mode} {name} async={e.async_scheduling} initial={len(init)} batches={rb} {method}"
        n_routed = len(routed)
        try:
            b = simulate(e, w, make(), method="generic", record_iterations=rec, record_batches=rb, initial=init, **kw)
        except PolicyError as ex:  # (an empty batch while work waits and nothing more arrives: refused by both)
            with pytest.raises(PolicyError) as ex2:
                simulate(e, w, make(), method=method, record_iterations=rec, record_batches=rb, initial=init, **kw)
            assert str(ex2.value) == str(ex), what
            continue
        a = simulate(e, w, make(), method=method, record_iterations=rec, record_batches=rb, initial=init, **kw)
        assert len(routed) == n_routed + 1, what
        assert (a.method, b.method) == ("fast", "generic"), what
        assert (a.batches is None) == (not rb), what
        assert_same(a, b, what)


def test_the_cases_reach_the_async_rules():
    """The random cases above hold finished requests in their slots when the policy is asked, run async engines
    with ``k_max`` (1-3 slots on a quarter of them) whose requests finish, form empty batches under async scheduling
    (``Hesitant``), preempt under async scheduling and start with residents holding KV (so the tests above can fail
    on those rules)."""
    from fluidq.kernel import select as sel

    seen = dict.fromkeys(("lag", "kmax", "few-slots", "empty", "preempt", "kv-initial"), 0)
    real = sel._advance

    def spy(si, *a):
        status = real(si, *a)
        seen["lag"] += status == sel.STATUS_ASK and si[sel.S_NLAG] > 0
        return status

    sel._advance = spy
    try:
        for seed in range(16):
            for mode in MODES:
                e, w, kw, pols, init, _ = _setup(seed, mode)
                r = simulate(e, w, LIFO(), method="fast", record_batches=True, initial=init, **kw)
                if e.async_scheduling:
                    seen["preempt"] += r.preemptions > 0
                    seen["kmax"] += e.k_max is not None and r.n_finished > 0
                    seen["few-slots"] += e.k_max is not None and e.k_max <= 3 and r.n_finished > e.k_max
                    try:
                        seen["empty"] += simulate(e, w, Hesitant(), method="fast", initial=init, **kw).n_finished > 0
                    except PolicyError:  # (its empty batch with nothing more to arrive)
                        pass
                seen["kv-initial"] += mode != "nokv" and any(q.prefilled + q.decoded > 0 for q in init)
    finally:
        sel._advance = real
    assert seen["lag"] > 100 and seen["kmax"] >= 10 and seen["preempt"] >= 5 and seen["kv-initial"] >= 10, seen
    assert seen["few-slots"] >= 8 and seen["empty"] >= 20, seen


def test_fast_runs_a_user_policy_and_says_so(routed):
    """``method="fast"`` with a user policy: the select loop (it refused before), the same result as
    ``"generic"``, ``method == "fast"`` in the result and its inputs."""
    e, w, kw, pols, init, _ = _setup(1, "tokens")
    a = simulate(e, w, LIFO(), method="fast", **kw)
    b = simulate(e, w, LIFO(), method="generic", **kw)
    assert routed == [1]
    assert (a.method, a.inputs["method"], b.method, b.inputs["method"]) == ("fast", "fast", "generic", "generic")
    assert_same(a, b, "fast")


def test_what_the_select_loop_does_not_cover_runs_on_engine_run(routed):
    """A resident in a state no run reaches (finished, or decoding before its prompt is done) keeps EngineRun, and
    ``method="fast"`` refuses it; so does the window (a built-in FCFS scheduler's view of the queue)."""
    from fluidq.errors import ParameterError

    e, w, kw, _, _, _ = _setup(2, "nokv")
    odd = [RequestState(rid=0, arrival_s=0.0, prompt_tokens=10, output_tokens=3, prefilled=10, decoded=3),
           RequestState(rid=1, arrival_s=0.0, prompt_tokens=10, output_tokens=3, prefilled=4, decoded=1)]
    for r0 in odd:
        assert not covers(initial=(r0,))
        r = simulate(e, w, LIFO(), initial=[r0], **kw)
        assert r.method == "generic"
        with pytest.raises(ParameterError, match="method"):
            simulate(e, w, LIFO(), initial=[r0], method="fast", **kw)
    assert routed == []
    assert not covers(window=True)
    assert covers(async_scheduling=True, initial=_initial(np.random.default_rng(1), 5.0), record_batches=True)


def test_a_paged_initial_state_too_large_is_refused_as_engine_run_does():
    from fluidq.engine import VLLM
    from fluidq.errors import ParameterError

    e, w, kw, _, _, _ = _setup(0, "nokv")
    e = e.with_(kv_capacity_tokens=64, memory=VLLM.with_(block_size=16))
    init = [RequestState(rid=j, arrival_s=0.0, prompt_tokens=30, output_tokens=5, prefilled=30) for j in range(3)]
    msgs = []
    for method in ("generic", "fast"):
        with pytest.raises(ParameterError) as ex:
            simulate(e, w, LIFO(), initial=init, method=method, horizon_s=5.0)
        msgs.append(str(ex.value))
    assert msgs[0] == msgs[1] and "initial" in msgs[0]


@pytest.mark.parametrize("case", range(6))
def test_initial_residents_through_preemptions_and_swaps(case):
    """Residents at t=0 with long outputs, their arrival times among the arrivals', on a tight cache: they are
    preempted (the most recently admitted by their admission numbers, or the policy's last), swapped out and back
    (put back in arrival order) while the arrivals come and go, with and without async scheduling."""
    from fluidq import Engine, Staircase
    from fluidq.engine import VLLM
    from fluidq.policies.latency import SJF

    rng = np.random.default_rng(900 + case)
    mem, kw = [(Memory(), {"preemption": "swap", "swap_s_per_token": 1e-5}),
               (VLLM.with_(block_size=4, preemption="swap"), {"swap_s_per_token": 1e-5}),
               (VLLM.with_(block_size=4), {})][case % 3]
    # (the paged recompute case: the residents and the first arrival fill the cache, whose victim is that arrival)
    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256,
               kv_capacity_tokens=800 if case % 3 == 2 else 1200,
               memory=mem, async_scheduling=case >= 3)
    n = 60
    w = {"arrival_s": np.sort(rng.uniform(0, 3, n)), "prompt_tokens": rng.integers(20, 200, n),
         "output_tokens": rng.integers(20, 120, n)}
    init = [RequestState(rid=j, arrival_s=float(rng.uniform(0, 3)), prompt_tokens=100, output_tokens=150,
                         prefilled=100, decoded=int(rng.integers(0, 50))) for j in range(4)]
    for make in (LIFO, lambda: Sarathi(order=SJF())):
        a = simulate(e, w, make(), method="fast", initial=init, record_batches=True, horizon_s=30.0, **kw)
        b = simulate(e, w, make(), method="generic", initial=init, record_batches=True, horizon_s=30.0, **kw)
        assert a.preemptions > 0 and np.all(a.requests["preemptions"][:4] >= 0), case
        assert_same(a, b, f"case {case}")


def _arrays():
    """The select loop's outputs (run_select, and simulate(method="fast")) on async, initial and batch-record cases."""
    from fluidq.kernel.select import run_select
    from fluidq.sim.core import _tau_table

    res = {}
    for seed in (0, 5, 10):
        for mode in MODES:
            e, w, kw, pols, init, _ = _setup(seed, mode)
            tau_b, ks = _tau_table(e)
            for name in ("lifo", "orca-srpt", "sarathi-refuses" if mode != "nokv" else "hog"):
                key = f"{seed}/{mode}/{name}"
                out = run_select(w["arrival_s"], w["prompt_tokens"], w["output_tokens"], policy=pols[name](),
                                 b_max=e.b_max, k_max=e.k_max, tau_b=tau_b, ks=ks,
                                 horizon=kw.get("horizon_s", np.inf), record=True, check=True,
                                 compose=getattr(e.batch_time, "composition_time", None),
                                 emit_at_prefill=e.prefill_emits_token, kv_cap=e.kv_capacity_tokens,
                                 memory=e.memory, preemption=kw.get("preemption", e.memory.preemption),
                                 swap_s_per_token=kw.get("swap_s_per_token", 0.0), initial=init,
                                 record_batches=True, async_scheduling=e.async_scheduling)
                for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s",
                          "preemptions_per_request"):
                    res[f"{key}/{k}"] = np.asarray(out[k])
                for k, v in zip("tnw", out["backlog"]):
                    res[f"{key}/backlog/{k}"] = np.asarray(v)
                for k, v in out["records"].items():
                    res[f"{key}/records/{k}"] = np.asarray(v)
                res[f"{key}/batches"] = np.array([(j, rid, m) for j, b in enumerate(out["batches"])
                                                  for rid, m in b.prefill] + [(j, rid, -1) for j, b in
                                                                              enumerate(out["batches"])
                                                                              for rid in b.decode], dtype=np.int64)
                res[f"{key}/counts"] = np.array([out[k] for k in ("iterations", "examined", "n_blocked", "tokens_served",
                                                                  "mixed_iterations", "preemptions", "wasted_tokens",
                                                                  "swap_tokens", "rejected", "peak_kv_tokens")])
                res[f"{key}/floats"] = np.array([out["busy_s"], out["end_s"]])
            # simulate(method="fast"): the select loop, compiled here, plain Python in the child
            r = simulate(e, w, LIFO(), method="fast", initial=init, **kw)
            res[f"{seed}/{mode}/simulate/method"] = np.array([r.method == "fast"])
            res[f"{seed}/{mode}/simulate/finish_s"] = np.asarray(r.requests["finish_s"])
    return res


def test_compiled_and_uncompiled_select_kernel_agree_with_async_initial_and_batches(uncompiled_agrees):
    uncompiled_agrees(HERE, _arrays())


if __name__ == "__main__":
    from fluidq.kernel import compiled as _c

    print(f"compiled={_c()}")
    np.savez(sys.argv[1], **_arrays())
