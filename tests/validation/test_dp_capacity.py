"""Data-parallel MoE capacity (issues 16, 20, a new user's review): the DP ranks of a MoE model step in lockstep,
and each has its own ``max_num_batched_tokens`` and ``max_num_seqs`` (vLLM), so the group's fluid capacity is
that of ``dp`` ranks' budgets -- it must not fall as ranks are added, its binding limit is the smallest limit it
prints, and it agrees with the lockstep simulation (``method="simulate"``, :class:`LockstepRanks`) case by case as recorded
here.  Before 2026-12-07 the fluid group had one rank's token budget: at prompts 1000 / outputs
200, ``fluidq capacity`` gave 11,137 / 13,278 / 9,792 tokens/s at DP 1 / 2 / 4 (the last two "token_budget")."""
import numpy as np
import pytest

from fluidq.validate import validation_dir
from fluidq.validate.deployment import predict_deployment

QWEN = validation_dir() / "data" / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"


def _lengths():
    rng = np.random.default_rng(3)  # a held-out workload: not the shipped run's lengths
    return rng.integers(500, 1500, 400), rng.integers(100, 300, 400)


def _kw(p, o, dp, ks):
    return dict(input_tokens=p, output_tokens=o, data_parallel_size=dp, enable_expert_parallel=dp > 1,
                max_num_seqs=ks)


@pytest.mark.parametrize("lengths", ["1000/200", "random"])
@pytest.mark.parametrize("ks", [64, 128, 256, 512])
def test_capacity_does_not_fall_as_data_parallel_ranks_are_added(ks, lengths):
    p, o = (1000, 200) if lengths == "1000/200" else _lengths()
    caps = []
    for dp in (1, 2, 4):
        r = predict_deployment(QWEN, **_kw(p, o, dp, ks))
        # the binding limit is the smallest of the limits the answer prints
        assert r.binding == min(r.limits, key=r.limits.get), (dp, r.binding, r.limits)
        caps.append(r.tokens_per_s)
    assert caps[0] <= caps[1] <= caps[2], caps


def test_the_group_reason_names_every_rank_s_budget():
    r = predict_deployment(QWEN, input_tokens=3000, output_tokens=100, data_parallel_size=4,
                           enable_expert_parallel=True, max_num_seqs=256)
    assert r.binding == "token_budget"
    assert "b_max = 8192 (4 ranks x 2048)" in r.reason
    assert r.limits["token_budget"] == pytest.approx(4 * 2048 * 99 / 3099)


class _RankStub:
    """One rank's iteration model recording what :class:`_Lockstep` asks it (the stub's time is a constant)."""
    source, n_layers = "stub", 1

    def __init__(self):
        self.calls = []

    def time_shape(self, prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit=None):
        self.calls.append(tuple(float(x) for x in (prefill_tokens, kv_prefill, n_decode, kv_decode, n_emit)))
        return 0.0421


@pytest.mark.parametrize("chunks, r", [(0, 1), (1, 1), (2, 2), (4, 4), (5, 4), (8, 4)])
def test_a_lockstep_iteration_is_one_rank_s_share_worked_by_hand(chunks, r):
    """dp = 4 ranks, an iteration of C = 1000 folded prompt tokens at context K = 300 in ``c`` chunks, 40 decodes
    of context 700.  By the class's derivation the chunks go to r = min(max(c, 1), dp) ranks, C / r tokens each,
    and a rank's share of the causal work C (K + C / 2) / r is (C / r)(K' + C / (2 r)), so the rank sees the context
    K' = K + C (1 - 1/r) / 2 (c = 2: 500 tokens at K + 250); the decodes are shared evenly (10 each) and a rank emits
    its decodes' tokens plus its c / r chunks (c = 2: 11).  The group's iteration is that rank's."""
    from fluidq.validate.deployment import _Lockstep

    C, K, nd, kvd = 1000.0, 300.0, 40.0, 700.0
    stub = _RankStub()
    t = _Lockstep(stub, 4).time_shape(C, K, nd, kvd, n_emit=nd + chunks)
    share = C / r
    kv = K + C * (1 - 1 / r) / 2
    assert stub.calls == [(share, kv, nd / 4, kvd, nd / 4 + chunks / r)] and t == 0.0421
    # the derivation itself: r ranks' causal work at (C / r, K') is the folded chunk's C (K + C / 2)
    assert r * share * (kv + share / 2) == pytest.approx(C * (K + C / 2), rel=1e-12)
    if chunks == 2:  # the numbers in words above
        assert stub.calls[0] == (500.0, K + 250.0, 10.0, kvd, 11.0)
    stub.calls.clear()
    _Lockstep(stub, 4).time_shape(C, K, nd, kvd)  # no n_emit: no chunk count, the whole chunk on one rank
    assert stub.calls == [(C, K, 10.0, kvd, 10.0)]


