"""The KV kernel skips the prefill walk of a pass that must preempt whatever it takes.

With decode first (Sarathi) and every decoder served, a pass whose decoders alone need more blocks (tokens) than
are free preempts, whatever prompts the walk would add; the kernel then skips the walk (``si[I_NOWALK]`` counts
those passes).  The runs must still equal the generic select()-per-iteration path, which walks every time, and
the skip must not happen where it would be wrong (prefill first: the decoders get what prefill leaves).
"""
import pytest

from fluidq import Empirical, Engine, Poisson, Staircase, Workload
from fluidq.engine import Memory
from fluidq.sim import simulate

from test_kv_covered import V4, _same  # the run comparison and small-block memory of the covered-decoder tests

MEMORIES = {"tokens": Memory(), "vllm": V4, "vllm-last": V4.with_(victim="last_in_order"),
            "incremental": V4.with_(reservation="incremental"), "prefix": V4.with_(prefix_caching=True),
            "swap": V4.with_(preemption="swap")}


@pytest.fixture
def skipped(monkeypatch):
    """The kernel's count of skipped walks after each call of ``kv.step`` (cumulative over resumed calls)."""
    from fluidq.kernel import kv as K

    seen = []
    step = K.step

    def counting_step(*args):
        out = step(*args)
        seen.append(int(args[6][K.I_NOWALK]))  # si, the integer state
        return out

    monkeypatch.setattr(K, "step", counting_step)
    return seen


@pytest.mark.parametrize("memory", list(MEMORIES), ids=str)
@pytest.mark.parametrize("policy", ["sarathi", "orca", "vllm"])
def test_walks_skipped_only_when_bound_to_preempt(memory, policy, skipped):
    mem = MEMORIES[memory]
    eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=24, kv_capacity_tokens=120, memory=mem)
    w = Workload(arrival=Poisson(rate_per_s=40.0), prompt_tokens=Empirical(values=(3, 8, 20)),
                 output_tokens=Empirical(values=(2, 9, 30)))
    kw = {"swap_s_per_token": 1e-5} if mem.preemption == "swap" else {}
    a = simulate(eng, w, policy, horizon_s=20, rng=4, method="fast", **kw)
    assert a.preemptions > 0  # the cache binds
    if policy == "sarathi":  # chunked, decode first: some passes are bound to preempt
        assert skipped and skipped[-1] > 0
    else:  # prefill first: the decoders get what the walk leaves, so the walk always runs
        assert skipped and skipped[-1] == 0
    b = simulate(eng, w, policy, horizon_s=20, rng=4, method="generic", check_batches=True, **kw)
    _same(a, b)
