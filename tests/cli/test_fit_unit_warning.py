"""`fluidq fit` warns (one stderr line) when the "seconds" column is implausible for one iteration
(new-user review, inputs item 7: 20 s batches -- milliseconds read as seconds -- were fitted without a word)."""
import numpy as np

from fluidq.cli import main
from fluidq.cli.commands.fit import PLAUSIBLE_ITERATION_S, unit_warning


def _csv(tmp_path, seconds, name="m.csv"):
    p = tmp_path / name
    b = [64 * 2 ** k for k in range(len(seconds))]
    p.write_text("tokens,seconds\n" + "".join(f"{x},{t!r}\n" for x, t in zip(b, seconds)))
    return p


def _times(rng, scale):
    """An affine engine's iteration times (10-60 ms) with noise, times ``scale``."""
    b = np.array([64 * 2 ** k for k in range(6)], dtype=float)
    return [float(v) for v in (0.010 + 2.5e-5 * b) * rng.uniform(0.97, 1.03, b.size) * scale]


def test_milliseconds_in_the_seconds_column_warn_once(tmp_path, capsys):
    # one seed: the +-3 % noise cannot cross the threshold (times 10-61 ms: x 1e3 always above 10 s, x 1 below)
    rng = np.random.default_rng(0)
    p = _csv(tmp_path, _times(rng, 1e3))  # the same engine, in milliseconds
    assert main(["fit", str(p)]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("fluidq fit: warning: "), err
    assert "milliseconds (divide by 1,000)" in err and str(p) in err, err
    assert "model" in out  # the fit itself goes on


def test_microseconds_are_named_too(tmp_path, capsys):
    p = _csv(tmp_path, _times(np.random.default_rng(9), 1e6))
    assert main(["fit", str(p), "--json"]) == 0
    assert "microseconds (divide by 1,000,000)" in capsys.readouterr().err


def test_plausible_seconds_stay_quiet(tmp_path, capsys):
    p = _csv(tmp_path, _times(np.random.default_rng(0), 1.0))
    assert main(["fit", str(p)]) == 0
    assert capsys.readouterr().err == ""


def test_the_threshold_and_the_engine_fit_flag(tmp_path, capsys):
    assert unit_warning([0.5, PLAUSIBLE_ITERATION_S], "csv", "x") is None
    assert unit_warning([0.5, PLAUSIBLE_ITERATION_S * 1.01], "csv", "x") is not None
    p = _csv(tmp_path, _times(np.random.default_rng(3), 1e3), "engine.csv")
    assert main(["capacity", "--fit", str(p), "--b-max", "2048", "--json"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("fluidq capacity: warning: --fit=") and "milliseconds" in err, err
