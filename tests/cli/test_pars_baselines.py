"""fluidq pars --baselines / --splits: the ranker baselines beside PARS's pairwise one, over seeded splits."""
import json

import pytest

from fluidq.predict.baselines import tau_over_splits
from fluidq.predict.data import load_lengths
from fluidq.testing.cli import run_cli as run


def test_baselines_on_the_same_split(capsys):
    rc, out, err = run(["pars", "--baselines", "pointwise,random", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert set(d["baselines"]) == {"pointwise", "random"}
    # a trained baseline carries length information; random scores do not
    assert d["baselines"]["pointwise"] > 0.2 > abs(d["baselines"]["random"])


def test_splits_report_the_same_numbers_as_the_api(capsys):
    rc, out, err = run(["pars", "--baselines", "bucket", "--splits", "2", "--seed", "4", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)["splits"]
    assert set(d) == {"cues", "bucket"}       # the default ranker, then the baselines
    ds = load_lengths("alpaca_eval")
    L = ds.of(ds.models[0])
    import numpy as np

    ok = np.flatnonzero(np.isfinite(L))
    api = tau_over_splits([ds.prompts[i] for i in ok], L[ok], "bucket", n_splits=2, rng=4)
    assert d["bucket"]["tau_b"] == pytest.approx(api["tau_b"])
    rc, out, _ = run(["pars", "--splits", "2", "--ranker", "pairwise"], capsys)
    assert "over 2 seeded splits" in out and "pairwise" in out and "±" in out


@pytest.mark.parametrize("argv, flag", [(["--baselines", "pointwse"], "--baselines"),
                                        (["--baselines", "bucket,bucket"], "--baselines"),
                                        (["--splits", "1"], "--splits")])
def test_bad_values_are_refused_by_name(argv, flag, capsys):
    rc, _, err = run(["pars", *argv], capsys)
    assert rc == 2 and flag in err and err.count("\n") == 1, err


def test_not_with_a_loaded_ranker(tmp_path, capsys):
    f = tmp_path / "r.npz"
    rc, _, err = run(["pars", "--save", str(f)], capsys)
    assert rc == 0, err
    rc, _, err = run(["pars", "--load", str(f), "--splits", "2"], capsys)
    assert rc == 2 and "--splits" in err, err
