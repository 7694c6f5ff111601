"""The single-engine commands check their options before any work: one line on stderr, exit code 2,
the flag named; paths they would write, options they would ignore, inputs their JSON would invent."""
import json

import numpy as np
import pytest

from fluidq.testing.cli import assert_one_line, run_cli


run = run_cli




def boom(*a, **k):
    raise AssertionError("the work started before the options were checked")


@pytest.fixture
def no_work(monkeypatch):
    """Every expensive call of the commands fails the test if reached (the names the commands import
    at call time are patched where they live; those imported with the command module, where it uses them)."""
    # (modules, not ``from fluidq import ...``: fluidq's lazy attributes give the functions of the same names)
    import fluidq.batchtime.fit as fit  # noqa: PLR0402
    import fluidq.dtmc as dtmc  # noqa: PLR0402
    import fluidq.latency as latency  # noqa: PLR0402
    import fluidq.predict as predict  # noqa: PLR0402
    import fluidq.region as region  # noqa: PLR0402
    import fluidq.report as report  # noqa: PLR0402
    import fluidq.sim as sim  # noqa: PLR0402
    import fluidq.validate as validate  # noqa: PLR0402

    for mod, name in ((sim, "simulate"), (sim, "replicate"), (region, "stability_region"), (dtmc, "build_dtmc"),
                      (fit, "fit_batch_time"), (latency, "compare_orderings"), (predict, "load_lengths"),
                      (report, "build_report"), (validate, "validate")):
        monkeypatch.setattr(mod, name, boom)
    monkeypatch.setattr("fluidq.cli.commands.capacity.max_throughput", boom)
    monkeypatch.setattr("fluidq.cli.commands.check.check_stability", boom)


@pytest.fixture
def measured(tmp_path):
    b = np.arange(16, 1025, 16)
    y = 0.01128 + 0.03547 * np.ceil(b / 128)
    p = tmp_path / "m.csv"
    p.write_text("tokens,seconds\n" + "".join(f"{x},{v}\n" for x, v in zip(b, y)))
    return str(p)


PLOT_COMMANDS = [
    ["simulate", "--horizon", "5"],
    ["region"],
    ["dtmc", "--rate", "5", "--prompt", "16", "--output", "20", "--b-max", "64"],
    ["latency", "--loads", "0.5"],
    ["pars", "--cross", "gpt4,claude-2.1"],
    ["fit", "CSV"],
]


