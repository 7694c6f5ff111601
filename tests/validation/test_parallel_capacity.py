"""Issue 16, Done means: capacity per regime on the measured side, parallel deployments predicted, and the
capacity rows of the shared runs against their targets (5 % for the real vLLM runs, 10 % for Vidur's
Llama-2-70B TP2).  A target fluidq does not reach is an xfail stating the measured miss, never a looser
target."""
import numpy as np
import pytest

from fluidq.errors import FluidqError
from fluidq.validate import validation_dir
from fluidq.validate.cases import load_cases, run_case
from fluidq.validate.deployment import predict_deployment
from fluidq.validate.runs import capacity_regimes, read_run

# the known misses, one table shared with test_validation_suite.py (a helper module, tests/validation/known_misses.py)
from known_misses import DONE_MEANS, check_known_miss, row_key

DATA = validation_dir() / "data"
LSS = DATA / "llmservingsim"


# ------------------------------------------------------------------------ regimes on a synthetic series
def _series(running, waiting, tokens, kv=None):
    n = len(running)
    ts = {"t": np.arange(1.0, n + 1), "prompt_throughput": np.asarray(tokens, float) * 0.25,
          "gen_throughput": np.asarray(tokens, float) * 0.75, "running": np.asarray(running, float),
          "waiting": np.asarray(waiting, float)}
    ts["kv_cache_pct"] = np.zeros(n) if kv is None else np.asarray(kv, float)
    return ts


def test_regimes_split_the_ramp_from_the_steady_state_under_k_max():
    # 4 ramp ticks (requests waiting, running climbing, prompt-heavy and fast), then 20 at max_num_seqs
    running = [10, 40, 80, 100] + [128] * 20 + [90, 40]
    waiting = [5, 9, 12, 14] + [20] * 20 + [0, 0]
    tokens = [9000, 9500, 9800, 9900] + [5000, 5200] * 10 + [3000, 1000]
    reg = capacity_regimes(_series(running, waiting, tokens), max_num_seqs=128)
    assert reg["binding"] == "k_max"
    assert reg["steady"]["seconds"] == 20 and reg["steady"]["tokens_per_s"] == pytest.approx(5100.0)
    assert reg["steady"]["window_s"] == (5.0, 24.0)
    lo, hi = reg["steady"]["ci"]
    # batch means with a data-chosen batch size: pairs of alternating ticks, whose means are all 5100 exactly
    assert lo <= 5100.0 <= hi and hi - lo < 200
    assert reg["ramp"]["seconds"] == 4 and reg["ramp"]["tokens_per_s"] == pytest.approx(9550.0)
    assert reg["saturated_seconds"] == 24


def test_regimes_kv_bound_token_budget_and_replicas():
    kv = [50, 70, 95, 96, 97, 96, 95, 97]
    reg = capacity_regimes(_series([5, 10, 20, 20, 21, 20, 20, 21], [1] * 8, [900] * 2 + [300] * 6, kv),
                           max_num_seqs=256)
    assert reg["binding"] == "kv_cache" and reg["steady"]["seconds"] == 6 and reg["ramp"]["seconds"] == 2
    assert reg["steady"]["tokens_per_s"] == pytest.approx(300.0)
    # neither limit full: the token budget, its steady state the plateau of `running`
    # (6 ticks stand for a long stretch: with neither limit seen, a queue counts as saturated from 10 s on)
    reg = capacity_regimes(_series([5, 30, 60, 60, 59, 60], [1] * 6, [800, 700, 400, 400, 400, 400], [10] * 6),
                           max_num_seqs=256, unseen_limit_s=6)
    assert reg["binding"] == "token_budget" and reg["steady"]["seconds"] == 4 and reg["ramp"]["seconds"] == 2
    # running counts every data-parallel replica: 256 running is 2 x max_num_seqs = 128
    reg = capacity_regimes(_series([100, 256, 256, 256], [1] * 4, [1, 2, 2, 2]), max_num_seqs=128,
                           data_parallel_size=2)
    assert reg["binding"] == "k_max" and reg["steady"]["seconds"] == 3
    never = capacity_regimes(_series([5, 6], [0, 0], [1, 1]), max_num_seqs=8)
    assert never["steady"]["seconds"] == 0 and "never" in never["binding"]


