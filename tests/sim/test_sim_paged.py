"""The engine's memory model in the kernel: block rounding, reservation, the victim rule, prefix caching,
the first token with the prefill, the composition batch time; checked on cases small enough to
work out by hand (every iteration takes exactly one second)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluidq import Affine, Engine, Geometric, Poisson, Staircase, Workload
from fluidq.batchtime.composition import Composition
from fluidq.batchtime.operators import FittedIterationModel
from fluidq.engine import VLLM, Memory
from fluidq.errors import DataError, ParameterError, ParameterTypeError
from fluidq.policies import POLICY_NAMES, RequestState, resolve_policy
from fluidq.policies.orderings import KeyOrdering
from fluidq.sim import simulate

ONE_S = Affine(c=1.0, a=0.0)  # every iteration lasts 1 s, whatever it holds


def eng(cap, memory=None, b_max=256, **kw):
    return Engine(batch_time=ONE_S, b_max=b_max, kv_capacity_tokens=cap, memory=memory, **kw)


def reqs(arr, p, d):
    return {"arrival_s": np.asarray(arr, float), "prompt_tokens": np.asarray(p), "output_tokens": np.asarray(d)}


def test_blocks_round_up_and_hold_back_a_request_that_tokens_would_admit():
    # 32 tokens = 2 blocks of 16: A's 17-token prompt takes both, so B (1 + 1 tokens) waits for A's end;
    # counted in tokens (incremental, so no headroom rule), B runs alongside A from the start
    w = reqs([0.0, 0.0], [17, 1], [5, 1])
    blk = simulate(eng(32, Memory(kind="blocks", block_size=16)), w, "vllm-chunked", n_requests=2)
    tok = simulate(eng(32, Memory(kind="tokens", reservation="incremental")), w, "vllm-chunked", n_requests=2)
    # A: prefill [0, 1], five decodes to t = 6; B then prefills [6, 7] and decodes [7, 8]
    np.testing.assert_array_equal(blk.requests["finish_s"], [6.0, 8.0])
    np.testing.assert_array_equal(blk.requests["first_scheduled_s"], [0.0, 6.0])
    np.testing.assert_array_equal(tok.requests["finish_s"], [6.0, 2.0])
    assert blk.preemptions == tok.preemptions == 0


def test_whole_prompt_reservation_refuses_what_incremental_admits_and_preempts():
    # 4 blocks of 16; A (40 prompt tokens) takes 3; B's 30-token prompt needs 2 blocks
    w = reqs([0.0, 0.0], [40, 30], [10, 1])
    whole = simulate(eng(64, VLLM, b_max=48), w, "vllm-chunked", n_requests=2)
    inc = simulate(eng(64, VLLM.with_(reservation="incremental"), b_max=48), w, "vllm-chunked", n_requests=2)
    # whole prompt: B waits until A has finished (prefill [0,1] + 10 decodes = 11 s) and needs 2 iterations
    np.testing.assert_array_equal(whole.requests["first_scheduled_s"], [0.0, 11.0])
    np.testing.assert_array_equal(whole.requests["finish_s"], [11.0, 13.0])
    assert whole.preemptions == 0
    # incremental: B's first 8-token chunk fits in the last block, then its next chunk does not and B,
    # the most recently admitted, is preempted
    assert inc.requests["first_scheduled_s"][1] == 0.0
    assert inc.requests["preemptions"].tolist() == [0, 1]
    assert np.all(np.isfinite(inc.requests["finish_s"]))


class ByArrival(KeyOrdering):
    """Sorted by arrival time (the built-in FCFS keeps the residents' own order)."""

    name = "by-arrival"

    def key(self, r, now_s):
        return r.arrival_s


def _two_residents(victim, caching=False, prompt=4):
    # both residents fill their last block; each next decode token needs a new block and one is free
    # after a preemption.  rid 0 arrived later but was admitted first (it comes first in `initial`)
    pol = resolve_policy("vllm-chunked").with_(order=ByArrival())
    init = [RequestState(rid=0, arrival_s=1.0, prompt_tokens=prompt, output_tokens=2, prefilled=prompt),
            RequestState(rid=1, arrival_s=0.0, prompt_tokens=prompt, output_tokens=2, prefilled=prompt)]
    mem = Memory(kind="blocks", block_size=4, victim=victim, prefix_caching=caching)
    return simulate(eng(2 * prompt, mem), reqs([], [], []), pol, horizon_s=30.0, initial=init,
                    record_iterations=True)


def test_victim_most_recent_vs_last_in_order():
    mr = _two_residents("most_recent")
    lo = _two_residents("last_in_order")
    assert mr.requests["preemptions"].tolist() == [0, 1]  # rid 1 was admitted last
    assert lo.requests["preemptions"].tolist() == [1, 0]  # rid 0 is last by arrival (it arrived at 1.0)
    for r in (mr, lo):
        assert r.preemptions == 1 and np.all(np.isfinite(r.requests["finish_s"]))


def test_prefix_caching_reuses_the_victims_surviving_leading_block():
    # 4 blocks of 4 tokens, two residents of 8 tokens: rid 1 (admitted last) is preempted; the block
    # rid 0 then takes is rid 1's tail (freed tail first), so rid 1's first block survives and, when
    # re-admitted after rid 0 finishes, it recomputes 4 prompt tokens instead of 8
    cold = _two_residents("most_recent", caching=False, prompt=8)
    warm = _two_residents("most_recent", caching=True, prompt=8)
    assert cold.preemptions == warm.preemptions == 1
    assert cold.tokens_served - warm.tokens_served == 4
    assert cold.wasted_tokens == 8 and warm.wasted_tokens == 4  # work redone
    assert warm.iterations["prefill_tokens"].tolist().count(4) == 1
    assert cold.iterations["prefill_tokens"].tolist().count(8) == 1


def test_prefill_emits_the_first_token():
    w = reqs([0.0], [10], [3])
    r = simulate(eng(None, prefill_emits_token=True), w, "vllm-chunked", n_requests=1)
    # prefill [0, 1] gives token 1; two decodes give tokens 2 and 3
    assert r.requests["first_token_s"][0] == r.requests["prefill_done_s"][0] == 1.0
    assert r.requests["finish_s"][0] == 3.0 and r.n_iterations == 3
    assert r.method == "fast"  # (issue 15: the kernel with memory, a cache that never binds)
    lat = r.latencies(ttft="end_of_prefill")
    assert lat["tpot_s"][0] == 1.0 and lat["ttft_s"][0] == 1.0
    paper = simulate(eng(None), w, "vllm-chunked", n_requests=1)
    assert paper.requests["finish_s"][0] == 4.0 and paper.method == "fast"


def test_a_request_larger_than_the_cache_in_blocks_is_rejected():
    # 40 tokens of cache = 2 blocks of 16 (the last 8 tokens make no block); 30 + 3 tokens need 3
    r = simulate(eng(40, VLLM), reqs([0.0, 0.0], [30, 10], [3, 3]), "vllm-chunked", n_requests=2)
    assert r.rejected == 1 and np.isfinite(r.requests["finish_s"][1])


def workload(rate=12.0):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=60),
                    output_tokens=Geometric(mean_tokens=40))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(POLICY_NAMES), bs=st.sampled_from([1, 4, 16]), blocks=st.integers(20, 200), caching=st.booleans(),
       whole=st.booleans(), recent=st.booleans(), emit=st.booleans(), rate=st.floats(4.0, 30.0),
       seed=st.integers(0, 2**31))
