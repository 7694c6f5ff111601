"""The select() loop on the kernel's arrays (fluidq.kernel.select) gives what EngineRun (run_generic) gives.

Seeded random engines (budgets, ``k_max``, context-aware and composition batch times, the first token with the
prefill), workloads and policies -- user policies defined here (LIFO, longest prompt first, one that leaves decoders
out while prompts wait, a prefill-only one that reports blocked prompts) and the built-in non-FCFS orderings (SJF,
SRPT, LAS, PARS with scores, UNIBOOST) -- give identical per-request times, backlog series, iterations, busy time,
records and ``examined``, without a KV cache and under the default token rules (``Memory()``: rejection, admission,
re-asks, victims in the policy's order with ``may_evict``, recompute and swap) and the paged rules (vLLM's blocks,
victim rules, reservations, prefix caching), with records; ``simulate(method="auto")`` routes those runs to it
(``"generic"`` keeps EngineRun) and says ``method == "fast"``; a bad batch raises EngineRun's PolicyError with its
message; run uncompiled (``NUMBA_DISABLE_JIT=1``, in a child process) the loop gives the same arrays.  Async
scheduling, ``initial`` residents and ``record_batches``: tests/kernel/test_select_async_initial.py.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

from fluidq import Affine, ContextAware, Engine, Staircase
from fluidq.kernel import compiled, run_generic
from fluidq.kernel.select import covers, run_select
from fluidq.policies import Batch, Orca, Sarathi, VLLM
from fluidq.policies.latency import LAS, PARS, SJF, SRPT
from fluidq.policies.unified import UniBoost
from fluidq.sim import simulate
from fluidq.sim.core import PolicyError

HERE = Path(__file__)


class LIFO:
    """Newest first: each request in reverse arrival order gets its whole remaining prompt (cut to the budget) or
    a decode token, within b_max and k_max."""

    name = "lifo"

    def select(self, view):
        b, k, pre, dec = view.b_max, 0, [], []
        for r in reversed(view.requests):
            if view.k_max is not None and k >= view.k_max or b <= 0:
                break
            if r.in_prefill:
                m = min(r.prefill_left, b)
                pre.append((r.rid, m))
                b -= m
            elif r.decode_left > 0:
                dec.append(r.rid)
                b -= 1
            else:
                continue
            k += 1
        return Batch(prefill=tuple(pre), decode=tuple(dec))


class LongestPromptFirst:
    """Decoders first (arrival order), then the longest remaining prompts, chunked."""

    name = "lpf"

    def select(self, view):
        b, k = view.b_max, view.k_max if view.k_max is not None else 1 << 30
        dec = [r.rid for r in view.requests if not r.in_prefill and r.decode_left > 0][:min(b, k)]
        b -= len(dec)
        k -= len(dec)
        pre = []
        for r in sorted((r for r in view.requests if r.in_prefill), key=lambda r: (-r.prefill_left, r.rid)):
            if b <= 0 or k <= 0:
                break
            m = min(r.prefill_left, b)
            pre.append((r.rid, m))
            b -= m
            k -= 1
        return Batch(prefill=tuple(pre), decode=tuple(dec))


class PrefillHog:
    """Leaves the decoders out while any prompt waits (whole prompts, oldest first, head-of-line); prompts longer
    than the budget are reported blocked and never served."""

    name = "hog"

    def select(self, view):
        b, k = view.b_max, view.k_max if view.k_max is not None else 1 << 30
        pre, blocked = [], []
        for r in view.requests:
            if r.in_prefill:
                if r.prefill_left > view.b_max:
                    blocked.append(r.rid)
                    continue
                if r.prefill_left > b or k <= 0:
                    break
                pre.append((r.rid, r.prefill_left))
                b -= r.prefill_left
                k -= 1
        if pre:
            return Batch(prefill=tuple(pre), blocked=tuple(blocked))
        dec = [r.rid for r in view.requests if not r.in_prefill and r.decode_left > 0][:min(b, k)]
        return Batch(decode=tuple(dec), blocked=tuple(blocked))


def _policies(n, rng):
    scores = tuple(float(x) for x in rng.uniform(0, 1, n))
    return {"lifo": LIFO, "lpf": LongestPromptFirst, "hog": PrefillHog,
            "sarathi-sjf": lambda: Sarathi(order=SJF()), "orca-srpt": lambda: Orca(order=SRPT()),
            "vllm-las": lambda: VLLM(order=LAS()), "sarathi-pars": lambda: Sarathi(order=PARS(scores=scores)),
            "uniboost": lambda: UniBoost(gamma_per_s=10.0)}


def _case(seed):
    """A random engine and workload (explicit rows)."""
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import FittedIterationModel

    rng = np.random.default_rng(seed)
    b_max = int(rng.choice([16, 64, 256, 512]))
    base = Staircase(c=0.01128, a=0.03547, b0=128) if rng.random() < 0.5 else Affine(c=0.004, a=2e-5)
    kind = rng.choice(["plain", "ctx", "compose"], p=[0.5, 0.3, 0.2])
    bt = {"plain": base, "ctx": ContextAware(base=base, kv_s_per_token=float(rng.choice([1e-7, 3e-6]))),
          "compose": Composition(model=FittedIterationModel(Affine(c=0.004, a=2e-5)))}[kind]
    eng = Engine(batch_time=bt, b_max=b_max, k_max=None if rng.random() < 0.4 else int(rng.integers(1, 24)),
                 prefill_emits_token=bool(rng.random() < 0.4))
    n = int(rng.integers(30, 150))
    p = rng.integers(1, int(rng.choice([20, 120, 700])), n)
    o = rng.integers(1, int(rng.choice([4, 40, 150])), n)
    rate = float(rng.uniform(0.3, 2.5)) * 30.0 / float(np.mean(o) + 1)
    a = np.sort(rng.uniform(0.0, n / rate, n))
    a[rng.integers(0, n, 3)] = a[0]  # equal arrival times
    w = {"arrival_s": np.sort(a), "prompt_tokens": p, "output_tokens": o}
    horizon = None if rng.random() < 0.5 else float(rng.uniform(0.3, 1.2) * a[-1] + 0.1)
    return eng, w, horizon, _policies(n, rng)


def _same(a, b, what):
    assert (a.method, b.method) == ("fast", "generic"), what  # (the select loop ran, and EngineRun)
    assert_same(a, b, what)


def assert_same(a, b, what):
    """Every field the two runs report, the batches run included (test_select_async_initial.py uses it too)."""
    for k in b.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=f"{what}: {k}")
    for k in b.backlog:
        np.testing.assert_array_equal(a.backlog[k], b.backlog[k], err_msg=f"{what}: backlog {k}")
    assert (a.iterations is None) == (b.iterations is None), what
    if b.iterations is not None:
        assert sorted(a.iterations) == sorted(b.iterations), what
        for k in b.iterations:
            np.testing.assert_array_equal(a.iterations[k], b.iterations[k], err_msg=f"{what}: records {k}")
    for k in ("n_iterations", "tokens_served", "busy_fraction", "mixed_batch_fraction", "blocked", "end_s", "examined",
              "n_requests", "n_finished", "preemptions", "rejected", "peak_kv_tokens", "wasted_tokens", "swap_tokens",
              "batches"):
        assert getattr(a, k) == getattr(b, k), (what, k, str(getattr(a, k))[:300], str(getattr(b, k))[:300])


def _run(eng, w, horizon, make, method, record):
    kw = {"horizon_s": horizon} if horizon is not None else {"n_requests": len(w["arrival_s"])}
    return simulate(eng, w, make(), method=method, record_iterations=record, **kw)


@pytest.mark.skipif(not compiled(), reason="simulate routes to the select kernel only where it is compiled")
@pytest.mark.parametrize("seed", range(16))
def test_random_engines_and_policies_agree(seed, routed):
    eng, w, horizon, pols = _case(seed)
    rng = np.random.default_rng(1000 + seed)
    for name, make in pols.items():
        record = bool(rng.random() < 0.5)
        b = _run(eng, w, horizon, make, "generic", record)
        n_routed = len(routed)
        a = _run(eng, w, horizon, make, "auto", record)
        assert len(routed) == n_routed + 1, name  # auto ran the select kernel, generic did not
        _same(a, b, f"seed {seed} {name}")


@pytest.mark.skipif(not compiled(), reason="simulate routes to the select kernel only where it is compiled")
def test_overloaded_run_and_progress_reports_agree(routed):
    """An unstable run (the queue grows) with progress reports: the same reports at the same instants."""
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, k_max=32)
    rng = np.random.default_rng(7)
    n = 3000
    w = {"arrival_s": np.sort(rng.uniform(0, 60, n)), "prompt_tokens": rng.integers(1, 400, n),
         "output_tokens": rng.integers(1, 200, n)}
    for make in (LIFO, lambda: Sarathi(order=SRPT())):
        said = {"auto": [], "generic": []}
        runs = {m: simulate(eng, w, make(), horizon_s=40.0, method=m, record_iterations=True,
                            progress=lambda t, k, m=m: said[m].append((t, k))) for m in said}
        _same(runs["auto"], runs["generic"], "overload")
        assert said["auto"] == said["generic"] and len(said["auto"]) > 20
        assert runs["auto"].backlog["requests"][-1] > 500  # the queue grew
    assert len(routed) == 2


class Refuses(SJF):
    """SJF that refuses to evict every third request (the ``may_evict`` hook of StationMemory)."""

    def may_evict(self, request, now_s):
        return request.rid % 3 != 0


@pytest.mark.skipif(not compiled(), reason="simulate routes to the select kernel only where it is compiled")
@pytest.mark.parametrize("seed", range(16))
def test_token_rules_agree(seed, routed):
    """The default token rules (Memory()): rejection at arrival, head-of-line admission with headroom, the policy
    asked again without new requests, victims in the policy's order (``may_evict`` honoured), recompute or swap."""
    from fluidq.engine import Memory

    eng, w, horizon, pols = _case(seed)
    pols["sarathi-refuses"] = lambda: Sarathi(order=Refuses())
    rng = np.random.default_rng(77 + seed)
    p, o = w["prompt_tokens"], w["output_tokens"]
    e = eng.with_(kv_capacity_tokens=int(np.median(p + o) * rng.uniform(0.8, 4.0)) + 1, memory=Memory())
    kw = {"horizon_s": horizon if horizon is not None else float(w["arrival_s"][-1] * 3 + 5)}
    if rng.random() < 0.4:
        kw.update(preemption="swap", swap_s_per_token=float(rng.choice([0.0, 1e-4])))
    _memory_runs_agree(e, w, kw, pols, seed, routed)


