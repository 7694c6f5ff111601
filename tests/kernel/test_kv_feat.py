"""The KV kernel compiled for vLLM's rules alone gives what the kernel for every memory gives.

``kv._advance`` takes ``feat``: None for a run under vLLM's rules (paged, the most recently admitted victim,
recompute preemption, no prefix caching), so that numba compiles that case apart with ``paged`` and ``most_recent``
constant True and ``swap`` and ``caching`` constant False; an int for every other memory, which reads the four from
``cfg`` at run time.  Both must run a vLLM memory the same, request for request and record for record: here the
same seeded runs (random engines, binding and ample caches, incremental or whole-prompt reservation, a first token
with the prefill or not, a recording grid) go through both signatures (``feat`` forced to 1 for the second).
"""
import inspect

import numpy as np
import pytest


def _run(feat_forced, rng_seed, monkeypatch):
    from fluidq.kernel import kv as K
    from fluidq.kernel import run_fcfs_kv

    step = K.__dict__.get("_step_unwrapped", K.step)  # (the compiled step, not a wrapper of an earlier run)
    idx = list(inspect.signature(getattr(step, "py_func", step)).parameters).index("feat")
    seen = []

    def wrapped(*args):
        seen.append(args[idx])
        if feat_forced is not None:
            args = args[:idx] + (feat_forced,) + args[idx + 1:]
        return step(*args)

    monkeypatch.setattr(K, "step", wrapped)
    monkeypatch.setattr(K, "_step_unwrapped", step, raising=False)
    rng = np.random.default_rng(rng_seed)
    n = 3000
    arr = np.cumsum(rng.exponential(1.0 / float(rng.uniform(30, 80)), n))
    P = rng.geometric(1.0 / float(rng.uniform(15, 60)), n).astype(np.int64)
    D = rng.geometric(1.0 / float(rng.uniform(15, 60)), n).astype(np.int64)
    b_max = int(rng.integers(48, 256))
    tau = 0.01 + 0.0002 * np.arange(b_max + 1, dtype=float)
    out = run_fcfs_kv(arr, P, D, b_max=b_max, k_cap=int(rng.integers(16, 1 << 20)), mixed=True, chunked=True,
                      chunk_long=False, prefill_first=False, tau_b=tau, ks=float(rng.choice([0.0, 1e-5])),
                      horizon=float("inf"), record=True, kv_cap=int(rng.choice([1200, 2500, 100_000])),
                      block_size=int(rng.choice([4, 16])), paged=True, whole_prompt=bool(rng.integers(2)),
                      most_recent=True, emit_at_prefill=bool(rng.integers(2)))
    return out, seen


@pytest.mark.parametrize("seed", range(6))
def test_vllm_signature_equals_the_general_one(seed, monkeypatch):
    a, seen_a = _run(None, seed, monkeypatch)
    b, seen_b = _run(1, seed, monkeypatch)
    assert seen_a and all(f is None for f in seen_a)  # vLLM's rules ran on their own signature
    assert seen_b and all(f is None for f in seen_b)  # (the same call, then forced onto the general one)
    for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s", "preemptions_per_request"):
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    for x, y in zip(a["backlog"], b["backlog"]):
        np.testing.assert_array_equal(x, y)
    for k, v in a["records"].items():
        np.testing.assert_array_equal(v, b["records"][k], err_msg=k)
    for k in ("iterations", "busy_s", "tokens_served", "preemptions", "wasted_tokens", "peak_kv_tokens", "examined",
              "n_blocked", "end_s"):
        assert a[k] == b[k], k
    assert np.isfinite(a["finish_s"]).sum() > 0
