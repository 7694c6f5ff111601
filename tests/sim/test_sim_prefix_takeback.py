"""Prefix caching's take-back rule, worked by hand: a request re-admitted after a recompute preemption takes back
all but the last block of what it recomputes -- ceil(p / bs) - 1 of its leading blocks still cached (vLLM always
recomputes at least the last block's tokens) -- and recomputes the rest.  fluidq.kernel.memory.prefix_want holds
the rule for the Python path (method="generic", StationMemory) and fluidq/kernel/kv.py writes it out in its loop
(method="auto"); both are checked against the same hand derivation."""
import numpy as np
import pytest

from fluidq import Affine, Engine
from fluidq.engine import VLLM
from fluidq.sim import simulate

BS = 4


def _run(method, caching, policy):
    # two requests of 4 prompt + 5 output tokens at t = 0; 20 tokens of cache = 5 blocks of 4; every iteration 1 s
    e = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=64, kv_capacity_tokens=20,
               memory=VLLM.with_(block_size=BS, prefix_caching=caching))
    w = {"arrival_s": np.array([0.0, 0.0]), "prompt_tokens": np.array([4, 4]), "output_tokens": np.array([5, 5])}
    return simulate(e, w, policy, n_requests=2, method=method, record_iterations=True)


@pytest.mark.parametrize("policy", ["vllm", "vllm-chunked"])
@pytest.mark.parametrize("method", ["generic", "auto"])
def test_a_recomputed_request_takes_back_all_but_its_last_block(method, policy):
    # By hand.  [0, 1]: both prompts prefill (8 tokens), A and B hold 1 block each, 3 free.  [1, 5]: four decodes
    # each; the first takes a second block each (1 free), so each then holds 4 + 4 = 8 tokens, 2 full blocks.  At
    # t = 5 each 5th decode needs a 3rd block: A (first) takes the free one, which was never used; B finds none and
    # is preempted (B is the last admitted), freeing both its blocks, which stay cached (nothing takes them).
    # [5, 6]: A's 5th decode, A finishes at 6.  At 6 B comes back with p = 4 + 4 = 8 tokens to recompute, both of
    # its blocks cached: it takes back ceil(8 / 4) - 1 = 1 block (4 tokens) and prefills 8 - 4 = 4 tokens in
    # [6, 7]; its 5th decode is [7, 8].  Without caching it recomputes all 8.  (Taking back all p / bs = 2 blocks
    # would leave nothing to compute its next token from.)
    warm, cold = _run(method, True, policy), _run(method, False, policy)
    for r in (warm, cold):
        assert r.requests["preemptions"].tolist() == [0, 1]
        np.testing.assert_array_equal(r.requests["finish_s"], [6.0, 8.0])
        assert r.iterations["decode_tokens"].tolist() == [0, 2, 2, 2, 2, 1, 0, 1]
    taken_back = -(-8 // BS) - 1
    assert warm.iterations["prefill_tokens"].tolist() == [8, 0, 0, 0, 0, 0, 8 - taken_back * BS, 0]
    assert cold.iterations["prefill_tokens"].tolist() == [8, 0, 0, 0, 0, 0, 8, 0]
    assert (warm.wasted_tokens, cold.wasted_tokens) == (4, 8)  # the work redone
    assert (warm.tokens_served, cold.tokens_served) == (8 + 10 + 4, 8 + 10 + 8)
