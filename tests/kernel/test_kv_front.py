"""The KV kernel keeps its lists, its waiting FIFO and its victims' stack near the front of their arrays.

kv.py moves a resident list to the front of its array when its first slot lies more than its live entries plus
``SLACK`` from it, the FIFO of waiting requests when more of it was popped than is left (past ``SLACK``), and
compacts the stack of admissions (the most recent victim) when it holds more than twice the admitted requests
plus ``SLACK`` (``fluidq/kernel/kv.py``).  Positions change, never the order: a wrong move (a lost entry, a stale
position, a dropped admission) changes which decoder is served, covered or preempted.  So:

* the list operations on random sequences of appends, re-insertions of older requests and removals keep the
  same order as a sorted Python list, every position right, and the slots in use within a bound that does not
  grow with the number of operations (without the moves they sweep the whole array);
* long runs with a cache that binds (thousands of requests, so that every move happens many times: counted)
  equal the generic ``select()`` path request for request, on random engines and memories.
"""
import inspect

import numpy as np
import pytest

from fluidq import Engine, Geometric, Poisson, Staircase, Workload
from fluidq.engine import VLLM, Memory
from fluidq.sim import simulate


def test_lists_keep_their_order_and_stay_near_the_front():
    from fluidq.kernel import kv as K

    rng = np.random.default_rng(7)
    m = 60_000
    lst = np.full(m, -7, dtype=np.int64)
    pos = np.full(m, -1, dtype=np.int64)
    lp = np.zeros(K.N_LP, dtype=np.int64)
    b = K.L_P  # (the three lists share lp; one is enough here)
    ref = []  # the live entries, ascending
    nxt = 0
    worst = 0
    for step in range(30_000):
        u = rng.random()
        if u < 0.45 or not ref:  # a new request: the youngest
            K._ins(lst, pos, lp, b, nxt)
            ref.append(nxt)
            nxt += 1
        elif u < 0.55:  # an older one comes back (a preempted request) between the live ones
            gone = sorted(set(range(max(0, ref[0] - 5), nxt)) - set(ref))
            if gone:
                rid = int(rng.choice(gone))
                K._ins(lst, pos, lp, b, rid)
                ref.append(rid)
                ref.sort()
        else:  # one leaves: mostly the oldest (finishes in order), sometimes any
            rid = ref[0] if rng.random() < 0.7 else ref[int(rng.integers(len(ref)))]
            K._rem(lst, pos, lp, b, rid)
            ref.remove(rid)
        worst = max(worst, lp[b + 1] - 3 * len(ref))
        if step % 37 == 0:
            seg = lst[lp[b]:lp[b + 1]]
            assert seg[seg >= 0].tolist() == ref
            assert lp[b + 2] == len(ref)
            assert (lst[pos[ref]] == ref).all()
    assert worst <= K.SLACK + 128  # within a few kB of the front, however many requests went through
    assert nxt > 10 * K.SLACK and lp[K.LP_MOVES] > 0  # many went through, and the lists were moved


MEMORIES = {"vllm": VLLM, "vllm-b4": VLLM.with_(block_size=4), "last": VLLM.with_(victim="last_in_order"),
            "inc": VLLM.with_(reservation="incremental"), "swap": VLLM.with_(preemption="swap"),
            "prefix": VLLM.with_(prefix_caching=True), "tokens": Memory(),
            "tokens-recent": Memory(kind="tokens", victim="most_recent")}


@pytest.mark.parametrize("memory", list(MEMORIES))
@pytest.mark.parametrize("seed", [1, 2])
def test_long_binding_runs_equal_the_generic_path(memory, seed, monkeypatch):
    from fluidq.kernel import kv as K

    moves = []
    step = K.step
    names = list(inspect.signature(getattr(step, "py_func", step)).parameters)
    i_lp, i_si = names.index("lp"), names.index("si")  # by name: a change of kv.step's signature cannot misread

    def counting_step(*args):
        out = step(*args)
        moves.append((int(args[i_lp][K.LP_MOVES]), int(args[i_si][K.I_NMOVE])))  # lp: list moves; si: FIFO, stack
        return out

    monkeypatch.setattr(K, "step", counting_step)
    rng = np.random.default_rng(seed)
    mem = MEMORIES[memory]
    eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=int(rng.integers(64, 256)),
                 kv_capacity_tokens=int(rng.integers(1500, 3000)), memory=mem)
    w = Workload(arrival=Poisson(rate_per_s=float(rng.uniform(40, 70))),
                 prompt_tokens=Geometric(mean_tokens=float(rng.uniform(20, 60))),
                 output_tokens=Geometric(mean_tokens=float(rng.uniform(20, 60))))
    kw = {"swap_s_per_token": 1e-6} if mem.preemption == "swap" else {}
    a = simulate(eng, w, "sarathi", n_requests=5000, rng=seed, method="fast", **kw)
    b = simulate(eng, w, "sarathi", n_requests=5000, rng=seed, method="generic", **kw)
    assert a.method == "fast" and b.method == "generic"
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
    for k in b.backlog:
        np.testing.assert_array_equal(a.backlog[k], b.backlog[k], err_msg=f"backlog {k}")
    for k in ("n_iterations", "tokens_served", "preemptions", "wasted_tokens", "swap_tokens", "peak_kv_tokens",
              "examined", "n_finished"):
        assert getattr(a, k) == getattr(b, k), k
    assert a.preemptions > 100  # the cache binds
    lists, other = moves[-1]
    assert lists > 0 and other > 0, moves[-1]  # the moves happened (the FIFO's, and the stack's where there is one)
