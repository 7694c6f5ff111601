"""The KV kernel's request-indexed working arrays live in one zeroed block (``fluidq/kernel/run.py``, ``_run_kv``).

Eleven int64 arrays (the current prompt, tokens to recompute, prefilled, decoded, KV held, admission number,
blocked mark, blocks held, the two list positions, the decode base round) are rows of one allocation instead of
eleven: a run with vLLM's binding cache at n = 200k took 6,600 page faults and 37-38 ms, now 3,100-3,300 and 28-29 ms
(fresh processes, 2026-12-07).  A wrong row (two arrays sharing one, a row not initialised, a row too short) changes
which request is admitted, served or preempted, so:

* seeded random engines and memories (thousands of requests, caches that bind) give, request for request, what the
  generic ``select()`` path gives, and the kernel run twice in one process gives the same arrays (the second run's
  block may reuse the first one's memory: nothing may be read before it is written);
* the per-request results the run returns own their memory: none is a view of the working block, which would keep
  eleven request-sized rows alive for as long as the caller keeps a result.
"""
import numpy as np
import pytest

from fluidq import Engine, Geometric, Poisson, Staircase, Workload
from fluidq.engine import VLLM, Memory
from fluidq.kernel import compiled, run_fcfs_kv
from fluidq.sim import simulate


def _engine(rng):
    mem = [Memory(), VLLM, Memory(kind="tokens", victim="most_recent"), VLLM.with_(reservation="incremental"),
           VLLM.with_(prefix_caching=True), Memory(kind="blocks", block_size=int(rng.integers(1, 9)))][
        int(rng.integers(6))]
    eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=int(rng.integers(32, 257)),
                 kv_capacity_tokens=int(rng.integers(600, 3000)), memory=mem,
                 prefill_emits_token=bool(rng.integers(2)))
    w = Workload(arrival=Poisson(rate_per_s=float(rng.uniform(8.0, 30.0))),
                 prompt_tokens=Geometric(mean_tokens=float(rng.uniform(20, 120))),
                 output_tokens=Geometric(mean_tokens=float(rng.uniform(10, 80))))
    return eng, w


@pytest.mark.parametrize("seed", range(4))
def test_random_engines_agree_and_repeat(seed):
    rng = np.random.default_rng(100 + seed)
    eng, w = _engine(rng)
    pol = ["sarathi", "vllm-chunked", "orca", "vllm"][seed]
    a = simulate(eng, w, pol, n_requests=1500, rng=seed, method="fast")
    a2 = simulate(eng, w, pol, n_requests=1500, rng=seed, method="fast")
    b = simulate(eng, w, pol, n_requests=1500, rng=seed, method="generic")
    assert a.method == ("fast" if compiled() else "generic") and b.method == "generic"
    for k in b.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
        np.testing.assert_array_equal(a.requests[k], a2.requests[k], err_msg=k)
    for k in b.backlog:
        np.testing.assert_array_equal(a.backlog[k], b.backlog[k], err_msg=k)
    assert (a.n_iterations, a.preemptions, a.wasted_tokens) == (b.n_iterations, b.preemptions, b.wasted_tokens)
    assert a.n_iterations == a2.n_iterations and a.preemptions == a2.preemptions


def test_results_own_their_memory():
    rng = np.random.default_rng(3)
    n = 3000
    arr = np.cumsum(rng.exponential(1 / 20.0, n))
    P = rng.integers(20, 200, n)
    D = rng.integers(5, 100, n)
    tau = [np.nan] + [0.01 + 1e-4 * b for b in range(1, 257)]
    out = run_fcfs_kv(arr, P, D, b_max=256, k_cap=1 << 62, mixed=True, chunked=True, chunk_long=False,
                      prefill_first=False, tau_b=tau, ks=0.0, horizon=np.inf, record=False, kv_cap=4000,
                      block_size=16, paged=True, whole_prompt=True, most_recent=True)
    assert out["preemptions"] > 0  # the cache binds
    for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s", "preemptions_per_request"):
        a = out[k]
        assert a.shape == (n,) and a.base is None and a.flags.owndata, k
