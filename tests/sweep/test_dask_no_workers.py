"""``sweep --dask ADDR`` to a scheduler with no worker says so after a bounded wait (audit 2026-12-07, robust6
finding 5).

Before: the sweep connected, submitted its chunks and waited for ever, silently (``_cluster_slots`` fell back
on 0 threads).  Now a client whose scheduler has no worker waits ``worker_wait_s`` for one, then a
``ParameterError`` naming ``address`` (``executor`` for a client passed to ``sweep``), which the CLI says under
``--dask``.  A fake client stands in for ``distributed.Client`` (no scheduler is started).
"""
from __future__ import annotations

import pytest

pytest.importorskip("distributed")

from fluidq.cli import main
from fluidq.errors import ParameterError
from fluidq.sweep import dask_executor, sweep

CASE = '[sweep]\nanalysis = "check"\n[grid]\nload = [0.5, 1.2]\n'


class FakeClient:
    """A scheduler that answers and has ``workers`` threads, a worker joining never."""

    made: list = []

    def __init__(self, address=None, timeout=None, workers=0):
        self.address, self.workers, self.waits, self.closed = address, workers, [], False
        self.scheduler = type("S", (), {"address": address})()
        FakeClient.made.append(self)

    def nthreads(self):
        return {f"tcp://w{i}": 1 for i in range(self.workers)}

    def wait_for_workers(self, n_workers, timeout=None):
        self.waits.append((n_workers, timeout))
        from distributed.exceptions import WorkerStartTimeoutError

        raise WorkerStartTimeoutError(0, n_workers, timeout)

    def scheduler_info(self):
        return {}

    def get_executor(self):
        raise AssertionError("a chunk was submitted to a cluster without workers")

    def close(self):
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    import distributed

    FakeClient.made = []
    monkeypatch.setattr(distributed, "Client", FakeClient)
    return FakeClient


def test_dask_executor_waits_a_bounded_time_then_names_the_address(fake):
    with pytest.raises(ParameterError, match="address") as ei, dask_executor("tcp://10.0.0.1:8786", worker_wait_s=3):
        pass
    assert "a Dask scheduler with workers: none joined within 3 s" in str(ei.value)
    assert ("start workers with `dask worker ADDRESS`, or a local cluster: fluidq.sweep.dask_executor(n_workers=...); "
            "CLI: --local-cluster N") in str(ei.value)
    (c,) = fake.made
    assert c.waits == [(1, 3.0)] and c.closed


def test_the_cli_names_dask(fake, tmp_path, capsys):
    case = tmp_path / "c.toml"
    case.write_text(CASE)
    assert main(["sweep", str(case), "--dask", "tcp://10.0.0.1:8786"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dask tcp://10.0.0.1:8786" in err and "worker" in err, err
    assert fake.made[0].waits and fake.made[0].waits[0][1] > 0  # bounded


def test_a_client_passed_to_sweep_is_checked_too(fake):
    with pytest.raises(ParameterError, match="executor"):
        sweep("check", {"load": [0.5]}, executor=FakeClient("tcp://x:1"))


def test_a_cluster_with_workers_is_not_waited_on(fake):
    c = FakeClient("tcp://x:1", workers=2)
    from fluidq.sweep.core import DASK_WORKER_WAIT_S, wait_for_workers

    wait_for_workers(c, DASK_WORKER_WAIT_S, "address", "tcp://x:1")
    assert c.waits == []


def test_worker_wait_is_checked():
    with pytest.raises(ParameterError, match="worker_wait_s"):
        dask_executor("tcp://10.0.0.1:8786", worker_wait_s=0)
