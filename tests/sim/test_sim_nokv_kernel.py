"""Issue 15: engine options that ran on the Python path now run compiled, and what still does not says so.

* Without a KV cache, a first token emitted with the prefill, vLLM's async scheduling and a composition batch time
  (the event-skipping kernel models none of them) run in the kernel with memory (:mod:`fluidq.kernel.kv`) with a
  cache that never binds (``fluidq.sim.core.UNBOUNDED_KV``): on random engines, schedulers and workloads every
  request's times, the backlog series and the run's counters equal the generic ``select()`` loop's without a
  cache, and on the 24 of 36 seeds that record iterations (``seed % 3 != 0``) so does every iteration record (the
  other 12 assert that neither path recorded) -- a context-aware batch time with the first token from the prefill
  included (since h-ctx15 every path charges a decoder's context as the KV it holds: one decoder's first decode step
  is charged its prompt, on the generic path with and without a cache, the kernels and a network's stations).
* With a KV cache, budgets above ``EAGER_TAU_TOKENS`` run in the kernel too (its table tabulated up to the run's
  largest possible batch) and equal the generic path's lazily tabulated run; blocks above
  ``KV_KERNEL_MAX_BLOCK`` and network stations with a budget above ``KERNEL_TABLE_MAX`` fall back with one
  one-line :class:`~fluidq.kernel.KernelLimitWarning`.
* Without numba, a KV-limited ``simulate`` and ``simulate_network`` warn once (one line), as the no-memory path does.
"""
import warnings
from pathlib import Path

import numpy as np
import pytest

from fluidq import ContextAware, Engine, Staircase, simulate
from fluidq.engine import VLLM, Memory
from fluidq.kernel import KernelLimitWarning, KernelNotCompiledWarning
from fluidq.policies import POLICY_NAMES, Scheduler, resolve_policy
from fluidq.sim import fast_path_applies

from sim_compare import assert_same  # tests/sim/sim_compare.py, shared with test_sim_kv_kernel.py

DATA = Path(__file__).resolve().parents[2] / "validation" / "data"
SEEDS = range(36)


@pytest.fixture(scope="module")
def models():
    from fluidq.batchtime.operators import lss_iteration_model, vidur_iteration_model

    v7 = DATA / "vidur" / "a100" / "meta-llama" / "Llama-2-7b-hf"
    return [lss_iteration_model(DATA / "llmservingsim" / "RTX4090_Llama-3.1-8B", n_layers=32),
            vidur_iteration_model(v7 / "mlp.csv.gz", v7 / "attention_subset.csv.gz", n_layers=32, per_seq_us=3.0,
                                  decode_batching_overhead=0.1)]


def _case(seed, models):
    """A random engine without a KV cache that needs the kernel with memory (a first token from the prefill, async
    scheduling or a composition batch time: at least one), a scheduler and explicit requests."""
    from fluidq.batchtime.composition import Composition

    rng = np.random.default_rng(seed)
    comp = rng.random() < 0.4
    emit, asy = bool(rng.random() < 0.6), bool(rng.random() < 0.6)
    if not (comp or emit or asy):
        emit = True
    if comp:
        bt = Composition(model=models[int(rng.integers(0, len(models)))])
    else:
        bt = Staircase(c=0.01, a=0.02, b0=16)
        if rng.random() < 0.5:
            bt = ContextAware(base=bt, kv_s_per_token=2e-6)
    eng = Engine(batch_time=bt, b_max=int(rng.choice([16, 64, 256])),
                 k_max=None if rng.random() < 0.4 else int(rng.integers(1, 20)), prefill_emits_token=emit,
                 async_scheduling=asy)
    n = int(rng.integers(20, 150))
    p = rng.integers(1, int(rng.choice([10, 100, 600])), n)
    o = rng.integers(1, int(rng.choice([3, 30, 200])), n)
    rate = float(rng.uniform(0.3, 3.0)) * 40.0 / float(np.mean(o) + 1)  # below and above the engine's capacity
    a = np.sort(rng.uniform(0.0, n / rate, n))
    pols = [*POLICY_NAMES, Scheduler(
        name="s", priority=str(rng.choice(["prefill", "decode"])), mixed=bool(rng.random() < 0.5),
        chunked=bool(rng.random() < 0.5), chunk_long_prompts=bool(rng.random() < 0.5),
        b_max=None if rng.random() < 0.5 else int(rng.integers(4, 64)),
        k_max=None if rng.random() < 0.5 else int(rng.integers(1, 12)))]
    pol = pols[int(rng.integers(0, len(pols)))]
    kw = {"horizon_s": float(1.5 * a[-1] + 2.0)} if rng.random() < 0.7 else {"n_requests": n}
    return eng, {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}, pol, kw


