"""--prompt + --output beyond the model's context is refused; an error about the KV cache the user did not
give names vLLM's memory planner's estimate, not --kv-capacity (new-user review, inputs item 6).

Before: ``--prompt 100000`` on CodeLlama-34B (max_position_embeddings 16,384) was not flagged, and the error
named ``--kv-capacity=40640`` -- the planner's estimate, a flag the user never gave.
"""
from pathlib import Path

import pytest

from cli_err import cli_error
from fluidq.cli import main

LSS = Path(__file__).resolve().parents[2] / "validation" / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B"


_err = cli_error  # tests/cli/cli_err.py


@pytest.mark.parametrize("command", [
    ["check", "--load", "0.5"], ["capacity"], ["simulate", "--load", "0.5"], ["region"],
])
def test_a_prompt_beyond_the_context_is_refused_naming_the_limit(command, capsys):
    err = _err(command + ["--gpu", "A100-80GB", "--model", "CodeLlama-34B", "--prompt", "100000"], capsys)
    assert "--prompt=100000" in err and "16,384" in err and "CodeLlama-34B's context" in err, err
    assert "100,100 tokens" in err and "max_position_embeddings" in err, err
    assert "--kv-capacity" not in err.split("--max-model-len")[0], err


def test_the_output_counts_too_and_a_fitting_request_passes(capsys):
    err = _err(["capacity", "--gpu", "A100-80GB", "--model", "CodeLlama-34B", "--prompt", "16000", "--output",
                "500"], capsys)
    assert "--prompt + --output at most 16,384" in err and "16,500 tokens" in err, err
    assert main(["capacity", "--gpu", "A100-80GB", "--model", "CodeLlama-34B", "--prompt", "16000",
                 "--output", "384", "--json"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("command", [["check", "--rate", "0.1"], ["capacity"], ["simulate", "--load", "0.5"]])
def test_a_planner_estimate_too_small_is_named_as_the_estimate(command, capsys):
    # Llama-3.1-70B (131,072 context) on two A100s: the request fits the context, not the planned cache
    err = _err(command + ["--gpu", "A100-80GB", "--model", "Llama-3.1-70B", "--tensor-parallel-size", "2",
                          "--prompt", "100000"], capsys)
    assert "--kv-capacity=" not in err, err
    assert "vLLM's memory planner's estimate" in err and "no --kv-capacity was given" in err, err
    assert "2 x A100" in err and "--gpu-memory-utilization 0.9" in err, err


def test_a_given_kv_capacity_is_still_named_by_its_flag(capsys):
    err = _err(["check", "--rate", "0.1", "--gpu", "A100-80GB", "--model", "Llama-3.1-70B",
                "--tensor-parallel-size", "2", "--prompt", "100000", "--kv-capacity", "50000"], capsys)
    assert "--kv-capacity=50000" in err and "estimate" not in err, err


@pytest.mark.parametrize("command", [["check", "--load", "0.5"], ["capacity"]])
def test_profile_dir_context_and_estimate(command, capsys):
    err = _err(command + ["--profile-dir", str(LSS), "--prompt", "200000"], capsys)
    assert "131,072" in err and "Llama-3.1-8B's context" in err, err
    err = _err(command + ["--profile-dir", str(LSS), "--prompt", "60000"], capsys)
    assert "--kv-capacity=" not in err and "vLLM's memory planner's estimate" in err, err
    assert "peer_sim_config.json" in err, err


@pytest.mark.parametrize("command", [["capacity"], ["check", "--load", "0.5", "--method", "analytic"]])
def test_a_trace_with_a_request_beyond_the_context_is_refused(command, tmp_path, capsys):
    """Second reading: a trace row of 200,000 + 10 tokens on Llama-3.1-8B (context 131,072) was accepted
    (capacity 0.09 req/s) while the same lengths as --prompt/--output were refused."""
    rows = ["arrival_s,prompt_tokens,output_tokens", "0.0,500,100", "0.5,200000,10", "1.0,300,50", "1.5,131000,100"]
    bad = tmp_path / "huge.csv"
    bad.write_text("\n".join(rows) + "\n")
    err = _err(command + ["--gpu", "H100", "--model", "Llama-3.1-8B", "--trace", str(bad)], capsys)
    assert "--trace=" in err and "131,072" in err and "2 of its 4 requests are longer" in err, err
    assert "request 2, has 200,000 + 10 = 200,010 tokens" in err, err
    good = tmp_path / "ok.csv"
    good.write_text("\n".join(rows[:2] + rows[3:4]) + "\n")
    assert main(command + ["--gpu", "H100", "--model", "Llama-3.1-8B", "--trace", str(good), "--json"]) in (0, None)
    capsys.readouterr()
