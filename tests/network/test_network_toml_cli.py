"""TOML case files and the ``fluidq network`` command."""
from __future__ import annotations

import json

import pytest

from fluidq.cli import main
from fluidq.errors import DataError, ParameterError, TopologyError
from fluidq.network.toml import (
    CASES_DIR as CASES,  # the case files ship inside the package
)
from fluidq.network.toml import load_network, network_from_dict


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.glob("*.toml")))
def test_every_example_case_loads(name):
    net = load_network(CASES / name)
    assert net.stations and net.classes
    assert all(v >= 0 for v in net.loads().values())


def test_case_files_match_the_reference():
    rs = load_network(CASES / "llm_rybko_stolyar.toml")
    assert rs.loads() == pytest.approx({"E1": 0.9, "E2": 0.9})
    assert not rs.is_dag
    for name in ("rybko_stolyar.toml", "lu_kumar.toml"):
        assert load_network(CASES / name).loads() == pytest.approx({"S1": 0.7, "S2": 0.7})
    for name in ("plan_code_review.toml", "fork_join.toml", "jsq_pair.toml"):
        net = load_network(CASES / name)
        assert net.is_dag and net.bottleneck[1] == pytest.approx(0.9)
    ru = load_network(CASES / "random_unequal.toml")
    assert ru.loads() == pytest.approx({"fast": 0.6, "slow": 1.2})


def _base():
    return {"engines": {"E1": {"batch_time": {"kind": "affine", "c": 1.0, "a": 0.0}, "b_max": 64}},
            "classes": [{"name": "A", "rate_per_s": 1.0, "route": [{"engine": "E1", "prompt": 8, "output": 8}]}]}


def test_unknown_key_is_named():
    d = _base()
    d["engines"]["E1"]["bmax"] = 3
    with pytest.raises(DataError, match="unknown key 'bmax'"):
        network_from_dict(d)


def test_join_without_fork_in_toml():
    d = _base()
    d["classes"][0]["route"].append({"join": "f"})
    with pytest.raises(TopologyError, match="join 'f' with no fork"):
        network_from_dict(d)


def test_lengths_and_choice_in_toml():
    d = _base()
    d["classes"][0]["route"] = [{"engine": "E1", "prompt": {"dist": "geometric", "mean": 20}, "output": 0},
                                {"choice": [{"p": 0.25, "route": [{"engine": "E1", "prompt": 8, "output": 8}]},
                                            {"p": 0.75, "route": []}]}]
    net = network_from_dict(d)
    assert net.loads()["E1"] == pytest.approx((20 + 0.25 * 16) / 64)
    d["classes"][0]["route"][1]["choice"][1]["p"] = 0.5
    with pytest.raises(ParameterError, match="summing to 1"):
        network_from_dict(d)


def test_not_toml(tmp_path):
    p = tmp_path / "x.toml"
    p.write_text("this is = = not toml")
    with pytest.raises(DataError, match="not valid TOML"):
        load_network(p)


