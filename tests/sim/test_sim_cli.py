"""``fluidq simulate``: table, JSON, plot, verdicts, bad input (exit 2, one line)."""
import json

from fluidq.cli import main


def test_json_and_plot(tmp_path, capsys):
    png = tmp_path / "q.png"
    rc = main(["simulate", "--prompt", "129", "--output", "112", "--load", "0.75", "--policy", "sarathi",
               "--policy", "ft", "--horizon", "60", "--json", "--plot", str(png)])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    s, f = d["policies"]["sarathi"]["summary"], d["policies"]["fastertransformer"]["summary"]
    assert f["final_requests_in_system"] > 3 * s["final_requests_in_system"]
    assert d["load"] == __import__("pytest").approx(0.75)
    assert png.exists() and png.stat().st_size > 5000


def test_table_with_replications_gives_verdicts(capsys):
    rc = main(["simulate", "--prompt", "100", "--output", "100", "--load", "1.2", "--policy", "sarathi",
               "--horizon", "60", "--replications", "3", "--seed", "4"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "GROWING" in out and "fluid prediction" in out and "TTFT" in out


def test_memory_and_requests_mode(capsys):
    rc = main(["simulate", "--prompt", "100", "--output", "200", "--geometric", "--rate", "12", "--policy", "orca",
               "--requests", "300", "--kv-capacity", "4000", "--json"])
    d = json.loads(capsys.readouterr().out)
    s = d["policies"]["orca"]["summary"]
    assert rc == 0 and s["finished"] + s["rejected"] == 300 and s["peak_kv_tokens"] <= 4000


def test_bad_input_exits_2(capsys):
    assert main(["simulate", "--policy", "nope", "--horizon", "5"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and len(err.strip().splitlines()) == 1
    assert main(["simulate", "--rate", "5", "--load", "0.5"]) == 2
    assert main(["simulate", "--horizon", "-3"]) == 2
    assert main(["simulate", "--preemption", "swap", "--kv-capacity", "1000", "--horizon", "5"]) == 2


def test_trace_without_rate_or_load_replays_at_its_own_rate(capsys):
    from fluidq import Workload

    own = Workload.from_trace("azure-conv").arrival_rate_per_s
    assert main(["simulate", "--trace", "azure-conv", "--horizon", "5", "--policy", "sarathi", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["workload"]["arrival"]["rate_per_s"] == __import__("pytest").approx(own)
    # no trace and neither --rate nor --load: the documented default load 0.9
    assert main(["simulate", "--horizon", "5", "--policy", "sarathi", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["load"] == __import__("pytest").approx(0.9)


def test_negative_seed_names_the_flag(capsys):
    assert main(["simulate", "--load", "0.5", "--horizon", "1", "--seed", "-1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--seed=-1" in err and len(err.strip().splitlines()) == 1


def test_replications_and_warmup_are_checked_naming_the_flag(capsys):
    for argv, flag in ((["--replications", "0"], "--replications=0"), (["--replications", "-2"], "--replications"),
                       (["--warmup", "5", "--horizon", "1"], "--warmup=5"),
                       (["--warmup", "-1", "--horizon", "3"], "--warmup=-1"),
                       (["--warmup", "1e9", "--requests", "5"], "--warmup")):
        assert main(["simulate", "--no-progress", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert flag in err and len(err.strip().splitlines()) == 1, (argv, err)


def test_errors_name_the_flag_typed(capsys):
    for argv, flag in ((["--horizon", "-3"], "--horizon=-3"), (["--horizon", "nan"], "--horizon=nan"),
                       (["--requests", "0"], "--requests=0"), (["--load", "0"], "--load=0"),
                       (["--load", "inf"], "--load=inf"), (["--trace", "azure-conv", "--rate", "-1"], "--rate=-1"),
                       (["--arrival", "gamma", "--cv", "-1"], "--cv=-1"), (["--kv-capacity", "0"], "--kv-capacity=0"),
                       (["--kv-capacity", "1000", "--preemption", "swap"], "--swap-us-per-token"),
                       (["--kv-capacity", "1000", "--preemption", "swap", "--swap-us-per-token", "-1"],
                        "--swap-us-per-token=-1")):
        assert main(["simulate", "--no-progress", "--horizon", "2", *argv] if "--horizon" not in argv
                    else ["simulate", "--no-progress", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert flag in err and len(err.strip().splitlines()) == 1, (argv, err)


def test_trace_replay_states_its_effective_load(capsys):
    assert main(["simulate", "--trace", "azure-conv", "--load", "0.8", "--horizon", "60", "--policy", "sarathi",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rw = d["replayed_window"]
    assert rw["arrivals"] == d["policies"]["sarathi"]["summary"]["requests"]
    assert rw["requests_per_s"] == __import__("pytest").approx(rw["arrivals"] / 60)
    assert rw["effective_load"] < 0.5 * d["load"]  # the trace's first minutes are sparse
    assert main(["simulate", "--trace", "azure-conv", "--load", "0.8", "--horizon", "60", "--policy", "sarathi"]) == 0
    out = capsys.readouterr().out
    assert "effective load" in out and "fluid prediction" in out
    # --arrival poisson with a trace: the stated rate with the trace's lengths, no replay
    assert main(["simulate", "--trace", "azure-conv", "--load", "0.8", "--arrival", "poisson", "--horizon", "60",
                 "--policy", "sarathi", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert "replayed_window" not in d and d["workload"]["arrival"]["kind"] == "Poisson"
    assert d["load"] == __import__("pytest").approx(0.8)
    assert main(["simulate", "--arrival", "replay", "--horizon", "3"]) == 2
    assert "--arrival" in capsys.readouterr().err