@pytest.mark.parametrize("seed", SEEDS)
def test_no_cache_options_run_in_the_kernel_with_memory_and_equal_the_generic_path(seed, models):
    eng, w, pol, kw = _case(seed, models)
    assert eng.kv_capacity_tokens is None
    ok, why = fast_path_applies(resolve_policy(pol), eng)
    assert ok and "kernel with memory" in why, why
    record = bool(seed % 3)  # 24 of the 36 seeds record iterations, 12 check the unrecorded runs
    a = simulate(eng, w, pol, record_iterations=record, **kw)  # method="auto"
    b = simulate(eng, w, pol, method="generic", record_iterations=record, check_batches=True, **kw)
    assert_same(a, b, record=record)
    assert a.peak_kv_tokens == 0  # (some cases block: prompts above a non-chunking budget)


def test_the_cases_cover_each_option(models):
    cases = [_case(s, models)[0] for s in SEEDS]
    assert sum(e.prefill_emits_token for e in cases) >= 8
    assert sum(e.async_scheduling for e in cases) >= 8
    assert sum(hasattr(e.batch_time, "composition_time") for e in cases) >= 8
    assert sum(isinstance(e.batch_time, ContextAware) and not e.prefill_emits_token for e in cases) >= 3
    assert sum(isinstance(e.batch_time, ContextAware) and e.prefill_emits_token for e in cases) >= 3


def test_a_summary_of_a_no_cache_kernel_run_is_the_full_run_summarised():
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=128, prefill_emits_token=True,
               async_scheduling=True)
    from fluidq import Geometric, Poisson, Workload

    w = Workload(arrival=Poisson(rate_per_s=6.0), prompt_tokens=Geometric(mean_tokens=60),
                 output_tokens=Geometric(mean_tokens=40))
    full = simulate(e, w, "vllm-chunked", horizon_s=40, rng=2)
    s = simulate(e, w, "vllm-chunked", horizon_s=40, rng=2, record="summary")
    g = simulate(e, w, "vllm-chunked", horizon_s=40, rng=2, method="generic")
    assert full.method == "fast" and s.streamed is None and s.to_dict() == full.to_dict()
    np.testing.assert_array_equal(full.requests["finish_s"], g.requests["finish_s"])


def test_context_aware_with_the_first_token_from_the_prefill_runs_in_the_kernel_without_a_cache():
    e = Engine(batch_time=ContextAware(base=Staircase(c=0.01, a=0.02, b0=16), kv_s_per_token=2e-6), b_max=64,
               prefill_emits_token=True)
    ok, why = fast_path_applies(resolve_policy("sarathi"), e)
    assert ok and "kernel with memory" in why, why  # (was: the generic path, the faces one token apart)
    w = {"arrival_s": np.array([0.0, 0.1]), "prompt_tokens": np.array([5, 9]), "output_tokens": np.array([4, 3])}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = simulate(e, w, "sarathi", n_requests=2, record_iterations=True)
    assert_same(a, simulate(e, w, "sarathi", n_requests=2, method="generic", record_iterations=True), record=True)


P1, KS = 37, 0.25  # one decoder's prompt; seconds per KV token (a token of context more is 0.25 s: unmistakable)


