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
