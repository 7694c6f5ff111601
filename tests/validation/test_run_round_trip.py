"""A round trip that can fail: run folders written from fluidq's own simulator for engines of known capacity
(``synth_run.py``), validated by ``fluidq validate --run`` as a user's run would be (issue 16: deployments not in
the repository, tensor-parallel ones and a model given only by its config.json, "capacity within 10 %, TTFT and
latency means within 5 %").

The engine that writes the folder is vLLM v1's engine model on :func:`fluidq.simulate` with the folder's own
operator profiles; its *known* capacity is the served tokens/s of long overloaded runs of the same engine (three
seeds, 3,000 requests each, read over their middle half).  ``validate --run`` reads the folder with no case file:
its measured side must find the steady window of the finite benchmark and read a throughput consistent with the
known capacity; its prediction (the fluid flow balance, another code path than the simulator) must land near it;
its replay of the requests as the client sent them must give back the recorded TTFT and latency (the clock
conventions of ``queued_ts``/``arrival_time`` round-trip).  Measured 2026-12-06 (CPU only): prediction vs window
-3.1 % to -0.4 %, window vs known capacity -0.4 % to +2.4 %, latency means equal to 1e-9 %.
"""
import json

import numpy as np
import pytest

import synth_run as sr
from fluidq.models import ModelFacts, load_model
from fluidq.testing.cli import run_cli
from fluidq.validate import validate

SCHEMA = {"case", "quantity", "predicted", "measured", "unit", "error_pct", "status"}
CAP = "capacity (served tokens/s, steady state)"
MADE_UP = {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16",
           "max_position_embeddings": 131072}  # a 16-layer model of Llama-3.1-8B's layer shapes, in no table

# name: (synthesize's arguments, the limit that binds)
CASES = {
    "k_max TP1": (dict(max_num_seqs=64, kv_blocks=4000, rate_per_s=30.0), "k_max"),
    "kv_cache TP1": (dict(max_num_seqs=256, kv_blocks=1200, rate_per_s=30.0), "kv_cache"),
    "token_budget TP1": (dict(max_num_seqs=256, kv_blocks=20000, b_max=512, rate_per_s=40.0, n=1200), "token_budget"),
    # a slow link (16 GB/s, 20 us: PCIe-like) so the two all-reduces per layer cost a third of the capacity
    "k_max TP2 link": (dict(tp=2, max_num_seqs=64, kv_blocks=4000, rate_per_s=30.0, link_gbps=16,
                            link_latency_ns=20000), "k_max"),
    "kv_cache TP2 config.json": (dict(tp=2, max_num_seqs=256, kv_blocks=1500, rate_per_s=40.0, link_gbps=25,
                                      link_latency_ns=20000, config=True), "kv_cache"),
    # a mixture of experts (the Qwen3-30B-A3B profiles: 128 experts, top-8, profile_tp1_moe.csv timing the experts)
    "k_max MoE TP1": (dict(src=sr.rv.QWEN, moe=True, max_num_seqs=64, kv_blocks=4000, rate_per_s=30.0), "k_max"),
    "kv_cache MoE TP2 link": (dict(src=sr.rv.QWEN, moe=True, tp=2, max_num_seqs=256, kv_blocks=1200, rate_per_s=40.0,
                                   link_gbps=16, link_latency_ns=20000), "kv_cache"),
}


def _build(name, folder, tmp_path):
    kw, binding = CASES[name]
    kw = dict(kw)
    cfg = None
    if kw.pop("config", False):
        cfg = tmp_path / "config.json"
        cfg.write_text(json.dumps(MADE_UP))
        facts, model = ModelFacts.from_config(cfg, name="acme/Made-Up-16L"), "acme/Made-Up-16L"
    elif kw.pop("moe", False):
        facts, model = load_model("Qwen3-30B-A3B-Instruct-2507"), "Qwen/Qwen3-30B-A3B-Instruct-2507"
    else:
        facts, model = load_model("Llama-3.1-8B"), "meta-llama/Llama-3.1-8B"
    d, it_model = sr.synthesize(folder, facts=facts, model_name=model, rename_profiles=cfg is not None, **kw)
    known = sr.known_capacity(it_model, rate_per_s=kw["rate_per_s"], max_num_seqs=kw["max_num_seqs"],
                              b_max=kw.get("b_max", 2048), kv_blocks=kw["kv_blocks"])
    return d, cfg, known, binding


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name in CASES:
        tmp = tmp_path_factory.mktemp(name.replace(" ", "-").replace(".", ""))
        d, cfg, known, binding = _build(name, tmp / "run", tmp)
        out[name] = (d, cfg, known, binding, validate(run=d, model_config=cfg))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_a_synthesized_run_is_measured_and_predicted_near_its_known_capacity(runs, name):
    d, cfg, (known, spread), binding, res = runs[name]
    by = {r.quantity: r for r in res.rows}
    cap = by[CAP]
    # the measured side: a steady window under the right limit, its throughput the engine's known capacity (the
    # finite benchmark's window is a young cohort: within 5 %; measured -0.4 % to +2.4 %)
    assert by["binding limit"].measured == by["binding limit"].predicted == binding, by["binding limit"]
    assert cap.measured is not None and abs(cap.measured / known - 1) <= 0.05, (cap.measured, known, spread)
    # the prediction: the suite's 10 % target is for real runs; on fluidq's own engine the fluid formula lands
    # within 5 % of the window (measured -3.1 % to -0.4 %)
    assert cap.status == "pass" and abs(cap.error_pct) <= 5.0, cap
    assert f"TP{2 if 'TP2' in name else 1}" in cap.note
    # the replay sends the requests when the client did and reads them when the engine would have: the recorded
    # TTFT, latency and TPOT come back (the bar for runs outside the repository is 5 %; here they are equal)
    for q in ("TTFT Mean", "Latency Mean", "TPOT Mean", "TTFT P90", "Latency P99"):
        r = by[f"{q} (replayed arrivals)"]
        assert abs(r.error_pct) < 0.1, r