def test_the_kv_use_is_rebuilt_only_where_a_regime_reads_it():
    """``kv_in_use_tokens`` may be a function, called once and only when the regimes read the requests' KV use:
    when the kv_cache_pct column is absent or stayed 0 (then the KV use marks the end of the ramp and, over a
    recorded cache, says whether the cache binds -- also where ``running`` reaches max_num_seqs: a KV-bound engine
    near max_num_seqs touches it too); its numbers are the array's.  A run whose column says is never rebuilt."""
    use = np.array([100.0, 400, 800, 820, 810, 815, 820, 818])
    calls = []

    def lazy():
        calls.append(1)
        return use

    waiting, tokens = [1] * 8, [900] * 2 + [300] * 6
    cases = [  # (series, max_num_seqs, whether the KV use is read)
        (_series([100, 256, 256, 256, 256, 256, 256, 256], waiting, tokens), 256, True),  # k_max, no KV column
        (_series([5, 10, 20, 20, 21, 20, 20, 21], waiting, tokens, [50, 70, 95, 96, 97, 96, 95, 97]), 256, False),
        (_series([5, 10, 20, 20, 21, 20, 20, 21], waiting, tokens, [10] * 8), 256, False),  # token budget
        (_series([5, 10, 20, 20, 21, 20, 20, 21], waiting, tokens), 256, True),  # kv_cache_pct stayed 0
        ({**_series([5, 10, 20, 20, 21, 20, 20, 21], waiting, tokens, [10] * 8), "preempted": np.ones(8)}, 256, False),
    ]
    for ts, k, read in cases:
        for cap in (None, 1000):
            calls.clear()
            # (8 ticks stand for a long stretch: a queue with no limit seen counts as saturated from 10 s on)
            got = capacity_regimes(ts, max_num_seqs=k, kv_in_use_tokens=lazy, kv_capacity_tokens=cap,
                                   unseen_limit_s=8)
            assert len(calls) == (1 if read else 0), (ts["running"], cap, calls)
            want = capacity_regimes(ts, max_num_seqs=k, kv_in_use_tokens=use, kv_capacity_tokens=cap,
                                    unseen_limit_s=8)
            assert repr(got) == repr(want)  # (NaN in both where there is no number)


# ------------------------------------------------------------------------------ parallel deployments
@pytest.fixture(scope="module")
def llama():
    return read_run(LSS / "RTXPRO6000_Llama-3.1-8B")


def test_data_parallel_replicas_sum_and_pipeline_stages_split(llama):
    kw = dict(input_tokens=llama.input_tokens, output_tokens=llama.output_tokens, max_num_seqs=128)
    one = predict_deployment(LSS / "RTXPRO6000_Llama-3.1-8B", **kw)
    two = predict_deployment(LSS / "RTXPRO6000_Llama-3.1-8B", data_parallel_size=2, **kw)
    assert two.tokens_per_s == pytest.approx(2 * one.tokens_per_s) and two.binding == one.binding
    assert two.inputs["layout"].startswith("TP1 x DP2")
    pp = predict_deployment(LSS / "RTXPRO6000_Llama-3.1-8B", pipeline_parallel_size=2, link_bandwidth_gbps=16,
                            link_latency_us=20, **kw)
    # two stages on two GPUs: more than one GPU, less than two independent replicas (sends, bubble)
    assert one.tokens_per_s < pp.tokens_per_s < two.tokens_per_s
    assert "given link" in pp.inputs["communication"]
    with pytest.raises(FluidqError, match="max_num_seqs"):
        predict_deployment(LSS / "RTXPRO6000_Llama-3.1-8B", pipeline_parallel_size=3, **kw)  # 128 % 3
    with pytest.raises(FluidqError, match="link_latency_us"):
        predict_deployment(LSS / "RTXPRO6000_Llama-3.1-8B", pipeline_parallel_size=2, link_bandwidth_gbps=16, **kw)


