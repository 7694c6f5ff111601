"""Interrupted sweeps resume without losing or repeating points, on local processes and on Dask."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fluidq.sweep import Grid, read_store, sweep
from fluidq.sweep.demo import mm1_wait

SCRIPT = textwrap.dedent("""
    import sys
    from fluidq.sweep import Grid, dask_executor, sweep
    from fluidq.sweep.demo import mm1_wait

    mode, store, n, customers, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    grid = Grid(axes={"rate_per_s": [0.4, 0.8], "seed": list(range(n // 2))}, fixed={"customers": customers})
    if __name__ == "__main__":
        if mode == "dask":
            with dask_executor(n_workers=2, processes=True) as client:
                sweep(mm1_wait, grid, executor=client, store=store, chunk_size=chunk, seed=5)
        else:
            sweep(mm1_wait, grid, store=store, chunk_size=chunk, seed=5, max_workers=2)
        print("FINISHED")
""")


def _grid(n, customers):
    return Grid(axes={"rate_per_s": [0.4, 0.8], "seed": list(range(n // 2))}, fixed={"customers": customers})


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _run_and_kill(tmp_path, mode, n, customers, chunk, kill_after_chunks, timeout=60):
    """Start the sweep in a child process and SIGKILL its whole process group after some chunks."""
    script, store = tmp_path / "run_sweep.py", tmp_path / "store.jsonl"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), mode, str(store), str(n), str(customers), str(chunk)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    try:
        while _lines(store) < 1 + kill_after_chunks:
            if proc.poll() is not None or time.monotonic() - t0 > timeout:
                pytest.fail(f"the sweep ended or stalled before it could be killed (rc={proc.returncode})")
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        out = proc.communicate(timeout=30)[0]
    assert proc.returncode == -signal.SIGKILL and b"FINISHED" not in out
    return store


def _check_resumed(store, reference, n, chunk, resumed_res):
    header, stored_before = resumed_res
    assert chunk <= len(stored_before) < n  # killed midway: some chunks kept, not all
    res = header
    assert res.n_resumed == len(stored_before) and res.n_computed == n - len(stored_before)
    assert res.rows == reference.rows
    _, rows = read_store(store)
    assert [r["index"] for r in rows] == list(range(n))
    counts = {}
    for ln in store.read_bytes().split(b"\n")[1:-1]:
        for i in json.loads(ln)["indices"]:
            counts[i] = counts.get(i, 0) + 1
    assert set(counts.values()) == {1}  # no point written twice


def test_killed_local_sweep_resumes_with_the_same_table(tmp_path):
    n, customers, chunk = 600, 3000, 50
    store = _run_and_kill(tmp_path, "processes", n, customers, chunk, kill_after_chunks=2)
    _, before = read_store(store)
    res = sweep(mm1_wait, _grid(n, customers), store=store, chunk_size=chunk, seed=5, max_workers=2)
    reference = sweep(mm1_wait, _grid(n, customers), executor="serial", chunk_size=n, seed=5)
    _check_resumed(store, reference, n, chunk, (res, before))


def _dask_kill_resume(tmp_path, n, customers, chunk, kill_after):
    from fluidq.sweep import dask_executor

    store = _run_and_kill(tmp_path, "dask", n, customers, chunk, kill_after_chunks=kill_after)
    _, before = read_store(store)
    with dask_executor(n_workers=2, processes=True) as client:
        res = sweep(mm1_wait, _grid(n, customers), executor=client, store=store, chunk_size=chunk, seed=5)
    assert res.executor.startswith("dask(")
    reference = sweep(mm1_wait, _grid(n, customers), chunk_size=chunk * 3, seed=5, max_workers=2)
    _check_resumed(store, reference, n, chunk, (res, before))


def test_2000_point_dask_sweep_survives_a_kill_and_resumes(tmp_path):
    pytest.importorskip("distributed", reason="the Dask tests need the dask extra: pip install 'fluidq[dask]'")
    _dask_kill_resume(tmp_path, n=2000, customers=600, chunk=100, kill_after=3)


@pytest.mark.slow
def test_2000_point_dask_sweep_heavier_points(tmp_path):
    pytest.importorskip("distributed", reason="the Dask tests need the dask extra: pip install 'fluidq[dask]'")
    _dask_kill_resume(tmp_path, n=2000, customers=20000, chunk=200, kill_after=4)


def test_dask_local_cluster_gives_the_same_table_as_local_processes():
    pytest.importorskip("distributed", reason="the Dask tests need the dask extra: pip install 'fluidq[dask]'")
    from distributed import Client, LocalCluster

    grid = _grid(200, 500)
    local = sweep(mm1_wait, grid, chunk_size=30, seed=9, max_workers=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            Client(cl) as client:
        remote = sweep(mm1_wait, grid, executor=client, chunk_size=17, seed=9)
        checks = sweep("check", {"load": [0.5, 0.99, 1.3], "policy": ["sarathi", "vllm"]}, executor=client)
    assert remote.rows == local.rows
    assert checks.rows == sweep("check", {"load": [0.5, 0.99, 1.3], "policy": ["sarathi", "vllm"]}).rows


_MARK = {}


def _dies_once(point, rng):
    """Kills its worker process the first time it sees seed 7 (a marker file says it already did)."""
    marker = Path(point["marker"])
    if point["seed"] == 7 and not marker.exists():
        marker.write_text("died")
        os._exit(1)
    return mm1_wait({k: v for k, v in point.items() if k != "marker"}, rng)


def test_a_killed_local_worker_is_replaced_and_no_point_is_lost(tmp_path):
    grid = Grid(axes={"seed": list(range(40))}, fixed={"rate_per_s": 0.5, "customers": 200,
                                                        "marker": str(tmp_path / "marker")})
    store = tmp_path / "s.jsonl"
    res = sweep(_dies_once, grid, store=store, chunk_size=5, seed=2, max_workers=2)
    assert (tmp_path / "marker").exists()  # a worker really died
    ref = sweep(_dies_once, grid, executor="serial", seed=2)
    assert res.rows == ref.rows
    _, rows = read_store(store)
    assert [r["index"] for r in rows] == list(range(40))


@pytest.mark.slow
def test_a_killed_dask_worker_is_rescheduled_without_loss(tmp_path):
    pytest.importorskip("distributed", reason="the Dask tests need the dask extra: pip install 'fluidq[dask]'")
    import cloudpickle
    from distributed import Client, LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    grid = Grid(axes={"seed": list(range(60))}, fixed={"rate_per_s": 0.5, "customers": 300,
                                                        "marker": str(tmp_path / "marker")})
    store = tmp_path / "s.jsonl"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            Client(cl) as client:
        res = sweep(_dies_once, grid, executor=client, store=store, chunk_size=6, seed=4)
    assert (tmp_path / "marker").exists()  # a worker process really died mid-sweep
    assert res.rows == sweep(_dies_once, grid, executor="serial", seed=4).rows
    _, rows = read_store(store)
    assert [r["index"] for r in rows] == list(range(60))
