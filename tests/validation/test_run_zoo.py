"""``fluidq validate --run`` on more run folders not in the repository (issue 16 items 5 and 7; the runzoo list):
line endings and byte-order marks of other systems, requests written out of order, aborted requests, extra and
missing timeseries columns, engine arguments another vLLM version does not write, runs with no overload or too
short for a steady state, missing files one at a time, and the window and interval every measured number carries.

Each folder is built in tmp_path from a shipped run (``run_variants.py``); each is read with its window and
interval or refused naming the file and the field -- never a traceback, a NaN in a note, or a number with no window.
"""
import json
import math

import numpy as np
import pytest

import run_variants as rv
from fluidq.errors import DataError, FluidqError
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.validate.cases import _serving_run, case_for_run
from fluidq.validate.runs import latency_metrics, measured_regimes, read_run

CAP = "capacity (served tokens/s, steady state)"


def _rows(folder):
    case, data = case_for_run(folder)
    return _serving_run(case, data, {"fast": True}).rows


# ------------------------------------------------------------------------------ read the same run as the original
@pytest.mark.parametrize("name", ["crlf", "bom", "extra-ts-columns"])
def test_other_line_endings_marks_and_columns_read_the_same_run(name, tmp_path):
    base = read_run(rv.make("llama-4090", tmp_path / "a"))
    run = read_run(rv.make(name, tmp_path / name))
    np.testing.assert_array_equal(run.input_tokens, base.input_tokens)
    np.testing.assert_array_equal(run.first_token_s, base.first_token_s)
    for k in ("t", "prompt_throughput", "gen_throughput", "running", "waiting", "kv_cache_pct"):
        np.testing.assert_array_equal(run.timeseries[k], base.timeseries[k])
    assert run.kv_capacity_tokens == base.kv_capacity_tokens and run.max_num_seqs == base.max_num_seqs
    assert measured_regimes(run)["steady"]["tokens_per_s"] == measured_regimes(base)["steady"]["tokens_per_s"]
    case, _ = case_for_run(tmp_path / name)
    assert case.spec["_facts"].name == "Llama-3.1-8B"


def test_requests_written_out_of_order_are_read_in_arrival_order(tmp_path):
    base = read_run(rv.make("llama-pro6000", tmp_path / "a"))
    run = read_run(rv.make("lines-shuffled", tmp_path / "s"))
    np.testing.assert_array_equal(run.arrival_s, base.arrival_s)
    np.testing.assert_array_equal(run.request_index, base.request_index)
    assert latency_metrics(run.ttft_s, run.latency_s, run.tpot_s) == latency_metrics(base.ttft_s, base.latency_s,
                                                                                     base.tpot_s)


def test_aborted_requests_are_left_out_and_counted(tmp_path):
    # a first token but no last one, no first token, never scheduled: each a request with a null stamp
    run = read_run(rv.make("aborted", tmp_path / "a"))
    assert run.dropped == {"failed": 3} and len(run) == 297
    assert np.all(np.isfinite(run.latency_s)) and np.all(run.ttft_s >= 0)


