"""Roofline batch time: hand-checked memory- and compute-bound batches, attention, tensor parallelism,
MoE, the calibration (reproducible; leave-one-profile-out under a bound from what it measures), bad input."""
from pathlib import Path

import numpy as np
import pytest

from fluidq import Engine
from fluidq.batchtime.roofline import CALIBRATED, Roofline, roofline
from fluidq.capacity import max_throughput
from fluidq.errors import ParameterError, UnknownNameError
from fluidq.models import list_gpus, load_gpu, load_model

DATA = Path(__file__).resolve().parents[2] / "validation" / "data"  # the shipped profiles and runs

BARE = dict(compute_efficiency=1.0, memory_efficiency=1.0, attention=False, lm_head=False, overhead=False)


def layer_params(m, tp=1):
    """Per-GPU projection-matrix parameters of one dense layer, written out by hand."""
    q, kv = m.n_heads // tp * m.head_dim, 2 * max(1, m.n_kv_heads // tp) * m.head_dim
    return m.hidden_size * (q + kv) + q * m.hidden_size + 3 * m.hidden_size * m.intermediate_size // tp


def test_one_token_is_memory_bound_weights_read_once():
    m, g = load_model("Llama-3.1-8B"), load_gpu("H100")
    rf = Roofline(model=m, gpu=g, **BARE)
    lin = rf.breakdown(1)["linear"]
    weights = m.n_layers * layer_params(m) * 2  # bf16
    # weights plus the activations of one token (a few hundred kB): within 0.1 %
    assert lin == pytest.approx(weights / 3.35e12, rel=1e-3)
    assert lin > weights / 3.35e12


def test_large_batch_is_compute_bound():
    m, g = load_model("Llama-3.1-8B"), load_gpu("H100")
    rf = Roofline(model=m, gpu=g, **BARE)
    b = 8192
    assert rf.breakdown(b)["linear"] == pytest.approx(2 * b * m.n_layers * layer_params(m) / 989.5e12, rel=1e-12)
    # halving the compute efficiency doubles a compute-bound linear time, leaves a memory-bound one
    half = Roofline(model=m, gpu=g, **{**BARE, "compute_efficiency": 0.5})
    assert half.breakdown(b)["linear"] == pytest.approx(2 * rf.breakdown(b)["linear"])
    assert half.breakdown(1)["linear"] == pytest.approx(rf.breakdown(1)["linear"])


def test_decode_attention_reads_the_kv_cache():
    m, g = load_model("Llama-3.1-8B"), load_gpu("A100")
    rf = Roofline(model=m, gpu=g, **{**BARE, "attention": True})
    kv = 100_000
    att = rf.breakdown(64, kv)["attention"]
    assert att == pytest.approx(kv * m.kv_bytes_per_token() / 2039e9, rel=1e-12)  # 4 FLOPs/byte: memory-bound
    assert rf(64, kv) - rf(64, 0) == pytest.approx(att)


def test_tensor_parallel_splits_weights_and_adds_all_reduces():
    m, g = load_model("Llama-3.1-70B"), load_gpu("H100")
    one = Roofline(model=m, gpu=g, tensor_parallel_size=8, **BARE)
    p = one.breakdown(1)
    assert p["linear"] == pytest.approx(m.n_layers * layer_params(m, 8) * 2 / 3.35e12, rel=1e-3)
    # two all-reduces of b x hidden bf16 values per layer: the ring over NVLink plus the sync latency
    b = 256
    n = b * m.hidden_size * 2
    ring_us = 2 * 7 / 8 * n / 450e3 + 2 * 7 * 3.0
    assert one.breakdown(b)["all_reduce"] == pytest.approx(2 * m.n_layers * (ring_us + one.sync_us) * 1e-6)
    assert "all_reduce" not in Roofline(model=m, gpu=g, tensor_parallel_size=1, **BARE).breakdown(b)


def test_moe_reads_only_the_experts_it_touches():
    m, g = load_model("Qwen3-30B-A3B"), load_gpu("H100")
    rf = Roofline(model=m, gpu=g, **BARE)
    expert = 3 * m.hidden_size * m.moe_intermediate_size * 2  # bytes of one expert
    # one token touches experts_per_token experts; 4096 tokens touch (nearly) all of them
    t1, t2 = rf.breakdown(1)["linear"], rf.breakdown(2)["linear"]
    touched2 = m.n_experts * (1 - (1 - m.experts_per_token / m.n_experts) ** 2)
    assert t2 - t1 == pytest.approx(m.n_layers * (touched2 - m.experts_per_token) * expert / 3.35e12, rel=0.02)
    # a batch costs the active experts' FLOPs: compute-bound at 65536 tokens, 2 x b x active matrix parameters
    b = 65536
    mats = m.n_layers * (m.hidden_size * (m.n_heads + 2 * m.n_kv_heads) * m.head_dim
                         + m.n_heads * m.head_dim * m.hidden_size + m.hidden_size * m.n_experts)
    active = mats + m.n_layers * m.experts_per_token * expert / 2
    assert rf.breakdown(b)["linear"] == pytest.approx(2 * b * active / 989.5e12, rel=0.02)


