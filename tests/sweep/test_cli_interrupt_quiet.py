"""Ctrl-C on `fluidq sweep --workers 2` is two clean lines, and the store resumes (inputs items 4, 5).

New-user review: 1 in 3 interrupts printed, after the clean message, "Exception ignored in: <module
'threading'> ... KeyboardInterrupt" (``timeout -s INT`` signals the command and then its process group, as
a terminal's Ctrl-C reaches every process of the group); workers printed their own tracebacks.  Each trial
here sends SIGINT to the sweep and then to its whole process group, at a different point of the run.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fluidq.cli import main
from test_cli import CASE as _CLI_CASE

ROOT = Path(__file__).resolve().parents[2]

# test_cli's case, long enough to interrupt (400 loads), in small chunks, with its default store
CASE = (_CLI_CASE.replace("chunk_size = 7", "chunk_size = 4").replace('store = "out/results.jsonl"\n', "")
        .replace("num = 5 }", "num = 400 }"))


def _stored_rows(store: Path) -> int:
    if not store.exists():
        return 0
    return sum(1 for line in store.read_text().splitlines()[1:] if line.strip())


def _interrupt(tmp_path, k: int, wait_rows: int, sig=signal.SIGINT, code=130) -> tuple[str, Path]:
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    store = tmp_path / f"s{k}.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "fluidq", "sweep", str(case), "--workers", "2", "--no-progress",
                             "--store", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True, cwd=tmp_path)
    t_end = time.monotonic() + 120
    while _stored_rows(store) < wait_rows and proc.poll() is None and time.monotonic() < t_end:
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it was interrupted: make the grid larger"
    os.kill(proc.pid, sig)  # what `timeout -s INT` (or TERM) does: the command, then its process group
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (proc.returncode, err)
    return err, store


@pytest.mark.parametrize("k, wait_rows", [(0, 1), (1, 3), (2, 8), (3, 20)])
def test_ctrl_c_with_two_workers_is_quiet_and_resumes(tmp_path, k, wait_rows):
    err, store = _interrupt(tmp_path, k, wait_rows)
    lines = err.strip().splitlines()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert len(lines) == 2 and lines[0].startswith("sweep interrupted: ") and "resume" in lines[0], err
    assert lines[1] == "fluidq sweep: interrupted", err
    done = _stored_rows(store)
    assert done >= 1
    # the store resumes: the next run computes only the points it lacks
    r = subprocess.run([sys.executable, "-m", "fluidq", "sweep", str(tmp_path / "case.toml"), "--workers", "2", "--json",
                        "--store", str(store)], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["n_resumed"] >= 1 and res["n_resumed"] + res["n_computed"] == res["n_points"] == 1600
    assert [row["index"] for row in res["rows"]] == list(range(1600))


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_sigterm_stops_a_sweep_as_ctrl_c_does(tmp_path):
    """SIGTERM stops it as Ctrl-C does: "N points done ... run again to resume", then "fluidq sweep: terminated",
    exit 143, the rows stored kept.  Before, SIGTERM's default action ended the process with no line (exit -15)."""
    err, store = _interrupt(tmp_path, 0, 2, sig=signal.SIGTERM, code=143)
    lines = err.strip().splitlines()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert len(lines) == 2 and lines[0].startswith("sweep interrupted: ") and "resume" in lines[0], err
    assert lines[1] == "fluidq sweep: terminated", err
    assert _stored_rows(store) >= 2


def test_a_users_csv_refusal_quotes_its_own_header(tmp_path, capsys):
    case = tmp_path / "case.toml"
    case.write_text(CASE.replace("num = 400", "num = 2"))
    mine = tmp_path / "my.csv"
    mine.write_text("arrival_s,prompt_tokens,output_tokens\n0,1,1\n")
    rc = main(["sweep", str(case), "--serial", "--csv", str(mine)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "its first line is 'arrival_s,prompt_tokens,output_tokens'" in err, err
    assert "a sweep table's header starts with 'index,'" in err, err
    assert "(its header starts with 'index,')" not in err
    assert mine.read_text().startswith("arrival_s,")


def test_a_second_sigint_while_stopping_is_ignored():
    """The deterministic half of the trials above: the first SIGINT raises, the next one is dropped."""
    from fluidq.cli.commands.sweep import _one_interrupt

    old = signal.getsignal(signal.SIGINT)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with _one_interrupt():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)
            except KeyboardInterrupt:
                seen.append("first")
                os.kill(os.getpid(), signal.SIGINT)  # dropped: no second KeyboardInterrupt in this block
                time.sleep(0.2)
                seen.append("second ignored")
                raise
    assert seen == ["first", "second ignored"]
    assert signal.getsignal(signal.SIGINT) is old


def test_pool_workers_ignore_sigint():
    import concurrent.futures as cf

    from fluidq.sweep.core import _watch_parent

    with cf.ProcessPoolExecutor(max_workers=1, initializer=_watch_parent) as ex:
        assert ex.submit(signal.getsignal, signal.SIGINT).result(timeout=60) == signal.SIG_IGN


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_sigterm_winds_the_pool_down_before_the_handler_returns():
    """The deterministic half of the SIGTERM trial: a ``Terminated`` leaving the sweep (its workers stopped, its
    pool shut down without waiting, as sweep.core does) is wound down like a Ctrl-C, so the pool's manager thread
    has ended when the block exits.  Before, only SIGINT was wound down: the manager thread could still be closing
    its wake-up pipe at interpreter exit, where CPython 3.11's exit hook wrote to it ("Bad file descriptor")."""
    import concurrent.futures as cf

    from fluidq.cli import Terminated
    from fluidq.cli.commands.sweep import _one_interrupt
    from fluidq.sweep.core import _terminate_workers, _watch_parent

    manager = []
    with pytest.raises(Terminated):
        with _one_interrupt():
            ex = cf.ProcessPoolExecutor(max_workers=2, initializer=_watch_parent)
            futs = [ex.submit(time.sleep, 30) for _ in range(4)]
            while not any(f.running() for f in futs):
                time.sleep(0.01)
            manager.append(ex._executor_manager_thread)
            _terminate_workers(ex)
            ex.shutdown(wait=False, cancel_futures=True)
            raise Terminated
    assert manager[0] is not None and not manager[0].is_alive()
