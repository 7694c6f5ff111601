"""``fluidq capacity --gpu``'s region line says how far it lies from the capacity line where the token budget binds.

The face audit (validation/tools/face_consistency.py, h-consist) found the region's figure -- the lambda* that
``check``, ``region`` and ``simulate --load`` read -- 0-9.4 % above the capacity line on budget-bound deployments and
34-35 % at 5,616-token prompts on a 0.5B model, with the line silent on it: the simulated engine ``t(b, 0) + s kv``
leaves out a prefill chunk's attention to its own tokens, which the capacity line's roofline charges.
"""
import json
import re

from fluidq.testing.cli import run_cli

LONG = ["capacity", "--model", "Qwen2.5-0.5B", "--gpu", "MI300X", "--input-len", "5616", "--output-len", "50",
        "--max-num-batched-tokens", "8192"]
SHORT = ["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100", "--input-len", "300", "--output-len", "20",
         "--max-num-batched-tokens", "512"]


def _region(argv, capsys):
    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()}
    assert lines["binding"].split()[1] == "token_budget", lines["binding"]
    return lines["region"]


def test_a_long_prompt_says_the_gap_and_its_cause(capsys):
    line = _region(LONG, capsys)
    m = re.search(r"; (\d+\.\d) % above the capacity line: the engine they simulate", line)
    assert m and float(m.group(1)) > 20, line
    assert "attention to its own tokens" in line
    rc, out, _ = run_cli(LONG + ["--json"], capsys)
    d = json.loads(out)  # the figures the clause compares
    rel = d["stability_region"]["requests_per_s"] / d["requests_per_s"] - 1
    assert abs(100 * rel - float(m.group(1))) < 0.06


def test_a_gap_under_one_percent_is_not_said(capsys):
    line = _region(SHORT, capsys)
    assert "the lambda* of `fluidq check`, `region` and `simulate --load`)" in line and "capacity line:" not in line
