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