def test_calibration_is_reproducible():
    from fluidq.validate.roofline import calibrate, calibration_targets

    eff = calibrate(calibration_targets())
    for k in ("compute", "memory", "sync_step_mb", "splitwise_attention"):
        assert eff[k] == pytest.approx(CALIBRATED[k], rel=2e-3), k
    assert eff["overhead_s"] == pytest.approx(CALIBRATED["overhead_s"], abs=1e-5)


def test_leave_one_profile_out_under_the_measured_bound():
    """Measured (docs/reference/roofline.md, 2026-12-06, ten profiles since the A40 and the H100 Llama-2-70B
    TP-4 Vidur profiles joined): held-out MAPE 6.1-22.7 %, nine of ten within 15 %; the worst the RTX 4090
    (faster than its datasheet: no other profile's efficiencies reach it), the two Splitwise profiles 6.1 %
    and 10.2 % (30.9 % and 18.2 % before the sync cost scaled with the link bandwidth and Splitwise's stack
    had its own attention efficiency), the A40 6.8 % and the H100 TP-4 7.9 %.  Asserted: every profile below
    25 %, every profile but the RTX 4090 within 15 % (its miss is the xfail below), each Splitwise profile
    within 15 % and the paper's within 10 % (with a free per-iteration overhead it inherited Splitwise's fixed
    cost, 31 %) -- a model change that makes them worse fails here.  The note every roofline answer carries
    quotes the range."""
    from fluidq.validate.roofline import ERROR_NOTE, leave_one_out

    rows = leave_one_out()
    errs = {r["profile"]: r["heldout_mape"] for r in rows}
    assert len(rows) == 10 and {"vidur-llama2-7b-a40", "vidur-llama2-70b-h100-tp4"} <= set(errs)
    assert max(errs.values()) < 0.25, errs
    assert all(e <= 0.15 for n, e in errs.items() if n != "llmservingsim-llama3.1-8b-rtx4090"), errs
    assert errs["paper-codellama34b-a100"] < 0.10, errs
    assert errs["splitwise-llama2-70b-a100-tp8"] < 0.15 and errs["splitwise-llama2-70b-h100-tp8"] < 0.15, errs
    for r in rows:  # held out is never better than in-sample by more than noise
        assert r["heldout_mape"] >= r["insample_mape"] - 0.01
        assert r["efficiency"]["overhead_s"] == 0.0
    v = np.array(list(errs.values())) * 100
    assert f"MAPE {v.min():.0f}-{v.max():.0f} % (median {np.median(v):.0f} %, " \
           f"{int(np.sum(v <= 15))} of {len(v)} profiles within 15 %)" in ERROR_NOTE


@pytest.mark.xfail(strict=True, reason="measured 2026-12-06: the RTX 4090 held out at 22.7 % MAPE (fitted alone its "
                   "efficiencies are 0.89 compute / 0.77 memory, the other nine profiles' 0.55-0.67 / 0.62-0.71; "
                   "no class term calibrated without it closes the gap: docs/reference/roofline.md)")
def test_rtx4090_held_out_within_15_percent():
    """Issue 20's target for every profile; the RTX 4090 misses it (the other nine meet it, above)."""
    from fluidq.validate.roofline import leave_one_out

    errs = {r["profile"]: r["heldout_mape"] for r in leave_one_out()}
    assert errs["llmservingsim-llama3.1-8b-rtx4090"] <= 0.15, errs


def _run_capacities():

    from fluidq.validate.roofline import RUNS, calibrate, calibration_targets, run_capacity

    data = DATA / "llmservingsim"
    targets = calibration_targets()
    out = {}
    for run, (gpu, model, own) in RUNS.items():
        eff = calibrate([t for t in targets if t.name != own])  # never the profile measured beside the run
        out[run] = run_capacity(data / run, eff, gpu=gpu, model=model)
    return out


