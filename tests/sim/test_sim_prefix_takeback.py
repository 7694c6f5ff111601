"""Prefix caching's take-back rule, worked by hand: a request re-admitted after a recompute preemption takes back
all but the last block of what it recomputes -- ceil(p / bs) - 1 of its leading blocks still cached (vLLM always
recomputes at least the last block's tokens) -- and recomputes the rest.  fluidq.kernel.memory.prefix_want holds
the rule; the Python path (method="generic", StationMemory) calls it dividing or shifting by the block size, and
the KV kernel fluidq/kernel/kv.py (method="fast") calls its jitted form with the shift (kv.py wrote the rule out in
its loop until 2026-12-07, see kv.py's notes), so both paths are checked against the same hand derivation and each
other (a mutation of either branch of prefix_want, shift or division, fails here).  The kernel is asked for by
method="fast", not "auto": without
numba (NUMBA_DISABLE_JIT=1) "auto" runs the Python path, so a mutation of kv.py checked that way went unseen; "fast"
runs kv.py's loop compiled or, uncompiled, as plain Python.  The prompt recomputed is a whole number of blocks, the
case where the rule's (p - 1) // bs and p // bs differ; a block size of 4 takes the shift (bsh 2) and 3 the
division."""
import numpy as np
import pytest

from fluidq import Affine, Engine
from fluidq.engine import VLLM
from fluidq.sim import simulate


def _run(method, caching, policy, bs):
    # two requests of bs prompt + bs + 1 output tokens at t = 0; 5 blocks of bs tokens; every iteration 1 s
    e = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=64, kv_capacity_tokens=5 * bs,
               memory=VLLM.with_(block_size=bs, prefix_caching=caching))
    w = {"arrival_s": np.array([0.0, 0.0]), "prompt_tokens": np.array([bs, bs]),
         "output_tokens": np.array([bs + 1, bs + 1])}
    r = simulate(e, w, policy, n_requests=2, method=method, record_iterations=True)
    assert r.method == method  # the path asked for ran
    return r


@pytest.mark.parametrize("bs", [4, 3])
@pytest.mark.parametrize("policy", ["vllm", "vllm-chunked"])
@pytest.mark.parametrize("method", ["generic", "fast"])
def test_a_recomputed_request_takes_back_all_but_its_last_block(method, policy, bs):
    # By hand (bs = 4: the times below).  [0, 1]: both prompts prefill (2 bs tokens), A and B hold 1 block each,
    # 3 free.  [1, 1 + bs]: bs decodes each; the first takes a second block each (1 free), so each then holds
    # bs + bs = 2 bs tokens, 2 full blocks.  At t = 1 + bs each last decode needs a 3rd block: A (first) takes the
    # free one, which was never used; B finds none and is preempted (B is the last admitted), freeing both its
    # blocks, which stay cached (nothing takes them).  [1 + bs, 2 + bs]: A's last decode, A finishes at 2 + bs.
    # Then B comes back with p = 2 bs tokens to recompute, both of its blocks cached: it takes back
    # ceil(2 bs / bs) - 1 = 1 block (bs tokens) and prefills 2 bs - bs = bs tokens in [2 + bs, 3 + bs]; its last
    # decode is [3 + bs, 4 + bs].  Without caching it recomputes all 2 bs.  (Taking back all p / bs = 2 blocks
    # would leave nothing to compute its next token from.)
    warm, cold = _run(method, True, policy, bs), _run(method, False, policy, bs)
    p = 2 * bs
    for r in (warm, cold):
        assert r.requests["preemptions"].tolist() == [0, 1]
        np.testing.assert_array_equal(r.requests["finish_s"], [bs + 2.0, bs + 4.0])
        assert r.iterations["decode_tokens"].tolist() == [0] + [2] * bs + [1, 0, 1]
    taken_back = -(-p // bs) - 1
    assert taken_back == 1 != p // bs
    assert warm.iterations["prefill_tokens"].tolist() == [p] + [0] * (bs + 1) + [p - taken_back * bs, 0]
    assert cold.iterations["prefill_tokens"].tolist() == [p] + [0] * (bs + 1) + [p, 0]
    assert (warm.wasted_tokens, cold.wasted_tokens) == (bs, p)  # the work redone
    assert (warm.tokens_served, cold.tokens_served) == (p + 2 * (bs + 1) + bs, p + 2 * (bs + 1) + p)


@pytest.mark.parametrize("bs", [4, 3])
def test_the_kernel_takes_back_what_the_python_path_takes_back(bs):
    # the KV kernel held to the Python reference path on the same case: every request and iteration record
    fast, ref = _run("fast", True, "vllm", bs), _run("generic", True, "vllm", bs)
    for k in ref.requests:
        np.testing.assert_array_equal(fast.requests[k], ref.requests[k], err_msg=k)
    for k in ref.iterations:
        np.testing.assert_array_equal(fast.iterations[k], ref.iterations[k], err_msg=k)
    assert (fast.wasted_tokens, fast.tokens_served, fast.preemptions) == (ref.wasted_tokens, ref.tokens_served,
                                                                          ref.preemptions)
