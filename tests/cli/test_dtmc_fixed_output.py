"""``fluidq dtmc --fixed-output``: the chain of fixed outputs from the command line (the CLI made every output
geometric, so Orca's adaptive ordered chain and the finite-support chain were reachable only from Python)."""
import json

import pytest

import fluidq
from fluidq.dtmc.sizing import auto_caps
from fluidq.testing.cli import assert_one_line, run_cli

ENG = ["--c-ms", "11.28", "--a-ms", "35.47", "--b0", "128", "--b-max", "64"]
ENGINE = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=64)


def _work(rate, prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def test_orca_fixed_output_is_the_adaptive_ordered_chain(capsys):
    rc, out, _ = run_cli(["dtmc", "--policy", "orca", "--rate", "20", "--prompt", "16", "--output", "3", *ENG,
                          "--fixed-output", "--json"], capsys)
    d = json.loads(out)
    chain, res, _ = auto_caps(ENGINE, _work(20.0, 16, 3), "orca", tolerance=1e-6, max_states=500_000)
    assert rc == 0 and "adaptive" in chain.inputs and d["result"]["status"] == "stable"
    assert d["result"]["n_states"] == res.n_states
    assert d["result"]["mean_requests"] == pytest.approx(res.mean_requests, rel=1e-9)
    assert d["caps"]["how"].startswith("grown for this load") and "final caps" not in d["caps"]["how"]
    rc, out, _ = run_cli(["dtmc", "--policy", "orca", "--rate", "20", "--prompt", "16", "--output", "3", *ENG,
                          "--fixed-output"], capsys)
    assert rc == 0 and "16 / 3 tokens (fixed)" in out and "--fixed-output" in out and "geometric" not in out


def test_other_schedulers_take_fixed_outputs_with_caps(capsys):
    rc, out, _ = run_cli(["dtmc", "--policy", "sarathi", "--rate", "5", "--prompt", "16", "--output", "3", *ENG,
                          "--fixed-output", "--max-prefill", "5", "--max-decode", "10", "--json"], capsys)
    d = json.loads(out)
    res = fluidq.build_dtmc(ENGINE, _work(5.0, 16, 3), "sarathi", max_prefill=5, max_decode=10).solve()
    assert rc == 0 and d["result"]["n_states"] == res.n_states
    assert d["result"]["mean_requests"] == pytest.approx(res.mean_requests, rel=1e-9)


def test_without_the_flag_outputs_stay_geometric(capsys):
    rc, out, _ = run_cli(["dtmc", "--policy", "orca", "--rate", "5", "--prompt", "16", "--output", "3", *ENG], capsys)
    assert rc == 0 and "outputs geometric" in out


@pytest.mark.parametrize("argv,needles", [
    (["--policy", "sarathi", "--output", "3"], ["--fixed-output", "--max-prefill and --max-decode"]),
    (["--policy", "vllm", "--output", "3", "--max-prefill", "5"], ["--fixed-output", "--max-decode"]),
    (["--policy", "orca", "--output", "3", "--geometric"], ["--fixed-output", "--geometric"]),
    (["--policy", "orca", "--output", "3.5"], ["--output=3.5", "whole number"]),
])
def test_fixed_output_bad_input(capsys, argv, needles):
    assert_one_line(["dtmc", "--rate", "5", "--prompt", "16", *ENG, "--fixed-output", *argv], capsys, *needles)


def test_adaptive_rounds_are_announced_as_such(capsys):
    """A round of 100,000 states or more is announced as the adaptive chain's growth, not as a box of
    --max-prefill/--max-decode flags with the count chain's CPU estimate (which said 0.8 s for a 500,000-state
    round that took 18 s)."""
    rc, out, err = run_cli(["dtmc", "--policy", "orca", "--rate", "16.07", "--output", "4", "--fixed-output",
                            "--max-states", "110000", "--json"], capsys)
    assert rc == 0 and json.loads(out)["result"]["n_states"] <= 110_000
    assert "growing the adaptive chain to 101,440 states" in err and "GiB" in err
    assert "--max-decode" not in err and "CPU-s" not in err


@pytest.mark.parametrize("policy,advice", [("sarathi", "drop --fixed-output"),
                                           ("orca", "drop --max-prefill/--max-decode (Orca: the adaptive chain)")])
def test_too_large_fixed_output_chain_is_refused_in_flags(capsys, policy, advice):
    """The size refusal of a fixed-output chain names the flags and gives the command line's way out (it said
    'max_prefill/max_decode/output_tokens=...' and 'pass max_decode=None' / 'use a Geometric fit with
    fluidq.build_dtmc')."""
    err = assert_one_line(["dtmc", "--policy", policy, "--rate", "5", "--output", "8", "--fixed-output",
                           "--max-prefill", "20", "--max-decode", "30"], capsys,
                          "--max-prefill/--max-decode/--output=(20, 30, 8)", "--max-states 500,000", advice)
    assert "fluidq.build_dtmc" not in err and "max_decode=None" not in err


def test_an_inaccurate_answer_names_the_flags_not_the_python_caps(capsys):
    """Review: the status line said "raise max_prefill/max_decode" (Python names) on the command line."""
    rc, out, _ = run_cli(["dtmc", "--rate", "5", "--prompt", "16", "--output", "10", *ENG, "--max-prefill", "3",
                          "--max-decode", "5"], capsys)
    status = next(line for line in out.splitlines() if line.startswith("status"))
    assert rc == 0 and "inaccurate" in status and "raise --max-prefill/--max-decode" in status, status
    assert "max_prefill" not in status and "max_decode" not in status and "--max-prefill 3, --max-decode 5" in status
    rc, out, _ = run_cli(["dtmc", "--rate", "5", "--prompt", "16", "--output", "10", *ENG, "--max-prefill", "3",
                          "--max-decode", "5", "--json"], capsys)
    assert "raise max_prefill/max_decode" in json.loads(out)["result"]["reason"]  # the JSON keeps the library's
    # the adaptive chain has no box to raise: its growth is bounded by --max-states
    rc, out, _ = run_cli(["dtmc", "--policy", "orca", "--rate", "20", "--prompt", "16", "--output", "3", *ENG,
                          "--fixed-output", "--max-states", "30"], capsys)
    status = next(line for line in out.splitlines() if line.startswith("status"))
    assert rc == 0 and "inaccurate" in status and "raise --max-states" in status, status
    assert "max_prefill/max_decode" not in status and "max_states=" not in out
