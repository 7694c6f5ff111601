"""``fluidq capacity``'s parallel flags (issues 16, 20, a new user's review): an error names the flag the user
typed, not the library's parameter (``parameters_as_flags``)."""
import re

import pytest

from fluidq.testing.cli import run_cli
from fluidq.validate import validation_dir

LSS = validation_dir() / "data" / "llmservingsim"
LLAMA = str(LSS / "RTXPRO6000_Llama-3.1-8B")


@pytest.mark.parametrize("argv,flag", [
    (["--data-parallel-size", "0"], "--data-parallel-size=0"),
    (["--pipeline-parallel-size", "0"], "--pipeline-parallel-size=0"),
    (["--enable-expert-parallel"], "--enable-expert-parallel"),
    (["--method", "simulate", "--replications", "1"], "--replications=1"),
])
def test_profile_dir_errors_name_the_flag(capsys, argv, flag):
    rc, out, err = run_cli(["capacity", "--profile-dir", LLAMA, *argv], capsys)
    assert rc != 0
    assert flag in err, err
    for name in ("data_parallel_size", "pipeline_parallel_size", "enable_expert_parallel", "replications"):
        assert not re.search(rf"(?<![-\w]){name}=", err), err


def test_expert_parallel_on_a_dense_model_says_why(capsys):
    rc, out, err = run_cli(["capacity", "--profile-dir", LLAMA, "--enable-expert-parallel"], capsys)
    assert rc != 0 and "dense" in err and "Llama-3.1-8B" in err, err
