"""SIGTERM on `fluidq sweep --workers 2` stops it as Ctrl-C does: "N points done ... run again to resume", then
"fluidq sweep: terminated", exit 143, and the store resumes.  Before, SIGTERM's default action ended the
process with no line at all (exit -15)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_cli_interrupt_quiet import CASE, _stored_rows

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


def test_sigterm_stops_a_sweep_as_ctrl_c_does(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    store = tmp_path / "s.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "fluidq", "sweep", str(case), "--workers", "2", "--no-progress",
                             "--store", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True, cwd=tmp_path)
    t_end = time.monotonic() + 120
    while _stored_rows(store) < 2 and proc.poll() is None and time.monotonic() < t_end:
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it was stopped: make the grid larger"
    os.kill(proc.pid, signal.SIGTERM)  # what `timeout -s TERM` does: the command, then its process group
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err)
    lines = err.strip().splitlines()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert len(lines) == 2 and lines[0].startswith("sweep interrupted: ") and "resume" in lines[0], err
    assert lines[1] == "fluidq sweep: terminated", err
    assert _stored_rows(store) >= 2
