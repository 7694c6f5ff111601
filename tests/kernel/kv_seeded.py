"""Seeded vLLM-rule runs of the compiled KV kernel for tests that run one case two ways (test_kv_feat.py: the
vLLM signature against the general one; test_kv_blockshift.py: block shift against division) and hold the two
outputs identical.  ``run(monkeypatch, transform, seed, ...)`` wraps ``kv.step`` so ``transform(args)`` sees (and
may change) each call's arguments, then runs a random engine drawn from ``seed``."""
import numpy as np

from fluidq.kernel import kv as K
from fluidq.kernel import run_fcfs_kv

PER_REQUEST = ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s", "preemptions_per_request")
COUNTS = ("iterations", "busy_s", "tokens_served", "preemptions", "wasted_tokens", "peak_kv_tokens", "examined")


def run(monkeypatch, transform, seed, *, rate, kv_caps, block_size=None, block_sizes=(4, 16), record=True):
    """``transform(args) -> args`` on every kv.step call; ``rate`` the (low, high) range the arrival rate is drawn
    from, ``kv_caps`` the caches drawn from, ``block_size`` fixed or drawn from ``block_sizes``."""
    step = K.__dict__.get("_step_unwrapped", K.step)  # (the real step, not a wrapper of an earlier run)
    monkeypatch.setattr(K, "step", lambda *args: step(*transform(args)))
    monkeypatch.setattr(K, "_step_unwrapped", step, raising=False)
    rng = np.random.default_rng(seed)
    n = 3000
    arr = np.cumsum(rng.exponential(1.0 / float(rng.uniform(*rate)), n))
    P = rng.geometric(1.0 / float(rng.uniform(15, 60)), n).astype(np.int64)
    D = rng.geometric(1.0 / float(rng.uniform(15, 60)), n).astype(np.int64)
    b_max = int(rng.integers(48, 256))
    tau = 0.01 + 0.0002 * np.arange(b_max + 1, dtype=float)
    return run_fcfs_kv(arr, P, D, b_max=b_max, k_cap=int(rng.integers(16, 1 << 20)), mixed=True, chunked=True,
                       chunk_long=False, prefill_first=False, tau_b=tau, ks=float(rng.choice([0.0, 1e-5])),
                       horizon=float("inf"), record=record, kv_cap=int(rng.choice(kv_caps)),
                       block_size=int(rng.choice(block_sizes)) if block_size is None else block_size,
                       paged=True, whole_prompt=bool(rng.integers(2)), most_recent=True,
                       emit_at_prefill=bool(rng.integers(2)))


def assert_same(a, b, counts=COUNTS):
    """Two runs' outputs equal: per-request times, backlog series, records and counts."""
    for k in PER_REQUEST:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    for x, y in zip(a["backlog"], b["backlog"]):
        np.testing.assert_array_equal(x, y)
    for k, v in a["records"].items():
        np.testing.assert_array_equal(v, b["records"][k], err_msg=k)
    for k in counts:
        assert a[k] == b[k], k