def _one_decoder_engine(kv):
    return Engine(batch_time=ContextAware(base=Staircase(c=0.01, a=0.02, b0=16), kv_s_per_token=KS), b_max=64,
                  prefill_emits_token=True, kv_capacity_tokens=kv)


def _one_decoder_finish(e):
    """Prefill (it gives the first token) then one decode step charged ``KS * context``: the decoder's end."""
    base = e.batch_time.base
    return float(base(P1)) + float(base(1)) + KS * P1  # context P1: the prefill's token is not cached yet


@pytest.mark.parametrize("kv", [None, 10_000], ids=["no-cache", "cache"])
@pytest.mark.parametrize("method", ["fast", "generic"])
def test_one_decoder_s_first_decode_step_is_charged_its_prompt_on_every_engine_path(kv, method):
    e = _one_decoder_engine(kv)
    w = {"arrival_s": np.array([0.0]), "prompt_tokens": np.array([P1]), "output_tokens": np.array([2])}
    r = simulate(e, w, "sarathi", n_requests=1, method=method, record_iterations=True)
    assert r.method == method
    assert r.iterations["kv_tokens"].tolist() == [0, P1]  # the context charged at each step (not P1 + 1)
    assert r.requests["finish_s"][0] == pytest.approx(_one_decoder_finish(e), rel=1e-12, abs=0.0)


@pytest.mark.parametrize("kv", [None, 10_000], ids=["no-cache", "cache"])
@pytest.mark.parametrize("method", ["kernel", "python"])
def test_one_decoder_s_first_decode_step_is_charged_its_prompt_at_a_network_station(kv, method):
    from fluidq import Poisson
    from fluidq.kernel import compiled
    from fluidq.network import Hop, Network, RequestClass, Station
    from fluidq.sim.network import simulate_network

    if method == "kernel" and not compiled():
        pytest.skip("the network kernel runs compiled only")
    e = _one_decoder_engine(kv)
    net = Network(stations=[Station(name="s", engine=e, policy="sarathi")],
                  classes=[RequestClass(name="c", arrival=Poisson(rate_per_s=1e-9),
                                        route=[Hop(engine="s", prompt_tokens=P1, output_tokens=2, name="h")])])
    r = simulate_network(net, horizon_s=50.0, rng=0, initial={"h": 1}, record_hops=True, method=method)
    assert r.completed["c"] == 1 and r.hops["finish_s"].tolist() == [pytest.approx(_one_decoder_finish(e),
                                                                                 rel=1e-12, abs=0.0)]


# ---------------------------------------------------------------------------------------------- size limits
@pytest.mark.parametrize("bt", [Staircase(c=0.01, a=0.02, b0=16),
                                ContextAware(base=Staircase(c=0.01, a=0.02, b0=16), kv_s_per_token=3e-6)],
                         ids=["staircase", "context-aware"])
@pytest.mark.parametrize("memory", [Memory(), VLLM], ids=str)
def test_a_kv_engine_with_a_budget_above_the_eager_table_runs_in_the_kernel(bt, memory):
    from fluidq.sim.core import EAGER_TAU_TOKENS

    e = Engine(batch_time=bt, b_max=EAGER_TAU_TOKENS + 7, kv_capacity_tokens=5000, memory=memory,
               prefill_emits_token=memory is VLLM)
    assert fast_path_applies(resolve_policy("vllm-chunked"), e)[0]
    rng = np.random.default_rng(11)
    n = 150
    w = {"arrival_s": np.sort(rng.uniform(0, 6.0, n)), "prompt_tokens": rng.integers(1, 900, n),
         "output_tokens": rng.integers(1, 120, n)}
    largest = 0
    for pol in ("vllm-chunked", "orca", "fastertransformer"):
        a = simulate(e, w, pol, n_requests=n, record_iterations=True)
        b = simulate(e, w, pol, n_requests=n, record_iterations=True, method="generic")
        assert_same(a, b, record=True)
        largest = max(largest, int((a.iterations["prefill_tokens"] + a.iterations["decode_tokens"]).max()))
    assert largest > 512  # the table is read far past a small budget's


