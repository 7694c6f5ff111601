"""What a new user reads (review of the CLI output): an option given twice under its two names with
different values is refused; missing constants are named as required; the paper's defaults are stated;
CLI answers name the CLI way, not Python; numbers are rounded; plurals are right; --help groups."""
import pytest

from fluidq.cli.common import VLLM_ALIASES
from fluidq.testing.cli import assert_one_line, run_cli


run = run_cli

_VALUES = {"--b-max": ("512", "1024"), "--k-max": ("8", "16"), "--prompt": ("64", "70"), "--output": ("32", "40"),
           "--rate": ("2", "3"), "--requests": ("10", "20")}


def _cmd(paper):
    return ["simulate", "--horizon", "3", "--no-progress", "--rate", "2"] if paper == "--requests" \
        else ["capacity"] + ([] if paper == "--rate" else ["--rate", "2"])


@pytest.mark.parametrize("vllm, paper", sorted(VLLM_ALIASES.items()))
@pytest.mark.parametrize("vllm_first", [False, True])
def test_two_spellings_with_different_values_are_refused(vllm, paper, vllm_first, capsys):
    a, b = _VALUES[paper]
    pair = [vllm, b, paper, a] if vllm_first else [paper, a, vllm, b]
    err = assert_one_line([*_cmd(paper), *pair], capsys, vllm, paper)
    assert "same option" in err


@pytest.mark.parametrize("vllm, paper", sorted(VLLM_ALIASES.items()))
def test_two_spellings_with_the_same_value_are_fine(vllm, paper, capsys):
    a, _ = _VALUES[paper]
    rc, out, err = run([*_cmd(paper), paper, a, vllm, a, "--json"], capsys)
    assert rc == 0, err


def test_affine_without_a_ms_says_it_is_required(capsys):
    err = assert_one_line(["capacity", "--model", "affine", "--c-ms", "10", "--b-max", "512"], capsys,
                          "--a-ms is required with --model affine")
    assert "None" not in err


@pytest.mark.parametrize("argv, note", [
    (["--c-ms", "10"], "--a-ms and --b0 the paper's by default"),
    (["--c-ms", "10", "--a-ms", "30"], "--b0 the paper's by default"),
    (["--model", "affine", "--a-ms", "0.1"], "--c-ms the paper's by default"),
])
def test_the_paper_constants_taken_by_default_are_stated(argv, note, capsys):
    rc, out, err = run(["capacity", *argv, "--b-max", "512"], capsys)
    assert rc == 0, err
    assert note in out, out


def test_no_default_note_when_all_constants_are_given(capsys):
    rc, out, err = run(["capacity", "--c-ms", "10", "--a-ms", "30", "--b0", "64", "--b-max", "512"], capsys)
    assert rc == 0 and "by default)" not in out.splitlines()[0], out


def test_a_reason_repeated_on_several_lines_becomes_one_footnote():
    from fluidq.cli.common import shared_reasons

    tail = "k_max=64 binds: " + "the point leaves the stability region through batches of 65 prefill tokens " * 3
    reasons = ["orca forms A: " + tail, "sarathi forms B: " + tail, "vllm: not work-conserving"]
    out, notes = shared_reasons(reasons)
    assert out == ["orca forms A: see [1] below", "sarathi forms B: see [1] below", "vllm: not work-conserving"]
    assert notes == ["[1] " + tail]
    assert shared_reasons(["a: b", "c: d"]) == (["a: b", "c: d"], [])


def test_check_reasons_name_the_cli_not_python(capsys):
    rc, out, err = run(["check", "--max-num-seqs", "64", "--rate", "10"], capsys)
    assert rc == 0, err
    assert "fluidq simulate --replications N" in out and "fluidq region" in out
    rc, out, err = run(["check", "--rate", "10", "--geometric", "--policy", "vllm"], capsys)
    assert rc == 0, err
    assert "fluidq simulate --replications N" in out and "Fixed prompts" not in out


def test_region_point_names_no_python_call(capsys):
    rc, out, err = run(["region", "--point", "600,2000"], capsys)
    assert rc == 0, err
    assert "RegionAware(engine=" not in out and "fluidq.policies" not in out


def _exact_staircase(tmp_path):
    import math

    path = tmp_path / "exact.csv"
    rows = ["tokens,seconds"] + [f"{b},{(11.28 + 35.47 * math.ceil(b / 128)) / 1e3:.6g}" for b in range(16, 1025, 16)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("cmd", [["fit"], ["capacity", "--b-max", "512", "--fit"]])
def test_a_float_noise_mape_is_shown_as_below_a_hundredth_percent(cmd, tmp_path, capsys):
    rc, out, err = run([*cmd, str(_exact_staircase(tmp_path))], capsys)
    assert rc == 0, err
    assert "< 0.01%" in out and "e-1" not in out, out


def test_region_point_is_shown_as_given_and_the_scale_once_rounded(capsys):
    rc, out, err = run(["region", "--point", "2400,600"], capsys)
    assert rc == 0, err
    assert "(2,400, 600) tokens/s" in out, out
    assert "scale 1.114," in out and "x1.114" in out and "1.1143" not in out, out
    assert "shape(s)" not in out and "2 batch shapes" in out, out


def test_counted_writes_the_plural_the_count_says():
    from fluidq.cli.common import counted

    assert counted("5 replication(s) of 2 batch shape(s), 1 run(s)") == "5 replications of 2 batch shapes, 1 run"
    assert counted("missing column(s) a, b") == "missing column(s) a, b"  # no count: unchanged


def test_pars_names_the_ranker_in_words(capsys):
    rc, out, err = run(["pars"], capsys)
    assert rc == 0, err
    line = next(s for s in out.splitlines() if s.startswith("ranker"))
    assert "hashed n-grams (16 bits, n-grams up to 2)" in line and "{" not in line, line


def _group_of(out, flag):
    """The --help group title above the line that lists ``flag``."""
    title = None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            title = line
        elif line.strip().startswith(flag):
            return title
    return None


@pytest.mark.parametrize("command", ["capacity", "check"])
def test_kv_capacity_is_listed_with_the_engine_options(command, capsys):
    rc, out, _ = run([command, "--help"], capsys)
    assert rc == 0
    assert _group_of(out, "--kv-capacity").startswith("engine"), out


def test_lengths_and_token_means_read_as_words():
    from fluidq.cli.common import fmt_tokens, lengths_text
    from fluidq.workload import Geometric, Poisson, Workload

    w = Workload(arrival=Poisson(rate_per_s=1), prompt_tokens=100, output_tokens=100)
    assert lengths_text(w) == "100 / 100 tokens (fixed)"
    g = Workload(arrival=Poisson(rate_per_s=1), prompt_tokens=Geometric(mean_tokens=100),
                 output_tokens=Geometric(mean_tokens=211.126))
    assert lengths_text(g) == "mean 100 / 211.1 tokens (geometric)"
    assert (fmt_tokens(211.126), fmt_tokens(1154.7), fmt_tokens(100.0)) == ("211.1", "1,155", "100")
