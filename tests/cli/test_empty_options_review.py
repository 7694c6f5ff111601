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


def test_pars_save_replaces_only_a_ranker_fluidq_saved(tmp_path, capsys):
    import numpy as np

    mine = tmp_path / "mine.npz"
    np.savez(mine, x=np.arange(3))  # a user's own NumPy archive: before, replaced silently
    before = mine.read_bytes()
    assert main(["pars", "--save", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--save" in err and "not replaced" in err, err
    assert mine.read_bytes() == before
    ours = tmp_path / "ranker.npz"
    assert main(["pars", "--save", str(ours)]) in (0, None)
    assert main(["pars", "--save", str(ours), "--seed", "1"]) in (0, None)  # a ranker it saved: written over
    capsys.readouterr()


def test_pars_json_says_which_ranker_was_scored_and_where_it_was_saved(tmp_path, capsys):
    import json

    out = tmp_path / "r.npz"
    assert main(["pars", "--data", "gsm8k", "--save", str(out), "--json"]) in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert d["saved"] == str(out) and out.is_file()
    assert d["ranker"]["backbone"]["backbone"] and "fit_seconds" in d["ranker"]["info"]