# fluid / simulated - 1 (%) on the random-length workload above, 2000 requests at 2.5 x the fluid capacity, 4 seeded
# replications, seed 7 (measured 2026-12-07, h-tests6, shared 2-vCPU VM; the simulation's 95 % interval in brackets,
# as fluid / hi - 1 .. fluid / lo - 1): the formula spreads an iteration's prompt chunks evenly over up to dp ranks,
# the simulation places whole chunks on the least loaded rank, whose slowest rank holds more than the mean share.
# Re-measured 2026-12-07 (h-meas16) after the simulation's log is read as every saturated tick after the ramp, not
# only the ticks at >= 95 % of max_num_seqs (which selected the busiest: the simulated capacity was higher, the
# formula's error lower): DP2/64 +2.85 (unchanged), DP2/256 +4.36 -> +4.55, DP4/64 +4.99 -> +5.64 (now past the
# target), DP4/256 +10.66 -> +11.29.
RECORDED = {(2, 64): 2.85,  # [+2.32, +3.39]
            (2, 256): 4.55,  # [+3.80, +5.31]
            (4, 64): 5.64,  # [+4.92, +6.37]
            (4, 256): 11.29}  # [+9.32, +13.33]
#: the agreement asked of the formula with its simulation (issue 16's 5 % capacity target)
TARGET = 5.0
#: the cases past TARGET: each an xfail stating its miss
KNOWN_MISSES = {(4, 256): "the least-loaded placement of whole chunks leaves the slowest of 4 ranks more than the "
                          "mean share at 256 residents a rank",
                (4, 64): "the same placement at 64 residents a rank (+4.99 % before h-meas16, when the simulation's "
                         "capacity averaged only its busiest ticks)"}


@pytest.mark.parametrize("dp", [2, 4])
@pytest.mark.parametrize("ks", [64, 256])
def test_fluid_agrees_with_the_lockstep_simulation(dp, ks):
    """The fluid answer against the simulation, case by case: the recorded error must lie inside the error interval
    the simulation's 95 % interval allows today (else the code moved it: re-measure and say why), and a case past
    TARGET must be a known miss, an xfail stating it (a known miss that meets TARGET fails: update the record)."""
    p, o = _lengths()
    f = predict_deployment(QWEN, **_kw(p, o, dp, ks))
    s = predict_deployment(QWEN, **_kw(p, o, dp, ks), method="simulate", arrival_rate=2.5 * f.requests_per_s,
                           n_requests=2000, replications=4, seed=7)
    lo, hi = s.ci
    err = 100 * (f.tokens_per_s / s.tokens_per_s - 1)
    band = (100 * (f.tokens_per_s / hi - 1), 100 * (f.tokens_per_s / lo - 1))
    assert band[0] <= RECORDED[dp, ks] <= band[1], (f"DP{dp} max_num_seqs {ks}: fluid {err:+.2f} % of the simulation "
                                                    f"[{band[0]:+.2f}, {band[1]:+.2f}], recorded "
                                                    f"{RECORDED[dp, ks]:+.2f}", f.tokens_per_s, s.ci)
    if abs(err) <= TARGET:
        assert (dp, ks) not in KNOWN_MISSES, f"known miss DP{dp}/{ks} now {err:+.2f} %, within {TARGET} %: update"
        return
    assert (dp, ks) in KNOWN_MISSES, f"DP{dp}/{ks}: fluid {err:+.2f} % of the simulation, past {TARGET} %"
    pytest.xfail(f"DP{dp} max_num_seqs {ks}: fluid {err:+.2f} % of the lockstep simulation (recorded "
                 f"{RECORDED[dp, ks]:+.2f} %, target {TARGET} %): {KNOWN_MISSES[dp, ks]}")


def test_fixed_lengths_form_cohorts_the_fluid_formula_does_not_see():
    # every request 1000 / 200 tokens: requests admitted together finish together, and the cohorts fill the
    # four ranks at once -- the simulation serves 21,548 tokens/s (95 % CI 19,786-23,310) against 13,919 with the
    # random lengths above; the fluid formula, Poisson finishes, gives 14,666 (-31.9 %; measured 2026-12-07)
    f = predict_deployment(QWEN, **_kw(1000, 200, 4, 64))
    s = predict_deployment(QWEN, **_kw(1000, 200, 4, 64), method="simulate", arrival_rate=2.5 * f.requests_per_s,
                           n_requests=2000, replications=4, seed=7)
    err = f.tokens_per_s / s.tokens_per_s - 1
    # a known miss: it must stay the recorded one (a band of the simulation's own +-8 % interval), and a formula
    # that comes within TARGET fails here so the record gets updated
    assert err == pytest.approx(-0.319, abs=0.08), err
    pytest.xfail(f"fluid {err:+.1%} of the simulation with equal lengths (-31.9 % measured 2026-12-07): the "
                 "formula's finishes are Poisson, the engine's come in cohorts")
