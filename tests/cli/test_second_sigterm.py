"""A second SIGTERM while fluidq stops ends it at once, exit 143 (audit 2026-12-07, robust6 finding 6).

Before: every SIGTERM after the first was ignored, so a clean-up that hung could be stopped only by SIGKILL.
``timeout`` signals the command and then, at once, its whole process group (the command included): that pair
is still one stop (tests/cli/test_sigterm_and_early_interrupt.py), so the second signal counts only after
``SAME_STOP_S``.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fluidq.cli import SAME_STOP_S

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")

CHILD = textwrap.dedent("""
    import sys, time
    from fluidq.cli import _sigterm_as_interrupt
    with _sigterm_as_interrupt():
        try:
            print("READY", flush=True)
            time.sleep(120)
        except KeyboardInterrupt:
            print("STOPPING", flush=True)
            time.sleep(120)  # a clean-up that hangs
    print("CLEAN", flush=True)
""")


def _child(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path, start_new_session=True)


def test_a_second_sigterm_while_stopping_ends_the_process_at_once(tmp_path):
    proc = _child(tmp_path)
    try:
        assert proc.stdout.readline().strip() == "READY"
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.stdout.readline().strip() == "STOPPING"
        time.sleep(SAME_STOP_S + 0.5)
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143 and time.monotonic() - t0 < 10, (proc.returncode, err)
    assert "terminated at once" in err and "Traceback" not in err and "CLEAN" not in out, err


def test_timeouts_pair_of_signals_is_one_stop(tmp_path):
    proc = _child(tmp_path)
    try:
        assert proc.stdout.readline().strip() == "READY"
        os.kill(proc.pid, signal.SIGTERM)  # the command, then its process group
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.stdout.readline().strip() == "STOPPING"
        time.sleep(0.3)
        assert proc.poll() is None  # still in its clean-up
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=20)