def test_run_capacity_without_its_profile():
    """Measured (docs/reference/roofline.md, 2026-12-06): each shared vLLM run's saturated throughput predicted
    with efficiencies fitted without the profile measured beside it: RTX PRO 6000 +5.6 % (``max_num_seqs``
    binds), RTX 4090 -23.4 % (the KV cache binds; its batch times are the 4090's held-out miss).  Asserted:
    the PRO 6000 within issue 20's 10 % and the binding limits as measured; the 4090's miss is the xfail
    below."""
    r = _run_capacities()
    pro = r["RTXPRO6000_Llama-3.1-8B"]
    assert abs(pro["error"]) <= 0.10 and pro["binding"] == "k_max", pro
    assert r["RTX4090_Llama-3.1-8B"]["binding"] == "kv_cache", r


@pytest.mark.xfail(strict=True, reason="measured 2026-12-06: the RTX 4090 run predicted -23.4 % without its "
                   "profile (1983 against 2588 tokens/s): the roofline's 4090 batch times are 20-60 % slow")
def test_rtx4090_run_capacity_within_10_percent():
    r = _run_capacities()["RTX4090_Llama-3.1-8B"]
    assert abs(r["error"]) <= 0.10, r


def test_heldout_error_on_the_measured_rows_under_the_measured_bound():
    """Measured (docs/reference/roofline.md, 2026-12-06): 9.3-26.4 % on the rows of the seven profiles whose
    data validation/data ships; Splitwise's decode rows (not gridded: its measured token iterations) 2.4 %
    (A100) and 4.2 % (H100) with the attention efficiency fitted on the other Splitwise profile.  Asserted:
    each below 30 %, the by-phase errors below 40 %, and Splitwise's decode rows below 10 %."""

    from fluidq.validate.roofline import raw_errors

    rows = raw_errors(DATA)
    assert {r["profile"] for r in rows} == {"vidur-llama2-7b-a100", "vidur-llama2-7b-a40", "vidur-llama2-70b-h100-tp4",
                                           "llmservingsim-llama3.1-8b-rtx4090",
                                           "llmservingsim-llama3.1-8b-rtxpro6000", "splitwise-llama2-70b-a100-tp8",
                                           "splitwise-llama2-70b-h100-tp8"}
    for r in rows:
        assert r["heldout_mape"] < 0.30, r
        assert all(v < 0.40 for v in r["by_phase"].values()), r
        if r["profile"].startswith("splitwise-"):
            assert r["by_phase"]["decode"] < 0.10, r


def test_at_context_adds_the_attention_read():
    rf = roofline("Llama-3.1-8B", "A100")
    kv = 50_000
    fixed = rf.at_context(kv)
    b = np.array([1.0, 64.0, 2048.0])
    assert np.allclose(fixed(b), rf(b) + rf.attention_s(kv))
    assert rf.attention_s(kv) == pytest.approx(rf.breakdown(64, kv)["attention"])
    assert fixed.to_dict()["base"]["kind"] == "roofline"
    assert roofline("Llama-3.1-8B", "A100", attention=False).attention_s(kv) == 0.0
    # as a ContextAware: exact wherever the LM head is that of t(b) (kv = 0, or attention alone)
    ca = rf.context_aware()
    assert ca(b, kv) == pytest.approx(fixed(b))
    assert ca(b, 0.0) == pytest.approx(rf(b))


def test_roofline_is_a_batch_time_every_analysis_takes():
    rf = roofline("Llama-3.1-8B", "RTX 4090")
    res = max_throughput(Engine(batch_time=rf, b_max=2048))
    rate, b = rf.best_rate(2048)
    assert res.tokens_per_s == pytest.approx(rate) and 1 <= b <= 2048
    t = rf(np.array([1, 64, 512]))
    assert np.all(np.diff(t) > 0)
    assert rf.to_dict()["kind"] == "roofline" and rf.to_dict()["gpu"] == "RTX-4090"


@pytest.mark.parametrize("kw,name", [
    (dict(compute_efficiency=1.5), "compute_efficiency"), (dict(memory_efficiency=0), "memory_efficiency"),
    (dict(overhead_s=-1), "overhead_s"), (dict(tensor_parallel_size=3), "tensor_parallel_size"),
    (dict(model="Llama"), "model"), (dict(gpu="H100"), "gpu"), (dict(attention="yes"), "attention"),
    (dict(all_reduce=1), "all_reduce"),
])
def test_bad_input_names_the_parameter(kw, name):
    args = dict(model=load_model("Llama-3.1-8B"), gpu=load_gpu("H100"))
    args.update(kw)
    with pytest.raises(ParameterError, match=name):
        Roofline(**args)