# ------------------------------------------------------------------ refused naming the file and the field, one line
REFUSED = {
    "no-waiting-column": ("vllm_timeseries.csv: no column 'waiting'", "num_requests_waiting"),
    "no-max-num-seqs": ("vllm_meta.json records no max_num_seqs", "engine_kwargs.max_num_seqs"),
    "no-budget": ("vllm_meta.json records no max_num_batched_tokens",),
    "meta-renamed": ("vllm_meta.json records no max_num_seqs",),
    "no-meta": ("no vllm_meta.json or meta.json",),
    "no-requests": ("no vllm_requests.jsonl or requests.jsonl",),
    "no-dense": ("no profile_tp1_dense.csv",),
    "no-attention": ("no profile_tp1_attention.csv",),
    "no-moe": ("mixture of experts", "no profile_tp1_moe.csv"),
    "tp4-no-link": ("tensor_parallel_size = 4", "peer_sim_config.json", "link_bw"),
    "moe-unknown-operator": ("profile_tp1_dense.csv: unknown operator(s) 'shared_expert_gate'",),
    # the KV gauge's fraction under the percentage's name: the KV-bound RTX 4090 run was read as token-budget bound
    "kv-fraction-as-pct": ("vllm_timeseries.csv: the KV-use column (kv_cache_pct, a percentage) tops at 1",
                           "kv_cache_usage", "drop the column (KV use is then rebuilt from the requests"),
    # every request twice: it was read as 600 requests, a benchmark twice as heavy as the one measured
    "duplicated-lines": ("vllm_requests.jsonl, line 301: request_id \"bench-0\" again (first on line 1)",),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_folder_that_cannot_be_validated_is_one_line_naming_what(name, tmp_path, capsys):
    folder = rv.make(name, tmp_path / name)
    assert_one_line(["validate", "--run", str(folder), "--out", str(tmp_path / "v")], capsys, *REFUSED[name])


@pytest.mark.parametrize("where", ["empty", "file"])
def test_a_dir_that_is_no_run_is_refused_before_the_report_folder_is_made(where, tmp_path, capsys):
    target = tmp_path / where
    if where == "empty":
        target.mkdir()
    else:
        target.write_text("{}")
    assert_one_line(["validate", "--run", str(target), "--out", str(tmp_path / "v")], capsys, "--run", str(target))
    assert not (tmp_path / "v").exists()


def test_an_out_that_cannot_be_a_folder_is_refused_naming_out(tmp_path, capsys):
    folder = rv.make("llama-pro6000", tmp_path / "r")
    (tmp_path / "f").write_text("x")
    assert_one_line(["validate", "--run", str(folder), "--out", str(tmp_path / "f" / "sub")], capsys, "--out")


# ------------------------------------------------------------- a vLLM option not recorded: the version's default
def test_prefix_caching_not_recorded_is_the_versions_default_and_said(tmp_path):
    # the RTX PRO 6000 runs record no enable_prefix_caching; their vLLM 0.19 (the V1 engine) turns it on for a
    # generative model, so the replay must too (it was replayed off: a preempted request recomputed its whole
    # prompt where vLLM reuses its cached blocks); a recorded value wins, and a V0-era version's default is off
    folder = rv.make("llama-pro6000", tmp_path / "p")
    run = read_run(folder)
    assert run.prefix_caching is True and "0.19's default" in run.prefix_caching_source
    m = rv.meta(folder)
    m["vllm_version"] = "0.6.3"
    rv.set_meta(folder, m)
    old = read_run(folder)
    assert old.prefix_caching is False and "0.6's default" in old.prefix_caching_source
    m.pop("vllm_version")
    rv.set_meta(folder, m)
    r = read_run(folder)
    assert r.prefix_caching is False and "no vllm_version" in r.prefix_caching_source
    rv.edit_meta(folder, enable_prefix_caching=False)
    r = read_run(folder)
    assert r.prefix_caching is False and "recorded" in r.prefix_caching_source
    recorded = read_run(rv.make("llama-4090", tmp_path / "r"))
    assert recorded.prefix_caching is True and recorded.prefix_caching_source == "recorded in vllm_meta.json"


def test_the_prefix_caching_default_reaches_the_report(tmp_path):
    rows = {r.quantity: r for r in _rows(rv.make("llama-pro6000", tmp_path / "p"))}
    assert "prefix caching on (not recorded: vLLM 0.19's default" in \
        rows["capacity (fluidq.simulate of the benchmark, steady state)"].note


# ------------------------------------------------------ every measured number: its window and its interval (item 7)
def _finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


@pytest.mark.parametrize("name", ["llama-4090", "qwen-dp2-ep"])
def test_every_measured_number_carries_its_window_and_interval(name, tmp_path, capsys):
    folder = rv.make(name, tmp_path / name)
    rc, out, err = run_cli(["validate", "--run", str(folder), "--out", str(tmp_path / "v"), "--json"], capsys)
    assert rc == 0, err
    rows = json.loads(out)["rows"]
    measured = [r for r in rows if _finite(r["measured"]) and not r["unit"].startswith("%")]
    assert len(measured) >= 20
    for r in measured:
        assert r["measured_window"] and " s of the run" in r["measured_window"], r
        if r["unit"] == "ms":  # a latency metric: no interval one run can give, and the row says why
            assert r["measured_ci"] is None and "no measured 95 % interval" in r["note"], r
            continue
        if r["measured_ci"] is None:  # ticks too correlated for their number: no interval, said
            assert "no 95 % interval" in r["note"], r
            continue
        lo, hi = r["measured_ci"]
        assert lo <= r["measured"] <= hi, r  # a batch-means interval is centred on the measured mean
    by = {r["quantity"]: r for r in rows}
    cap = by[CAP]
    assert cap["measured_window"].startswith(f"steady state under the binding limit ({by['binding limit']['measured']})")
    reg = measured_regimes(read_run(folder))["steady"]
    if cap["measured_ci"] is not None:
        assert cap["measured_ci"] == pytest.approx(list(reg["ci"]), rel=1e-12)
    else:
        assert not np.all(np.isfinite(reg["ci"]))
    assert f"ticks {reg['window_s'][0]:g}-{reg['window_s'][1]:g} s" in cap["measured_window"]
    assert by["binding limit"]["measured_window"] == cap["measured_window"]
    # the report says the same to a reader: one line per measured number with its interval and window
    md = (tmp_path / "v" / "validation.md").read_text()
    assert "| quantity | measured | 95 % interval | read over |" in md
    assert sum(line.startswith("| TTFT ") and "requests measured, queued at" in line for line in md.splitlines()) == 5


# ------------------------------------------------------------------- no overload, the ramp alone, a tiny run
@pytest.mark.parametrize("name", ["no-overload", "tiny-10", "ramp-only"])
def test_a_run_with_no_steady_state_says_so_and_invents_no_number(name, tmp_path):
    rows = _rows(rv.make(name, tmp_path / name))
    by = {r.quantity: r for r in rows}
    assert by[CAP].status == "skip" and by[CAP].measured is None and ("no steady state" in by[CAP].note
                                                                      or "never saturated" in by[CAP].note)
    assert by["binding limit"].status == "skip"
    for r in rows:
        assert "nan" not in r.note.lower().replace("nanosecond", ""), (r.quantity, r.note)
        if r.unit.startswith("%"):  # fluidq's error against the peer's: no measurement of the run
            continue
        if r.measured is None or isinstance(r.measured, str):
            assert r.measured_ci is None, r
        else:  # a measured number: finite, with its window
            assert _finite(r.measured) and r.measured_window, r
    for q in ("requests resident at saturation (N)", "token backlog growth while arriving",
              "requests waiting: growth while arriving"):
        if name != "ramp-only":
            assert by[q].measured is None and "no measured number" in by[q].note, by[q]


def test_a_run_folder_missing_nothing_but_its_peer_files_still_validates(tmp_path):
    # the peer's summary and config are optional: the KV cache is recorded, the GPU memory is in vllm_meta.json
    rows = {r.quantity: r for r in _rows(rv.make("no-peer-files", tmp_path / "n"))}
    assert rows[CAP].status in ("pass", "miss") and rows[CAP].measured_window


# ---------------------------------------------------------------- a link table that is there but not usable
@pytest.mark.parametrize("doc,words", [
    ({"link_bw": 16, "link_latency": "slow"}, ("peer_sim_config.json: link_latency = \"slow\"", "ns >= 0")),
    ({"link_bw": 16, "link_latency": {}}, ("peer_sim_config.json: link_latency = {}",)),
    ({"link_bw": "fast", "link_latency": 1000}, ("peer_sim_config.json: link_bw = \"fast\"", "GB/s > 0")),
    ({"link_bw": -1, "link_latency": 1000}, ("peer_sim_config.json: link_bw = -1",)),
    ({"link_bw": 16}, ("peer_sim_config.json: no 'link_latency' entry",)),
])
def test_a_tensor_parallel_run_with_a_bad_link_table_is_refused_naming_the_field(doc, words, tmp_path, capsys):
    # a latency that is not a number was an internal error (float("slow")), a bad bandwidth a message naming
    # bandwidth_gbps but not the file
    folder = rv.make("tp4", tmp_path / "tp4")
    (folder / "peer_sim_config.json").write_text(json.dumps(doc))
    assert_one_line(["validate", "--run", str(folder), "--out", str(tmp_path / "v")], capsys, *words)
    assert not (tmp_path / "v").exists()


def test_profile_meta_with_a_byte_order_mark_and_comments_names_its_model(tmp_path, capsys):
    # a profile_meta.yaml saved with a BOM, its model on the first line, with a trailing comment: the model was
    # read as no model / "meta-llama/Llama-3.1-8B  # ..." and the folder refused as a model fluidq does not know
    folder = rv.make("llama-pro6000", tmp_path / "y")
    p = folder / "profile_meta.yaml"
    lines = [x for x in p.read_text().splitlines() if not x.startswith("model:")]
    p.write_bytes(b"\xef\xbb\xbf" + ("model: meta-llama/Llama-3.1-8B  # the served model\r\n"
                                     + "\r\n".join(lines) + "\r\n").encode())
    case, _ = case_for_run(folder)
    assert case.spec["_facts"].name == "Llama-3.1-8B"
    rc, out, err = run_cli(["capacity", "--profile-dir", str(folder), "--prompt", "500", "--output", "200"], capsys)
    assert rc == 0 and "Llama-3.1-8B" in out, err