def test_paged_memory_never_exceeds_its_blocks_and_conserves_work(name, bs, blocks, caching, whole, recent, emit,
                                                                  rate, seed):
    kind = "tokens" if bs == 1 else "blocks"
    mem = Memory(kind=kind, block_size=bs, prefix_caching=caching and kind == "blocks",
                 reservation="whole_prompt" if whole else "incremental",
                 victim="most_recent" if recent else "last_in_order")
    cap = blocks * bs
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, k_max=16, kv_capacity_tokens=cap,
               memory=mem, prefill_emits_token=emit)
    pol = resolve_policy(name)
    if not pol.chunked:
        pol = pol.with_(chunk_long_prompts=True)
    r = simulate(e, workload(rate), pol, horizon_s=5.0, rng=seed, record_iterations=True, check_batches=True)
    it = r.iterations
    q = r.requests
    assert np.all(it["kv_used"] <= cap) and r.preemptions == int(q["preemptions"].sum())
    if mem.default_rules:  # the token rules of old (their own tests: test_sim_memory.py)
        assert "resident" not in it
        return
    # each resident holds at least one block
    assert np.all(it["resident"] <= blocks)
    big = -(-(q["prompt_tokens"] + q["output_tokens"]) // bs) > blocks
    assert r.rejected == int(big.sum())
    # useful work (prompt tokens computed once, output tokens emitted) never exceeds the offered work;
    # served + still to serve = offered + work redone (- the first tokens that came with a prefill).  The work
    # redone is the KV discarded (wasted), plus, with the prefill's token, one token for a request recomputed
    # after its prefill gave that token and before any other recomputation (its KV was not cached yet, but
    # the recomputed prompt holds it): at most one per such request
    offered = int(q["prompt_tokens"][~big].sum() + q["output_tokens"][~big].sum())
    assert int(it["useful_tokens"].sum()) <= offered
    emitted = int(np.isfinite(q["prefill_done_s"]).sum()) if emit else 0
    extra = r.tokens_served + int(r.backlog["tokens"][-1]) - (offered + r.wasted_tokens - emitted)
    if emit:
        assert 0 <= extra <= min(emitted, int(np.sum(q["preemptions"] > 0)))
    else:
        assert extra == 0
    done = np.isfinite(q["finish_s"])
    assert np.all(q["finish_s"][done] >= q["prefill_done_s"][done])
    if emit:
        ok = np.isfinite(q["prefill_done_s"])
        np.testing.assert_array_equal(q["first_token_s"][ok], q["prefill_done_s"][ok])


@pytest.mark.parametrize("name", ["sarathi", "vllm-chunked", "orca"])
def test_ample_paged_memory_agrees_with_the_fast_kernel(name):
    # blocks that never run out change nothing: the generic kernel with VLLM memory gives the fast
    # kernel's run without memory, request by request
    w = workload(rate=10.0)
    base = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=128)
    fast = simulate(base, w, name, horizon_s=20.0, rng=4)
    for method in ("generic", "auto"):  # the Python path and (compiled) the kernel with memory
        paged = simulate(base.with_(kv_capacity_tokens=10**8, memory=VLLM.with_(prefix_caching=True)), w, name,
                         horizon_s=20.0, rng=4, method=method)
        assert fast.method == "fast" and paged.preemptions == 0
        for k in fast.requests:
            np.testing.assert_array_equal(fast.requests[k], paged.requests[k])