def test_negative_tokens_refused():
    rf = roofline("Llama-3.1-8B", "H100")
    with pytest.raises(ParameterError, match="kv_tokens"):
        rf(4, -1)


def test_gpu_table_names_and_suggestions():
    names = {g.name for g in list_gpus()}
    for need in ("A100-SXM4-80GB", "A100-SXM4-40GB", "H100-SXM5-80GB", "H100-PCIe-80GB", "H200-SXM-141GB", "L40S",
                 "A10G", "L4", "RTX-4090", "RTX-PRO-6000-Blackwell", "MI300X", "A40"):
        assert need in names
    assert all(g.source for g in list_gpus())
    assert load_gpu("rtx pro 6000").name == "RTX-PRO-6000-Blackwell"
    assert load_gpu("h100").name == "H100-SXM5-80GB"
    with pytest.raises(UnknownNameError, match="did you mean H100"):
        load_gpu("H1000")
    with pytest.raises(ParameterError, match="gpu"):
        load_gpu("")
    with pytest.raises(ParameterError, match="dtype"):
        load_gpu("A100").peak_flops("float8_e4m3fn")  # the A100 has no FP8 tensor cores


def test_splitwise_per_phase_figures_as_tandem_stages():
    """Measured (docs/reference/roofline.md, 2026-12-06), held out: one prefill engine's prompt rate +9 %
    (A100) and +23 % (H100: Splitwise's H100 stack reaches ~20 % of peak FLOPs in long prefills) against
    Splitwise's rows, the decode engine's rate -0.3 % (A100) and +7.5 % (H100), the balanced prefill share
    0.313 against 0.332 and 0.232 against 0.257.  Asserted under bounds from that, so a model change that
    makes the P/D sizing worse fails here."""

    from fluidq.validate.roofline import splitwise_phases

    rows = {r["profile"]: r for r in splitwise_phases(DATA)}
    assert set(rows) == {"splitwise-llama2-70b-a100-tp8", "splitwise-llama2-70b-h100-tp8"}
    for name, r in rows.items():
        t = r["tandem"]
        assert r["prefill"]["rows"] == r["decode"]["rows"] == 105
        pr = t["prefill_requests_per_s"]["roofline"] / t["prefill_requests_per_s"]["measured"]
        dr = t["decode_requests_per_s"]["roofline"] / t["decode_requests_per_s"]["measured"]
        assert 0.85 < pr < (1.15 if "a100" in name else 1.3), (name, pr)
        assert 0.9 < dr < 1.12, (name, dr)
        assert abs(t["prefill_share"]["roofline"] - t["prefill_share"]["measured"]) < 0.04, (name, t)
        assert 0.9 < r["decode"]["median_ratio"] < 1.1 and 0.9 < r["prefill"]["median_ratio"] < 1.3


def test_tensor_parallel_split_on_vidur_llama2_70b():
    """Measured (docs/reference/roofline.md, 2026-12-06): the linear and element-wise operators of Vidur's
    Llama-2-70B A100 profile (not calibrated on) at TP 1, 2, 4, 8 within 10.4, 9.2, 8.3, 8.3 % MAPE, and of
    the H100 one at TP 1, 2 (not calibrated on) and 4 (the calibration profile) 7.9, 8.7, 9.3 %.
    Asserted: each below 12 %, and the median ratio within 10 % of 1 (a wrong per-GPU split of the
    weights or the heads would put a TP size far off)."""

    from fluidq.validate.roofline import vidur_tensor_parallel

    rows = vidur_tensor_parallel(DATA)
    assert [r["tensor_parallel_size"] for r in rows] == [1, 2, 4, 8]
    for r in rows:
        assert r["rows"] > 200 and r["mape"] < 0.12 and abs(r["median_ratio"] - 1) < 0.1, r
    h100 = vidur_tensor_parallel(DATA, gpu="h100")
    assert [r["tensor_parallel_size"] for r in h100] == [1, 2, 4, 8]
    for r in h100[:3]:  # TP 1 and 2 held out; TP 4 is a calibration profile (in sample); TP 8 is the xfail below
        assert r["rows"] > 200 and r["mape"] < 0.12 and abs(r["median_ratio"] - 1) < 0.1, r
    with pytest.raises(ParameterError, match="gpu"):
        vidur_tensor_parallel(DATA, gpu="a40")


@pytest.mark.xfail(strict=True, reason="measured 2026-12-06: Vidur's H100 Llama-2-70B operators at TP 8 (not "
                   "calibrated on) 15.3 % MAPE, median roofline / measured 0.881: the narrow TP-8 shards reach less "
                   "of the roofline than the TP-1 to TP-4 ones (7.9-9.3 %); on the A100 TP 8 is 8.3 %")
