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
