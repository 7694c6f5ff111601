"""A sweep killed from outside (SIGTERM from a job scheduler or `timeout`, or SIGKILL) leaves no worker
processes behind (review 2026-12-06: after `kill <sweep>` two pool workers stayed alive, idle, 38 minutes later).
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir() or sys.platform != "linux", reason="reads /proc (Linux)")

CASE = """[sweep]
analysis = "simulate"
seed = 1
chunk_size = 1
store = "s.jsonl"
[fixed]
prompt_tokens = 100
output_tokens = 100
horizon_s = 3000.0
[grid]
load = [0.5, 0.9]
seed = { start = 0, stop = 200, step = 1 }
"""


def _children(pid):
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_the_sweep_stops_its_workers(tmp_path, sig):
    (tmp_path / "case.toml").write_text(CASE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    workers = []
    p = subprocess.Popen([sys.executable, "-m", "fluidq", "sweep", "case.toml", "--workers", "2", "--no-progress"],
                         cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        store = tmp_path / "s.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (store.exists() and store.read_text().count("\n") >= 3):
            time.sleep(0.2)  # the pool runs: chunks arrive
        workers += _children(p.pid)
        assert workers, "the sweep started no worker processes"
        p.send_signal(sig)
        p.wait(timeout=30)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        left = [w for w in workers if _alive(w)]
        assert not left, f"workers {left} outlived the sweep killed by {sig!r}"
    finally:
        for w in workers + _children(p.pid):  # (only this test's own processes)
            try:
                os.kill(w, signal.SIGKILL)
            except OSError:
                pass
        if p.poll() is None:
            p.kill()


def _pid(_):
    return os.getpid()


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_watched_workers_run_under_every_start_method(method):
    """The watchdog reads its parent in the worker: under forkserver (Python 3.14's default on Linux) the
    worker's parent is the fork server, and comparing with the sweep's id ended every worker at once
    (BrokenProcessPool)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    from fluidq.sweep.core import _watch_parent

    with cf.ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context(method), initializer=_watch_parent) as ex:
        time.sleep(1.0)  # longer than the watchdog's 0.5 s poll: a worker that would exit has exited
        pids = set(ex.map(_pid, range(8)))
    assert pids and os.getpid() not in pids