def test_the_kernel_table_above_the_eager_bound_stops_at_the_run_s_tokens():
    from fluidq.sim.core import EAGER_TAU_TOKENS, _kernel_tau_table, _tau_table

    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=1 << 24, kv_capacity_tokens=10_000)
    tab, ks = _kernel_tau_table(e, np.array([30, 40]), np.array([5, 6]))
    assert tab.shape == (82,) and np.isnan(tab[0]) and ks == 0.0
    lazy, _ = _tau_table(e)
    assert [lazy[b] for b in range(1, 82)] == tab[1:].tolist()  # the lazy table's floats, one at a time
    small = e.with_(b_max=EAGER_TAU_TOKENS)
    assert _kernel_tau_table(small, np.array([3]), np.array([4]))[0] == _tau_table(small)[0]


def test_blocks_above_the_kernel_s_limit_fall_back_with_one_warning():
    from fluidq.kernel import _jit
    from fluidq.sim.core import KV_KERNEL_MAX_BLOCK

    bs = 2 * KV_KERNEL_MAX_BLOCK
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, kv_capacity_tokens=4 * bs,
               memory=VLLM.with_(block_size=bs))
    ok, why = fast_path_applies(resolve_policy("sarathi"), e)
    assert not ok and str(KV_KERNEL_MAX_BLOCK) in why
    assert fast_path_applies(resolve_policy("sarathi"), e.with_(memory=VLLM.with_(block_size=KV_KERNEL_MAX_BLOCK)))[0]
    w = {"arrival_s": np.array([0.0, 0.1]), "prompt_tokens": np.array([5, 9]), "output_tokens": np.array([4, 3])}
    _jit._limits_said.discard(f"{why}")
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        runs = [simulate(e, w, "sarathi", n_requests=2) for _ in range(2)]
    said = [x for x in ws if issubclass(x.category, KernelLimitWarning)]
    assert len(said) == 1 and "\n" not in str(said[0].message) and "block" in str(said[0].message)
    assert all(r.method == "generic" and r.n_finished == 2 for r in runs)


def _network(b_max, kv=None):
    from fluidq.network import Hop, Network, RequestClass, Station

    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=b_max, kv_capacity_tokens=kv)
    return Network(stations=[Station(name="s", engine=e, policy="sarathi")],
                   classes=[RequestClass(name="c", rate_per_s=4.0,
                                         route=[Hop(engine="s", prompt_tokens=40, output_tokens=20)])])


def _only(monkeypatch, path):
    """Make the other of the network's two paths (``"kernel"``: the compiled loop, else the Python clock) fail."""
    import fluidq.sim.network as sn

    def boom(*a, **k):
        raise AssertionError(f"the network ran off the {path} path")

    monkeypatch.setattr(sn, "_run" if path == "kernel" else "_run_kernel", boom)


def test_a_network_station_budget_up_to_the_kernel_table_runs_compiled(monkeypatch):
    from fluidq.kernel import compiled
    from fluidq.kernel.clock import _TABLE_MAX, KERNEL_TABLE_MAX
    from fluidq.sim.network import _kernel_unsupported, simulate_network

    for b in (_TABLE_MAX + 1, KERNEL_TABLE_MAX):  # (was: above _TABLE_MAX the whole network ran in Python)
        for kv in (None, 50_000):
            assert _kernel_unsupported(_network(b, kv), False) is None, (b, kv)
    if not compiled():
        pytest.skip("without numba method='auto' runs the Python path")
    net = _network(_TABLE_MAX + 1)
    p = simulate_network(net, horizon_s=20.0, rng=4, method="python")
    with monkeypatch.context() as m:
        _only(m, "kernel")
        k = simulate_network(net, horizon_s=20.0, rng=4)
    assert k.completed == p.completed and k.completed["c"] > 0 and k.mean_sojourn_s == p.mean_sojourn_s
    for key in ("in_system", "station_tokens"):
        for name, v in getattr(p, key).items():
            assert np.array_equal(getattr(k, key)[name], v), (key, name)


