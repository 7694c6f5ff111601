"""`fluidq dtmc` as a new user meets it (review 2026-12-06): the JSON says which engine and workload the chain
is of, the help does not offer a --trace the command always refuses, and a chain too large for the --phases
given names --phases, not a --max-prefill the user never typed."""
import json

import pytest

from fluidq.cli import build_parser, main


def test_json_names_the_engine_the_workload_and_the_lengths_the_chain_used(capsys):
    assert main(["dtmc", "--rate", "3", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["engine"]["b_max"] == 512 and out["engine"]["batch_time"]["kind"] == "staircase"
    assert out["workload"]["arrival"]["rate_per_s"] == 3.0
    # the command made the outputs geometric (the chain needs memoryless outputs): the JSON says so
    assert out["workload"]["output_tokens"]["kind"] == "Geometric"
    assert "geometric" in out["lengths"]


def test_json_of_a_network_chain_names_the_engine(capsys):
    assert main(["dtmc", "--network", "jsq", "--rate", "0.2", "--model", "affine", "--c-ms", "1000", "--a-ms", "0",
                 "--b-max", "2", "--max-prefill", "2", "--max-decode", "2", "--phases", "1", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["engine"]["b_max"] == 2 and out["engine"]["batch_time"]["kind"] == "affine"


def _help(command):
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[command].format_help()


def test_help_does_not_offer_a_trace_the_chain_refuses():
    text = " ".join(_help("dtmc").split())
    i = text.find("--trace TRACE ")
    assert i >= 0
    assert "refused" in text[i:i + 300] or "not accepted" in text[i:i + 300], text[i:i + 300]


@pytest.mark.parametrize("network", ["jsq", "llm-rybko-stolyar"])
def test_a_chain_too_large_for_the_phases_given_names_phases(capsys, network):
    assert main(["dtmc", "--network", network, "--rate", "3", "--phases", "1000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--phases" in err.split("expected")[0], err
    assert "--max-prefill=" not in err and "prompt_tokens" not in err, err
