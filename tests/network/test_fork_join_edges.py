"""The station graph's edges around a fork and its join (independent review, finding 1).

A line that runs no hop between a fork and its join hands nothing on: the hop after the join follows the
branches' last hops, not the hop before the fork.  ``O -> fork{S1 | S2 -> S3 | S3} -> join -> O`` has the
cycles ``O -> S1 -> O`` ... and no ``O -> O`` self-loop (the old graph added one and refused the DAG claim
with "has the cycle O -> O")."""
from __future__ import annotations

import pytest

from fluidq.cli import main
from fluidq.errors import TopologyError
from fluidq.network.toml import network_from_dict

ENG = {"batch_time": {"kind": "affine", "c": 0.01, "a": 0.00004}, "b_max": 512}


def hop(e, name):
    return {"engine": e, "prompt": 100, "output": 10, "name": name}


def net(route, claim=None, engines=("O", "S1", "S2", "S3", "X")):
    d = {"name": "t", "engines": {e: dict(ENG) for e in engines},
         "classes": [{"name": "c", "rate_per_s": 0.5, "route": route}]}
    if claim:
        d["claim"] = claim
    return network_from_dict(d)


FJ = [hop("O", "plan"),
      {"fork": "f", "branches": [[hop("S1", "b1")], [hop("S2", "b2a"), hop("S3", "b2b")], [hop("S3", "b3")]]},
      {"join": "f"}, hop("O", "merge")]


def test_fork_join_back_to_the_first_station_has_no_self_loop():
    n = net(FJ)
    assert sorted(n.graph.edges()) == [("O", "S1"), ("O", "S2"), ("O", "S3"), ("S1", "O"), ("S2", "S3"),
                                       ("S3", "O")]
    assert n.cycles() == [["O", "S1"], ["O", "S3"], ["O", "S2", "S3"]]


def test_dag_claim_names_a_real_cycle():
    with pytest.raises(TopologyError, match=r"has the cycle O -> S1 -> O$"):
        net(FJ, claim="dag")


def test_cli_topology_line_prints_closed_cycles(tmp_path, capsys):
    p = tmp_path / "fj.toml"
    p.write_text('name = "fj"\n' + "".join(
        f'[engines.{e}]\nbatch_time = {{ kind = "affine", c = 0.01, a = 0.00004 }}\nb_max = 512\n'
        for e in ("O", "S1", "S2", "S3"))
        + '[[classes]]\nname = "c"\nrate_per_s = 0.5\nroute = [\n'
        '{ engine = "O", prompt = 100, output = 10, name = "plan" },\n'
        '{ fork = "f", branches = [[{ engine = "S1", prompt = 100, output = 10, name = "b1" }],\n'
        '  [{ engine = "S2", prompt = 100, output = 10, name = "b2a" }, '
        '{ engine = "S3", prompt = 100, output = 10, name = "b2b" }],\n'
        '  [{ engine = "S3", prompt = 100, output = 10, name = "b3" }]] },\n'
        '{ join = "f" },\n{ engine = "O", prompt = 100, output = 10, name = "merge" },\n]\n')
    assert main(["network", str(p)]) == 0
    out = capsys.readouterr().out
    assert "topology: cycles O -> S1 -> O; O -> S3 -> O; O -> S2 -> S3 -> O\n" in out


def test_a_main_line_hop_inside_the_fork_precedes_the_join():
    n = net([hop("O", "plan"), {"fork": "f", "branches": [[hop("S1", "b1")]]}, hop("X", "side"),
             {"join": "f"}, hop("S2", "after")])
    assert sorted(n.graph.edges()) == [("O", "S1"), ("O", "X"), ("S1", "S2"), ("X", "S2")]


def test_nested_forks():
    # O, fork f {S1, fork g {S2} join g} , fork h {S3}, join h, join f, O: no O -> O, no S1 -> O directly
    # unless S1 ends its branch (it does not: the inner join g follows it with nothing after it -> S2 ends).
    n = net([hop("O", "plan"),
             {"fork": "f", "branches": [[hop("S1", "a"), {"fork": "g", "branches": [[hop("S2", "b")]]},
                                         {"join": "g"}]]},
             {"fork": "h", "branches": [[hop("S3", "c")]]},
             {"join": "h"}, {"join": "f"}, hop("O", "merge")])
    assert sorted(n.graph.edges()) == [("O", "S1"), ("O", "S3"), ("S1", "S2"), ("S2", "O"), ("S3", "O")]
    assert n.is_dag is False and ["O", "O"] not in n.cycles() and ["O"] not in n.cycles()


def test_nested_fork_inside_a_branch_returning_to_its_station():
    # S1 -> fork{S2} -> join -> S1 inside a branch: S1 -> S2 -> S1, no S1 -> S1
    n = net([hop("O", "plan"),
             {"fork": "f", "branches": [[hop("S1", "a"), {"fork": "g", "branches": [[hop("S2", "b")]]},
                                         {"join": "g"}, hop("S1", "a2")]]},
             {"join": "f"}, hop("X", "end")])
    assert not n.graph.has_edge("S1", "S1") and not n.graph.has_edge("O", "X")
    assert n.cycles() == [["S1", "S2"]]


def test_every_line_may_run_no_hop_then_the_hop_before_the_fork_precedes():
    # the only branch may leave at once (an empty option): then plan is followed directly by merge
    n = net([hop("O", "plan"),
             {"fork": "f", "branches": [[{"choice": [{"p": 0.5, "route": [hop("S1", "b1")]},
                                                     {"p": 0.5, "route": []}]}]]},
             {"join": "f"}, hop("X", "merge")])
    assert sorted(n.graph.edges()) == [("O", "S1"), ("O", "X"), ("S1", "X")]
    # ... but not when another branch always runs a hop
    n = net([hop("O", "plan"),
             {"fork": "f", "branches": [[{"choice": [{"p": 0.5, "route": [hop("S1", "b1")]},
                                                     {"p": 0.5, "route": []}]}], [hop("S2", "b2")]]},
             {"join": "f"}, hop("X", "merge")])
    assert sorted(n.graph.edges()) == [("O", "S1"), ("O", "S2"), ("S1", "X"), ("S2", "X")]
