"""An option given with an empty value is refused naming it, not taken as its default (review 2026-12-06).

Before: ``fluidq latency --loads ''`` ran the default loads 0.5,0.7,0.9; ``fluidq pars --model ''`` trained on the
first model, ``--cross ''`` and ``--pool ''`` were dropped, ``--load ''`` trained a new ranker instead of loading one.
"""
import pytest

from fluidq.cli import main


@pytest.mark.parametrize("argv, flag", [
    (["latency", "--loads", "", "--horizon", "5", "--replications", "1"], "--loads"),
    (["latency", "--loads", " ", "--horizon", "5", "--replications", "1"], "--loads"),
    (["pars", "--model", ""], "--model"),
    (["pars", "--cross", ""], "--cross"),
    (["pars", "--pool", ""], "--pool"),
    (["pars", "--load", ""], "--load"),
])
def test_an_empty_value_is_refused_naming_the_flag(capsys, argv, flag):
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err
    assert err.count("\n") == 1 and flag in err and "internal error" not in err, err


def test_pars_splits_beyond_what_can_run_are_refused_before_any_training(capsys):
    # before: --splits 100000 trained 100,000 rankers (about 0.5 s each: half a day) with no bound
    assert main(["pars", "--splits", "100000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--splits=100000" in err and "at most" in err, err


def test_pars_cross_names_each_model_once(capsys):
    assert main(["pars", "--cross", "gpt4,gpt4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--cross" in err and "gpt4" in err, err
