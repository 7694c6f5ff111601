"""A deployment's capacity from its operator-profile folder alone (issue 16 item 6): the same answer the
validation suite scores for the run measured on that folder's GPU, given the run's lengths and vLLM
options; the KV capacity from vLLM's memory planner when not given; TP > 1 refused with the reason."""
import json

import numpy as np
import pytest

from fluidq.errors import FluidqError
from fluidq.validate import validation_dir
from fluidq.validate.cases import _n_layers, load_cases
from fluidq.validate.deployment import predict_deployment

FOLDER = validation_dir() / "data" / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B"


@pytest.fixture(scope="module")
def run():
    from fluidq.validate.runs import read_run

    return read_run(FOLDER)


def test_the_same_capacity_the_validation_case_predicts(run):
    from fluidq.batchtime.operators import lss_iteration_model
    from fluidq.validate.predict import predict_capacity

    case = next(c for c in load_cases(validation_dir() / "cases") if c.name == "rtxpro6000-llama3.1-8b")
    d = predict_deployment(FOLDER, input_tokens=run.input_tokens, output_tokens=run.output_tokens,
                           max_num_seqs=run.max_num_seqs, max_num_batched_tokens=run.max_num_batched_tokens)
    assert d.inputs["n_layers"] == _n_layers(case.name, case.spec) == 32
    assert "memory planner" in d.inputs["kv_source"] and "peer_sim_config" in d.inputs["kv_source"]
    model = lss_iteration_model(FOLDER, n_layers=32)
    ref = predict_capacity(model, run.input_tokens, run.output_tokens, b_max=run.max_num_batched_tokens,
                           k_max=run.max_num_seqs, kv_capacity_tokens=d.inputs["kv_capacity_tokens"])
    assert d.tokens_per_s == pytest.approx(ref.tokens_per_s, rel=1e-12) and d.binding == ref.binding == "k_max"


def test_scalar_lengths_kv_given_and_refusals(run):
    d = predict_deployment(FOLDER, input_tokens=200, output_tokens=300, max_num_seqs=32, kv_capacity_tokens=10_000)
    assert d.inputs["kv_source"] == "given" and d.binding in ("kv_cache", "k_max", "token_budget")
    small = predict_deployment(FOLDER, input_tokens=200, output_tokens=300, max_num_seqs=256, kv_capacity_tokens=2_000)
    assert small.binding == "kv_cache" and small.tokens_per_s < d.tokens_per_s
    with pytest.raises(FluidqError, match="profile_tp2_dense.csv"):  # TP2 needs TP2 profiles
        predict_deployment(FOLDER, input_tokens=200, output_tokens=300, tensor_parallel_size=2)
    for kw, name in (({"input_tokens": 0}, "input_tokens"), ({"input_tokens": np.nan}, "input_tokens"),
                     ({"output_tokens": [1, 2, 3], "input_tokens": [1, 2]}, "output_tokens"),
                     ({"max_num_seqs": 0}, "max_num_seqs"), ({"model": "nope"}, "nope")):
        args = {"input_tokens": 200, "output_tokens": 300, **kw}
        with pytest.raises(FluidqError, match=name):
            predict_deployment(FOLDER, **args)
    with pytest.raises(FluidqError, match="profile_dir"):
        predict_deployment(FOLDER / "nope", input_tokens=1, output_tokens=1)