def test_a_network_station_budget_above_the_kernel_table_falls_back_with_one_warning(monkeypatch):
    from fluidq.kernel import _jit, compiled
    from fluidq.kernel.clock import KERNEL_TABLE_MAX
    from fluidq.sim.network import _kernel_unsupported, simulate_network

    if not compiled():
        pytest.skip("without numba the network runs in Python anyway (and says so)")
    _only(monkeypatch, "python")
    for kv in (None, 50_000):
        net = _network(KERNEL_TABLE_MAX + 1, kv)
        why = _kernel_unsupported(net, False)
        assert why is not None and str(KERNEL_TABLE_MAX) in why and "'s'" in why
        _jit._limits_said.discard(why)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            runs = [simulate_network(net, horizon_s=5.0, rng=1) for _ in range(2)]
        said = [x for x in ws if issubclass(x.category, KernelLimitWarning)]
        assert len(said) == 1 and "\n" not in str(said[0].message), [str(x.message) for x in ws]
        assert all(r.completed["c"] > 0 for r in runs)


# ------------------------------------------------------------------------------------------- without numba
@pytest.fixture
def no_numba(monkeypatch):
    """numba hidden the way a platform without a wheel has it: the availability flag None, nothing said yet.  (In
    this process the kernels were compiled already; the paths tested here do not call them uncompiled.)"""
    from fluidq.kernel import _jit

    monkeypatch.setattr(_jit, "_numba", None)
    monkeypatch.setattr(_jit, "_warned", False)
    return _jit


def _said(ws):
    return [str(x.message) for x in ws if issubclass(x.category, KernelNotCompiledWarning)]


def test_without_numba_a_kv_limited_run_warns_once(no_numba):
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, kv_capacity_tokens=400, memory=VLLM)
    w = {"arrival_s": np.arange(20) * 0.05, "prompt_tokens": np.full(20, 60), "output_tokens": np.full(20, 30)}
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        runs = [simulate(e, w, "vllm-chunked", n_requests=20) for _ in range(3)]
    said = _said(ws)
    assert len(said) == 1 and "\n" not in said[0] and "numba" in said[0]
    assert all(r.method == "generic" for r in runs)
    ref = simulate(e, w, "vllm-chunked", n_requests=20, method="generic")
    np.testing.assert_array_equal(runs[0].requests["finish_s"], ref.requests["finish_s"])


def test_without_numba_a_no_cache_run_needing_the_kernel_with_memory_warns_once(no_numba):
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, async_scheduling=True)
    w = {"arrival_s": np.arange(20) * 0.05, "prompt_tokens": np.full(20, 60), "output_tokens": np.full(20, 30)}
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        r = simulate(e, w, "sarathi", n_requests=20)
        simulate(e, w, "sarathi", n_requests=20)
    assert r.method == "generic" and len(_said(ws)) == 1


def test_without_numba_a_network_warns_once(no_numba, monkeypatch):
    from fluidq.sim.network import simulate_network

    _only(monkeypatch, "python")
    for kv in (None, 50_000):
        no_numba._warned = False
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            runs = [simulate_network(_network(256, kv), horizon_s=5.0, rng=1) for _ in range(2)]
        said = _said(ws)
        assert len(said) == 1 and "\n" not in said[0], said
        assert all(r.completed["c"] > 0 for r in runs)


def test_a_user_policy_warns_nothing_without_numba(no_numba):
    class Mine:
        name = "mine"

        def __init__(self):
            self.inner = resolve_policy("sarathi")

        def select(self, view):
            return self.inner.select(view)

    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, kv_capacity_tokens=400)
    w = {"arrival_s": np.array([0.0, 0.1]), "prompt_tokens": np.array([5, 9]), "output_tokens": np.array([4, 3])}
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        simulate(e, w, Mine(), n_requests=2)
    assert _said(ws) == []  # no compiled kernel would have run it
