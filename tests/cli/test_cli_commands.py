"""The command line: outputs, --json, exit code 2 with one line on bad input, the report folder."""
import json
import subprocess
import sys

import numpy as np
import pytest

from fluidq.cli import main

EXPECTED = {"vidur-llama2-7b-a100", "vidur-llama2-7b-h100", "vidur-codellama34b-a100",
            "llmservingsim-llama3.1-8b-rtx4090", "llmservingsim-llama3.1-8b-rtxpro6000",
            "splitwise-llama2-70b-a100-tp8", "splitwise-llama2-70b-h100-tp8"}


def run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def assert_usage_error(argv, capsys, *words):
    rc, out, err = run(argv, capsys)
    assert rc == 2, (argv, rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def test_capacity_prints_the_paper_numbers(capsys):
    rc, out, _ = run(["capacity", "--prompt", "100", "--output", "100"], capsys)
    assert rc == 0 and "3,343 tokens/s" in out and "16.71 req/s" in out  # meaningful digits (issue 17)
    rc, out, _ = run(["capacity", "--json", "--prompt", "129", "--output", "112"], capsys)
    assert rc == 0 and round(json.loads(out)["requests_per_s"], 2) == 13.87


def test_profiles_lists_fitted_deployments_with_errors(capsys):
    rc, out, _ = run(["profiles"], capsys)
    assert rc == 0
    for name in EXPECTED:
        line = next(ln for ln in out.splitlines() if ln.startswith(name))
        assert "% (held out)" in line
    rc, out, _ = run(["profiles", "--json"], capsys)
    data = json.loads(out)
    assert all("mape_heldout" in d["fit"] for d in data if d["name"] in EXPECTED)
    rc, out, _ = run(["profiles", "show", "vidur-codellama34b-a100"], capsys)
    assert rc == 0 and "ceil(b/128)" in out and "microsoft/vidur" in out


def write(path, text):
    path.write_text(text)
    return str(path)


def test_fit_command(tmp_path, capsys):
    b = np.arange(16, 1025, 16)
    rng = np.random.default_rng(0)
    y = (0.01128 + 0.03547 * np.ceil(b / 128)) * (1 + 0.005 * rng.standard_normal(b.size))
    csv = write(tmp_path / "m.csv", "tokens,seconds\n" + "".join(f"{x},{v}\n" for x, v in zip(b, y)))
    rc, out, _ = run(["fit", csv, "--plot", str(tmp_path / "fit.png")], capsys)
    assert rc == 0 and "staircase" in out and "ceil(b/128)" in out and "held out" in out
    assert (tmp_path / "fit.png").stat().st_size > 1000
    rc, out, _ = run(["fit", csv, "--json", "--kind", "piecewise-linear"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["kind"] == "piecewise-linear" and 0 <= d["mape_heldout"] < 1
    kv = rng.integers(0, 5000, b.size)
    csv2 = write(tmp_path / "kv.csv", "tokens,kv_tokens,seconds\n" +
                 "".join(f"{x},{k},{v + 1e-7 * k}\n" for x, k, v in zip(b, kv, y)))
    rc, out, _ = run(["fit", csv2, "--json"], capsys)
    assert rc == 0 and json.loads(out)["kind"] == "context-aware"


@pytest.mark.parametrize("content, words", [
    ("", ["empty"]),
    ("tokens,seconds\n", ["no data rows"]),
    ("size,time\n1,2\n", ["tokens"]),
    ("tokens,seconds\n16,0.1\n16,0.2\n32,0.3\n", ["tokens", "duplicate", "lines 2 and 3"]),
    ("tokens,seconds\n\n16,0.1\n16,0.2\n32,0.3\n", ["duplicate", "lines 3 and 4"]),  # file lines
    ("tokens,seconds\n32,0.1\n16,0.2\n48,0.3\n", ["tokens", "increasing", "line 3", "sort"]),
    ("tokens,seconds\n16,0.1\n12.5,0.2\n48,0.3\n", ["'tokens'", "line 3", "12.5", "integer"]),
    ("tokens,kv_tokens,seconds\n16,0.5,0.1\n32,8,0.2\n48,9,0.3\n", ["'kv_tokens'", "line 2"]),
    ("tokens,seconds\n16,0.1\n32\n", ["line 3"]),
    ("tokens,seconds\n16,abc\n32,0.2\n48,0.3\n", ["seconds"]),
    ("tokens,seconds\n16,0.1\n32,-0.2\n48,0.3\n", ["seconds"]),
    ("tokens,seconds\n16,0.1\n32,inf\n48,0.3\n", ["seconds"]),
])
def test_fit_bad_csv_exits_2_with_one_line(tmp_path, capsys, content, words):
    assert_usage_error(["fit", write(tmp_path / "bad.csv", content)], capsys, *words)


def test_fit_missing_file(tmp_path, capsys):
    assert_usage_error(["fit", str(tmp_path / "none.csv")], capsys, "none.csv")


@pytest.mark.parametrize("argv, words", [
    (["capacity", "--b0", "0"], ["b0"]),
    (["capacity", "--b-max", "0"], ["--b-max"]),
    (["capacity", "--k-max", "0"], ["--k-max"]),
    (["capacity", "--a-ms", "-1"], ["a"]),
    (["capacity", "--c-ms", "nan"], ["c"]),
    (["capacity", "--engines", "0"], ["--engines"]),
    (["capacity", "--profile", "nope"], ["nope"]),
    (["check", "--rate", "0"], ["--rate"]),
    (["check", "--rate", "-2"], ["--rate"]),
    (["check", "--rate", "inf"], ["--rate"]),
    (["check", "--rate", "nan"], ["--rate"]),
    (["check", "--rate", "10", "--policy", "round-robin"], ["round-robin"]),
    (["check", "--load", "0"], ["--load"]),
    (["check", "--rate", "1", "--prompt", "0"], ["--prompt"]),
    (["check", "--engines", "2", "--rate", "1", "--c-ms", "-1"], ["--c-ms"]),
    (["simulate", "--engines", "2", "--rate", "1"], ["--engines"]),
    (["check", "--trace", "no-such-trace.csv"], ["no-such-trace"]),
    (["profiles", "show"], ["name"]),
])
def test_bad_arguments_exit_2_with_one_line(capsys, argv, words):
    assert_usage_error(argv, capsys, *words)


def test_bad_trace_file(tmp_path, capsys):
    assert_usage_error(["check", "--trace", write(tmp_path / "t.csv", "x,y\n1,2\n")], capsys)
    assert_usage_error(["capacity", "--trace", write(tmp_path / "e.csv", "")], capsys, "empty")


def test_subprocess_exit_code_and_no_traceback(tmp_path):
    bad = write(tmp_path / "bad.csv", "tokens,seconds\n8,0.1\n8,0.2\n16,0.3\n")
    p = subprocess.run([sys.executable, "-m", "fluidq", "fit", bad], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    v = subprocess.run([sys.executable, "-m", "fluidq", "--version"], capture_output=True, text=True, timeout=120)
    assert v.returncode == 0 and v.stdout.startswith("fluidq ")


def test_report_writes_its_folder_with_pngs(tmp_path, capsys):
    out = tmp_path / "rep"
    rc, stdout, _ = run(["report", "--out", str(out), "--quick"], capsys)
    assert rc == 0 and str(out) in stdout
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) >= 3 and all(p.stat().st_size > 2000 and p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    md = (out / "report.md").read_text()
    for p in pngs:
        assert p.name in md
