"""``fluidq validate --run DIR``: any run folder in LLMServingSim's layout validated from the folder alone,
with no case file and no expected answer (issue 16 item 5), in the same row schema as the suite."""
import json
import shutil

import pytest

from fluidq.errors import FluidqError
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.validate import validate, validation_dir

RUNS = validation_dir() / "data" / "llmservingsim"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    # a copy outside the repository, as a user's own run would be (no case file names it)
    dst = tmp_path_factory.mktemp("runs") / "my-run"
    shutil.copytree(RUNS / "RTXPRO6000_Llama-3.1-8B", dst)
    return dst


@pytest.fixture(scope="module")
def result(folder, tmp_path_factory):
    """One validation of the folder (with its report), shared by the tests that only read it."""
    return validate(tmp_path_factory.mktemp("report") / "v", run=folder)


def test_a_run_folder_is_validated_like_a_case(folder, tmp_path, capsys):
    rc, out, err = run_cli(["validate", "--run", str(folder), "--out", str(tmp_path / "v"), "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    rows = {r["quantity"]: r for r in doc["rows"]}
    cap = rows["capacity (served tokens/s, steady state)"]
    assert set(cap) >= {"case", "quantity", "predicted", "measured", "unit", "error_pct", "status"}
    assert cap["case"] == "run-my-run" and abs(cap["error_pct"]) < 10
    assert rows["binding limit"]["measured"] == rows["binding limit"]["predicted"] == "k_max"
    # the KV cache this run does not record is the memory planner's estimate, said so
    assert "memory planner" in rows["binding limit"]["note"]
    assert any("latency" in q for q in rows)
    assert (tmp_path / "v" / "validation.md").is_file()


def test_a_model_the_table_lacks_needs_its_config(folder, tmp_path):
    odd = tmp_path / "odd"
    shutil.copytree(folder, odd)
    meta = (odd / "profile_meta.yaml").read_text().replace("meta-llama/Llama-3.1-8B", "acme/Unknown-9B")
    (odd / "profile_meta.yaml").write_text(meta)
    with pytest.raises(FluidqError, match="model-config"):
        validate(run=odd)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
                               "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                               "vocab_size": 128256, "torch_dtype": "bfloat16", "max_position_embeddings": 131072}))
    # the run served meta-llama/Llama-3.1-8B, the profiles name acme/Unknown-9B: the user says they are one model
    # (refused without it since 2026-12-07, rev-indep #5: tests/validation/test_profile_folder_identity.py)
    with pytest.raises(FluidqError, match="--served-model-is-profiled"):
        validate(run=odd, model_config=cfg)
    res = validate(run=odd, model_config=cfg, served_model_is_profiled=True)
    assert any(r.quantity.startswith("capacity") and r.status == "pass" for r in res.rows)


@pytest.mark.parametrize("argv,word", [(["--run", "/no/such/run"], "--run"),
                                       (["--model-config", "x.json"], "--model-config"),
                                       (["--run", ".", "--fast"], "--run")])
def test_cli_refusals(argv, word, tmp_path, capsys):
    assert_one_line(["validate", *argv, "--out", str(tmp_path / "v")], capsys, word)


def test_a_tensor_parallel_run_is_refused_saying_why(folder, tmp_path):
    tp = tmp_path / "tp2"
    shutil.copytree(folder, tp)
    meta = json.loads((tp / "vllm_meta.json").read_text())
    meta["engine_kwargs"]["tensor_parallel_size"] = 2
    (tp / "vllm_meta.json").write_text(json.dumps(meta))
    # with a link (the copied peer_sim_config.json) the TP2 profiles are needed, named
    with pytest.raises(FluidqError, match="profile_tp2_dense.csv"):
        validate(run=tp)
    # without any communication model: refused, saying what to give
    bare = tmp_path / "tp2-no-link"
    shutil.copytree(tp, bare)
    (bare / "peer_sim_config.json").unlink()
    with pytest.raises(FluidqError, match="tensor_parallel_size = 2.*communicate.*link_bw"):
        validate(run=bare)


def test_the_case_figure_is_drawn_by_the_case_result(result, tmp_path):
    # the serving case's figure is CaseResult.plot (fluidq.plotting.validation draws it): the report
    # writes it next to validation.md, and the returned result can draw it again
    from fluidq.errors import ParameterError
    from fluidq.validate.cases import CaseResult

    (cr,) = result.cases
    (fig,) = cr.figures
    assert open(fig, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    again = cr.plot(path=tmp_path / "again.png")
    assert open(again, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ParameterError, match="case="):
        CaseResult(case=cr.case, rows=()).plot(path=tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


def test_a_run_reports_all_15_latency_metrics_as_rows(folder, result, tmp_path):
    # issue 16 item 5: the 15 latency metrics in the row schema, each against the peer's error when the folder
    # has the peer's summary; without it the mean |error| is reported with no target
    lat = [r for r in result.rows if r.quantity.endswith("(replayed arrivals)")]
    assert len(lat) == 15 and all(r.unit == "ms" and r.error_pct is not None for r in lat)
    assert {r.status for r in lat} <= {"pass", "miss"}
    means = {"TTFT Mean (replayed arrivals)", "Latency Mean (replayed arrivals)"}
    assert all("peer" in r.target for r in lat if r.quantity not in means)
    # the means: issue 16's bar for runs outside the repository (within 5 %), with or without the peer
    for r in lat:
        if r.quantity in means:
            assert r.target.startswith("within ±5 %") and "peer's error" in r.note
            assert r.status == ("pass" if abs(r.error_pct) <= 5 else "miss")
    bare = tmp_path / "no-peer"
    shutil.copytree(folder, bare)
    (bare / "peer_sim_vs_vllm_summary.txt").unlink()
    res2 = validate(run=bare)
    lat2 = [r for r in res2.rows if r.quantity.endswith("(replayed arrivals)")]
    assert len(lat2) == 15 and {r.status for r in lat2 if r.quantity not in means} == {"info"}
    assert [r.status for r in lat2 if r.quantity in means] == [r.status for r in lat if r.quantity in means]
    (mae,) = [r for r in res2.rows if r.quantity.startswith("mean abs. error")]
    assert mae.status == "info" and mae.measured is None
    assert mae.predicted == pytest.approx(sum(abs(r.error_pct) for r in lat2) / 15)
    # the same replay either way
    assert [r.predicted for r in lat] == [r.predicted for r in lat2]


def test_a_capacity_row_says_what_its_interval_resolves(result):
    cap = next(r for r in result.rows if r.quantity == "capacity (served tokens/s, steady state)")
    if cap.measured_ci is not None:
        assert "the prediction lies" in cap.note and "95 % CI (half-width ±" in cap.note
    else:  # too few ticks for their correlation: no interval, and the row says so rather than resolving nothing
        assert "no 95 % interval" in cap.note and "the prediction lies" not in cap.note
