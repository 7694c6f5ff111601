"""``--fit CSV`` (issue 17): capacity, check, simulate and region fit the engine's batch time to one's own
measurements (``fluidq fit``'s reader and fit), use the best form and state it with its held-out error."""
import json
import math

import numpy as np
import pytest

from fluidq.testing.cli import run_cli

C, A, B0 = 0.01128, 0.03547, 128  # the paper's staircase, seconds


run = run_cli


@pytest.fixture
def staircase_csv(tmp_path):
    """Measured times of the paper's staircase, with 1 % multiplicative noise."""
    rng = np.random.default_rng(0)
    path = tmp_path / "measured.csv"
    rows = ["tokens,seconds"]
    for b in range(16, 1025, 16):
        t = (C + A * math.ceil(b / B0)) * (1 + 0.01 * rng.standard_normal())
        rows.append(f"{b},{t:.6g}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_capacity_from_a_measured_staircase(staircase_csv, capsys):
    rc, out, err = run(["capacity", "--fit", str(staircase_csv), "--b-max", "512", "--json"], capsys)
    assert rc == 0, err
    res = json.loads(out)
    truth = 512 / (C + A * 4)  # 3,342.9 tokens/s
    assert res["tokens_per_s"] == pytest.approx(truth, rel=0.02)
    assert res["fit"]["kind"] == "staircase" and res["fit"]["csv"] == str(staircase_csv)
    assert 0 <= res["fit"]["mape_heldout"] < 0.05
    rc, out, err = run(["capacity", "--fit", str(staircase_csv), "--max-num-batched-tokens", "512"], capsys)
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("fit "))
    assert "staircase" in line and "held-out" in line and str(staircase_csv) in line


@pytest.mark.parametrize("command", [["check", "--rate", "5"], ["region"],
                                     ["simulate", "--horizon", "3", "--policy", "sarathi", "--no-progress"]])
def test_other_commands_use_and_state_the_fit(command, staircase_csv, capsys):
    rc, out, err = run([*command, "--fit", str(staircase_csv), "--b-max", "512"], capsys)
    assert rc == 0, err
    assert "held-out MAPE" in out and "staircase" in out and str(staircase_csv) in out
    rc, out, err = run([*command, "--fit", str(staircase_csv), "--b-max", "512", "--json"], capsys)
    assert rc == 0, err
    res = json.loads(out)
    fit = (res[0]["inputs"] if isinstance(res, list) else res.get("inputs", res))["fit"] if command[0] == "check" \
        else res["fit"]
    assert fit["kind"] == "staircase"


def test_fit_gives_the_same_capacity_as_the_constants(staircase_csv, capsys):
    rc, out, _ = run(["capacity", "--fit", str(staircase_csv), "--b-max", "512", "--json"], capsys)
    fitted = json.loads(out)["tokens_per_s"]
    rc, out, _ = run(["capacity", "--c-ms", "11.28", "--a-ms", "35.47", "--b0", "128", "--b-max", "512", "--json"],
                     capsys)
    assert fitted == pytest.approx(json.loads(out)["tokens_per_s"], rel=0.02)


