"""``fluidq.sim._admission.StationMemory`` (the KV rules a network station runs) on cases worked out by hand,
driven by a minimal loop of one-second iterations, and against the single-engine kernel on them.

The loop here: requests all present at time 0, each iteration ``form`` then serve the batch.  The hand
cases are those of ``test_sim_paged.py`` (blocks rounding up, whole-prompt against incremental
reservation), so the two implementations are held to the same numbers.
"""
import math

import numpy as np
import pytest

from fluidq import Affine, Engine
from fluidq.engine import VLLM, Memory
from fluidq.policies import RequestState, resolve_policy
from fluidq.policies.base import QueueView
from fluidq.sim import simulate
from fluidq.sim._admission import StationMemory


def drive(policy_name, cap, memory, prompts, outputs, b_max=256, max_iters=200):
    """Finish times, first-scheduled times and preemptions of requests all arriving at 0 (1 s iterations)."""
    pol = resolve_policy(policy_name)
    mem = StationMemory(pol, cap, memory, memory.preemption, 0.0, lambda r, h, rec: None, lambda r, k: None)
    reqs = [RequestState(rid=i, arrival_s=0.0, prompt_tokens=p, output_tokens=d)
            for i, (p, d) in enumerate(zip(prompts, outputs))]
    for r in reqs:
        assert not mem.rejects(r.prompt_tokens, r.output_tokens)
        mem.add(r)
    fin = [math.nan] * len(reqs)
    first = [math.nan] * len(reqs)
    t = 0.0

    def ask(visible, now, kv_free):
        view = QueueView(requests=tuple(visible), now_s=now, b_max=b_max, k_max=None, kv_free_tokens=kv_free)
        return view, pol.select(view)

    for _ in range(max_iters):
        batch, _extra = mem.form(t, ask)
        if batch is None:
            break
        for rid, m in batch.prefill:
            r = reqs[rid]
            first[rid] = t if math.isnan(first[rid]) else first[rid]
            r.prefilled += m
            mem.grow(rid, m)
        for rid in batch.decode:
            reqs[rid].decoded += 1
            mem.grow(rid, 1)
        t += 1.0
        done = [r for r in mem.residents if r.prefilled >= r.prompt_tokens and r.decoded >= r.output_tokens]
        for r in done:
            fin[r.rid] = t
        mem.after_batch(done)
    return fin, first, [r.preemptions for r in reqs], mem


def single(policy_name, cap, memory, prompts, outputs, b_max=256):
    eng = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=b_max, kv_capacity_tokens=cap, memory=memory)
    w = {"arrival_s": np.zeros(len(prompts)), "prompt_tokens": np.asarray(prompts),
         "output_tokens": np.asarray(outputs)}
    r = simulate(eng, w, policy_name, n_requests=len(prompts))
    return r.requests["finish_s"].tolist(), r.requests["first_scheduled_s"].tolist(), \
        r.requests["preemptions"].tolist()


def test_blocks_round_up_and_hold_back_what_tokens_admit():
    fin, first, pre, _ = drive("vllm-chunked", 32, Memory(kind="blocks", block_size=16), [17, 1], [5, 1])
    assert fin == [6.0, 8.0] and first == [0.0, 6.0] and pre == [0, 0]
    fin_t, _, _, _ = drive("vllm-chunked", 32, Memory(kind="tokens", reservation="incremental"), [17, 1], [5, 1])
    assert fin_t == [6.0, 2.0]


def test_whole_prompt_waits_where_incremental_preempts_the_most_recent():
    fin, first, pre, _ = drive("vllm-chunked", 64, VLLM, [40, 30], [10, 1], b_max=48)
    assert first == [0.0, 11.0] and fin == [11.0, 13.0] and pre == [0, 0]
    fin, first, pre, mem = drive("vllm-chunked", 64, VLLM.with_(reservation="incremental"), [40, 30], [10, 1],
                                 b_max=48)
    assert first[1] == 0.0 and pre == [0, 1] and mem.preemptions == 1
    assert all(np.isfinite(fin))


def test_a_request_larger_than_the_cache_is_rejected_and_counted():
    mem = StationMemory(resolve_policy("sarathi"), 64, VLLM, "recompute", 0.0, None, None)
    assert mem.rejects(60, 5)  # 65 tokens: 5 blocks of 16 > 4
    assert not mem.rejects(60, 4)
    tok = StationMemory(resolve_policy("sarathi"), 64, Memory(), "recompute", 0.0, None, None)
    assert tok.rejects(60, 5) and not tok.rejects(60, 4)
    assert mem.rejected == tok.rejected == 1


@pytest.mark.parametrize("policy", ["sarathi", "vllm", "orca", "vllm-chunked", "fastertransformer"])
@pytest.mark.parametrize("memory", [Memory(), VLLM, VLLM.with_(prefix_caching=True),
                                    VLLM.with_(reservation="incremental", victim="last_in_order")])
def test_the_driver_gives_the_single_engine_kernel_on_a_crowded_start(policy, memory):
    rng = np.random.default_rng(4)
    prompts = rng.integers(5, 90, size=12).tolist()
    outputs = rng.integers(1, 40, size=12).tolist()
    fin, first, pre, mem = drive(policy, 240, memory, prompts, outputs, b_max=128, max_iters=2000)
    s_fin, s_first, s_pre = single(policy, 240, memory, prompts, outputs, b_max=128)
    np.testing.assert_array_equal(fin, s_fin)  # (NaN where both leave a request unfinished)
    np.testing.assert_array_equal(first, s_first)
    assert pre == s_pre
    # every request finishes, the prefill-first whole-prompt schedulers (vllm, orca) under block memory
    # too: when the head prompt's reservation does not fit they are asked again without new requests
    assert np.isfinite(fin).all()