def test_uniboost_finishes_the_25_token_cache_of_seed_14():
    """test_token_rules_agree's seed 14 (a 25-token cache, b_max 16): UNIBOOST finished 10 of its 106 requests in
    100 s before h-uni (then PolicyError); each path now finishes every one."""
    from fluidq.engine import Memory

    eng, w, _, pols = _case(14)
    rng = np.random.default_rng(77 + 14)
    p, o = w["prompt_tokens"], w["output_tokens"]
    e = eng.with_(kv_capacity_tokens=int(np.median(p + o) * rng.uniform(0.8, 4.0)) + 1, memory=Memory())
    assert e.kv_capacity_tokens == 25
    for method in ("generic", "auto"):
        r = simulate(e, w, pols["uniboost"](), method=method, horizon_s=100.0)
        assert r.n_finished == len(w["arrival_s"]) == 106, (method, r.n_finished)


def _memory_runs_agree(e, w, kw, pols, seed, routed):
    """Each policy on engine ``e`` (a KV cache) by EngineRun and by the select kernel: the same results."""
    for j, (name, make) in enumerate(pols.items()):
        rec = bool((seed + j) % 2)  # records (kv_used; paged: resident, waiting, useful tokens) on half the runs
        # (every policy here schedules work whenever some can run: UNIBOOST's token-rules seed 14, a 25-token cache,
        # stalled with PolicyError "scheduled nothing" until h-uni, 2026-12-07, let an admitted request use its own
        # MEMGUARD gap; tests/policies/test_uniboost_tiny_cache.py holds that on tiny caches)
        b = simulate(e, w, make(), method="generic", record_iterations=rec, **kw)
        n_routed = len(routed)
        a = simulate(e, w, make(), method="auto", record_iterations=rec, **kw)
        assert len(routed) == n_routed + 1, name
        _same(a, b, f"seed {seed} {name}")
        for k in ("wasted_tokens", "swap_tokens"):
            assert getattr(a, k) == getattr(b, k), (seed, name, k)


