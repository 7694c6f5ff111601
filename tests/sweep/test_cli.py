"""``fluidq sweep CASE.toml`` and the case format."""
import json

import pytest

from fluidq.cli import main
from fluidq.errors import DataError
from fluidq.sweep.case import load_case

CASE = """
[sweep]
analysis = "check"
seed = 3
chunk_size = 7
store = "out/results.jsonl"

[fixed]
prompt_tokens = 100
output_tokens = 100

[grid]
load = { start = 0.5, stop = 1.3, num = 5 }
b_max = [256, 512]
policy = ["sarathi", "vllm"]
"""


def test_case_file_parses_into_a_grid(tmp_path):
    p = tmp_path / "case.toml"
    p.write_text(CASE)
    case = load_case(p)
    assert case.analysis == "check" and len(case.grid) == 20 and case.chunk_size == 7
    assert case.store == str((tmp_path / "out" / "results.jsonl").resolve())


def test_cli_runs_then_resumes_from_the_store(tmp_path, capsys):
    p = tmp_path / "case.toml"
    p.write_text(CASE)
    assert main(["sweep", str(p), "--serial", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["n_points"] == 20 and first["n_computed"] == 20
    statuses = {(r["load"], r["policy"]): r["status"] for r in first["rows"]}
    assert statuses[(0.5, "sarathi")] == "stable" and statuses[(1.3, "vllm")] == "unstable"
    assert main(["sweep", str(p), "--workers", "2", "--csv", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert "0 computed, 20 from the store" in out and "status:" in out
    assert (tmp_path / "t.csv").read_text().count("\n") == 21


@pytest.mark.slow  # a LocalCluster start; the Dask path itself is tested fast in test_resume.py
def test_cli_on_a_dask_local_cluster(tmp_path, capsys):
    pytest.importorskip("distributed", reason="needs the dask extra: pip install 'fluidq[dask]'")
    p = tmp_path / "case.toml"
    p.write_text(CASE.replace('store = "out/results.jsonl"', ""))
    assert main(["sweep", str(p), "--local-cluster", "1", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["executor"].startswith("dask(") and res["n_computed"] == 20


@pytest.mark.parametrize("text, word", [
    ("[grid]\nload = [0.5]\n", "sweep.analysis is missing"),
    ('[sweep]\nanalysis = "check"\n', "no [grid]"),
    ('[sweep]\nanalysis = "check"\n[grid]\nlaod = [0.5]\n', "grid.laod"),
    ('[sweep]\nanalysis = "check"\nbogus = 1\n[grid]\nload = [0.5]\n', "sweep.bogus"),
    ('[sweep]\nanalysis = "check"\n[grid]\nload = [0.5\n', "not valid TOML"),
    ('[sweep]\nanalysis = "nope"\n[grid]\nload = [0.5]\n', "sweep.analysis"),
])
def test_bad_case_files_exit_2_with_one_line(tmp_path, capsys, text, word):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    assert main(["sweep", str(p), "--serial"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert word in err[-1] and err[-1].startswith("fluidq sweep: error:")


def test_store_of_another_sweep_exits_2(tmp_path, capsys):
    p = tmp_path / "case.toml"
    p.write_text(CASE)
    assert main(["sweep", str(p), "--serial", "--json"]) == 0
    p.write_text(CASE.replace("seed = 3", "seed = 4"))
    assert main(["sweep", str(p), "--serial"]) == 2
    assert "another sweep" in capsys.readouterr().err


def test_missing_case_file_exits_2(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "none.toml")]) == 2
    with pytest.raises(DataError):
        (tmp_path / "x.toml").write_text("[sweep]\n")
        load_case(tmp_path / "x.toml")


SIM_CASE = """
[sweep]
analysis = "simulate"
seed = 5
chunk_size = 10
store = "sim.jsonl"

[fixed]
prompt_tokens = 64
output_tokens = 64
lengths = "geometric"
horizon_s = 4.0

[grid]
load = [0.5, 0.9, 1.2]
policy = ["sarathi", "vllm"]
seed = { start = 0, stop = 40, step = 1 }
"""


def test_ctrl_c_on_the_cli_exits_130_and_the_rerun_resumes(tmp_path, capsys):
    pytest.importorskip("fluidq.sim", reason="the simulator is not in this checkout")
    import os
    import signal
    import subprocess
    import sys
    import time

    case = tmp_path / "sim.toml"
    case.write_text(SIM_CASE)
    store = tmp_path / "sim.jsonl"
    cmd = [sys.executable, "-m", "fluidq", "sweep", str(case), "--workers", "2"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while not store.exists() or store.read_bytes().count(b"\n") < 3:  # header + 2 chunks
        assert proc.poll() is None and time.monotonic() - t0 < 60, "finished before the interrupt"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err.splitlines()[-1]
    kept = store.read_bytes().count(b"\n") - 1
    assert 2 <= kept < 24
    assert main(["sweep", str(case), "--serial", "--json"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["n_resumed"] == 10 * kept and resumed["n_computed"] == 240 - 10 * kept
    fresh = load_case(case).run(executor="serial", store=None)
    assert resumed["rows"] == fresh.table()


def test_status_reports_the_store_without_running(tmp_path, capsys):
    p = tmp_path / "case.toml"
    p.write_text(CASE)
    assert main(["sweep", str(p), "--status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["belongs_to_this_case"] is None
    assert main(["sweep", str(p), "--serial", "--chunk-size", "7", "--json"]) == 0
    capsys.readouterr()
    store = tmp_path / "out" / "results.jsonl"
    lines = store.read_bytes().split(b"\n")
    store.write_bytes(b"\n".join(lines[:2]) + b"\n")  # header + the first chunk of 7 points
    assert main(["sweep", str(p), "--status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st == {"store": str(store), "n_points": 20, "n_done": 7, "n_left": 13, "belongs_to_this_case": True}
    assert store.read_bytes().count(b"\n") == 2  # nothing was run


@pytest.mark.slow
def test_cli_on_a_running_dask_scheduler(tmp_path, capsys):
    """``--dask tcp://...``: a separate ``dask scheduler`` and ``dask worker``, as on a cluster."""
    pytest.importorskip("distributed", reason="needs the dask extra: pip install 'fluidq[dask]'")
    import re
    import shutil
    import subprocess
    import sys
    import time
    from pathlib import Path

    dask = shutil.which("dask") or str(Path(sys.executable).with_name("dask"))
    sched = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    procs = [sched]
    try:
        address, t0 = None, time.monotonic()
        while address is None and time.monotonic() - t0 < 60:
            m = re.search(r"Scheduler at:\s+(tcp://\S+)", sched.stderr.readline())
            address = m.group(1) if m else None
        assert address, "the scheduler did not start"
        procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                       "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        p = tmp_path / "case.toml"
        p.write_text(CASE)
        assert main(["sweep", str(p), "--dask", address, "--json"]) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["executor"] == f"dask({address})" and res["n_computed"] == 20
        assert res["rows"] == load_case(p).run(executor="serial", store=None).table()
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


@pytest.mark.parametrize("grid, words", [
    ("load = { start = nan, stop = 1.3, num = 5 }", ["load", "nan", "finite"]),
    ("load = { start = 0.5, stop = inf, num = 5 }", ["load", "inf", "finite"]),
    ('load = [0.5, 0.9]\npolicy = ["sarathi", "nope"]', ["grid.policy", "nope"]),
    ("load = [0.5, 0.9]\nb_max = [512, 0]", ["grid.b_max", "0"]),
    ("load = [0.5]\nk_max = [100, 0]", ["grid.k_max"]),
    ("load = [0.5, -1.0]", ["grid.load", "-1.0"]),
])
def test_bad_grid_values_exit_2_before_any_point_runs(tmp_path, capsys, grid, words):
    store = tmp_path / "r.jsonl"
    p = tmp_path / "case.toml"
    p.write_text(f'[sweep]\nanalysis = "check"\nstore = "r.jsonl"\n[grid]\n{grid}\n')
    assert main(["sweep", str(p), "--serial", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(w in err for w in words), err
    assert not store.exists()  # nothing computed, nothing stored


def test_api_sweep_checks_values_up_front():
    from fluidq.errors import ParameterError
    from fluidq.sweep import Grid, sweep

    with pytest.raises(ParameterError, match="grid.policy"):  # the second value, before the first runs
        sweep("check", {"load": [0.5, 0.9], "policy": ["sarathi", "typo"]}, executor="serial", progress=False)
    with pytest.raises(ParameterError, match="fixed.b_max"):
        sweep("capacity", Grid(axes={"load": [0.5]}, fixed={"b_max": 0}), executor="serial", progress=False)


def test_region_analysis_uses_the_fixed_prompt_like_capacity():
    from fluidq.sweep.analyses import capacity, region

    pt = {"k_max": 100, "prompt_tokens": 100, "output_tokens": 100}
    assert region(pt)["max_request_rate_per_s"] == pytest.approx(capacity(pt)["requests_per_s"], rel=1e-9)