def test_expert_parallel_needs_a_moe_model_and_spreads_its_experts():
    run = read_run(LSS / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507")
    kw = dict(input_tokens=run.input_tokens, output_tokens=run.output_tokens, max_num_seqs=128, data_parallel_size=2)
    ep = predict_deployment(LSS / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507", enable_expert_parallel=True, **kw)
    full = predict_deployment(LSS / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507", **kw)
    # each GPU reads half the experts' weights per decode step: faster decodes despite the all-to-alls
    assert ep.decode_iteration_s < full.decode_iteration_s and ep.tokens_per_s > full.tokens_per_s
    assert "EP2" in ep.inputs["layout"] and "peer link" in ep.inputs["communication"]
    with pytest.raises(FluidqError, match="enable_expert_parallel"):
        predict_deployment(LSS / "RTXPRO6000_Llama-3.1-8B", input_tokens=100, output_tokens=100,
                           enable_expert_parallel=True)


def test_capacity_cli_parallel_options(capsys):
    import json

    from fluidq.testing.cli import run_cli

    rc, out, err = run_cli(["capacity", "--profile-dir", str(LSS / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"),
                            "--data-parallel-size", "2", "--enable-expert-parallel", "--max-num-seqs", "128",
                            "--input-len", "800", "--output-len", "600", "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    api = predict_deployment(LSS / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507", input_tokens=800, output_tokens=600,
                             max_num_seqs=128, data_parallel_size=2, enable_expert_parallel=True)
    assert doc["tokens_per_s"] == pytest.approx(api.tokens_per_s)
    assert doc["inputs"]["expert_parallel_size"] == 2


# ------------------------------------------------------------------ the Done-means rows (measured numbers)
@pytest.fixture(scope="module")
def rows():
    out = {}
    names = {"rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b", "rtxpro6000-qwen3-30b-a3b",
             "vidur-llama2-70b-a100-tp2-sarathi512"}
    for c in load_cases(validation_dir() / "cases"):
        if c.name in names:
            res = run_case(c, DATA, fast=True)  # the serving cases replay their arrivals (about 3 s)
            out.update({(c.name, r.quantity): r for r in res.rows})
    return out


@pytest.mark.parametrize("case", ["rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b", "rtxpro6000-qwen3-30b-a3b"])
def test_the_binding_limit_is_right(rows, case):
    r = rows[(case, "binding limit")]
    assert r.predicted == r.measured and r.status == "pass"


@pytest.mark.parametrize("case", ["rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b", "rtxpro6000-qwen3-30b-a3b"])
def test_replayed_capacity_within_5_pct_of_the_steady_state(rows, case):
    # the Qwen3 DP2 + EP run: both ranks replayed in lockstep (deployment.LockstepRanks)
    r = rows[(case, "capacity (replayed arrivals, the same steady window)")]
    assert abs(r.error_pct) <= 5.0, r


_CAP = "capacity (served tokens/s, steady state)"
_SIM = "capacity (fluidq.simulate of the benchmark, steady state)"
_MAE = "mean abs. error over the 15 latency metrics"


def _known_miss(row, value, target, why_it_misses):
    """``value`` (the row's error or predicted %) meets issue 16's ``target`` (|value| <= target): it must not be a
    known miss of it.  Else it must be one, within its band (tests/validation/known_misses.py, the table shared
    with test_validation_suite.py): an xfail stating the measured and the recorded miss."""
    check_known_miss(row_key(row), value, DONE_MEANS, met=abs(value) <= target,
                     why_it_misses=f"target {target:g} %; {why_it_misses}")


@pytest.mark.parametrize("case", ["rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b", "rtxpro6000-qwen3-30b-a3b"])
def test_fluid_capacity_within_5_pct_of_every_real_vllm_run(rows, case):
    r = rows[(case, _CAP)]
    # the KV-bound RTX 4090 run: 2,485 against 2,478 tokens/s measured (+0.3 %), since the formula counts the
    # recompute preemptions and the free room vLLM's whole-prompt admission leaves (derived from the engine's rules
    # and checked on simulated engines only; +11.1 % before, 2026-12-06)
    if case == "rtxpro6000-llama3.1-8b":
        # +2.5 % since the measured steady state starts after the ramp (h-meas16, 2026-12-07: 8,097 tokens/s over
        # 18-49 s; +7.3 % against the 7,741 of 13-49 s before, whose first five ticks were the first 128 admitted
        # decoding together with no prompt let in)
        assert abs(r.error_pct) <= 10.0, r
    _known_miss(r, r.error_pct, 5.0,
                "the window follows the ramp and serves fewer prompt tokens per generated token than the workload "
                "brings, so it sits below the stationary capacity the formula predicts: fluidq's simulated benchmarks "
                "put their windows -2.9 / -3.4 / -15.1 % under their stationary throughput, RTX 4090 / PRO 6000 "
                "Llama / Qwen3, validation/RESULTS.md 2026-12-06")


@pytest.mark.parametrize("case", ["rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b"])
def test_simulated_capacity_within_5_pct_of_the_llama_runs(rows, case):
    # predict_deployment(method="simulate"): no run timing read; the benchmark's lengths and request rate only
    r = rows[(case, _SIM)]
    assert abs(r.error_pct) <= 5.0, r


def test_simulated_capacity_of_the_qwen3_dp2_ep_run(rows):
    r = rows[("rtxpro6000-qwen3-30b-a3b", _SIM)]
    st = rows[("rtxpro6000-qwen3-30b-a3b", "capacity (served tokens/s, steady state)")]
    assert abs(r.error_pct) <= 10.0, r
    # the run's 12 s window is one arrival realisation: the prediction lies inside its measured 95 % CI, where
    # the window's ticks give one (batch means over 3 blocks of 4 ticks: 5,219-9,553, +-29 %)
    if st.measured_ci is not None:
        lo, hi = st.measured_ci
        assert lo <= r.predicted <= hi, (r.predicted, lo, hi)
    else:
        assert "no 95 % interval" in st.note, st.note
    # +4.7 % (the full suite's 10 replications) / +4.9 % (fast) since h-meas16 (2026-12-07), +5.9 % / +5.2 % before:
    # at the edge of the target, with a measured interval of +-29 %
    _known_miss(r, r.error_pct, 5.0,
                "of the 12 s steady window (the benchmark's requests in its own order, async scheduling as the run: "
                "+5.9 % with the full suite's 10 replications before h-meas16; +8.5 % when they were sent in a random "
                "order); the run's own arrivals replayed give -4.3 %")


def test_vidur_llama2_70b_tp2_within_10_pct(rows):
    rep = rows[("vidur-llama2-70b-a100-tp2-sarathi512", "saturation rate vs Vidur (replayed overload)")]
    assert abs(rep.error_pct) <= 10.0, rep
    fluid = rows[("vidur-llama2-70b-a100-tp2-sarathi512", "saturation rate vs Vidur (context-aware)")]
    # +1.5 % of Vidur's 1.45 req/s since the formula counts the KV-bound engine's recompute preemptions and admission
    # slack (2026-12-06, h-pre16; +14.2 % before, +15.9 % before the flow balance let an iteration's prompts share it)
    # This pass does not validate the mechanism for Vidur: Vidur's scheduler has its own preemption rules, not vLLM
    # v1's, and the clipped-trace info row moved the other way (-0.4 % -> -11.4 %); see validation/RESULTS.md.
    assert abs(fluid.error_pct) <= 10.0, fluid


def test_lockstep_ranks_take_the_slowest_rank():
    from fluidq.validate.deployment import LockstepRanks

    class Linear:  # t = 1 ms per token of a rank's batch
        n_layers, source = 1, "linear"

        def time_shape(self, pc, kp, nd, kv, n_emit=None):
            return 1e-3 * (float(pc) + float(nd))

    m = LockstepRanks(Linear(), 2)
    # 10 decodes: 5 per rank; chunks 30 and 10 go to different ranks: max(5 + 30, 5 + 10) ms
    assert m.time([(30, 0), (10, 0)], [100] * 10) == pytest.approx(35e-3)
    # one chunk: the other rank waits for it
    assert m.time([(40, 0)], [100] * 10) == pytest.approx(45e-3)
    assert m.time([], [100] * 10) == pytest.approx(5e-3)


@pytest.mark.parametrize("case", ["rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b"])
def test_latency_mean_abs_error_within_2_pct_on_the_llama_runs(rows, case):
    # issue 16's Done means: <= 2 % on both Llama runs
    r = rows[(case, _MAE)]
    assert np.isfinite(r.predicted) and r.predicted >= 0.0, r
    _known_miss(r, r.predicted, 2.0,
                "over the 15 metrics; the residuals are in the PRO 6000's TTFT (-5 to -13 %), stated, not loosened")