def test_capacity_profile_dir_on_the_command_line(capsys):
    import json

    from fluidq.testing.cli import assert_one_line, run_cli

    rc, out, err = run_cli(["capacity", "--profile-dir", str(FOLDER), "--max-num-seqs", "128", "--input-len", "300",
                            "--output-len", "200", "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    api = predict_deployment(FOLDER, input_tokens=300, output_tokens=200, max_num_seqs=128)
    assert doc["tokens_per_s"] == pytest.approx(api.tokens_per_s) and doc["binding"] == api.binding
    rc, out, err = run_cli(["capacity", "--profile-dir", str(FOLDER), "--trace", "azure-conv"], capsys)
    assert rc == 0 and "memory planner" in out and "binding" in out, err
    for argv, word in ((["--profile-dir", str(FOLDER), "--tensor-parallel-size", "2"], "profile_tp2_dense"),
                       (["--profile-dir", str(FOLDER), "--pipeline-parallel-size", "0"], "--pipeline-parallel-size=0"),
                       (["--profile-dir", str(FOLDER), "--enable-expert-parallel"], "--enable-expert-parallel"),
                       (["--profile-dir", str(FOLDER), "--pipeline-parallel-size", "2", "--link-latency-us", "3"],
                        "--link-bandwidth-gbps not given"),  # (h-fixmsg: the flag, not the parameter)
                       (["--data-parallel-size", "2"], "--profile-dir"),
                       (["--profile-dir", str(FOLDER), "--profile", "paper-codellama34b-a100"], "--profile"),
                       (["--profile-dir", str(FOLDER), "--engines", "2"], "--engines"),
                       (["--gpu-memory-gib", "24"], "--profile-dir"),
                       (["--profile-dir", str(FOLDER / "nope")], "--profile-dir")):
        assert_one_line(["capacity", *argv], capsys, word)


def test_the_cli_refuses_tensor_parallel_without_a_communication_model_naming_the_flags(tmp_path, capsys):
    # issue 16 item 2: TP2 profiles (the TP1 tables under TP2 names), no peer_sim_config.json, no link given:
    # refused, saying what to give on the command line
    import shutil

    from fluidq.testing.cli import assert_one_line, run_cli

    d = tmp_path / "tp2"
    d.mkdir()
    shutil.copy(FOLDER / "profile_meta.yaml", d)
    for f in FOLDER.glob("profile_tp1_*"):
        shutil.copy(f, d / f.name.replace("tp1", "tp2"))
    msg = assert_one_line(["capacity", "--profile-dir", str(d), "--tensor-parallel-size", "2"], capsys,
                          "--link-bandwidth-gbps")
    assert "--all-reduce-csv" in msg and "peer_sim_config.json" in msg
    # a link given: answered, and the KV cache then needs the GPU memory, named by its flag
    msg = assert_one_line(["capacity", "--profile-dir", str(d), "--tensor-parallel-size", "2",
                           "--link-bandwidth-gbps", "32", "--link-latency-us", "5"], capsys, "--gpu-memory-gib")
    rc, out, err = run_cli(["capacity", "--profile-dir", str(d), "--tensor-parallel-size", "2", "--link-bandwidth-gbps",
                            "32", "--link-latency-us", "5", "--gpu-memory-gib", "96", "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert "2 all-reduces" in doc["inputs"]["communication"] or "given link" in doc["inputs"]["communication"]
    assert doc["inputs"]["tensor_parallel_size"] == 2 and "estimate" in doc["inputs"]["kv_source"]


def test_check_and_simulate_take_a_profile_folder(capsys):
    # issue 16 item 6: `check` and `simulate` predict the same vLLM engine from the folder, no run needed
    from fluidq.testing.cli import assert_one_line, run_cli
    from fluidq.validate.deployment import deployment_engine

    eng, note = deployment_engine(FOLDER, max_num_seqs=128)
    assert eng.k_max == 128 and eng.b_max == 2048 and eng.memory.block_size == 16 and eng.prefill_emits_token
    assert "memory planner" in note and "estimate" in note
    # the same iteration model and KV cache as capacity --profile-dir
    dep = predict_deployment(FOLDER, input_tokens=300, output_tokens=200, max_num_seqs=128)
    assert eng.kv_capacity_tokens == dep.inputs["kv_capacity_tokens"]
    rc, out, err = run_cli(["check", "--profile-dir", str(FOLDER), "--max-num-seqs", "128", "--input-len", "300",
                            "--output-len", "200", "--load", "0.5", "--policy", "vllm-chunked", "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["inputs"]["engine"]["k_max"] == 128 and "memory planner" in doc["inputs"]["profile_dir"]
    assert doc["inputs"]["engine"]["kv_capacity_tokens"] == eng.kv_capacity_tokens
    rc, out, err = run_cli(["simulate", "--profile-dir", str(FOLDER), "--max-num-seqs", "128", "--input-len", "300",
                            "--output-len", "200", "--load", "0.5", "--requests", "60", "--kv-capacity", "40000",
                            "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert list(doc["policies"]) == ["vllm-chunked"]  # vLLM's scheduler by default
    assert doc["engine"]["kv_capacity_tokens"] == 40000 and doc["policies"]["vllm-chunked"]["summary"]["finished"] == 60
    for cmd in ("check", "simulate"):
        assert_one_line([cmd, "--profile-dir", str(FOLDER), "--profile", "paper-codellama34b-a100"], capsys,
                        "--profile-dir", "--profile")
        assert_one_line([cmd, "--link-latency-us", "3"], capsys, "--link-latency-us", "--profile-dir")
        assert_one_line([cmd, "--profile-dir", str(FOLDER / "nope")], capsys, "--profile-dir")
        assert_one_line([cmd, "--profile-dir", str(FOLDER), "--tensor-parallel-size", "2"], capsys, "profile_tp2_dense")