def test_tensor_parallel_split_on_vidur_llama2_70b_h100_tp8():

    from fluidq.validate.roofline import vidur_tensor_parallel

    r = vidur_tensor_parallel(DATA, gpu="h100")[3]
    assert r["mape"] < 0.12 and abs(r["median_ratio"] - 1) < 0.1, r


def test_all_reduce_scope_leaves_the_rest():
    """``all_reduce=False`` (Vidur's per-GPU operator tables, which do not time the collectives) drops the
    all-reduces of a tensor-parallel iteration and nothing else."""
    full = roofline("Llama-2-70B", "H100", 4)
    bare = roofline("Llama-2-70B", "H100", 4, all_reduce=False)
    b = np.array([1.0, 256.0, 2048.0])
    parts = full.breakdown(b, 4096.0)
    assert "all_reduce" not in bare.breakdown(b, 4096.0) and np.all(parts["all_reduce"] > 0)
    assert np.allclose(bare(b, 4096.0), full(b, 4096.0) - parts["all_reduce"])
    assert bare.to_dict()["all_reduce"] is False


def test_sync_latency_per_ring_step():
    """The calibrated sync cost is per step of the ring, ``2 (tp - 1)`` steps per all-reduce (0 at TP 1), and
    is ``sync_step_mb`` megabytes at the GPU's link bandwidth: 1.5 times longer on the A100's NVLink 3
    (300 GB/s) than on the H100's NVLink 4 (450 GB/s).  ``sync_step_us`` given overrides it; ``sync_us``
    given is a per-all-reduce constant whatever tp (the old meaning)."""
    step = 1e3 * CALIBRATED["sync_step_mb"] / 450.0  # H100 NVLink 4, GB/s = 1e3 bytes per microsecond
    for tp, want in ((1, 0.0), (2, 2 * step), (4, 6 * step), (8, 14 * step)):
        assert roofline("Llama-3.1-70B", "H100", tp).sync_us == pytest.approx(want)
    a100 = roofline("Llama-3.1-70B", "A100", 8)
    assert a100.sync_step_us == pytest.approx(1.5 * roofline("Llama-3.1-70B", "H100", 8).sync_step_us)
    assert roofline("Llama-3.1-70B", "H100", 4, sync_us=50.0).sync_us == 50.0
    assert roofline("Llama-3.1-70B", "H100", 4, sync_step_us=1.0).sync_us == 6.0
    assert roofline("Llama-3.1-70B", "A100", 4, sync_step_mb=0.6).sync_us == pytest.approx(6 * 2.0)
    with pytest.raises(ParameterError, match="sync_step_us"):
        roofline("Llama-3.1-8B", "H100", sync_step_us=-1)
    with pytest.raises(ParameterError, match="sync_step_mb"):
        roofline("Llama-3.1-8B", "H100", sync_step_mb=-1)


def test_attention_efficiency_scales_the_kv_read_alone():
    """``attention_efficiency`` (default: the memory efficiency) is the fraction of peak bandwidth the KV
    reads reach; it leaves the weights' reads alone (Splitwise's stack: ~5 % of the weights' efficiency)."""
    rf = roofline("Llama-3.1-8B", "A100")
    assert rf.attention_efficiency == rf.memory_efficiency
    slow = roofline("Llama-3.1-8B", "A100", attention_efficiency=rf.memory_efficiency / 4)
    kv = 64 * 1024
    assert slow.attention_s(kv) == pytest.approx(4 * rf.attention_s(kv))
    assert slow.breakdown(64, kv)["linear"] == rf.breakdown(64, kv)["linear"]
    with pytest.raises(ParameterError, match="attention_efficiency"):
        roofline("Llama-3.1-8B", "A100", attention_efficiency=1.5)


def test_allreduce_against_vidur_measurements():
    """Measured (docs/reference/roofline.md, 2026-12-06): Vidur's two-worker A100 NVLink all-reduces up to
    32 MiB, median model / measured 0.71 (MAPE 33 %) with the sync cost per ring step, 2.53 (157 %) with the
    TP-8 cost charged per all-reduce.  Asserted: per step within a factor 1.6 of the measurements and
    closer than per all-reduce."""

    from fluidq.validate.roofline import allreduce_check

    r = allreduce_check(DATA)["workers"][2]
    assert r["rows"] > 500
    assert 1 / 1.6 < r["per_step"]["median_ratio"] < 1.6 and r["per_step"]["mape"] < 0.5, r
    assert r["per_step"]["mape"] < r["per_all_reduce"]["mape"], r
