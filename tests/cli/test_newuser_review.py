"""A new user's review (2026-12-06): help that says what the option takes, options that are not refused
with a misleading reason."""
import argparse
import os
import json

import pytest

from fluidq.cli import build_parser
from fluidq.testing.cli import run_cli


def _subparsers():
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


@pytest.mark.parametrize("command", ["capacity", "check", "region", "report", "simulate"])
def test_the_model_help_says_each_thing_once(command):
    """``report --help`` said "with --gpu: a model of `fluidq models list`; with --gpu: a model of ..." and
    showed the metavar FORM|NAME although report takes no batch-time form."""
    sp = _subparsers()[command]
    model = next(a for a in sp._actions if a.dest == "model")
    assert model.help.count("with --gpu") == 1, model.help
    assert model.help.count("fluidq models list") == 1, model.help
    if command == "report":
        assert model.metavar == "NAME" and "FORM" not in sp.format_help()


def test_capacity_with_gpu_takes_a_rate_and_gives_the_load(capsys):
    """``capacity --help`` says "With --rate, also the offered load"; with --gpu --rate was refused as if it
    described the engine ("--gpu describes the engine itself ...: give it without --rate")."""
    base = ["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100", "--input-len", "600", "--output-len", "150"]
    rc, out, _ = run_cli([*base, "--json"], capsys)
    assert rc == 0
    cap = json.loads(out)["requests_per_s"]
    rc, out, err = run_cli([*base, "--rate", "10", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert d["requests_per_s"] == pytest.approx(cap, rel=1e-12)  # the rate changes no capacity
    assert d["offered"]["rate_per_s"] == 10 and d["offered"]["load"] == pytest.approx(10 / cap, rel=1e-12)
    assert d["offered"]["tokens_per_s"] == pytest.approx(10 * 750)
    rc, out, _ = run_cli([*base, "--rate", str(2 * cap)], capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("load"))
    assert rc == 0 and float(line.split()[1]) == pytest.approx(2.0) and "no scheduler keeps up" in line, out
    rc, out, err = run_cli([*base, "--rate", "-1"], capsys)
    assert rc == 2 and "--rate" in err


def test_disagg_names_the_link_the_kv_crosses(capsys):
    """``disagg`` printed "KV transfer  131,072 B per token over 1 x KV transfer: 450 GB/s, 3 us": the link was
    named after the transfer, not after the interconnect whose figures it uses (or the flags that gave them)."""
    base = ["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100", "--rate", "30", "--input-len", "2000",
            "--output-len", "200"]
    rc, out, _ = run_cli(base, capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("KV transfer"))
    assert rc == 0 and "over 1 x NVLink 4: 450 GB/s" in line and line.count("KV transfer") == 1, line
    rc, out, _ = run_cli([*base, "--link-gbps", "25", "--json"], capsys)
    link = json.loads(out)["deployment"]["link"]
    assert rc == 0 and link.startswith("--link-gbps, NVLink 4 (latency): 25 GB/s, 3 us"), link
    rc, out, _ = run_cli([*base, "--link-latency-us", "7", "--json"], capsys)
    link = json.loads(out)["deployment"]["link"]
    assert rc == 0 and link.startswith("NVLink 4 (bandwidth), --link-latency-us: 450 GB/s, 7 us"), link


def test_the_report_summary_agrees_with_its_subject():
    """``fluidq report --model Llama-3.1-8B --gpu H100`` (k_max binds: every verdict unknown) wrote "At the
    operating point, **no scheduler** are proven stable"."""
    from fluidq.report.sections.s20_verdicts import proven_stable

    assert proven_stable([]) == "**no scheduler** is proven stable"
    assert proven_stable(["orca"]) == "**orca** is proven stable"
    assert proven_stable(["orca", "sarathi"]) == "**orca, sarathi** are proven stable"


def test_network_horizon_help_describes_the_automatic_horizon():
    """``network --help`` gave the default --horizon as "3000 batches of the slowest engine at full budget";
    a case whose slowest batch takes 153 ms ran 540.4 s (not 459.6 s): the default is chosen from the growth
    to detect, with longer rounds within a cap and a work budget (fluidq.stability.network.check_network_stability)."""
    sp = _subparsers()["network"]
    text = " ".join(sp.format_help().split())
    assert "3000 batches of the slowest engine" in text  # the first round, still said
    for words in ("growth to detect", "fewer than 20 requests", "rounds of at least twice the horizon",
                  "a cap of 5,000,000 batches", "work budget", "[disaggregated] case: 3000 arrivals"):
        assert words in text, words


KV_NET = """
name = "kv-fork"
[engines.plan]
batch_time = { kind = "staircase", c = 0.01128, a = 0.03547, b0 = 128 }
b_max = 512
kv_capacity_tokens = 20000
[engines.b]
batch_time = { kind = "affine", c = 0.02, a = 0.0001 }
b_max = 512

[[classes]]
name = "task"
rate_per_s = 2.0
route = [
  { engine = "plan", prompt = 256, output = 64, name = "plan" },
  { fork = "f", branches = [
      [{ engine = "b", prompt = 256, output = 64, name = "x" }],
      [{ choice = [ { p = 0.3, route = [{ engine = "b", prompt = 1024, output = 128, name = "deep" }] },
                    { p = 0.7, route = [{ engine = "b", prompt = 256, output = 32, name = "shallow" }] } ] }],
  ] },
  { join = "f" },
]
"""


def test_network_verdict_without_a_deciding_argument_says_so(tmp_path, capsys):
    """A station with a KV cache makes b_max/t(b_max) only a bound, so no argument decides without simulation;
    the line read "verdict: unknown (decided by nothing: unknown)"."""
    case = tmp_path / "kv_fork.toml"
    case.write_text(KV_NET)
    rc, out, _ = run_cli(["network", str(case)], capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("verdict:"))
    assert rc == 0 and line.startswith("verdict: unknown (no argument decides it") and "nothing" not in line, line
    rc, out, _ = run_cli(["network", "fork_join"], capsys)  # a decided verdict keeps its words
    line = next(ln for ln in out.splitlines() if ln.startswith("verdict:"))
    assert rc == 0 and line.startswith("verdict: stable (decided by the fluid model"), line


def test_network_seed_without_simulate_is_refused(capsys):
    """``network fork_join --seed 3`` ran and ignored the seed (nothing is simulated), where --horizon and
    --replications without --simulate are refused, as ``region --seed`` without --simulate is."""
    rc, _, err = run_cli(["network", "fork_join", "--seed", "3"], capsys)
    assert rc == 2 and "--seed" in err and "--simulate" in err and len(err.strip().splitlines()) == 1, err
    rc, _, err = run_cli(["network", "fork_join", "--seed", "-1", "--simulate"], capsys)
    assert rc == 2 and "--seed" in err


def test_validate_help_names_the_installed_copy():
    """A non-editable install has no checkout: ``validate --help`` said the default --root is "$FLUIDQ_VALIDATION_DIR
    or the source checkout's validation/" and that case names are in validation/cases/*.toml, while the
    installed package reads its own copy (fluidq._shipped.validation_root)."""
    sp = _subparsers()["validate"]
    root = next(a for a in sp._actions if a.dest == "root")
    case = next(a for a in sp._actions if a.dest == "case")
    assert "installed" in root.help and "$FLUIDQ_VALIDATION_DIR" in root.help
    assert "validation/cases" not in case.help and "--root" in case.help


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc (a folder that refuses mkdir)")
@pytest.mark.parametrize("command", [["report", "--quick"], ["validate", "--fast"]])
def test_an_output_folder_that_cannot_be_created_is_named_before_any_work(command, capsys):
    """``report --out /proc/x`` ended with "fluidq report: error: /proc/x: No such file or directory", naming
    no option; the folder is now tried (and removed) before any work and the message names --out."""
    rc, _, err = run_cli([*command, "--out", "/proc/fluidq-review-x"], capsys)
    assert rc == 2 and err.count("\n") <= 1, err
    assert "--out /proc/fluidq-review-x: cannot create the" in err and "folder there" in err, err
    assert not os.path.exists("/proc/fluidq-review-x")


def test_a_new_output_folder_is_not_left_behind_by_the_check(tmp_path):
    from fluidq.cli.common import output_folder

    p = output_folder("--out", str(tmp_path / "new"), marker=".fluidq-report", what="report")
    assert p == tmp_path / "new" and not p.exists()


def test_simulate_run_line_separates_horizon_and_requests(capsys):
    """``simulate --requests 10 --horizon 50`` printed "run       50 s 10 requests, seed 0"."""
    rc, out, _ = run_cli(["simulate", "--requests", "10", "--horizon", "50", "--load", "0.5", "--policy", "sarathi",
                          "--no-progress"], capsys)
    assert rc == 0 and "run       50 s, 10 requests, seed 0" in out, out


@pytest.mark.parametrize("meta, words", [
    (None, "there is no profile_meta.yaml in it"),
    ("model: acme/Unknown-9B\n", "names 'acme/Unknown-9B'"),
    ("gpu: Test GPU\n", "names no model"),
])
@pytest.mark.parametrize("command", [["capacity"], ["check", "--load", "0.5"], ["simulate", "--load", "0.5"]])
def test_a_profile_dir_without_a_known_model_names_the_flag(tmp_path, capsys, meta, words, command):
    """``capacity --profile-dir DIR`` on a folder without profile_meta.yaml said "DIR: profile_meta.yaml names
    model None, which the shipped model facts do not hold; give model=": no flag, a file that is not there,
    and a Python parameter the command line does not take (review 2026-12-06, a new user)."""
    if meta is not None:
        (tmp_path / "profile_meta.yaml").write_text(meta)
    rc, out, err = run_cli([*command, "--profile-dir", str(tmp_path)], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"fluidq {command[0]}: error: --profile-dir {tmp_path}: expected ") and words in err, err
    assert "model None" not in err and "give model=" not in err, err


@pytest.mark.parametrize("command", [["capacity"], ["check", "--load", "0.5"], ["simulate", "--load", "0.5"],
                                     ["region"], ["report"], ["latency", "--loads", "0.5"]])
def test_an_unknown_profile_names_the_flag(capsys, command, tmp_path):
    """``capacity --profile nosuch`` said "unknown profile 'nosuch'; known: ..." without the flag (``--policy``
    and ``--policies`` said "unknown --policy"); nothing is written."""
    extra = ["--out", str(tmp_path / "r")] if command == ["report"] else []
    rc, out, err = run_cli([*command, "--profile", "nosuch", *extra], capsys)
    assert rc == 2 and out == "" and err.startswith(f"fluidq {command[0]}: error: unknown --profile 'nosuch'; known: "), err
    assert not (tmp_path / "r").exists()


def test_validate_run_on_a_folder_that_is_no_run_names_the_flag(tmp_path, capsys):
    """``validate --run DIR`` on a folder without the run's files said "DIR: no vllm_requests.jsonl or ..."
    without --run; it is refused before --out is made."""
    (tmp_path / "notes.txt").write_text("not a run\n")
    out = tmp_path / "report"
    rc, text, err = run_cli(["validate", "--run", str(tmp_path), "--out", str(out)], capsys)
    assert rc == 2 and text == "" and err.count("\n") == 1, err
    assert err.startswith(f"fluidq validate: error: --run {tmp_path}: expected a run folder") and "requests" in err, err
    assert not out.exists()


@pytest.mark.parametrize("flag, content, words", [
    ("--data", "", "no rows"),
    ("--data", "a,b\n1,2\n", "not valid JSON"),
    ("--data", None, "no such file"),
    ("--load", "a,b\n1,2\n", "not a saved fluidq length ranker"),
])
def test_pars_names_the_flag_of_a_file_it_cannot_read(tmp_path, capsys, flag, content, words):
    """``pars --data empty.csv`` said "empty.csv: no rows" and ``--load x`` "x: not a saved fluidq length
    ranker" without the flag."""
    path = tmp_path / "x.csv"
    if content is not None:
        path.write_text(content)
    rc, out, err = run_cli(["pars", flag, str(path)], capsys)
    assert rc == 2 and out == "" and err.startswith(f"fluidq pars: error: {flag}: ") and words in err, err


def test_capacity_load_just_off_1_reads_on_its_side(capsys):
    """``capacity --rate`` at 1.00004 x capacity printed "load 1.000 of capacity ... (above 1: no scheduler keeps
    up)" and at 0.99996 x "load 1.000": the line rounded the load to 4 digits, not through fmt_load."""
    rc, out, _ = run_cli(["capacity", "--json"], capsys)
    cap = json.loads(out)["requests_per_s"]
    for f, word in ((1.00004, "1.00004"), (0.99996, "0.99996")):
        rc, out, err = run_cli(["capacity", "--rate", repr(cap * f)], capsys)
        line = next(ln for ln in out.splitlines() if ln.startswith("load"))
        assert rc == 0 and line.split()[1] == word, line
        assert ("no scheduler keeps up" in line) is (f > 1), line