@pytest.mark.parametrize("text, words", [
    ("tokens,secs\n1,2\n2,3\n3,4\n", ["'seconds'"]),
    ("tokens,seconds\n1,0.1\n2,x\n3,0.3\n", ["line 3", "'x'"]),
    ("", ["empty"]),
    ("tokens,seconds\n2,0.1\n1,0.2\n3,0.3\n", ["increasing"]),
])
def test_bad_csv_is_one_line_naming_fit(text, words, tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    for cmd in (["capacity"], ["check", "--rate", "1"], ["region"], ["simulate", "--horizon", "1"]):
        rc, out, err = run([*cmd, "--fit", str(path), "--b-max", "512"], capsys)
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert "--fit" in err and all(w in err for w in words), err


def test_missing_file_names_fit(tmp_path, capsys):
    rc, _, err = run(["capacity", "--fit", str(tmp_path / "none.csv"), "--b-max", "512"], capsys)
    assert rc == 2 and "--fit" in err and err.count("\n") == 1


def test_fit_needs_b_max(staircase_csv, capsys):
    rc, _, err = run(["capacity", "--fit", str(staircase_csv)], capsys)
    assert rc == 2 and "--b-max" in err and "--fit" in err and err.count("\n") == 1


@pytest.mark.parametrize("extra", [["--profile", "paper-codellama34b-a100"], ["--c-ms", "10"], ["--model", "affine"]])
def test_fit_is_the_batch_time_alone(extra, staircase_csv, capsys):
    rc, _, err = run(["capacity", "--fit", str(staircase_csv), "--b-max", "512", *extra], capsys)
    assert rc == 2 and "--fit" in err and extra[0] in err and err.count("\n") == 1


def test_constants_without_b_max_name_it(capsys):
    """A model given by constants has no budget of its own: the paper's 512 is no longer taken silently."""
    rc, _, err = run(["capacity", "--c-ms", "11.28", "--a-ms", "35.47"], capsys)
    assert rc == 2 and "--b-max" in err and err.count("\n") == 1
    rc, out, err = run(["capacity", "--c-ms", "11.28", "--a-ms", "35.47", "--b-max", "512"], capsys)
    assert rc == 0 and "3,343" in out


# --kv-capacity on capacity and check: where the KV cache binds, the answer changes

def test_capacity_kv_capacity_binds(capsys):
    rc, out, _ = run(["capacity", "--json"], capsys)
    free = json.loads(out)["tokens_per_s"]
    rc, out, err = run(["capacity", "--kv-capacity", "2000", "--json"], capsys)
    assert rc == 0, err
    bound = json.loads(out)
    assert bound["tokens_per_s"] < 0.5 * free and "KV cache" in bound["reason"]
    assert bound["inputs"]["engines"][0]["kv_capacity_tokens"] == 2000
    rc, out, _ = run(["capacity", "--kv-capacity", "10000000", "--json"], capsys)  # a large cache does not bind
    assert json.loads(out)["tokens_per_s"] == pytest.approx(free)


def test_check_kv_capacity_binds(capsys):
    rc, out, _ = run(["check", "--rate", "10", "--policy", "sarathi", "--json"], capsys)
    assert json.loads(out)["status"] == "stable"
    rc, out, err = run(["check", "--rate", "10", "--policy", "sarathi", "--kv-capacity", "2000", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["status"] == "unstable"
    rc, out, _ = run(["check", "--rate", "10", "--policy", "sarathi", "--kv-capacity", "2000"], capsys)
    assert "--kv-capacity" in out


@pytest.mark.parametrize("cmd", [["capacity"], ["check", "--rate", "1"]])
@pytest.mark.parametrize("value, words", [("0", [">= 1"]), ("50", ["no request fits"])])
def test_kv_capacity_refused_naming_it(cmd, value, words, capsys):
    rc, _, err = run([*cmd, "--kv-capacity", value], capsys)
    assert rc == 2 and "--kv-capacity" in err and err.count("\n") == 1 and all(w in err for w in words), err


def test_a_budget_beyond_the_measurements_is_said(staircase_csv, capsys):
    rc, out, _ = run(["capacity", "--fit", str(staircase_csv), "--b-max", "2048"], capsys)
    assert rc == 0 and "extrapolated" in out and "1024 tokens" in out
    rc, out, _ = run(["capacity", "--fit", str(staircase_csv), "--b-max", "1024"], capsys)
    assert rc == 0 and "extrapolated" not in out


def test_flat_times_fit_a_constant(tmp_path, capsys):
    """Review 2026-12-06: flat measurements (small decode batches are memory-bound) were refused -- three equal
    times with `a=2.4e-18: expected a time >= 1e-12 s` (the staircase's step), 64 nearly equal ones with
    `R^2 = -1e-06 < 0`.  Both fit a constant now; falling times are still refused."""
    flat = tmp_path / "flat.csv"
    flat.write_text("tokens,seconds\n1,0.01\n2,0.01\n3,0.01\n")
    rng = np.random.default_rng(1)
    near = tmp_path / "near.csv"
    near.write_text("tokens,seconds\n" + "".join(f"{b},{0.02 * (1 + 5e-4 * rng.standard_normal()):.7f}\n"
                                                 for b in range(1, 65)))
    for path, t in ((flat, 0.01), (near, 0.02)):
        code, out, err = run(["fit", str(path), "--json"], capsys)
        assert code == 0, err
        model = json.loads(out)
        from fluidq.batchtime.fit import fit_batch_time

        r = fit_batch_time(np.arange(1, 4) if path is flat else np.arange(1, 65),
                           [0.01] * 3 if path is flat else np.loadtxt(path, delimiter=",", skiprows=1)[:, 1])
        assert r.model(1) == pytest.approx(t, rel=2e-3) and r.model(64) == pytest.approx(t, rel=2e-3), model
    falling = tmp_path / "falling.csv"
    falling.write_text("tokens,seconds\n1,0.4\n2,0.3\n3,0.2\n4,0.1\n")
    code, out, err = run(["fit", str(falling)], capsys)
    assert code != 0 and "worse than their mean" in err