def _paged_case(seed):
    from fluidq.engine import VLLM, Memory

    eng, w, horizon, pols = _case(seed)
    pols["sarathi-refuses"] = lambda: Sarathi(order=Refuses())
    rng = np.random.default_rng(177 + seed)
    bs = int(rng.choice([1, 4, 16]))
    mem = [VLLM.with_(block_size=bs), VLLM.with_(block_size=bs, victim="last_in_order"),
           VLLM.with_(block_size=bs, reservation="incremental"), Memory(kind="tokens", victim="most_recent"),
           VLLM.with_(block_size=bs, preemption="swap"), VLLM.with_(block_size=bs, prefix_caching=True),
           VLLM.with_(block_size=bs, prefix_caching=True, reservation="incremental", victim="last_in_order")][seed % 7]
    p, o = w["prompt_tokens"], w["output_tokens"]
    cap = max(int(np.median(p + o) * rng.uniform(0.8, 4.0)) + 1, 2 * bs) // bs * bs + bs
    kw = {"horizon_s": horizon if horizon is not None else float(w["arrival_s"][-1] * 3 + 5)}
    if mem.preemption == "swap":
        kw["swap_s_per_token"] = float(rng.choice([0.0, 1e-4]))
    return eng.with_(kv_capacity_tokens=cap, memory=mem), w, kw, pols


