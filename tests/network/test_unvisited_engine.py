"""A case file's engine that no class visits is refused, named (revbad2 L7); a network built in Python keeps
it and its description notes it.  Before, both were accepted at load 0 with no note (most likely a typo in a
hop's engine name, or a table left over)."""
import pytest

from fluidq.cli import main
from fluidq.errors import DataError
from fluidq.network.toml import load_network, network_from_dict

ENG = '[engines.{}]\nbatch_time = {{ kind = "staircase", c = 0.01128, a = 0.03547, b0 = 128 }}\nb_max = 512\n'


def _hop(e):
    return f'{{ engine = "{e}", prompt = 100, output = 10 }}'


def _write(tmp_path, engines, route, extra=""):
    p = tmp_path / "case.toml"
    p.write_text('name = "t"\n' + "".join(ENG.format(e) for e in engines) + extra
                 + f'[[classes]]\nname = "x"\nrate_per_s = 1.0\nroute = [{", ".join(route)}]\n')
    return p


def test_an_engine_no_class_visits_is_refused_by_name(tmp_path):
    p = _write(tmp_path, "abc", [_hop("a"), _hop("b")])
    with pytest.raises(DataError, match=r"case\.toml engine 'c': no class visits it .*remove \[engines\.c\] "
                                        r"\(engines the classes visit: a, b\)$"):
        load_network(p)


def test_every_unvisited_engine_is_listed(tmp_path):
    with pytest.raises(DataError, match=r"engine 'b': .*; also unvisited: d$"):
        load_network(_write(tmp_path, "abcd", [_hop("a"), _hop("c")]))


def test_engines_behind_a_router_and_in_branches_are_visited(tmp_path):
    route = [_hop("pool"), '{ fork = "f", branches = [[' + _hop("c") + ']] }', '{ join = "f" }',
             '{ choice = [{ p = 0.5, route = [' + _hop("d") + '] }, { p = 0.5, route = [] }] }']
    p = _write(tmp_path, "abcd", route, '[routers.pool]\nengines = ["a", "b"]\npolicy = "jsq"\n')
    assert [s.name for s in load_network(p).stations] == ["a", "b", "c", "d"]


def test_cli_refuses_it_in_one_line(tmp_path, capsys):
    p = _write(tmp_path, "abc", [_hop("a"), _hop("b")])
    assert main(["network", str(p)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "engine 'c': no class visits it" in err, err


def test_a_python_network_notes_it_in_its_description():
    eng = {"batch_time": {"kind": "staircase", "c": 0.01128, "a": 0.03547, "b0": 128}, "b_max": 512}
    net = network_from_dict({"engines": {e: dict(eng) for e in "abc"},
                             "classes": [{"name": "x", "rate_per_s": 1.0,
                                          "route": [{"engine": "a", "prompt": 100, "output": 10}]}]})
    lines = {ln.split(":")[0].strip(): ln for ln in net.describe().splitlines()[1:]}
    assert "(no class visits it: a typo in a hop's engine name?)" in lines["b"]
    assert "(no class visits it" in lines["c"] and "no class visits" not in lines["a"]
