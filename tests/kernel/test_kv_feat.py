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

import kv_seeded  # tests/kernel/kv_seeded.py


def _run(feat_forced, rng_seed, monkeypatch):
    from fluidq.kernel import kv as K

    step = K.__dict__.get("_step_unwrapped", K.step)  # (not the wrapper of this test's earlier run)
    idx = list(inspect.signature(step).parameters).index("feat")
    seen = []

    def transform(args):
        seen.append(args[idx])
        return args if feat_forced is None else args[:idx] + (feat_forced,) + args[idx + 1:]

    out = kv_seeded.run(monkeypatch, transform, rng_seed, rate=(30, 80), kv_caps=(1200, 2500, 100_000))
    return out, seen


@pytest.mark.parametrize("seed", range(6))
def test_vllm_signature_equals_the_general_one(seed, monkeypatch):
    a, seen_a = _run(None, seed, monkeypatch)
    b, seen_b = _run(1, seed, monkeypatch)
    assert seen_a and all(f is None for f in seen_a)  # vLLM's rules ran on their own signature
    assert seen_b and all(f is None for f in seen_b)  # (the same call, then forced onto the general one)
    kv_seeded.assert_same(a, b, kv_seeded.COUNTS + ("n_blocked", "end_s"))
    assert np.isfinite(a["finish_s"]).sum() > 0
