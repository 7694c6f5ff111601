"""``fluidq region``: table, --json, --point, --policies, --plot, and one-line errors (exit 2)."""
import json

import pytest

from fluidq.cli import main


def run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_region_table_shows_vertex_c(capsys):
    rc, out, _ = run(["region", "--b-max", "1024", "--k-max", "100"], capsys)
    assert rc == 0
    assert "(29, 99)" in out and "620.3" in out and "2,118" in out


def test_region_json_and_point(capsys):
    rc, out, _ = run(["region", "--b-max", "1024", "--k-max", "100", "--point", "1000,1000", "--json"], capsys)
    assert rc == 0
    d = json.loads(out)
    assert d["point"]["mix"]["feasible"] and d["point"]["margin"]["inside"]
    assert [0.0, 0.0] in d["region"]["vertices_tokens_per_s"]


def test_region_workload_and_policies_and_plot(tmp_path, capsys):
    png = tmp_path / "region.png"
    rc, out, _ = run(["region", "--b-max", "1024", "--k-max", "100", "--prompt", "290", "--output", "990",
                      "--rate", "2.0", "--policies", "sarathi,sarathi:128", "--plot", str(png)], capsys)
    assert rc == 0 and png.stat().st_size > 1000
    assert "lambda* = 2.139" in out
    assert "sarathi-1024" in out and "sarathi-128" in out


@pytest.mark.parametrize("argv,word", [
    (["region", "--k-max", "0"], "--k-max"),
    (["region", "--point=-1,3"], "point"),
    (["region", "--point=nan,3"], "point"),
    (["region", "--point", "1,2,3"], "--point"),
    (["region", "--policies", "nope"], "nope"),
    (["region", "--engines", "2"], "--engines"),
])
def test_region_bad_input_exit_2(argv, word, capsys):
    rc, out, err = run(argv, capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and word in err, err


def test_region_simulate(tmp_path, capsys):
    rc, out, _ = run(["region", "--b-max", "1024", "--k-max", "100", "--policies", "sarathi", "--simulate",
                      "--rays", "2", "--json", "--plot", str(tmp_path / "s.png")], capsys)
    assert rc == 0
    d = json.loads(out)
    assert len(d["simulated"]["sarathi-1024"]["points_tokens_per_s"]) == 2
    rc, out, err = run(["region", "--simulate"], capsys)
    assert rc == 2 and "--policies" in err


def test_region_uses_fixed_prompt_like_capacity(capsys):
    """Deterministic prompts: region's lambda* is the one ``max_throughput`` (fluidq capacity) reports."""
    rc, out, _ = run(["region", "--k-max", "100", "--prompt", "100", "--output", "100", "--rate", "14",
                      "--json"], capsys)
    assert rc == 0
    lam = json.loads(out)["workload"]["max_request_rate_per_s"]
    rc, out, _ = run(["capacity", "--k-max", "100", "--prompt", "100", "--output", "100", "--json"], capsys)
    assert rc == 0
    assert lam == pytest.approx(json.loads(out)["requests_per_s"], rel=1e-9)


def test_region_simulate_validates_before_progress(capsys):
    rc, _, err = run(["region", "--rays", "0", "--simulate", "--policies", "sarathi"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--rays" in err and "simulating" not in err


@pytest.mark.parametrize("value", ["-1,5", "-1e3,-5", "5,-1"])
def test_region_negative_point_reaches_fluidq(value, capsys):
    rc, _, err = run(["region", "--point", value], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--point" in err and "non-negative" in err, err


def test_region_shortfall_has_no_round_off(capsys):
    rc, out, _ = run(["region", "--b-max", "1024", "--k-max", "100", "--point", "700,2117.6"], capsys)
    assert rc == 0
    line = next(s for s in out.splitlines() if "short by" in s)
    assert "e-0" not in line
