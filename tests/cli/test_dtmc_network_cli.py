"""`fluidq dtmc --network jsq|llm-rybko-stolyar`: the two-engine chains from the command line (issue 19)."""
import json

import pytest

from fluidq.cli import main
from fluidq.dtmc.llm_network import jsq_llm_engines
from fluidq.dtmc.llm_rybko import llm_rybko_stolyar_chain
from fluidq import Affine, Engine

ENG = ["--model", "affine", "--c-ms", "1000", "--a-ms", "0", "--b-max", "2"]


def _json(capsys, argv):
    assert main(argv + ["--json"]) in (0, None)
    return json.loads(capsys.readouterr().out)


def test_rybko_stolyar_on_the_command_line_is_the_library_chain(capsys):
    out = _json(capsys, ["dtmc", "--network", "llm-rybko-stolyar", "--rate", "0.1", *ENG, "--prompt", "1",
                         "--output", "2", "--exit-prompt", "2", "--priority", "reversed", "--max-prefill", "2",
                         "--max-decode", "2"])
    lib = llm_rybko_stolyar_chain(Engine(batch_time=Affine(c=1.0, a=0.0), b_max=2), rate_per_s=0.1,
                                  entering=(1, 2.0), exiting=(2, 2.0), priority="reversed", max_waiting=2,
                                  max_decode=2)
    assert out["network"] == "llm-rybko-stolyar" and out["result"]["inputs"]["priority"] == "reversed"
    assert out["result"]["extrapolated"] == pytest.approx(list(lib.extrapolated), rel=1e-9)
    assert out["result"]["n_states"] == {str(k): v for k, v in lib.n_states.items()}


def test_jsq_on_the_command_line_is_the_library_chain(capsys):
    out = _json(capsys, ["dtmc", "--network", "jsq", "--rate", "0.2", *ENG, "--max-prefill", "3",
                         "--max-decode", "3", "--phases", "1"])
    lib = jsq_llm_engines(Engine(batch_time=Affine(c=1.0, a=0.0), b_max=2), arrival_rate_per_s=0.2,
                          prompt_tokens=2, mean_output_tokens=3.0, phases=1, max_waiting=3, max_decode=3)
    assert out["result"]["extrapolated"] == pytest.approx(list(lib.extrapolated), rel=1e-9)
    assert out["result"]["phases"] == [1, 2]


def test_rybko_stolyar_text_output_names_the_hops(capsys):
    assert main(["dtmc", "--network", "llm-rybko-stolyar", "--rate", "0.1", *ENG, "--max-prefill", "2",
                 "--max-decode", "2"]) in (0, None)
    text = capsys.readouterr().out
    for word in ("LLM Rybko-Stolyar", "exiting", "A.1", "B.2", "per engine"):
        assert word in text


@pytest.mark.parametrize("argv, flag", [
    (["--network", "jsq", "--priority", "exit"], "--priority"),
    (["--network", "jsq", "--exit-prompt", "2"], "--exit-prompt"),
    (["--priority", "exit"], "--priority"),
    (["--network", "llm-rybko-stolyar", "--prompt", "1.5"], "--prompt"),
    (["--network", "llm-rybko-stolyar", "--prompt", "3"], "--prompt"),
    (["--network", "llm-rybko-stolyar", "--exit-output", "0.5"], "--exit-output"),
    (["--network", "jsq", "--phases", "0"], "--phases"),
    (["--network", "jsq", "--max-decode", "0"], "--max-decode"),
    (["--network", "jsq", "--policy", "orca"], "--policy"),
])
def test_bad_network_options_name_the_flag(capsys, argv, flag):
    try:
        rc = main(["dtmc", "--rate", "0.1", *ENG, *argv])
    except SystemExit as exc:
        rc = exc.code
    assert rc not in (0, None)
    err = capsys.readouterr().err
    assert err.startswith(f"fluidq dtmc: error: {flag}"), err