def test_composition_batch_time_agrees_with_the_plain_form_on_the_fast_kernel():
    # an iteration model over a t(b) charges every batch t(prefill + decode tokens): the generic kernel
    # reading the composition reproduces the fast kernel's run on t(b) itself
    bt = Staircase(c=0.01, a=0.02, b0=16)
    comp = Composition(model=FittedIterationModel(bt))
    assert comp(np.array([5.0, 40.0])).tolist() == bt(np.array([5.0, 40.0])).tolist()
    w = workload(rate=10.0)
    a = simulate(Engine(batch_time=bt, b_max=128), w, "sarathi", horizon_s=20.0, rng=2)
    b = simulate(Engine(batch_time=comp, b_max=128), w, "sarathi", horizon_s=20.0, rng=2)
    assert a.method == "fast" and b.method == "generic"
    for k in a.requests:
        np.testing.assert_allclose(a.requests[k], b.requests[k], rtol=1e-12)


def test_memory_fields_are_validated_by_name():
    for kw, name in [({"kind": "pages"}, "kind"), ({"kind": "tokens", "block_size": 16}, "block_size"),
                     ({"kind": "blocks", "block_size": 0}, "block_size"), ({"reservation": "half"}, "reservation"),
                     ({"preemption": "drop"}, "preemption"), ({"victim": "oldest"}, "victim"),
                     ({"kind": "tokens", "prefix_caching": True}, "prefix_caching"),
                     ({"kind": "blocks", "prefix_caching": True, "preemption": "swap"}, "prefix_caching")]:
        with pytest.raises(ParameterError, match=name):
            Memory(**kw)
    with pytest.raises(ParameterTypeError, match="prefix_caching"):
        Memory(kind="blocks", prefix_caching="yes")
    with pytest.raises(ParameterError, match="memory"):
        Engine(batch_time=ONE_S, b_max=8, memory="vllm")
    with pytest.raises(ParameterError, match="kv_capacity_tokens"):
        Engine(batch_time=ONE_S, b_max=8, kv_capacity_tokens=8, memory=VLLM)
    with pytest.raises(ParameterTypeError, match="prefill_emits_token"):
        Engine(batch_time=ONE_S, b_max=8, prefill_emits_token=1)
    with pytest.raises(ParameterError, match="model"):
        Composition(model=object())


