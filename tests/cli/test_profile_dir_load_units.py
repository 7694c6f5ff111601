"""``--load`` with ``--profile-dir`` is a fraction of vLLM's flow balance for the folder, whose tokens/s count a
request's m_p + m_d.  Second reading of 2026-12-06: the offered side counted the engine's batch work, m_p + m_d - 1
for vLLM's engine (its prefill emits the first token), so ``check``/``simulate --load 0.9 --output 2`` printed
load 0.8912 (= 0.9 x 101/102)."""
import pytest

from fluidq.cli import main
from fluidq.validate import validation_dir

FOLDER = validation_dir() / "data" / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B"


@pytest.mark.skipif(not FOLDER.is_dir(), reason="validation/data is not present (not a source checkout)")
@pytest.mark.parametrize("command, extra, expect", [
    ("check", [], "load 0.9000 of vLLM's flow balance"),
    ("simulate", ["--horizon", "2"], "load 0.9000 of "),
])
def test_profile_dir_load_is_the_fraction_given(capsys, command, extra, expect):
    argv = [command, "--profile-dir", str(FOLDER), "--load", "0.9", "--prompt", "100", "--output", "2", *extra]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert expect in out and "0.8912" not in out
