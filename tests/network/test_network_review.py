"""`fluidq network` as a new user meets it (review 2026-12-06)."""
import pytest

from fluidq.cli import main
from fluidq.errors import ParameterError
from fluidq.network.toml import load_network

CASE = """name = "n"
bottleneck_load = {bl}

[engines.A]
batch_time = {{ kind = "staircase", c = 0.01128, a = 0.03547, b0 = 128 }}
b_max = 512

[[classes]]
name = "x"
rate_per_s = 1.0
route = [{{ engine = "A", prompt = 10, output = 10 }}]
"""


@pytest.mark.parametrize("bl", ["1e300", "1e-300"])
def test_a_bottleneck_load_whose_rates_leave_the_range_names_bottleneck_load(tmp_path, bl):
    p = tmp_path / "n.toml"
    p.write_text(CASE.format(bl=bl))
    with pytest.raises(ParameterError) as exc:
        load_network(p)
    assert exc.value.name == "bottleneck_load" and str(exc.value).startswith(str(p)), str(exc.value)
    assert "rate_per_s" in str(exc.value)  # the reason: the rates it would set


def test_the_text_output_says_where_the_figures_were_written(tmp_path, capsys, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    assert main(["network", "fork_join", "--plot", "fluid", "--plot-network", "graph.svg"]) in (0, None)
    out = capsys.readouterr().out
    assert (tmp_path / "fluid.png").is_file() and (tmp_path / "graph.svg").is_file()
    assert "fluid.png" in out and "graph.svg" in out, out  # '--plot fluid' became fluid.png: said


def test_the_json_names_the_figures_written(tmp_path, capsys, monkeypatch):
    import json

    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    assert main(["network", "fork_join", "--plot-network", "graph", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["plot_network"] == "graph.png" and out["plot"] is None and (tmp_path / "graph.png").is_file()


def test_a_disaggregated_case_at_a_load_beyond_the_rate_range_says_what_the_load_does(capsys):
    assert main(["network", "pd_tandem", "--load", "1e300"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--load=1e+300" in err, err
    assert "expected a number <= 1e+09" not in err and "arrival rate" in err, err  # a load is no rate


@pytest.mark.parametrize("horizon", ["0.0001", "1"])
def test_a_disaggregated_simulation_too_short_to_decide_is_refused(capsys, horizon):
    # before: 4 runs of 0.1 ms served nothing and the verdict said 'stable, agrees with the fluid verdict'
    assert main(["network", "pd_tandem", "--simulate", "--horizon", horizon]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fluidq network: error: --horizon=") and "arrivals" in err, err


def test_a_random_router_refuses_a_queue_count_it_would_ignore(tmp_path):
    from fluidq.network import Router

    with pytest.raises(ParameterError) as exc:
        Router(name="p", engines=("A", "B"), policy="random", count="tokens")
    assert exc.value.name == "count" and "jsq" in str(exc.value)
    Router(name="p", engines=("A", "B"), policy="random")  # the default count is no choice: accepted
    p = tmp_path / "r.toml"
    p.write_text(CASE.format(bl=0.5).replace("[[classes]]", '[engines.B]\nbatch_time = { kind = "affine", c = 0.01, '
                 'a = 0.0 }\nb_max = 512\n[routers.p]\nengines = ["A", "B"]\npolicy = "random"\ncount = "tokens"\n'
                 '[[classes]]'))
    with pytest.raises(ParameterError) as exc:
        load_network(p)
    assert str(exc.value).startswith(f"{p} router 'p'") and "count" in str(exc.value), str(exc.value)