def test_the_link_is_in_both_sides_of_a_tensor_parallel_round_trip(runs):
    # the slow link's all-reduces cost the TP2 engine a third of its capacity: a validation that left them out
    # of its prediction (or read the run as TP1) would miss by more than 30 %, far outside the 5 % above
    tp1, tp2 = runs["k_max TP1"][2][0], runs["k_max TP2 link"][2][0]
    assert tp2 < 0.75 * tp1
    pred = {r.quantity: r for r in runs["k_max TP2 link"][4].rows}[CAP].predicted
    assert pred < 0.75 * tp1


def test_a_model_given_only_by_its_config_goes_through_the_command_line(runs, tmp_path, capsys):
    d, cfg, (known, _), binding, res = runs["kv_cache TP2 config.json"]
    rc, out, err = run_cli(["validate", "--run", str(d), "--model-config", str(cfg), "--out", str(tmp_path / "v"),
                            "--json"], capsys)
    assert rc == 0, err
    rows = json.loads(out)["rows"]
    assert rows and all(set(r) >= SCHEMA for r in rows)
    by = {r["quantity"]: r for r in rows}
    assert by[CAP]["predicted"] == pytest.approx({r.quantity: r for r in res.rows}[CAP].predicted, rel=1e-12)
    assert "TP2" in by[CAP]["note"] and by["binding limit"]["measured"] == binding
    # without the config the model is unknown: refused saying what to give
    rc, out, err = run_cli(["validate", "--run", str(d), "--out", str(tmp_path / "w")], capsys)
    assert rc == 2 and "--model-config" in err and err.count("\n") == 1


def test_the_writer_keeps_vllm_s_stamps_in_order(runs):
    from fluidq.validate.runs import read_run

    for name in CASES:
        run = read_run(runs[name][0])
        assert np.all(run.arrival_s <= run.scheduled_s) and np.all(run.scheduled_s <= run.first_token_s)
        assert np.all(run.first_token_s <= run.last_token_s) and run.sent_s is not None
        # one block size (synth_run.BLOCK_SIZE) for the engine, the KV % and the meta: a cache the engine fills
        # reads at most 100 % of the meta's blocks, and the KV-bound runs fill it (a block size written apart in
        # one of the three would read 50 % or 200 %)
        meta = json.loads((runs[name][0] / "vllm_meta.json").read_text())["kv_cache"]
        assert meta["block_size"] == sr.BLOCK_SIZE
        top = float(np.max(run.timeseries["kv_cache_pct"]))
        assert top <= 100.0 and (top >= 90.0 or CASES[name][1] != "kv_cache"), (name, top)


def test_a_token_budget_window_is_the_plateau_not_the_overshoot(runs):
    # under the token budget the cohort admitted at the end of the ramp overshoots (running peaks at 153, then
    # holds 123-147): the window is the plateau after the peak, 33 of the 46 saturated ticks (7 more are the ramp),
    # not the 3 ticks within 95 % of the peak that the rule `running >= 0.95 x max` kept (a run with fewer than 3
    # such ticks was said to have "no steady state")
    from fluidq.validate.runs import measured_regimes, read_run

    run = read_run(runs["token_budget TP1"][0])
    reg = measured_regimes(run)
    sat = int((run.timeseries["waiting"] > 0).sum())
    assert reg["binding"] == "token_budget" and reg["steady"]["ticks"] >= 0.6 * sat, (reg["steady"], sat)
    assert reg["ramp"]["ticks"] >= 3  # the prompt-heavy start is reported apart
