"""``fluidq validate --run DIR --model-config config.json`` with configs that do not match the folder's operator
profiles: refused naming what differs, never predicted from profiles of another model (a 12-layer config on the
Llama-3.1-8B profiles was scored +176 % with a TTFT error of -99.6 %; a MoE config on dense profiles was refused
as if a tensor-parallel profile were missing)."""
import json

import pytest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.testing.cli import assert_one_line
from fluidq.validate.cases import case_for_run

from hf_configs import LLAMA_8B  # tests/models/hf_configs.py
MOE = {"model_type": "mixtral", "num_hidden_layers": 16, "hidden_size": 3072, "num_attention_heads": 24,
       "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 32000, "num_local_experts": 8,
       "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}


def _config(tmp_path, doc, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _renamed(tmp_path, model="acme/Unknown-9B"):
    """The RTX PRO 6000 Llama run with its profiles and run naming a model the shipped facts lack."""
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    (d / "profile_meta.yaml").write_text((d / "profile_meta.yaml").read_text().replace("meta-llama/Llama-3.1-8B", model))
    m = rv.meta(d)
    m["model"] = m["engine_kwargs"]["model"] = model
    rv.set_meta(d, m)
    return d


def test_a_config_of_the_profiled_model_is_accepted_and_another_shape_is_refused(tmp_path):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    case, _ = case_for_run(d, model_config=_config(tmp_path, LLAMA_8B))
    assert case.spec["_facts"].n_layers == 32
    for key, value in (("num_hidden_layers", 12), ("intermediate_size", 8192), ("num_key_value_heads", 4)):
        cfg = _config(tmp_path, {**LLAMA_8B, key: value}, f"{key}.json")
        with pytest.raises(DataError, match=rf"profiles 'meta-llama/Llama-3.1-8B' but the config.json given .* has "
                                            rf"\w+ {value} \(the profiled Llama-3.1-8B: \d+\)"):
            case_for_run(d, model_config=cfg)


def test_a_model_of_experts_on_dense_profiles_is_refused_saying_so(tmp_path):
    d = _renamed(tmp_path)
    with pytest.raises(DataError, match=r"a mixture of experts \(8 experts, top-2\) but the folder has no "
                                        r"profile_tp1_moe.csv: these profiles are of a dense model"):
        case_for_run(d, model_config=_config(tmp_path, MOE))
    # a dense config on the MoE profiles of the Qwen run
    q = rv.copy_run(rv.QWEN, tmp_path / "qwen")
    (q / "profile_meta.yaml").write_text((q / "profile_meta.yaml").read_text().replace(
        "Qwen/Qwen3-30B-A3B-Instruct-2507", "acme/Other-MoE"))
    m = rv.meta(q)
    m["model"] = m["engine_kwargs"]["model"] = "acme/Other-MoE"
    rv.set_meta(q, m)
    with pytest.raises(DataError, match=r"is dense but the folder has profile_tp1_moe.csv"):
        case_for_run(q, model_config=_config(tmp_path, LLAMA_8B))


def test_the_command_line_names_the_flag_of_a_broken_config(tmp_path, capsys):
    d = _renamed(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"num_hidden_layers": 12,')
    assert_one_line(["validate", "--run", str(d), "--model-config", str(bad), "--out", str(tmp_path / "v")], capsys,
                    "--model-config", "not valid JSON")
    assert not (tmp_path / "v").exists()


def test_a_profile_folder_of_a_model_in_no_table_is_predicted_from_its_config(tmp_path, capsys):
    # `fluidq capacity/check/simulate --profile-dir DIR --model-config config.json` (it was refused: "--profile-dir
    # describes the engine itself: give it without --model-config", and the folder's own refusal said "from Python,
    # give the model's facts as model=")
    from fluidq.testing.cli import run_cli

    d = _renamed(tmp_path)  # the RTX PRO 6000 profiles, named as a model the table lacks
    common = ["--max-num-seqs", "128", "--input-len", "300", "--output-len", "200", "--json"]
    err = assert_one_line(["capacity", "--profile-dir", str(d), *common[:-1]], capsys, "--model-config")
    cfg = _config(tmp_path, LLAMA_8B)
    rc, out, err = run_cli(["capacity", "--profile-dir", str(d), "--model-config", str(cfg), *common], capsys)
    assert rc == 0, err
    mine = json.loads(out)
    # the same shapes as the shipped Llama-3.1-8B: the same answer as the shipped folder read with its table facts
    rc, out, err = run_cli(["capacity", "--profile-dir", str(rv.RUNS / rv.LLAMA_PRO), *common], capsys)
    assert rc == 0, err
    assert mine["tokens_per_s"] == pytest.approx(json.loads(out)["tokens_per_s"], rel=1e-9)
    # half the layers: a faster engine
    half = _config(tmp_path, {**LLAMA_8B, "num_hidden_layers": 16}, "half.json")
    rc, out, err = run_cli(["capacity", "--profile-dir", str(d), "--model-config", str(half), *common], capsys)
    assert rc == 0 and json.loads(out)["tokens_per_s"] > 1.3 * mine["tokens_per_s"], err
    # ... which is not the profiled model of the shipped folder: refused naming the flag and the difference
    assert_one_line(["capacity", "--profile-dir", str(rv.RUNS / rv.LLAMA_PRO), "--model-config", str(half),
                     *common[:-1]], capsys, "--model-config", "n_layers 16 (the profiled Llama-3.1-8B: 32)")
    for cmd in (["check", "--rate", "5", "--policy", "vllm-chunked"],
                ["simulate", "--rate", "5", "--horizon", "3", "--policy", "vllm-chunked"]):
        rc, out, err = run_cli([*cmd, "--profile-dir", str(d), "--model-config", str(half), "--max-num-seqs", "128"],
                               capsys)
        assert rc == 0 and "vLLM half" in out, (cmd, err)  # the engine named after the config
    # where no profile folder is read, --model-config is still refused by name
    assert_one_line(["check", "--model-config", str(cfg), "--rate", "5", "--policy", "sarathi"], capsys,
                    "--model-config", "--profile-dir")


def test_a_peer_config_without_the_gpu_memory_is_named_as_such(tmp_path):
    # a peer_sim_config.json with the link only: the planner's refusal said the folder had no such file
    from fluidq.errors import ParameterError
    from fluidq.validate.deployment import predict_deployment

    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    (d / "peer_sim_config.json").write_text(json.dumps({"link_bw": 16, "link_latency": 20000}))
    with pytest.raises(ParameterError, match=r"peer_sim_config.json states no npu_mem.mem_size"):
        predict_deployment(d, input_tokens=300, output_tokens=200)
    (d / "peer_sim_config.json").unlink()
    with pytest.raises(ParameterError, match=r"has no peer_sim_config.json stating it"):
        predict_deployment(d, input_tokens=300, output_tokens=200)