@pytest.mark.skipif(not compiled(), reason="simulate routes to the select kernel only where it is compiled")
@pytest.mark.parametrize("seed", range(21))
def test_paged_rules_agree(seed, routed):
    """The paged rules (vLLM's blocks, most recent or last-in-order victim, whole-prompt or incremental reservation,
    one-token blocks, swap, prefix caching): blocks for the running requests first, a victim while they do not fit and
    the policy asked again with the admitted alone, then head-of-line admission by paged_take, a re-admitted victim
    taking back its own cached leading blocks."""
    e, w, kw, pols = _paged_case(seed)
    _memory_runs_agree(e, w, kw, pols, seed, routed)


@pytest.mark.skipif(not compiled(), reason="simulate routes to the select kernel only where it is compiled")
def test_paged_cases_preempt_swap_reject_and_take_back():
    seen = {"preempt": 0, "swap": 0, "reject": 0, "take-back": 0}
    for seed in range(21):
        e, w, kw, _ = _paged_case(seed)
        r = simulate(e, w, LIFO(), **kw)
        seen["preempt"] += r.preemptions > 0
        seen["swap"] += r.swap_tokens > 0
        seen["reject"] += r.rejected > 0
        if e.memory.prefix_caching:  # the take-back changes the run (the same cache without it differs)
            r0 = simulate(e.with_(memory=e.memory.with_(prefix_caching=False)), w, LIFO(), **kw)
            seen["take-back"] += r.wasted_tokens != r0.wasted_tokens
    assert seen["preempt"] >= 5 and seen["swap"] >= 1 and seen["reject"] >= 2 and seen["take-back"] >= 2, seen


@pytest.mark.skipif(not compiled(), reason="simulate routes to the select kernel only where it is compiled")
def test_token_rules_cover_preemption_swap_and_rejection():
    """The random cases above preempt, swap and reject (so the test can fail on those rules)."""
    from fluidq.engine import Memory

    seen = {"preempt": 0, "swap": 0, "reject": 0, "refused": 0}
    for seed in range(16):
        eng, w, horizon, _ = _case(seed)
        rng = np.random.default_rng(77 + seed)
        p, o = w["prompt_tokens"], w["output_tokens"]
        e = eng.with_(kv_capacity_tokens=int(np.median(p + o) * rng.uniform(0.8, 4.0)) + 1, memory=Memory())
        kw = {"horizon_s": horizon if horizon is not None else float(w["arrival_s"][-1] * 3 + 5)}
        if rng.random() < 0.4:
            kw.update(preemption="swap", swap_s_per_token=float(rng.choice([0.0, 1e-4])))
        r = simulate(e, w, Sarathi(order=Refuses()), **kw)
        seen["preempt"] += r.preemptions > 0
        seen["swap"] += r.swap_tokens > 0
        seen["reject"] += r.rejected > 0
        seen["refused"] += int(r.preemptions > 0 and np.any(r.requests["preemptions"][::3] == 0))
    assert seen["preempt"] >= 5 and seen["swap"] >= 2 and seen["reject"] >= 2, seen