def test_cli_json_and_table(capsys, tmp_path):
    assert main(["network", str(CASES / "lu_kumar.toml"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "unstable" and out["decided_by"] == "fluid:diverging_path"
    assert main(["network", str(CASES / "fork_join.toml"), "--load", "1.1", "--plot", str(tmp_path / "a.png"),
                 "--plot-network", str(tmp_path / "b.png")]) == 0
    txt = capsys.readouterr().out
    assert "verdict: unstable (decided by the station loads)" in txt and "bottleneck: code" in txt
    assert (tmp_path / "a.png").stat().st_size > 1000 and (tmp_path / "b.png").stat().st_size > 1000


def test_cli_bad_input_exits_2(capsys, tmp_path):
    assert main(["network", str(tmp_path / "missing.toml")]) == 2
    assert "no such case file" in capsys.readouterr().err
    p = tmp_path / "bad.toml"
    p.write_text('[engines.E1]\nbatch_time = { kind = "affine", c = 1.0, a = 0.0 }\nb_max = 8\n'
                 '[[classes]]\nname = "A"\nrate_per_s = 1.0\nroute = [{ engine = "E7", prompt = 4, output = 4 }]\n')
    assert main(["network", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown engine 'E7'" in err


def test_shipped_cases_resolve_by_name(capsys, monkeypatch, tmp_path):
    from fluidq.network.toml import case_names

    assert sorted(case_names()) == sorted(p.stem for p in CASES.glob("*.toml"))
    monkeypatch.chdir(tmp_path)  # not the repository: names come from the package
    assert load_network("rybko_stolyar").name == load_network("rybko_stolyar.toml").name
    assert main(["network", "lu_kumar"]) == 0
    assert "topology: cycles" in capsys.readouterr().out
    assert main(["network", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(n in err for n in case_names())


def test_cycles_are_canonical_across_hash_seeds():
    import ast
    import subprocess
    import sys

    code = ("from fluidq.network.toml import load_network as L\n"
            "for n in ('lu_kumar', 'rybko_stolyar', 'llm_rybko_stolyar'): print(L(n).cycles())")
    outs = set()
    for seed in ("0", "1", "2", "3"):
        env = {"PYTHONHASHSEED": seed, "PATH": ""}
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        outs.add(r.stdout)
    assert len(outs) == 1
    for line in outs.pop().splitlines():
        for cyc in ast.literal_eval(line):
            assert cyc[0] == min(cyc)


def test_describe_capacity_has_thousands_separators():
    txt = load_network(CASES / "random_unequal.toml").describe()
    assert "10,240 tokens/s" in txt and "e+0" not in txt


@pytest.mark.parametrize("argv, option", [
    (["--seed", "-1", "--simulate"], "--seed"),
    (["--plot", "x.xyz"], "--plot"),
    (["--plot-network", "y.xyz"], "--plot-network"),
    (["--plot", "no/such/folder/p.png"], "--plot"),
    (["--load", "inf"], "--load"),
    (["--load", "nan"], "--load"),
    (["--load", "-1"], "--load"),
    (["--horizon", "10"], "--horizon"),
    (["--replications", "3"], "--replications"),
    (["--simulate", "--replications", "1"], "--replications"),
    (["--simulate", "--replications", "0"], "--replications"),
    (["--simulate", "--horizon", "0"], "--horizon"),
])
def test_cli_bad_options_are_one_line_before_any_work(capsys, monkeypatch, tmp_path, argv, option):
    import fluidq.network.stability as stab

    def boom(*a, **k):  # the options are checked before the analysis starts
        raise AssertionError("the analysis ran")

    monkeypatch.setattr(stab, "check_network_stability", boom)
    monkeypatch.chdir(tmp_path)
    assert main(["network", "lu_kumar", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and option in err, err
    if "xyz" in " ".join(argv):
        assert ".png" in err and ".svg" in err  # the formats matplotlib can write are listed
    if option in ("--horizon", "--replications") and "--simulate" not in argv:
        assert f"{option} {argv[1]} needs --simulate" in err
    else:
        assert option + "=" in err  # the value is named too
    assert not list(tmp_path.iterdir())  # nothing written


def test_cli_json_has_the_network(capsys):
    assert main(["network", "jsq_pair", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    net = out["network"]
    assert out["status"] == "stable" and net["name"] == "jsq-pair"
    assert [s["name"] for s in net["stations"]] == ["E1", "E2"]
    assert all(s["capacity_tokens_per_s"] > 0 for s in net["stations"])
    assert net["routers"][0]["name"] == "pool" and net["routers"][0]["engines"] == ["E1", "E2"]
    assert net["loads"]["E1"] == pytest.approx(0.9) and net["visit_rates"]


def test_cli_plot_puts_fluid_and_simulation_on_their_own_time_axes(capsys, monkeypatch, tmp_path):
    import fluidq.plotting.network as pn

    drawn = {}
    real = pn.plot_verdict

    def spy(result, *, ax=None, path=None, **kw):
        drawn["axes"] = real(result, ax=None, **kw)
        drawn["axes"][0].figure.savefig(path)
        return str(path)

    monkeypatch.setattr(pn, "plot_verdict", spy)
    p = tmp_path / "p.png"
    assert main(["network", "llm_rybko_stolyar", "--simulate", "--horizon", "20", "--replications", "2",
                 "--plot", str(p)]) == 0
    fl, sim = drawn["axes"]
    assert sim.get_xlim() == pytest.approx((0.0, 20.0))
    assert fl.get_xlim()[1] > 1000.0  # the fluid path from 100 requests runs for a long fluid time
    legends = [t.get_text() for a in (fl, sim) for t in a.get_legend().get_texts()]
    assert any("from 100 requests" in t and "'A.1'" in t for t in legends), legends
    assert any("starts empty" in t for t in legends), legends
    assert p.stat().st_size > 2000
