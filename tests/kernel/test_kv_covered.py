"""The KV kernel's covered decoders (no heap entry while the next older decoder finishes no later).

A few output lengths make most decoders covered and make ties; a small ``k_max`` or ``b_max`` leaves the
youngest decoders out of batches (a covered one keeps no entry, an uncovered one moves its round); a cache that
binds preempts decoders (recompute: a victim comes back older than the decoders behind it; swap: it is
swapped back in between them; the most recently admitted victim can sit between a decoder and the one it
covers).  The kernel must give exactly the generic select()-per-iteration run.
"""
import numpy as np
import pytest

from fluidq import Empirical, Engine, Poisson, Staircase, Workload
from fluidq.engine import VLLM, Memory
from fluidq.sim import simulate

V4 = VLLM.with_(block_size=4)  # small blocks: decoders need new ones often, so the cache binds
MEMORIES = {"tokens": Memory(), "vllm": V4, "vllm-last": V4.with_(victim="last_in_order"),
            "swap": V4.with_(preemption="swap"), "prefix": V4.with_(prefix_caching=True),
            "tokens-recent-swap": Memory(kind="tokens", victim="most_recent", preemption="swap")}


def _same(a, b):
    assert a.method == "fast" and b.method == "generic"
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
    for k in b.backlog:
        np.testing.assert_array_equal(a.backlog[k], b.backlog[k], err_msg=f"backlog {k}")
    for k in ("n_iterations", "tokens_served", "preemptions", "wasted_tokens", "swap_tokens", "peak_kv_tokens"):
        assert getattr(a, k) == getattr(b, k), k


@pytest.mark.parametrize("memory", list(MEMORIES), ids=str)
@pytest.mark.parametrize("outputs", [7, (2, 3, 9), (1, 4, 4, 30)])
@pytest.mark.parametrize("k_max", [None, 6])
@pytest.mark.parametrize("priority", ["decode", "prefill"])
def test_kv_kernel_with_covered_decoders_matches_generic(memory, outputs, k_max, priority):
    mem = MEMORIES[memory]
    eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=24, k_max=k_max, kv_capacity_tokens=120,
                 memory=mem)
    pol = "sarathi" if priority == "decode" else "orca"
    out = Empirical(values=outputs) if isinstance(outputs, tuple) else outputs
    w = Workload(arrival=Poisson(rate_per_s=40.0), prompt_tokens=Empirical(values=(3, 8, 20)), output_tokens=out)
    kw = {"swap_s_per_token": 1e-5} if mem.preemption == "swap" else {}
    a = simulate(eng, w, pol, horizon_s=20, rng=4, method="fast", **kw)
    b = simulate(eng, w, pol, horizon_s=20, rng=4, method="generic", check_batches=True, **kw)
    _same(a, b)
    assert a.preemptions > 0  # the cache binds


def test_covering_happens_and_changes_nothing(monkeypatch):
    """Equal output lengths: a decoder joining behind a live one finishes no earlier, so it joins covered (no heap
    entry).  The kernel counts those joins (``si[I_NCOV]``): the count must be positive -- the covering path runs --
    and the run must still equal the generic path (which has no covering), on an ample and a binding cache."""
    from fluidq.kernel import kv as K

    seen = []
    step = K.step

    def counting_step(*args):
        out = step(*args)
        seen.append(int(args[6][K.I_NCOV]))  # si, the integer state (cumulative over resumed calls)
        return out

    monkeypatch.setattr(K, "step", counting_step)
    w = Workload(arrival=Poisson(rate_per_s=40.0), prompt_tokens=Empirical(values=(3, 8, 20)), output_tokens=9)
    for cap, mem in ((10_000, V4), (120, V4), (120, Memory())):
        eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=24, kv_capacity_tokens=cap, memory=mem)
        seen.clear()
        a = simulate(eng, w, "sarathi", horizon_s=20, rng=4, method="fast")
        assert seen and seen[-1] > 0, (cap, mem)  # covered joins happened
        b = simulate(eng, w, "sarathi", horizon_s=20, rng=4, method="generic", check_batches=True)
        _same(a, b)