@pytest.mark.skipif(not compiled(), reason="simulate routes to the select kernel only where it is compiled")
def test_a_budget_above_the_eager_table_agrees(routed):
    """b_max above EAGER_TAU_TOKENS: EngineRun fills its batch-time table lazily; the select kernel gets the table up
    to the run's largest possible batch (as kv.py does) and the same times."""
    from fluidq.sim.core import EAGER_TAU_TOKENS

    eng = Engine(batch_time=Affine(c=0.004, a=2e-9), b_max=4 * EAGER_TAU_TOKENS, k_max=8)
    rng = np.random.default_rng(2)
    n = 120
    w = {"arrival_s": np.sort(rng.uniform(0, 5, n)), "prompt_tokens": rng.integers(1, 5000, n),
         "output_tokens": rng.integers(1, 50, n)}
    for make in (LIFO, LongestPromptFirst):
        _same(simulate(eng, w, make(), n_requests=n), simulate(eng, w, make(), n_requests=n, method="generic"), "lazy")
    assert len(routed) == 2


def test_cases_not_covered_run_on_engine_run(routed):
    from fluidq.engine import VLLM, Memory  # noqa: F401

    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=256)
    w = {"arrival_s": np.linspace(0, 2, 20), "prompt_tokens": np.full(20, 50), "output_tokens": np.full(20, 9)}
    assert simulate(eng, w, LIFO(), n_requests=20, method="generic").method == "generic"
    assert routed == []
    if compiled():  # async scheduling and batch records run on the select loop too (2026-12-07)
        for kw in ({"record_batches": True}, {}):
            assert simulate(eng.with_(async_scheduling=True), w, LIFO(), n_requests=20, **kw).method == "fast"
        assert len(routed) == 2
    assert covers(async_scheduling=True) and covers(kv_cap=100, memory=VLLM.with_(prefix_caching=True))
    assert not covers(window=True) and not covers(initial=(1,)) and covers(record_batches=True)
    assert covers() and covers(kv_cap=100, memory=Memory(), record=True) and covers(kv_cap=100, memory=VLLM)


class _Bad:
    """A policy whose batch at the ``when``-th call breaks a constraint (``how``), else LIFO's."""

    def __init__(self, how, when=5):
        self.name, self.how, self.when, self.calls = f"bad-{how}", how, when, 0

    def select(self, view):
        self.calls += 1
        b = LIFO().select(view)
        if self.calls < self.when:
            return b
        rs = view.requests
        pre = [r for r in rs if r.in_prefill]
        dec = [r for r in rs if not r.in_prefill and r.decode_left > 0]
        how = self.how
        if how == "stranger":
            return Batch(prefill=((10**6, 1),))
        if how == "stranger-decode":
            return Batch(decode=(-1,))
        if how == "zero" and pre:
            return Batch(prefill=((pre[0].rid, 0),))
        if how == "too-much" and pre:
            return Batch(prefill=((pre[0].rid, pre[0].prefill_left), (pre[0].rid, 1)))
        if how == "decode-in-prefill" and pre:
            return Batch(decode=(pre[0].rid,))
        if how == "twice" and dec:
            return Batch(decode=(dec[0].rid, dec[0].rid))
        if how == "b_max":
            return Batch(decode=tuple(r.rid for r in dec), prefill=tuple((r.rid, r.prefill_left) for r in pre))
        if how == "k_max" and len(dec) + len(pre) > 2:
            return Batch(decode=tuple(r.rid for r in dec), prefill=tuple((r.rid, 1) for r in pre))
        if how == "finished":  # a request that finished in the last batch is gone from the view
            return Batch(decode=(0,))
        return b


@pytest.mark.parametrize("how", ["stranger", "stranger-decode", "zero", "too-much", "decode-in-prefill", "twice",
                                 "b_max", "k_max", "finished"])
def test_a_bad_batch_raises_engine_runs_policy_error(how):
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=64, k_max=2)
    rng = np.random.default_rng(3)
    n = 60
    w = {"arrival_s": np.sort(rng.uniform(0, 3, n)), "prompt_tokens": rng.integers(20, 60, n),
         "output_tokens": rng.integers(1, 6, n)}
    kw = dict(b_max=64, k_max=2, tau_b=np.r_[np.nan, Staircase(c=0.01128, a=0.03547, b0=128)(np.arange(1.0, 65))],
              ks=0.0, horizon=np.inf, record=False, check=True)
    msgs = []
    for run in (run_generic, run_select):
        pol = _Bad(how, when=40 if how == "finished" else 5)
        with pytest.raises(PolicyError) as e:
            run(w["arrival_s"].tolist(), w["prompt_tokens"].tolist(), w["output_tokens"].tolist(), policy=pol, **kw)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    if compiled():  # through simulate (check_batches is on for a user policy)
        with pytest.raises(PolicyError) as e:
            simulate(eng, w, _Bad(how, when=40 if how == "finished" else 5), n_requests=n)
        assert str(e.value) == msgs[0]


