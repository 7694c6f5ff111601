"""Error messages stay one line that names what was given (issue 13): a value with a line break or
another control character is shown escaped (it used to cut the message, which then named nothing);
TOML nested too deeply is one line for every reader of case files; an empty validation case name is
a named parameter error, not a TypeError."""
import pytest

from fluidq.testing.cli import run_cli


run = run_cli


@pytest.mark.parametrize("value,shown", [("a\nb", r"a\nb"), ("w\u2028k", r"w\u2028k"), ("t\tx\x1cy", r"t\tx\x1cy")])
def test_a_control_character_in_a_value_is_escaped_not_a_line_break(value, shown, capsys):
    rc, out, err = run(["simulate", "--trace", value], capsys)
    assert rc == 2
    assert err.count("\n") == 1 and len(err.splitlines()) == 1, repr(err)
    assert shown in err, err


@pytest.mark.parametrize("argv", [["sweep", "{}", "--serial"], ["network", "{}"]])
@pytest.mark.parametrize("depth", [17, 100_000])
def test_deeply_nested_toml_is_one_line(argv, depth, tmp_path, capsys):
    p = tmp_path / "deep.toml"
    p.write_text("[grid]\nb_max = " + "[" * depth + "1" + "]" * depth + "\n")
    rc, out, err = run([a.replace("{}", str(p)) for a in argv], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert "deep.toml" in err and "nested" in err and "internal error" not in err, err


def test_toml_nesting_within_the_limit_is_read():
    from fluidq._io import MAX_TOML_DEPTH, toml_loads

    depth = MAX_TOML_DEPTH - 1  # the top-level table is the first level
    doc = toml_loads("a = " + "[" * depth + "1" + "]" * depth, where="x")
    inner = doc["a"]
    for _ in range(depth - 1):  # every level is a one-element list, and the innermost holds the 1
        assert isinstance(inner, list) and len(inner) == 1
        inner = inner[0]
    assert inner == [1]


def test_validate_with_an_empty_case_name_names_the_parameter(capsys):
    rc, out, err = run(["validate", "--fast", "--case=--"], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert "case" in err and "internal error" not in err, err


@pytest.mark.parametrize("option,word", [("--profile=", "--profile"), ("--trace=", "trace")])
def test_report_refuses_an_empty_profile_or_trace_before_writing(option, word, tmp_path, capsys):
    # an empty --profile used to mean the default profile (the report ran and was written)
    out = tmp_path / "rep"
    rc, _, err = run(["report", option, "--out", str(out)], capsys)
    assert rc == 2 and err.count("\n") == 1 and word in err, err
    assert not out.exists()


@pytest.mark.parametrize("argv,option", [(["region", "--simulate", "--policies=,fastertransformer,"], "--policies"),
                                         (["latency", "--orderings", "fcfs,,sjf"], "--orderings"),
                                         (["latency", "--loads", "0.5,"], "--loads"),
                                         (["pars", "--cross", "a,,b"], "--cross")])
def test_an_empty_item_in_a_comma_list_is_refused(argv, option, capsys):
    # issue 13: ',fastertransformer,' was read as one policy; an empty item is a typo, not nothing
    rc, _, err = run(argv, capsys)
    assert rc == 2 and err.count("\n") == 1 and option in err, err


def test_region_prompt_tokens_are_bounded():
    import fluidq
    from fluidq.errors import ParameterError

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512, k_max=64)
    for p in (1e308, 2**64 + 1):
        with pytest.raises(ParameterError, match="prompt_tokens"):
            fluidq.stability_region(e, prompt_tokens=p)


def test_fit_on_data_no_form_fits_is_one_line(tmp_path, capsys):
    # issue 13: fit on such data printed several lines (numpy and scipy warnings and the error)
    p = tmp_path / "t.csv"
    p.write_text("tokens,seconds\n1,5\n2,1\n3,100\n4,0.1\n5,3\n6,0.2\n")
    rc, out, err = run(["fit", str(p)], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert "t.csv" in err and "no batch-time form fits" in err, err


@pytest.mark.parametrize("command", [["capacity"], ["check", "--rate", "1"], ["simulate", "--horizon", "5"],
                                     ["region"], ["latency"]])
def test_an_empty_profile_is_not_the_default(command, capsys):
    rc, _, err = run([*command, "--profile="], capsys)
    assert rc == 2 and err.count("\n") == 1 and "--profile" in err and "empty" in err, err