@pytest.mark.parametrize("cmd", PLOT_COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("plot, words", [
    ("q.jpgx", [".png", ".svg", ".pdf"]),               # formats matplotlib can write, listed
    ("no/such/dir/q.png", ["existing folder", "no/such/dir"]),
    ("INPUT", ["other than the input"]),                # the command's own input file
    ("DIR", ["folder"]),
])
def test_plot_path_is_checked_before_any_work(cmd, plot, words, capsys, no_work, measured, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cmd = [measured if c == "CSV" else c for c in cmd]
    if plot == "INPUT":
        if cmd[0] == "dtmc":
            pytest.skip("dtmc reads no file (it refuses --trace)")
        if cmd[0] == "fit":
            plot = measured
        else:  # a trace file given as a figure name (an extension matplotlib knows)
            plot = str(tmp_path / "trace.png")
            (tmp_path / "trace.png").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                                "2023-11-16 18:16:03,100,100\n2023-11-16 18:17:03,100,100\n")
            if cmd[0] == "pars":
                cmd = cmd + ["--data", plot]
            else:
                cmd = [c for c in cmd if c not in ("--prompt", "16", "--output", "20")] + ["--trace", plot]
    elif plot == "DIR":
        (tmp_path / "fig.png").mkdir()
        plot = str(tmp_path / "fig.png")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_one_line([*cmd, "--plot", plot], capsys, "--plot", *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_plot_without_extension_prints_the_file_written(capsys, measured, tmp_path):
    rc, out, err = run(["fit", measured, "--kind", "staircase", "--plot", str(tmp_path / "fig")], capsys)
    assert rc == 0, err
    assert (tmp_path / "fig.png").is_file() and not (tmp_path / "fig").exists()
    assert f"plot            {tmp_path / 'fig.png'}" in out


# ---------------------------------------------------------------------------- report --out


def test_report_out_an_existing_file_is_one_line(capsys, no_work, tmp_path):
    f = tmp_path / "userfile"
    f.write_text("mine")
    assert_one_line(["report", "--out", str(f)], capsys, "--out", "file")
    assert f.read_text() == "mine"


def test_report_out_a_folder_with_the_users_files_is_refused(capsys, no_work, tmp_path):
    d = tmp_path / "mydir"
    d.mkdir()
    (d / "report.md").write_text("my own notes")
    err = assert_one_line(["report", "--out", str(d)], capsys, "--out", "report.md", "new or empty folder")
    assert ".fluidq-report" in err  # says what makes a folder fluidq's
    assert (d / "report.md").read_text() == "my own notes"


def test_report_out_missing_parent_is_refused(capsys, no_work, tmp_path):
    assert_one_line(["report", "--out", str(tmp_path / "no" / "such")], capsys, "--out", "existing folder")
    assert not (tmp_path / "no").exists()


def test_report_rewrites_a_folder_it_wrote(capsys, monkeypatch, tmp_path):
    import fluidq.report as report  # noqa: PLR0402 -- the module (fluidq.report is also a lazy name)

    calls = []

    def fake(out, *a, **k):
        calls.append(out)
        from pathlib import Path

        Path(out).mkdir(exist_ok=True)
        (Path(out) / "report.md").write_text("generated")
        return {"html": f"{out}/report.html", "markdown": f"{out}/report.md", "figures": []}

    monkeypatch.setattr(report, "build_report", fake)
    out = tmp_path / "rep"
    for _ in range(2):  # a new folder, then the same one again (it holds the marker now)
        rc, _, err = run(["report", "--out", str(out), "--quick"], capsys)
        assert rc == 0, err
    assert len(calls) == 2 and (out / ".fluidq-report").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(["report", "--out", str(empty)], capsys)[0] == 0


@pytest.mark.parametrize("rate", ["nan", "inf", "-1", "0"])
def test_report_rate_must_be_finite_and_positive(capsys, no_work, tmp_path, rate):
    assert_one_line(["report", "--quick", "--out", str(tmp_path / "r"), "--rate", rate], capsys, "--rate=")


def test_validate_out_follows_the_same_rule(capsys, no_work, tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    assert_one_line(["validate", "--fast", "--out", str(tmp_path)], capsys, "--out", "notes.txt")


# ------------------------------------------------------------------------------ capacity


@pytest.mark.parametrize("rate", ["-1", "nan", "inf", "0"])
def test_capacity_rate_is_checked(capsys, no_work, rate):
    assert_one_line(["capacity", "--rate", rate], capsys, "--rate=")


def test_capacity_rate_gives_the_load(capsys):
    rc, out, _ = run(["capacity", "--rate", "10"], capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("load"))
    assert rc == 0 and "10 req/s x 200 tokens" in line and "2,000 tokens/s" in line
    rc, out, _ = run(["capacity", "--rate", "10", "--json"], capsys)
    d = json.loads(out)
    assert d["offered"]["rate_per_s"] == 10 and d["offered"]["tokens_per_s"] == 2000
    assert d["offered"]["load"] == pytest.approx(2000 / d["tokens_per_s"])


def test_capacity_defaults_are_the_ones_help_names(capsys):
    """--help says --prompt/--output default to 100: the req/s line is printed for them."""
    rc, out, _ = run(["capacity"], capsys)
    assert rc == 0 and "requests        16.71 req/s for m_p+m_d = 200 tokens" in out
    assert "--prompt and --output 100 by default" in out
    rc, out, _ = run(["capacity", "--prompt", "100", "--output", "100"], capsys)
    assert "by default" not in out


def test_capacity_json_invents_no_arrival_rate(capsys):
    rc, out, _ = run(["capacity", "--engines", "2", "--prompt", "100", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["inputs"]["workload"]["arrival"] is None and "offered" not in d
    assert d["inputs"]["workload"]["mean_prompt_tokens"] == 100
    rc, out, _ = run(["capacity", "--trace", "azure-conv", "--json"], capsys)  # a trace's own rate is an input
    assert rc == 0 and json.loads(out)["inputs"]["workload"]["arrival"]["rate_per_s"] > 0


def test_check_json_has_its_inputs(capsys):
    rc, out, _ = run(["check", "--rate", "10", "--engines", "2", "--policy", "sarathi", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["inputs"]["arrival_rate_per_s"] == 10 and d["inputs"]["n_engines"] == 2
    assert d["inputs"]["engine"]["b_max"] == 512 and d["inputs"]["workload"]["mean_output_tokens"] == 100
    rc, out, _ = run(["check", "--load", "0.5", "--json"], capsys)
    for r in json.loads(out):  # one per scheduler, each with the inputs
        assert r["inputs"]["load_given"] == 0.5 and r["inputs"]["arrival_rate_per_s"] > 0


# ------------------------------------------------------------- options that would be ignored


@pytest.mark.parametrize("argv, words", [
    (["simulate", "--arrival", "periodic", "--cv", "3"], ["--cv", "periodic"]),
    (["simulate", "--cv", "3"], ["--cv", "poisson"]),
    (["simulate", "--swap-us-per-token", "5"], ["--swap-us-per-token", "--preemption swap"]),
    (["simulate", "--preemption", "swap", "--swap-us-per-token", "5"], ["--preemption", "--kv-capacity"]),
    (["simulate", "--trace", "azure-conv", "--geometric"], ["--geometric", "--trace"]),
    (["check", "--trace", "azure-conv", "--geometric"], ["--geometric", "--trace"]),
    (["simulate", "--requests", "10", "--replications", "2"], ["--replications", "--horizon"]),
    (["region", "--point", "620,2117", "--rate", "2", "--prompt", "290", "--output", "990"], ["--rate", "--point"]),
    (["region", "--rays", "3"], ["--rays", "--simulate"]),
    (["region", "--seed", "3"], ["--seed", "--simulate"]),
    (["capacity", "--model", "affine", "--b0", "5"], ["--b0", "affine"]),
    (["capacity", "--model", "affine", "--c-ms", "5"], ["--a-ms"]),
    (["capacity", "--model", "piecewise-linear"], ["--model", "--c-ms"]),
    (["capacity", "--profile", "vidur-llama2-7b-a100", "--model", "affine"], ["--model"]),
    (["latency", "--rate", "3"], ["--rate", "--loads"]),
    (["latency", "--tau", "0.5", "--orderings", "fcfs,sjf"], ["--tau", "pars"]),
    (["latency", "--gamma", "3", "--orderings", "fcfs,pars"], ["--gamma", "gamma-boost"]),
    (["latency", "--swap-ms-per-token", "1"], ["--swap-ms-per-token", "--preemption swap"]),
    (["latency", "--preemption", "swap", "--swap-ms-per-token", "1"], ["--preemption", "--kv-capacity"]),
    (["latency", "--reasoning", "--geometric"], ["--geometric", "--reasoning"]),
    (["pars", "--plot", "h.png"], ["--plot", "--cross"]),
    (["pars", "--load", "r.npz", "--delta", "0.3"], ["--delta", "--load"]),
])
def test_ignored_options_are_refused(capsys, no_work, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    assert_one_line(argv, capsys, *words, "ignored" if "--replications" not in argv and "--a-ms" not in words
                    else "")


def test_simulate_help_says_what_requests_with_horizon_does(capsys):
    from fluidq.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices["simulate"]
    text = " ".join(sub.format_help().split())
    assert "without --horizon the run lasts until they finish, with --horizon it stops at the horizon" in text


# ---------------------------------------------------------------------------- traces


@pytest.mark.parametrize("content, line", [
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.000,100,100\n"
     "2023-11-16 18:16:03.000,100,100\n2023-11-16 18:18:03.000,200,100\n", "line 3"),
    ('{"timestamp": 0, "input_length": 10, "output_length": 5}\n'
     '{"timestamp": 2000, "input_length": 10, "output_length": 5}\n'
     '{"timestamp": 1000, "input_length": 10, "output_length": 5}\n', "line 3"),
])
def test_unsorted_trace_is_refused_with_the_line(capsys, tmp_path, content, line):
    p = tmp_path / "tr.csv"
    p.write_text(content)
    for cmd in (["capacity"], ["check", "--policy", "sarathi"], ["report", "--out", str(tmp_path / "r")]):
        assert_one_line([*cmd, "--trace", str(p)], capsys, "--trace", str(p), line, "time order")


def test_sorted_trace_still_loads(capsys, tmp_path):
    p = tmp_path / "tr.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:16:03.000,100,100\n"
                 "2023-11-16 18:16:03.000,120,90\n2023-11-16 18:18:03.000,200,100\n")
    rc, out, err = run(["capacity", "--trace", str(p)], capsys)
    assert rc == 0 and "requests" in out, err


# --------------------------------------------------------------- messages name the flags


@pytest.mark.parametrize("argv, flag", [
    (["check", "--rate", "10", "--tolerance", "-1"], "--tolerance="),
    (["check", "--rate", "10", "--tolerance", "nan"], "--tolerance="),
    (["check", "--load", "nan"], "--load="),
    (["report", "--rate", "-1"], "--rate="),
    (["latency", "--replications", "0"], "--replications="),
    (["latency", "--horizon", "nan"], "--horizon="),
    (["latency", "--loads", "0.5,nan"], "--loads 0.5,nan: expected"),
    (["latency", "--gamma", "-1"], "--gamma="),
    (["latency", "--kv-capacity", "0"], "--kv-capacity="),
    (["dtmc", "--rate", "5", "--max-prefill", "0"], "--max-prefill="),
    (["dtmc", "--rate", "5", "--max-states", "0"], "--max-states="),
    (["dtmc", "--rate", "5", "--tolerance", "2"], "--tolerance="),
    (["fit", "m.csv", "--folds", "1"], "--folds="),
    (["pars", "--test-fraction", "1"], "--test-fraction="),
    (["pars", "--delta", "2"], "--delta="),
    (["pars", "--seed", "-1"], "--seed="),
    (["pars", "--save", "x.pkl"], ".npz"),
    (["capacity", "--b-max", "100.5"], "--b-max"),
    (["simulate", "--seed", "1.5"], "--seed"),
    (["capacity", "--engines", "1.5"], "--engines"),
    (["nosuchcommand"], "invalid choice"),
])
def test_errors_name_the_flag_on_one_line(capsys, no_work, tmp_path, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)
    assert_one_line(argv, capsys, flag)


def test_argparse_errors_are_one_line_and_help_is_unchanged(capsys):
    err = assert_one_line(["capacity", "--b-max", "100.5"], capsys)
    # argparse names the option by both its spellings (fluidq's and vLLM's)
    assert err.startswith("fluidq capacity: error: argument --b-max/--max-num-batched-tokens: invalid int value: "
                          "'100.5'")
    assert "fluidq capacity --help" in err
    rc, out, err = run(["capacity", "--help"], capsys)
    assert rc == 0 and out.startswith("usage: fluidq capacity") and "--b-max B_MAX" in out and not err


def test_pars_save_writes_the_npz_it_names(capsys, tmp_path, monkeypatch):
    """--save ends in .npz (checked up front); the printed name is the file written."""
    pytest.importorskip("scipy")
    monkeypatch.chdir(tmp_path)
    assert_one_line(["pars", "--save", "ranker.pkl"], capsys, "--save", ".npz")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv, words", [
    (["profiles", "list", "vidur-llama2-7b-a100"], ["NAME", "ignored", "profiles show vidur-llama2-7b-a100"]),
    (["profiles", "show"], ["NAME"]),
    (["dtmc", "--rate", "5", "--policy", "nope"], ["--policy", "nope"]),
    (["check", "--rate", "5", "--policy", "nope"], ["--policy", "nope"]),
    (["latency", "--orderings", "fcfs,nope"], ["unknown policy key (--orderings) 'nope'"]),
    (["dtmc", "--rate", "5", "--trace", "azure-conv"], ["--trace", "--rate/--prompt/--output"]),
])
def test_names_and_positionals_are_checked(capsys, no_work, argv, words):
    assert_one_line(argv, capsys, *words)


def test_sweep_options_checked_before_the_sweep(capsys, monkeypatch, tmp_path):
    import fluidq.sweep.case as sc

    case = tmp_path / "c.toml"
    case.write_text('[sweep]\nanalysis = "check"\n[grid]\nload = [0.5]\n')
    monkeypatch.setattr(sc, "load_case", boom)
    assert_one_line(["sweep", str(case), "--status", "--serial"], capsys, "--serial", "--status", "ignored")
    assert_one_line(["sweep", str(case), "--status", "--csv", "t.csv"], capsys, "--csv", "--status")
    assert_one_line(["sweep", str(case), "--csv", str(tmp_path / "no" / "t.csv")], capsys, "--csv", "existing folder")
    assert_one_line(["sweep", str(case), "--csv", str(case)], capsys, "--csv", "input case file")
    assert_one_line(["sweep", str(case), "--store", str(case)], capsys, "--store", "case file")


def test_unrecognized_arguments_name_the_command(capsys):
    err = assert_one_line(["capacity", "--no-such-flag", "3"], capsys, "--no-such-flag 3")
    assert err.startswith("fluidq capacity: error: unrecognized arguments")
