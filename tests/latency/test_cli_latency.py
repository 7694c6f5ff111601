"""`fluidq latency` and `fluidq pars`: tables, JSON, plots, one-line errors."""
import json

import pytest

from fluidq.cli import main


def test_latency_command_json_and_plot(tmp_path, capsys):
    png = tmp_path / "lat.png"
    rc = main(["latency", "--trace", "azure-conv", "--kv-capacity", "40000", "--loads", "0.6", "--horizon", "40",
               "--replications", "1", "--orderings", "fcfs,sjf,uniboost", "--json", "--plot", str(png)])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d["policies"] == ["fcfs", "sjf", "uniboost"]
    assert d["values"]["sjf"]["ttlt_p99_s"][0][0] > 0
    assert png.stat().st_size > 1000


def test_latency_command_table_and_errors(capsys):
    assert main(["latency", "--prompt", "50", "--output", "50", "--loads", "0.5", "--horizon", "20",
                 "--replications", "1", "--orderings", "fcfs,srpt"]) == 0
    out = capsys.readouterr().out
    assert "| srpt |" in out and "load 0.5" in out
    assert main(["latency", "--orderings", "nope", "--horizon", "5"]) == 2
    assert "unknown policy key" in capsys.readouterr().err
    assert main(["latency", "--loads", "x", "--horizon", "5", "--orderings", "fcfs"]) == 2


def test_pars_command_trains_saves_and_loads(tmp_path, capsys):
    npz = tmp_path / "r.npz"
    assert main(["pars", "--data", "gsm8k", "--model", "175b_verification", "--save", str(npz), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    tau = d["evaluation"]["tau_b"]
    assert -1 <= tau <= 1
    assert main(["pars", "--data", "gsm8k", "--model", "175b_verification", "--load", str(npz), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["evaluation"]["tau_b"] == pytest.approx(tau)
    assert main(["pars", "--data", "gsm8k", "--model", "nobody"]) == 2
    assert "unknown model" in capsys.readouterr().err


@pytest.mark.parametrize("argv, word", [
    (["--tau", "2"], "--tau"), (["--tau", "nan"], "--tau"), (["--tau", "0"], "--tau"), (["--tau", "-0.5"], "--tau"),
    (["--seed", "-1"], "--seed"),
])
def test_latency_bad_tau_and_seed_exit_2_with_one_line(argv, word, capsys):
    assert main(["latency", "--horizon", "5", "--orderings", "fcfs,pars", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and word in err and "Traceback" not in err, err


def test_latency_api_validates_tau_and_seed():
    from fluidq import Engine, Staircase, Workload
    from fluidq.errors import ParameterError
    from fluidq.latency import compare_orderings, standard_policies
    from fluidq.workload import Poisson

    e = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=50, output_tokens=50)
    with pytest.raises(ParameterError, match="tau"):
        standard_policies(e, w, keys=["pars"], tau=1.5)
    with pytest.raises(ParameterError, match="seed"):
        standard_policies(e, w, keys=["fcfs"], seed=-1)
    with pytest.raises(ParameterError, match="rng"):
        compare_orderings(e, w, ["fcfs"], loads=[0.5], horizon_s=5, n_replications=1, rng=-1)


def test_pars_cross_matrix_names_its_columns(capsys):
    models = ["175b_verification", "6b_finetuning"]
    assert main(["pars", "--data", "gsm8k", "--model", models[0], "--cross", ",".join(models)]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = next(k for k, s in enumerate(lines) if s.startswith("cross-model tau_b"))
    header, rows = lines[i + 1], lines[i + 2:i + 4]
    assert header.split()[-2:] == models  # columns by name, not by number
    for m, row in zip(models, rows):
        cells = row.split()
        assert cells[0] == m and all(-1 <= float(v) <= 1 for v in cells[1:]) and len(cells) == 3
