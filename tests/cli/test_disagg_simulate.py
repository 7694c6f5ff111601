"""``fluidq disagg --simulate`` (issue 20 tidy): the API simulates a disaggregated tandem
(fluidq.capacity.disaggregated_case.check_disaggregated(simulate=True), ``fluidq network CASE --simulate``), the
``disagg`` command had no such flag.  It now runs the same seeded replications beside the fluid verdict, labelled
(sim), and says whether they agree."""
import json

import pytest

from fluidq.testing.cli import assert_one_line, run_cli

BASE = ["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100", "--prefill-engines", "1", "--decode-engines", "2"]


def test_a_stable_tandem_is_simulated_and_labelled(capsys):
    rc, out, err = run_cli([*BASE, "--rate", "5", "--simulate", "--horizon", "40"], capsys)
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("simulated"))
    assert "stable (sim) at 5 req/s" in line and "4 seeded runs of 40 s" in line
    assert "agrees with the fluid verdict" in line
    assert "verdict         stable" in out


CASE = """name = "pd"
[disaggregated]
prefill_engines = 1
decode_engines = 2
model = "Llama-3.1-8B"
gpu = "H100"
[workload]
rate_per_s = 60.0
prompt = 1000
output = 200
"""


def test_the_same_tandem_as_a_case_file_gives_the_same_simulation(capsys, tmp_path):
    """An overloaded tandem (60 req/s, load 1.45): ``disagg --simulate`` and ``network CASE --simulate`` (the API's
    check_disaggregated) run the same seeded replications: the same growth share, the same decision.  (25 s: runs
    under five request sojourns, 5 x 4.70 s here, cannot call a tandem unstable since h-pdreview; it was 10 s.)"""
    sim = ["--simulate", "--horizon", "25", "--replications", "3", "--seed", "3", "--json"]
    rc, out, err = run_cli([*BASE, "--rate", "60", *sim], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert d["verdict"] == "unstable" and d["simulated"] == "unstable" and d["agree"] is True
    case = tmp_path / "pd.toml"
    case.write_text(CASE)
    rc, out, err = run_cli(["network", str(case), *sim], capsys)
    assert rc == 0, err
    n = json.loads(out)
    assert n["simulated"] == d["simulated"] and n["agree"] is d["agree"]
    assert d["simulation"]["growth_share"] == n["simulation"]["growth_share"]
    assert d["simulation"]["growth_share_ci"] == n["simulation"]["growth_share_ci"]


@pytest.mark.parametrize("extra, words", [
    (["--prefill-engines", "1", "--decode-engines", "2"], ("--simulate", "--rate")),
    (["--gpus", "4"], ("--simulate", "--gpus")),
])
def test_simulate_needs_a_rate(capsys, extra, words):
    argv = ["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100", *extra, "--simulate"]
    assert_one_line(argv, capsys, *words)


def test_simulation_options_are_checked_before_work(capsys):
    assert_one_line([*BASE, "--rate", "5", "--horizon", "40"], capsys, "--horizon 40 needs --simulate")
    assert_one_line([*BASE, "--rate", "5", "--simulate", "--horizon", "10"], capsys, "--horizon=10.0",
                    "at least 100 arrivals")
    assert_one_line([*BASE, "--rate", "5", "--simulate", "--replications", "1"], capsys, "--replications=1")
