"""The numbers docs/how-to/disaggregated.md quotes in "When each wins" are what `fluidq disagg` prints, to its
printed precision: they had drifted silently (126.4 / 125.6 quoted, 125.2 / 124.3 printed, review of main 3f6ee3b).
The command is read from the paragraph itself (model, GPU, count, each input/output pair), so an edit of either
side that breaks the agreement fails here."""
import re
from pathlib import Path

import pytest

from fluidq.testing.cli import run_cli

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "disaggregated.md"


def _paragraph() -> str:
    text = PAGE.read_text()
    sec = text.split("## When each wins", 1)[1].split("\n## ", 1)[0]
    return " ".join(sec.split())  # the paragraph's line breaks fall anywhere


def _quoted():
    para = _paragraph()
    cmd = re.search(r"`fluidq disagg --model (\S+) --gpu (\S+) --gpus (\d+)`", para)
    assert cmd, para
    cases = re.findall(r"(\d+)/(\d+) tokens: co-located ([\d.]+) req/s, the best split (\d+) \+ (\d+) gives ([\d.]+)",
                       para)
    assert len(cases) >= 2, para
    return cmd.groups(), cases


def test_the_doc_quotes_what_the_command_prints(capsys):
    (model, gpu, gpus), cases = _quoted()
    for inp, out, colo, n_pre, n_dec, split in cases:
        rc, text, err = run_cli(["disagg", "--model", model, "--gpu", gpu, "--gpus", gpus, "--input-len", inp,
                                 "--output-len", out], capsys)
        assert rc in (0, None), err
        got_colo = re.search(r"^co-located\s+\d+ engines: ([\d.,]+) req/s", text, re.MULTILINE).group(1)
        got = re.search(r"^disaggregated\s+(\d+) prefill \+ (\d+) decode engines: ([\d.,]+) req/s", text, re.MULTILINE)
        assert (got_colo, got.group(3)) == (colo, split), (inp, out, text)
        assert (got.group(1), got.group(2)) == (n_pre, n_dec), (inp, out, text)


def test_the_check_reads_every_quoted_pair():
    # the pattern above must not silently match fewer pairs than the paragraph quotes
    para = _paragraph()
    assert len(re.findall(r"\d+/\d+ tokens:", para)) == len(_quoted()[1])
