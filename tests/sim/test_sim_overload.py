"""Heavy overload with KV-cache memory: the generic kernel's cost is linear in the run (issue 13).

Before the fix every iteration showed the policy the whole queue, so FasterTransformer with a KV
capacity at 100x its capacity took 5 / 19 / 49 s for 25 / 50 / 100 s horizons.  A built-in FCFS
scheduler is now shown only the requests it could touch; these tests count what it is shown (no
timing), check in a subprocess that a long overloaded run answers, and check that the narrowed
view gives exactly the results of the whole queue.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluidq
import fluidq.sim.core as core
from fluidq import ContextAware, Engine, Geometric, Poisson, Staircase, Workload, max_throughput
from fluidq.policies import POLICY_NAMES
from fluidq.sim import simulate

from sim_strategies import schedulers  # tests/sim/sim_strategies.py

ROOT = Path(fluidq.__file__).resolve().parents[1]  # the code under test, for the subprocess


def _overloaded(horizon_s, policy="fastertransformer", load=100.0):
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, kv_capacity_tokens=20000)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    w = w.with_rate(load * max_throughput(eng, w).requests_per_s)
    # the generic path's narrowed view is what is counted (`auto` runs the compiled kernel with memory, which
    # shows the policy the same requests: tests/sim/test_sim_kv_kernel.py holds `examined` equal)
    return simulate(eng, w, policy, horizon_s=horizon_s, rng=0, method="generic")


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_requests_shown_per_iteration_do_not_grow_with_the_queue(policy):
    short, long = _overloaded(8.0, policy), _overloaded(16.0, policy)  # the KV cache is full by 5 s
    assert long.backlog["requests"][-1] > 10_000  # the queue grows without bound
    for r in (short, long):
        assert r.method == "generic" and r.n_iterations > 0
        # b_max + 1 waiting requests at most, plus the ones holding KV (at most the capacity / 101)
        assert r.examined <= r.n_iterations * 2 * (512 + 1 + 20000 // 101)
    # per iteration, the policy reads as much when the queue is twice as long (the old kernel: twice as much)
    assert long.examined / long.n_iterations <= 1.3 * short.examined / short.n_iterations


def test_long_overloaded_run_answers_in_a_subprocess():
    code = ("from fluidq.cli import main; import sys; sys.exit(main(['simulate', '--policy', 'ft', "
            "'--kv-capacity', '20000', '--load', '100', '--horizon', '200', '--no-progress', '--json']))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, env=env,
                             cwd=ROOT)
    except subprocess.TimeoutExpired:  # the old kernel needs minutes (quadratic in the horizon)
        pytest.fail("fluidq simulate --policy ft --kv-capacity 20000 --load 100 --horizon 200 did not answer "
                    "within 90 s")
    assert out.returncode == 0, out.stderr
    assert '"fastertransformer"' in out.stdout


def _same(a, b):
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
    for k in a.backlog:
        np.testing.assert_array_equal(a.backlog[k], b.backlog[k], err_msg=k)
    for k in a.iterations:
        np.testing.assert_array_equal(a.iterations[k], b.iterations[k], err_msg=k)
    for f in ("n_iterations", "tokens_served", "preemptions", "wasted_tokens", "swap_tokens", "rejected",
              "blocked", "peak_kv_tokens", "busy_fraction", "end_s"):
        assert getattr(a, f) == getattr(b, f), f


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pol=schedulers, b_max=st.integers(8, 96), k_max=st.one_of(st.none(), st.integers(1, 16)),
       kv=st.one_of(st.none(), st.integers(20, 400)), rate=st.floats(0.5, 40.0), mp=st.floats(1.0, 40.0),
       md=st.floats(1.0, 30.0), ctx=st.booleans(), swap=st.booleans(), seed=st.integers(0, 2**31))
def test_narrow_view_gives_the_results_of_the_whole_queue(pol, b_max, k_max, kv, rate, mp, md, ctx, swap, seed):
    bt = Staircase(c=0.01, a=0.02, b0=16)
    if ctx:
        bt = ContextAware(base=bt, kv_s_per_token=2e-6)
    eng = Engine(batch_time=bt, b_max=b_max, k_max=k_max, kv_capacity_tokens=kv)
    w = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=mp),
                 output_tokens=Geometric(mean_tokens=md))
    kw = {"horizon_s": 20.0, "rng": seed, "record_iterations": True, "method": "generic",
          "preemption": "swap" if swap else "recompute", "swap_s_per_token": 1e-4 if swap else None}
    narrow = simulate(eng, w, pol, **kw)
    real = core.run_generic

    def whole(*a, **k):
        return real(*a, **{**k, "window": False})

    core.run_generic = whole
    try:
        full = simulate(eng, w, pol, **kw)
    finally:
        core.run_generic = real
    _same(narrow, full)
    assert narrow.examined <= full.examined