def _arrays():
    res = {}
    for seed in range(0, 12, 3):
        eng, w, horizon, pols = _case(seed)
        from fluidq.sim.core import _tau_table

        tau_b, ks = _tau_table(eng)
        for name in ("lifo", "hog", "orca-srpt", "sarathi-pars"):
            out = run_select(w["arrival_s"], w["prompt_tokens"], w["output_tokens"], policy=pols[name](),
                             b_max=eng.b_max, k_max=eng.k_max, tau_b=tau_b, ks=ks,
                             horizon=np.inf if horizon is None else horizon, record=True, check=True,
                             compose=getattr(eng.batch_time, "composition_time", None),
                             emit_at_prefill=eng.prefill_emits_token)
            for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s"):
                res[f"{seed}/{name}/{k}"] = np.asarray(out[k])
            for k, v in zip("tnw", out["backlog"]):
                res[f"{seed}/{name}/backlog/{k}"] = np.asarray(v)
            for k, v in out["records"].items():
                res[f"{seed}/{name}/records/{k}"] = np.asarray(v)
            res[f"{seed}/{name}/counts"] = np.array([out["iterations"], out["examined"], out["n_blocked"],
                                                     out["tokens_served"], out["mixed_iterations"]])
            res[f"{seed}/{name}/floats"] = np.array([out["busy_s"], out["end_s"]])
            # the token rules, swap on odd seeds
            p, o = w["prompt_tokens"], w["output_tokens"]
            out = run_select(w["arrival_s"], p, o, policy=pols[name](), b_max=eng.b_max, k_max=eng.k_max, tau_b=tau_b,
                             ks=ks, horizon=float(w["arrival_s"][-1] * 3 + 5), record=False, check=True,
                             compose=getattr(eng.batch_time, "composition_time", None),
                             emit_at_prefill=eng.prefill_emits_token, kv_cap=int(np.median(p + o) * 1.5) + 1,
                             preemption="swap" if seed % 2 else "recompute", swap_s_per_token=1e-4)
            for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s", "preemptions_per_request"):
                res[f"{seed}/{name}/kv/{k}"] = np.asarray(out[k])
            # the paged rules (vLLM's blocks of 4 tokens)
            e, wp, kwp, pp = _paged_case(seed)
            from fluidq.engine import VLLM

            out2 = run_select(wp["arrival_s"], wp["prompt_tokens"], wp["output_tokens"], policy=pp[name](),
                              b_max=e.b_max, k_max=e.k_max, tau_b=_tau_table(e)[0], ks=_tau_table(e)[1],
                              horizon=kwp["horizon_s"], record=True, check=True,
                              compose=getattr(e.batch_time, "composition_time", None),
                              emit_at_prefill=e.prefill_emits_token, kv_cap=e.kv_capacity_tokens,
                              memory=VLLM.with_(block_size=4, prefix_caching=bool(seed % 2)),
                              preemption="recompute")
            for k, v in out2["records"].items():
                res[f"{seed}/{name}/paged/records/{k}"] = np.asarray(v)
            for k in ("finish_s", "first_token_s", "preemptions_per_request"):
                res[f"{seed}/{name}/paged/{k}"] = np.asarray(out2[k])
            res[f"{seed}/{name}/paged/counts"] = np.array([out2[k] for k in ("iterations", "examined", "preemptions",
                                                                             "wasted_tokens", "rejected",
                                                                             "peak_kv_tokens")])
            res[f"{seed}/{name}/kv/counts"] = np.array([out[k] for k in ("iterations", "examined", "preemptions",
                                                                         "wasted_tokens", "swap_tokens", "rejected",
                                                                         "peak_kv_tokens")])
    return res


def test_compiled_and_uncompiled_select_kernel_agree(uncompiled_agrees):
    uncompiled_agrees(HERE, _arrays())


if __name__ == "__main__":
    from fluidq.kernel import compiled as _c

    print(f"compiled={_c()}")
    np.savez(sys.argv[1], **_arrays())
