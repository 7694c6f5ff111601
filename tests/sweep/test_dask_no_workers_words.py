"""A library caller handed a cluster without workers is told the library's way to a local cluster, not only the
CLI flag (h-fixa: ``sweep(executor=client)`` said "use --local-cluster N", a flag the library has not)."""
import pytest

from fluidq.errors import ParameterError
from fluidq.sweep.core import wait_for_workers


class _NoWorkers:
    def nthreads(self):
        return {}

    def wait_for_workers(self, n_workers, timeout=None):
        raise TimeoutError


def test_the_library_caller_is_told_dask_executor():
    with pytest.raises(ParameterError, match="executor") as ei:
        wait_for_workers(_NoWorkers(), 1.0, "executor", "client")
    msg = str(ei.value)
    assert "dask_executor(n_workers=...)" in msg and "CLI: --local-cluster N" in msg, msg