def test_engine_dict_round_trip_and_the_default_dict_is_unchanged():
    plain = Engine(batch_time=ONE_S, b_max=8, kv_capacity_tokens=100)
    assert set(plain.to_dict()) == {"name", "batch_time", "b_max", "k_max", "kv_capacity_tokens"}
    assert plain.memory == Memory() and plain.memory.default_rules
    e = plain.with_(memory=VLLM.with_(prefix_caching=True), prefill_emits_token=True)
    d = e.to_dict()
    assert d["memory"]["victim"] == "most_recent" and d["prefill_emits_token"] is True
    assert Engine.from_dict(d) == e
    assert Engine.from_dict(plain.to_dict()) == plain
    # an operator-profile batch time is named in the dict but is built from its profiles, not read back
    comp = plain.with_(batch_time=Composition(model=FittedIterationModel(ONE_S)))
    assert comp.to_dict()["batch_time"]["kind"] == "composition"
    with pytest.raises(DataError, match="composition"):
        Engine.from_dict(comp.to_dict())


def test_preemption_defaults_to_the_engines_memory():
    # a swap memory swaps unless simulate is told otherwise
    w = workload(rate=20.0)
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, kv_capacity_tokens=400,
               memory=Memory(kind="blocks", block_size=4, preemption="swap"))
    sw = simulate(e, w, "sarathi", horizon_s=10.0, rng=1, swap_s_per_token=1e-5)
    rc = simulate(e, w, "sarathi", horizon_s=10.0, rng=1, preemption="recompute")
    assert sw.preemptions > 0 and sw.swap_tokens > 0 and sw.wasted_tokens == 0
    assert rc.preemptions > 0 and rc.swap_tokens == 0 and rc.wasted_tokens > 0
    assert sw.inputs["preemption"] == "swap" and rc.inputs["preemption"] == "recompute"
    with pytest.raises(ParameterError, match="preemption"):
        simulate(e.with_(memory=VLLM.with_(prefix_caching=True)), w, "sarathi", horizon_s=1.0, rng=1,
                 preemption="swap", swap_s_per_token=1e-5)


@pytest.mark.parametrize("policy", ["vllm", "orca"])
def test_prefill_first_schedulers_keep_decoding_when_the_next_prompt_does_not_fit(policy):
    """Two 400-token prompts fill a 1,024-token block cache (whole-prompt reservation); the third does not
    fit until one finishes.  A prefill-first scheduler offers only that prompt, so the kernel must ask it
    again without new requests; the old rule ran empty batches and no request ever finished."""
    from fluidq import Engine, Staircase, simulate
    from fluidq.engine import VLLM

    e = Engine(batch_time=Staircase(c=0.01, a=0.03, b0=128), b_max=1024, kv_capacity_tokens=1024, memory=VLLM)
    reqs = {"arrival_s": [0.0, 0.0, 0.0], "prompt_tokens": [400, 400, 400], "output_tokens": [50, 50, 50]}
    r = simulate(e, reqs, policy, n_requests=3)
    fin = np.asarray(r.requests["finish_s"])
    assert np.isfinite(fin).all()
    # the third request starts only after one of the first two has finished and freed its blocks
    first = np.asarray(r.requests["first_token_s"])
    assert first[2] > min(fin[0], fin[1])
