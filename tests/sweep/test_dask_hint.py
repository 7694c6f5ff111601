"""Without Dask, the executor's error says how to get it where fluidq comes from: a checkout (fluidq is not on
PyPI, so ``pip install 'fluidq[dask]'`` would fail) -- review 2026-12-06."""
import sys

import pytest

from fluidq.sweep import dask_executor


def test_the_missing_dask_message_gives_an_install_command_that_works(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ImportError) as exc:
        dask_executor(n_workers=1)
    msg = str(exc.value)
    assert "pip install 'fluidq[dask]'" not in msg
    assert "distributed" in msg and ".[dask]" in msg, msg
