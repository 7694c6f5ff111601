"""vLLM's rule: the iteration in which a preempted request's recomputation catches up samples its next token.

vLLM v1 keeps the token sampled for every scheduled request except a partial prefill
(``vllm/v1/worker/gpu_model_runner.py``: the sampled token is discarded only where ``num_computed_tokens +
num_scheduled_tokens < num_tokens``), and ``Scheduler.update_from_output`` (``vllm/v1/core/sched/scheduler.py``)
appends it.  A request preempted by recomputation keeps its generated tokens in ``num_tokens`` (its prompt for
the recomputation is the original prompt plus them), so the iteration whose chunk reaches ``num_tokens`` is not a
partial prefill: it emits the next token, exactly as a first prefill emits the first.  Under
``prefill_emits_token`` (vLLM's engine) fluidq follows it on the Python path (:mod:`fluidq.kernel.step`), the
compiled KV kernel (:mod:`fluidq.kernel.kv`) and the KV stations of :mod:`fluidq.kernel.network` (held equal
by their equality tests); before
2026-12-07 the recomputation emitted nothing and one more decode iteration followed (one iteration and one
token of work per preemption too many)."""
import numpy as np
import pytest

from fluidq import Affine, Engine, Geometric, Poisson, Workload
from fluidq.engine import Memory
from fluidq.kernel.memory import StationMemory
from fluidq.sim import simulate

ONE_S = Affine(c=1.0, a=0.0)  # every iteration lasts 1 s, whatever it holds
ONE_TOKEN_BLOCKS = Memory(kind="blocks", block_size=1, reservation="whole_prompt", preemption="recompute",
                          victim="most_recent")


def _engine(prefill_emits_token=True):
    return Engine(batch_time=ONE_S, b_max=256, kv_capacity_tokens=10, memory=ONE_TOKEN_BLOCKS,
                  prefill_emits_token=prefill_emits_token)


@pytest.mark.parametrize("method", ["generic", "auto"])
def test_the_recomputation_that_catches_up_emits_the_next_token(method):
    # 10 one-token blocks, two requests of 4 prompt and 6 output tokens at t = 0, every iteration 1 s.
    # [0, 1]: both prefill (4 + 4 blocks) and emit token 1.  [1, 2]: both decode (5 + 5 blocks, none free),
    # token 2.  At t = 2 the two decodes need 2 blocks: request 1 (admitted last) is preempted; its tokens to
    # recompute are 4 + 2 = 6 (vLLM's num_tokens).  Request 0 decodes alone [2, 6] (tokens 3..6, 9 blocks) and
    # finishes at 6; request 1's 6 tokens need 6 blocks and wait for it.  [6, 7]: request 1 recomputes its 6
    # tokens and, its computed tokens caught up with num_tokens, samples token 3 (vLLM); tokens 4, 5, 6 follow
    # at 8, 9, 10.  (Without the rule token 3 came from a decode at 8 and the request finished at 11.)
    r = simulate(_engine(), {"arrival_s": np.zeros(2), "prompt_tokens": np.array([4, 4]),
                             "output_tokens": np.array([6, 6])}, "vllm-chunked", n_requests=2, method=method)
    np.testing.assert_array_equal(r.requests["finish_s"], [6.0, 10.0])
    np.testing.assert_array_equal(r.requests["preemptions"], [0, 1])
    np.testing.assert_array_equal(r.requests["prefill_done_s"], [1.0, 1.0])  # the first prefill's end: TTFT
    assert r.n_iterations == 10 and r.preemptions == 1


def test_without_the_first_token_from_the_prefill_nothing_changes():
    # the paper's engines (prefill_emits_token=False): a prefill gives no token, a recomputation none either.
    # [0, 1] both prefill (8 blocks); [1, 2] both decode token 1 (10 blocks); at t = 2 request 1 is preempted
    # (its prompt becomes 4 + 1 = 5); request 0 decodes tokens 2..6 [2, 7]; request 1 prefills its 5 tokens
    # [7, 8] (no token) and decodes tokens 2..6 [8, 13]
    r = simulate(_engine(False), {"arrival_s": np.zeros(2), "prompt_tokens": np.array([4, 4]),
                                  "output_tokens": np.array([6, 6])}, "vllm-chunked", n_requests=2, method="generic")
    np.testing.assert_array_equal(r.requests["finish_s"], [7.0, 13.0])
    np.testing.assert_array_equal(r.requests["preemptions"], [0, 1])


@pytest.mark.parametrize("seed", [5, 17, 29])
def test_every_request_gets_its_tokens_once_on_seeded_kv_bound_engines(monkeypatch, seed):
    # token conservation on seeded random engines with many preemptions (prefix caching off), the preemptions
    # and batches logged in their order on the Python path: a request is given exactly its output tokens -- a
    # first token with its first prefill, one with each recomputation that catches up (its prompt then being the
    # original one plus the tokens generated so far), one per decode
    log = []
    form, preempt = StationMemory.form, StationMemory._preempt

    def logged_preempt(self, r):
        log.append(("preempt", r.rid))
        return preempt(self, r)

    def logged_form(self, t, ask):
        batch, extra = form(self, t, ask)
        if batch is not None and not batch.empty:
            log.append(("batch", batch))
        return batch, extra

    monkeypatch.setattr(StationMemory, "_preempt", logged_preempt)
    monkeypatch.setattr(StationMemory, "form", logged_form)
    rng = np.random.default_rng(seed)
    e = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=int(rng.integers(64, 512)), k_max=64,
               kv_capacity_tokens=int(rng.integers(400, 900)),
               memory=Memory(kind="blocks", block_size=int(rng.choice([1, 4, 16])), victim="most_recent"),
               prefill_emits_token=True)
    w = Workload(arrival=Poisson(rate_per_s=50.0), prompt_tokens=Geometric(mean_tokens=40),
                 output_tokens=Geometric(mean_tokens=60))
    r = simulate(e, w, "vllm-chunked", n_requests=300, rng=seed, method="generic")
    assert r.preemptions > 20  # the rule is exercised
    fin = np.isfinite(r.requests["finish_s"])  # (a request longer than the cache is refused at arrival)
    assert fin.sum() >= 290 and fin.sum() == 300 - r.rejected
    out = np.asarray(r.requests["output_tokens"])
    P0 = np.asarray(r.requests["prompt_tokens"])  # the original prompts
    got = np.zeros(out.size, dtype=int)  # tokens given so far
    done = np.zeros(out.size, dtype=int)  # prompt tokens computed since the last (re)start
    target = P0.copy()  # the prompt of the current (re)start
    recomputed = 0
    for kind, x in log:
        if kind == "preempt":
            done[x], target[x] = 0, P0[x] + got[x]
            continue
        for rid in x.decode:
            got[rid] += 1
        for rid, m in x.prefill:
            assert done[rid] + m <= target[rid]
            done[rid] += m
            if done[rid] == target[rid]:
                got[rid] += 1
                recomputed += got[rid] > 1
    np.testing.assert_array_equal(got[fin], out[fin])
    assert not got[~fin].any()
    assert recomputed > 10  # recomputations that caught up after a first token, each giving one
