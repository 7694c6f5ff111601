"""vLLM's names for the engine and workload flags (issue 17): each sets the same option as the paper's
name, so the JSON answers are the same; ``--help`` lists both; an error names the spelling typed."""
import json

import pytest

from fluidq.cli.common import VLLM_ALIASES
from fluidq.testing.cli import run_cli


run = run_cli


def _strip_wall(obj):
    """The JSON without the wall-clock times (they differ between two runs)."""
    if isinstance(obj, dict):
        return {k: _strip_wall(v) for k, v in obj.items() if k not in ("wall_s", "seconds")}
    if isinstance(obj, list):
        return [_strip_wall(v) for v in obj]
    return obj


def answer(argv, capsys):
    rc, out, err = run([*argv, "--json"], capsys)
    assert rc == 0, (argv, err)
    return _strip_wall(json.loads(out))


PAPER = ["--b-max", "256", "--k-max", "16", "--prompt", "64", "--output", "32", "--rate", "3"]
VLLM = ["--max-num-batched-tokens", "256", "--max-num-seqs", "16", "--input-len", "64", "--output-len", "32",
        "--request-rate", "3"]


@pytest.mark.parametrize("command", [["capacity"], ["check"], ["region"], ["check", "--engines", "2"]])
def test_aliases_give_the_same_json(command, capsys):
    assert answer([*command, *VLLM], capsys) == answer([*command, *PAPER], capsys)


def test_simulate_aliases_give_the_same_json(capsys):
    common = ["simulate", "--horizon", "5", "--policy", "sarathi", "--no-progress"]
    a = answer([*common, *PAPER, "--requests", "20"], capsys)
    b = answer([*common, *VLLM, "--num-prompts", "20"], capsys)
    assert a == b and a["n_requests"] == 20


@pytest.mark.parametrize("vllm, paper", sorted(VLLM_ALIASES.items()))
def test_each_alias_alone_gives_the_same_json(vllm, paper, capsys):
    value = {"--b-max": "300", "--k-max": "8", "--prompt": "70", "--output": "40", "--rate": "2",
             "--requests": "10"}[paper]
    cmd = ["simulate", "--horizon", "3", "--policy", "sarathi", "--no-progress"] if paper == "--requests" \
        else ["capacity", "--rate", "2"] if paper != "--rate" else ["capacity"]
    assert answer([*cmd, vllm, value], capsys) == answer([*cmd, paper, value], capsys)


@pytest.mark.parametrize("command", ["capacity", "check", "simulate", "region", "latency", "dtmc"])
def test_help_lists_both_names(command, capsys):
    rc, out, _ = run([command, "--help"], capsys)
    assert rc == 0
    for vllm, paper in VLLM_ALIASES.items():
        if paper == "--requests" and command != "simulate":
            continue
        if paper == "--rate" and command == "latency":
            continue
        assert f"{paper} " in out and f"{vllm} " in out, (command, vllm)
        # listed beside each other: on the same line of the option list
        assert any(paper in line and vllm in line for line in out.splitlines()), (command, vllm)


def test_latency_help_does_not_list_the_refused_rate(capsys):
    rc, out, _ = run(["latency", "--help"], capsys)
    assert rc == 0 and "--rate RATE" not in out and "--request-rate" not in out
    rc, _, err = run(["latency", "--request-rate", "3"], capsys)
    assert rc == 2 and "--request-rate" in err and "--loads" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, typed, other", [
    (["capacity", "--max-num-seqs", "0"], "--max-num-seqs", "--k-max"),
    (["capacity", "--max-num-batched-tokens", "0"], "--max-num-batched-tokens", "--b-max"),
    (["capacity", "--input-len", "1.5"], "--input-len", "--prompt"),
    (["check", "--request-rate", "-1"], "--request-rate", "--rate"),
    (["check", "--load", "0.5", "--request-rate", "1"], "--request-rate", "--rate"),
    (["capacity", "--k-max", "0"], "--k-max", "--max-num-seqs"),
])
def test_errors_name_the_flag_typed(argv, typed, other, capsys):
    rc, out, err = run(argv, capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert typed in err and other not in err, err


def test_argparse_errors_name_both_spellings(capsys):
    rc, _, err = run(["capacity", "--max-num-seqs", "x"], capsys)
    assert rc == 2 and "--k-max/--max-num-seqs" in err and err.count("\n") == 1
