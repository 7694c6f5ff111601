"""Messages say what the user typed (rev-bad U4): --replications (not n_replications), one --requests limit
said the same way, a trace path once, and a UTF-16 file called UTF-16 (not binary)."""
from __future__ import annotations

import gzip

import pytest

from fluidq.cli import main


def _err(capsys, argv, rc=2):
    assert main(argv) == rc
    return capsys.readouterr().err


def test_check_replications_named_by_the_flag(capsys):
    err = _err(capsys, ["check", "--load", "0.9", "--method", "simulation", "--replications", "1000000",
                        "--policy", "sarathi"])
    assert "--replications=1000000" in err and "n_replications" not in err


@pytest.mark.parametrize("n", ["0", "100000000"])
def test_requests_one_limit(capsys, n):
    err = _err(capsys, ["simulate", "--requests", n, "--load", "0.5"])
    assert f"--requests={n}: expected a run of 1 to 20,000,000 arrivals" in err


def test_trace_path_said_once(capsys, tmp_path):
    f = tmp_path / "t.csv.gz"
    f.write_bytes(gzip.compress(b"arrival_s,prompt_tokens,output_tokens\n0,1,1\n" * 50)[:-12])
    err = _err(capsys, ["capacity", "--trace", str(f)])
    assert err.count(str(f)) == 1 and "truncated gzip" in err


def test_utf16_named(capsys, tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens\n0,1,1\n", encoding="utf-16")
    err = _err(capsys, ["capacity", "--trace", str(f)])
    assert "UTF-16" in err and "UTF-8" in err and "binary" not in err
